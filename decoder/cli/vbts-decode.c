/* SPDX-License-Identifier: MIT */
/*
 * vbts-decode: print a vbts trace stream as text (one line per record, like
 * perf script) or as JSON lines.  Every valid record is printed before a
 * format error is reported, so a trace cut short still shows what it holds.
 *
 * Records are formatted by hand into one large buffer: traces run to
 * hundreds of millions of records, and printf per line would dominate.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vbts/client.h>
#include <vbts/decode.h>
#include <vbts/symbols.h>

#define OUT_SIZE  (256 * 1024)
#define LINE_MAX_ 1024  /* longer than any line we format (symbols are cut at SYM_MAX) */
#define SYM_MAX   400

static const char usage[] =
    "Usage: vbts-decode [--format text|json] [--symbols FILE] FILE|-|unix:PATH|tcp:HOST:PORT\n"
    "Print the branch records of a vbts trace (FILE, - for stdin, or the live\n"
    "trace socket of a running vbts: see vbts-ctl for its other commands).\n"
    "\n"
    "  -f, --format=FMT  text (default): one line per record, like perf script\n"
    "                    json: one JSON object per line\n"
    "  -s, --symbols=MAP symbols for from/to as func+0xoff: System.map,\n"
    "                    /proc/kallsyms text, or an ELF file (vmlinux)\n"
    "  -h, --help        print this help and exit\n"
    "  -V, --version     print the version and exit\n"
    "\n"
    "Exit status: 0 on success, 1 if the trace is unreadable, truncated or\n"
    "corrupt (after printing every valid record), 2 on a usage error.\n";

static char out[OUT_SIZE];
static size_t out_len;
static const char *out_err;  /* strerror of a failed write, reported once */

static void flush_out(void)
{
    size_t done = 0;
    while (done < out_len && !out_err) {
        ssize_t n = write(STDOUT_FILENO, out + done, out_len - done);
        if (n > 0)
            done += (size_t)n;
        else if (n < 0 && errno != EINTR)
            out_err = strerror(errno);
    }
    out_len = 0;
}

/* Room for one formatted line; the caller advances out_len. */
static char *line(void)
{
    if (OUT_SIZE - out_len < LINE_MAX_)
        flush_out();
    return out + out_len;
}

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

static struct vbts_symtab *symtab;

/*
 * name+0xoff; for JSON, quotes and backslashes escaped, controls made '?'.
 * At most SYM_MAX bytes *written*: escaping doubles a name, and two of them
 * must fit a line.
 */
static char *put_sym(char *p, uint64_t addr, int json)
{
    char buf[SYM_MAX + 32];
    vbts_symtab_format(symtab, addr, buf, sizeof(buf));
    char *end = p + SYM_MAX;
    for (const char *c = buf; *c && p < end; c++) {
        unsigned char ch = (unsigned char)*c;
        if (json && (ch == '"' || ch == '\\')) {
            if (end - p < 2)
                break;
            *p++ = '\\';
            *p++ = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            *p++ = '?';
        } else {
            *p++ = (char)ch;
        }
    }
    return p;
}

static void text_event(const struct vbts_event *ev)
{
    char *p = put_cpu(line(), ev->cpu);
    if (!ev->is_marker) {
        p = put_str(p, "0x");
        p = put_hex16(p, ev->rec.from);
        p = put_str(p, " -> 0x");
        p = put_hex16(p, ev->rec.to);
        p = put_str(p, "  ");
        p = put_name(p, vbts_kind_name(ev->kind), "kind-", ev->kind);
        if (symtab) {
            p = put_str(p, "  ");
            p = put_sym(p, ev->rec.from, 0);
            p = put_str(p, " -> ");
            p = put_sym(p, ev->rec.to, 0);
        }
    } else {
        p = put_str(p, "-- ");
        p = put_name(p, vbts_marker_name(ev->qualifier), "marker-", ev->qualifier);
        *p++ = ' ';
        switch (ev->qualifier) {
        case VBTS_MARK_START:
            p = put_time(p, ev->rec.to);
            break;
        case VBTS_MARK_STOP:
            p = put_name(p, vbts_stop_reason_name((unsigned)ev->aux), "reason-", (unsigned)ev->aux);
            *p++ = ' ';
            p = put_time(p, ev->rec.to);
            break;
        case VBTS_MARK_LOST:
            p = put_dec(p, ev->rec.to);
            break;
        case VBTS_MARK_CTX_ARRIVE:
        case VBTS_MARK_CTX_DEPART:
            p = put_str(p, "cr3=");
            p = put_hex(p, ev->rec.to);
            p = put_str(p, " t=+");
            p = put_dec(p, ev->aux);
            p = put_str(p, "ns");
            break;
        default:
            p = put_str(p, "to=");
            p = put_hex(p, ev->rec.to);
            p = put_str(p, " aux=");
            p = put_dec(p, ev->aux);
        }
    }
    *p++ = '\n';
    out_len = (size_t)(p - out);
}

static void json_event(const struct vbts_event *ev)
{
    char *p = put_str(line(), "{\"cpu\":");
    p = put_dec(p, ev->cpu);
    p = put_str(p, ",\"seq\":");
    p = put_dec(p, ev->seq);
    if (!ev->is_marker) {
        p = put_str(p, ",\"from\":\"");
        p = put_hex(p, ev->rec.from);
        p = put_str(p, "\",\"to\":\"");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, "\",\"kind\":\"");
        p = put_name(p, vbts_kind_name(ev->kind), "kind-", ev->kind);
        if (symtab) {
            p = put_str(p, "\",\"from_sym\":\"");
            p = put_sym(p, ev->rec.from, 1);
            p = put_str(p, "\",\"to_sym\":\"");
            p = put_sym(p, ev->rec.to, 1);
        }
        p = put_str(p, "\"}\n");
        out_len = (size_t)(p - out);
        return;
    }
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
        p = put_dec(p, ev->rec.to);
        break;
    case VBTS_MARK_LOST:
        p = put_str(p, ",\"lost\":");
        p = put_dec(p, ev->rec.to);
        break;
    case VBTS_MARK_CTX_ARRIVE:
    case VBTS_MARK_CTX_DEPART:
        p = put_str(p, ",\"cr3\":\"");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, "\",\"t_ns\":");
        p = put_dec(p, ev->aux);
        break;
    default:
        p = put_str(p, ",\"to\":\"");
        p = put_hex(p, ev->rec.to);
        p = put_str(p, "\",\"aux\":");
        p = put_dec(p, ev->aux);
    }
    p = put_str(p, "}\n");
    out_len = (size_t)(p - out);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("vbts-decode: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (see --help)\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *format = "text", *path = NULL;
    int opts = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!opts || a[0] != '-' || !a[1]) {
            if (path)
                return usage_error("extra operand '%s'", a);
            path = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            opts = 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return fflush(stdout) ? 1 : 0;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("vbts-decode %s (trace format %d.%d)\n", VBTS_DECODE_VERSION,
                   VBTS_VERSION_MAJOR, VBTS_VERSION_MINOR);
            return fflush(stdout) ? 1 : 0;
        } else if (!strncmp(a, "--format=", 9)) {
            val = a + 9;
        } else if (!strncmp(a, "-f", 2) && a[2]) {
            val = a + 2;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--format")) {
            if (i + 1 >= argc)
                return usage_error("option '%s' needs an argument", a);
            val = argv[++i];
        } else if (!strcmp(a, "-s") || !strcmp(a, "--symbols") || !strncmp(a, "--symbols=", 10)) {
            const char *file = a[1] == '-' && a[9] == '=' ? a + 10 : NULL;
            if (!file) {
                if (i + 1 >= argc)
                    return usage_error("option '%s' needs an argument", a);
                file = argv[++i];
            }
            char err[512];
            vbts_symtab_free(symtab);
            symtab = vbts_symtab_load(file, err, sizeof(err));
            if (!symtab) {
                fprintf(stderr, "vbts-decode: %s\n", err);
                return 1;
            }
        } else {
            return usage_error("unknown option '%s'", a);
        }
        if (val) {
            if (strcmp(val, "text") && strcmp(val, "json"))
                return usage_error("unknown format '%s', expected text or json", val);
            format = val;
        }
    }
    if (!path)
        return usage_error("%s", "missing FILE operand");

    int fd = STDIN_FILENO;
    struct vbts_client *client = NULL;
    if (vbts_is_socket_addr(path)) {
        /* A running monitor: HELLO, STREAM, then the socket carries the trace. */
        char err[512];
        struct vbts_item it;
        client = vbts_client_open(path, err, sizeof(err));
        if (!client ||
            vbts_client_call(client, VBTS_MSG_STREAM, (const uint8_t[VBTS_STREAM_REQ_SIZE]){ 0 },
                             VBTS_STREAM_REQ_SIZE, &it, err, sizeof(err), NULL, NULL) < 0) {
            fprintf(stderr, "vbts-decode: %s\n", err);
            vbts_client_close(client);
            return 1;
        }
        fd = vbts_client_fd(client);
    } else if (strcmp(path, "-")) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "vbts-decode: %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    struct vbts_reader *r = vbts_reader_new(fd);
    if (!r) {
        fprintf(stderr, "vbts-decode: %s\n", strerror(errno));
        return 1;
    }

    void (*emit)(const struct vbts_event *) = format[0] == 'j' ? json_event : text_event;
    struct vbts_event ev;
    int rc;
    for (;;) {
        /* Flush before next() may block, so a live pipe shows records as
         * they come; a file drains the reader's buffer only every 64 KiB. */
        if (vbts_reader_buffered(r) < 2 * VBTS_RECORD_SIZE)
            flush_out();
        rc = vbts_reader_next(r, &ev);
        if (rc <= 0 || out_err)
            break;
        emit(&ev);
    }
    const char *read_err = rc == VBTS_ERR_IO ? strerror(errno) : NULL;
    flush_out();

    int status = 0;
    if (out_err) {
        fprintf(stderr, "vbts-decode: write error: %s\n", out_err);
        status = 1;
    }
    if (read_err) {
        fprintf(stderr, "vbts-decode: %s: %s\n", path, read_err);
        status = 1;
    } else if (rc < 0) {
        fprintf(stderr, "vbts-decode: %s: %s at byte offset %" PRIu64 "\n", path,
                vbts_strerror(rc), vbts_reader_offset(r));
        status = 1;
    }
    vbts_reader_free(r);
    if (client)
        vbts_client_close(client);
    else if (fd != STDIN_FILENO)
        close(fd);
    return status;
}
