/* SPDX-License-Identifier: MIT */
/* The views by name, and how a function's name prints. */
#include "events.h"
#include "view/view.h"

Test(view, find_by_name)
{
    cr_assert_eq(view_find("calls"), &calls_view);
    cr_assert_eq(view_find("folded"), &folded_view);
    cr_assert_eq(view_find("chrome"), &chrome_view);
    cr_assert_eq(view_find("drcov"), &drcov_view);
    cr_assert_null(view_find("text"));
    cr_assert_null(view_find("Calls"));
    cr_assert(calls_view.needs_kinds && folded_view.needs_kinds && chrome_view.needs_kinds);
    cr_assert(!drcov_view.needs_kinds);
    cr_assert_str_eq(view_names(), "calls, folded, chrome, drcov or lcov");
}

static const char *name(struct memout *m, const struct stack_frame *f, const char *bad, bool json)
{
    memout_open(m);
    view_put_name(m->f, f, bad, json);
    return memout_text(m);
}

Test(view, names_print_safely)
{
    struct memout m;
    cr_assert_str_eq(name(&m, &(struct stack_frame){ 0, NULL, 0, 0, false }, NULL, false), "??");
    memout_close(&m);
    cr_assert_str_eq(name(&m, &(struct stack_frame){ 0xffffffff81000000ull, NULL, 0, 0, false }, NULL, false),
                     "0xffffffff81000000");
    memout_close(&m);
    cr_assert_str_eq(name(&m, &(struct stack_frame){ 1, "a\"b\\c\x7f\xc3\xa9", 0, 0, false }, NULL, true), "a\\\"b\\\\c???");
    memout_close(&m);
    cr_assert_str_eq(name(&m, &(struct stack_frame){ 1, "x y;z", 0, 0, false }, "; ", false), "x?y?z");
    memout_close(&m);
    char longname[1000];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    cr_assert_eq(strlen(name(&m, &(struct stack_frame){ 1, longname, 0, 0, false }, NULL, false)), VIEW_NAME_MAX);
    memout_close(&m);
}
