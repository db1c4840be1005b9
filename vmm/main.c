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
#include <time.h>
#include <unistd.h>

#include "hostcompat_x86.h"
#include "iobus.h"
#include "kvm.h"
#include "linux_vm.h"
#include "loader.h"
#include "loader_linux.h"
#include "options.h"
#include "trace.h"
#include "vbts/symbols.h"

#define COM1_BASE       0x3f8
#define DEBUG_EXIT_PORT 0xf4
#define TRACE_BUF_RECORDS (64u * 1024)

static const char usage[] =
    "usage: vbts [options] GUEST\n"
    "Run GUEST (a multiboot v1 kernel: ELF32 or a.out kludge; or a Linux bzImage)\n"
    "in a KVM virtual machine and optionally record every taken branch as Intel\n"
    "BTS records.\n"
    "\n"
    "  -m, --memory SIZE     guest RAM, e.g. 64M, 2G (default 256M)\n"
    "  -a, --append CMDLINE  kernel command line (multiboot info, or Linux's;\n"
    "                        Linux default: \"" LINUX_DEFAULT_CMDLINE "\")\n"
    "      --cpus N          vCPUs for a Linux guest (default 1)\n"
    "      --initrd FILE     initrd/initramfs for a Linux guest\n"
    "  -t, --trace DEST      record the branch trace (docs/format.md) into DEST: a FILE,\n"
    "                        unix:PATH or tcp:[HOST:]PORT (loopback unless HOST is\n"
    "                        given) for clients (docs/protocol.md); repeatable\n"
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
    "      --cr3 VALUE       record only while CR3 holds this page-table base\n"
    "      --verify-flow     check every record against straight-line code; count violations\n"
    "      --stop-after-trace  end the run (status 0) when the trace window closes\n"
    "      --no-guest-bts    do not virtualise IA32_DEBUGCTL/IA32_DS_AREA for the guest\n"
    "      --kvm PATH        KVM device (default /dev/kvm)\n"
    "  -q, --quiet           no trace summary on stderr\n"
    "  -h, --help            this text\n"
    "      --version         print the version\n"
    "\n"
    "The guest's COM1 (8250 at 0x3f8) goes to stdout.  Writing V to port 0xf4\n"
    "ends the run with status (V<<1)|1, like QEMU's isa-debug-exit.\n"
    "Exit status: 0 guest halted or powered off; (V<<1)|1 debug-exit;\n"
    "2 guest crashed (triple fault, instruction the host cannot run);\n"
    "125 the monitor failed (bad option or image, no KVM, trace not written);\n"
    "130 interrupted by a signal.\n";

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
        trace_sink_interrupt(c->vm->sink, sig);   /* stop waiting for socket clients */
        if (vm_ending(c->vm))
            return NULL;
        vm_request_end(c->vm, VM_END_SIGNAL, 128 + sig, "interrupted by signal %d", sig);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct vbts_options o;
    char err[VBTS_MAX_MSG];
    switch (options_parse(&o, argc, argv, err, sizeof(err))) {
    case OPT_HELP:
        fputs(usage, stdout);
        return 0;
    case OPT_VERSION:
        printf("vbts %d.%d (trace format %d.%d)\n", VBTS_VERSION_MAJOR, VBTS_VERSION_MINOR,
               VBTS_VERSION_MAJOR, VBTS_VERSION_MINOR);
        return 0;
    case OPT_ERROR:
        fprintf(stderr, "vbts: %s\n", err);
        fputs("Try 'vbts --help' for more information.\n", stderr);
        return VBTS_EXIT_MONITOR;
    default:
        break;
    }

    struct trace_config tcfg;
    if (trace_config_build(&tcfg, &o) < 0)
        die("%s", vbts_last_error());

    uint8_t *image;
    size_t image_size;
    if (loader_read_file(o.guest, &image, &image_size) < 0)
        die("%s", vbts_last_error());
    /* Multiboot first, as before; a bzImage is told by its setup header. */
    bool linux_guest = !loader_is_multiboot(image, image_size) &&
                       loader_is_bzimage(image, image_size);
    if (!linux_guest && !loader_is_multiboot(image, image_size))
        die("%s: not a multiboot image (no multiboot header in the first 8192 bytes)", o.guest);
    if (!linux_guest && (o.cpus > 1 || o.initrd))
        die("%s: --cpus and --initrd are for Linux guests; this is a multiboot image", o.guest);
    if (image_size > o.memory)
        die("%s: image (%zu bytes) is larger than guest memory (--memory %" PRIu64 " bytes)",
            o.guest, image_size, o.memory);

    struct vm vm = { 0 };
    pthread_mutex_init(&vm.end_lock, NULL);
    struct iobus io = { 0 };
    vm.io = &io;
    vm.guest_bts = o.guest_bts;
    vm.tcfg = &tcfg;
    vm.irqchip = linux_guest;   /* multiboot guests keep dev_lapic.c and KVM_EXIT_HLT */
    struct vbts_symtab *syms = NULL;
    if (o.symbols) {
        char serr[VBTS_MAX_MSG];
        if (!(syms = vbts_symtab_load(o.symbols, serr, sizeof(serr))))
            die("--symbols: %s", serr);
        vm.syms = syms;
    }
    if (kvm_vm_create(&vm, o.kvm_path, o.memory, linux_guest ? o.cpus : 1) < 0)
        die("%s", vbts_last_error());
    if (vm.guest_bts && guest_bts_install(vm.vm_fd) < 0)
        die("guest BTS needs MSR filtering, which this host's KVM lacks (%s); "
            "run with --no-guest-bts", vbts_last_error());

    if (linux_guest) {
        struct linux_guest g = { .path = o.guest, .image = image, .image_size = image_size,
                                 .initrd = o.initrd, .append = *o.append ? o.append : NULL };
        if (linux_vm_setup(&vm, &io, &g) < 0)
            die("%s", vbts_last_error());
        free(image);
        if (debug_exit_register(&io, DEBUG_EXIT_PORT) < 0)
            die("%s", vbts_last_error());
    } else {
        struct boot_info bi;
        if (loader_multiboot(&vm.mem, image, image_size, o.append, &bi) < 0)
            die("%s: %s", o.guest, vbts_last_error());
        free(image);
        if (kvm_x86_enter_protected32(&vm.vcpus[0], bi.entry, MB_BOOT_MAGIC, bi.mbi) < 0)
            die("%s", vbts_last_error());
        if (serial8250_register(&io, COM1_BASE, STDOUT_FILENO) < 0 ||
            debug_exit_register(&io, DEBUG_EXIT_PORT) < 0)
            die("%s", vbts_last_error());
    }

    if (o.trace) {
        struct trace_sink_config tsc = {
            .dests = o.traces, .ndests = o.ntraces, .buffer_size = o.buffer_size,
            .buffer_limit = o.buffer_limit, .overflow = o.overflow, .linger = o.linger,
            .quiet = o.quiet,
        };
        vm.sink = trace_sink_open(&tsc, vm.ncpus);
        if (!vm.sink)
            die("%s", vbts_last_error());
    }
    for (int i = 0; i < vm.ncpus; i++) {
        guest_bts_init(&vm.vcpus[i].gbts);
        lapic_init(&vm.vcpus[i].lapic, i);
        vm.vcpus[i].trace = trace_vcpu_new(vm.sink, &vm.vcpus[i], TRACE_BUF_RECORDS);
        if (!vm.vcpus[i].trace)
            die("%s", vbts_last_error());
    }

    struct signal_ctx sc = { .vm = &vm };
    sigemptyset(&sc.set);
    sigaddset(&sc.set, SIGINT);
    sigaddset(&sc.set, SIGTERM);
    sigaddset(&sc.set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_t sig_tid;
    pthread_create(&sig_tid, NULL, signal_thread, &sc);

    double t0 = now_s();
    int status = vcpu_run_all(&vm);
    double elapsed = now_s() - t0;
    /* Socket clients get the rest of the trace (block) or --linger seconds. */
    int undelivered_sig = trace_sink_finish(vm.sink);
    if (undelivered_sig)
        status = 128 + undelivered_sig;
    pthread_kill(sig_tid, SIGTERM);
    pthread_join(sig_tid, NULL);

    if (linux_guest)
        linux_vm_teardown(&vm);
    enum vm_end end = atomic_load(&vm.end);
    if (end == VM_END_CRASH || end == VM_END_MONITOR || end == VM_END_SIGNAL)
        fprintf(stderr, "vbts: %s\n", vm.end_msg);
    hostcompat_summary(stderr);

    /* Asked for explicitly: printed even with --quiet. */
    if (tcfg.verify_flow)
        fprintf(stderr, "vbts: verify-flow: %llu records checked, %llu violations\n",
                (unsigned long long)atomic_load(&tcfg.flow_checked),
                (unsigned long long)atomic_load(&tcfg.flow_violations));
    if (vm.sink) {
        uint64_t branches = 0, steps = 0;
        for (int i = 0; i < vm.ncpus; i++) {
            branches += vm.vcpus[i].trace->branches;
            steps += vm.vcpus[i].trace->steps;
        }
        if (trace_sink_close(vm.sink) < 0) {
            fprintf(stderr, "vbts: %s (the trace is incomplete)\n", vbts_last_error());
            status = VBTS_EXIT_MONITOR;
        } else if (!o.quiet) {
            fprintf(stderr, "vbts: trace %s: %" PRIu64 " branches, %" PRIu64
                    " steps in %.3f s (%.0f branches/s, %.2f steps/branch)\n", o.trace,
                    branches, steps, elapsed, elapsed > 0 ? branches / elapsed : 0.0,
                    branches ? (double)steps / branches : 0.0);
        }
    }
    for (int i = 0; i < vm.ncpus; i++)
        trace_vcpu_free(vm.vcpus[i].trace);
    iobus_destroy(&io);
    kvm_vm_destroy(&vm);
    vbts_symtab_free(syms);
    return status;
}
