/* SPDX-License-Identifier: MIT */
/* q and Q packets: what the stub offers, threads, qXfer in pieces, Qbtrace. */
#include "fake.h"

TestSuite(query, .init = fake_setup, .fini = fake_teardown);

Test(query, supported_offers_branch_trace)
{
    const char *r = ask("qSupported:multiprocess+;swbreak+;hwbreak+");
    cr_assert(strstr(r, "PacketSize=4000;"));
    cr_assert(strstr(r, "qXfer:btrace:read+;qXfer:btrace-conf:read+;Qbtrace:bts+;Qbtrace:off+;"
                        "Qbtrace-conf:bts:size+;"));
    cr_assert(strstr(r, "swbreak+;hwbreak+"));
}

Test(query, threads_are_the_live_vcpus)
{
    cr_assert_str_eq(ask("qfThreadInfo"), "m1,2");
    cr_assert_str_eq(ask("qsThreadInfo"), "l");
    cpu1_dead = true;
    cr_assert_str_eq(ask("qfThreadInfo"), "m1");
    cr_assert_str_eq(ask("qThreadExtraInfo,2"), "764350552031", "hex of \"vCPU 1\"");
    cr_assert_str_eq(ask("qThreadExtraInfo,9"), "E02");
    cr_assert_str_eq(ask("qAttached"), "1");
}

Test(query, the_target_description_in_pieces)
{
    size_t len;
    const char *x = regs_target_xml(REGS_X86_64, &len);
    char want[64];
    snprintf(want, sizeof(want), "m%.10s", x);
    cr_assert_str_eq(ask("qXfer:features:read:target.xml:0,a"), want);
    snprintf(want, sizeof(want), "l%s", x + len - 5);
    char q[64];
    snprintf(q, sizeof(q), "qXfer:features:read:target.xml:%zx,100", len - 5);
    cr_assert_str_eq(ask(q), want);
    snprintf(q, sizeof(q), "qXfer:features:read:target.xml:%zx,100", len + 5);
    cr_assert_str_eq(ask(q), "l");
    cr_assert_str_eq(ask("qXfer:features:read:other.xml:0,100"), "E.no such annex");
    cr_assert_str_eq(ask("qXfer:features:write:target.xml:0,100"), "");
    cr_assert_str_eq(ask("qXfer:libraries:read::0,100"), "");
    cr_assert_str_eq(ask("qXfer:features:read:target.xml"), "E02");
}

Test(query, btrace_reads_of_the_selected_thread)
{
    cr_assert_str_eq(ask("Hg2"), "OK");
    cr_assert_str_eq(ask("qXfer:btrace:read:all:0,1000"), "l<btrace cpu=\"1\" how=\"0\"/>");
    cr_assert_str_eq(ask("qXfer:btrace:read:new:0,1000"), "l<btrace cpu=\"1\" how=\"1\"/>");
    cr_assert_str_eq(ask("qXfer:btrace:read:delta:0,1000"), "E.Overflow.");
    cr_assert_str_eq(ask("qXfer:btrace:read:most:0,1000"), "E.no such annex");
    cr_assert_str_eq(ask("qXfer:btrace-conf:read::0,1000"), "l<btrace-conf/>");
}

Test(query, qbtrace_with_the_configured_size)
{
    cr_assert_str_eq(ask("Qbtrace-conf:bts:size=0x1000"), "OK");
    cr_assert_str_eq(ask("Qbtrace:bts"), "OK");
    cr_assert_eq(bts_size, 0x1000);
    cr_assert_str_eq(ask("Qbtrace:bts"), "E.Btrace already enabled.");
    cr_assert_str_eq(ask("Qbtrace:off"), "OK");
    cr_assert_eq(btrace_off, 1);
    cr_assert_str_eq(ask("Qbtrace:pt"), "E.Intel PT is not offered; vbts records BTS.");
    cr_assert_str_eq(ask("Qbtrace-conf:bts:size=0"), "E.bts size must be 1 to 0x4000000 bytes.");
    cr_assert_str_eq(ask("Qbtrace-conf:bts:size=0x4000001"), "E.bts size must be 1 to 0x4000000 bytes.");
    cr_assert_str_eq(ask("Qbtrace-conf:pt:size=0x1000"), "");
    cr_assert_str_eq(ask("Qbtrace:what"), "");
}
