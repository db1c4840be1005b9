/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "x86/host.h"

Test(host, names_the_module_it_finds)
{
    const char *n = host_kvm_name();
    if (access("/sys/module/kvm_pvm", F_OK) == 0) {
        cr_assert_str_eq(n, "kvm_pvm");
        cr_assert(host_is_pvm());
        cr_assert_not(host_steps_user());
    } else {
        cr_assert_not(host_is_pvm());
        cr_assert(host_steps_user());
        cr_assert(!strcmp(n, "kvm_amd") || !strcmp(n, "kvm_intel") || !strcmp(n, "kvm"), "%s", n);
    }
}
