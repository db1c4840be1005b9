/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: hostile bytes from a gdb client into the remote stub
 * (vmm/gdb/: framing, commands, queries, qXfer in pieces, btrace XML from
 * a real ring).  The target stands for a VM: 64 KiB of memory at 0x10000,
 * registers, a ring that gains records whenever the stub resumes it, and
 * which stops again at once.  Every byte the stub sends must be an ack or
 * a well-formed packet (start, payload of at most PacketSize escaped,
 * checksum right); a stop reply only while resumed.
 *
 * Input: u8 options (bit 0: the i386 layout; bits 1-2: vCPUs - 1), then
 * the client's bytes, fed in pieces whose sizes the bytes themselves pick.
 */
#include "fuzz.h"

#include "gdb/btrace.h"
#include "gdb/stub.h"

#define NCPU_MAX 4
#define MEM_BASE 0x10000u
#define MEM_SIZE 0x10000u

static struct stub st;
static uint8_t mem[MEM_SIZE];
static struct regs_state regs;
static struct btrace bt[NCPU_MAX];
static int ncpus, running;

/* The output checker: a small frame parser of its own. */
static struct {
    int state;          /* 0 between, 1 payload, 2-3 checksum digits */
    size_t len;
    unsigned sum, cs;
} out;

static int hexv(uint8_t c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void check_out(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        switch (out.state) {
        case 0:
            fuzz_check(c == '+' || c == '-' || c == '$', "byte 0x%02x between packets", c);
            if (c == '$') {
                out.state = 1;
                out.len = 0;
                out.sum = 0;
            }
            break;
        case 1:
            if (c == '#') {
                out.state = 2;
                break;
            }
            fuzz_check(c != '$', "an unescaped $ in a reply");
            out.sum += c;
            out.len++;
            fuzz_check(out.len <= 2 * RSP_MAX_PACKET, "a reply of over %zu bytes", out.len);
            break;
        case 2:
            fuzz_check(hexv(c) >= 0, "checksum digit 0x%02x", c);
            out.cs = (unsigned)hexv(c) << 4;
            out.state = 3;
            break;
        default:
            fuzz_check(hexv(c) >= 0, "checksum digit 0x%02x", c);
            fuzz_check((out.cs | (unsigned)hexv(c)) == (out.sum & 0xff), "checksum %02x, payload sums to %02x",
                       out.cs | (unsigned)hexv(c), out.sum & 0xff);
            out.state = 0;
            break;
        }
    }
}

static void t_send(void *c, const char *buf, size_t len)
{
    (void)c;
    check_out((const uint8_t *)buf, len);
}

static int t_regs_get(void *c, int cpu, struct regs_state *s)
{
    (void)c;
    fuzz_check(cpu >= 0 && cpu < ncpus, "registers of vCPU %d", cpu);
    fuzz_check(!running, "registers read while running");
    *s = regs;
    return 0;
}

static int t_regs_set(void *c, int cpu, const struct regs_state *s, unsigned changed)
{
    (void)c;
    (void)changed;
    fuzz_check(cpu >= 0 && cpu < ncpus && !running, "registers set on vCPU %d", cpu);
    regs = *s;
    return 0;
}

static size_t t_mem(int cpu, uint64_t a, void *buf, const void *in, size_t len)
{
    fuzz_check(cpu >= 0 && cpu < ncpus && !running, "memory of vCPU %d", cpu);
    fuzz_check(len <= RSP_MAX_PACKET, "a memory access of %zu bytes", len);
    size_t n = 0;
    for (; n < len && a + n >= a && a + n >= MEM_BASE && a + n < MEM_BASE + MEM_SIZE; n++) {
        if (in)
            mem[a + n - MEM_BASE] = ((const uint8_t *)in)[n];
        else
            ((uint8_t *)buf)[n] = mem[a + n - MEM_BASE];
    }
    return n;
}

static size_t t_read(void *c, int cpu, uint64_t a, void *buf, size_t len)
{
    (void)c;
    return t_mem(cpu, a, buf, NULL, len);
}

static size_t t_write(void *c, int cpu, uint64_t a, const void *buf, size_t len)
{
    (void)c;
    return t_mem(cpu, a, NULL, buf, len);
}

static int t_point(void *c, bool ins, enum stub_point type, uint64_t a, uint64_t k, const char **why)
{
    (void)c;
    (void)ins;
    (void)k;
    fuzz_check(type <= STUB_ACCESS_WATCH, "point type %d", (int)type);
    if (a & 1) {
        *why = "odd";
        return -1;
    }
    return type == STUB_READ_WATCH;
}

static int t_resume(void *c, const enum stub_action *act, const char **why)
{
    (void)c;
    fuzz_check(!running, "resumed twice");
    bool any = false;
    for (int i = 0; i < ncpus; i++) {
        fuzz_check(act[i] <= STUB_STEP, "action %d", (int)act[i]);
        any |= act[i] != STUB_STAY;
    }
    fuzz_check(any, "a resume that runs nothing");
    if (regs.regs.rax == 0xdead) {
        *why = "refused";
        return -1;
    }
    /* Each vCPU that runs takes a branch or two. */
    for (int i = 0; i < ncpus; i++)
        if (act[i] != STUB_STAY) {
            btrace_add(&bt[i], regs.regs.rip, regs.regs.rip + 0x10);
            btrace_add(&bt[i], regs.regs.rip + 0x14, regs.regs.rbx);
        }
    running = 1;
    return 0;
}

static void t_interrupt(void *c) { (void)c; }
static void t_kill(void *c) { (void)c; }
static void t_detach(void *c) { (void)c; }
static bool t_alive(void *c, int cpu) { (void)c; return cpu >= 0 && cpu < ncpus; }

static int t_btrace_on(void *c, int cpu, uint64_t size, const char **why)
{
    (void)c;
    fuzz_check(size >= 1 && size <= BTRACE_MAX_SIZE, "bts size %llu", (unsigned long long)size);
    if (bt[cpu].on) {
        *why = "Btrace already enabled.";
        return -1;
    }
    /* Small rings, so that reads see them wrap. */
    return btrace_enable(&bt[cpu], size % 4096, regs.regs.rip) < 0 ? -1 : 0;
}

static int t_btrace_off(void *c, int cpu, const char **why)
{
    (void)c;
    if (!bt[cpu].on) {
        *why = "Branch tracing not enabled.";
        return -1;
    }
    btrace_disable(&bt[cpu]);
    return 0;
}

static char *t_btrace_read(void *c, int cpu, enum btrace_read how, size_t *len, const char **why)
{
    (void)c;
    if (!bt[cpu].on) {
        *why = "Branch tracing not enabled.";
        return NULL;
    }
    return btrace_xml(&bt[cpu], how, regs.regs.rip, len, why);
}

static char *t_btrace_conf(void *c, int cpu, size_t *len)
{
    (void)c;
    return btrace_conf_xml(&bt[cpu], len);
}

static const struct stub_ops ops = {
    .regs_get = t_regs_get, .regs_set = t_regs_set, .mem_read = t_read, .mem_write = t_write,
    .point = t_point, .resume = t_resume, .interrupt = t_interrupt, .kill = t_kill,
    .detach = t_detach, .alive = t_alive, .btrace_on = t_btrace_on, .btrace_off = t_btrace_off,
    .btrace_read = t_btrace_read, .btrace_conf = t_btrace_conf, .send = t_send,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ncpus = 1 + ((data[0] >> 1) & 3);
    memset(&regs, 0, sizeof(regs));
    regs.regs.rip = MEM_BASE;
    regs.regs.rbx = MEM_BASE + 0x100;
    memset(&out, 0, sizeof(out));
    running = 0;
    struct stub_stop first = { .cpu = 0, .signal = 5 };
    stub_init(&st, &ops, NULL, ncpus, data[0] & 1 ? REGS_I386 : REGS_X86_64, &first);
    size_t at = 1;
    while (at < size) {
        size_t piece = 1 + data[at] % 64;
        if (piece > size - at)
            piece = size - at;
        stub_input(&st, data + at, piece);
        at += piece;
        if (running) {
            struct stub_stop s = { .cpu = (int)(at % (size_t)ncpus), .signal = 5,
                                   .why = (int)(at % 5), .addr = at };
            running = 0;
            stub_stopped(&st, &s);
        }
    }
    stub_exited(&st, 1);
    fuzz_check(out.state == 0, "the output ends inside a packet");
    stub_fini(&st);
    for (int i = 0; i < NCPU_MAX; i++)
        btrace_disable(&bt[i]);
    return 0;
}
