/* SPDX-License-Identifier: MIT */
/* Names shared by vbts-decode's text and JSON output and by other tools. */
#include <vbts/decode.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *const kind_names[] = {
    [VBTS_KIND_UNKNOWN] = "unknown",
    [VBTS_KIND_JCC] = "jcc",
    [VBTS_KIND_JMP] = "jmp",
    [VBTS_KIND_JMP_IND] = "jmp-ind",
    [VBTS_KIND_CALL] = "call",
    [VBTS_KIND_CALL_IND] = "call-ind",
    [VBTS_KIND_RET] = "ret",
    [VBTS_KIND_FAR] = "far",
    [VBTS_KIND_IRET] = "iret",
    [VBTS_KIND_SYSCALL] = "syscall",
    [VBTS_KIND_INT] = "int",
    [VBTS_KIND_EXCEPTION] = "exception",
    [VBTS_KIND_INTERRUPT] = "interrupt",
};
_Static_assert(NELEM(kind_names) == VBTS_KIND_MAX_, "a name for every kind");

static const char *const marker_names[] = {
    [VBTS_MARK_START] = "start",
    [VBTS_MARK_STOP] = "stop",
    [VBTS_MARK_LOST] = "lost",
    [VBTS_MARK_CTX_ARRIVE] = "ctx-arrive",
    [VBTS_MARK_CTX_DEPART] = "ctx-depart",
};
_Static_assert(NELEM(marker_names) == VBTS_MARK_QUAL_MAX_, "a name for every marker");

static const char *const stop_names[] = {
    [VBTS_STOP_GUEST_EXIT] = "guest-exit",
    [VBTS_STOP_GUEST_CRASH] = "guest-crash",
    [VBTS_STOP_LIMIT] = "limit",
    [VBTS_STOP_UNSUPPORTED] = "unsupported",
    [VBTS_STOP_INTERRUPTED] = "interrupted",
    [VBTS_STOP_ERROR] = "error",
    [VBTS_STOP_DESYNC] = "desync",
};
_Static_assert(NELEM(stop_names) == VBTS_STOP_REASON_MAX_, "a name for every stop reason");

/* Qualifier 0 is no marker: its slot is NULL like any undefined value. */
const char *vbts_kind_name(unsigned kind)
{
    return kind < NELEM(kind_names) ? kind_names[kind] : NULL;
}

const char *vbts_marker_name(unsigned qualifier)
{
    return qualifier < NELEM(marker_names) ? marker_names[qualifier] : NULL;
}

const char *vbts_stop_reason_name(unsigned reason)
{
    return reason < NELEM(stop_names) ? stop_names[reason] : NULL;
}

const char *vbts_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case VBTS_ERR_IO: return "read error";
    case VBTS_ERR_NOMEM: return "out of memory";
    case VBTS_ERR_INVAL: return "invalid argument";
    case VBTS_ERR_AGAIN: return "no data available yet";
    case VBTS_ERR_BAD_MAGIC: return "not a vbts trace (bad magic)";
    case VBTS_ERR_VERSION: return "unsupported format version";
    case VBTS_ERR_HEADER_SIZE: return "bad header size";
    case VBTS_ERR_RECORD_SIZE: return "bad record size";
    case VBTS_ERR_TRUNC_HEADER: return "truncated file header";
    case VBTS_ERR_CHUNK_MAGIC: return "bad chunk magic";
    case VBTS_ERR_CPU: return "chunk cpu out of range";
    case VBTS_ERR_RESERVED: return "nonzero reserved field";
    case VBTS_ERR_TRUNC_CHUNK: return "truncated chunk header";
    case VBTS_ERR_TRUNC_RECORD: return "truncated record";
    case VBTS_ERR_SEQ_GAP: return "sequence gap";
    case VBTS_ERR_SEQ_BACK: return "sequence regression";
    case VBTS_ERR_ZSTD: return "corrupt compressed frame";
    }
    return "unknown error";
}
