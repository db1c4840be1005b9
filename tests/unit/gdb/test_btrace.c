/* SPDX-License-Identifier: MIT */
/* gdb's btrace XML from the ring: blocks newest first, reads all/new/delta, the conf. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdb/btrace.h"

static struct btrace b;

static void teardown(void)
{
    btrace_disable(&b);
}

TestSuite(btrace, .fini = teardown);

#define HEAD "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n"
#define TAIL "</btrace>\n"

static void want(enum btrace_read how, uint64_t pc, const char *blocks)
{
    size_t len;
    const char *err = NULL;
    char *x = btrace_xml(&b, how, pc, &len, &err);
    cr_assert_not_null(x, "%s", err ? err : "");
    char w[1024];
    snprintf(w, sizeof(w), HEAD "%s" TAIL, blocks);
    cr_assert_eq(len, strlen(w));
    cr_assert_eq(memcmp(x, w, len), 0, "got\n%.*s", (int)len, x);
    free(x);
}

Test(btrace, all_blocks_newest_first_from_where_recording_began)
{
    cr_assert_eq(btrace_enable(&b, 1024, 0x10), 0);
    btrace_add(&b, 0x20, 0x30);
    btrace_add(&b, 0x40, 0x50);
    want(BTRACE_READ_ALL, 0x60,
         "<block begin=\"0x50\" end=\"0x60\"/>\n<block begin=\"0x30\" end=\"0x40\"/>\n"
         "<block begin=\"0x10\" end=\"0x20\"/>\n");
}

Test(btrace, new_is_empty_until_something_happens)
{
    cr_assert_eq(btrace_enable(&b, 1024, 0x10), 0);
    btrace_add(&b, 0x20, 0x30);
    want(BTRACE_READ_ALL, 0x40, "<block begin=\"0x30\" end=\"0x40\"/>\n<block begin=\"0x10\" end=\"0x20\"/>\n");
    want(BTRACE_READ_NEW, 0x40, "");
    btrace_add(&b, 0x40, 0x70);
    want(BTRACE_READ_NEW, 0x78,
         "<block begin=\"0x70\" end=\"0x78\"/>\n<block begin=\"0x30\" end=\"0x40\"/>\n"
         "<block begin=\"0x10\" end=\"0x20\"/>\n");
}

Test(btrace, delta_since_the_last_read_with_its_start_left_to_gdb)
{
    cr_assert_eq(btrace_enable(&b, 1024, 0x10), 0);
    btrace_add(&b, 0x20, 0x30);
    want(BTRACE_READ_ALL, 0x40, "<block begin=\"0x30\" end=\"0x40\"/>\n<block begin=\"0x10\" end=\"0x20\"/>\n");
    btrace_add(&b, 0x44, 0x80);
    want(BTRACE_READ_DELTA, 0x90, "<block begin=\"0x80\" end=\"0x90\"/>\n<block begin=\"0x0\" end=\"0x44\"/>\n");
    want(BTRACE_READ_DELTA, 0x90, "<block begin=\"0x0\" end=\"0x90\"/>\n");
}

Test(btrace, a_delta_that_lost_records_is_an_overflow)
{
    cr_assert_eq(btrace_enable(&b, 48, 0x10), 0, "two records");
    btrace_add(&b, 0x20, 0x30);
    btrace_add(&b, 0x40, 0x50);
    btrace_add(&b, 0x60, 0x70);
    size_t len;
    const char *err = NULL;
    cr_assert_null(btrace_xml(&b, BTRACE_READ_DELTA, 0x80, &len, &err));
    cr_assert_str_eq(err, "Overflow.");
    /* All: what the ring holds, without a first block (its start is lost). */
    want(BTRACE_READ_ALL, 0x80, "<block begin=\"0x70\" end=\"0x80\"/>\n<block begin=\"0x50\" end=\"0x60\"/>\n");
}

Test(btrace, the_configuration)
{
    size_t len;
    char *x = btrace_conf_xml(&b, &len);
    cr_assert_str_eq(x, "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n"
                        "</btrace-conf>\n");
    free(x);
    cr_assert_eq(btrace_enable(&b, 0x10000, 0), 0);
    x = btrace_conf_xml(&b, &len);
    cr_assert(strstr(x, "<bts size=\"0x10000\"/>\n"));
    cr_assert_eq(len, strlen(x));
    free(x);
    btrace_add(&b, 1, 2);
    btrace_disable(&b);
    btrace_add(&b, 3, 4);      /* off: nothing, no crash */
    cr_assert_not(b.on);
}
