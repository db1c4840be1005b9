/* SPDX-License-Identifier: MIT */
/*
 * vbts trace stream format, version 1: the bytes of a trace file and of a
 * trace socket are the same.  docs/format.md is the normative description;
 * this header is its C mirror.  All integers are little-endian.
 *
 *   stream  := file_header chunk*
 *   chunk   := chunk_header record[count]
 *   record  := 24-byte Intel BTS record (from, to, flags), or a marker
 *
 * A marker is a record whose `from` is 0 and whose `flags` has bit 63 set.
 * Hardware never sets bit 63 of the third BTS qword, so a real branch from
 * linear address 0 is still told apart from a marker.
 */
#ifndef VBTS_FORMAT_H
#define VBTS_FORMAT_H

#include <stdint.h>

#define VBTS_MAGIC            "VBTS\r\n\x1a\n"
#define VBTS_MAGIC_LEN        8
#define VBTS_VERSION_MAJOR    1
#define VBTS_VERSION_MINOR    0
#define VBTS_RECORD_SIZE      24
#define VBTS_CHUNK_MAGIC      0x4b484356u /* "VCHK" */

struct vbts_file_header {
    char     magic[VBTS_MAGIC_LEN];
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size;   /* sizeof(struct vbts_file_header); skip any excess */
    uint32_t record_size;   /* VBTS_RECORD_SIZE */
    uint32_t flags;         /* VBTS_FILE_F_* */
    uint32_t ncpus;         /* number of vCPUs the monitor ran */
    uint32_t reserved;      /* 0 */
};                          /* 32 bytes */

/* The third qword of branch records carries the branch kind in bits 8..15. */
#define VBTS_FILE_F_KIND      (1u << 0)

struct vbts_chunk_header {
    uint32_t magic;         /* VBTS_CHUNK_MAGIC */
    uint16_t cpu;           /* vCPU index, < ncpus */
    uint16_t flags;         /* 0 */
    uint32_t count;         /* records that follow */
    uint32_t reserved;      /* 0 */
    uint64_t seq;           /* per-vCPU sequence number of the first record */
};                          /* 24 bytes */

struct vbts_record {
    uint64_t from;
    uint64_t to;
    uint64_t flags;
};

/* Bits of the third qword of a branch record. */
#define VBTS_BTS_PREDICTED    (1ull << 4)  /* hardware's only defined bit */
#define VBTS_KIND_SHIFT       8
#define VBTS_KIND_MASK        (0xffull << VBTS_KIND_SHIFT)

enum vbts_kind {
    VBTS_KIND_UNKNOWN = 0,
    VBTS_KIND_JCC,        /* taken conditional jump, loop, jcxz */
    VBTS_KIND_JMP,        /* direct near jump */
    VBTS_KIND_JMP_IND,    /* indirect near jump */
    VBTS_KIND_CALL,       /* direct near call */
    VBTS_KIND_CALL_IND,   /* indirect near call */
    VBTS_KIND_RET,        /* near return */
    VBTS_KIND_FAR,        /* far jmp, far call, far ret */
    VBTS_KIND_IRET,       /* iret, iretd, iretq */
    VBTS_KIND_SYSCALL,    /* syscall, sysret, sysenter, sysexit */
    VBTS_KIND_INT,        /* int n, int3, into, int1 */
    VBTS_KIND_EXCEPTION,  /* fault or trap raised by an instruction */
    VBTS_KIND_INTERRUPT,  /* external interrupt, NMI */
    VBTS_KIND_MAX_
};

/* Markers: from == 0, flags = VBTS_MARK | qualifier << 48 | aux (48 bits). */
#define VBTS_MARK             (1ull << 63)
#define VBTS_MARK_QUAL_SHIFT  48
#define VBTS_MARK_QUAL_MASK   (0x7full << VBTS_MARK_QUAL_SHIFT)
#define VBTS_MARK_AUX_MASK    ((1ull << 48) - 1)

enum vbts_mark_qual {
    VBTS_MARK_START = 1,      /* to = CLOCK_REALTIME ns; aux = 0 */
    VBTS_MARK_STOP,           /* to = CLOCK_REALTIME ns; aux = enum vbts_stop_reason */
    VBTS_MARK_LOST,           /* to = records lost right here; aux = 0 */
    VBTS_MARK_CTX_ARRIVE,     /* to = guest CR3; aux = ns since this vCPU's START */
    VBTS_MARK_CTX_DEPART,     /* to = guest CR3; aux = ns since this vCPU's START */
    VBTS_MARK_QUAL_MAX_
};

enum vbts_stop_reason {
    VBTS_STOP_GUEST_EXIT = 0, /* guest halted, powered off or wrote debug-exit */
    VBTS_STOP_GUEST_CRASH,    /* triple fault, or an instruction KVM could not run */
    VBTS_STOP_LIMIT,          /* a user limit or stop trigger was reached */
    VBTS_STOP_UNSUPPORTED,    /* the host cannot trace what the guest did next */
    VBTS_STOP_INTERRUPTED,    /* the monitor was told to stop (signal) */
    VBTS_STOP_ERROR,          /* the monitor failed; the trace ends early */
    VBTS_STOP_DESYNC,         /* the vCPU was found where the engine's prediction does not reach */
    VBTS_STOP_REASON_MAX_
};

static inline int vbts_record_is_marker(const struct vbts_record *r)
{
    return r->from == 0 && (r->flags & VBTS_MARK);
}

static inline unsigned vbts_marker_qual(const struct vbts_record *r)
{
    return (unsigned)((r->flags & VBTS_MARK_QUAL_MASK) >> VBTS_MARK_QUAL_SHIFT);
}

static inline uint64_t vbts_marker_aux(const struct vbts_record *r)
{
    return r->flags & VBTS_MARK_AUX_MASK;
}

static inline struct vbts_record vbts_marker(unsigned qual, uint64_t to, uint64_t aux)
{
    struct vbts_record r = {
        0, to,
        VBTS_MARK | ((uint64_t)qual << VBTS_MARK_QUAL_SHIFT) | (aux & VBTS_MARK_AUX_MASK)
    };
    return r;
}

static inline unsigned vbts_record_kind(const struct vbts_record *r)
{
    return (unsigned)((r->flags & VBTS_KIND_MASK) >> VBTS_KIND_SHIFT);
}

_Static_assert(sizeof(struct vbts_file_header) == 32, "file header is 32 bytes");
_Static_assert(sizeof(struct vbts_chunk_header) == 24, "chunk header is 24 bytes");
_Static_assert(sizeof(struct vbts_record) == VBTS_RECORD_SIZE, "BTS record is 24 bytes");

#endif
