/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vbts/dest.h>

/* "SPEC: why", the spec cut to 80 characters so that the reason always fits. */
static int errf(char *err, size_t errlen, const char *spec, const char *fmt, ...)
{
    int n = snprintf(err, errlen, "%.80s%s: ", spec, strlen(spec) > 80 ? "..." : "");
    if (n < 0 || (size_t)n >= errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

enum vbts_dest_kind vbts_dest_kind(const char *spec)
{
    if (!strncmp(spec, "unix:", 5))
        return VBTS_DEST_UNIX;
    if (!strncmp(spec, "tcp:", 4))
        return VBTS_DEST_TCP;
    return VBTS_DEST_FILE;
}

static int parse_tcp(const char *spec, struct vbts_dest *d, char *err, size_t errlen)
{
    /* tcp:[HOST:]PORT[,control]: the address cut from its options. */
    char addr[sizeof(d->host) + 16];
    const char *comma = strchr(spec + 4, ',');
    size_t alen = comma ? (size_t)(comma - (spec + 4)) : strlen(spec + 4);
    if (alen >= sizeof(addr))
        return errf(err, errlen, spec, "host name too long");
    memcpy(addr, spec + 4, alen);
    addr[alen] = 0;
    if (comma) {
        if (strcmp(comma + 1, "control"))
            return errf(err, errlen, spec, "unknown option '%.16s' (tcp:[HOST:]PORT[,control])",
                        comma + 1);
        d->control = true;
    }
    const char *hp = addr, *colon = strrchr(hp, ':'), *port = hp;
    snprintf(d->host, sizeof(d->host), "127.0.0.1");
    if (colon) {
        size_t hl = (size_t)(colon - hp);
        if (hl >= sizeof(d->host))
            return errf(err, errlen, spec, "host name too long");
        if (hl >= 2 && hp[0] == '[' && hp[hl - 1] == ']') {
            hp++;
            hl -= 2;
        }
        if (hl) {
            memcpy(d->host, hp, hl);
            d->host[hl] = 0;
        }
        port = colon + 1;
    }
    char *end;
    errno = 0;
    unsigned long pn = strtoul(port, &end, 10);
    if (!*port || *end || errno || pn > 65535 || *port == '-' || *port == '+' || *port == ' ')
        return errf(err, errlen, spec, "bad port '%.16s' (use tcp:HOST:PORT, e.g. tcp:127.0.0.1:5000)",
                    port);
    snprintf(d->port, sizeof(d->port), "%lu", pn);
    return 0;
}

int vbts_dest_parse(const char *spec, struct vbts_dest *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    d->kind = vbts_dest_kind(spec);
    switch (d->kind) {
    case VBTS_DEST_UNIX: {
        const char *path = spec + 5;
        if (!*path)
            return errf(err, errlen, spec, "empty socket path");
        if (strlen(path) >= sizeof(d->path))
            return errf(err, errlen, spec, "socket path longer than %zu bytes",
                        sizeof(d->path) - 1);
        memcpy(d->path, path, strlen(path) + 1);
        d->control = true;
        return 0;
    }
    case VBTS_DEST_TCP:
        return parse_tcp(spec, d, err, errlen);
    default:
        if (!*spec) {
            snprintf(err, errlen, "empty file name");
            return -1;
        }
        return 0;
    }
}
