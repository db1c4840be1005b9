/* SPDX-License-Identifier: MIT */
/*
 * The engine wired to a VM (trace.c, step.c, window.c) on a four-instruction
 * multiboot guest, with a usable /dev/kvm: the exact records, in order.
 *
 *   0x100020  jmp short 0x100022     ; -> 0x100022
 *   0x100022  call 0x10002a          ; -> 0x10002a
 *   0x100027  xor eax, eax
 *   0x100029  hlt                    ; never reached: f returns to the out
 *   0x10002a  ret                    ; -> 0x100027 ... (see below)
 */
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

static size_t image(uint8_t *img)
{
    static const uint8_t code[] = {
        0xeb, 0x00,                     /* 0x20: jmp short 0x22 */
        0xe8, 0x05, 0x00, 0x00, 0x00,   /* 0x22: call 0x2c */
        0x31, 0xc0,                     /* 0x27: xor eax, eax */
        0xe6, 0xf4,                     /* 0x29: out 0xf4, al: debug-exit 0 */
        0xf4,                           /* 0x2b: hlt */
        0xc3,                           /* 0x2c: ret */
    };
    memset(img, 0, 64);
    vbts_put32(img, 0x1badb002);
    vbts_put32(img + 4, 0x10000);
    vbts_put32(img + 8, (uint32_t)-(0x1badb002 + 0x10000));
    vbts_put32(img + 12, 0x100000);
    vbts_put32(img + 16, 0x100000);
    vbts_put32(img + 20, 0x100040);
    vbts_put32(img + 24, 0x100040);
    vbts_put32(img + 28, 0x100020);
    memcpy(img + 0x20, code, sizeof(code));
    return 64;
}

Test(trace, records_of_a_tiny_guest)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    char path[] = "/tmp/vbts-test-trace.XXXXXX";
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
    uint8_t img[64];
    struct lapic_dev *a = multiboot_vm_setup(&vm, img, image(img), "");
    cr_assert_not_null(a, "%s", error_last());
    const char *dests[] = { path };
    struct sink_config sc = { .dests = dests, .ndests = 1, .buffer_size = 24 * 1024, .force = true };
    struct sink *s = sink_open(&sc, 1);
    cr_assert_not_null(s, "%s", error_last());
    trace_set_sink(tr, s);
    cr_assert_eq(vcpu_run_all(&vm), 1, "debug-exit 0: status 1 (%s)", vm.end_msg);
    uint64_t branches, steps;
    trace_totals(tr, &branches, &steps);
    cr_assert_eq(branches, 3);
    cr_assert_eq(steps, 4, "jmp, call, ret, xor: the out ends the run at its I/O exit");
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
}
