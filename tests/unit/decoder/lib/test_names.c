/* SPDX-License-Identifier: MIT */
/* The format's byte layout (format.h, docs/format.md), encoders and names. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>
#include <vbts/decode.h>

Test(names, kind_names)
{
    static const char *const want[] = {
        "unknown", "jcc", "jmp", "jmp-ind", "call", "call-ind", "ret",
        "far", "iret", "syscall", "int", "exception", "interrupt",
    };
    cr_assert_eq(sizeof(want) / sizeof(want[0]), VBTS_KIND_MAX_);
    for (unsigned k = 0; k < VBTS_KIND_MAX_; k++)
        cr_assert_str_eq(vbts_kind_name(k), want[k], "kind %u", k);
    cr_assert_null(vbts_kind_name(VBTS_KIND_MAX_));
    cr_assert_null(vbts_kind_name(255));
    cr_assert_null(vbts_kind_name(~0u));
}

Test(names, marker_names)
{
    cr_assert_null(vbts_marker_name(0));
    cr_assert_str_eq(vbts_marker_name(VBTS_MARK_START), "start");
    cr_assert_str_eq(vbts_marker_name(VBTS_MARK_STOP), "stop");
    cr_assert_str_eq(vbts_marker_name(VBTS_MARK_LOST), "lost");
    cr_assert_str_eq(vbts_marker_name(VBTS_MARK_CTX_ARRIVE), "ctx-arrive");
    cr_assert_str_eq(vbts_marker_name(VBTS_MARK_CTX_DEPART), "ctx-depart");
    cr_assert_eq(VBTS_MARK_QUAL_MAX_, 6);
    cr_assert_null(vbts_marker_name(6));
    cr_assert_null(vbts_marker_name(127));
}

Test(names, stop_reason_names)
{
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_GUEST_EXIT), "guest-exit");
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_GUEST_CRASH), "guest-crash");
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_LIMIT), "limit");
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_UNSUPPORTED), "unsupported");
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_INTERRUPTED), "interrupted");
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_ERROR), "error");
    cr_assert_str_eq(vbts_stop_reason_name(VBTS_STOP_DESYNC), "desync");
    cr_assert_eq(VBTS_STOP_REASON_MAX_, 7);
    cr_assert_null(vbts_stop_reason_name(7));
}

Test(names, strerror_messages)
{
    static const struct { int err; const char *msg; } want[] = {
        {0, "success"},
        {VBTS_ERR_IO, "read error"},
        {VBTS_ERR_NOMEM, "out of memory"},
        {VBTS_ERR_INVAL, "invalid argument"},
        {VBTS_ERR_AGAIN, "no data available yet"},
        {VBTS_ERR_BAD_MAGIC, "not a vbts trace (bad magic)"},
        {VBTS_ERR_VERSION, "unsupported format version"},
        {VBTS_ERR_HEADER_SIZE, "bad header size"},
        {VBTS_ERR_RECORD_SIZE, "bad record size"},
        {VBTS_ERR_TRUNC_HEADER, "truncated file header"},
        {VBTS_ERR_CHUNK_MAGIC, "bad chunk magic"},
        {VBTS_ERR_CPU, "chunk cpu out of range"},
        {VBTS_ERR_RESERVED, "nonzero reserved field"},
        {VBTS_ERR_TRUNC_CHUNK, "truncated chunk header"},
        {VBTS_ERR_TRUNC_RECORD, "truncated record"},
        {VBTS_ERR_SEQ_GAP, "sequence gap"},
        {VBTS_ERR_SEQ_BACK, "sequence regression"},
        {VBTS_ERR_ZSTD, "corrupt compressed frame"},
        {-18, "unknown error"},
        {1, "unknown error"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_assert_str_eq(vbts_strerror(want[i].err), want[i].msg, "error %d", want[i].err);
}
