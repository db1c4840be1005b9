/* SPDX-License-Identifier: MIT */
/*
 * gdb's branch trace of one vCPU (`record btrace bts`): the newest records
 * in a ring of the configured size, served as gdb's btrace XML
 * (gdb/features/btrace.dtd): blocks of straight-line code, newest first,
 * each from a branch's target to the next branch's source.  The vCPU's
 * thread adds records while it runs; the server reads only while it is
 * stopped.
 */
#ifndef VBTS_GDB_BTRACE_H
#define VBTS_GDB_BTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BTRACE_RECORD_SIZE 24           /* a BTS record: what the size counts */
#define BTRACE_DEFAULT_SIZE (64u << 10) /* gdb's own default for bts */
#define BTRACE_MAX_SIZE (64u << 20)

struct btrace_rec {
    uint64_t from, to;
};

struct btrace {
    bool on;
    uint64_t size;          /* bytes, as configured */
    uint64_t cap;           /* records the ring holds */
    struct btrace_rec *ring;
    uint64_t head;          /* records added since enabled */
    uint64_t mark;          /* head at the last read */
    uint64_t begin_pc;      /* where the vCPU was when recording began */
};

enum btrace_read { BTRACE_READ_ALL, BTRACE_READ_NEW, BTRACE_READ_DELTA };

/* Recording from pc on, in a ring of size bytes (at least one record).  -1 out of memory. */
int btrace_enable(struct btrace *b, uint64_t size, uint64_t pc);
void btrace_disable(struct btrace *b);
void btrace_add(struct btrace *b, uint64_t from, uint64_t to);
/*
 * The XML for a read, with the vCPU now at pc (the newest block ends
 * there); malloc'd, its length in *len.  NULL with *err set when a delta
 * read lost records to the ring (gdb then reads anew), or out of memory.
 */
char *btrace_xml(struct btrace *b, enum btrace_read how, uint64_t pc, size_t *len,
                 const char **err);
/* The configuration as gdb's btrace-conf XML; malloc'd. */
char *btrace_conf_xml(const struct btrace *b, size_t *len);

#endif
