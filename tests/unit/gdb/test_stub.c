/* SPDX-License-Identifier: MIT */
/* The stub's commands on a fake target: exact replies, and what it asks the target. */
#include "fake.h"

TestSuite(stub, .init = fake_setup, .fini = fake_teardown);

Test(stub, acks_and_the_stop_it_started_with)
{
    cr_assert_str_eq(ask("?"), "T05thread:1;");
    cr_assert_eq(out[0], '+');
    cr_assert_str_eq(ask("QStartNoAckMode"), "OK");
    cr_assert_eq(out[0], '+', "the packet that turns acks off is still acked");
    cr_assert_str_eq(ask("?"), "T05thread:1;");
    cr_assert_eq(out[0], '$', "then no more");
}

Test(stub, a_bad_checksum_is_refused)
{
    stub_input(&st, (const uint8_t *)"$g#00", 5);
    cr_assert_str_eq(out, "-");
}

Test(stub, registers_whole_and_one_by_one)
{
    fregs.regs.rip = 0x1234;
    const char *g = ask("g");
    size_t bytes = 0;
    for (int i = 0; i < regs_count(REGS_X86_64); i++)
        bytes += regs_size(REGS_X86_64, i);
    cr_assert_eq(strlen(g), 2 * bytes);
    cr_assert_str_eq(ask("p10"), "3412000000000000");
    cr_assert_str_eq(ask("P0=efbeadde00000000"), "OK");
    cr_assert_eq(fregs.regs.rax, 0xdeadbeef);
    cr_assert_str_eq(ask("P12=08000000"), "E.register 18 cannot be written by the debugger");
    cr_assert_str_eq(ask("P0=ef"), "E02", "too short");
    cr_assert_str_eq(ask("p99"), "E02");
    cr_assert_str_eq(ask("pzz"), "E02");
}

Test(stub, G_writes_every_register_gdb_sends)
{
    fregs.regs.rbx = 7;
    static char g[RSP_MAX_PACKET + 2];
    snprintf(g, sizeof(g), "G%s", ask("g"));
    g[1] = '5';     /* rax's low nibble */
    cr_assert_str_eq(ask(g), "OK");
    cr_assert_eq(fregs.regs.rax, 0x50);
    cr_assert_eq(fregs.regs.rbx, 7);
    g[strlen(g) - 2] = 0;
    cr_assert_str_eq(ask(g), "E02", "short by a byte");
}

Test(stub, memory_read_and_written_within_what_the_target_has)
{
    mem[0] = 0xab;
    mem[4095] = 0xcd;
    cr_assert_str_eq(ask("m1000,2"), "ab00");
    cr_assert_str_eq(ask("m1ffe,4"), "00cd", "up to where memory ends");
    cr_assert_str_eq(ask("m3000,4"), "E0e");
    cr_assert_str_eq(ask("m1000"), "E02");
    cr_assert_str_eq(ask("m10000000000000000,1"), "E02", "an address past 64 bits");
    cr_assert_str_eq(ask("M1001,2:beef"), "OK");
    cr_assert_eq(mem[1], 0xbe);
    cr_assert_eq(mem[2], 0xef);
    cr_assert_str_eq(ask("M1001,2:be"), "E02", "fewer bytes than said");
    cr_assert_str_eq(ask("M1ffff,1:00"), "E0e");
    cr_assert_str_eq(ask("X1003,2:}\x03}\x04"), "OK", "binary, escaped");
    cr_assert_eq(mem[3], '#');
    cr_assert_eq(mem[4], '$');
    size_t big = strlen(ask("m1000,ffff"));
    cr_assert_eq(big, 2 * 4096, "what there is, at most one reply");
}

Test(stub, breakpoints_and_watchpoints_go_to_the_target)
{
    cr_assert_str_eq(ask("Z1,100063,1"), "OK");
    cr_assert_eq(last_type, STUB_HW_BREAK);
    cr_assert_eq(last_addr, 0x100063);
    cr_assert_str_eq(ask("Z2,1ff0,4"), "OK");
    cr_assert_eq(last_kind, 4);
    cr_assert_str_eq(ask("Z3,1ff0,4"), "", "read watchpoints: not offered");
    cr_assert_str_eq(ask("Z0,bad,1"), "E.no debug register left");
    cr_assert_str_eq(ask("z0,100063,1"), "OK");
    cr_assert_str_eq(ask("Z5,1,1"), "");
    cr_assert_str_eq(ask("Z0,1"), "E02");
}

Test(stub, vcont_steps_one_thread_and_continues_the_rest)
{
    cr_assert_str_eq(ask("vCont?"), "vCont;c;C;s;S;t");
    cr_assert_null(ask("vCont;s:1;c"), "no reply until the target stops");
    cr_assert_eq(resumed, 1);
    cr_assert_eq(acts[0], STUB_STEP);
    cr_assert_eq(acts[1], STUB_CONTINUE);
    cr_assert_str_eq(ask("g"), "E.the target is running; interrupt it first (Ctrl-C)");
    stub_input(&st, (const uint8_t *)"\x03", 1);
    cr_assert_eq(interrupts, 1);
    nout = 0;
    struct stub_stop s = { .cpu = 1, .signal = 2 };
    stub_stopped(&st, &s);
    cr_assert_str_eq(out, "$T02thread:2;#d5");
    cr_assert_str_eq(ask("qC"), "QC2", "the stopped thread is the current one");
}

Test(stub, stop_reasons)
{
    ask("vCont;c");
    nout = 0;
    struct stub_stop s = { .cpu = 0, .signal = 5, .why = STUB_WHY_WATCH, .addr = 0x1ff0 };
    stub_stopped(&st, &s);
    cr_assert(strstr(out, "$T05thread:1;watch:1ff0;#"));
    ask("c");
    nout = 0;
    s.why = STUB_WHY_SWBREAK;
    stub_stopped(&st, &s);
    cr_assert(strstr(out, "T05thread:1;swbreak:;"));
    nout = 0;
    stub_stopped(&st, &s);
    cr_assert_eq(nout, 0, "stopped already: nothing more");
}

Test(stub, a_resume_the_target_refuses_stays_stopped)
{
    fregs.sregs.cs.selector = 0x33;
    cr_assert_str_eq(ask("vCont;s:1"), "E.cannot single-step CPL3 code on this host");
    cr_assert_str_eq(ask("?"), "T05thread:1;");
}

Test(stub, malformed_vcont_and_threads)
{
    cr_assert_str_eq(ask("vCont;x"), "E02");
    cr_assert_str_eq(ask("vCont;c:9"), "E02", "no thread 9");
    cr_assert_str_eq(ask("vCont;t"), "E02", "nothing would run");
    cr_assert_str_eq(ask("Hg2"), "OK");
    cr_assert_str_eq(ask("Hg3"), "E02");
    cr_assert_str_eq(ask("Hg-1"), "E02");
    cr_assert_str_eq(ask("Hc-1"), "OK");
    cr_assert_str_eq(ask("Hx1"), "E02");
    cr_assert_str_eq(ask("T1"), "OK");
    cr_assert_str_eq(ask("T7"), "E01");
    cpu1_dead = true;
    cr_assert_str_eq(ask("T2"), "E01");
}

Test(stub, c_with_an_address_moves_the_pc_first)
{
    cr_assert_null(ask("c1000"));
    cr_assert_eq(fregs.regs.rip, 0x1000);
    cr_assert_eq(acts[0], STUB_CONTINUE);
    cr_assert_eq(acts[1], STUB_CONTINUE);
}

Test(stub, kill_detach_and_exit)
{
    cr_assert_str_eq(ask("D"), "OK");
    cr_assert_eq(detaches, 1);
    cr_assert_null(ask("k"));
    cr_assert_eq(kills, 1);
    cr_assert_str_eq(ask("g"), "X09", "the target is gone");
    fake_setup();
    nout = 0;
    stub_exited(&st, 1);
    cr_assert_str_eq(out, "$W01#b8");
}

Test(stub, unknown_packets_get_the_empty_reply)
{
    cr_assert_str_eq(ask("vMustReplyEmpty"), "");
    cr_assert_str_eq(ask("!"), "");
    cr_assert_str_eq(ask("qTStatus"), "");
}

Test(stub, a_packet_longer_than_packetsize_is_refused)
{
    static char big[RSP_MAX_PACKET + 64];
    memset(big, 'M', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    cr_assert_str_eq(ask(big), "E.packet longer than PacketSize");
}

Test(stub, a_console_line_while_the_target_runs)
{
    nout = 0;
    stub_console(&st, "hi");
    cr_assert_eq(nout, 0, "stopped: no O packet");
    ask("c");
    nout = 0;
    stub_console(&st, "hi");
    cr_assert(strstr(out, "$O68690a#"), "%s", out);
    struct stub_stop s = { .cpu = 0, .signal = 5 };
    stub_stopped(&st, &s);
    cr_assert(strstr(out, "T05thread:1;"), "the stop reply after it");
}
