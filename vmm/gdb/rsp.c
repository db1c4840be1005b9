/* SPDX-License-Identifier: MIT */
#include "gdb/rsp.h"

#include <string.h>

enum { IDLE, DATA, CS1, CS2 };

void rsp_init(struct rsp *r)
{
    memset(r, 0, sizeof(*r));
}

int rsp_hexdigit(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

enum rsp_event rsp_feed(struct rsp *r, uint8_t c)
{
    switch (r->state) {
    case IDLE:
        if (c == '$') {
            r->state = DATA;
            r->len = 0;
            r->sum = 0;
            r->too_long = false;
        } else if (c == 0x03) {
            return RSP_INTERRUPT;
        }
        /* Acks and line noise between packets carry nothing. */
        return RSP_NONE;
    case DATA:
        if (c == '#') {
            r->state = CS1;
            return RSP_NONE;
        }
        if (c == '$') {         /* a new packet: the old one was torn */
            r->len = 0;
            r->sum = 0;
            r->too_long = false;
            return RSP_NONE;
        }
        r->sum = (uint8_t)(r->sum + c);
        if (r->len < RSP_MAX_PACKET)
            r->buf[r->len++] = (char)c;
        else
            r->too_long = true;
        return RSP_NONE;
    case CS1:
        if (rsp_hexdigit(c) < 0) {
            r->state = IDLE;
            return RSP_BAD;
        }
        r->state = CS2;
        r->cs = (uint8_t)(rsp_hexdigit(c) << 4);
        return RSP_NONE;
    default:
        r->state = IDLE;
        r->buf[r->len] = 0;
        if (rsp_hexdigit(c) < 0 || (uint8_t)(r->cs | rsp_hexdigit(c)) != r->sum)
            return RSP_BAD;
        return RSP_PACKET;
    }
}

size_t rsp_frame(const void *data, size_t len, char *out, size_t cap)
{
    const uint8_t *d = data;
    size_t n = 0;
    uint8_t sum = 0;
    if (cap < 4)
        return 0;
    out[n++] = '$';
    for (size_t i = 0; i < len; i++) {
        uint8_t c = d[i];
        bool esc = c == '#' || c == '$' || c == '}' || c == '*';
        if (n + (esc ? 2 : 1) + 3 > cap)
            return 0;
        if (esc) {
            out[n++] = '}';
            sum = (uint8_t)(sum + '}');
            c ^= 0x20;
        }
        out[n++] = (char)c;
        sum = (uint8_t)(sum + c);
    }
    static const char digits[] = "0123456789abcdef";
    out[n++] = '#';
    out[n++] = digits[sum >> 4];
    out[n++] = digits[sum & 15];
    return n;
}

size_t rsp_unescape(char *data, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '}') {
            if (++i == len)
                break;
            data[o++] = (char)(data[i] ^ 0x20);
        } else {
            data[o++] = data[i];
        }
    }
    return o;
}

size_t rsp_unhex(const char *hex, size_t nhex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; n < cap && 2 * n + 1 < nhex; n++) {
        int hi = rsp_hexdigit((uint8_t)hex[2 * n]), lo = rsp_hexdigit((uint8_t)hex[2 * n + 1]);
        if (hi < 0 || lo < 0)
            break;
        out[n] = (uint8_t)(hi << 4 | lo);
    }
    return n;
}

size_t rsp_hex(const void *data, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *d = data;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * len] = 0;
    return 2 * len;
}
