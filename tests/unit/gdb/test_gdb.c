/* SPDX-License-Identifier: MIT */
/* The stub on a real VM: -S, a breakpoint, a recorded step, gdb's btrace XML, the exit. */
#include "session.h"

Test(gdb, a_session_from_the_first_instruction_to_the_exit)
{
    session_start(true);
    cr_assert_str_eq(session_ask("?"), "T05thread:1;", "-S: stopped before the first instruction");
    cr_assert_str_eq(session_ask("p8"), "20001000", "eip (i386: multiboot runs 32-bit)");
    cr_assert_str_eq(session_ask("Z1,10002c,1"), "OK");
    cr_assert_str_eq(session_ask("vCont;c"), "T05thread:1;hwbreak:;");
    cr_assert_str_eq(session_ask("p8"), "2c001000", "at the ret, not run yet");
    cr_assert_str_eq(session_ask("z1,10002c,1"), "OK");
    cr_assert_str_eq(session_ask("Qbtrace:bts"), "OK");
    cr_assert_str_eq(session_ask("vCont;s:1"), "T05thread:1;");
    cr_assert_str_eq(session_ask("p8"), "27001000");
    cr_assert_str_eq(session_ask("qXfer:btrace:read:all:0,fff"),
                     "l<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n"
                     "<block begin=\"0x100027\" end=\"0x100027\"/>\n"
                     "<block begin=\"0x10002c\" end=\"0x10002c\"/>\n</btrace>\n",
                     "the ret's record, from where recording began");
    cr_assert_str_eq(session_ask("qXfer:btrace-conf:read::0,fff"),
                     "l<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
                     "<bts size=\"0x10000\"/>\n</btrace-conf>\n");
    cr_assert_str_eq(session_ask("m100029,2"), "e6f4", "memory through the guest's view");
    cr_assert_str_eq(session_ask("qXfer:features:read:target.xml:0,40"),
                     "m<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n");
    send(sock, "$vCont;c#a8", 11, 0);
    session_end();
    cr_assert_eq(status, 1, "debug-exit 0");
}

Test(gdb, addresses_it_cannot_listen_on)
{
    struct vm v;
    vm_init(&v);
    v.ncpus = 1;
    struct gdb_config gc = { .addr = "nonsense" };
    cr_assert_null(gdb_install(&v, &gc));
    cr_assert_str_eq(error_last(), "--gdb nonsense: expected [HOST:]PORT");
    gc.addr = "127.0.0.1:99999";
    cr_assert_null(gdb_install(&v, &gc));
    cr_assert_str_eq(error_last(), "--gdb 127.0.0.1:99999: expected [HOST:]PORT");
    vm_fini(&v);
}
