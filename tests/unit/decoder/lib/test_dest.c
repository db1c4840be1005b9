/* SPDX-License-Identifier: MIT */
/* Trace destinations: FILE, unix:PATH, tcp:[HOST:]PORT. */
#include <criterion/criterion.h>
#include <string.h>
#include <vbts/dest.h>

Test(dest, kinds_and_parts)
{
    struct vbts_dest d;
    char err[256];
    cr_assert_eq(vbts_dest_parse("t.vbts", &d, err, sizeof(err)), 0);
    cr_assert_eq(d.kind, VBTS_DEST_FILE);
    cr_assert_eq(vbts_dest_parse("unix:/tmp/s", &d, err, sizeof(err)), 0);
    cr_assert_eq(d.kind, VBTS_DEST_UNIX);
    cr_assert_str_eq(d.path, "/tmp/s");
    cr_assert_eq(vbts_dest_parse("tcp:5000", &d, err, sizeof(err)), 0);
    cr_assert_str_eq(d.host, "127.0.0.1", "loopback unless HOST");
    cr_assert_str_eq(d.port, "5000");
    cr_assert_eq(vbts_dest_parse("tcp:[::1]:7", &d, err, sizeof(err)), 0);
    cr_assert_str_eq(d.host, "::1");
    cr_assert_eq(vbts_dest_parse("tcp::9", &d, err, sizeof(err)), 0);
    cr_assert_str_eq(d.host, "127.0.0.1");
    cr_assert_eq(vbts_dest_parse("tcp:0.0.0.0:0", &d, err, sizeof(err)), 0);
    cr_assert_str_eq(d.host, "0.0.0.0");
}

/* Who may change the state: unix: always, tcp: only with ",control". */
Test(dest, control)
{
    struct vbts_dest d;
    char err[256];
    cr_assert_eq(vbts_dest_parse("unix:/tmp/s", &d, err, sizeof(err)), 0);
    cr_assert(d.control);
    cr_assert_eq(vbts_dest_parse("tcp:5000", &d, err, sizeof(err)), 0);
    cr_assert_not(d.control);
    cr_assert_eq(vbts_dest_parse("tcp:[::1]:7,control", &d, err, sizeof(err)), 0);
    cr_assert(d.control);
    cr_assert_str_eq(d.host, "::1");
    cr_assert_str_eq(d.port, "7");
    cr_assert_eq(vbts_dest_parse("tcp:5000,controls", &d, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "tcp:5000,controls: unknown option 'controls' (tcp:[HOST:]PORT[,control])");
    cr_assert_eq(vbts_dest_parse("tcp:,control", &d, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "tcp:,control: bad port '' (use tcp:HOST:PORT, e.g. tcp:127.0.0.1:5000)");
}

Test(dest, errors)
{
    struct vbts_dest d;
    char err[256];
    cr_assert_eq(vbts_dest_parse("tcp:h:-1", &d, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "tcp:h:-1: bad port '-1' (use tcp:HOST:PORT, e.g. tcp:127.0.0.1:5000)");
    cr_assert_eq(vbts_dest_parse("tcp:", &d, err, sizeof(err)), -1);
    cr_assert_eq(vbts_dest_parse("unix:", &d, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "unix:: empty socket path");
    char long_path[200] = "unix:";
    memset(long_path + 5, 'a', 150);
    cr_assert_eq(vbts_dest_parse(long_path, &d, err, sizeof(err)), -1);
    cr_assert(strstr(err, "socket path longer than 107 bytes"), "%s", err);
    char long_host[400] = "tcp:";
    memset(long_host + 4, 'h', 300);
    strcat(long_host, ":1");
    cr_assert_eq(vbts_dest_parse(long_host, &d, err, sizeof(err)), -1);
    cr_assert(strstr(err, "host name too long"), "%s", err);
    cr_assert_eq(vbts_dest_parse("", &d, err, sizeof(err)), -1);
}
