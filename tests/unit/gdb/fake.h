/* SPDX-License-Identifier: MIT */
/*
 * A target for the stub's tests: two vCPUs, 4 KiB of memory at 0x1000,
 * registers, and a log of what the stub asked.  Replies collect in out[].
 */
#ifndef VBTS_TEST_GDB_FAKE_H
#define VBTS_TEST_GDB_FAKE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdb/stub.h"

static struct stub st;
static char out[65536];
static size_t nout;
static uint8_t mem[4096];
static struct regs_state fregs;
static enum stub_action acts[2];
static int resumed, interrupts, kills, detaches, points, btrace_on, btrace_off;
static enum stub_point last_type;
static uint64_t last_addr, last_kind, bts_size;
static bool cpu1_dead;

static int f_regs_get(void *c, int cpu, struct regs_state *s) { (void)c; (void)cpu; *s = fregs; return 0; }
static int f_regs_set(void *c, int cpu, const struct regs_state *s, unsigned ch)
{
    (void)c; (void)cpu; (void)ch;
    fregs = *s;
    return 0;
}
static size_t f_mem_read(void *c, int cpu, uint64_t a, void *buf, size_t len)
{
    (void)c; (void)cpu;
    size_t n = 0;
    for (; n < len && a + n >= 0x1000 && a + n < 0x2000; n++)
        ((uint8_t *)buf)[n] = mem[a + n - 0x1000];
    return n;
}
static size_t f_mem_write(void *c, int cpu, uint64_t a, const void *buf, size_t len)
{
    (void)c; (void)cpu;
    size_t n = 0;
    for (; n < len && a + n >= 0x1000 && a + n < 0x2000; n++)
        mem[a + n - 0x1000] = ((const uint8_t *)buf)[n];
    return n;
}
static int f_point(void *c, bool ins, enum stub_point t, uint64_t a, uint64_t k, const char **why)
{
    (void)c; (void)ins;
    points++;
    last_type = t;
    last_addr = a;
    last_kind = k;
    if (t == STUB_READ_WATCH)
        return 1;
    if (a == 0xbad) {
        *why = "no debug register left";
        return -1;
    }
    return 0;
}
static int f_resume(void *c, const enum stub_action *a, const char **why)
{
    (void)c;
    if (a[0] == STUB_STEP && fregs.sregs.cs.selector == 0x33) {
        *why = "cannot single-step CPL3 code on this host";
        return -1;
    }
    memcpy(acts, a, sizeof(acts));
    resumed++;
    return 0;
}
static void f_interrupt(void *c) { (void)c; interrupts++; }
static void f_kill(void *c) { (void)c; kills++; }
static void f_detach(void *c) { (void)c; detaches++; }
static bool f_alive(void *c, int cpu) { (void)c; return cpu == 0 || (cpu == 1 && !cpu1_dead); }
static int f_btrace_on(void *c, int cpu, uint64_t size, const char **why)
{
    (void)c; (void)cpu;
    if (btrace_on) {
        *why = "Btrace already enabled.";
        return -1;
    }
    btrace_on++;
    bts_size = size;
    return 0;
}
static int f_btrace_off(void *c, int cpu, const char **why)
{
    (void)c; (void)cpu; (void)why;
    btrace_off++;
    return 0;
}
static char *f_btrace_read(void *c, int cpu, enum btrace_read how, size_t *len, const char **why)
{
    (void)c;
    if (how == BTRACE_READ_DELTA) {
        *why = "Overflow.";
        return NULL;
    }
    char *x = malloc(64);
    *len = (size_t)snprintf(x, 64, "<btrace cpu=\"%d\" how=\"%d\"/>", cpu, (int)how);
    return x;
}
static char *f_btrace_conf(void *c, int cpu, size_t *len)
{
    (void)c; (void)cpu;
    char *x = strdup("<btrace-conf/>");
    *len = strlen(x);
    return x;
}
static void f_send(void *c, const char *buf, size_t len)
{
    (void)c;
    if (nout + len < sizeof(out)) {
        memcpy(out + nout, buf, len);
        nout += len;
        out[nout] = 0;
    }
}

static const struct stub_ops fake_ops = {
    .regs_get = f_regs_get, .regs_set = f_regs_set, .mem_read = f_mem_read,
    .mem_write = f_mem_write, .point = f_point, .resume = f_resume, .interrupt = f_interrupt,
    .kill = f_kill, .detach = f_detach, .alive = f_alive, .btrace_on = f_btrace_on,
    .btrace_off = f_btrace_off, .btrace_read = f_btrace_read, .btrace_conf = f_btrace_conf,
    .send = f_send,
};

static inline void fake_setup(void)
{
    memset(mem, 0, sizeof(mem));
    memset(&fregs, 0, sizeof(fregs));
    nout = 0;
    out[0] = 0;
    resumed = interrupts = kills = detaches = points = btrace_on = btrace_off = 0;
    cpu1_dead = false;
    struct stub_stop first = { .cpu = 0, .signal = 5 };
    stub_init(&st, &fake_ops, NULL, 2, REGS_X86_64, &first);
}

static inline void fake_teardown(void)
{
    stub_fini(&st);
}

/* One packet in, its reply's payload out (unescaped, without `+`/`$`/`#cs`). */
static inline const char *ask(const char *payload)
{
    static char frame[2 * RSP_MAX_PACKET + 8];
    static char reply[RSP_MAX_PACKET + 1];
    unsigned sum = 0;
    for (const char *p = payload; *p; p++)
        sum += (uint8_t)*p;
    int n = snprintf(frame, sizeof(frame), "$%s#%02x", payload, sum & 0xff);
    nout = 0;
    out[0] = 0;
    stub_input(&st, (const uint8_t *)frame, (size_t)n);
    const char *d = strchr(out, '$'), *h = d ? strrchr(d, '#') : NULL;
    if (!d || !h)
        return NULL;
    size_t m = 0;
    for (const char *p = d + 1; p < h; p++)
        reply[m++] = *p == '}' ? (char)(*++p ^ 0x20) : *p;
    reply[m] = 0;
    return reply;
}

#endif
