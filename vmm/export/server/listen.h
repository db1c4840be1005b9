/* SPDX-License-Identifier: MIT */
/* The sockets clients connect to (see types.h for the whole server). */
#ifndef VBTS_EXPORT_SERVER_LISTEN_H
#define VBTS_EXPORT_SERVER_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/server/types.h"

int listen_open(struct listener *l, const char *dest);
void listen_close_all(struct server *x);
void listen_accept(struct server *x, struct listener *l, double now);

#endif
