/* SPDX-License-Identifier: MIT */
/* Trace data from the vCPU rings into a connection's queue. */
#ifndef VBTS_EXPORT_SERVER_FEED_H
#define VBTS_EXPORT_SERVER_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/server/types.h"

void feed_recompute(struct server *x, int cpu);
void feed_recompute_all(struct server *x);
bool feed_fill(struct server *x, struct conn *c);
void feed_start(struct server *x, struct conn *c, enum cdata d, int only);
void feed_start_stream(struct server *x, struct conn *c);

#endif
