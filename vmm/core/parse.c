/* SPDX-License-Identifier: MIT */
#include "core/parse.h"

#include <errno.h>
#include <stdlib.h>

int parse_size(const char *s, uint64_t *bytes)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (*end == 'i' && shift)
        end++;
    if ((*end == 'B' || *end == 'b') && end[1] == '\0')
        end++;
    if (*end || (shift && v > (~0ull >> shift)))
        return -1;
    *bytes = v << shift;
    return 0;
}

/* Decimal, or hex with 0x; nothing else, no sign. */
int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
    if (errno || end == s || *end)
        return -1;
    *v = x;
    return 0;
}

