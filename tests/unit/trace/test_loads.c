/* SPDX-License-Identifier: MIT */
/* What a stretch knows of memory beyond what it held: its own stores' values, the paging entries it walks. */
#include <criterion/criterion.h>
#include <string.h>

#include "plan.h"
#include "trace/loads.h"

TestSuite(loads, .init = machine_setup, .fini = machine_teardown);

Test(loads, a_store_is_read_back_exactly_until_another_touches_it)
{
    uint64_t val = 0;
    stretch_attach(&s, s_mem, STRETCH_MAX_INSNS);
    loads_remember(&view, 0x20008, 8, 0x1122334455667788ull, &s);
    loads_remember(&view, 0x20020, 2, 0xabcdef, &s);
    cr_assert(loads_forwarded(&view, 0x20008, 8, &s, &val));
    cr_assert_eq(val, 0x1122334455667788ull);
    cr_assert(loads_forwarded(&view, 0x20020, 2, &s, &val));
    cr_assert_eq(val, 0xcdef, "as wide as it was stored");
    cr_assert_not(loads_forwarded(&view, 0x20008, 4, &s, &val), "part of it: not the store's value");
    cr_assert_not(loads_forwarded(&view, 0x2000c, 4, &s, &val));
    loads_forget(&view, 0x2000f, 0x20010, &s);     /* one byte of it */
    cr_assert_not(loads_forwarded(&view, 0x20008, 8, &s, &val));
    cr_assert(loads_forwarded(&view, 0x20020, 2, &s, &val), "the other stays");
    /* Across a page, or wider than 8 bytes: not remembered. */
    loads_remember(&view, 0x20ffc, 8, 1, &s);
    cr_assert_not(loads_forwarded(&view, 0x20ffc, 8, &s, &val));
}

Test(loads, the_oldest_goes_when_they_are_too_many)
{
    uint64_t val;
    stretch_attach(&s, s_mem, STRETCH_MAX_INSNS);
    for (unsigned i = 0; i <= STRETCH_MAX_FWD; i++)
        loads_remember(&view, 0x20000 + 8 * i, 8, i, &s);
    cr_assert_not(loads_forwarded(&view, 0x20000, 8, &s, &val));
    cr_assert(loads_forwarded(&view, 0x20000 + 8 * STRETCH_MAX_FWD, 8, &s, &val));
    cr_assert_eq(val, STRETCH_MAX_FWD);
}

Test(loads, the_paging_entries_of_what_it_accessed_are_not_data)
{
    stretch_attach(&s, s_mem, STRETCH_MAX_INSNS);
    cr_assert_not(loads_paging_entry(&view, 0x4100, 8, &s));
    loads_walked(&view, 0x30000, &s);       /* its PTE: 0x4000 + 8 * 0x30 */
    cr_assert(loads_paging_entry(&view, 0x4180, 8, &s));
    cr_assert(loads_paging_entry(&view, 0x4f00, 8, &s), "the whole page of entries");
    cr_assert(loads_paging_entry(&view, 0x1000, 8, &s), "and the levels above");
    cr_assert_not(loads_paging_entry(&view, 0x5000, 8, &s));
}
