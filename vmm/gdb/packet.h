/* SPDX-License-Identifier: MIT */
/* Inside the stub: replies, and the numbers and thread ids packets carry (hostile: checked). */
#ifndef VBTS_GDB_PACKET_H
#define VBTS_GDB_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdb/stub.h"

/* A reply of these bytes, framed and escaped. */
void packet_send(struct stub *s, const void *data, size_t len);
void packet_reply(struct stub *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A hex number at *p, moved past it; false if there is none or it overflows. */
bool packet_hexnum(const char **p, uint64_t *v);
/* "ADDR,LEN" then the character `end` (0: end of packet), moved past. */
bool packet_addr_len(const char **p, uint64_t *addr, uint64_t *len, char end);
/* A thread id: -1 all, 0 any, else that of vCPU tid-1; -2 if malformed. */
int packet_thread(const char *p, const char **end);

#endif
