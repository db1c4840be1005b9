/* SPDX-License-Identifier: MIT */
/*
 * Who the monitor runs as (docs/security.md): --user/--group/--sandbox
 * resolved before anything is opened, and root given up for good once the
 * VM, the trace files and the sockets exist.
 */
#ifndef VBTS_CLI_USER_H
#define VBTS_CLI_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The user --sandbox switches to (with that user's own group). */
#define USER_SANDBOX_DEFAULT "nobody"

struct user_ids {
    bool drop;                  /* switch to uid and gid */
    uid_t uid;
    gid_t gid;
};

/*
 * The ids --user USER and --group GROUP (names or numbers) name, with
 * --sandbox standing for --user nobody; for a monitor that runs as euid,
 * which must be root to switch.  0, or -1 with one line in err.
 */
int user_resolve(const char *user, const char *group, bool sandbox, uid_t euid,
                 struct user_ids *ids, char *err, size_t errlen);
/* Switch to ids for good (no supplementary groups); -1 (error set) if root could come back. */
int user_drop(const struct user_ids *ids);

#endif
