/* SPDX-License-Identifier: MIT */
/* The numbers and thread ids in packets, from hostile bytes. */
#include "fake.h"
#include "gdb/packet.h"

TestSuite(packet, .init = fake_setup, .fini = fake_teardown);

Test(packet, hex_numbers_stop_at_the_first_other_character)
{
    const char *p = "1fA,";
    uint64_t v;
    cr_assert(packet_hexnum(&p, &v));
    cr_assert_eq(v, 0x1fa);
    cr_assert_eq(*p, ',');
    p = ",";
    cr_assert_not(packet_hexnum(&p, &v));
    p = "ffffffffffffffff";
    cr_assert(packet_hexnum(&p, &v));
    cr_assert_eq(v, ~0ull);
    p = "10000000000000000";
    cr_assert_not(packet_hexnum(&p, &v), "over 64 bits");
}

Test(packet, address_and_length)
{
    const char *p = "1000,20:ab";
    uint64_t a, l;
    cr_assert(packet_addr_len(&p, &a, &l, ':'));
    cr_assert_eq(a, 0x1000);
    cr_assert_eq(l, 0x20);
    cr_assert_str_eq(p, "ab");
    p = "1000,20x";
    cr_assert_not(packet_addr_len(&p, &a, &l, 0));
    p = "1000";
    cr_assert_not(packet_addr_len(&p, &a, &l, 0));
}

Test(packet, thread_ids)
{
    const char *end;
    cr_assert_eq(packet_thread("-1", &end), -1);
    cr_assert_eq(packet_thread("0", &end), 0);
    cr_assert_eq(packet_thread("1f;", &end), 0x1f);
    cr_assert_str_eq(end, ";");
    cr_assert_eq(packet_thread("p1.1", &end), -2);
    cr_assert_eq(packet_thread("100000", &end), -2, "beyond any vCPU");
}

Test(packet, replies_are_framed)
{
    packet_reply(&st, "a%sb", "#");
    cr_assert_str_eq(out, "$a}\x03" "b#43");
}
