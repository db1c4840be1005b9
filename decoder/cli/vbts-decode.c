/* SPDX-License-Identifier: MIT */
/*
 * vbts-decode: print a vbts trace stream as text (one line per record, like
 * perf script) or as JSON lines (format.c), or a view of the whole trace
 * for other tools (view/).  Every valid record is printed (or seen) before
 * a format error is reported, so a trace cut short still shows what it
 * holds.
 *
 * Lines go into one large buffer, written when it fills: one write(2) per
 * line would dominate.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbts/client.h>
#include <vbts/decode.h>
#include <vbts/symbols.h>

#include "format.h"
#include "view/view.h"

#define OUT_SIZE  (256 * 1024)

static const char usage[] =
    "Usage: vbts-decode [--format FMT] [--symbols FILE] [--compress]\n"
    "                   FILE|-|unix:PATH|tcp:HOST:PORT\n"
    "Print the branch records of a vbts trace (FILE, - for stdin, or the live\n"
    "trace socket of a running vbts: see vbts-ctl for its other commands).\n"
    "A trace written compressed (a .zst file, zstd frames) is read as it is.\n"
    "\n"
    "  -f, --format=FMT  text (default): one line per record, like perf script\n"
    "                    json: one JSON object per line\n"
    "                    calls: the call history per vCPU, indented by depth,\n"
    "                      like gdb's record function-call-history /c\n"
    "                    folded: stacks and branch counts for flamegraph.pl\n"
    "                    chrome: Chrome trace / Perfetto JSON (B/E per vCPU;\n"
    "                      the record index stands in for time)\n"
    "                    drcov: drcov 2 basic-block coverage (Lighthouse)\n"
    "                    lcov: the source lines run, for genhtml, from the\n"
    "                      DWARF of the --symbols ELF\n"
    "  -s, --symbols=MAP symbols for addresses: System.map, /proc/kallsyms\n"
    "                    text, or an ELF file (vmlinux; with DWARF for lcov)\n"
    "  -z, --compress    a socket: ask the monitor to send the trace as zstd\n"
    "                    frames (less to carry over a network)\n"
    "  -h, --help        print this help and exit\n"
    "  -V, --version     print the version and exit\n"
    "\n"
    "calls, folded and chrome nest by branch kind, so they need a trace with\n"
    "kinds (vbts writes them; real BTS hardware does not).\n"
    "\n"
    "Exit status: 0 on success, 1 if the trace is unreadable, truncated,\n"
    "corrupt or incomplete (a vCPU without its stop marker), after printing\n"
    "every valid record; 2 on a usage error.\n";

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

static struct vbts_symtab *symtab;
static const char *symfile;
static uint32_t hello_options;  /* --compress: VBTS_HELLO_ZSTD */

static void emit(const struct vbts_event *ev, enum format_kind kind)
{
    if (OUT_SIZE - out_len < FORMAT_LINE_MAX)
        flush_out();
    out_len += format_event(out + out_len, ev, kind, symtab);
}

/*
 * A writer ends every vCPU's records with a stop marker (docs/format.md):
 * a vCPU that has records but no stop was cut short, as is a stream with
 * no stop marker at all, since a monitor killed before it wrote its first
 * chunk leaves a header alone.  Per vCPU: 1 records seen, 2 stop seen.
 */
static uint8_t cpu_state[65536];
static int any_stop;
static int early_cpu = -1;   /* the first vCPU whose stop marker says the trace ended early */
static unsigned early_reason;

static void note_stop(const struct vbts_event *ev)
{
    if (ev->is_marker && ev->qualifier == VBTS_MARK_STOP) {
        cpu_state[ev->cpu] = 2;
        any_stop = 1;
        if ((ev->aux == VBTS_STOP_DESYNC || ev->aux == VBTS_STOP_UNSUPPORTED || ev->aux == VBTS_STOP_ERROR) &&
            early_cpu < 0) {
            early_cpu = ev->cpu;
            early_reason = ev->aux;
        }
    } else if (!cpu_state[ev->cpu]) {
        cpu_state[ev->cpu] = 1;
    }
}

static int incomplete(void)
{
    if (!any_stop)
        return 1;
    for (size_t i = 0; i < sizeof(cpu_state); i++)
        if (cpu_state[i] == 1)
            return 1;
    return 0;
}

/* What ends every run: the read's and the write's errors, and completeness. */
static int report_end(struct vbts_reader *r, const char *path, int rc, const char *read_err)
{
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
    } else if (rc == 0 && !out_err && incomplete()) {
        fprintf(stderr, "vbts-decode: %s: trace incomplete: no stop marker\n", path);
        status = 1;
    } else if (rc == 0 && !out_err && early_cpu >= 0) {
        const char *where = early_reason == VBTS_STOP_DESYNC ? "the monitor lost its step synchronisation"
                            : early_reason == VBTS_STOP_UNSUPPORTED ? "the host could not run the guest on"
                            : "the monitor failed";
        fprintf(stderr, "vbts-decode: %s: trace incomplete: vCPU %d stopped where %s (stop %s); what the "
                "guest ran after is not in the trace\n", path, early_cpu, where, vbts_stop_reason_name(early_reason));
        status = 1;
    }
    return status;
}

static void close_input(struct vbts_reader *r, struct vbts_client *client, int fd)
{
    vbts_reader_free(r);
    if (client)
        vbts_client_close(client);
    else if (fd != STDIN_FILENO)
        close(fd);
}

/*
 * A view sees every record, then prints what it has, also of a trace that
 * ends in an error: what was read is still shown.  Output goes through
 * stdio, since a view writes at its own pace.
 */
static int run_view(const struct view_type *t, struct vbts_reader *r, const char *path,
                    struct vbts_client *client, int fd)
{
    struct vbts_file_header hdr;
    int rc = vbts_reader_header(r, &hdr);
    if (rc == 0 && t->needs_kinds && !(hdr.flags & VBTS_FILE_F_KIND)) {
        fprintf(stderr, "vbts-decode: %s: --format %s needs branch kinds, and this trace has none "
                "(as from BTS hardware)\n", path, t->name);
        close_input(r, client, fd);
        return 1;
    }
    static char buf[OUT_SIZE];
    setvbuf(stdout, buf, _IOFBF, sizeof(buf));
    char err[512];
    void *v = rc == 0 ? t->new(stdout, symtab, symfile, err, sizeof(err)) : NULL;
    if (rc == 0 && !v) {
        fprintf(stderr, "vbts-decode: %s\n", err);
        close_input(r, client, fd);
        return 1;
    }
    struct vbts_event ev;
    while (v && (rc = vbts_reader_next(r, &ev)) > 0) {
        note_stop(&ev);
        if (t->event(v, &ev) < 0) {
            fputs("vbts-decode: out of memory\n", stderr);
            t->free(v);
            close_input(r, client, fd);
            return 1;
        }
    }
    const char *read_err = rc == VBTS_ERR_IO ? strerror(errno) : NULL;
    int mem = v && t->finish(v) < 0;
    if (v)
        t->free(v);
    errno = 0;
    if (fflush(stdout) || ferror(stdout))
        out_err = strerror(errno ? errno : EIO);
    int status = report_end(r, path, rc, read_err);
    if (mem) {
        fputs("vbts-decode: out of memory\n", stderr);
        status = 1;
    }
    close_input(r, client, fd);
    return status;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("vbts-decode: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (see --help)\n", stderr);
    return 2;
}

/* --symbols FILE: the table loaded (a later one replaces it); 0, or 1 if it cannot be. */
static int load_symbols(const char *file)
{
    char err[512];
    vbts_symtab_free(symtab);
    symfile = file;
    symtab = vbts_symtab_load(file, err, sizeof(err));
    if (!symtab) {
        fprintf(stderr, "vbts-decode: %s\n", err);
        return 1;
    }
    return 0;
}

/* The command line into *format and *path: -1 to go on, or the status to exit with. */
static int parse_args(int argc, char **argv, const char **format, const char **path)
{
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!opts || a[0] != '-' || !a[1]) {
            if (*path)
                return usage_error("extra operand '%s'", a);
            *path = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            opts = 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return fflush(stdout) ? 1 : 0;
        } else if (!strcmp(a, "-z") || !strcmp(a, "--compress")) {
            hello_options |= VBTS_HELLO_ZSTD;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("vbts-decode %s (trace format %d.%d)\n", VBTS_DECODE_VERSION,
                   VBTS_VERSION_MAJOR, VBTS_VERSION_MINOR);
            return fflush(stdout) ? 1 : 0;
        } else if (!strncmp(a, "--format=", 9) || (!strncmp(a, "-f", 2) && a[2])) {
            val = a + (a[1] == '-' ? 9 : 2);
        } else if (!strcmp(a, "-f") || !strcmp(a, "--format") || !strcmp(a, "-s") ||
                   !strcmp(a, "--symbols") || !strncmp(a, "--symbols=", 10)) {
            bool sym = a[1] == 's' || a[2] == 's';
            const char *v = !strncmp(a, "--symbols=", 10) ? a + 10 : NULL;
            if (!v && i + 1 >= argc)
                return usage_error("option '%s' needs an argument", a);
            v = v ? v : argv[++i];
            if (sym && load_symbols(v))
                return 1;
            val = sym ? NULL : v;
        } else {
            return usage_error("unknown option '%s'", a);
        }
        if (val && strcmp(val, "text") && strcmp(val, "json") && !view_find(val)) {
            fprintf(stderr, "vbts-decode: unknown format '%s', expected text, json, %s (see --help)\n",
                    val, view_names());
            return 2;
        }
        *format = val ? val : *format;
    }
    return -1;
}

/* FILE, -, or a monitor's socket (HELLO, STREAM, then the trace): the descriptor, or -1 (said). */
static int open_input(const char *path, struct vbts_client **client)
{
    if (vbts_is_socket_addr(path)) {
        char err[512];
        struct vbts_item it;
        *client = vbts_client_open_opts(path, hello_options, err, sizeof(err));
        if (!*client ||
            vbts_client_call(*client, VBTS_MSG_STREAM, (const uint8_t[VBTS_STREAM_REQ_SIZE]){ 0 },
                             VBTS_STREAM_REQ_SIZE, &it, err, sizeof(err), NULL, NULL) < 0) {
            fprintf(stderr, "vbts-decode: %s\n", err);
            vbts_client_close(*client);
            *client = NULL;
            return -1;
        }
        return vbts_client_fd(*client);
    }
    if (!strcmp(path, "-"))
        return STDIN_FILENO;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fprintf(stderr, "vbts-decode: %s: %s\n", path, strerror(errno));
    return fd;
}

/* Every record as a line (text or JSON); the run's status. */
static int decode_lines(struct vbts_reader *r, const char *path, const char *format,
                        struct vbts_client *client, int fd)
{
    enum format_kind kind = format[0] == 'j' ? FORMAT_JSON : FORMAT_TEXT;
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
        note_stop(&ev);
        emit(&ev, kind);
    }
    const char *read_err = rc == VBTS_ERR_IO ? strerror(errno) : NULL;
    flush_out();
    int status = report_end(r, path, rc, read_err);
    close_input(r, client, fd);
    return status;
}

int main(int argc, char **argv)
{
    const char *format = "text", *path = NULL;
    int st = parse_args(argc, argv, &format, &path);
    if (st >= 0)
        return st;
    if (!path)
        return usage_error("%s", "missing FILE operand");
    if (hello_options && !vbts_is_socket_addr(path))
        return usage_error("--compress is for a monitor's socket (unix:PATH or tcp:HOST:PORT), "
                           "not '%s': a file is read compressed or not as it is", path);
    const struct view_type *view = view_find(format);
    if (view == &lcov_view && !symfile)
        return usage_error("%s", "--format lcov needs --symbols ELF, an ELF file with DWARF (built with -g)");
    if (view == &drcov_view && isatty(STDOUT_FILENO))
        return usage_error("%s", "--format drcov writes binary data: redirect standard output to a file");
    struct vbts_client *client = NULL;
    int fd = open_input(path, &client);
    if (fd < 0)
        return 1;
    struct vbts_reader *r = vbts_reader_new(fd);
    if (!r) {
        fprintf(stderr, "vbts-decode: %s\n", strerror(errno));
        return 1;
    }
    if (view)
        return run_view(view, r, path, client, fd);
    return decode_lines(r, path, format, client, fd);
}
