/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "gdb/gdb.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "export/server/listen.h"
#include "trace/trace.h"
#include "vbts/dest.h"
#include "x86/host.h"

#include "gdb/hide.h"
#include "gdb/target.h"

/* --- the connection ----------------------------------------------------------------- */

/* Every live vCPU stands (or none is left); false if the run ends first. */
static bool all_stopped(struct gdb *g)
{
    return atomic_load(&g->stop_req) && g->npaused == g->alive;
}

/* A new gdb: the guest stops, as under QEMU, and the layout follows its mode now. */
static void connected(struct gdb *g)
{
    pthread_mutex_lock(&g->lock);
    bool initial = g->gen == 0;
    target_request_stop(g);
    while (!all_stopped(g) && !vm_ending(g->vm))
        target_wait_a_little(g);
    struct stub_stop st = g->have_stop ? g->stop
                          : (struct stub_stop){ .cpu = 0, .signal = g->wait && initial ? 5 : 2 };
    pthread_mutex_unlock(&g->lock);
    struct kvm_sregs s;
    enum regs_arch arch = g->arch == GDB_ARCH_I386 ? REGS_I386 : REGS_X86_64;
    if (g->arch == GDB_ARCH_MODE && ioctl(g->vm->vcpus[0].fd, KVM_GET_SREGS, &s) == 0 &&
        !(s.efer & (1u << 10)))
        arch = REGS_I386;       /* not in long mode (EFER.LMA) */
    stub_init(&g->stub, &target_ops, g, g->vm->ncpus, arch, &st);
    g->stub_on = true;
    g->said_narrow = false;
}

/*
 * The connection closed, for whatever reason (gdb's detach, a port probe,
 * a gdb that died): gdb's points and recordings go.  A guest -S holds and
 * no gdb has resumed yet waits for the next connection; any other runs on,
 * as after detach (QEMU's way).
 */
static void disconnected(struct gdb *g)
{
    if (!g->stub.ended)
        target_release(g, !g->held);
    stub_fini(&g->stub);
    g->stub_on = false;
    close(g->cfd);
    g->cfd = -1;
}

/*
 * gdb has the i386 description and a vCPU stopped in 64-bit code, whose
 * registers it cannot show (only their low halves): said once a
 * connection, to gdb's console and on stderr, with what to do.
 */
static void check_width(struct gdb *g, int cpu)
{
    struct kvm_sregs s;
    if (g->said_narrow || g->stub.arch != REGS_I386 || cpu < 0 || cpu >= g->vm->ncpus ||
        ioctl(g->vm->vcpus[cpu].fd, KVM_GET_SREGS, &s) < 0 || !s.cs.l)
        return;
    g->said_narrow = true;
    char line[200];
    snprintf(line, sizeof(line), "vbts: gdb: vCPU %d runs 64-bit code, which the i386 target "
             "description cannot show: run vbts with --gdb-arch x86-64 (and gdb with an x86-64 ELF)",
             cpu);
    fprintf(stderr, "%s\n", line);
    stub_console(&g->stub, line);
}

/* The target ran and has stopped: the stop reply, with the first reason seen. */
static void check_stopped(struct gdb *g)
{
    pthread_mutex_lock(&g->lock);
    bool stopped = all_stopped(g);
    struct stub_stop st = g->have_stop ? g->stop : (struct stub_stop){ .cpu = -1, .signal = 2 };
    pthread_mutex_unlock(&g->lock);
    if (stopped && !vm_ending(g->vm)) {
        if (hide_disarm(g) < 0)
            vm_request_end(g->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
        check_width(g, st.cpu >= 0 ? st.cpu : 0);
        stub_stopped(&g->stub, &st);
    }
}

/*
 * A gdb while another is attached: told in a packet gdb prints ("Remote
 * failure reply: E.vbts: ..."), then closed once it has read it (or a
 * moment has passed).  The first is not disturbed.
 */
static void refuse(struct gdb *g, int fd)
{
    static const char msg[] = "E.vbts: another gdb is attached to this guest; one at a time";
    unsigned sum = 0;
    for (const char *c = msg; *c; c++)
        sum += (unsigned char)*c;
    char pkt[sizeof(msg) + 8];
    int n = snprintf(pkt, sizeof(pkt), "+$%s#%02x", msg, sum & 0xff);
    ssize_t w = send(fd, pkt, (size_t)n, MSG_NOSIGNAL);
    (void)w;
    shutdown(fd, SHUT_WR);
    fprintf(stderr, "vbts: gdb: a second connection refused: another gdb is attached (one at a time)\n");
    for (int i = 0; i < GDB_REFUSED_MAX; i++) {
        if (g->refused[i] < 0) {
            g->refused[i] = fd;
            g->refused_polls[i] = 0;
            return;
        }
    }
    close(fd);
}

/* Refused connections: what they send is read and dropped until they close, or a few polls pass. */
static void drain_refused(struct gdb *g, const struct pollfd *p)
{
    for (int i = 0; i < GDB_REFUSED_MAX; i++) {
        if (g->refused[i] < 0)
            continue;
        uint8_t buf[512];
        bool gone = ++g->refused_polls[i] > GDB_REFUSED_POLLS;
        if (p[i].revents && recv(g->refused[i], buf, sizeof(buf), 0) <= 0)
            gone = true;
        if (gone) {
            close(g->refused[i]);
            g->refused[i] = -1;
        }
    }
}

static void accept_one(struct gdb *g)
{
    int fd = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    if (g->cfd >= 0) {
        refuse(g, fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    g->cfd = fd;
    connected(g);
}

static void serve(struct gdb *g)
{
    /* The refused first (their index is their slot), then the listener, then the connection. */
    struct pollfd p[GDB_REFUSED_MAX + 2];
    for (int i = 0; i < GDB_REFUSED_MAX; i++)
        p[i] = (struct pollfd){ g->refused[i], POLLIN, 0 };
    p[GDB_REFUSED_MAX] = (struct pollfd){ g->lfd, POLLIN, 0 };
    p[GDB_REFUSED_MAX + 1] = (struct pollfd){ g->cfd, POLLIN, 0 };
    if (g->cfd >= 0 && g->stub.running)
        check_stopped(g);
    int r = poll(p, GDB_REFUSED_MAX + 2, TARGET_POLL_MS);
    drain_refused(g, p);
    if (r <= 0)
        return;
    bool input = g->cfd >= 0 && p[GDB_REFUSED_MAX + 1].revents;
    if (p[GDB_REFUSED_MAX].revents)
        accept_one(g);
    if (!input)
        return;
    uint8_t buf[4096];
    ssize_t n = recv(g->cfd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        disconnected(g);
        return;
    }
    if (n > 0)
        stub_input(&g->stub, buf, (size_t)n);
    if (g->stub.ended && g->cfd >= 0 && !g->stub.running && vm_ending(g->vm))
        disconnected(g);
}

static void *server_thread(void *arg)
{
    struct gdb *g = arg;
    /* Signals are the vCPUs' and the signal thread's business. */
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGSYS);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    while (!atomic_load(&g->done))
        serve(g);
    return NULL;
}

/* --- setup and teardown -------------------------------------------------------------- */

static int listen_on(struct gdb *g, const char *addr)
{
    char spec[300], what[300], err[VBTS_MAX_MSG];
    struct vbts_dest d;
    snprintf(spec, sizeof(spec), "tcp:%s", addr);
    if (!*addr || vbts_dest_parse(spec, &d, err, sizeof(err)) < 0)
        return error_fail("--gdb %s: expected [HOST:]PORT", addr);
    snprintf(what, sizeof(what), "--gdb %s", addr);
    g->lfd = listen_tcp_socket(what, &d, g->address, sizeof(g->address));
    return g->lfd < 0 ? -1 : 0;
}

struct gdb *gdb_install(struct vm *vm, const struct gdb_config *c)
{
    struct gdb *g = calloc(1, sizeof(*g));
    if (g)
        g->cpu = calloc((size_t)vm->ncpus, sizeof(*g->cpu));
    if (!g || !g->cpu) {
        free(g);
        error_fail("out of memory");
        return NULL;
    }
    g->vm = vm;
    g->wait = c->wait;
    g->held = c->wait;
    g->arch = c->arch;
    g->lfd = g->cfd = -1;
    for (int i = 0; i < GDB_REFUSED_MAX; i++)
        g->refused[i] = -1;
    g->alive = vm->ncpus;
    g->tf = !host_is_pvm();
    g->pvm = host_is_pvm();
    atomic_store(&g->stop_req, c->wait);
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cond, &ca);
    pthread_condattr_destroy(&ca);
    int fire = -1;
    if (listen_on(g, c->addr) < 0 || (fire = host_breakpoints_fire(vm->kvm_fd)) < 0 ||
        target_install(g) < 0) {
        gdb_free(g);
        return NULL;
    }
    /* VBTS_GDB_BREAKPOINTS=0: points checked by steps, as where none fire (the tests' way there). */
    const char *k = getenv("VBTS_GDB_BREAKPOINTS");
    if (k && !strcmp(k, "0"))
        fire = 0;
    g->dr_fire = fire;
    if (!fire)
        fprintf(stderr, "vbts: gdb: this host's guests fire no hardware breakpoints: "
                        "gdb's breakpoints and watchpoints are checked at every step, slowly\n");
    return g;
}

void gdb_set_trace(struct gdb *g, struct trace *tr)
{
    target_set_trace(g, tr);
}

const char *gdb_address(const struct gdb *g)
{
    return g->address;
}

int gdb_start(struct gdb *g)
{
    int e = pthread_create(&g->thread, NULL, server_thread, g);
    if (e)
        return error_fail("cannot start the gdb thread: %s", strerror(e));
    g->thread_on = true;
    return 0;
}

void gdb_finish(struct gdb *g, int status)
{
    if (!g || !g->thread_on)
        return;
    atomic_store(&g->done, true);
    pthread_join(g->thread, NULL);
    g->thread_on = false;
    if (g->cfd >= 0 && g->stub_on) {
        stub_exited(&g->stub, status);
        stub_fini(&g->stub);
        close(g->cfd);
        g->cfd = -1;
    }
}

void gdb_free(struct gdb *g)
{
    if (!g)
        return;
    gdb_finish(g, 0);
    if (g->lfd >= 0)
        close(g->lfd);
    for (int i = 0; i < GDB_REFUSED_MAX; i++)
        if (g->refused[i] >= 0)
            close(g->refused[i]);
    for (int i = 0; i < g->vm->ncpus; i++)
        btrace_disable(&g->cpu[i].bt);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g->cpu);
    free(g);
}
