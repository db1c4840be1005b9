# SPDX-License-Identifier: MIT
"""The load range of a flat multiboot v1 image (a.out kludge), for the
oracle tools in this directory.  No code here is shared with vbts."""

import struct

MB_MAGIC = 0x1BADB002


class ImageError(Exception):
    pass


def multiboot_range(image):
    """(load_addr, length): from load_addr to the end of bss (or of the
    loaded part when there is no bss), per the multiboot header."""
    with open(image, "rb") as f:
        data = f.read()
    for off in range(0, min(len(data), 8192) - 32 + 1, 4):
        magic, flags, csum = struct.unpack_from("<III", data, off)
        if magic != MB_MAGIC or (magic + flags + csum) & 0xFFFFFFFF:
            continue
        if not flags & (1 << 16):
            raise ImageError("%s: multiboot header without address fields "
                             "(flag bit 16)" % image)
        hdr, load, load_end, bss_end, _entry = struct.unpack_from(
            "<IIIII", data, off + 12)
        text_off = off - (hdr - load)       # file offset of load_addr
        end = load_end if load_end else load + len(data) - text_off
        end = max(end, bss_end)
        return load, end - load
    raise ImageError("%s: no multiboot header in the first 8 KiB" % image)


def parse_range(s):
    """'START+LEN' (decimal or 0x hex) -> (start, length)."""
    a, sep, b = s.partition("+")
    if not sep:
        raise ValueError("range is START+LEN")
    return int(a, 0), int(b, 0)
