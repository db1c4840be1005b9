/* SPDX-License-Identifier: MIT */
/*
 * vbts control protocol, version 1.1: what a client and the monitor say on
 * a trace socket (--trace unix:PATH or tcp:HOST:PORT).  docs/protocol.md is
 * the normative description; this header is its C mirror.  All integers are
 * little-endian; every message is a 12-byte header and `length` payload
 * bytes.  Trace data travels in the chunks of docs/format.md, unchanged.
 *
 *   connection := (client sends nothing for VBTS_PROTO_GRACE_MS) stream
 *               | HELLO request ... (control session)
 *   stream     := file_header chunk*                  (docs/format.md)
 */
#ifndef VBTS_PROTOCOL_H
#define VBTS_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "vbts/le.h"
#include <string.h>

#define VBTS_PROTO_MAGIC       0x4c544356u /* the bytes "VCTL" */
#define VBTS_PROTO_MAJOR       1
#define VBTS_PROTO_MINOR       1
#define VBTS_PROTO_HDR_SIZE    12
#define VBTS_PROTO_MAX_REQUEST 1024   /* payload bytes a request may carry */
#define VBTS_PROTO_MAX_TEXT    200    /* error text bytes in a reply */
#define VBTS_PROTO_GRACE_MS    200    /* silent client: plain stream after this */
#define VBTS_PROTO_ALL_CPUS    0xffffu

/* Message types.  A reply carries its request's type with bit 15 set. */
enum vbts_msg_type {
    VBTS_MSG_HELLO = 1,
    VBTS_MSG_STATUS = 2,
    VBTS_MSG_CONFIG = 3,
    VBTS_MSG_SIZE = 4,
    VBTS_MSG_GET = 5,
    VBTS_MSG_CLEAR = 6,
    VBTS_MSG_DRAIN = 7,
    VBTS_MSG_STREAM = 8,
    VBTS_MSG_NOTIFY = 9,
    VBTS_MSG_TYPE_MAX_,
    VBTS_MSG_REPLY = 0x8000,        /* bit set in every reply */
    VBTS_MSG_ERROR = 0x8000,        /* reply to a message whose type is unknown */
    VBTS_MSG_FULL = 0x4001,         /* notification: a vCPU buffer is full */
};

/* First field of every reply payload. */
enum vbts_proto_status {
    VBTS_PROTO_OK = 0,
    VBTS_PROTO_E_MAGIC = 1,         /* header magic is not "VCTL" (closes) */
    VBTS_PROTO_E_TOO_LONG = 2,      /* length > VBTS_PROTO_MAX_REQUEST (closes) */
    VBTS_PROTO_E_TYPE = 3,          /* unknown message type */
    VBTS_PROTO_E_LENGTH = 4,        /* payload length wrong for the type */
    VBTS_PROTO_E_VERSION = 5,       /* HELLO major version unsupported (closes) */
    VBTS_PROTO_E_HELLO = 6,         /* first message is not HELLO, or HELLO again */
    VBTS_PROTO_E_FIELD = 7,         /* reserved field not 0, unknown bit or value */
    VBTS_PROTO_E_CPU = 8,           /* no such vCPU */
    VBTS_PROTO_E_RANGE = 9,         /* GET index not in the buffer */
    VBTS_PROTO_E_LIMIT = 10,        /* buffer size 0 or beyond --buffer-limit */
    VBTS_PROTO_E_BUSY = 11,         /* buffer holds more than the new size */
    VBTS_PROTO_E_NOMEM = 12,        /* the monitor is out of memory */
    VBTS_PROTO_E_CLIENTS = 13,      /* too many clients (closes) */
    VBTS_PROTO_E_FLAGS = 14,        /* header flags not 0 */
    VBTS_PROTO_E_WATCH = 15,        /* CONFIG, CLEAR, DRAIN from a watch-only client */
    VBTS_PROTO_STATUS_MAX_
};

enum vbts_overflow {
    VBTS_OVERFLOW_BLOCK = 0,        /* lossless: the vCPU waits for a client */
    VBTS_OVERFLOW_WRAP = 1,         /* flight recorder: the oldest records go */
    VBTS_OVERFLOW_DROP = 2,         /* the newest records go, counted in LOST markers */
    VBTS_OVERFLOW_MAX_
};

/* CONFIG mask: which fields of the request to apply. */
#define VBTS_CONFIG_BUFFER_SIZE  (1u << 0)
#define VBTS_CONFIG_FLAGS        (1u << 1)
#define VBTS_CONFIG_OVERFLOW     (1u << 2)
/* CONFIG/STATUS flags. */
#define VBTS_CFG_TRACE_ON        (1u << 0)  /* record branches */
#define VBTS_CFG_CTX_MARKERS     (1u << 1)  /* record ctx-arrive/ctx-depart */

/* HELLO options (1.1; a 1.0 monitor replies VBTS_PROTO_E_FIELD to any). */
#define VBTS_HELLO_ZSTD          (1u << 0)  /* STREAM data as zstd frames (docs/format.md) */

/* Payload sizes (requests, then replies including the 4-byte status). */
#define VBTS_HELLO_REQ_SIZE   8   /* u16 major, u16 minor, u32 options */
#define VBTS_STATUS_REQ_SIZE  0
#define VBTS_CONFIG_REQ_SIZE  24  /* u32 mask, u32 flags, u32 overflow, u32 reserved, u64 size */
#define VBTS_CPU_REQ_SIZE     8   /* SIZE, CLEAR, DRAIN: u16 cpu, u16 reserved, u32 reserved */
#define VBTS_GET_REQ_SIZE     16  /* u16 cpu, u16 reserved, u32 reserved, u64 index */
#define VBTS_STREAM_REQ_SIZE  8   /* u32 flags (0), u32 reserved */
#define VBTS_NOTIFY_REQ_SIZE  8   /* u32 on (0 or 1), u32 reserved */

#define VBTS_HELLO_REPLY_SIZE  16 /* status, u16 major, u16 minor, u32 ncpus, u32 file flags */
#define VBTS_STATUS_REPLY_HEAD 40 /* status, ncpus, overflow, flags, state, clients, size, limit */
#define VBTS_STATUS_REPLY_CPU  56 /* size, capacity, head, dropped, overwritten, cleared, full, stopped */
#define VBTS_CONFIG_REPLY_SIZE 24 /* status, flags, overflow, reserved, u64 size */
#define VBTS_COUNT_REPLY_SIZE  12 /* SIZE, CLEAR, DRAIN: status, u64 count */
#define VBTS_GET_REPLY_SIZE    40 /* status, u16 cpu, u16 0, u64 seq, record */
#define VBTS_EMPTY_REPLY_SIZE  4  /* STREAM, NOTIFY: status */
#define VBTS_FULL_NOTE_SIZE    24 /* u16 cpu, u16 0, u32 overflow, u64 records, u64 capacity */

/* The 12-byte header of every message. */
static inline size_t vbts_msg_header(void *p, uint16_t type, uint32_t length)
{
    unsigned char *b = (unsigned char *)p;
    vbts_put32(b, VBTS_PROTO_MAGIC);
    vbts_put16(b + 4, type);
    vbts_put16(b + 6, 0);
    vbts_put32(b + 8, length);
    return VBTS_PROTO_HDR_SIZE;
}

#endif
