/* SPDX-License-Identifier: MIT */
/* Hash tables of indices: growth keeps every entry findable, at most half full. */
#include <criterion/criterion.h>

#include "view/slots.h"

static uint64_t keys[5000];

static size_t key_hash(const void *ctx, size_t i)
{
    (void)ctx;
    return (size_t)(keys[i] * 0x9e3779b97f4a7c15ull);
}

static size_t find(const struct slots *s, uint64_t key)
{
    for (size_t h = slots_first(s, (size_t)(key * 0x9e3779b97f4a7c15ull)); s->slot[h]; h = slots_next(s, h))
        if (keys[s->slot[h] - 1] == key)
            return s->slot[h] - 1;
    return SIZE_MAX;
}

Test(slots, grows_and_finds_every_entry)
{
    struct slots s = { 0 };
    for (size_t i = 0; i < 5000; i++) {
        keys[i] = i * 7919 + 3;
        cr_assert_eq(slots_reserve(&s, 0, i, key_hash, NULL), 0);
        cr_assert_geq(s.n, 2 * (i + 1));
        cr_assert_eq(find(&s, keys[i]), SIZE_MAX);
        size_t h = slots_first(&s, key_hash(NULL, i));
        while (s.slot[h])
            h = slots_next(&s, h);
        s.slot[h] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < 5000; i++)
        cr_assert_eq(find(&s, keys[i]), i);
    cr_assert_eq(find(&s, 1), SIZE_MAX);
    slots_free(&s);
    cr_assert(s.slot == NULL && s.n == 0);
}

/* Entries below `from` are not the table's (folded's node 0). */
Test(slots, entries_before_from_are_left_out)
{
    struct slots s = { 0 };
    keys[0] = 11;
    keys[1] = 12;
    cr_assert_eq(slots_reserve(&s, 1, 2, key_hash, NULL), 0);
    size_t used = 0;
    for (size_t i = 0; i < s.n; i++)
        used += s.slot[i] != 0;
    cr_assert_eq(used, 1);
    cr_assert_eq(find(&s, 12), 1);
    cr_assert_eq(find(&s, 11), SIZE_MAX);
    slots_free(&s);
}
