/* SPDX-License-Identifier: MIT */
/* Call stacks from branch kinds: every change, in order, as the views see it. */
#include "events.h"
#include "view/stack.h"

static char log_buf[8192];

static void put(const char *what, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth)
{
    char name[32];
    if (f->name)
        snprintf(name, sizeof(name), "%s", f->name);
    else
        snprintf(name, sizeof(name), "%#llx", (unsigned long long)f->func);
    size_t n = strlen(log_buf);
    snprintf(log_buf + n, sizeof(log_buf) - n, "%s%u:%llu %s/%u/%u\n", what, cpu, (unsigned long long)seq, name,
             depth, f->how);
}

static unsigned enters, leaves;

static void on_enter(void *c, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned d)
{
    (void)c;
    enters++;
    put("+", cpu, seq, f, d);
}

static void on_leave(void *c, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned d)
{
    (void)c;
    leaves++;
    put("-", cpu, seq, f, d);
}

static void on_resume(void *c, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned d)
{
    (void)c;
    put("=", cpu, seq, f, d);
}

static unsigned branches, deepest;
static void on_branch(void *c, const struct vbts_event *ev, const struct stack_frame *f, unsigned d)
{
    (void)c;
    (void)ev;
    branches++;
    if (f && d > deepest)
        deepest = d;
}

static const struct stack_ops ops = { on_enter, on_leave, on_resume, on_branch, NULL };

static struct stack *fresh(const struct vbts_symtab *symtab)
{
    log_buf[0] = '\0';
    branches = deepest = enters = leaves = 0;
    struct stack *s = stack_new(symtab, &ops, NULL);
    cr_assert_not_null(s);
    return s;
}

static void feed(struct stack *s, const struct vbts_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(stack_event(s, &ev[i]), 0);
}

#define FEED(s, ...) do { const struct vbts_event e_[] = { __VA_ARGS__ }; feed(s, e_, sizeof(e_) / sizeof(e_[0])); } while (0)

Test(stack, calls_and_returns_nest)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 1, 0x1004, 0x1100, VBTS_KIND_CALL),
            ev_branch(0, 2, 0x1108, 0x1200, VBTS_KIND_CALL_IND),
            ev_branch(0, 3, 0x1210, 0x110d, VBTS_KIND_RET),
            ev_branch(0, 4, 0x1120, 0x1009, VBTS_KIND_RET),
            ev_marker(0, 5, VBTS_MARK_STOP, 0, 0));
    cr_assert_str_eq(log_buf, "+0:1 main/0/0\n+0:1 f/1/1\n+0:2 g/2/1\n-0:3 g/2/1\n=0:3 f/1/1\n"
                              "-0:4 f/1/1\n=0:4 main/0/0\n-0:5 main/0/0\n");
    cr_assert_eq(branches, 4);
    stack_free(s);
    vbts_symtab_free(sym);
}

/* An exception in f: its handler one level deeper, the iret back into f. */
Test(stack, events_nest_and_iret_resumes)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),
            ev_branch(0, 1, 0x1108, 0x1400, VBTS_KIND_EXCEPTION),
            ev_branch(0, 2, 0x1404, 0x1400, VBTS_KIND_INTERRUPT),
            ev_branch(0, 3, 0x1410, 0x1404, VBTS_KIND_IRET),
            ev_branch(0, 4, 0x1410, 0x110a, VBTS_KIND_IRET));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n+0:1 isr/2/3\n+0:2 isr/3/4\n-0:3 isr/3/4\n"
                              "=0:3 isr/2/3\n-0:4 isr/2/3\n=0:4 f/1/1\n");
    stack_finish(s);
    cr_assert_str_eq(strstr(log_buf, "=0:4 f/1/1\n"), "=0:4 f/1/1\n-0:5 f/1/1\n-0:5 main/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* A jump into another function replaces the frame; its level keeps how it was entered. */
Test(stack, tail_jump_replaces_the_frame)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),
            ev_branch(0, 1, 0x1108, 0x1300, VBTS_KIND_JMP),
            ev_branch(0, 2, 0x1304, 0x1310, VBTS_KIND_JCC),
            ev_branch(0, 3, 0x1320, 0x1009, VBTS_KIND_RET));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n-0:1 f/1/1\n+0:1 h/1/1\n-0:3 h/1/1\n=0:3 main/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* Falling through into the next function, seen at the next branch's from. */
Test(stack, fall_through_is_seen_at_the_next_branch)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL), ev_branch(0, 1, 0x1204, 0x1200, VBTS_KIND_JCC));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n-0:1 f/1/1\n+0:1 g/1/1\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* The trace began inside a function that returns: the caller becomes the outermost. */
Test(stack, return_past_the_first_frame)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1210, 0x110d, VBTS_KIND_RET), ev_branch(0, 1, 0x1120, 0x1009, VBTS_KIND_RET));
    cr_assert_str_eq(log_buf, "+0:0 g/0/0\n-0:0 g/0/0\n+0:0 f/0/0\n-0:1 f/0/0\n+0:1 main/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* One kind for both directions: the level a syscall entered is left by the next. */
Test(stack, syscall_and_sysret_pair)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1500, VBTS_KIND_SYSCALL),
            ev_branch(0, 1, 0x1504, 0x1100, VBTS_KIND_CALL),
            ev_branch(0, 2, 0x1104, 0x1508, VBTS_KIND_RET),
            ev_branch(0, 3, 0x1510, 0x1006, VBTS_KIND_SYSCALL));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 sys/1/5\n+0:1 f/2/1\n-0:2 f/2/1\n=0:2 sys/1/5\n"
                              "-0:3 sys/1/5\n=0:3 main/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* After lost records the stack is unknown: everything leaves, the next branch starts anew. */
Test(stack, lost_records_end_every_frame)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL), ev_marker(0, 1, VBTS_MARK_LOST, 7, 0),
            ev_branch(0, 2, 0x1204, 0x1200, VBTS_KIND_JCC));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n-0:1 f/1/1\n-0:1 main/0/0\n+0:2 g/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* vCPUs have their own stacks. */
Test(stack, vcpus_apart)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL), ev_branch(3, 0, 0x1204, 0x1300, VBTS_KIND_CALL),
            ev_branch(0, 1, 0x1104, 0x1009, VBTS_KIND_RET));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n+3:0 g/0/0\n+3:0 h/1/1\n-0:1 f/1/1\n=0:1 main/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* Without symbols a called function is its entry; where the trace began has no name. */
Test(stack, without_symbols_entries_name_frames)
{
    struct stack *s = fresh(NULL);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL), ev_branch(0, 1, 0x1108, 0x1300, VBTS_KIND_JMP),
            ev_branch(0, 2, 0x1320, 0x1009, VBTS_KIND_RET));
    cr_assert_str_eq(log_buf, "+0:0 0/0/0\n+0:0 0x1100/1/1\n-0:2 0x1100/1/1\n=0:2 0/0/0\n");
    stack_free(s);
}

/* Past STACK_MAX_DEPTH levels are counted, not entered; the returns, each just after its call, come back through them. */
Test(stack, depth_is_bounded)
{
    struct stack *s = fresh(NULL);
    for (uint64_t i = 0; i < 3000; i++)
        cr_assert_eq(stack_event(s, &(struct vbts_event){ .rec = { 0x1000 + i, 0x2000 + i, 0 }, .seq = i,
                                                          .kind = VBTS_KIND_CALL }), 0);
    cr_assert_eq(enters, STACK_MAX_DEPTH);      /* the first frame and 1023 calls */
    cr_assert_eq(deepest, STACK_MAX_DEPTH - 1);
    for (uint64_t i = 0; i < 3000; i++)
        cr_assert_eq(stack_event(s, &(struct vbts_event){ .rec = { 0x3000, 0x1000 + (2999 - i) + 5, 0 },
                                                          .seq = 3000 + i, .kind = VBTS_KIND_RET }), 0);
    cr_assert_eq(branches, 6000);
    cr_assert_eq(leaves, STACK_MAX_DEPTH - 1);  /* the first frame stays */
    stack_free(s);
}

/* A jump to code whose first branch returns is the jumper's own return (a return thunk). */
Test(stack, return_thunk_is_the_return)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),
            ev_branch(0, 1, 0x1108, 0x1300, VBTS_KIND_JMP),
            ev_branch(0, 2, 0x1300, 0x1009, VBTS_KIND_RET));
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n-0:2 f/1/1\n=0:2 main/0/0\n");
    cr_assert_eq(branches, 3);
    stack_free(s);
    vbts_symtab_free(sym);
}

/* A jump waiting for the next record is settled by a marker, and at the end. */
Test(stack, waiting_jump_settles_at_markers_and_end)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL), ev_branch(0, 1, 0x1108, 0x1300, VBTS_KIND_JMP),
            ev_marker(0, 2, VBTS_MARK_STOP, 0, 0), ev_branch(1, 0, 0x1108, 0x1200, VBTS_KIND_JMP_IND));
    stack_finish(s);
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n-0:1 f/1/1\n+0:1 h/1/1\n-0:2 h/1/1\n-0:2 main/0/0\n"
                              "+1:0 f/0/0\n-1:0 f/0/0\n+1:0 g/0/0\n-1:1 g/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* A trace that begins inside a system call: its sysret leaves the kernel's outermost frame. */
Test(stack, sysret_from_where_the_trace_began)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1510, 0x1006, VBTS_KIND_SYSCALL), ev_branch(0, 1, 0x1008, 0x1500, VBTS_KIND_SYSCALL));
    cr_assert_str_eq(log_buf, "+0:0 sys/0/0\n-0:0 sys/0/0\n+0:0 main/0/0\n+0:1 sys/1/5\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/*
 * A return that goes back past a frame: a jump to a thunk that calls a
 * helper, which drops its own return address and returns to the first
 * caller (Linux's SRSO return thunk).  The depth comes back to main's.
 */
Test(stack, return_past_a_frame_goes_back_to_its_caller)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),     /* main -> f, returns to 0x1009 */
            ev_branch(0, 1, 0x1108, 0x1300, VBTS_KIND_JMP),      /* f -> h (the thunk) */
            ev_branch(0, 2, 0x1304, 0x1200, VBTS_KIND_CALL),     /* h -> g */
            ev_branch(0, 3, 0x1208, 0x1009, VBTS_KIND_RET),      /* g returns to main */
            ev_branch(0, 4, 0x1010, 0x1100, VBTS_KIND_CALL));    /* main calls f again: depth 1 */
    cr_assert_str_eq(log_buf, "+0:0 main/0/0\n+0:0 f/1/1\n-0:1 f/1/1\n+0:1 h/1/1\n+0:2 g/2/1\n-0:3 g/2/1\n"
                              "-0:3 h/1/1\n=0:3 main/0/0\n+0:4 f/1/1\n");
    stack_free(s);
    vbts_symtab_free(sym);
}

/* An interrupt's iret goes back to the interrupted instruction: to its level, whatever ran above. */
Test(stack, iret_to_the_interrupted_instruction)
{
    struct vbts_symtab *sym = test_symtab();
    struct stack *s = fresh(sym);
    FEED(s, ev_branch(0, 0, 0x1104, 0x1400, VBTS_KIND_INTERRUPT),  /* f interrupted at 0x1104 */
            ev_branch(0, 1, 0x1404, 0x1200, VBTS_KIND_CALL),       /* isr -> g, never returns */
            ev_branch(0, 2, 0x1210, 0x1104, VBTS_KIND_IRET));      /* back to f's 0x1104 */
    cr_assert_str_eq(log_buf, "+0:0 f/0/0\n+0:0 isr/1/4\n+0:1 g/2/1\n-0:2 g/2/1\n-0:2 isr/1/4\n=0:2 f/0/0\n");
    stack_free(s);
    vbts_symtab_free(sym);
}
