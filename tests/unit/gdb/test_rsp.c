/* SPDX-License-Identifier: MIT */
/* The remote protocol's framing: packets, checksums, escapes, the interrupt byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gdb/rsp.h"

static struct rsp r;

static enum rsp_event feed(const char *s, size_t n)
{
    enum rsp_event last = RSP_NONE;
    for (size_t i = 0; i < n; i++) {
        enum rsp_event e = rsp_feed(&r, (uint8_t)s[i]);
        if (e != RSP_NONE)
            last = e;
    }
    return last;
}

static void setup(void)
{
    rsp_init(&r);
}

TestSuite(rsp, .init = setup);

Test(rsp, a_packet_with_its_checksum)
{
    cr_assert_eq(feed("+$qSupported#37", 15), RSP_PACKET);
    cr_assert_str_eq(r.buf, "qSupported");
    cr_assert_eq(r.len, 10);
    cr_assert_not(r.too_long);
}

Test(rsp, a_bad_checksum_and_a_bad_digit)
{
    cr_assert_eq(feed("$g#68", 5), RSP_BAD);
    cr_assert_eq(feed("$g#67", 5), RSP_PACKET);
    cr_assert_eq(feed("$g#x7", 5), RSP_BAD);
    cr_assert_eq(feed("$g#6z", 5), RSP_BAD);
}

Test(rsp, the_interrupt_byte_counts_only_between_packets)
{
    cr_assert_eq(rsp_feed(&r, 0x03), RSP_INTERRUPT);
    char pkt[] = "$a\x03#64";
    cr_assert_eq(feed(pkt, 6), RSP_PACKET);
    cr_assert_eq(r.len, 2);
    cr_assert_eq(r.buf[1], 0x03);
}

Test(rsp, a_dollar_inside_starts_over)
{
    cr_assert_eq(feed("$abc$g#67", 9), RSP_PACKET);
    cr_assert_str_eq(r.buf, "g");
}

Test(rsp, a_packet_longer_than_the_buffer_is_cut_and_flagged)
{
    static char big[RSP_MAX_PACKET + 100];
    unsigned sum = 0;
    big[0] = '$';
    for (size_t i = 1; i <= RSP_MAX_PACKET + 50; i++) {
        big[i] = 'a';
        sum += 'a';
    }
    size_t n = RSP_MAX_PACKET + 51;
    n += (size_t)snprintf(big + n, sizeof(big) - n, "#%02x", sum & 0xff);
    cr_assert_eq(feed(big, n), RSP_PACKET);
    cr_assert(r.too_long);
    cr_assert_eq(r.len, RSP_MAX_PACKET);
}

Test(rsp, frames_escape_what_the_protocol_reserves)
{
    char out[32];
    size_t n = rsp_frame("a#$}*", 5, out, sizeof(out));
    unsigned sum = 'a';
    const char want_body[] = "a}\x03}\x04}]}\x0a";
    for (size_t i = 1; i < sizeof(want_body) - 1; i++)
        sum += (uint8_t)want_body[i];
    char want[32];
    int m = snprintf(want, sizeof(want), "$%s#%02x", want_body, sum & 0xff);
    cr_assert_eq(n, (size_t)m);
    cr_assert_eq(memcmp(out, want, n), 0);
    cr_assert_eq(rsp_frame("abcdef", 6, out, 8), 0, "too small: nothing");
}

Test(rsp, unescape_and_hex)
{
    char d[] = "x}\x03y}";
    cr_assert_eq(rsp_unescape(d, 5), 3, "a } at the end is dropped");
    cr_assert_eq(memcmp(d, "x#y", 3), 0);
    uint8_t b[4];
    cr_assert_eq(rsp_unhex("0aFfzz", 6, b, 4), 2);
    cr_assert_eq(b[0], 0x0a);
    cr_assert_eq(b[1], 0xff);
    cr_assert_eq(rsp_unhex("0a0b0c", 5, b, 4), 2, "an odd digit is no byte");
    char h[9];
    cr_assert_eq(rsp_hex("\x01\xab", 2, h), 4);
    cr_assert_str_eq(h, "01ab");
}
