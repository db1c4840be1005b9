/* SPDX-License-Identifier: MIT */
/* The sockets clients connect to (see types.h for the whole server). */
#ifndef VBTS_EXPORT_SERVER_LISTEN_H
#define VBTS_EXPORT_SERVER_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/server/types.h"

struct vbts_dest;

int listen_open(struct listener *l, const char *dest);
/*
 * A TCP socket listening on d's host and port (non-blocking, close-on-exec)
 * for the trace server and the gdb stub: its fd, and in name
 * "tcp:HOST:PORT" as bound (the port the kernel chose for 0).  -1 with an
 * error that starts with `what`.
 */
int listen_tcp_socket(const char *what, const struct vbts_dest *d, char *name, size_t namelen);
void listen_close_all(struct server *x);
void listen_accept(struct server *x, struct listener *l, double now);

#endif
