/* SPDX-License-Identifier: MIT */
/* gdb's points on each kind of host: debug registers, or checked at each step. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "core/vm.h"
#include "gdb/points.h"

static struct vm vm;
static struct gdb g;
static struct gdb_vcpu v;

static void setup(void)
{
    memset(&vm, 0, sizeof(vm));
    memset(&g, 0, sizeof(g));
    memset(&v, 0, sizeof(v));
    vm.ncpus = 1;
    g.vm = &vm;
    pthread_mutex_init(&g.lock, NULL);
}

TestSuite(points, .init = setup);

Test(points, watchpoints_are_checked_for_length_alignment_and_kind)
{
    const char *why = NULL;
    g.dr_fire = false;
    cr_assert_eq(points_set(&g, true, STUB_WRITE_WATCH, 0x1001, 4, &why), -1);
    cr_assert_str_eq(why, "a watchpoint's address must be aligned to its length");
    cr_assert_eq(points_set(&g, true, STUB_WRITE_WATCH, 0x1000, 3, &why), -1);
    cr_assert_str_eq(why, "a watchpoint covers 1, 2, 4 or 8 bytes");
    cr_assert_eq(points_set(&g, true, STUB_READ_WATCH, 0x1000, 4, &why), 1);
    cr_assert_eq(points_set(&g, true, STUB_ACCESS_WATCH, 0x1000, 4, &why), -1, "not by stepping");
    cr_assert_eq(points_set(&g, true, STUB_HW_BREAK, 0x0000800000000000ull, 1, &why), -1);
    cr_assert_str_eq(why, "not a canonical address");
    cr_assert_eq(g.npoints, 0);
}

Test(points, where_dr7_does_not_fire_every_point_steps)
{
    const char *why;
    g.dr_fire = false;
    cr_assert_eq(points_set(&g, true, STUB_HW_BREAK, 0x100020, 1, &why), 0);
    cr_assert_eq(points_set(&g, true, STUB_HW_BREAK, 0x100020, 1, &why), 0, "again: the same point");
    cr_assert_eq(points_set(&g, true, STUB_WRITE_WATCH, 0x2000, 8, &why), 0);
    cr_assert_eq(g.npoints, 2);
    cr_assert(points_any_by_step(&g));
    struct debug_want w;
    v.act = STUB_CONTINUE;
    points_want(&g, &v, &w);
    cr_assert(w.step);
    cr_assert_eq(w.nbp, 0);
    v.act = STUB_STAY;
    points_want(&g, &v, &w);
    cr_assert_not(w.step);
    cr_assert_eq(points_set(&g, false, STUB_HW_BREAK, 0x100020, 1, &why), 0);
    cr_assert_eq(points_set(&g, false, STUB_WRITE_WATCH, 0x2000, 8, &why), 0);
    cr_assert_eq(g.npoints, 0);
}

Test(points, a_hidden_page_steps_only_the_vcpu_that_passes)
{
    const char *why;
    g.dr_fire = false;
    cr_assert_eq(points_set(&g, true, STUB_SW_BREAK, 0x100020, 1, &why), 0);
    g.hide_on = true;
    v.act = STUB_CONTINUE;
    struct debug_want w;
    points_want(&g, &v, &w);
    cr_assert_not(w.step, "the page is watched instead");
    v.passing = true;
    points_want(&g, &v, &w);
    cr_assert(w.step);
}

Test(points, kvm_pvm_fires_execution_points_not_data_ones)
{
    g.dr_fire = true;
    g.pvm = true;
    g.npoints = 2;
    g.points[0] = (struct point){ .type = STUB_SW_BREAK, .addr = 0x100020 };
    g.points[1] = (struct point){ .type = STUB_WRITE_WATCH, .addr = 0x2000, .len = 2 };
    struct debug_want w;
    v.act = STUB_CONTINUE;
    points_want(&g, &v, &w);
    cr_assert(w.step, "the watchpoint steps");
    cr_assert_eq(w.nbp, 1);
    cr_assert_eq(w.bp[0], 0x100020);
    cr_assert_eq(w.bp_rw[0], DEBUG_RW_EXEC);
    cr_assert_eq(v.dr_point[0], 0);
    g.pvm = false;
    points_want(&g, &v, &w);
    cr_assert_not(w.step, "stock KVM: both in DR0-3");
    cr_assert_eq(w.nbp, 2);
    cr_assert_eq(w.bp_rw[1], DEBUG_RW_WRITE);
    cr_assert_eq(w.bp_len[1], 1, "2 bytes");
    cr_assert_eq(v.dr_point[1], 1);
}
