# SPDX-License-Identifier: MIT
"""Reading traces vbts wrote: every form of input gives vbts-decode's
records, as objects and as NumPy arrays."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import vbts
from conftest import PRELOAD, ROOT, decode, read_chunks, read_objects, split


def test_iteration_is_vbts_decode(loop_trace):
    plain, packed, lines = loop_trace
    for path in (plain, packed):
        got, exc = read_objects(path)
        assert exc is None
        assert got == lines


def test_objects(loop_trace):
    with vbts.open(loop_trace[0]) as t:
        assert (t.ncpus, t.has_kinds, t.header.version_major) == (1, True, 1)
        recs = list(t)
        assert [m.name for m in t.markers] == ["start", "ctx-arrive", "stop"]
    assert [type(r).__name__ for r in recs[:4]] == ["Start", "CtxArrive", "Branch", "Branch"]
    call, ret = recs[2], recs[3]
    assert (call.kind_name, ret.kind_name, call.kind) == ("call", "ret", 4)
    assert call.to == ret.from_ and not call.predicted
    assert call.flags == 4 << 8
    stop = recs[-1]
    assert isinstance(stop, vbts.Stop) and stop.reason == "guest-exit" and stop.reason_code == 0
    assert stop.time_ns >= recs[0].time_ns > 1.7e18
    assert repr(call).startswith("Branch(cpu=0, seq=2, from_=0x")
    assert len(recs) == 9002 and [r.seq for r in recs] == list(range(9002))


def test_chunks_are_the_branches(loop_trace):
    plain, packed, lines = loop_trace
    want_b, want_m = split(lines)
    for path in (plain, packed):
        for size in (vbts.CHUNK, 1000, 1):
            b, m, exc = read_chunks(path, size=size)
            assert exc is None and b == want_b and m == want_m


def test_chunk_arrays(loop_trace):
    with vbts.open(loop_trace[1]) as t:
        arrs = list(t.chunks(4096))
        assert len(t.markers) == 3 and t.lost == 0
    assert [a.size for a in arrs] == [4096, 4096, 8999 - 8192]
    a = np.concatenate(arrs).astype(vbts.BRANCH_DTYPE)
    assert a.dtype.names == ("cpu", "seq", "from", "to", "kind", "flags")
    assert a.dtype == vbts.BRANCH_DTYPE and a.dtype.itemsize == 40
    assert (a["seq"] == np.arange(2, 9001)).all() and (a["cpu"] == 0).all()
    assert np.bincount(a["kind"]).tolist() == [0, 2999, 0, 0, 3000, 0, 3000]
    assert ((a["flags"] >> 8) & 0xff == a["kind"]).all()
    assert not a.flags.owndata or a.base is None   # a plain array, not a view of ours
    with vbts.open(loop_trace[0]) as t:
        b = t.to_numpy()
    assert (a == b).all()


def test_iteration_and_chunks_go_on_from_each_other(loop_trace):
    plain, _, lines = loop_trace
    with vbts.open(plain) as t:
        it = iter(t)
        head = [next(it) for _ in range(5)]
        rest = t.to_numpy()
    assert len(head) == 5 and rest.size == 8999 - 3
    assert rest["seq"][0] == 5


def test_bytes_and_file_objects(loop_trace):
    plain, packed, lines = loop_trace
    for path in (plain, packed):
        data = open(path, "rb").read()
        for src in (data, bytearray(data), memoryview(data)):
            assert read_objects(src) == (lines, None)
        with open(path, "rb") as f:
            assert read_objects(f) == (lines, None)
            assert f.closed is False
        fd = os.open(path, os.O_RDONLY)
        assert read_objects(fd) == (lines, None)
        os.close(fd)


def test_stdin(loop_trace):
    """"-": standard input, a file and a pipe, plain and compressed."""
    code = ("import sys; sys.path.insert(0, %r); import vbts\n"
            "with vbts.open('-') as t:\n"
            "    n = sum(a.size for a in t.chunks())\n"
            "print(n, len(t.markers))\n" % os.path.join(ROOT, "python"))
    env = dict(os.environ, **({"LD_PRELOAD": PRELOAD} if PRELOAD else {}))
    for path in loop_trace[:2]:
        with open(path, "rb") as f:
            p = subprocess.run([sys.executable, "-c", code], stdin=f, capture_output=True, env=env)
        assert (p.returncode, p.stdout, p.stderr) == (0, b"8999 3\n", b"")
        cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
        p = subprocess.run([sys.executable, "-c", code], stdin=cat.stdout, capture_output=True,
                           env=env)
        cat.wait()
        assert (p.returncode, p.stdout, p.stderr) == (0, b"8999 3\n", b"")


def test_live_pipe_gives_what_has_come(loop_trace):
    """A pipe whose writer has sent part of a trace and waits: chunks()
    gives those records without waiting for a whole chunk."""
    data = open(loop_trace[0], "rb").read()
    r, w = os.pipe()
    first = 32 + 24 + 100 * 24           # header, chunk header, 100 records
    os.write(w, data[:first])
    got = []
    more = threading.Event()

    def rest():
        more.wait(30)
        os.write(w, data[first:first + 60000])
        os.write(w, data[first + 60000:])
        os.close(w)

    th = threading.Thread(target=rest)
    th.start()
    with vbts.open(r) as t:
        for a in t.chunks():
            got.append(a.size)
            more.set()
    th.join()
    os.close(r)
    assert got[0] == 98 and sum(got) == 8999     # the 100 records less start, ctx-arrive


def test_check_complete_off(loop_trace):
    data = open(loop_trace[0], "rb").read()
    # Cut at the end of the second chunk (4096 records each): no stop marker.
    cut = data[:32 + 2 * (24 + 4096 * 24)]
    lines, exc = read_objects(cut)
    assert isinstance(exc, vbts.IncompleteError) and len(lines) == 8192
    assert read_objects(cut, check_complete=False) == (lines, None)


def test_closed_trace(loop_trace):
    t = vbts.open(loop_trace[0])
    t.close()
    t.close()
    with pytest.raises(ValueError):
        list(t)
    assert "closed" in repr(t)


def test_not_a_trace(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"hello, world\n" * 10)
    st, lines, err = decode(str(p))
    got, exc = read_objects(str(p))
    assert type(exc) is vbts.BadMagicError and exc.code == -5 and exc.offset == 0
    assert (got, str(exc), st) == (lines, err, 1)
    with pytest.raises(FileNotFoundError):
        vbts.open(str(tmp_path / "none"))
    with pytest.raises(ValueError, match="compress is for a monitor's socket"):
        vbts.open(str(p), compress=True)
