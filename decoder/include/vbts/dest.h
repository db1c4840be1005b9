/* SPDX-License-Identifier: MIT */
/*
 * Where a trace goes or comes from: FILE, unix:PATH, or tcp:[HOST:]PORT
 * (HOST may be [v6]; loopback when absent).  One parser for the monitor's
 * listeners and the clients' connections.
 */
#ifndef VBTS_DEST_H
#define VBTS_DEST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vbts_dest_kind { VBTS_DEST_FILE, VBTS_DEST_UNIX, VBTS_DEST_TCP };

#define VBTS_DEST_PATH_MAX 108      /* sun_path */

struct vbts_dest {
    enum vbts_dest_kind kind;
    char path[VBTS_DEST_PATH_MAX];  /* unix: the socket's path */
    char host[256];                 /* tcp: the host, brackets removed; 127.0.0.1 if none */
    char port[6];                   /* tcp: the port, decimal, 0..65535 */
    /* Clients may change the state (CONFIG, CLEAR, DRAIN) and hold the
     * guest: always over unix: (0600), over tcp: only with ",control". */
    bool control;
};

/* The kind of a destination without checking the rest. */
enum vbts_dest_kind vbts_dest_kind(const char *spec);
/* 0, or -1 with a message in err that names spec and what is wrong with it. */
int vbts_dest_parse(const char *spec, struct vbts_dest *d, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
