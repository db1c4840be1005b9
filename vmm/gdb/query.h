/* SPDX-License-Identifier: MIT */
/*
 * Inside the stub: q and Q packets, the ones that ask and set rather than
 * act: what the stub offers, threads, qXfer objects read in pieces (the
 * target description, gdb's btrace and btrace-conf XML), and Qbtrace.
 */
#ifndef VBTS_GDB_QUERY_H
#define VBTS_GDB_QUERY_H

#include "gdb/stub.h"

void query_get(struct stub *s, char *p);
void query_set(struct stub *s, char *p);

#endif
