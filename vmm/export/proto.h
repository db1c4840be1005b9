/* SPDX-License-Identifier: MIT */
/*
 * The control protocol's requests and error replies (docs/protocol.md):
 * pure functions of bytes, fuzzed (fuzz/fuzz_proto.c).
 */
#ifndef VBTS_EXPORT_PROTO_H
#define VBTS_EXPORT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "vbts/protocol.h"

struct proto_req {
    uint16_t type;
    uint16_t cpu;
    uint32_t mask, flags, overflow;
    uint64_t value;                 /* CONFIG buffer size, GET index */
    uint16_t major, minor;          /* HELLO */
    uint32_t options;               /* HELLO: VBTS_HELLO_* */
    uint32_t on;                    /* NOTIFY */
};

/*
 * Parse one request from `len` bytes.  Returns the bytes it takes (header
 * and payload) with *status VBTS_PROTO_OK or the error to reply, 0 if more
 * bytes are needed, or -1 if the connection cannot continue (*status tells
 * why: bad magic, length beyond VBTS_PROTO_MAX_REQUEST).  *type is the
 * request's type whenever the header was read.
 */
long proto_parse(const uint8_t *buf, size_t len, struct proto_req *req, int *status, uint16_t *type);
const char *proto_strerror(int status);
/* An error reply: header and payload into out (room >= 12 + 4 + MAX_TEXT). */
size_t proto_error(uint8_t *out, uint16_t req_type, int status, const char *text);

#endif
