/* SPDX-License-Identifier: MIT */
/* What a connection does: the plain stream, or the control protocol. */
#ifndef VBTS_EXPORT_SERVER_SESSION_H
#define VBTS_EXPORT_SERVER_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/server/types.h"

void session_pump(struct server *x, struct conn *c, double now);

#endif
