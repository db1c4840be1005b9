#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""seeds.py: the crafted seeds of fuzz/corpus/<target>/ (fuzz/README.md).

    fuzz/seeds.py [CORPUS_DIR]      (default: fuzz/corpus next to this file)

Writes small valid inputs that no build produces: bzImages with and without
a compressed payload, kernel payloads in every format (made with Python's
zlib, bz2 and lzma, by hand for lzop and raw zstd, with Debian's zstd when
it is installed), ELF symbol files, synthetic traces, server
replies, guest-BTS programs.  Deterministic: running it again rewrites the
same bytes.  Seeds taken from real runs (traces of the stubs, the stubs'
multiboot images, their symbol maps) are copied by hand, as the README says.
"""
import bz2
import gzip
import lzma
import os
import struct
import subprocess
import sys
import zlib

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    assert len(data) < 64 * 1024, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- traces -------------------------------------------------------------------
MAGIC = b"VBTS\r\n\x1a\n"


def file_header(ncpus, flags=1, header_size=32, extra=b""):
    return MAGIC + struct.pack("<HHIIIII", 1, 0, header_size, 24, flags, ncpus, 0) + extra


def rec(fr, to, fl):
    return struct.pack("<QQQ", fr, to, fl)


def marker(qual, to, aux=0):
    return rec(0, to, 1 << 63 | qual << 48 | aux)


def branch(fr, to, kind):
    return rec(fr, to, kind << 8)


def chunk(cpu, seq, recs):
    return struct.pack("<IHHIIQ", 0x4B484356, cpu, 0, len(recs), 0, seq) + b"".join(recs)


T0 = 0x18EA48BF943BAF15
START, STOP, LOST, ARRIVE, DEPART = (marker(1, T0), marker(2, T0 + 2500), marker(3, 17),
                                     marker(4, 0x1000, 123), marker(5, 0x1000, 456))
# docs/format.md's example, byte for byte.
EXAMPLE = file_header(1) + chunk(0, 0, [START, branch(0x100000, 0x100010, 4),
                                        branch(0x100012, 0x100005, 6), STOP])


def traces():
    two = file_header(2) + chunk(0, 0, [START, ARRIVE, branch(0x1000, 0x2000, 1)]) + \
        chunk(1, 0, [START, branch(0xffffffff81000000, 0xffffffff81000010, 5)]) + \
        chunk(0, 3, []) + chunk(0, 3, [LOST, DEPART, branch(0, 0x10, 12), STOP]) + \
        chunk(1, 2, [marker(9, 0xABC, 5), rec(0, 1, 1 << 63 | 2 << 48 | 77), STOP])
    every_kind = file_header(1) + chunk(0, 0, [START] + [branch(0x100 + k, 0x200 + k, k) for k in range(0, 256, 5)] + [STOP])
    return {
        "example": EXAMPLE,
        "two_cpus": two,
        "kinds": every_kind,
        "no_kind_flag": file_header(1, flags=0) + chunk(0, 0, [START, branch(1, 2, 4), STOP]),
        "long_header": file_header(1, header_size=48, extra=b"\xee" * 16) + chunk(0, 5, [START, STOP]),
        "header_only": file_header(4),
        "truncated_record": EXAMPLE[:-7],
        "seq_gap": file_header(1) + chunk(0, 0, [START]) + chunk(0, 2, [STOP]),
        # Compressed streams (docs/format.md): raw zstd frames of 200 bytes
        # or less, cut anywhere; one cut off in its last frame; one frame
        # made by Debian's zstd, with real compressed blocks.
        "zstd_frames": zstd_frames(two),
        "zstd_cut": zstd_frames(EXAMPLE)[:-9],
        **({"zstd_tool": z} if (z := tool(["zstd", "-3", "-q", "-c"], EXAMPLE)) else {}),
    }


def zstd_frames(data, size=200):
    """data as raw zstd frames of size bytes at most."""
    return b"".join(zstd_raw(data[i:i + size]) for i in range(0, len(data), size))


# --- symbol files ---------------------------------------------------------------
def elf64_symbols(syms, text_addr=0x100000):
    """A relocatable-free ELF64 with .text, .symtab and .strtab: syms is [(name, addr, size, info)]."""
    shstr = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0"
    symtab = b"\0" * 24
    for name, addr, size, info in syms:
        off = len(strtab)
        strtab += name + b"\0"
        symtab += struct.pack("<IBBHQQ", off, info, 0, 1, addr, size)
    o_sym = 64
    o_str = o_sym + len(symtab)
    o_shs = o_str + len(strtab)
    o_sh = (o_shs + len(shstr) + 7) & ~7

    def sh(name, typ, flags, addr, off, size, link=0, info=0, align=1, ent=0):
        return struct.pack("<IIQQQQIIQQ", name, typ, flags, addr, off, size, link, info, align, ent)
    shdrs = (sh(0, 0, 0, 0, 0, 0) + sh(1, 8, 6, text_addr, o_sh, 0x1000, align=16) +
             sh(7, 2, 0, 0, o_sym, len(symtab), link=3, info=1, align=8, ent=24) +
             sh(15, 3, 0, 0, o_str, len(strtab)) + sh(23, 3, 0, 0, o_shs, len(shstr)))
    eh = (b"\x7fELF\x02\x01\x01" + b"\0" * 9 +
          struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, text_addr, 0, o_sh, 0, 64, 0, 0, 64, 5, 4))
    body = eh + symtab + strtab + shstr
    return body + b"\0" * (o_sh - len(body)) + shdrs


FUNC, OBJECT, NOTYPE = 0x12, 0x11, 0x10
ELF_SYMS = elf64_symbols([(b"_start", 0x100000, 0x10, FUNC), (b"main", 0x100010, 0x40, FUNC),
                          (b"data", 0x100800, 8, OBJECT), (b"label", 0x100050, 0, NOTYPE),
                          (b"alias", 0x100010, 0x40, FUNC)])
MAP_CTL = (b"0000000000100000 t esc\x1b[2Jred\x07\n0000000000100080 t del\x7futf\xc3\xa9\n"
           b"0000000000100090 t c1\xc2\x9b31m\"q\\\n")


def symbols():
    return {
        "elf64": ELF_SYMS,
        "elf64_long_name": elf64_symbols([(b'"\\' * 1500 + b"A" * 2000, 0x100000, 0, FUNC)]),
        "kallsyms": b"ffffffff81000000 T _stext\nffffffff81000010 t helper\t[mod]\n"
                    b"0000000000000000 A __per_cpu_start\n0000000000001000 D per_cpu_var\n"
                    b"0000000000002000 A __per_cpu_end\nffffffff81000020 W weak_fn\n",
        "control_names": MAP_CTL,
        "comments_blank": b"# a comment\n\n   \t\n0000000000100000 t start\n",
    }


# --- decode: u8 flags, u16 map length, map, trace ---------------------------------
def decode_input(sym, trace, flags=1):
    return struct.pack("<BH", flags, len(sym)) + sym + trace


def decode():
    return {
        "example_no_symbols": decode_input(b"", EXAMPLE, 0),
        "example_elf": decode_input(ELF_SYMS, EXAMPLE),
        "example_control_names": decode_input(MAP_CTL, EXAMPLE),
        "two_cpus_map": decode_input(b"0000000000001000 T f\nffffffff81000000 t k\n", traces()["two_cpus"]),
        "long_name": decode_input(symbols()["elf64_long_name"], EXAMPLE),
    }


# --- LZ4 legacy frames and bzImages ------------------------------------------------
LZ4_MAGIC = 0x184C2102


def lz4_literals(data):
    """One LZ4 block of literals only (the last sequence may be that)."""
    n = len(data)
    if n < 15:
        return bytes([n << 4]) + data
    rest, ext = n - 15, b""
    while rest >= 255:
        ext += b"\xff"
        rest -= 255
    return b"\xf0" + ext + bytes([rest]) + data


def lz4_frame(blocks, size=None):
    out = struct.pack("<I", LZ4_MAGIC)
    for b in blocks:
        out += struct.pack("<I", len(b)) + b
    if size is not None:
        out += struct.pack("<I", size)
    return out


# "abcabcabcabcXY": 3 literals, a 9-byte match at offset 3, 2 final literals (the unit test's).
LZ4_MATCH = bytes([0x35, ord("a"), ord("b"), ord("c"), 0x03, 0x00, 0x20, ord("X"), ord("Y")])


def lz4():
    return {
        "match": struct.pack("<H", 32) + lz4_frame([LZ4_MATCH], 14),
        "literals_long": struct.pack("<H", 400) + lz4_frame([lz4_literals(bytes(range(256)) + b"x" * 44)]),
        "two_frames": struct.pack("<H", 64) + lz4_frame([LZ4_MATCH]) + lz4_frame([LZ4_MATCH]),
        "long_match": struct.pack("<H", 4096) + lz4_frame([bytes([0x1F, ord("z"), 1, 0, 255, 255, 3, 0x10, ord("!")])]),
        # A match 12 bytes before the end and 5 literals after, as liblz4 wants them.
        "match_spec_margins": struct.pack("<H", 64) + lz4_frame([bytes([0x14, ord("a"), 1, 0, 0x50]) + b"xxxxx"], 14),
    }


# --- every payload format of the Linux boot protocol (vmm/boot/unpack.c) ---------------
TEXT = b"vmlinux " * 40 + bytes(range(256)) + b"\x90" * 300


def lzop(blocks, flags=0x03000001, method=1):
    """An lzop file as lzop 1.04 writes it: version 0x1040, adler32 of each block's data.
    blocks: (uncompressed, stored-or-LZO1X bytes) pairs."""
    h = struct.pack(">HHHBBIIII", 0x1040, 0x2080, 0x0940, method, 5, flags, 0, 0, 0) + b"\0"
    out = b"\x89LZO\0\r\n\x1a\n" + h + struct.pack(">I", zlib.adler32(h))
    for raw, packed in blocks:
        out += struct.pack(">III", len(raw), len(packed), zlib.adler32(raw)) + packed
    return out + struct.pack(">I", 0)


def zstd_raw(data, rle=False):
    """A zstd frame of one block, raw or RLE, single segment, its size in the header."""
    assert len(data) < 256
    block = bytes([data[0]]) if rle else data
    bh = 1 | (1 if rle else 0) << 1 | len(data) << 3
    return b"\x28\xb5\x2f\xfd\x20" + bytes([len(data)]) + struct.pack("<I", bh)[:3] + block


def tool(argv, data):
    """Debian's compressor, when it is installed (seeds stay the same for one version)."""
    try:
        return subprocess.run(argv, input=data, stdout=subprocess.PIPE, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def unpack():
    cap = struct.pack("<H", 2048)
    seeds = {"lz4_" + k: v for k, v in lz4().items()}
    seeds.update({
        "gzip": cap + gzip.compress(TEXT, 9, mtime=0),
        "bzip2": cap + bz2.compress(TEXT, 1),
        "lzma": cap + lzma.compress(TEXT, format=lzma.FORMAT_ALONE, preset=1),
        "xz_x86": cap + lzma.compress(TEXT, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
                                      filters=[{"id": lzma.FILTER_X86}, {"id": lzma.FILTER_LZMA2, "preset": 1}]),
        # Stored blocks (lzop keeps a block that does not shrink as it is).
        "lzop_stored": cap + lzop([(TEXT[:100], TEXT[:100]), (TEXT[100:300], TEXT[100:300])]),
        "zstd_raw": cap + zstd_raw(TEXT[:200]),
        "zstd_rle": cap + zstd_raw(b"\x90" * 200, rle=True),
        "elf": cap + vmlinux(),
    })
    z = tool(["zstd", "-19", "-q", "-c"], TEXT)
    if z:
        seeds["zstd"] = cap + z
    z = tool(["lzop", "-9", "-c"], TEXT)
    if z:
        seeds["lzop"] = cap + lzop_no_mtime(z)
    return seeds


def lzop_no_mtime(z):
    """lzop's own file with its time stamp zeroed (and its header checksum redone)."""
    z = bytearray(z)
    assert z[9:11] >= b"\x09\x40" and not struct.unpack_from(">I", z, 17)[0] & 0x1000
    z[25:33] = bytes(8)
    end = 34 + z[33]
    struct.pack_into(">I", z, end, zlib.adler32(bytes(z[9:end])))
    return bytes(z)


def vmlinux(paddr=0x1000000, code=b"\x90" * 64 + b"\xf4"):
    """An ELF64 x86-64 executable: one PT_LOAD of code at paddr, entry at its start."""
    ph_off, code_off = 64, 64 + 56
    eh = (b"\x7fELF\x02\x01\x01" + b"\0" * 9 +
          struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, paddr, ph_off, 0, 0, 64, 56, 1, 64, 0, 0))
    ph = struct.pack("<IIQQQQQQ", 1, 5, code_off, 0xFFFFFFFF80000000 + paddr, paddr,
                     len(code), len(code) + 0x1000, 0x1000)
    return eh + ph + code


def bzimage(payload=b"", version=0x020F, xloadflags=1, kernel=b"\x90" * 2048, init_size=0x100000):
    """The unit tests' bzImage: one setup sector, a 64-bit entry, the payload in the kernel part."""
    img = bytearray(1024)
    img[0x1F1] = 1
    struct.pack_into("<H", img, 0x1FE, 0xAA55)
    img[0x201] = 0x66
    img[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", img, 0x206, version)
    img[0x211] = 0x01
    struct.pack_into("<I", img, 0x22C, 0x7FFFFFFF)
    struct.pack_into("<I", img, 0x230, 0x200000)
    struct.pack_into("<H", img, 0x236, xloadflags)
    struct.pack_into("<I", img, 0x238, 2048)
    struct.pack_into("<I", img, 0x258, 0x1000000)
    struct.pack_into("<I", img, 0x260, init_size)
    body = kernel
    if payload:
        struct.pack_into("<I", img, 0x248, len(kernel))
        struct.pack_into("<I", img, 0x24C, len(payload))
        body = kernel + payload
    return bytes(img) + body


def linux():
    vm = vmlinux()
    packed = lz4_frame([lz4_literals(vm)], len(vm))
    return {
        "plain": b"\x00" + bzimage(),
        "plain_initrd_long_cmdline": b"\x13" + bzimage(),
        "lz4_vmlinux": b"\x00" + bzimage(packed),
        "lz4_vmlinux_initrd": b"\x05" + bzimage(packed),
        "gzip_vmlinux": b"\x00" + bzimage(gzip.compress(vm, 9, mtime=0)),
        "xz_vmlinux": b"\x00" + bzimage(lzma.compress(vm, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32) +
                                        struct.pack("<I", len(vm))),
        "zstd_vmlinux": b"\x00" + bzimage(zstd_raw(vm[:200]) + struct.pack("<I", 200)),
        "elf_vmlinux": b"\x00" + bzimage(vm),
        "old_protocol": b"\x00" + bzimage(version=0x020B),
    }


# --- multiboot images (the stubs' own images are copied from a build) ------------
MB_MAGIC = 0x1BADB002


def mb_header(flags, *aout):
    return struct.pack("<III", MB_MAGIC, flags, -(MB_MAGIC + flags) & 0xFFFFFFFF) + \
        b"".join(struct.pack("<I", v) for v in aout)


def elf32_multiboot(paddr=0x100000, vaddr=0x100000, bss=0x100):
    """An ELF32 i386 executable, one PT_LOAD: a multiboot header (flags 0), then HLT."""
    code = mb_header(0) + b"\xfa\xf4\xeb\xfd"
    off = 52 + 32
    eh = (b"\x7fELF\x01\x01\x01" + b"\0" * 9 +
          struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, vaddr + 12, 52, 0, 0, 52, 32, 1, 40, 0, 0))
    ph = struct.pack("<IIIIIIII", 1, off, vaddr, paddr, len(code), len(code) + bss, 5, 0x1000)
    return eh + ph + code


def multiboot():
    load = 0x100000
    aout = mb_header(1 << 16, load, load, 0, load + 0x100, load + 0x20) + b"\x90" * 32
    return {
        "aout_kludge": aout,
        "aout_load_end": mb_header(1 << 16, load, load, load + 64, load + 0x1000, load + 0x20) + b"\x90" * 32,
        "elf32": elf32_multiboot(),
        "elf32_virtual_entry": elf32_multiboot(vaddr=0xC0100000),
    }


# --- client: what a server sends ----------------------------------------------------
def msg(typ, payload):
    return struct.pack("<IHHI", 0x4C544356, typ, 0, len(payload)) + payload


HELLO = msg(0x8001, struct.pack("<IHHII", 0, 1, 0, 2, 1))


def status_reply(ncpus=2):
    head = struct.pack("<IIIIIIQQ", 0, ncpus, 1, 3, 1, 1, 2400, 1 << 20)
    cpus = b"".join(struct.pack("<QQQQQQII", 10, 100, 3, 0, 0, 0, 0, 0) for _ in range(ncpus))
    return msg(0x8002, head + cpus)


def client():
    get = msg(0x8005, struct.pack("<IHHQ", 0, 0, 0, 7) + branch(0x1000, 0x2000, 4))
    note = msg(0x4001, struct.pack("<HHIQQ", 1, 0, 1, 10, 10))
    err = msg(0x8005, struct.pack("<I", 9) + b"index 10 out of range\x1b[31m")
    return {
        "hello_status_get": HELLO + status_reply() + get,
        "notify_then_replies": HELLO + note + status_reply() + note + get + note,
        "error_reply": HELLO + status_reply() + err,
        "chunks_after": HELLO + status_reply() + get + chunk(0, 0, [START, branch(1, 2, 3), STOP]) + chunk(1, 4, []),
        "plain_stream": EXAMPLE,
        "hello_refused": msg(0x8001, struct.pack("<I", 5) + b"unsupported protocol version"),
    }


# --- proto: a client's bytes to the server (first byte: overflow mode, buffer size) ---
def proto():
    hello_zstd = msg(1, struct.pack("<HHI", 1, 1, 1))
    stream = msg(8, bytes(8))
    return {
        # drop mode, 11 records: HELLO 1.1 asking for ZSTD, then STREAM.
        "hello_zstd_stream": bytes([41]) + hello_zstd + stream,
        "hello_unknown_option": bytes([41]) + msg(1, struct.pack("<HHI", 1, 1, 6)) + stream,
    }


# --- guest BTS programs (fuzz/fuzz_guest_bts.c's opcodes) ---------------------------
def op_wrmsr(sel, value, cpu=0):
    return bytes([0 | cpu << 7, sel]) + struct.pack("<Q", value)


def op_store(fr, to, cpl=0, cpu=0):
    return bytes([2 | cpu << 7]) + struct.pack("<QQB", fr, to, cpl)


def op_mode(mode, cr3_page):
    return bytes([3, mode]) + struct.pack("<H", cr3_page)


def op_word(at, value):
    return bytes([5]) + struct.pack("<HQ", at // 8, value)


DEBUGCTL, DS_AREA, MISC = 0, 1, 2
TR_BTS, BTINT, OFF_OS = 0xC0, 0x100, 0x200


def ds(at, base, index, maximum, threshold):
    return op_word(at, base) + op_word(at + 8, index) + op_word(at + 16, maximum) + op_word(at + 24, threshold)


def guest_bts():
    stores = b"".join(op_store(0x1000 + i, 0x2000 + i, i % 4) for i in range(6))
    circular = ds(0x1000, 0x2000, 0x2000, 0x2000 + 4 * 24, 0x2000 + 2 * 24) + \
        op_wrmsr(DS_AREA, 0x1000) + op_wrmsr(DEBUGCTL, TR_BTS) + stores
    linear = ds(0x1000, 0x2000, 0x2000, 0x2000 + 4 * 24, 0x2000 + 2 * 24) + \
        op_wrmsr(DS_AREA, 0x1000) + op_wrmsr(DEBUGCTL, TR_BTS | BTINT) + stores + bytes([1, 0])
    # Long mode: PML4 at 0x3000 -> PDPT 0x4000 -> PD 0x5000 -> 2 MiB page 0 (RAM is 128 KiB).
    paged = op_word(0x3000, 0x4003) + op_word(0x4000, 0x5003) + op_word(0x5000, 0x83) + \
        op_mode(5, 3) + ds(0x1000, 0x2000, 0x2000, 0x2000 + 4 * 24, 0x2000 + 2 * 24) + \
        op_wrmsr(DS_AREA, 0x1000) + op_wrmsr(DEBUGCTL, TR_BTS) + stores
    unmapped = op_mode(5, 3) + op_wrmsr(DS_AREA, 0x7FFF0000) + op_wrmsr(DEBUGCTL, TR_BTS) + stores
    soft_pf = bytes([6]) + (0x6000).to_bytes(3, "little") + (0xFFF).to_bytes(2, "little") + unmapped
    cpu1 = op_wrmsr(MISC, 1 << 11, 1) + op_wrmsr(DS_AREA, 0x1000, 1) + op_wrmsr(DEBUGCTL, TR_BTS | OFF_OS, 1) + \
        ds(0x1000, 0x2000, 0x2000, 0x2000 + 4 * 24, 0x2000 + 2 * 24) + op_store(1, 2, 0, 1) + op_store(3, 4, 3, 1)
    return {"circular": circular, "linear_pmi": linear, "long_mode_paged": paged,
            "ds_unmapped": unmapped, "soft_event_pf": soft_pf, "cpu1_cpl_filter": cpu1}


# --- gdb's remote protocol ------------------------------------------------------
def rsp(payload):
    return b"$%s#%02x" % (payload, sum(payload) & 0xFF)


def gdb():
    hello = b"+" + rsp(b"qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+") + rsp(b"vMustReplyEmpty") + \
        rsp(b"QStartNoAckMode") + rsp(b"Hg0") + rsp(b"qXfer:features:read:target.xml:0,ffb") + \
        rsp(b"qXfer:features:read:target.xml:ffb,ffb") + rsp(b"qTStatus") + rsp(b"?") + rsp(b"qfThreadInfo") + \
        rsp(b"qsThreadInfo") + rsp(b"qAttached") + rsp(b"g") + rsp(b"m10000,40")
    record = rsp(b"Z1,10010,1") + rsp(b"vCont;c") + rsp(b"z1,10010,1") + rsp(b"Qbtrace-conf:bts:size=0x10000") + \
        rsp(b"Qbtrace:bts") + rsp(b"qXfer:btrace-conf:read::0,fff") + rsp(b"vCont;s:1;c") + \
        rsp(b"qXfer:btrace:read:all:0,fff") + rsp(b"vCont;s:1") + rsp(b"qXfer:btrace:read:delta:0,fff") + \
        rsp(b"qXfer:btrace:read:new:0,fff") + rsp(b"Qbtrace:off")
    memory = rsp(b"M10000,4:deadbeef") + rsp(b"X10004,2:}\x03}\x04") + rsp(b"m10000,8") + rsp(b"P0=adde000000000000") + \
        rsp(b"vCont;c") + rsp(b"P0=0000000000000000") + rsp(b"c10020") + b"\x03" + rsp(b"Z2,10040,4") + rsp(b"Z4,10041,4") + \
        rsp(b"Z3,10040,4") + rsp(b"G" + b"00" * 8) + rsp(b"D") + rsp(b"k") + b"$g#00"
    threads = rsp(b"Hg2") + rsp(b"T2") + rsp(b"qThreadExtraInfo,2") + rsp(b"vCont;t:1;s:2") + rsp(b"Hc-1") + \
        rsp(b"s") + rsp(b"vCont;c:3;C05") + rsp(b"qC")
    return {"hello": bytes([0]) + hello, "record_btrace": bytes([0]) + hello + record,
            "memory_registers": bytes([1]) + hello + memory, "threads_4cpu": bytes([6]) + hello + threads}


def stretch():
    """Long mode with a 2 MiB identity page, a GDT, an IDT for #DE, #SS, #GP and #PF: code to plan from."""
    ram = bytearray(0x9100)
    struct.pack_into("<Q", ram, 0x1000, 0x2003)
    struct.pack_into("<Q", ram, 0x2000, 0x3003)
    struct.pack_into("<Q", ram, 0x3000, 0x83)
    struct.pack_into("<QQQ", ram, 0x6000, 0, 0x00af9a000000ffff, 0x00cf92000000ffff)
    for vec in (0, 12, 13, 14):
        struct.pack_into("<HHBBHQ", ram, 0x8000 + 16 * vec, 0x9000, 0x08, 0, 0x8e, 0, 0)
    seeds = {}
    codes = {
        # nop; call +5 (to 0x400b); mov eax,[rbx]; jnz; ... 0x400b: div ecx; ret
        "calls_loads_div": bytes.fromhex("90e80500000" "08b037500" "90f7f1c3"),
        # L: dec ecx; jnz L; jmp $
        "loop": bytes.fromhex("ffc975fcebfe"),
        # push rax; ret; jmp [rip+0]; ud2; out 0x80, al; iretq
        "indirect_io": bytes.fromhex("50c3ff250000000000000000" "0f0be68048cf"),
    }
    for name, code in codes.items():
        r = bytearray(ram)
        r[0x4000:0x4000 + len(code)] = code
        regs = bytes([0x43, 0x40, 0x00, 0x50, 0x00, 3, 0x44, 0x22])
        seeds[name] = regs + bytes(r)
    seeds["real_mode"] = bytes([0x00, 0x40, 0x00, 0x50, 0x00, 2, 0x40, 0x01]) + bytes(0x4000) + codes["loop"]
    return seeds


def main():
    for target, seeds in (("reader", traces()), ("symbols", symbols()), ("decode", decode()),
                          ("unpack", unpack()), ("linux", linux()), ("multiboot", multiboot()), ("client", client()), ("proto", proto()),
                          ("guest_bts", guest_bts()), ("gdb", gdb()), ("stretch", stretch())):
        for name, data in seeds.items():
            put(target, name, data)


if __name__ == "__main__":
    main()
