/* SPDX-License-Identifier: MIT */
/* From options to the trace window: resolve ADDR|SYMBOL triggers. */
#include <stdio.h>
#include <string.h>

#include "trace/trace.h"

#include "core/error.h"
#include "core/parse.h"
#include "vbts/symbols.h"

static int resolve(const char *opt, const char *what, const struct vbts_symtab *syms,
                   const char *symfile, uint64_t *addr)
{
    if (parse_u64(what, addr) == 0)
        return 0;
    if (!syms)
        return error_fail("%s: '%s' is not an address and no --symbols file was given", opt, what);
    if (vbts_symtab_find(syms, what, addr) < 0)
        return error_fail("%s: symbol '%s' not found in %s", opt, what, symfile);
    return 0;
}

int trace_config_build(struct trace_config *c, const struct trace_options *o)
{
    memset(c, 0, sizeof(*c));
    struct vbts_symtab *syms = NULL;
    if (o->symbols) {
        char err[512];
        syms = vbts_symtab_load(o->symbols, err, sizeof(err));
        if (!syms)
            return error_fail("--symbols: %s", err);
    }
    int r = 0;
    if (o->start) {
        r = resolve("--trace-start", o->start, syms, o->symbols, &c->start);
        c->have_start = r == 0;
    }
    if (r == 0 && o->stop) {
        r = resolve("--trace-stop", o->stop, syms, o->symbols, &c->stop);
        c->have_stop = r == 0;
    }
    vbts_symtab_free(syms);
    if (r < 0)
        return -1;
    if (!o->trace && (o->start || o->stop || o->max_branches || o->cpl ||
                      o->have_cr3 || o->verify_flow || o->stop_after))
        return error_fail("--trace-start, --trace-stop, --max-branches, --cpl, --cr3, "
                         "--verify-flow and --stop-after-trace need --trace");
    if (o->cr3_start && !o->start)
        return error_fail("--cr3 start needs --trace-start");
    if (o->stop_after && !o->stop && !o->max_branches)
        return error_fail("--stop-after-trace needs --trace-stop or --max-branches");
    c->max_branches = o->max_branches;
    c->cpl = (enum trace_cpl)o->cpl;
    c->have_cr3 = o->have_cr3;
    c->cr3 = o->cr3;
    c->cr3_start = o->cr3_start;
    atomic_store(&c->start_cr3, 0);
    c->verify_flow = o->verify_flow;
    c->stop_after = o->stop_after;
    atomic_store(&c->window, c->have_start ? WINDOW_WAITING : WINDOW_OPEN);
    return 0;
}
