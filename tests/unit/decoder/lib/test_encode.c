/* SPDX-License-Identifier: MIT */
/* The format's byte layout (format.h, docs/format.md), encoders and names. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>
#include <vbts/decode.h>

Test(encode, struct_layout)
{
    cr_assert_eq(sizeof(struct vbts_file_header), 32);
    cr_assert_eq(offsetof(struct vbts_file_header, version_major), 8);
    cr_assert_eq(offsetof(struct vbts_file_header, version_minor), 10);
    cr_assert_eq(offsetof(struct vbts_file_header, header_size), 12);
    cr_assert_eq(offsetof(struct vbts_file_header, record_size), 16);
    cr_assert_eq(offsetof(struct vbts_file_header, flags), 20);
    cr_assert_eq(offsetof(struct vbts_file_header, ncpus), 24);
    cr_assert_eq(offsetof(struct vbts_file_header, reserved), 28);
    cr_assert_eq(sizeof(struct vbts_chunk_header), 24);
    cr_assert_eq(offsetof(struct vbts_chunk_header, cpu), 4);
    cr_assert_eq(offsetof(struct vbts_chunk_header, flags), 6);
    cr_assert_eq(offsetof(struct vbts_chunk_header, count), 8);
    cr_assert_eq(offsetof(struct vbts_chunk_header, reserved), 12);
    cr_assert_eq(offsetof(struct vbts_chunk_header, seq), 16);
    cr_assert_eq(sizeof(struct vbts_record), 24);
    cr_assert_eq(memcmp(VBTS_MAGIC, "VBTS\r\n\x1a\n", 8), 0);
    cr_assert_eq(memcmp(&(uint32_t){VBTS_CHUNK_MAGIC}, "VCHK", 4), 0); /* x86 is LE */
}

Test(encode, encode_file_header)
{
    static const unsigned char want[32] = {
        'V', 'B', 'T', 'S', '\r', '\n', 0x1a, '\n',
        1, 0, 0, 0,             /* version 1.0 */
        32, 0, 0, 0,            /* header_size */
        24, 0, 0, 0,            /* record_size */
        0x01, 0, 0, 0,          /* flags = VBTS_FILE_F_KIND */
        0x34, 0x12, 0, 0,       /* ncpus */
        0, 0, 0, 0,             /* reserved */
    };
    unsigned char b[40];
    memset(b, 0xee, sizeof(b));
    cr_assert_eq(vbts_encode_file_header(b, VBTS_FILE_F_KIND, 0x1234), 32);
    cr_assert_arr_eq(b, want, 32);
    cr_assert_eq(b[32], 0xee, "wrote past the header");
}

Test(encode, encode_chunk_header)
{
    static const unsigned char want[24] = {
        'V', 'C', 'H', 'K',
        0x02, 0x01,             /* cpu 0x102 */
        0, 0,                   /* flags */
        0x04, 0x03, 0x02, 0x01, /* count */
        0, 0, 0, 0,             /* reserved */
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
    };
    unsigned char b[24];
    cr_assert_eq(vbts_encode_chunk_header(b, 0x102, 0x01020304, 0x1122334455667788ull), 24);
    cr_assert_arr_eq(b, want, 24);
}

Test(encode, encode_record)
{
    struct vbts_record r = {0xffffffff81000000ull, 0x401000, VBTS_BTS_PREDICTED | 3ull << 8};
    unsigned char b[24];
    cr_assert_eq(vbts_encode_record(b, &r), 24);
    static const unsigned char want[24] = {
        0x00, 0x00, 0x00, 0x81, 0xff, 0xff, 0xff, 0xff,
        0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x10, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    cr_assert_arr_eq(b, want, 24);
}

Test(encode, marker_encode_decode)
{
    struct vbts_record m = vbts_marker(VBTS_MARK_CTX_ARRIVE, 0x1000, 123);
    cr_assert_eq(m.from, 0);
    cr_assert_eq(m.to, 0x1000);
    cr_assert_eq(m.flags, 0x800400000000007bull);
    cr_assert(vbts_record_is_marker(&m));
    cr_assert_eq(vbts_marker_qual(&m), VBTS_MARK_CTX_ARRIVE);
    cr_assert_eq(vbts_marker_aux(&m), 123);

    /* aux is 48 bits: higher bits must not leak into the qualifier. */
    m = vbts_marker(VBTS_MARK_STOP, 5, 0xffff000000000003ull);
    cr_assert_eq(m.flags, 0x8002000000000003ull);
    cr_assert_eq(vbts_marker_qual(&m), VBTS_MARK_STOP);
    cr_assert_eq(vbts_marker_aux(&m), VBTS_STOP_UNSUPPORTED);

    m = vbts_marker(VBTS_MARK_START, 0, VBTS_MARK_AUX_MASK);
    cr_assert_eq(m.flags, 0x8001ffffffffffffull);
    cr_assert_eq(vbts_marker_aux(&m), 0xffffffffffffull);

    /* A branch from address 0 is not a marker; bit 63 alone is not either. */
    struct vbts_record b0 = {0, 0x401000, VBTS_KIND_JMP << VBTS_KIND_SHIFT};
    cr_assert_not(vbts_record_is_marker(&b0));
    struct vbts_record b63 = {0x401000, 0, VBTS_MARK};
    cr_assert_not(vbts_record_is_marker(&b63));
}

Test(encode, record_kind_bits)
{
    struct vbts_record r = {1, 2, VBTS_BTS_PREDICTED | (uint64_t)VBTS_KIND_CALL_IND << 8 | 1ull << 16};
    cr_assert_eq(vbts_record_kind(&r), VBTS_KIND_CALL_IND);
    r.flags = 0xffull << 8;
    cr_assert_eq(vbts_record_kind(&r), 255);
}

