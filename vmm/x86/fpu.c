/* SPDX-License-Identifier: MIT */
#include "x86/fpu.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/error.h"
#include "core/kvm.h"
#include "core/vcpu.h"
#include "vbts/le.h"

/* The legacy area (SDM vol. 1, 10.5.1) and the XSAVE header after it. */
enum { FCW = 0, FSW = 2, FTW = 4, FOP = 6, FIP = 8, FDP = 16, MXCSR = 24, ST = 32, XMM = 160, XSTATE_BV = 512 };
enum { BV_X87 = 1, BV_SSE = 2, BV_AVX = 4 };

void fpu_from_xsave(const void *image, struct kvm_fpu *f)
{
    const uint8_t *a = image;
    uint64_t bv = vbts_le64(a + XSTATE_BV);
    memset(f, 0, sizeof(*f));
    f->fcw = 0x37f;
    f->mxcsr = 0x1f80;
    if (bv & BV_X87) {
        f->fcw = vbts_le16(a + FCW);
        f->fsw = vbts_le16(a + FSW);
        f->ftwx = a[FTW];
        f->last_opcode = vbts_le16(a + FOP);
        f->last_ip = vbts_le64(a + FIP);
        f->last_dp = vbts_le64(a + FDP);
        memcpy(f->fpr, a + ST, sizeof(f->fpr));
    }
    if (bv & BV_SSE)
        memcpy(f->xmm, a + XMM, sizeof(f->xmm));
    /* XSAVE stores MXCSR with either SSE or AVX state. */
    if (bv & (BV_SSE | BV_AVX))
        f->mxcsr = vbts_le32(a + MXCSR);
}

void fpu_into_xsave(const struct kvm_fpu *f, void *image)
{
    uint8_t *a = image;
    vbts_put16(a + FCW, f->fcw);
    vbts_put16(a + FSW, f->fsw);
    a[FTW] = f->ftwx;
    vbts_put16(a + FOP, f->last_opcode);
    vbts_put64(a + FIP, f->last_ip);
    vbts_put64(a + FDP, f->last_dp);
    vbts_put32(a + MXCSR, f->mxcsr);
    memcpy(a + ST, f->fpr, sizeof(f->fpr));
    memcpy(a + XMM, f->xmm, sizeof(f->xmm));
    vbts_put64(a + XSTATE_BV, vbts_le64(a + XSTATE_BV) | BV_X87 | BV_SSE);
}

/* The image's size (KVM_CAP_XSAVE2: more than struct kvm_xsave with large state), 0 without XSAVE. */
static size_t image_size(const struct vcpu *cpu)
{
    if (kvm_extension(cpu->vm, KVM_CAP_XSAVE) <= 0)
        return 0;
    int n = kvm_extension(cpu->vm, KVM_CAP_XSAVE2);
    return n > (int)sizeof(struct kvm_xsave) ? (size_t)n : sizeof(struct kvm_xsave);
}

/* The vCPU's XSAVE image into a new buffer (*size bytes), NULL with the error set. */
static void *image_get(struct vcpu *cpu, size_t size)
{
    void *x = calloc(1, size);
    if (!x) {
        error_fail("out of memory for vCPU %d's XSAVE image", cpu->index);
        return NULL;
    }
    bool two = size > sizeof(struct kvm_xsave);
    if (ioctl(cpu->fd, two ? KVM_GET_XSAVE2 : KVM_GET_XSAVE, x) < 0) {
        error_fail_errno("%s on vCPU %d", two ? "KVM_GET_XSAVE2" : "KVM_GET_XSAVE", cpu->index);
        free(x);
        return NULL;
    }
    return x;
}

int fpu_get(struct vcpu *cpu, struct kvm_fpu *f)
{
    size_t size = image_size(cpu);
    if (!size)
        return ioctl(cpu->fd, KVM_GET_FPU, f) < 0 ? error_fail_errno("KVM_GET_FPU on vCPU %d", cpu->index) : 0;
    void *x = image_get(cpu, size);
    if (!x)
        return -1;
    fpu_from_xsave(x, f);
    free(x);
    return 0;
}

int fpu_set(struct vcpu *cpu, const struct kvm_fpu *f)
{
    size_t size = image_size(cpu);
    if (!size)
        return ioctl(cpu->fd, KVM_SET_FPU, f) < 0 ? error_fail_errno("KVM_SET_FPU on vCPU %d", cpu->index) : 0;
    void *x = image_get(cpu, size);
    if (!x)
        return -1;
    fpu_into_xsave(f, x);
    int r = ioctl(cpu->fd, KVM_SET_XSAVE, x) < 0 ? error_fail_errno("KVM_SET_XSAVE on vCPU %d", cpu->index) : 0;
    free(x);
    return r;
}
