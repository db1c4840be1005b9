/* SPDX-License-Identifier: MIT */
/*
 * Control protocol requests (docs/protocol.md): every byte a client sends
 * is hostile, so each field is checked here, before the server acts on it.
 * Pure functions: fuzzed by fuzz/fuzz_proto.c, tested by test_protocol.c.
 */
#include <stdio.h>
#include <string.h>

#include "export.h"

static const char *const errors[VBTS_PROTO_STATUS_MAX_] = {
    [VBTS_PROTO_OK] = "ok",
    [VBTS_PROTO_E_MAGIC] = "bad message magic (not a vbts control client)",
    [VBTS_PROTO_E_TOO_LONG] = "request payload too long",
    [VBTS_PROTO_E_TYPE] = "unknown request type",
    [VBTS_PROTO_E_LENGTH] = "wrong payload length for the request",
    [VBTS_PROTO_E_VERSION] = "unsupported protocol version",
    [VBTS_PROTO_E_HELLO] = "HELLO must come first, and only once",
    [VBTS_PROTO_E_FIELD] = "invalid field value",
    [VBTS_PROTO_E_CPU] = "no such vCPU",
    [VBTS_PROTO_E_RANGE] = "index out of range",
    [VBTS_PROTO_E_LIMIT] = "buffer size out of range",
    [VBTS_PROTO_E_BUSY] = "buffer holds more records than the new size",
    [VBTS_PROTO_E_NOMEM] = "out of memory",
    [VBTS_PROTO_E_CLIENTS] = "too many clients",
    [VBTS_PROTO_E_FLAGS] = "nonzero header flags",
};

const char *xproto_strerror(int status)
{
    if (status < 0 || status >= VBTS_PROTO_STATUS_MAX_)
        return "unknown error";
    return errors[status];
}

size_t xproto_error(uint8_t *out, uint16_t req_type, int status, const char *text)
{
    if (!text)
        text = xproto_strerror(status);
    size_t n = strlen(text);
    if (n > VBTS_PROTO_MAX_TEXT)
        n = VBTS_PROTO_MAX_TEXT;
    uint16_t type = req_type > 0 && req_type < VBTS_MSG_TYPE_MAX_
                        ? (uint16_t)(req_type | VBTS_MSG_REPLY) : VBTS_MSG_ERROR;
    vbts_msg_header(out, type, (uint32_t)(4 + n));
    vbts_set32(out + VBTS_PROTO_HDR_SIZE, (uint32_t)status);
    memcpy(out + VBTS_PROTO_HDR_SIZE + 4, text, n);
    return VBTS_PROTO_HDR_SIZE + 4 + n;
}

static const uint8_t magic[4] = { 'V', 'C', 'T', 'L' };

static int check_len(uint32_t len, uint32_t want)
{
    return len == want ? VBTS_PROTO_OK : VBTS_PROTO_E_LENGTH;
}

long xproto_parse(const uint8_t *buf, size_t len, struct xreq *req, int *status, uint16_t *type)
{
    memset(req, 0, sizeof(*req));
    *type = 0;
    /* Reject garbage as soon as its first byte differs from the magic. */
    size_t m = len < 4 ? len : 4;
    if (memcmp(buf, magic, m) != 0) {
        *status = VBTS_PROTO_E_MAGIC;
        return -1;
    }
    if (len < VBTS_PROTO_HDR_SIZE)
        return 0;
    *type = vbts_get16(buf + 4);
    uint16_t hflags = vbts_get16(buf + 6);
    uint32_t plen = vbts_get32(buf + 8);
    if (plen > VBTS_PROTO_MAX_REQUEST) {
        *status = VBTS_PROTO_E_TOO_LONG;
        return -1;
    }
    if (len - VBTS_PROTO_HDR_SIZE < plen)
        return 0;
    long total = VBTS_PROTO_HDR_SIZE + (long)plen;
    const uint8_t *p = buf + VBTS_PROTO_HDR_SIZE;
    req->type = *type;
    if (hflags) {
        *status = VBTS_PROTO_E_FLAGS;
        return total;
    }
    int st = VBTS_PROTO_OK;
    switch (*type) {
    case VBTS_MSG_HELLO:
        if ((st = check_len(plen, VBTS_HELLO_REQ_SIZE)))
            break;
        req->major = vbts_get16(p);
        req->minor = vbts_get16(p + 2);
        if (vbts_get32(p + 4))
            st = VBTS_PROTO_E_FIELD;
        break;
    case VBTS_MSG_STATUS:
        st = check_len(plen, VBTS_STATUS_REQ_SIZE);
        break;
    case VBTS_MSG_CONFIG:
        if ((st = check_len(plen, VBTS_CONFIG_REQ_SIZE)))
            break;
        req->mask = vbts_get32(p);
        req->flags = vbts_get32(p + 4);
        req->overflow = vbts_get32(p + 8);
        req->value = vbts_get64(p + 16);
        if ((req->mask & ~(VBTS_CONFIG_BUFFER_SIZE | VBTS_CONFIG_FLAGS | VBTS_CONFIG_OVERFLOW)) ||
            (req->flags & ~(VBTS_CFG_TRACE_ON | VBTS_CFG_CTX_MARKERS)) ||
            req->overflow >= VBTS_OVERFLOW_MAX_ || vbts_get32(p + 12) ||
            (!(req->mask & VBTS_CONFIG_FLAGS) && req->flags) ||
            (!(req->mask & VBTS_CONFIG_OVERFLOW) && req->overflow) ||
            (!(req->mask & VBTS_CONFIG_BUFFER_SIZE) && req->value))
            st = VBTS_PROTO_E_FIELD;
        break;
    case VBTS_MSG_SIZE:
    case VBTS_MSG_CLEAR:
    case VBTS_MSG_DRAIN:
        if ((st = check_len(plen, VBTS_CPU_REQ_SIZE)))
            break;
        req->cpu = vbts_get16(p);
        if (vbts_get16(p + 2) || vbts_get32(p + 4))
            st = VBTS_PROTO_E_FIELD;
        break;
    case VBTS_MSG_GET:
        if ((st = check_len(plen, VBTS_GET_REQ_SIZE)))
            break;
        req->cpu = vbts_get16(p);
        req->value = vbts_get64(p + 8);
        if (vbts_get16(p + 2) || vbts_get32(p + 4))
            st = VBTS_PROTO_E_FIELD;
        break;
    case VBTS_MSG_STREAM:
        if ((st = check_len(plen, VBTS_STREAM_REQ_SIZE)))
            break;
        if (vbts_get32(p) || vbts_get32(p + 4))
            st = VBTS_PROTO_E_FIELD;
        break;
    case VBTS_MSG_NOTIFY:
        if ((st = check_len(plen, VBTS_NOTIFY_REQ_SIZE)))
            break;
        req->on = vbts_get32(p);
        if (req->on > 1 || vbts_get32(p + 4))
            st = VBTS_PROTO_E_FIELD;
        break;
    default:
        st = VBTS_PROTO_E_TYPE;
    }
    *status = st;
    return total;
}
