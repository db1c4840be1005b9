/* SPDX-License-Identifier: MIT */
#include "view/blocks.h"

bool blocks_next(struct blocks *b, const struct vbts_event *ev, struct blocks_run *run)
{
    uint64_t *next = &b->next[ev->cpu];
    if (ev->is_marker) {
        if (ev->qualifier == VBTS_MARK_LOST || ev->qualifier == VBTS_MARK_STOP || ev->qualifier == VBTS_MARK_START)
            *next = 0;
        return false;
    }
    uint64_t from = ev->rec.from, end = ev->kind == VBTS_KIND_INTERRUPT ? from : from + 1;
    bool found = false;
    if (!*next) {
        if (end > from) {
            *run = (struct blocks_run){ from, 1, false, 0 };
            found = true;
        }
    } else if (end > *next - 1 && end - (*next - 1) <= BLOCKS_RUN_MAX) {
        *run = (struct blocks_run){ *next - 1, end - (*next - 1), true, b->kind[ev->cpu] };
        found = true;
    }
    *next = ev->rec.to == UINT64_MAX ? 0 : ev->rec.to + 1;
    b->kind[ev->cpu] = ev->kind;
    return found;
}
