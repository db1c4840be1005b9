/* SPDX-License-Identifier: MIT */
/*
 * `--gdb [HOST:]PORT` and `-S`: a GDB remote stub on the VM (docs/gdb.md).
 * A thread of its own serves one gdb at a time; the vCPUs stop between
 * runs, all together (all-stop), and gdb's breakpoints and steps go
 * through the debug-register owner (x86/debug.h).  gdb's branch trace
 * (`record btrace bts`) is served from vbts's own records: the trace
 * engine runs on a vCPU only while gdb records it (or --trace does).
 */
#ifndef VBTS_GDB_GDB_H
#define VBTS_GDB_GDB_H

#include <stdbool.h>

struct vm;
struct trace;
struct gdb;

/* The target description gdb gets: i386 or x86-64, or the guest's mode when gdb connects. */
enum gdb_arch { GDB_ARCH_I386, GDB_ARCH_X86_64, GDB_ARCH_MODE };

struct gdb_config {
    const char *addr;           /* [HOST:]PORT; loopback unless HOST */
    bool wait;                  /* -S: no guest instruction before gdb says so */
    enum gdb_arch arch;
};

/*
 * Listens, and hooks the vCPUs: before trace_install(), so that a vCPU
 * stops before the engine prepares its next run.  NULL with the error set.
 */
struct gdb *gdb_install(struct vm *vm, const struct gdb_config *c);
/* Where gdb's branch trace comes from (once the engine is installed). */
void gdb_set_trace(struct gdb *g, struct trace *tr);
/* The address gdb connects to, for the user: "tcp:HOST:PORT". */
const char *gdb_address(const struct gdb *g);
/* The server thread: before the vCPUs start.  -1 with the error set. */
int gdb_start(struct gdb *g);
/* After the vCPUs ended: gdb hears the exit status (W), and the thread ends. */
void gdb_finish(struct gdb *g, int status);
void gdb_free(struct gdb *g);

#endif
