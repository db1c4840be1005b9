/* SPDX-License-Identifier: MIT */
/* --user, --group, --sandbox: the ids they name, and every refusal. */
#include <criterion/criterion.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/options.h"
#include "cli/user.h"
#include "core/error.h"

static int resolve(const char *user, const char *group, bool sandbox, uid_t euid,
                   struct user_ids *ids, char *err)
{
    return user_resolve(user, group, sandbox, euid, ids, err, 256);
}

Test(user, options_parse)
{
    struct vbts_options o;
    char err[256];
    char *argv[] = { "vbts", "--user", "u", "--group", "g", "--sandbox", "--no-seccomp", "x.bin", NULL };
    cr_assert_eq(options_parse(&o, 8, argv, err, sizeof(err)), OPT_RUN);
    cr_assert_str_eq(o.user, "u");
    cr_assert_str_eq(o.group, "g");
    cr_assert(o.sandbox && o.no_seccomp);
    char *plain[] = { "vbts", "x.bin", NULL };
    cr_assert_eq(options_parse(&o, 2, plain, err, sizeof(err)), OPT_RUN);
    cr_assert(!o.user && !o.group && !o.sandbox && !o.no_seccomp);
}

Test(user, nothing_asked_nothing_dropped)
{
    struct user_ids ids;
    char err[256];
    cr_assert_eq(resolve(NULL, NULL, false, 1000, &ids, err), 0);
    cr_assert(!ids.drop);
}

Test(user, names_and_numbers)
{
    struct user_ids ids;
    char err[256];
    struct passwd *nobody = getpwnam(USER_SANDBOX_DEFAULT);
    cr_assert_not_null(nobody, "no user nobody on this system");
    uid_t uid = nobody->pw_uid;
    gid_t gid = nobody->pw_gid;
    cr_assert_eq(resolve(NULL, NULL, true, 0, &ids, err), 0, "%s", err);
    cr_assert(ids.drop);
    cr_assert_eq(ids.uid, uid);
    cr_assert_eq(ids.gid, gid);
    cr_assert_eq(resolve("nobody", NULL, false, 0, &ids, err), 0, "%s", err);
    cr_assert_eq(ids.uid, uid);
    cr_assert_eq(ids.gid, gid);
    /* Numbers need not be in the database, given both. */
    cr_assert_eq(resolve("54321", "43210", false, 0, &ids, err), 0, "%s", err);
    cr_assert(ids.drop && ids.uid == 54321 && ids.gid == 43210);
    /* --sandbox's user, another group. */
    cr_assert_eq(resolve(NULL, "43210", true, 0, &ids, err), 0, "%s", err);
    cr_assert(ids.uid == uid && ids.gid == 43210);
    struct group *root_group = getgrgid(0);
    if (root_group) {
        cr_assert_eq(resolve("nobody", root_group->gr_name, false, 0, &ids, err), 0, "%s", err);
        cr_assert_eq(ids.gid, 0);
    }
}

Test(user, complaints)
{
    struct user_ids ids;
    char err[256];
    cr_assert_eq(resolve("nobody", NULL, false, 1000, &ids, err), -1);
    cr_assert_str_eq(err, "--user: only root can switch to another user (vbts runs as uid 1000)");
    cr_assert(!ids.drop);
    cr_assert_eq(resolve(NULL, NULL, true, 65534, &ids, err), -1);
    cr_assert_str_eq(err, "--sandbox: only root can switch to another user (vbts runs as uid 65534)");
    cr_assert_eq(resolve(NULL, "nogroup", false, 0, &ids, err), -1);
    cr_assert_str_eq(err, "--group: needs --user or --sandbox (root would keep its privileges)");
    cr_assert_eq(resolve("no-such-user-vbts", NULL, false, 0, &ids, err), -1);
    cr_assert_str_eq(err, "--user: no such user 'no-such-user-vbts'");
    cr_assert_eq(resolve("nobody", "no-such-group-vbts", false, 0, &ids, err), -1);
    cr_assert_str_eq(err, "--group: no such group 'no-such-group-vbts'");
    cr_assert_eq(resolve("root", NULL, false, 0, &ids, err), -1);
    cr_assert_str_eq(err, "--user: 'root' is root, which drops nothing");
    cr_assert_eq(resolve("0", "0", false, 0, &ids, err), -1);
    cr_assert_str_eq(err, "--user: '0' is root, which drops nothing");
    cr_assert_eq(resolve("12x", "1", false, 0, &ids, err), -1);
    cr_assert_str_eq(err, "--user: no such user '12x'");
    if (!getpwuid(54321)) {
        cr_assert_eq(resolve("54321", NULL, false, 0, &ids, err), -1);
        cr_assert_str_eq(err, "--user: uid 54321 is not in the user database: give --group too");
    }
    cr_assert(!ids.drop);
}
