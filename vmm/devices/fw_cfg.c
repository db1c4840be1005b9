/* SPDX-License-Identifier: MIT */
/*
 * fw_cfg as QEMU's x86 machines have it at ports 0x510-0x511, with the DMA
 * interface off (the feature bits say so, and port 0x514 is not there).
 *
 * What the guest sees, access by access:
 *  - a 16-bit write to 0x510 selects an item and rewinds it;
 *  - a byte read from 0x510 or 0x511 gives the item's next byte, and 0
 *    once it is read whole;
 *  - a key no item has reads 0, as QEMU answers a key it does not have
 *    (whether beyond its table or an empty slot in it);
 *  - byte writes (the old write interface QEMU dropped in 2.4) and wider
 *    reads and writes do nothing: the wider reads give 0, as QEMU's
 *    invalid accesses do.
 * Integers are little-endian; the file directory is big-endian, as in QEMU.
 */
#include "devices/fw_cfg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vbts/le.h"

#define KEY_MASK     0x3fffu           /* without the write and arch-local bits */
#define FILE_NAME    56
#define DIR_ENTRY    (4 + 2 + 2 + FILE_NAME)
#define MAX_ITEMS    (10 + FW_CFG_MAX_FILES)

struct item {
    uint16_t key;
    uint32_t len;
    uint8_t *data;
};

struct fw_cfg {
    struct io_device dev;
    pthread_mutex_t lock;       /* vCPUs may race on the selector: one access at a time */
    const struct item *cur;     /* NULL: no item for the selected key */
    uint32_t offset;
    int nitems;
    struct item items[MAX_ITEMS];
};

static const struct item *find(const struct fw_cfg *f, uint16_t key)
{
    for (int i = 0; i < f->nitems; i++)
        if (f->items[i].key == key)
            return &f->items[i];
    return NULL;
}

static void fw_cfg_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data,
                      int size)
{
    struct fw_cfg *f = dev->opaque;
    (void)cpu;
    (void)off;
    memset(data, 0, (size_t)size);
    if (size != 1)
        return;
    pthread_mutex_lock(&f->lock);
    if (f->cur && f->offset < f->cur->len)
        data[0] = f->cur->data[f->offset++];
    pthread_mutex_unlock(&f->lock);
}

static void fw_cfg_out(struct io_device *dev, struct vcpu *cpu, uint16_t off,
                       const uint8_t *data, int size)
{
    struct fw_cfg *f = dev->opaque;
    (void)cpu;
    if (off != 0 || size != 2)
        return;
    uint16_t key = vbts_le16(data);
    pthread_mutex_lock(&f->lock);
    /* The write bit selects the same item (for writes QEMU refuses anyway). */
    f->cur = (key & 0x8000) ? NULL : find(f, key & KEY_MASK);
    f->offset = 0;
    pthread_mutex_unlock(&f->lock);
}

static void fw_cfg_release(struct io_device *dev)
{
    struct fw_cfg *f = dev->opaque;
    for (int i = 0; i < f->nitems; i++)
        free(f->items[i].data);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static int add(struct fw_cfg *f, uint16_t key, const void *data, uint32_t len)
{
    struct item *it = &f->items[f->nitems];
    if (!(it->data = malloc(len ? len : 1)))
        return error_fail("out of memory");
    memcpy(it->data, data, len);
    it->key = key;
    it->len = len;
    f->nitems++;
    return 0;
}

static int add_int(struct fw_cfg *f, uint16_t key, uint64_t v, int bytes)
{
    uint8_t b[8];
    vbts_put64(b, v);
    return add(f, key, b, (uint32_t)bytes);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct fw_cfg_file *)a)->name, ((const struct fw_cfg_file *)b)->name);
}

/* The directory (a big-endian count, then size, key and name per file), then the files. */
static int add_files(struct fw_cfg *f, const struct fw_cfg_config *c)
{
    if (c->nfiles < 0 || c->nfiles > FW_CFG_MAX_FILES)
        return error_fail("fw_cfg: %d files (at most %d)", c->nfiles, FW_CFG_MAX_FILES);
    struct fw_cfg_file sorted[FW_CFG_MAX_FILES];
    if (c->nfiles)
        memcpy(sorted, c->files, (size_t)c->nfiles * sizeof(sorted[0]));
    qsort(sorted, (size_t)c->nfiles, sizeof(sorted[0]), by_name);
    uint8_t dir[4 + FW_CFG_MAX_FILES * DIR_ENTRY] = { 0 };
    uint8_t *e = dir + 4;
    dir[3] = (uint8_t)c->nfiles;
    for (int i = 0; i < c->nfiles; i++, e += DIR_ENTRY) {
        size_t n = strlen(sorted[i].name);
        if (n == 0 || n >= FILE_NAME)
            return error_fail("fw_cfg: file name '%s' is empty or too long", sorted[i].name);
        uint32_t size = sorted[i].size;
        uint16_t key = (uint16_t)(FW_CFG_FILE_FIRST + i);
        e[0] = (uint8_t)(size >> 24), e[1] = (uint8_t)(size >> 16);
        e[2] = (uint8_t)(size >> 8), e[3] = (uint8_t)size;
        e[4] = (uint8_t)(key >> 8), e[5] = (uint8_t)key;
        memcpy(e + 8, sorted[i].name, n);
        if (add(f, key, sorted[i].data, size) < 0)
            return -1;
    }
    return add(f, FW_CFG_FILE_DIR, dir, (uint32_t)(e - dir));
}

static int add_items(struct fw_cfg *f, const struct fw_cfg_config *c)
{
    static const uint8_t uuid[16];
    if (add(f, FW_CFG_SIGNATURE, "QEMU", 4) < 0 ||
        add_int(f, FW_CFG_ID, 1, 4) < 0 ||                  /* the port interface, no DMA */
        add(f, FW_CFG_UUID, uuid, sizeof(uuid)) < 0 ||
        add_int(f, FW_CFG_RAM_SIZE, c->ram_size, 8) < 0 ||
        add_int(f, FW_CFG_NOGRAPHIC, 1, 2) < 0 ||           /* no display, as -display none */
        add_int(f, FW_CFG_NB_CPUS, c->ncpus, 2) < 0 ||
        add_int(f, FW_CFG_BOOT_MENU, 0, 2) < 0 ||
        add_int(f, FW_CFG_MAX_CPUS, c->ncpus, 2) < 0)       /* APIC IDs 0..ncpus-1 */
        return -1;
    return add_files(f, c);
}

int fw_cfg_register(struct iobus *bus, const struct fw_cfg_config *c)
{
    struct fw_cfg *f = calloc(1, sizeof(*f));
    if (!f)
        return error_fail("out of memory");
    pthread_mutex_init(&f->lock, NULL);
    f->dev = (struct io_device){ .name = "fw_cfg", .base = FW_CFG_PORT, .len = 2, .opaque = f,
                                 .in = fw_cfg_in, .out = fw_cfg_out, .release = fw_cfg_release };
    if (add_items(f, c) < 0 || iobus_register(bus, &f->dev) < 0) {
        fw_cfg_release(&f->dev);
        return -1;
    }
    f->cur = find(f, FW_CFG_SIGNATURE);     /* as after QEMU's reset */
    return 0;
}
