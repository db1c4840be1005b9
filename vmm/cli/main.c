/* SPDX-License-Identifier: MIT */
/* vbts: run a guest in a tiny KVM monitor and record its branch trace. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/image.h"
#include "cli/fatal.h"
#include "cli/options.h"
#include "cli/sandbox.h"
#include "cli/user.h"
#include "core/clock.h"
#include "core/vm.h"
#include "devices/lapic.h"
#include "export/sink.h"
#include "gdb/gdb.h"
#include "guest_bts/guest_bts.h"
#include "machine/linux_vm.h"
#include "machine/multiboot_vm.h"
#include "trace/trace.h"
#include "vbts/dest.h"
#include "vbts/symbols.h"
#include "x86/debug.h"
#include "x86/hostcompat.h"
#include "x86/kvm_x86.h"
#include "x86/vcpu_state.h"

static const char usage[] =
    "usage: vbts [options] GUEST\n"
    "Run GUEST (a multiboot v1 kernel: ELF32 or a.out kludge; or a Linux bzImage)\n"
    "in a KVM virtual machine and optionally record every taken branch as Intel\n"
    "BTS records.\n"
    "\n"
    "  -m, --memory SIZE     guest RAM, e.g. 64M, 2G (default 256M)\n"
    "  -a, --append CMDLINE  kernel command line (multiboot info, or Linux's;\n"
    "                        Linux default: \"" LINUX_DEFAULT_CMDLINE "\")\n"
    "      --cpus N          vCPUs (default 1); for a multiboot kernel also a PC as\n"
    "                        QEMU -smp N gives it: KVM's APICs, PICs and PIT, ACPI\n"
    "                        MADT; HLT then waits for an interrupt (docs/multiboot.md)\n"
    "      --initrd FILE     initrd/initramfs for a Linux guest; for a multiboot\n"
    "                        kernel its modules: FILE[ ARGS][,FILE[ ARGS]...]\n"
    "  -t, --trace DEST      record the branch trace (docs/format.md) into DEST: a FILE,\n"
    "                        unix:PATH or tcp:[HOST:]PORT[,control] (loopback unless\n"
    "                        HOST is given; its clients only watch unless ,control)\n"
    "                        for clients (docs/protocol.md); repeatable.  A FILE\n"
    "                        named *.zst is written zstd-compressed (zstd -d reads it)\n"
    "      --force           replace trace files that exist (they are 0600, never\n"
    "                        followed through a symbolic link)\n"
    "      --buffer-size BYTES  trace buffer per vCPU for sockets (default 1536K)\n"
    "      --buffer-limit BYTES most memory for all trace buffers (default RAM/4)\n"
    "      --overflow block|wrap|drop  full socket buffer: the vCPU waits (default),\n"
    "                        the oldest records go, or the newest go (counted)\n"
    "      --linger SECONDS  wrap/drop: keep the final buffers readable (default 10)\n"
    "      --symbols FILE    guest symbols: System.map, /proc/kallsyms text or ELF\n"
    "      --trace-start ADDR|SYMBOL  run untraced until a vCPU gets there\n"
    "      --trace-stop ADDR|SYMBOL   end the trace when a vCPU gets there\n"
    "      --max-branches N  end the trace after N branch records (all vCPUs)\n"
    "      --cpl kernel|user|all  record branches taken at CPL0, CPL>0, or both\n"
    "      --cr3 VALUE|start record only while CR3 holds this page-table base (start:\n"
    "                        the one of the vCPU that reached --trace-start)\n"
    "      --verify-flow     check every record against straight-line code; count violations\n"
    "      --stats           after the trace, the engine's exits by what caused them\n"
    "      --engine step|branch  single-step every instruction, or run from branch to\n"
    "                        branch under breakpoints (default: the fastest this host runs)\n"
    "      --stop-after-trace  end the run (status 0) when the trace window closes\n"
    "      --no-guest-bts    do not virtualise IA32_DEBUGCTL/IA32_DS_AREA for the guest\n"
    "      --kvm PATH        KVM device (default /dev/kvm)\n"
    "      --user USER       run as USER (name or number) once the VM, trace files and\n"
    "                        sockets are open; vbts must be started as root\n"
    "      --group GROUP     with --user: run with GROUP (default: USER's group)\n"
    "      --sandbox         --user " USER_SANDBOX_DEFAULT " (its group unless --group)\n"
    "      --no-seccomp      no system-call allowlist (docs/security.md)\n"
    "      --gdb [HOST:]PORT  serve gdb's remote protocol, with branch trace (record\n"
    "                        btrace bts), on PORT of loopback unless HOST (docs/gdb.md)\n"
    "  -S                    with --gdb: stop before the first instruction, for gdb\n"
    "      --gdb-arch i386|x86-64  the registers gdb gets (default: what the image is\n"
    "                        built for: an ELF's class, x86-64 for Linux; a flat image's:\n"
    "                        the guest's mode when gdb connects)\n"
    "  -q, --quiet           no trace summary on stderr\n"
    "  -h, --help            this text\n"
    "      --version         print the version\n"
    "\n"
    "The guest's COM1 (8250 at 0x3f8) goes to stdout.  Writing V to port 0xf4\n"
    "ends the run with status (V<<1)|1, like QEMU's isa-debug-exit.\n"
    "Exit status: 0 guest halted or powered off; (V<<1)|1 debug-exit;\n"
    "2 guest crashed (triple fault, instruction the host cannot run);\n"
    "125 the monitor failed (bad option or image, no KVM, trace not written), or\n"
    "the trace stopped where it could not go on exactly (named on stderr);\n"
    "130 interrupted by a signal; killed by SIGSYS (159 in a shell): the sandbox\n"
    "stopped a forbidden system call, named on stderr (docs/security.md).\n";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("vbts: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(VBTS_EXIT_MONITOR);
}

struct signal_ctx {
    struct vm *vm;
    struct sink *sink;
    sigset_t set;
};

/* Signals arrive here, on a thread of their own, so ending the VM may lock. */
static void *signal_thread(void *arg)
{
    struct signal_ctx *c = arg;
    for (;;) {
        int sig;
        if (sigwait(&c->set, &sig) != 0)
            continue;
        sink_interrupt(c->sink, sig);   /* stop waiting for socket clients */
        if (vm_ending(c->vm))
            return NULL;
        vm_request_end(c->vm, VM_END_SIGNAL, 128 + sig, "interrupted by signal %d", sig);
    }
}

/* Guest BTS's PMI, on a multiboot guest's APIC. */
static void raise_pmi(void *ctx, struct vcpu *cpu)
{
    lapic_raise_pmi(ctx, cpu);
}

/* Everything one run builds, torn down in reverse. */
struct run {
    struct vbts_options o;
    struct trace_config tcfg;
    struct vm vm;
    struct vbts_symtab *syms;
    struct guest_bts *gbts;
    struct trace *tr;
    struct linux_vm *lvm;
    struct lapic_dev *apic;
    struct sink *sink;
    struct gdb *gdb;
};

static void options_or_exit(struct vbts_options *o, int argc, char **argv)
{
    char err[VBTS_MAX_MSG];
    switch (options_parse(o, argc, argv, err, sizeof(err))) {
    case OPT_HELP:
        fputs(usage, stdout);
        exit(0);
    case OPT_VERSION:
        printf("vbts %d.%d (trace format %d.%d)\n", VBTS_VERSION_MAJOR, VBTS_VERSION_MINOR,
               VBTS_VERSION_MAJOR, VBTS_VERSION_MINOR);
        exit(0);
    case OPT_ERROR:
        fprintf(stderr, "vbts: %s\n", err);
        fputs("Try 'vbts --help' for more information.\n", stderr);
        exit(VBTS_EXIT_MONITOR);
    default:
        break;
    }
}

/* The image read and told apart, with the checks that need only the options. */
/*
 * The target description gdb gets unless --gdb-arch says: what the image
 * is built for (a Linux bzImage, an ELF's class), whatever mode the guest
 * is in when gdb connects (a 64-bit kernel may enter in 32-bit mode); the
 * guest's mode then for a flat image (docs/gdb.md).
 */
static enum gdb_arch gdb_arch_of(const struct vbts_options *o, const uint8_t *image, size_t size,
                                 bool linux_guest)
{
    if (o->gdb_arch >= 0)
        return (enum gdb_arch)o->gdb_arch;
    int class = image_elf_class(image, size);
    return linux_guest || class == 64 ? GDB_ARCH_X86_64 : class == 32 ? GDB_ARCH_I386 : GDB_ARCH_MODE;
}

static uint8_t *image_or_exit(const struct vbts_options *o, size_t *size, bool *linux_guest)
{
    uint8_t *image;
    if (image_read_file(o->guest, &image, size) < 0)
        die("%s", error_last());
    enum image_kind kind = image_detect(image, *size);
    *linux_guest = kind == IMAGE_LINUX;
    if (kind == IMAGE_UNKNOWN)
        die("%s: not a multiboot image (no multiboot header in the first 8192 bytes)", o->guest);
    if (*size > o->memory)
        die("%s: image (%zu bytes) is larger than guest memory (--memory %" PRIu64 " bytes)",
            o->guest, *size, o->memory);
    return image;
}

/* The VM, guest BTS, the trace engine, then the machine (its devices after the engine). */
/* A trace file that cannot be written ends the run at once: tracing on
 * would only lose more. */
static void sink_failed_end(void *ctx, const char *msg)
{
    struct vm *vm = ctx;
    vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s (the trace is incomplete)", msg);
}

static void build_or_exit(struct run *r, uint8_t *image, size_t size, bool linux_guest)
{
    const struct vbts_options *o = &r->o;
    vm_init(&r->vm);
    if (o->symbols) {
        char serr[VBTS_MAX_MSG];
        if (!(r->syms = vbts_symtab_load(o->symbols, serr, sizeof(serr))))
            die("--symbols: %s", serr);
        r->vm.syms = r->syms;
    }
    /* Multiboot guests keep the monitor's own APIC page and KVM_EXIT_HLT, unless --cpus makes a PC. */
    bool pc = linux_guest || o->have_cpus;
    struct kvm_x86_config xc = { .irqchip = pc, .ds_cpuid = o->guest_bts, .no_steal_time = o->trace != NULL };
    if (kvm_x86_create(&r->vm, o->kvm_path, o->memory, o->cpus, &xc) < 0 ||
        debug_install(&r->vm) < 0)
        die("%s", error_last());
    /* gdb's hooks before the engine's: a vCPU stops before the engine readies its run. */
    if (o->gdb) {
        struct gdb_config gc = { .addr = o->gdb, .wait = o->gdb_wait,
                                 .arch = gdb_arch_of(o, image, size, linux_guest) };
        if (!(r->gdb = gdb_install(&r->vm, &gc)))
            die("%s", error_last());
    }
    if (o->guest_bts && !(r->gbts = guest_bts_install(&r->vm)))
        die("guest BTS needs MSR filtering, which this host's KVM lacks (%s); "
            "run with --no-guest-bts", error_last());
    /* The engine's hooks come first: a vCPU follows the window before devices inject. */
    if (!(r->tr = trace_install(&r->vm, &r->tcfg, r->gbts)) ||
        trace_set_engine(r->tr, o->engine) < 0)
        die("%s", error_last());
    if (r->gdb) {
        gdb_set_trace(r->gdb, r->tr);
        if (gdb_start(r->gdb) < 0)
            die("%s", error_last());
        fprintf(stderr, "vbts: gdb: %s for a connection on %s\n",
                o->gdb_wait ? "the guest waits" : "listening", gdb_address(r->gdb));
    }
    if (linux_guest) {
        struct linux_guest g = { .path = o->guest, .image = image, .image_size = size,
                                 .initrd = o->initrd, .append = *o->append ? o->append : NULL };
        if (!(r->lvm = linux_vm_setup(&r->vm, &g)))
            die("%s", error_last());
    } else {
        struct multiboot_guest g = { .path = o->guest, .image = image, .image_size = size,
                                     .append = o->append, .modules = o->initrd, .pc = pc };
        if (multiboot_vm_setup(&r->vm, &g, &r->apic) < 0)
            die("%s: %s", o->guest, error_last());
        if (r->gbts && r->apic)
            guest_bts_set_pmi(r->gbts, raise_pmi, r->apic);
    }
    free(image);
    if (o->trace) {
        struct sink_config sc = {
            .dests = o->traces, .ndests = o->ntraces, .buffer_size = o->buffer_size,
            .buffer_limit = o->buffer_limit, .overflow = o->overflow, .linger = o->linger,
            .quiet = o->quiet, .force = o->force, .on_fail = sink_failed_end, .fail_ctx = &r->vm,
        };
        if (!(r->sink = sink_open(&sc, r->vm.ncpus)))
            die("%s", error_last());
        trace_set_sink(r->tr, r->sink);
    }
}

/* The vCPUs until the guest ends, then the socket clients; signals go to their own thread. */
static int run_vm(struct run *r, double *elapsed)
{
    struct signal_ctx sc = { .vm = &r->vm, .sink = r->sink };
    sigemptyset(&sc.set);
    sigaddset(&sc.set, SIGINT);
    sigaddset(&sc.set, SIGTERM);
    sigaddset(&sc.set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (fatal_install() < 0)
        die("%s", error_last());
    pthread_t sig_tid;
    pthread_create(&sig_tid, NULL, signal_thread, &sc);

    double t0 = clock_monotonic_s();
    int status = vcpu_run_all(&r->vm);
    *elapsed = clock_monotonic_s() - t0;
    /* Socket clients get the rest of the trace (block) or --linger seconds. */
    int undelivered_sig = sink_finish(r->sink);
    if (undelivered_sig)
        status = 128 + undelivered_sig;
    pthread_kill(sig_tid, SIGTERM);
    pthread_join(sig_tid, NULL);
    return status;
}

/*
 * Everything that needs privileges is open (KVM, trace files, sockets):
 * give up root, then every system call the run does not need
 * (docs/security.md).  Threads already run: both apply to them too.
 */
static void confine_or_exit(const struct vbts_options *o, const struct user_ids *ids)
{
    if (ids->drop && user_drop(ids) < 0)
        die("%s", error_last());
    if (o->no_seccomp)
        return;
    bool unix_sockets = false;
    for (int i = 0; i < o->ntraces; i++)
        unix_sockets |= vbts_dest_kind(o->traces[i]) == VBTS_DEST_UNIX;
    if (sandbox_install(unix_sockets) < 0)
        die("%s", error_last());
    /* The tests' proof that the filter holds: one line, then death by SIGSYS. */
    if (getenv("VBTS_TEST_FORBIDDEN_SYSCALL"))
        sandbox_forbidden_call();
}

/* Why the run ended, what host-compat did, the trace summary; the status to exit with. */
static int report(struct run *r, int status, double elapsed)
{
    enum vm_end end = atomic_load(&r->vm.end);
    /*
     * The host failed an instruction the guest meant to run: a trace
     * still being recorded is cut short there, not ended by the guest.
     */
    bool host_cut = end == VM_END_HOST && r->sink && atomic_load(&r->tcfg.window) != WINDOW_CLOSED;
    if (host_cut) {
        const char *m = r->vm.end_msg;
        fprintf(stderr, "vbts: trace stopped: %s\n", strncmp(m, "guest stopped: ", 15) ? m : m + 15);
        status = VBTS_EXIT_MONITOR;
    } else if (end == VM_END_CRASH || end == VM_END_HOST || end == VM_END_MONITOR || end == VM_END_SIGNAL) {
        fprintf(stderr, "vbts: %s\n", r->vm.end_msg);
    }
    if (end == VM_END_SIGNAL) {
        char where[512];
        vcpu_where(&r->vm, where, sizeof(where));
        if (where[0])
            fprintf(stderr, "vbts: where the guest stood: %s\n", where);
        for (int i = 0; i < r->vm.ncpus; i++) {
            const struct vcpu_state *s = vcpu_state_of(&r->vm, i);
            if (s) {
                vcpu_state_describe(s, where, sizeof(where));
                fprintf(stderr, "vbts: vCPU %d: %s\n", i, where);
            }
        }
    }
    hostcompat_summary(stderr);
    /* Asked for explicitly: printed even with --quiet. */
    if (r->tcfg.verify_flow)
        fprintf(stderr, "vbts: verify-flow: %llu records checked, %llu violations\n",
                (unsigned long long)atomic_load(&r->tcfg.flow_checked),
                (unsigned long long)atomic_load(&r->tcfg.flow_violations));
    if (!r->sink)
        return status;
    uint64_t branches, exits;
    trace_totals(r->tr, &branches, &exits);
    if (sink_close(r->sink) < 0) {
        /* A failed file write ended the run: its line is out already. */
        if (end != VM_END_MONITOR || !strstr(r->vm.end_msg, error_last()))
            fprintf(stderr, "vbts: %s (the trace is incomplete)\n", error_last());
        return VBTS_EXIT_MONITOR;
    }
    /* An empty trace is not left unexplained, even with --quiet. */
    if (r->tcfg.have_start && atomic_load(&r->tcfg.window) == WINDOW_WAITING && end != VM_END_MONITOR) {
        const char *why = trace_start_unreachable(r->tr);
        fprintf(stderr, "vbts: the trace window never opened: %s%s (--trace-start 0x%llx)\n",
                why ? "" : "no vCPU reached it", why ? why : "", (unsigned long long)r->tcfg.start);
    }
    /* The engine beside its figures: a run that fails says only why. */
    if (!r->o.quiet)
        fprintf(stderr, "vbts: engine: %s\nvbts: trace %s: %" PRIu64 " branches, %" PRIu64
                " exits in %.3f s (%.0f branches/s, %.2f exits/branch)\n", trace_engine_name(r->tr), r->o.trace,
                branches, exits, elapsed, elapsed > 0 ? branches / elapsed : 0.0,
                branches ? (double)exits / branches : 0.0);
    /* Asked for explicitly: printed even with --quiet. */
    if (r->o.stats) {
        char causes[512];
        trace_exit_causes(r->tr, causes, sizeof(causes));
        fprintf(stderr, "vbts: exits: %s\n", causes);
    }
    return status;
}

int main(int argc, char **argv)
{
    static struct run r;
    options_or_exit(&r.o, argc, argv);
    /* Who to run as is settled before anything is built. */
    struct user_ids ids;
    char err[VBTS_MAX_MSG];
    if (user_resolve(r.o.user, r.o.group, r.o.sandbox, geteuid(), &ids, err, sizeof(err)) < 0)
        die("%s", err);
    struct trace_options to = {
        .trace = r.o.trace != NULL, .symbols = r.o.symbols, .start = r.o.trace_start,
        .stop = r.o.trace_stop, .max_branches = r.o.max_branches, .cpl = r.o.cpl,
        .have_cr3 = r.o.have_cr3, .cr3_start = r.o.cr3_start, .cr3 = r.o.cr3, .verify_flow = r.o.verify_flow,
        .stop_after = r.o.stop_after_trace,
    };
    if (trace_config_build(&r.tcfg, &to) < 0)
        die("%s", error_last());
    size_t size;
    bool linux_guest;
    uint8_t *image = image_or_exit(&r.o, &size, &linux_guest);
    build_or_exit(&r, image, size, linux_guest);
    confine_or_exit(&r.o, &ids);

    double elapsed;
    int status = run_vm(&r, &elapsed);
    gdb_finish(r.gdb, status);
    linux_vm_teardown(r.lvm);
    status = report(&r, status, elapsed);
    gdb_free(r.gdb);
    trace_free(r.tr);
    guest_bts_free(r.gbts);
    iobus_destroy(&r.vm.io);
    lapic_free(r.apic);
    kvm_x86_destroy(&r.vm);
    vm_fini(&r.vm);
    vbts_symtab_free(r.syms);
    return status;
}
