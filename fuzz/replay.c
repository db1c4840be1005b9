/* SPDX-License-Identifier: MIT */
/*
 * Replays a fuzz target's corpus without libFuzzer: every file of the
 * directories (or the files) given goes through LLVMFuzzerTestOneInput
 * once.  Built with the ordinary compiler and flags by `make tests`, so
 * `make test` replays every corpus and `make check` does it under ASan and
 * UBSan, where clang may not be installed.  A finding aborts (or the
 * sanitizer ends the run), and the status is nonzero.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

/* Defined by the targets that need a one-time setup. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got = 1; buf && got;) {
        if (n == cap) {
            uint8_t *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: %s: cannot read\n", path);
        free(buf);
        return -1;
    }
    /* An exact-size copy, as libFuzzer gives: ASan then sees a read past the end. */
    uint8_t *data = malloc(n ? n : 1);
    if (!data) {
        free(buf);
        return -1;
    }
    memcpy(data, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 0;
}

static int only_files(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int status = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            status = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) < 0)
                status = 1;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, only_files, alphasort);
        if (n < 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            status = 1;
            continue;
        }
        int done = 0;
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(path) < 0)
                    status = 1;
                else
                    done++;
            }
            free(names[k]);
        }
        free(names);
        printf("replay: %d inputs from %s\n", done, argv[i]);
    }
    return status;
}
