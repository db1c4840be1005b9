/* SPDX-License-Identifier: MIT */
#include "gdb/query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdb/packet.h"

static const char supported[] =
    "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;qXfer:btrace:read+;"
    "qXfer:btrace-conf:read+;Qbtrace:bts+;Qbtrace:off+;Qbtrace-conf:bts:size+;"
    "swbreak+;hwbreak+;vContSupported+";

/* --- qXfer ------------------------------------------------------------------- */

/* Make the object for key (at offset 0); NULL with *why if it cannot be read. */
static char *xfer_make(struct stub *s, const char *object, const char *annex, size_t *len,
                       const char **why)
{
    if (!strcmp(object, "features")) {
        if (strcmp(annex, "target.xml")) {
            *why = "no such annex";
            return NULL;
        }
        const char *x = regs_target_xml(s->arch, len);
        char *c = malloc(*len);
        if (c)
            memcpy(c, x, *len);
        return c;
    }
    if (!strcmp(object, "btrace-conf"))
        return s->ops->btrace_conf(s->ctx, s->gcpu, len);
    enum btrace_read how;
    if (!strcmp(annex, "all"))
        how = BTRACE_READ_ALL;
    else if (!strcmp(annex, "new"))
        how = BTRACE_READ_NEW;
    else if (!strcmp(annex, "delta"))
        how = BTRACE_READ_DELTA;
    else {
        *why = "no such annex";
        return NULL;
    }
    return s->ops->btrace_read(s->ctx, s->gcpu, how, len, why);
}

/* qXfer:OBJECT:read:ANNEX:OFFSET,LENGTH */
static void xfer(struct stub *s, char *p)
{
    char *object = p, *op = strchr(p, ':');
    char *annex = op ? strchr(op + 1, ':') : NULL;
    char *range = annex ? strchr(annex + 1, ':') : NULL;
    if (!range) {
        packet_reply(s, "E02");
        return;
    }
    *op++ = 0;
    *annex++ = 0;
    *range++ = 0;
    const char *q = range;
    uint64_t off, len;
    if (strcmp(op, "read")) {
        packet_reply(s, "%s", "");     /* writes are not offered */
        return;
    }
    if (!packet_addr_len(&q, &off, &len, 0)) {
        packet_reply(s, "E02");
        return;
    }
    if (strcmp(object, "features") && strcmp(object, "btrace") && strcmp(object, "btrace-conf")) {
        packet_reply(s, "%s", "");
        return;
    }
    char key[sizeof(s->xfer_key)];
    snprintf(key, sizeof(key), "%s:%s:%d", object, annex, s->gcpu);
    if (off == 0 || !s->xfer || strcmp(key, s->xfer_key)) {
        free(s->xfer);
        s->xfer = NULL;
        const char *why = "cannot be read";
        size_t n = 0;
        char *x = xfer_make(s, object, annex, &n, &why);
        if (!x) {
            packet_reply(s, "E.%s", why);
            return;
        }
        s->xfer = x;
        s->xfer_len = n;
        snprintf(s->xfer_key, sizeof(s->xfer_key), "%s", key);
    }
    /* Room for the escapes: at worst every byte doubles. */
    uint64_t room = (RSP_MAX_PACKET - 2) / 2;
    if (len > room)
        len = room;
    if (off >= s->xfer_len) {
        packet_reply(s, "l");
        return;
    }
    size_t n = s->xfer_len - off < len ? s->xfer_len - off : len;
    s->reply[0] = off + n < s->xfer_len ? 'm' : 'l';
    memcpy(s->reply + 1, s->xfer + off, n);
    packet_send(s, s->reply, n + 1);
}

/* --- branch trace -------------------------------------------------------------- */

static void btrace_packet(struct stub *s, const char *p)
{
    const char *why = "cannot be done";
    if (!strcmp(p, "bts")) {
        if (s->ops->btrace_on(s->ctx, s->gcpu, s->bts_size, &why) < 0)
            packet_reply(s, "E.%s", why);
        else
            packet_reply(s, "OK");
    } else if (!strcmp(p, "off")) {
        if (s->ops->btrace_off(s->ctx, s->gcpu, &why) < 0)
            packet_reply(s, "E.%s", why);
        else
            packet_reply(s, "OK");
    } else if (!strcmp(p, "pt")) {
        packet_reply(s, "E.Intel PT is not offered; vbts records BTS.");
    } else {
        packet_reply(s, "%s", "");
    }
}

static void btrace_conf_packet(struct stub *s, const char *p)
{
    uint64_t size;
    if (!strncmp(p, "bts:size=", 9)) {
        p += 9;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))    /* gdb writes 0x10000 */
            p += 2;
        if (!packet_hexnum(&p, &size) || *p || size == 0 || size > BTRACE_MAX_SIZE) {
            packet_reply(s, "E.bts size must be 1 to 0x%x bytes.", BTRACE_MAX_SIZE);
            return;
        }
        s->bts_size = size;
        packet_reply(s, "OK");
    } else {
        packet_reply(s, "%s", "");
    }
}

/* --- queries --------------------------------------------------------------------- */

static void threads(struct stub *s)
{
    size_t n = 0;
    s->reply[n++] = 'm';
    for (int i = 0; i < s->ncpus && n + 16 < sizeof(s->reply); i++)
        if (s->ops->alive(s->ctx, i))
            n += (size_t)snprintf(s->reply + n, sizeof(s->reply) - n, "%s%x",
                                  n > 1 ? "," : "", i + 1);
    packet_send(s, s->reply, n);
}

void query_get(struct stub *s, char *p)
{
    if (!strncmp(p, "qSupported", 10)) {
        packet_reply(s, "%s", supported);
    } else if (!strcmp(p, "qAttached")) {
        packet_reply(s, "1");
    } else if (!strcmp(p, "qC")) {
        packet_reply(s, "QC%x", s->gcpu + 1);
    } else if (!strcmp(p, "qfThreadInfo")) {
        threads(s);
    } else if (!strcmp(p, "qsThreadInfo")) {
        packet_reply(s, "l");
    } else if (!strncmp(p, "qThreadExtraInfo,", 17)) {
        const char *end;
        int tid = packet_thread(p + 17, &end);
        char text[32];
        if (tid < 1 || tid > s->ncpus || *end) {
            packet_reply(s, "E02");
            return;
        }
        int n = snprintf(text, sizeof(text), "vCPU %d", tid - 1);
        rsp_hex(text, (size_t)n, s->reply);
        packet_send(s, s->reply, 2 * (size_t)n);
    } else if (!strncmp(p, "qXfer:", 6)) {
        xfer(s, p + 6);
    } else if (!strncmp(p, "qSymbol:", 8)) {
        packet_reply(s, "OK");
    } else {
        packet_reply(s, "%s", "");
    }
}

void query_set(struct stub *s, char *p)
{
    if (!strcmp(p, "QStartNoAckMode")) {
        packet_reply(s, "OK");
        s->no_ack = true;
    } else if (!strncmp(p, "Qbtrace:", 8)) {
        btrace_packet(s, p + 8);
    } else if (!strncmp(p, "Qbtrace-conf:", 13)) {
        btrace_conf_packet(s, p + 13);
    } else {
        packet_reply(s, "%s", "");
    }
}

