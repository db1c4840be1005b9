/* SPDX-License-Identifier: MIT */
/*
 * QEMU's firmware configuration device (fw_cfg), its x86 port interface
 * without DMA: a 16-bit selector written to port 0x510, the selected
 * item's bytes read one at a time from 0x511 (docs/devices.md).  The
 * items are what multiboot test kernels read: the signature, the feature
 * bits, the CPU count and the RAM size, and a file directory.
 */
#ifndef VBTS_DEVICES_FW_CFG_H
#define VBTS_DEVICES_FW_CFG_H

#include <stdint.h>

#include "core/iobus.h"

#define FW_CFG_PORT        0x510
#define FW_CFG_MAX_FILES   8

/* Well-known selector keys (QEMU's docs/specs/fw_cfg.rst). */
#define FW_CFG_SIGNATURE   0x00
#define FW_CFG_ID          0x01
#define FW_CFG_UUID        0x02
#define FW_CFG_RAM_SIZE    0x03
#define FW_CFG_NOGRAPHIC   0x04
#define FW_CFG_NB_CPUS     0x05
#define FW_CFG_BOOT_MENU   0x0e
#define FW_CFG_MAX_CPUS    0x0f
#define FW_CFG_FILE_DIR    0x19
#define FW_CFG_FILE_FIRST  0x20

struct fw_cfg_file {
    const char *name;           /* at most 55 bytes */
    const void *data;           /* copied */
    uint32_t size;
};

struct fw_cfg_config {
    uint16_t ncpus;
    uint64_t ram_size;          /* bytes of RAM, all of it */
    const struct fw_cfg_file *files;
    int nfiles;                 /* up to FW_CFG_MAX_FILES; listed by name */
};

/* Ports 0x510-0x511; the device is freed with the bus. */
int fw_cfg_register(struct iobus *bus, const struct fw_cfg_config *c);

#endif
