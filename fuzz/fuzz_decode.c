/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: vbts-decode's lines (decoder/cli/format.c) in every
 * format, for the records of a hostile trace and of raw record bytes, with
 * a hostile symbol map.  Every line must fit FORMAT_LINE_MAX (the buffer is
 * exactly that big, so ASan sees a byte more), end in its only newline, be
 * printable ASCII, and in JSON be one valid object.  The same records go
 * through every view (decoder/cli/view/): calls and folded print
 * printable lines, chrome closes every frame it opens, drcov's table is as
 * long as its header says, lcov writes no control byte.
 *
 * Input: u8 flags (bit 0: symbols), u16 map length N (little-endian), N
 * bytes of symbol file (System.map text or ELF), then the trace.
 */
#include "fuzz.h"

#include <string.h>
#include <vbts/decode.h>
#include <vbts/le.h>
#include <vbts/symbols.h>

#include "../decoder/cli/format.h"
#include "../decoder/cli/view/view.h"

static char *line;
#define MAX_EVENTS (4096 + 64)
static struct vbts_event *events;
static size_t nevents;


int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    line = malloc(FORMAT_LINE_MAX);
    events = malloc(MAX_EVENTS * sizeof(*events));
    return line && events ? 0 : -1;
}

static const char *json_string(const char *p, const char *end)
{
    if (p >= end || *p++ != '"')
        return NULL;
    while (p < end && *p != '"') {
        if (*p == '\\') {
            p++;
            if (p >= end || !*p || !strchr("\"\\/bfnrtu", *p))
                return NULL;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (p + i >= end || !p[i] || !strchr("0123456789abcdefABCDEF", p[i]))
                        return NULL;
                p += 4;
            }
        }
        p++;
    }
    return p < end ? p + 1 : NULL;
}

static const char *json_number(const char *p, const char *end)
{
    const char *s = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p == s || (*s == '0' && p - s > 1))
        return NULL;
    return p;
}

/* One flat object of strings and unsigned integers: what vbts-decode writes. */
static int json_ok(const char *p, const char *end)
{
    if (p >= end || *p++ != '{')
        return 0;
    for (int first = 1;; first = 0) {
        if (p < end && *p == '}')
            return !first && p + 1 == end;
        if (!first && (p >= end || *p++ != ','))
            return 0;
        if (!(p = json_string(p, end)) || p >= end || *p++ != ':')
            return 0;
        p = p < end && *p == '"' ? json_string(p, end) : json_number(p, end);
        if (!p)
            return 0;
    }
}

static void check_line(const struct vbts_event *ev, enum format_kind kind,
                       const struct vbts_symtab *syms)
{
    size_t n = format_event(line, ev, kind, syms);
    fuzz_check(n > 1 && n <= FORMAT_LINE_MAX, "line of %zu bytes", n);
    fuzz_check(line[n - 1] == '\n', "no newline at the end");
    for (size_t i = 0; i + 1 < n; i++)
        fuzz_check(line[i] >= 0x20 && line[i] <= 0x7e, "byte 0x%02x at %zu: %.*s",
                   (unsigned char)line[i], i, (int)n, line);
    if (kind == FORMAT_JSON)
        fuzz_check(json_ok(line, line + n - 1), "not one JSON object: %.*s", (int)n, line);
}

static void check_both(const struct vbts_event *ev, const struct vbts_symtab *syms)
{
    check_line(ev, FORMAT_TEXT, syms);
    check_line(ev, FORMAT_JSON, syms);
}

static size_t count(const char *s, size_t n, const char *what)
{
    size_t c = 0, w = strlen(what);
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), what, w)); p += w)
        c++;
    return c;
}

static void check_view(const struct view_type *t, const struct vbts_symtab *syms, const char *symfile)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    char err[512];
    void *v = t->new(f, syms, symfile, err, sizeof(err));
    if (!v) {
        /* lcov wants DWARF, which most inputs have not: then one line and no view. */
        fuzz_check(t == &lcov_view && !strchr(err, '\n'), "%s: no view: %s", t->name, err);
        fclose(f);
        free(buf);
        return;
    }
    for (size_t i = 0; i < nevents; i++)
        fuzz_check(t->event(v, &events[i]) == 0, "%s: event failed", t->name);
    fuzz_check(t->finish(v) == 0, "%s: finish failed", t->name);
    t->free(v);
    fclose(f);
    if (t == &drcov_view) {
        char *bb = strstr(buf, "BB Table: ");
        fuzz_check(bb && strchr(bb, '\n'), "drcov: no BB table line");
        char *nl = strchr(bb, '\n');
        size_t n = strtoul(bb + 10, NULL, 10);
        fuzz_check(len - (size_t)(nl + 1 - buf) == 8 * n, "drcov: %zu bbs in %zu bytes", n,
                   len - (size_t)(nl + 1 - buf));
    } else {
        /* lcov keeps a path's bytes from 0x80 up (genhtml must find the file); no view writes a control byte. */
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)buf[i];
            fuzz_check((c >= 0x20 && c <= 0x7e) || c == '\n' || c == '\t' || (t == &lcov_view && c >= 0x80),
                       "%s: byte 0x%02x at %zu", t->name, c, i);
        }
        fuzz_check(!len || buf[len - 1] == '\n', "%s: no newline at the end", t->name);
    }
    if (t == &chrome_view)
        fuzz_check(count(buf, len, "\"ph\":\"B\"") == count(buf, len, "\"ph\":\"E\""),
                   "chrome: B and E do not pair");
    free(buf);
}

static void add_event(const struct vbts_event *ev)
{
    if (nevents < MAX_EVENTS)
        events[nevents++] = *ev;
}

/* Raw bytes as records the reader would refuse: any cpu, seq and kind. */
static void raw_events(const uint8_t *p, size_t n, const struct vbts_symtab *syms)
{
    for (int k = 0; n >= 36 && k < 64; k++, p += 36, n -= 36) {
        struct vbts_event ev = { .rec = { vbts_le64(p), vbts_le64(p + 8), vbts_le64(p + 16) },
                                 .seq = vbts_le64(p + 24), .cpu = vbts_le16(p + 32) };
        ev.is_marker = vbts_record_is_marker(&ev.rec) != 0;
        if (ev.is_marker) {
            ev.qualifier = (uint8_t)vbts_marker_qual(&ev.rec);
            ev.aux = vbts_marker_aux(&ev.rec);
        } else {
            ev.kind = p[34];
        }
        check_both(&ev, syms);
        add_event(&ev);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!line && LLVMFuzzerInitialize(NULL, NULL) < 0)
        abort();
    if (size < 3)
        return 0;
    size_t maplen = vbts_le16(data + 1);
    if (maplen > size - 3)
        maplen = size - 3;
    const uint8_t *trace = data + 3 + maplen;
    size_t tlen = size - 3 - maplen;

    struct vbts_symtab *syms = NULL;
    char path[64];
    int fd = -1;
    if (data[0] & 1) {
        char err[256];
        fd = fuzz_file(data + 3, maplen, path, sizeof(path));
        if (fd >= 0)
            syms = vbts_symtab_load(path, err, sizeof(err));
    }
    struct vbts_reader *r = vbts_reader_new_mem(trace, tlen);
    struct vbts_event ev;
    nevents = 0;
    for (int k = 0; r && k < 4096 && vbts_reader_next(r, &ev) == 1; k++) {
        check_both(&ev, syms);
        add_event(&ev);
    }
    vbts_reader_free(r);
    raw_events(trace, tlen, syms);
    for (const char *const *name = (const char *const[]){ "calls", "folded", "chrome", "drcov", "lcov", NULL }; *name;
         name++)
        check_view(view_find(*name), syms, syms ? path : NULL);
    vbts_symtab_free(syms);
    if (fd >= 0)
        close(fd);
    return 0;
}
