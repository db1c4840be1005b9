/* SPDX-License-Identifier: MIT */
#include "gdb/packet.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void packet_send(struct stub *s, const void *data, size_t len)
{
    size_t n = rsp_frame(data, len, s->frame, sizeof(s->frame));
    if (n)
        s->ops->send(s->ctx, s->frame, n);
}

void packet_reply(struct stub *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->reply, sizeof(s->reply), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(s->reply))
        n = (int)sizeof(s->reply) - 1;
    packet_send(s, s->reply, (size_t)n);
}


/* A hex number at *p, moved past it; false if there is none or it overflows. */
bool packet_hexnum(const char **p, uint64_t *v)
{
    const char *q = *p;
    uint64_t x = 0;
    int n = 0;
    for (int d; (d = rsp_hexdigit((uint8_t)*q)) >= 0; q++, n++) {
        if (x >> 60)
            return false;
        x = x << 4 | (uint64_t)d;
    }
    if (!n)
        return false;
    *p = q;
    *v = x;
    return true;
}

/* "ADDR,LEN" then the character `end` (0: end of packet). */
bool packet_addr_len(const char **p, uint64_t *addr, uint64_t *len, char end)
{
    if (!packet_hexnum(p, addr) || **p != ',')
        return false;
    (*p)++;
    if (!packet_hexnum(p, len) || **p != end)
        return false;
    if (end)
        (*p)++;
    return true;
}

/* A thread id: -1 all, 0 any, else that of vCPU tid-1; -2 if malformed. */
int packet_thread(const char *p, const char **end)
{
    if (p[0] == '-' && p[1] == '1') {
        *end = p + 2;
        return -1;
    }
    uint64_t v;
    if (!packet_hexnum(&p, &v) || v > 4096)
        return -2;
    *end = p;
    return (int)v;
}

