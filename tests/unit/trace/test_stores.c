/* SPDX-License-Identifier: MIT */
/* What a stretch's stores may write: noted a page at a time, hit through code and paging entries. */
#include <criterion/criterion.h>
#include <string.h>

#include "../x86/machine.h"
#include "trace/stores.h"

TestSuite(stores, .init = machine_setup, .fini = machine_teardown);

Test(stores, a_range_across_pages_is_noted_per_page)
{
    struct stores s = { 0 };
    cr_assert(stores_note(&s, &view, 0x10ff8, 0x11008));
    cr_assert_eq(s.n, 2);
    cr_assert_eq(s.st[0].gpa, 0x10ff8);
    cr_assert_eq(s.st[0].len, 8);
    cr_assert_eq(s.st[1].gpa, 0x11000);
    cr_assert(stores_hit(&s, 0, &view, 0x11007, 1));
    cr_assert_not(stores_hit(&s, 0, &view, 0x11008, 4));
    cr_assert_not(stores_hit(&s, 1, &view, 0x10ff8, 8), "only those from the second on");
}

Test(stores, too_much_or_wrapped_is_refused)
{
    struct stores s = { 0 };
    cr_assert_not(stores_note(&s, &view, 0x10000, 0x13000));
    cr_assert_not(stores_note(&s, &view, 0x10000, 0xfff0));
    for (unsigned i = 0; i < STORES_MAX; i++)
        cr_assert(stores_note(&s, &view, 0x20000 + 0x1000 * i, 0x20008 + 0x1000 * i));
    cr_assert_not(stores_note(&s, &view, 0x40000, 0x40008), "full");
    cr_assert(stores_hit(&s, 0, &view, ~0ull - 2, 8), "a range that wraps");
}

Test(stores, a_paging_entry_written_hits_what_it_maps)
{
    struct stores s = { 0 };
    /* The PTE of page 0x30000 lies at 0x4000 + 8 * 0x30. */
    cr_assert(stores_note(&s, &view, 0x4180, 0x4188));
    cr_assert(stores_hit(&s, 0, &view, 0x30010, 4));
    cr_assert_not(stores_hit(&s, 0, &view, 0x31010, 4));
    /* Not mapped: not noted; a read there is hit (it is not what it was). */
    PTE(0x32000, 0);
    struct stores t = { 0 };
    cr_assert(stores_note(&t, &view, 0x32000, 0x32008));
    cr_assert_eq(t.n, 0);
    cr_assert(stores_hit(&s, 0, &view, 0x32000, 4));
}

Test(stores, a_store_that_touches_a_range_since_keep_widens_it)
{
    struct stores s = { 0 };
    cr_assert(stores_note(&s, &view, 0x20000, 0x20001));
    cr_assert(stores_note(&s, &view, 0x20001, 0x20002), "a byte after it");
    cr_assert(stores_note(&s, &view, 0x20000, 0x20001), "the same again");
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.st[0].len, 2);
    cr_assert(stores_note(&s, &view, 0x20010, 0x20011), "apart: a range of its own");
    cr_assert_eq(s.n, 2);
    /* A call's "stores after me" starts at 2: nothing before it widens. */
    s.keep = 2;
    cr_assert(stores_note(&s, &view, 0x20002, 0x20003));
    cr_assert_eq(s.n, 3);
    cr_assert(stores_hit(&s, 2, &view, 0x20002, 1));
    cr_assert_eq(s.st[0].len, 2);
    /* Pages apart are ranges apart, even where their frames touch. */
    struct stores t = { 0 };
    cr_assert(stores_note(&t, &view, 0x20ff8, 0x21000));
    cr_assert(stores_note(&t, &view, 0x21000, 0x21008));
    cr_assert_eq(t.n, 2);
}

Test(stores, the_page_filter_passes_every_page_a_range_lies_in)
{
    /* A host's range may cross a page: both pages are hit. */
    struct stores s = { 0 };
    cr_assert(stores_add(&s, 0x20ffc, 8));
    cr_assert(stores_hit(&s, 0, &view, 0x20ffc, 1));
    cr_assert(stores_hit(&s, 0, &view, 0x21003, 1));
    cr_assert_not(stores_hit(&s, 0, &view, 0x21004, 4));
    /* Page 0x60 shares 0x20's filter bit (mod 64): the ranges decide, not the bit. */
    cr_assert_not(stores_hit(&s, 0, &view, 0x60ffc, 4));
    /* A range widened within its page is hit where it grew. */
    struct stores t = { 0 };
    cr_assert(stores_note(&t, &view, 0x22000, 0x22008));
    cr_assert(stores_note(&t, &view, 0x22008, 0x22800));
    cr_assert_eq(t.n, 1);
    cr_assert(stores_hit(&t, 0, &view, 0x227f8, 8));
    cr_assert_not(stores_hit(&t, 0, &view, 0x22800, 8));
    /* Full: no room, nothing noted. */
    struct stores u = { 0 };
    for (unsigned i = 0; i < STORES_MAX; i++)
        cr_assert(stores_add(&u, 0x30000 + 0x1000 * i, 8));
    cr_assert_not(stores_add(&u, 0x50000, 8));
    cr_assert_not(stores_hit(&u, 0, &view, 0x50000, 8));
}
