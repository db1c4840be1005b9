/* SPDX-License-Identifier: MIT */
/*
 * Control protocol requests (docs/protocol.md): every byte a client sends
 * is hostile, so each field is checked here, before the server acts on it.
 * Pure functions: fuzzed by fuzz/fuzz_proto.c, tested by test_protocol.c.
 */
#include <stdio.h>
#include <string.h>

#include "export/proto.h"

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
    [VBTS_PROTO_E_WATCH] = "this connection may only watch",
};

const char *proto_strerror(int status)
{
    if (status < 0 || status >= VBTS_PROTO_STATUS_MAX_)
        return "unknown error";
    return errors[status];
}

size_t proto_error(uint8_t *out, uint16_t req_type, int status, const char *text)
{
    if (!text)
        text = proto_strerror(status);
    size_t n = strlen(text);
    if (n > VBTS_PROTO_MAX_TEXT)
        n = VBTS_PROTO_MAX_TEXT;
    uint16_t type = req_type > 0 && req_type < VBTS_MSG_TYPE_MAX_
                        ? (uint16_t)(req_type | VBTS_MSG_REPLY) : VBTS_MSG_ERROR;
    vbts_msg_header(out, type, (uint32_t)(4 + n));
    vbts_put32(out + VBTS_PROTO_HDR_SIZE, (uint32_t)status);
    memcpy(out + VBTS_PROTO_HDR_SIZE + 4, text, n);
    return VBTS_PROTO_HDR_SIZE + 4 + n;
}

static const uint8_t magic[4] = { 'V', 'C', 'T', 'L' };

static int check_len(uint32_t len, uint32_t want)
{
    return len == want ? VBTS_PROTO_OK : VBTS_PROTO_E_LENGTH;
}

static int parse_config(const uint8_t *p, uint32_t plen, struct proto_req *req)
{
    int st = check_len(plen, VBTS_CONFIG_REQ_SIZE);
    if (st)
        return st;
    req->mask = vbts_le32(p);
    req->flags = vbts_le32(p + 4);
    req->overflow = vbts_le32(p + 8);
    req->value = vbts_le64(p + 16);
    if ((req->mask & ~(VBTS_CONFIG_BUFFER_SIZE | VBTS_CONFIG_FLAGS | VBTS_CONFIG_OVERFLOW)) ||
        (req->flags & ~(VBTS_CFG_TRACE_ON | VBTS_CFG_CTX_MARKERS)) ||
        req->overflow >= VBTS_OVERFLOW_MAX_ || vbts_le32(p + 12) ||
        (!(req->mask & VBTS_CONFIG_FLAGS) && req->flags) ||
        (!(req->mask & VBTS_CONFIG_OVERFLOW) && req->overflow) ||
        (!(req->mask & VBTS_CONFIG_BUFFER_SIZE) && req->value))
        return VBTS_PROTO_E_FIELD;
    return VBTS_PROTO_OK;
}

/* A request's payload by type: its fields into req, and whether they are valid. */
static int parse_payload(uint16_t type, const uint8_t *p, uint32_t plen, struct proto_req *req)
{
    int st;
    switch (type) {
    case VBTS_MSG_HELLO:
        if ((st = check_len(plen, VBTS_HELLO_REQ_SIZE)))
            return st;
        req->major = vbts_le16(p);
        req->minor = vbts_le16(p + 2);
        req->options = vbts_le32(p + 4);
        return req->options & ~VBTS_HELLO_ZSTD ? VBTS_PROTO_E_FIELD : VBTS_PROTO_OK;
    case VBTS_MSG_STATUS:
        return check_len(plen, VBTS_STATUS_REQ_SIZE);
    case VBTS_MSG_CONFIG:
        return parse_config(p, plen, req);
    case VBTS_MSG_SIZE:
    case VBTS_MSG_CLEAR:
    case VBTS_MSG_DRAIN:
        if ((st = check_len(plen, VBTS_CPU_REQ_SIZE)))
            return st;
        req->cpu = vbts_le16(p);
        return vbts_le16(p + 2) || vbts_le32(p + 4) ? VBTS_PROTO_E_FIELD : VBTS_PROTO_OK;
    case VBTS_MSG_GET:
        if ((st = check_len(plen, VBTS_GET_REQ_SIZE)))
            return st;
        req->cpu = vbts_le16(p);
        req->value = vbts_le64(p + 8);
        return vbts_le16(p + 2) || vbts_le32(p + 4) ? VBTS_PROTO_E_FIELD : VBTS_PROTO_OK;
    case VBTS_MSG_STREAM:
        if ((st = check_len(plen, VBTS_STREAM_REQ_SIZE)))
            return st;
        return vbts_le32(p) || vbts_le32(p + 4) ? VBTS_PROTO_E_FIELD : VBTS_PROTO_OK;
    case VBTS_MSG_NOTIFY:
        if ((st = check_len(plen, VBTS_NOTIFY_REQ_SIZE)))
            return st;
        req->on = vbts_le32(p);
        return req->on > 1 || vbts_le32(p + 4) ? VBTS_PROTO_E_FIELD : VBTS_PROTO_OK;
    default:
        return VBTS_PROTO_E_TYPE;
    }
}

long proto_parse(const uint8_t *buf, size_t len, struct proto_req *req, int *status, uint16_t *type)
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
    *type = vbts_le16(buf + 4);
    uint16_t hflags = vbts_le16(buf + 6);
    uint32_t plen = vbts_le32(buf + 8);
    if (plen > VBTS_PROTO_MAX_REQUEST) {
        *status = VBTS_PROTO_E_TOO_LONG;
        return -1;
    }
    if (len - VBTS_PROTO_HDR_SIZE < plen)
        return 0;
    long total = VBTS_PROTO_HDR_SIZE + (long)plen;
    req->type = *type;
    *status = hflags ? VBTS_PROTO_E_FLAGS
                     : parse_payload(*type, buf + VBTS_PROTO_HDR_SIZE, plen, req);
    return total;
}
