/* SPDX-License-Identifier: MIT */
#include "view/slots.h"

#include <stdlib.h>

int slots_reserve(struct slots *s, size_t from, size_t count, size_t (*hash)(const void *ctx, size_t i),
                  const void *ctx)
{
    if (2 * (count + 1) <= s->n)
        return 0;
    size_t n = s->n ? s->n * 2 : 1024;
    uint32_t *t = calloc(n, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = from; i < count; i++) {
        size_t h = hash(ctx, i) & (n - 1);
        while (t[h])
            h = (h + 1) & (n - 1);
        t[h] = (uint32_t)i + 1;
    }
    free(s->slot);
    s->slot = t;
    s->n = n;
    return 0;
}

void slots_free(struct slots *s)
{
    free(s->slot);
    s->slot = NULL;
    s->n = 0;
}
