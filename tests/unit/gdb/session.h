/* SPDX-License-Identifier: MIT */
/*
 * A real VM under the stub, for gdb.c and target.c: the tiny multiboot
 * guest (../tiny_guest.h), vbts's wiring as cli/main.c does it, the vCPUs
 * on a thread, and a raw client on the stub's socket.
 */
#ifndef VBTS_TEST_GDB_SESSION_H
#define VBTS_TEST_GDB_SESSION_H

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/kvm.h"
#include "core/vm.h"
#include "devices/lapic.h"
#include "gdb/gdb.h"
#include "machine/multiboot_vm.h"
#include "trace/trace.h"
#include "vbts/le.h"
#include "x86/debug.h"
#include "x86/kvm_x86.h"
#include "../tiny_guest.h"

static struct vm vm;
static struct trace_config tc;
static struct trace *tr;
static struct gdb *g;
static struct lapic_dev *apic;
static pthread_t runner;
static int status = -1, sock = -1;

static void *run_vcpus(void *arg)
{
    (void)arg;
    status = vcpu_run_all(&vm);
    return NULL;
}

static inline void session_start(bool wait)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    uint8_t img[TINY_GUEST_SIZE];
    tiny_guest(img);
    vm_init(&vm);
    struct kvm_x86_config xc = { 0 };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &xc), 0, "%s", error_last());
    cr_assert_eq(debug_install(&vm), 0);
    struct gdb_config gc = { .addr = "127.0.0.1:0", .wait = wait };
    g = gdb_install(&vm, &gc);
    cr_assert_not_null(g, "%s", error_last());
    struct trace_options to = { 0 };
    cr_assert_eq(trace_config_build(&tc, &to), 0);
    tr = trace_install(&vm, &tc, NULL);
    cr_assert_not_null(tr, "%s", error_last());
    gdb_set_trace(g, tr);
    struct multiboot_guest mg = { .path = "tiny", .image = img, .image_size = sizeof(img) };
    cr_assert_eq(multiboot_vm_setup(&vm, &mg, &apic), 0, "%s", error_last());
    cr_assert_eq(gdb_start(g), 0);
    unsigned port = 0;
    cr_assert_eq(sscanf(gdb_address(g), "tcp:127.0.0.1:%u", &port), 1, "%s", gdb_address(g));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sock = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_eq(connect(sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = { 20, 0 };
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    pthread_create(&runner, NULL, run_vcpus, NULL);
}

/* The next packet's payload (acks skipped, ours sent). */
static inline const char *session_reply(void)
{
    static char buf[65536];
    size_t n = 0;
    char c;
    while (recv(sock, &c, 1, 0) == 1 && c != '$')
        ;
    while (n + 1 < sizeof(buf) && recv(sock, &c, 1, 0) == 1 && c != '#')
        buf[n++] = c;
    buf[n] = 0;
    char cs[2];
    cr_assert_eq(recv(sock, cs, 2, MSG_WAITALL), 2, "no reply (%s)", buf);
    cr_assert_eq(send(sock, "+", 1, 0), 1);
    return buf;
}

static inline const char *session_ask(const char *payload)
{
    char frame[512];
    unsigned sum = 0;
    for (const char *p = payload; *p; p++)
        sum += (uint8_t)*p;
    int n = snprintf(frame, sizeof(frame), "$%s#%02x", payload, sum & 0xff);
    cr_assert_eq(send(sock, frame, (size_t)n, 0), n);
    return session_reply();
}

/* The guest ran to its end: vbts tells gdb the status. */
static inline void session_end(void)
{
    pthread_join(runner, NULL);
    gdb_finish(g, status);
    close(sock);
    gdb_free(g);
    trace_free(tr);
    iobus_destroy(&vm.io);
    lapic_free(apic);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

#endif
