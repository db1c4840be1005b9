/* SPDX-License-Identifier: MIT */
/*
 * Open-addressing hash tables of indices into an array that their user
 * owns and compares keys in: a slot holds index + 1, 0 is empty, probing
 * is linear, and a table is at most half full.  For the views' interning
 * (folded's stack nodes, srclines' files and lines).
 */
#ifndef VBTS_DECODER_VIEW_SLOTS_H
#define VBTS_DECODER_VIEW_SLOTS_H

#include <stddef.h>
#include <stdint.h>

struct slots {
    uint32_t *slot;
    size_t n;           /* a power of two, or 0 */
};

/*
 * Room to add one entry to the count the array holds; when the table
 * grows, entries from..count-1 are placed again by hash(ctx, i).  -1 if
 * out of memory (the table is unchanged).
 */
int slots_reserve(struct slots *s, size_t from, size_t count, size_t (*hash)(const void *ctx, size_t i),
                  const void *ctx);
void slots_free(struct slots *s);

static inline size_t slots_first(const struct slots *s, size_t hash)
{
    return hash & (s->n - 1);
}

static inline size_t slots_next(const struct slots *s, size_t at)
{
    return (at + 1) & (s->n - 1);
}

#endif
