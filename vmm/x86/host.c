/* SPDX-License-Identifier: MIT */
#include "x86/host.h"

#include <stdatomic.h>
#include <unistd.h>

/* Asked before every KVM_RUN in places: looked up once. */
static int module_index(void)
{
    static atomic_int cached = -1;
    static const char *const mods[] = { "/sys/module/kvm_pvm", "/sys/module/kvm_amd",
                                        "/sys/module/kvm_intel" };
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = 3;
        for (int i = 0; i < 3; i++) {
            if (access(mods[i], F_OK) == 0) {
                v = i;
                break;
            }
        }
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

bool host_is_pvm(void)
{
    return module_index() == 0;
}

bool host_steps_user(void)
{
    /* kvm_pvm reflects the single-step #DB into a CPL3 guest. */
    return !host_is_pvm();
}

const char *host_kvm_name(void)
{
    static const char *const names[] = { "kvm_pvm", "kvm_amd", "kvm_intel", "kvm" };
    return names[module_index()];
}
