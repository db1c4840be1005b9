/* SPDX-License-Identifier: MIT */
/* What the VM target refuses, and Ctrl-C on a guest gdb let run. */
#include "session.h"

Test(target, watchpoints_it_refuses)
{
    session_start(true);
    cr_assert_str_eq(session_ask("?"), "T05thread:1;");
    cr_assert_str_eq(session_ask("Z2,100001,4"), "E.a watchpoint's address must be aligned to its length");
    cr_assert_str_eq(session_ask("Z2,100000,3"), "E.a watchpoint covers 1, 2, 4 or 8 bytes");
    cr_assert_str_eq(session_ask("Z3,100000,4"), "", "x86 has no read-only data breakpoint");
    cr_assert_str_eq(session_ask("Z1,800000000000,1"), "E.not a canonical address");
    cr_assert_str_eq(session_ask("Qbtrace:off"), "E.Branch tracing not enabled.");
    cr_assert_str_eq(session_ask("m0,1"), "00", "low RAM reads as the guest sees it");
    cr_assert_str_eq(session_ask("mfffff000,1"), "E0e", "no RAM there");
    cr_assert_str_eq(session_ask("Z1,100020,1"), "OK");
    cr_assert_str_eq(session_ask("Z1,100022,1"), "OK");
    cr_assert_str_eq(session_ask("Z1,100027,1"), "OK");
    cr_assert_str_eq(session_ask("Z1,100029,1"), "OK");
    cr_assert_str_eq(session_ask("Z1,10002b,1"), "E.no debug register left (x86 has 4; vbts may hold some itself)");
    send(sock, "$D#44", 5, 0);
    cr_assert_str_eq(session_reply(), "OK");
    session_end();
    cr_assert_eq(status, 1, "detached: the guest ran to its end");
}
