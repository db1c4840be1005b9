/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE  /* setresuid, getresuid */
#include "cli/user.h"

#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "core/error.h"
#include "core/parse.h"

static bool numeric(const char *s, unsigned long *v)
{
    uint64_t n;
    if (parse_u64(s, &n) < 0 || n >= (uint32_t)-1)
        return false;
    *v = (unsigned long)n;
    return true;
}

/* A user or group as a name or a number, from the database if it is there. */
static bool lookup_user(const char *s, unsigned long *id, gid_t *gid, bool *found)
{
    struct passwd *pw = numeric(s, id) ? getpwuid((uid_t)*id) : getpwnam(s);
    *found = pw != NULL;
    if (pw) {
        *id = pw->pw_uid;
        *gid = pw->pw_gid;
    }
    return pw || numeric(s, id);
}

static bool lookup_group(const char *s, unsigned long *id)
{
    struct group *gr = numeric(s, id) ? getgrgid((gid_t)*id) : getgrnam(s);
    if (gr)
        *id = gr->gr_gid;
    return gr || numeric(s, id);
}

int user_resolve(const char *user, const char *group, bool sandbox, uid_t euid,
                 struct user_ids *ids, char *err, size_t errlen)
{
    *ids = (struct user_ids){ 0 };
    const char *uopt = user ? "--user" : "--sandbox";
    if (!user && sandbox)
        user = USER_SANDBOX_DEFAULT;
    if (!user && !group)
        return 0;
    if (!user) {
        snprintf(err, errlen, "--group: needs --user or --sandbox (root would keep its privileges)");
        return -1;
    }
    if (euid != 0) {
        snprintf(err, errlen, "%s: only root can switch to another user (vbts runs as uid %lu)",
                 uopt, (unsigned long)euid);
        return -1;
    }
    unsigned long uid, gid = 0;
    gid_t pw_gid = 0;
    bool in_db;
    if (!lookup_user(user, &uid, &pw_gid, &in_db)) {
        snprintf(err, errlen, "%s: no such user '%s'", uopt, user);
        return -1;
    }
    if (!in_db && !group) {
        snprintf(err, errlen, "%s: uid %s is not in the user database: give --group too", uopt, user);
        return -1;
    }
    if (uid == 0) {
        snprintf(err, errlen, "%s: '%s' is root, which drops nothing", uopt, user);
        return -1;
    }
    if (group && !lookup_group(group, &gid)) {
        snprintf(err, errlen, "--group: no such group '%s'", group);
        return -1;
    }
    *ids = (struct user_ids){ .drop = true, .uid = (uid_t)uid,
                              .gid = group ? (gid_t)gid : pw_gid };
    return 0;
}

int user_drop(const struct user_ids *ids)
{
    /* glibc applies each change to every thread (the socket server's and
     * the console's run already): credentials are per thread in Linux. */
    if (setgroups(0, NULL) < 0)
        return error_fail_errno("dropping privileges: setgroups");
    if (setresgid(ids->gid, ids->gid, ids->gid) < 0)
        return error_fail_errno("dropping privileges: setresgid(%lu)", (unsigned long)ids->gid);
    if (setresuid(ids->uid, ids->uid, ids->uid) < 0)
        return error_fail_errno("dropping privileges: setresuid(%lu)", (unsigned long)ids->uid);
    uid_t r, e, s;
    gid_t gr, ge, gs;
    if (getresuid(&r, &e, &s) < 0 || getresgid(&gr, &ge, &gs) < 0 || r != ids->uid ||
        e != ids->uid || s != ids->uid || gr != ids->gid || ge != ids->gid || gs != ids->gid ||
        getgroups(0, NULL) != 0)
        return error_fail("dropping privileges: the ids did not change as asked");
    /* A capability kept (SECBIT_KEEP_CAPS, a file capability) would let root come back. */
    if (setresuid(0, 0, 0) == 0 || setresgid(0, 0, 0) == 0)
        return error_fail("dropping privileges: root could be regained");
    return 0;
}
