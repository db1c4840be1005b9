/* SPDX-License-Identifier: MIT */
#include "gdb/stub.h"

#include "gdb/packet.h"
#include "gdb/query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Memory per m packet: its hex must fit in one reply. */
#define MEM_CHUNK ((RSP_MAX_PACKET - 8) / 2)

void stub_init(struct stub *s, const struct stub_ops *ops, void *ctx, int ncpus,
               enum regs_arch arch, const struct stub_stop *initial)
{
    memset(s, 0, sizeof(*s));
    s->ops = ops;
    s->ctx = ctx;
    s->ncpus = ncpus;
    s->arch = arch;
    s->ccpu = -1;
    s->bts_size = BTRACE_DEFAULT_SIZE;
    s->last = *initial;
    rsp_init(&s->rsp);
}

void stub_fini(struct stub *s)
{
    free(s->xfer);
    s->xfer = NULL;
}

static bool valid_cpu(struct stub *s, int tid)
{
    return tid >= 1 && tid <= s->ncpus && s->ops->alive(s->ctx, tid - 1);
}

/* --- stop replies ----------------------------------------------------------- */

static void send_stop(struct stub *s)
{
    const struct stub_stop *st = &s->last;
    char why[64] = "";
    switch (st->why) {
    case STUB_WHY_SWBREAK: snprintf(why, sizeof(why), "swbreak:;"); break;
    case STUB_WHY_HWBREAK: snprintf(why, sizeof(why), "hwbreak:;"); break;
    case STUB_WHY_WATCH: snprintf(why, sizeof(why), "watch:%" PRIx64 ";", st->addr); break;
    case STUB_WHY_AWATCH: snprintf(why, sizeof(why), "awatch:%" PRIx64 ";", st->addr); break;
    default: break;
    }
    int cpu = st->cpu >= 0 ? st->cpu : 0;
    packet_reply(s, "T%02xthread:%x;%s", st->signal & 0xff, cpu + 1, why);
}

void stub_stopped(struct stub *s, const struct stub_stop *st)
{
    s->last = *st;
    if (st->cpu >= 0)
        s->gcpu = st->cpu;
    if (!s->running)
        return;
    s->running = false;
    send_stop(s);
}

void stub_exited(struct stub *s, int status)
{
    if (s->ended)
        return;
    s->ended = true;
    s->running = false;
    packet_reply(s, "W%02x", status & 0xff);
}

void stub_console(struct stub *s, const char *line)
{
    if (!s->running || s->ended)
        return;
    char hex[2 * 240 + 3];
    size_t n = 0;
    for (const char *c = line; *c && n + 4 < sizeof(hex); c++)
        n += (size_t)snprintf(hex + n, sizeof(hex) - n, "%02x", (unsigned char)*c);
    snprintf(hex + n, sizeof(hex) - n, "0a");
    packet_reply(s, "O%s", hex);
}

/* --- registers and memory ----------------------------------------------------- */

static bool get_regs(struct stub *s, struct regs_state *rs)
{
    if (s->ops->regs_get(s->ctx, s->gcpu, rs) == 0)
        return true;
    packet_reply(s, "E01");
    return false;
}

static void read_all_regs(struct stub *s)
{
    struct regs_state rs;
    if (!get_regs(s, &rs))
        return;
    size_t n = 0;
    for (int i = 0; i < regs_count(s->arch); i++) {
        uint8_t b[REGS_MAX_BYTES];
        size_t len = regs_read(s->arch, &rs, i, b);
        n += rsp_hex(b, len, s->reply + n);
    }
    packet_send(s, s->reply, n);
}

/* G: every register in order; p and P: one. */
static void write_regs(struct stub *s, int first, int count, const char *hex)
{
    struct regs_state rs;
    if (!get_regs(s, &rs))
        return;
    unsigned changed = 0;
    size_t avail = strlen(hex);
    for (int i = first; i < first + count; i++) {
        size_t size = regs_size(s->arch, i);
        uint8_t b[REGS_MAX_BYTES];
        if (!size || avail < 2 * size || rsp_unhex(hex, 2 * size, b, size) != size) {
            packet_reply(s, "E02");
            return;
        }
        if (regs_write(s->arch, &rs, i, b, size, &changed) < 0) {
            packet_reply(s, "E.register %d cannot be written by the debugger", i);
            return;
        }
        hex += 2 * size;
        avail -= 2 * size;
    }
    if (changed && s->ops->regs_set(s->ctx, s->gcpu, &rs, changed) < 0) {
        packet_reply(s, "E03");
        return;
    }
    packet_reply(s, "OK");
}

static void read_one_reg(struct stub *s, const char *p)
{
    uint64_t n;
    struct regs_state rs;
    uint8_t b[REGS_MAX_BYTES];
    if (!packet_hexnum(&p, &n) || *p || n >= (uint64_t)regs_count(s->arch)) {
        packet_reply(s, "E02");
        return;
    }
    if (!get_regs(s, &rs))
        return;
    size_t len = regs_read(s->arch, &rs, (int)n, b);
    rsp_hex(b, len, s->reply);
    packet_send(s, s->reply, 2 * len);
}

static void write_one_reg(struct stub *s, const char *p)
{
    uint64_t n;
    if (!packet_hexnum(&p, &n) || *p != '=' || n >= (uint64_t)regs_count(s->arch)) {
        packet_reply(s, "E02");
        return;
    }
    const char *hex = p + 1;
    if (strlen(hex) != 2 * regs_size(s->arch, (int)n)) {
        packet_reply(s, "E02");
        return;
    }
    write_regs(s, (int)n, 1, hex);
}

static void read_mem(struct stub *s, const char *p)
{
    uint64_t addr, len;
    if (!packet_addr_len(&p, &addr, &len, 0)) {
        packet_reply(s, "E02");
        return;
    }
    if (len > MEM_CHUNK)
        len = MEM_CHUNK;    /* gdb asks again for the rest */
    uint8_t buf[MEM_CHUNK];
    size_t got = len ? s->ops->mem_read(s->ctx, s->gcpu, addr, buf, len) : 0;
    if (len && !got) {
        packet_reply(s, "E%02x", EFAULT);
        return;
    }
    rsp_hex(buf, got, s->reply);
    packet_send(s, s->reply, 2 * got);
}

/* M (hex) and X (binary) packets. */
static void write_mem(struct stub *s, char *p, size_t plen, bool binary)
{
    const char *q = p;
    uint64_t addr, len;
    if (!packet_addr_len(&q, &addr, &len, ':')) {
        packet_reply(s, "E02");
        return;
    }
    size_t dlen = plen - (size_t)(q - p);
    char *data = p + (q - p);
    uint8_t *buf = s->mem;
    size_t have;
    if (binary) {
        have = rsp_unescape(data, dlen);
        memcpy(buf, data, have);   /* never longer than the packet */
    } else {
        have = dlen % 2 ? (size_t)-1 : rsp_unhex(data, dlen, buf, sizeof(s->mem));
        if (have != dlen / 2)
            have = (size_t)-1;
    }
    if (have != len) {
        packet_reply(s, "E02");
        return;
    }
    if (len && s->ops->mem_write(s->ctx, s->gcpu, addr, buf, len) != len) {
        packet_reply(s, "E%02x", EFAULT);
        return;
    }
    packet_reply(s, "OK");
}

/* Z and z: TYPE,ADDR,KIND; conditions and commands after `;` are not offered. */
static void point(struct stub *s, const char *p, bool insert)
{
    uint64_t type = 0, addr, kind;
    if (!packet_hexnum(&p, &type) || *p++ != ',' || !packet_addr_len(&p, &addr, &kind, 0)) {
        packet_reply(s, "E02");
        return;
    }
    if (type > STUB_ACCESS_WATCH) {
        packet_reply(s, "%s", "");
        return;
    }
    const char *why = "no such breakpoint";
    int r = s->ops->point(s->ctx, insert, (enum stub_point)type, addr, kind, &why);
    if (r > 0)
        packet_reply(s, "%s", "");
    else if (r < 0)
        packet_reply(s, "E.%s", why);
    else
        packet_reply(s, "OK");
}

/* --- running ----------------------------------------------------------------- */

static void resume(struct stub *s, enum stub_action *act)
{
    const char *why = "cannot resume";
    free(s->xfer);          /* what it read of the stopped target is stale */
    s->xfer = NULL;
    if (s->ops->resume(s->ctx, act, &why) < 0) {
        packet_reply(s, "E.%s", why);
        return;
    }
    s->running = true;
}

/* c/s/C/S [sig;][ADDR]: the Hc thread (or all) steps or continues, the rest continue. */
static void resume_simple(struct stub *s, const char *p, bool step, bool with_signal)
{
    uint64_t sig, addr;
    if (with_signal && !packet_hexnum(&p, &sig)) {
        packet_reply(s, "E02");
        return;
    }
    if (with_signal && *p == ';')
        p++;
    if (*p) {
        /* Resume at ADDR: the thread's PC first. */
        struct regs_state rs;
        unsigned changed = 0;
        uint8_t b[8];
        int cpu = s->ccpu >= 0 ? s->ccpu : s->gcpu;
        if (!packet_hexnum(&p, &addr) || *p || s->ops->regs_get(s->ctx, cpu, &rs) < 0) {
            packet_reply(s, "E02");
            return;
        }
        size_t size = regs_size(s->arch, s->arch == REGS_I386 ? 8 : 16);
        for (size_t i = 0; i < size; i++)
            b[i] = (uint8_t)(addr >> (8 * i));
        regs_write(s->arch, &rs, s->arch == REGS_I386 ? 8 : 16, b, size, &changed);
        if (changed && s->ops->regs_set(s->ctx, cpu, &rs, changed) < 0) {
            packet_reply(s, "E03");
            return;
        }
    }
    enum stub_action act[s->ncpus];
    int target = s->ccpu >= 0 ? s->ccpu : s->gcpu;
    for (int i = 0; i < s->ncpus; i++)
        act[i] = step && i == target ? STUB_STEP : step ? STUB_STAY : STUB_CONTINUE;
    /* Stepping one thread, gdb's default lets the others run (scheduler-locking off). */
    if (step)
        for (int i = 0; i < s->ncpus; i++)
            if (i != target)
                act[i] = STUB_CONTINUE;
    resume(s, act);
}

/* vCont;ACTION[:TID];...: the first action naming a thread, or the default, applies. */
static void resume_vcont(struct stub *s, const char *p)
{
    enum stub_action act[s->ncpus];
    bool set[s->ncpus];
    memset(set, 0, sizeof(set));
    for (int i = 0; i < s->ncpus; i++)
        act[i] = STUB_STAY;
    bool any = false;
    while (*p == ';') {
        p++;
        char c = *p++;
        enum stub_action a;
        uint64_t sig;
        if (c == 'c' || c == 's' || c == 't') {
            a = c == 'c' ? STUB_CONTINUE : c == 's' ? STUB_STEP : STUB_STAY;
        } else if ((c == 'C' || c == 'S') && packet_hexnum(&p, &sig)) {
            a = c == 'C' ? STUB_CONTINUE : STUB_STEP;   /* no signals to deliver to a VM */
        } else {
            packet_reply(s, "E02");
            return;
        }
        int tid = -1;
        if (*p == ':') {
            tid = packet_thread(p + 1, &p);
            if (tid == -2 || tid == 0 || (tid > 0 && tid > s->ncpus)) {
                packet_reply(s, "E02");
                return;
            }
        }
        for (int i = 0; i < s->ncpus; i++)
            if (!set[i] && (tid == -1 || tid == i + 1)) {
                act[i] = a;
                set[i] = true;
                any |= a != STUB_STAY;
            }
        if (*p && *p != ';') {
            packet_reply(s, "E02");
            return;
        }
    }
    if (!any) {
        packet_reply(s, "E02");
        return;
    }
    resume(s, act);
}

/* H[gc]TID */
static void set_thread(struct stub *s, const char *p)
{
    char which = *p++;
    const char *end;
    int tid = packet_thread(p, &end);
    if ((which != 'g' && which != 'c') || tid == -2 || *end ||
        (tid > 0 && !valid_cpu(s, tid)) || (which == 'g' && tid == -1)) {
        packet_reply(s, "E02");
        return;
    }
    if (which == 'g')
        s->gcpu = tid > 0 ? tid - 1 : s->gcpu;
    else
        s->ccpu = tid > 0 ? tid - 1 : -1;
    packet_reply(s, "OK");
}

static void packet(struct stub *s, char *p, size_t len)
{
    switch (p[0]) {
    case '?': send_stop(s); break;
    case 'g': read_all_regs(s); break;
    case 'G': write_regs(s, 0, regs_count(s->arch), p + 1); break;
    case 'p': read_one_reg(s, p + 1); break;
    case 'P': write_one_reg(s, p + 1); break;
    case 'm': read_mem(s, p + 1); break;
    case 'M': write_mem(s, p + 1, len - 1, false); break;
    case 'X': write_mem(s, p + 1, len - 1, true); break;
    case 'Z': point(s, p + 1, true); break;
    case 'z': point(s, p + 1, false); break;
    case 'c': resume_simple(s, p + 1, false, false); break;
    case 's': resume_simple(s, p + 1, true, false); break;
    case 'C': resume_simple(s, p + 1, false, true); break;
    case 'S': resume_simple(s, p + 1, true, true); break;
    case 'H': set_thread(s, p + 1); break;
    case 'T': {
        const char *end;
        int tid = packet_thread(p + 1, &end);
        packet_reply(s, "%s", tid > 0 && !*end && valid_cpu(s, tid) ? "OK" : "E01");
        break;
    }
    case 'q': query_get(s, p); break;
    case 'Q': query_set(s, p); break;
    case 'v':
        if (!strcmp(p, "vCont?"))
            packet_reply(s, "vCont;c;C;s;S;t");
        else if (!strncmp(p, "vCont;", 6))
            resume_vcont(s, p + 5);
        else if (!strncmp(p, "vKill", 5)) {
            packet_reply(s, "OK");
            s->ended = true;
            s->ops->kill(s->ctx);
        } else
            packet_reply(s, "%s", "");
        break;
    case 'k':
        s->ended = true;
        s->ops->kill(s->ctx);       /* no reply: gdb closes */
        break;
    case 'D':
        packet_reply(s, "OK");
        s->ops->detach(s->ctx);
        break;
    default: packet_reply(s, "%s", ""); break;
    }
}

void stub_input(struct stub *s, const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        switch (rsp_feed(&s->rsp, buf[i])) {
        case RSP_INTERRUPT:
            if (s->running)
                s->ops->interrupt(s->ctx);
            break;
        case RSP_BAD:
            if (!s->no_ack)
                s->ops->send(s->ctx, "-", 1);
            break;
        case RSP_PACKET:
            if (!s->no_ack)
                s->ops->send(s->ctx, "+", 1);
            if (s->ended)
                packet_reply(s, "X09");    /* the target is gone */
            else if (s->running)
                packet_reply(s, "E.the target is running; interrupt it first (Ctrl-C)");
            else if (s->rsp.too_long)
                packet_reply(s, "E.packet longer than PacketSize");
            else
                packet(s, s->rsp.buf, s->rsp.len);
            break;
        default:
            break;
        }
    }
}
