/* SPDX-License-Identifier: MIT */
/*
 * vbts-ctl: talk to a running vbts over its trace socket (docs/protocol.md):
 * buffer status and configuration, single records, clear, drain, stream,
 * and buffer-full notifications.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbts/client.h>
#include <vbts/decode.h>
#include <vbts/dest.h>

static const char usage[] =
    "Usage: vbts-ctl [--format text|json] ADDR COMMAND [ARGS]\n"
    "Control the trace buffers of a running vbts (--trace unix:PATH or tcp:HOST:PORT).\n"
    "\n"
    "Commands:\n"
    "  status                  buffer state of every vCPU\n"
    "  config [--buffer-size BYTES] [--overflow block|wrap|drop]\n"
    "         [--trace on|off] [--ctx-markers on|off]\n"
    "                          change the buffers; prints the configuration\n"
    "  size [CPU]              records in the buffer (all vCPUs without CPU)\n"
    "  get INDEX [CPU]         one record, 0 = the newest (vCPU 0 without CPU)\n"
    "  clear [CPU]             empty the buffer; prints how many records went\n"
    "  drain [CPU] [-o FILE]   all buffered records, oldest first, as a trace\n"
    "                          (to FILE or a pipe), then clear\n"
    "  stream [-o FILE] [--compress]\n"
    "                          the live trace, until the guest ends; with\n"
    "                          --compress, sent and written as zstd frames\n"
    "                          (a .zst trace: vbts-decode and zstd -d read it)\n"
    "  watch [-n COUNT]        print a line each time a buffer becomes full\n"
    "\n"
    "  -f, --format=FMT  text (default) or json, for status and get\n"
    "  -h, --help        print this help and exit\n"
    "\n"
    "Exit status: 0 success, 1 the monitor refused or the connection failed,\n"
    "2 usage error.\n";

static const char *addr;
static int json;

static int usage_error(const char *fmt, const char *arg)
{
    fputs("vbts-ctl: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (see --help)\n", stderr);
    return 2;
}

static int fail(const char *msg)
{
    fprintf(stderr, "vbts-ctl: %s: %s\n", addr, msg);
    return 1;
}

static int parse_num(const char *s, uint64_t *v)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

static int parse_size(const char *s, uint64_t *v)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift)
        end++;
    if (errno || end == s || *end || (shift && x > (~0ull >> shift)))
        return -1;
    *v = (uint64_t)x << shift;
    return 0;
}

static const char *const modes[] = { "block", "wrap", "drop" };

static const char *mode_name(uint32_t m)
{
    return m < 3 ? modes[m] : "?";
}

static void print_flags(uint32_t f)
{
    printf("trace %s\nctx-markers %s\n", f & VBTS_CFG_TRACE_ON ? "on" : "off",
           f & VBTS_CFG_CTX_MARKERS ? "on" : "off");
}

static int cmd_status(struct vbts_client *c, uint32_t *flags_out)
{
    struct vbts_item it;
    char err[512];
    if (vbts_client_call(c, VBTS_MSG_STATUS, NULL, 0, &it, err, sizeof(err), NULL, NULL) < 0)
        return fail(err);
    const uint8_t *p = it.payload;
    uint32_t ncpus = it.length >= VBTS_STATUS_REPLY_HEAD ? vbts_le32(p + 4) : 0;
    if (it.length < VBTS_STATUS_REPLY_HEAD ||
        (it.length - VBTS_STATUS_REPLY_HEAD) / VBTS_STATUS_REPLY_CPU < ncpus)
        return fail("short STATUS reply");
    uint32_t flags = vbts_le32(p + 12);
    if (flags_out) {
        *flags_out = flags;
        return 0;
    }
    if (json) {
        printf("{\"state\":\"%s\",\"overflow\":\"%s\",\"trace\":%s,\"ctx_markers\":%s,"
               "\"clients\":%u,\"buffer_size\":%" PRIu64 ",\"buffer_limit\":%" PRIu64 ",\"cpus\":[",
               vbts_le32(p + 16) ? "ended" : "running", mode_name(vbts_le32(p + 8)),
               flags & VBTS_CFG_TRACE_ON ? "true" : "false",
               flags & VBTS_CFG_CTX_MARKERS ? "true" : "false", vbts_le32(p + 20),
               vbts_le64(p + 24), vbts_le64(p + 32));
    } else {
        printf("state %s\noverflow %s\n", vbts_le32(p + 16) ? "ended" : "running",
               mode_name(vbts_le32(p + 8)));
        print_flags(flags);
        printf("clients %u\nbuffer-size %" PRIu64 "\nbuffer-limit %" PRIu64 "\n",
               vbts_le32(p + 20), vbts_le64(p + 24), vbts_le64(p + 32));
    }
    for (uint32_t i = 0; i < ncpus; i++) {
        const uint8_t *q = p + VBTS_STATUS_REPLY_HEAD + (size_t)i * VBTS_STATUS_REPLY_CPU;
        printf(json ? "%s{\"cpu\":%u,\"size\":%" PRIu64 ",\"capacity\":%" PRIu64
                      ",\"head\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"overwritten\":%" PRIu64
                      ",\"cleared\":%" PRIu64 ",\"full\":%u,\"stopped\":%u}"
                    : "%scpu %u size %" PRIu64 " capacity %" PRIu64 " head %" PRIu64
                      " dropped %" PRIu64 " overwritten %" PRIu64 " cleared %" PRIu64
                      " full %u stopped %u\n",
               json && i ? "," : "", i, vbts_le64(q), vbts_le64(q + 8), vbts_le64(q + 16),
               vbts_le64(q + 24), vbts_le64(q + 32), vbts_le64(q + 40), vbts_le32(q + 48),
               vbts_le32(q + 52));
    }
    if (json)
        printf("]}\n");
    return 0;
}

static int cmd_config(struct vbts_client *c, int argc, char **argv)
{
    uint8_t p[VBTS_CONFIG_REQ_SIZE] = { 0 };
    uint32_t mask = 0, flags = 0, overflow = 0, set_on = 0, set_off = 0;
    uint64_t size = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage_error("config: '%s' needs a value", a);
        i++;
        if (!strcmp(a, "--buffer-size")) {
            if (parse_size(v, &size) < 0)
                return usage_error("config: bad size '%s'", v);
            mask |= VBTS_CONFIG_BUFFER_SIZE;
        } else if (!strcmp(a, "--overflow")) {
            for (overflow = 0; overflow < 3 && strcmp(v, modes[overflow]); overflow++)
                ;
            if (overflow == 3)
                return usage_error("config: '%s' is not block, wrap or drop", v);
            mask |= VBTS_CONFIG_OVERFLOW;
        } else if (!strcmp(a, "--trace") || !strcmp(a, "--ctx-markers")) {
            uint32_t bit = a[2] == 't' ? VBTS_CFG_TRACE_ON : VBTS_CFG_CTX_MARKERS;
            if (!strcmp(v, "on"))
                set_on |= bit;
            else if (!strcmp(v, "off"))
                set_off |= bit;
            else
                return usage_error("config: '%s' is not on or off", v);
            mask |= VBTS_CONFIG_FLAGS;
        } else {
            return usage_error("config: unknown option '%s'", a);
        }
    }
    if (mask & VBTS_CONFIG_FLAGS) {
        int r = cmd_status(c, &flags);
        if (r)
            return r;
        flags = (flags | set_on) & ~set_off;
    }
    vbts_put32(p, mask);
    vbts_put32(p + 4, flags);
    vbts_put32(p + 8, overflow);
    vbts_put64(p + 16, size);
    struct vbts_item it;
    char err[512];
    if (vbts_client_call(c, VBTS_MSG_CONFIG, p, sizeof(p), &it, err, sizeof(err), NULL, NULL) < 0)
        return fail(err);
    if (it.length < VBTS_CONFIG_REPLY_SIZE)
        return fail("short CONFIG reply");
    printf("overflow %s\nbuffer-size %" PRIu64 "\n", mode_name(vbts_le32(it.payload + 8)),
           vbts_le64(it.payload + 16));
    print_flags(vbts_le32(it.payload + 4));
    return 0;
}

static int cpu_arg(int argc, char **argv, int i, uint16_t *cpu, uint16_t dflt)
{
    uint64_t v;
    *cpu = dflt;
    if (i >= argc)
        return 0;
    if (parse_num(argv[i], &v) < 0 || v >= VBTS_PROTO_ALL_CPUS)
        return -1;
    *cpu = (uint16_t)v;
    return 0;
}

static int cmd_count(struct vbts_client *c, uint16_t type, uint16_t cpu)
{
    uint8_t p[VBTS_CPU_REQ_SIZE] = { 0 };
    vbts_put16(p, cpu);
    struct vbts_item it;
    char err[512];
    if (vbts_client_call(c, type, p, sizeof(p), &it, err, sizeof(err), NULL, NULL) < 0)
        return fail(err);
    if (it.length < VBTS_COUNT_REPLY_SIZE)
        return fail("short reply");
    printf("%" PRIu64 "\n", vbts_le64(it.payload + 4));
    return 0;
}

static void print_record(uint16_t cpu, uint64_t seq, const struct vbts_record *r, uint32_t fflags)
{
    if (vbts_record_is_marker(r)) {
        unsigned q = vbts_marker_qual(r);
        const char *name = vbts_marker_name(q);
        if (json)
            printf("{\"cpu\":%u,\"seq\":%" PRIu64 ",\"kind\":\"%s%s\",\"to\":\"0x%" PRIx64
                   "\",\"aux\":%" PRIu64 "}\n", cpu, seq, name ? "" : "marker-",
                   name ? name : "", r->to, vbts_marker_aux(r));
        else
            printf("%3u  -- %s to=0x%" PRIx64 " aux=%" PRIu64 "\n", cpu, name ? name : "marker",
                   r->to, vbts_marker_aux(r));
        return;
    }
    unsigned k = (fflags & VBTS_FILE_F_KIND) ? vbts_record_kind(r) : 0;
    const char *name = vbts_kind_name(k);
    char kb[16];
    if (!name) {
        snprintf(kb, sizeof(kb), "kind-%u", k);
        name = kb;
    }
    if (json)
        printf("{\"cpu\":%u,\"seq\":%" PRIu64 ",\"from\":\"0x%" PRIx64 "\",\"to\":\"0x%" PRIx64
               "\",\"kind\":\"%s\"}\n", cpu, seq, r->from, r->to, name);
    else
        printf("%3u  0x%016" PRIx64 " -> 0x%016" PRIx64 "  %s\n", cpu, r->from, r->to, name);
}

static int cmd_get(struct vbts_client *c, uint64_t index, uint16_t cpu)
{
    uint8_t p[VBTS_GET_REQ_SIZE] = { 0 };
    vbts_put16(p, cpu);
    vbts_put64(p + 8, index);
    struct vbts_item it;
    char err[512];
    if (vbts_client_call(c, VBTS_MSG_GET, p, sizeof(p), &it, err, sizeof(err), NULL, NULL) < 0)
        return fail(err);
    if (it.length < VBTS_GET_REPLY_SIZE)
        return fail("short GET reply");
    struct vbts_record r = { vbts_le64(it.payload + 16), vbts_le64(it.payload + 24),
                             vbts_le64(it.payload + 32) };
    print_record(vbts_le16(it.payload + 4), vbts_le64(it.payload + 8), &r,
                 vbts_client_file_flags(c));
    return 0;
}

struct sink {
    int fd;
    uint64_t records;
    const char *err;
};

static int put(struct sink *s, const void *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(s->fd, (const char *)p + done, n - done);
        if (w > 0) {
            done += (size_t)w;
        } else if (w < 0 && errno != EINTR) {
            s->err = strerror(errno);
            return -1;
        }
    }
    return 0;
}

static int on_chunk(void *ctx, const struct vbts_item *it)
{
    struct sink *s = ctx;
    if (it->kind != VBTS_ITEM_CHUNK)
        return 0;       /* a notification: not part of the trace */
    uint8_t h[24];
    vbts_encode_chunk_header(h, it->chunk.cpu, it->chunk.count, it->chunk.seq);
    s->records += it->chunk.count;
    if (put(s, h, sizeof(h)) < 0 || put(s, it->records, (size_t)it->chunk.count * 24) < 0)
        return -1;
    return 0;
}

static int open_out(const char *path, struct sink *s)
{
    s->fd = STDOUT_FILENO;
    if (path) {
        /* Private like the monitor's trace files, and never through a link. */
        s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (s->fd < 0) {
            fprintf(stderr, "vbts-ctl: %s: %s\n", path,
                    errno == ELOOP ? "is a symbolic link" : strerror(errno));
            return 1;
        }
    } else if (isatty(STDOUT_FILENO)) {
        fputs("vbts-ctl: not writing a binary trace to a terminal: use -o FILE or a pipe\n",
              stderr);
        return 1;
    }
    return 0;
}

static int cmd_drain(struct vbts_client *c, uint16_t cpu, const char *path)
{
    struct sink s = { 0 };
    int r = open_out(path, &s);
    if (r)
        return r;
    uint8_t fh[32];
    vbts_encode_file_header(fh, vbts_client_file_flags(c), vbts_client_ncpus(c));
    uint8_t p[VBTS_CPU_REQ_SIZE] = { 0 };
    vbts_put16(p, cpu);
    struct vbts_item it;
    char err[512];
    r = put(&s, fh, sizeof(fh));
    if (r == 0 && vbts_client_call(c, VBTS_MSG_DRAIN, p, sizeof(p), &it, err, sizeof(err),
                                   on_chunk, &s) < 0)
        r = fail(s.err ? s.err : err);
    else if (r < 0)
        r = fail(s.err);
    if (path && close(s.fd) < 0 && r == 0)
        r = fail(strerror(errno));
    if (r == 0)
        fprintf(stderr, "vbts-ctl: drained %" PRIu64 " records\n",
                it.length >= VBTS_COUNT_REPLY_SIZE ? vbts_le64(it.payload + 4) : 0);
    return r;
}

static int cmd_stream(struct vbts_client *c, const char *path)
{
    struct sink s = { 0 };
    int r = open_out(path, &s);
    if (r)
        return r;
    struct vbts_item it;
    char err[512];
    if (vbts_client_call(c, VBTS_MSG_STREAM, (const uint8_t[VBTS_STREAM_REQ_SIZE]){ 0 },
                         VBTS_STREAM_REQ_SIZE, &it, err, sizeof(err), NULL, NULL) < 0)
        return fail(err);
    /* The socket now carries the trace stream: copy it as is. */
    char buf[65536];
    for (;;) {
        ssize_t n = read(vbts_client_fd(c), buf, sizeof(buf));
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fail(strerror(errno));
        }
        if (put(&s, buf, (size_t)n) < 0)
            return fail(s.err);
    }
    if (path && close(s.fd) < 0)
        return fail(strerror(errno));
    return 0;
}

static int cmd_watch(struct vbts_client *c, uint64_t count)
{
    uint8_t p[VBTS_NOTIFY_REQ_SIZE] = { 0 };
    vbts_put32(p, 1);
    struct vbts_item it;
    char err[512];
    if (vbts_client_call(c, VBTS_MSG_NOTIFY, p, sizeof(p), &it, err, sizeof(err), NULL, NULL) < 0)
        return fail(err);
    fflush(stdout);
    for (uint64_t seen = 0; !count || seen < count;) {
        int r = vbts_client_read(c, &it, err, sizeof(err));
        if (r == 0)
            return 0;   /* the monitor ended */
        if (r < 0)
            return fail(err);
        if (it.kind != VBTS_ITEM_MSG || it.type != VBTS_MSG_FULL || it.length < VBTS_FULL_NOTE_SIZE)
            continue;
        const uint8_t *q = it.payload;
        if (json)
            printf("{\"event\":\"full\",\"cpu\":%u,\"records\":%" PRIu64 ",\"capacity\":%" PRIu64
                   ",\"overflow\":\"%s\"}\n", vbts_le16(q), vbts_le64(q + 8),
                   vbts_le64(q + 16), mode_name(vbts_le32(q + 4)));
        else
            printf("full cpu %u records %" PRIu64 " capacity %" PRIu64 " overflow %s\n",
                   vbts_le16(q), vbts_le64(q + 8), vbts_le64(q + 16), mode_name(vbts_le32(q + 4)));
        fflush(stdout);
        seen++;
    }
    return 0;
}

/* What one command needs, from its arguments: checked before the monitor is touched. */
struct command {
    const char *name;
    int nrest;
    char **rest;
    const char *out_path;   /* drain, stream: -o FILE */
    uint32_t options;       /* stream --compress: HELLO's VBTS_HELLO_ZSTD */
    uint64_t num;           /* get: INDEX; watch: -n COUNT */
    uint16_t cpu;
};

/* The command's operands into *c; -1 to go on, or the status to exit with. */
static int parse_command(struct command *c)
{
    static const char *const cmds[] = { "status", "config", "size", "get", "clear",
                                        "drain", "stream", "watch" };
    const char *cmd = c->name;
    bool known = false;
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
        known |= !strcmp(cmd, cmds[k]);
    if (!known)
        return usage_error("unknown command '%s'", cmd);
    for (int j = 0; j < c->nrest && strcmp(cmd, "stream"); j++)
        if (!strcmp(c->rest[j], "--compress") || !strcmp(c->rest[j], "-z"))
            return usage_error("%s: --compress is for stream", cmd);
    if (!strcmp(cmd, "drain") || !strcmp(cmd, "stream") || !strcmp(cmd, "watch")) {
        int k = 0;
        for (int j = 0; j < c->nrest; j++) {
            if (!strcmp(c->rest[j], "-o") && j + 1 < c->nrest && cmd[0] != 'w')
                c->out_path = c->rest[++j];
            else if ((!strcmp(c->rest[j], "--compress") || !strcmp(c->rest[j], "-z")) &&
                     cmd[0] == 's')
                c->options |= VBTS_HELLO_ZSTD;
            else if (!strcmp(c->rest[j], "-n") && j + 1 < c->nrest && cmd[0] == 'w') {
                if (parse_num(c->rest[++j], &c->num) < 0)
                    return usage_error("watch: bad count '%s'", c->rest[j]);
            } else
                c->rest[k++] = c->rest[j];
        }
        c->nrest = k;
    }
    int max_args = 0;
    if (!strcmp(cmd, "size") || !strcmp(cmd, "clear") || !strcmp(cmd, "drain")) {
        if (cpu_arg(c->nrest, c->rest, 0, &c->cpu, VBTS_PROTO_ALL_CPUS) < 0)
            return usage_error("bad CPU '%s'", c->rest[0]);
        max_args = 1;
    } else if (!strcmp(cmd, "get")) {
        if (c->nrest < 1 || parse_num(c->rest[0], &c->num) < 0)
            return usage_error("get: INDEX must be a number%s", "");
        if (cpu_arg(c->nrest, c->rest, 1, &c->cpu, 0) < 0)
            return usage_error("bad CPU '%s'", c->rest[1]);
        max_args = 2;
    } else if (!strcmp(cmd, "config")) {
        max_args = c->nrest;
    }
    if (c->nrest > max_args)
        return usage_error("extra operand '%s'", c->rest[max_args]);
    return -1;
}

/* The command run on a connection; its status. */
static int run_command(struct vbts_client *cl, const struct command *c)
{
    const char *cmd = c->name;
    if (!strcmp(cmd, "status"))
        return cmd_status(cl, NULL);
    if (!strcmp(cmd, "config"))
        return cmd_config(cl, c->nrest, c->rest);
    if (!strcmp(cmd, "size"))
        return cmd_count(cl, VBTS_MSG_SIZE, c->cpu);
    if (!strcmp(cmd, "clear"))
        return cmd_count(cl, VBTS_MSG_CLEAR, c->cpu);
    if (!strcmp(cmd, "get"))
        return cmd_get(cl, c->num, c->cpu);
    if (!strcmp(cmd, "drain"))
        return cmd_drain(cl, c->cpu, c->out_path);
    if (!strcmp(cmd, "stream"))
        return cmd_stream(cl, c->out_path);
    return cmd_watch(cl, c->num);
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        const char *v = NULL;
        if (!strncmp(a, "--format=", 9))
            v = a + 9;
        else if ((!strcmp(a, "-f") || !strcmp(a, "--format")) && i + 1 < argc)
            v = argv[++i];
        else
            return usage_error("unknown option '%s'", a);
        if (strcmp(v, "text") && strcmp(v, "json"))
            return usage_error("unknown format '%s', expected text or json", v);
        json = v[0] == 'j';
    }
    if (i + 2 > argc)
        return usage_error("%s", i < argc ? "missing COMMAND" : "missing ADDR and COMMAND");
    addr = argv[i++];
    struct command c = { .name = argv[i++], .rest = argv + i, .nrest = argc - i };
    if (!vbts_is_socket_addr(addr))
        return usage_error("'%s' is not unix:PATH or tcp:HOST:PORT", addr);
    struct vbts_dest dest;
    char derr[320];
    if (vbts_dest_parse(addr, &dest, derr, sizeof(derr)) < 0)
        return usage_error("%s", derr);
    /* Arguments first, so that a usage error does not touch the monitor. */
    int st = parse_command(&c);
    if (st >= 0)
        return st;
    char err[512];
    struct vbts_client *cl = vbts_client_open_opts(addr, c.options, err, sizeof(err));
    if (!cl) {
        fprintf(stderr, "vbts-ctl: %s\n", err);
        return 1;
    }
    int r = run_command(cl, &c);
    vbts_client_close(cl);
    if (fflush(stdout) && r == 0)
        r = 1;
    return r;
}
