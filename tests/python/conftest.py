# SPDX-License-Identifier: MIT
"""pytest setup for the Python package's tests (tests/run runs them; by
hand: BUILD=build scripts/python -m pytest tests/python).

The package is imported from python/ with $VBTS_LIB pointing at
$BUILD/libvbtsdecode.so; vbts, vbts-decode, vbts-ctl and the stubs come from
the environment as for tests/e2e (VBTS, VBTS_DECODE, STUBS), else $BUILD.
Traces are written by vbts itself, in each test's run, on this machine's
KVM: what is tested is the binding, which does not depend on the host.

Under make check the library is the ASan+UBSan build, loaded into Python
with the sanitizer runtimes preloaded (tests/run): LD_PRELOAD is taken out
of the environment here so that the programs the tests start do not get it
(they are sanitized builds or system tools), and PRELOAD keeps it for the
Pythons they start."""
import os
import socket
import struct
import subprocess
import sys
import threading

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
VBTS = os.path.abspath(os.environ.get("VBTS", os.path.join(BUILD, "vbts")))
VBTS_DECODE = os.path.abspath(os.environ.get("VBTS_DECODE", os.path.join(BUILD, "vbts-decode")))
VBTS_CTL = os.path.join(os.path.dirname(VBTS_DECODE), "vbts-ctl")
STUBS = os.path.abspath(os.environ.get("STUBS", os.path.join(BUILD, "guest-stub")))
os.environ.setdefault("VBTS_LIB", os.path.join(BUILD, "libvbtsdecode.so"))
os.environ["VBTS_LIB"] = os.path.abspath(os.environ["VBTS_LIB"])
PRELOAD = os.environ.pop("LD_PRELOAD", None)
sys.path.insert(0, os.path.join(ROOT, "python"))

import vbts  # noqa: E402

needs_kvm = pytest.mark.skipif(not (os.access("/dev/kvm", os.R_OK | os.W_OK) and os.access(VBTS, os.X_OK)),
                               reason="no usable /dev/kvm or no vbts built")


def mb_image(out, code):
    """A flat multiboot image (a.out kludge) at 1 MiB: the header, then 32-bit code."""
    asm = out + ".asm"
    with open(asm, "w") as f:
        f.write("bits 32\norg 0x100000\nhdr: dd 0x1badb002, 0x10000, -(0x1badb002 + 0x10000)\n"
                "     dd hdr, hdr, 0, 0, start\nstart:\n" + code + "\n")
    subprocess.run(["nasm", "-f", "bin", "-o", out, asm], check=True)
    return out


def loop_image(out, loops):
    """call/ret loops times, then debug-exit 0 (status 1): start, ctx-arrive,
    3 * loops - 1 branches, stop."""
    return mb_image(out, "    mov ecx, %d\n.l: call f\n    dec ecx\n    jnz .l\n"
                         "    mov al, 0\n    out 0xf4, al\nf:  ret" % loops)


def run_vbts(*args, timeout=120):
    p = subprocess.run([VBTS, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p


def decode(*args, stdin=None):
    """vbts-decode --format json ARGS: (status, lines, stderr without "vbts-decode: ")."""
    p = subprocess.run([VBTS_DECODE, "--format", "json", *args], stdin=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    err = p.stderr.decode()
    assert err == "" or err.startswith("vbts-decode: "), err
    return p.returncode, p.stdout.decode().splitlines(), err[len("vbts-decode: "):].rstrip("\n")


def json_line(r):
    """A record as vbts-decode --format json prints it (decoder/cli/format.c)."""
    if isinstance(r, vbts.Branch):
        return '{"cpu":%d,"seq":%d,"from":"%#x","to":"%#x","kind":"%s"}' % (
            r.cpu, r.seq, r.from_, r.to, r.kind_name)
    head = '{"cpu":%d,"seq":%d,"kind":"%s"' % (r.cpu, r.seq, r.name)
    if isinstance(r, vbts.Stop):
        return head + ',"reason":"%s","time_ns":%d}' % (r.reason, r.time_ns)
    if isinstance(r, vbts.Start):
        return head + ',"time_ns":%d}' % r.time_ns
    if isinstance(r, vbts.Lost):
        return head + ',"lost":%d}' % r.count
    if isinstance(r, vbts.CtxArrive):
        return head + ',"cr3":"%#x","t_ns":%d}' % (r.cr3, r.t_ns)
    return head + ',"to":"%#x","aux":%d}' % (r.to, r.aux)


def read_objects(source, **kw):
    """Iterate a trace: (its records as vbts-decode's JSON lines, the exception or None)."""
    lines = []
    try:
        with vbts.open(source, **kw) as t:
            for r in t:
                lines.append(json_line(r))
    except vbts.Error as e:
        return lines, e
    return lines, None


def read_chunks(source, size=vbts.CHUNK, **kw):
    """chunks(): (the branches' JSON lines, the markers' lines, the
    exception or None).  Also checks the arrays are what they say."""
    branches, t = [], None
    try:
        with vbts.open(source, **kw) as t:
            for a in t.chunks(size):
                assert a.dtype == vbts.BRANCH_DTYPE and 0 < a.size <= size
                branches.extend(json_line(vbts.Branch(*x)) for x in a.tolist())
    except vbts.Error as e:
        return branches, [json_line(m) for m in t.markers] if t else [], e
    return branches, [json_line(m) for m in t.markers], None


def split(lines):
    """vbts-decode's lines: (branches, markers)."""
    return [l for l in lines if '"from"' in l], [l for l in lines if '"from"' not in l]


@pytest.fixture(scope="session")
def loop_trace(tmp_path_factory):
    """One run of a 3000-iteration loop into a plain file and a .zst (9002
    records: 3 chunks); the paths and vbts-decode's JSON lines."""
    if not (os.access("/dev/kvm", os.R_OK | os.W_OK) and os.access(VBTS, os.X_OK)):
        pytest.skip("no usable /dev/kvm or no vbts built")
    d = tmp_path_factory.mktemp("loop")
    img = loop_image(str(d / "l.bin"), 3000)
    plain, packed = str(d / "l.vbts"), str(d / "l.vbts.zst")
    p = run_vbts("-q", "--trace", plain, "--trace", packed, img)
    assert p.returncode == 1, p.stderr
    st, lines, err = decode(plain)
    assert st == 0 and len(lines) == 9002, err
    return plain, packed, lines


class FakeMonitor:
    """A monitor on a unix socket that speaks HELLO and STREAM, then sends
    `data` (bytes of a real trace, maybe cut) and closes: a stream closed
    mid-stream, the same for every client (`clients` of them)."""

    def __init__(self, path, data, clients=2, ncpus=1, flags=1):
        self.path, self.data, self.ncpus, self.flags = path, data, ncpus, flags
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(path)
        self.sock.listen(clients)
        self.thread = threading.Thread(target=self._serve, args=(clients,), daemon=True)
        self.thread.start()

    @staticmethod
    def _read(c, n):
        d = b""
        while len(d) < n:
            b = c.recv(n - len(d))
            if not b:
                raise EOFError
            d += b
        return d

    def _serve(self, clients):
        for _ in range(clients):
            c, _ = self.sock.accept()
            with c:
                _, t, _, n = struct.unpack("<4sHHI", self._read(c, 12))
                self._read(c, n)
                c.sendall(struct.pack("<4sHHI", b"VCTL", 0x8000 | t, 0, 16) +
                          struct.pack("<IHHII", 0, 1, 1, self.ncpus, self.flags))
                _, t, _, n = struct.unpack("<4sHHI", self._read(c, 12))
                self._read(c, n)
                c.sendall(struct.pack("<4sHHI", b"VCTL", 0x8000 | t, 0, 4) + bytes(4))
                c.sendall(self.data)

    def close(self):
        self.thread.join(30)
        self.sock.close()
