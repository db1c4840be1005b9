/* SPDX-License-Identifier: MIT */
/*
 * vbts-decode's lines.  Records are formatted by hand, not with printf:
 * traces run to hundreds of millions of records, and printf per line would
 * dominate.
 */
#include "format.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char hex[] = "0123456789abcdef";

static char *put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_hex16(char *p, uint64_t v)
{
    for (int i = 15; i >= 0; i--, v >>= 4)
        p[i] = hex[v & 15];
    return p + 16;
}

/* "0x" and the hex digits without leading zeros, as in JSON output. */
static char *put_hex(char *p, uint64_t v)
{
    char tmp[16];
    int n = 0;
    do
        tmp[n++] = hex[v & 15];
    while (v >>= 4);
    *p++ = '0';
    *p++ = 'x';
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static char *put_dec(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

/* cpu right-aligned in 3 columns, then two spaces: "%3u  " */
static char *put_cpu(char *p, unsigned cpu)
{
    char tmp[8];
    char *e = put_dec(tmp, cpu);
    for (long pad = 3 - (e - tmp); pad > 0; pad--)
        *p++ = ' ';
    memcpy(p, tmp, (size_t)(e - tmp));
    p += e - tmp;
    *p++ = ' ';
    *p++ = ' ';
    return p;
}

/* Undefined values print as "kind-N" rather than failing: a newer minor
 * version may define them. */
static char *put_name(char *p, const char *name, const char *prefix, unsigned v)
{
    if (name)
        return put_str(p, name);
    p = put_str(p, prefix);
    return put_dec(p, v);
}

/* CLOCK_REALTIME ns as 2026-11-22T06:03:09.123456789Z */
static char *put_time(char *p, uint64_t ns)
{
    time_t s = (time_t)(ns / 1000000000u);
    struct tm tm;
    if (!gmtime_r(&s, &tm))
        return put_dec(p, ns);
    return p + sprintf(p, "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                       (unsigned)(ns % 1000000000u));
}

/*
 * name+0xoff; for JSON, quotes and backslashes escaped.  Names are the
 * symbol file's bytes: anything but printable ASCII becomes '?', so that no
 * name can move a terminal's cursor or make a JSON line invalid (a control
 * character or a byte that is not UTF-8).  At most FORMAT_SYM_MAX bytes
 * *written*: escaping doubles a name, and two of them must fit a line.
 */
static char *put_sym(char *p, const struct vbts_symtab *symtab, uint64_t addr, int json)
{
    char buf[FORMAT_SYM_MAX + 32];
    vbts_symtab_format(symtab, addr, buf, sizeof(buf));
    char *end = p + FORMAT_SYM_MAX;
    for (const char *c = buf; *c && p < end; c++) {
        unsigned char ch = (unsigned char)*c;
        if (json && (ch == '"' || ch == '\\')) {
            if (end - p < 2)
                break;
            *p++ = '\\';
            *p++ = (char)ch;
        } else if (ch < 0x20 || ch > 0x7e) {
            *p++ = '?';
        } else {
            *p++ = (char)ch;
        }
    }
    return p;
}

static char *text_marker(char *p, const struct vbts_event *ev)
{
    p = put_str(p, "-- ");
    p = put_name(p, vbts_marker_name(ev->qualifier), "marker-", ev->qualifier);
    *p++ = ' ';
    switch (ev->qualifier) {
    case VBTS_MARK_START:
        return put_time(p, ev->rec.to);
    case VBTS_MARK_STOP:
        p = put_name(p, vbts_stop_reason_name((unsigned)ev->aux), "reason-", (unsigned)ev->aux);
        *p++ = ' ';
        return put_time(p, ev->rec.to);
    case VBTS_MARK_LOST:
        return put_dec(p, ev->rec.to);
    case VBTS_MARK_CTX_ARRIVE:
    case VBTS_MARK_CTX_DEPART:
        p = put_str(p, "cr3=");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, " t=+");
        p = put_dec(p, ev->aux);
        return put_str(p, "ns");
    default:
        p = put_str(p, "to=");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, " aux=");
        return put_dec(p, ev->aux);
    }
}

static char *text_event(char *p, const struct vbts_event *ev, const struct vbts_symtab *symtab)
{
    p = put_cpu(p, ev->cpu);
    if (ev->is_marker)
        return text_marker(p, ev);
    p = put_str(p, "0x");
    p = put_hex16(p, ev->rec.from);
    p = put_str(p, " -> 0x");
    p = put_hex16(p, ev->rec.to);
    p = put_str(p, "  ");
    p = put_name(p, vbts_kind_name(ev->kind), "kind-", ev->kind);
    if (symtab) {
        p = put_str(p, "  ");
        p = put_sym(p, symtab, ev->rec.from, 0);
        p = put_str(p, " -> ");
        p = put_sym(p, symtab, ev->rec.to, 0);
    }
    return p;
}

static char *json_marker(char *p, const struct vbts_event *ev)
{
    p = put_str(p, ",\"kind\":\"");
    p = put_name(p, vbts_marker_name(ev->qualifier), "marker-", ev->qualifier);
    *p++ = '"';
    switch (ev->qualifier) {
    case VBTS_MARK_STOP:
        p = put_str(p, ",\"reason\":\"");
        p = put_name(p, vbts_stop_reason_name((unsigned)ev->aux), "reason-", (unsigned)ev->aux);
        *p++ = '"';
        /* fall through */
    case VBTS_MARK_START:
        p = put_str(p, ",\"time_ns\":");
        return put_dec(p, ev->rec.to);
    case VBTS_MARK_LOST:
        p = put_str(p, ",\"lost\":");
        return put_dec(p, ev->rec.to);
    case VBTS_MARK_CTX_ARRIVE:
    case VBTS_MARK_CTX_DEPART:
        p = put_str(p, ",\"cr3\":\"");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, "\",\"t_ns\":");
        return put_dec(p, ev->aux);
    default:
        p = put_str(p, ",\"to\":\"");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, "\",\"aux\":");
        return put_dec(p, ev->aux);
    }
}

static char *json_event(char *p, const struct vbts_event *ev, const struct vbts_symtab *symtab)
{
    p = put_str(p, "{\"cpu\":");
    p = put_dec(p, ev->cpu);
    p = put_str(p, ",\"seq\":");
    p = put_dec(p, ev->seq);
    if (ev->is_marker)
        return put_str(json_marker(p, ev), "}");
    p = put_str(p, ",\"from\":\"");
    p = put_hex(p, ev->rec.from);
    p = put_str(p, "\",\"to\":\"");
    p = put_hex(p, ev->rec.to);
    p = put_str(p, "\",\"kind\":\"");
    p = put_name(p, vbts_kind_name(ev->kind), "kind-", ev->kind);
    if (symtab) {
        p = put_str(p, "\",\"from_sym\":\"");
        p = put_sym(p, symtab, ev->rec.from, 1);
        p = put_str(p, "\",\"to_sym\":\"");
        p = put_sym(p, symtab, ev->rec.to, 1);
    }
    return put_str(p, "\"}");
}

size_t format_event(char *p, const struct vbts_event *ev, enum format_kind kind,
                    const struct vbts_symtab *symtab)
{
    char *e = kind == FORMAT_JSON ? json_event(p, ev, symtab) : text_event(p, ev, symtab);
    *e++ = '\n';
    return (size_t)(e - p);
}
