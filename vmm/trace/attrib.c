/* SPDX-License-Identifier: MIT */
#include "trace/attrib.h"

#include "vbts/format.h"

bool attrib_skip(const struct cpu_view *v, uint64_t lin, uint64_t rip, int max,
                 bool allow_indirect, struct branch_pred *rec, bool *has_rec)
{
    struct branch_pred p;
    const char *why;
    *has_rec = false;
    for (int n = 0; n < max; n++) {
        if (branch_predict_at(v, lin, &p, &why))
            return false;
        if (p.kind == VBTS_KIND_UNKNOWN) {
            lin += p.len;
            if (rip == lin)
                return true;
            continue;
        }
        if (p.kind == VBTS_KIND_JCC && rip == lin + p.len)
            return true;        /* a conditional branch not taken */
        if (p.target_known ? rip != p.target : !(allow_indirect && n == 0))
            return false;
        *rec = p;
        rec->target = rip;
        *has_rec = true;
        return true;
    }
    return false;
}

void attrib_event(const struct cpu_view *v, uint64_t rip, int hint, bool only, int max,
                  struct attrib_event *out)
{
    int found = -1, exact = -1, hinted = -1, matches = 0;
    uint64_t h;
    struct branch_pred skip;
    bool hs;

    for (unsigned vec = only ? (unsigned)hint : 0; vec < (only ? (unsigned)hint + 1 : 256u); vec++) {
        if (cpu_idt_handler(v, vec, &h))
            continue;
        if (h == rip) {
            if (exact < 0 || (int)vec == hint)
                exact = (int)vec;
            continue;
        }
        if (!attrib_skip(v, h, rip, max, true, &skip, &hs))
            continue;
        matches++;
        if (found < 0 || (int)vec == hint) {
            found = (int)vec;
            if ((int)vec == hint)
                hinted = (int)vec;
        }
    }
    out->has_skip = false;
    if (exact >= 0) {
        out->status = ATTRIB_OK;
        out->vector = exact;
        cpu_idt_handler(v, (unsigned)exact, &out->handler);
        return;
    }
    if (found < 0 || (matches > 1 && hinted < 0)) {
        out->status = found < 0 ? ATTRIB_NONE : ATTRIB_SEVERAL;
        return;
    }
    out->status = ATTRIB_OK;
    out->vector = found;
    cpu_idt_handler(v, (unsigned)found, &out->handler);
    attrib_skip(v, out->handler, rip, max, true, &out->skip, &out->has_skip);
}

unsigned attrib_kind(unsigned kind, int vector)
{
    return kind == VBTS_KIND_EXCEPTION && vector >= 32 ? VBTS_KIND_INTERRUPT : kind;
}
