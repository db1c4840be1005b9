/* SPDX-License-Identifier: MIT */
/* The tiny multiboot guest (../tiny_guest.h) traced end to end, for test_trace.c and test_leap.c. */
#ifndef VBTS_TEST_TINY_TRACE_H
#define VBTS_TEST_TINY_TRACE_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/vm.h"
#include "devices/lapic.h"
#include "export/sink.h"
#include "machine/multiboot_vm.h"
#include "trace/trace.h"
#include "vbts/decode.h"
#include "vbts/le.h"
#include "x86/debug.h"
#include "x86/kvm_x86.h"
#include "../tiny_guest.h"

/*
 * The tiny guest traced by `engine` into a trace file: its three records
 * checked, in order, and the engine's exits returned; -1 if the host
 * refuses the engine (the test is skipped).
 */
static inline int64_t tiny_trace(int engine)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    char path[] = "/tmp/vbts-test-tiny.XXXXXX";
    close(mkstemp(path));
    struct vm vm;
    vm_init(&vm);
    struct kvm_x86_config xc = { 0 };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &xc), 0, "%s", error_last());
    cr_assert_eq(debug_install(&vm), 0);
    struct trace_config tc;
    struct trace_options to = { .trace = true };
    cr_assert_eq(trace_config_build(&tc, &to), 0);
    struct trace *tr = trace_install(&vm, &tc, NULL);
    cr_assert_not_null(tr, "%s", error_last());
    if (trace_set_engine(tr, engine) < 0) {
        trace_free(tr);
        kvm_x86_destroy(&vm);
        vm_fini(&vm);
        unlink(path);
        return -1;
    }
    uint8_t img[TINY_GUEST_SIZE];
    struct multiboot_guest g = { .path = "tiny", .image = img, .image_size = tiny_guest(img) };
    struct lapic_dev *a;
    cr_assert_eq(multiboot_vm_setup(&vm, &g, &a), 0, "%s", error_last());
    const char *dests[] = { path };
    struct sink_config sc = { .dests = dests, .ndests = 1, .buffer_size = 24 * 1024, .force = true };
    struct sink *s = sink_open(&sc, 1);
    cr_assert_not_null(s, "%s", error_last());
    trace_set_sink(tr, s);
    cr_assert_eq(vcpu_run_all(&vm), 1, "debug-exit 0: status 1 (%s)", vm.end_msg);
    uint64_t branches, steps;
    trace_totals(tr, &branches, &steps);
    cr_assert_eq(branches, 3);
    cr_assert_eq(sink_close(s), 0);

    static const uint64_t want[3][2] = {
        { 0x100020, 0x100022 }, { 0x100022, 0x10002c }, { 0x10002c, 0x100027 } };
    int fd = open(path, O_RDONLY);
    struct vbts_reader *r = vbts_reader_new(fd);
    struct vbts_event ev;
    int n = 0, markers = 0;
    while (vbts_reader_next(r, &ev) == 1) {
        if (ev.is_marker) {
            markers++;
            continue;
        }
        cr_assert_lt(n, 3);
        cr_assert_eq(ev.rec.from, want[n][0], "record %d from 0x%llx", n, (unsigned long long)ev.rec.from);
        cr_assert_eq(ev.rec.to, want[n][1], "record %d to 0x%llx", n, (unsigned long long)ev.rec.to);
        n++;
    }
    cr_assert_eq(n, 3);
    cr_assert_eq(markers, 3, "start, context arrival, stop");
    vbts_reader_free(r);
    close(fd);
    unlink(path);
    trace_free(tr);
    iobus_destroy(&vm.io);
    lapic_free(a);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
    return (int64_t)steps;
}

#endif
