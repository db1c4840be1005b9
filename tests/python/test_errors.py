# SPDX-License-Identifier: MIT
"""Traces that are cut, corrupt or hostile: the binding gives every record
vbts-decode prints, then raises the exception named after the C library's
error with vbts-decode's message; never a crash of the interpreter."""
import os
import struct

import pytest

import vbts
from conftest import ROOT, decode, read_chunks, read_objects, split

FIRST = 32                          # the first chunk header
SECOND = 32 + 24 + 4096 * 24        # the second one (4096 records a chunk)


def mutate(data, name):
    """A hostile variant of the loop's trace (9002 records in 3 chunks)."""
    b = bytearray(data)
    put = lambda off, fmt, v: struct.pack_into(fmt, b, off, v)   # noqa: E731
    last = len(b) - 24                  # the stop marker
    return {
        "cut mid-record": lambda: b[:FIRST + 24 + 100 * 24 + 10],
        "cut in a chunk header": lambda: b[:SECOND + 10],
        "cut at a chunk boundary": lambda: b[:SECOND],
        "cut in the file header": lambda: b[:20],
        "header only": lambda: b[:32],
        "empty": lambda: b"",
        "bad magic": lambda: (put(0, "B", 0x57), b)[1],
        "version 2": lambda: (put(8, "<H", 2), b)[1],
        "header size 16": lambda: (put(12, "<I", 16), b)[1],
        "longer header": lambda: (put(12, "<I", 40), b)[1],
        "record size 25": lambda: (put(16, "<I", 25), b)[1],
        "header reserved": lambda: (put(28, "<I", 1), b)[1],
        "chunk magic": lambda: (put(SECOND, "B", 0), b)[1],
        "chunk cpu": lambda: (put(SECOND + 4, "<H", 1), b)[1],
        "chunk flags": lambda: (put(SECOND + 6, "<H", 1), b)[1],
        "chunk reserved": lambda: (put(SECOND + 12, "<I", 9), b)[1],
        "sequence gap": lambda: (put(SECOND + 16, "<Q", 4097), b)[1],
        "sequence regression": lambda: (put(SECOND + 16, "<Q", 4095), b)[1],
        "stopped early (desync)": lambda: (put(last + 16, "<Q", 1 << 63 | 2 << 48 | 6), b)[1],
        "undefined stop reason": lambda: (put(last + 16, "<Q", 1 << 63 | 2 << 48 | 77), b)[1],
        "undefined marker and kind": lambda: (put(FIRST + 24 + 24 + 16, "<Q", 1 << 63 | 9 << 48 | 5),
                                              put(FIRST + 24 + 24, "<Q", 0),
                                              put(FIRST + 24 + 48 + 16, "<Q", 200 << 8), b)[3],
    }[name]()


CASES = ["cut mid-record", "cut in a chunk header", "cut at a chunk boundary", "cut in the file header",
         "header only", "empty", "bad magic", "version 2", "header size 16", "longer header",
         "record size 25", "header reserved", "chunk magic", "chunk cpu", "chunk flags",
         "chunk reserved", "sequence gap", "sequence regression", "stopped early (desync)",
         "undefined stop reason", "undefined marker and kind"]


def same_as_vbts_decode(path, want_error=None):
    """Iteration, chunks() and the memory reader against vbts-decode: the
    same records, then the same verdict (class, message)."""
    st, lines, err = decode(path)
    data = open(path, "rb").read()
    first = None
    for source in (path, data):
        got, exc = read_objects(source)
        assert got == lines
        b, m, cexc = read_chunks(source, size=1000)
        assert (b, m) == split(lines)
        name = path if source is path else "<memory>"
        first = exc if source is path else first
        for e in (exc, cexc):
            if st == 0:
                assert e is None and err == ""
                continue
            assert isinstance(e, vbts.TraceError), e
            assert str(e) == err.replace(path, name, 1)
            if want_error:
                assert type(e).__name__ == want_error
    return st, lines, first


@pytest.mark.parametrize("case", CASES)
def test_hostile_trace(loop_trace, tmp_path, case):
    p = tmp_path / "t.vbts"
    p.write_bytes(bytes(mutate(open(loop_trace[0], "rb").read(), case)))
    want = {"cut mid-record": "TruncRecordError", "cut in a chunk header": "TruncChunkError",
            "cut at a chunk boundary": "IncompleteError", "cut in the file header": "TruncHeaderError",
            "header only": "IncompleteError", "empty": "TruncHeaderError", "bad magic": "BadMagicError",
            "version 2": "VersionError", "header size 16": "HeaderSizeError",
            "record size 25": "RecordSizeError", "header reserved": "ReservedError",
            "chunk magic": "ChunkMagicError", "chunk cpu": "CpuError", "chunk flags": "ReservedError",
            "chunk reserved": "ReservedError", "sequence gap": "SeqGapError",
            "sequence regression": "SeqBackError", "stopped early (desync)": "IncompleteError",
            "longer header": "ChunkMagicError"}.get(case)
    st, lines, exc = same_as_vbts_decode(str(p), want)
    assert st == (1 if want else 0)
    if exc is not None and exc.code is not None:
        assert exc.offset == int(str(exc).rsplit(" ", 1)[1])
        assert vbts.errors.TRACE_ERROR_CLASSES[exc.code] is type(exc)
    if case == "cut mid-record":
        assert len(lines) == 100 and exc.offset == FIRST + 24 + 100 * 24
    if case == "stopped early (desync)":
        assert str(exc).endswith("vCPU 0 stopped where the monitor lost its step synchronisation "
                                 "(stop desync); what the guest ran after is not in the trace")
    if case == "undefined marker and kind":
        assert lines[1].endswith('"kind":"marker-9","to":"0x0","aux":5}') and '"kind":"kind-200"' in lines[2]


def test_zst_cut_inside_its_last_frame(loop_trace, tmp_path):
    """As compress.t has it: the frames before the cut, then 'trace incomplete'."""
    data = open(loop_trace[1], "rb").read()
    p = tmp_path / "cut.zst"
    p.write_bytes(data[:-7])
    st, lines, exc = same_as_vbts_decode(str(p), "IncompleteError")
    assert st == 1 and 4096 <= len(lines) < 9002
    assert str(exc) == "%s: trace incomplete: no stop marker" % p


def test_zst_corrupt_frame(loop_trace, tmp_path):
    data = bytearray(open(loop_trace[1], "rb").read())
    data[len(data) // 2] ^= 0x55
    p = tmp_path / "bad.zst"
    p.write_bytes(bytes(data))
    st, lines, exc = same_as_vbts_decode(str(p), "ZstdError")
    assert st == 1 and str(exc).startswith("%s: corrupt compressed frame at byte offset " % p)
    assert exc.code == -17


def test_to_numpy_keeps_what_came_before_an_error(loop_trace):
    data = open(loop_trace[0], "rb").read()[:SECOND + 24 + 10 * 24 + 5]
    with pytest.raises(vbts.TruncRecordError) as e:
        vbts.open(data).to_numpy()
    assert e.value.partial.size == 4094 + 10 and e.value.partial["seq"][-1] == 4105


def test_read_error(tmp_path):
    """A read(2) that fails: IoError with errno's message, as vbts-decode says it."""
    d = tmp_path / "dir"
    d.mkdir()
    fd = os.open(str(d), os.O_RDONLY)
    with pytest.raises(vbts.IoError) as e:
        list(vbts.open(fd))
    os.close(fd)
    assert str(e.value) == "<fd %d>: Is a directory" % fd and e.value.errno == 21
    st, lines, err = decode(str(d))
    assert err == "%s: Is a directory" % d


def test_error_classes():
    """One class per enum vbts_error, each with libvbtsdecode's message."""
    from vbts._lib import lib
    for code, cls in vbts.errors.TRACE_ERROR_CLASSES.items():
        assert issubclass(cls, vbts.TraceError) and cls.code == code
        assert lib.vbts_strerror(code) != b"unknown error"
    assert lib.vbts_strerror(-18) == b"unknown error", "a new C error needs its class"
    assert vbts.TruncRecordError.__name__ == "TruncRecordError" and vbts.ZstdError.code == -17
    assert vbts.MonitorWatchError.status == 15 and issubclass(vbts.MonitorWatchError, vbts.ClientError)


def corpus():
    d = os.path.join(ROOT, "fuzz", "corpus", "reader")
    return sorted(os.path.join(d, f) for f in os.listdir(d))


@pytest.mark.parametrize("path", corpus(), ids=os.path.basename)
def test_fuzz_corpus(path):
    """The reader's fuzz corpus (fuzz/corpus/reader) through the binding:
    what vbts-decode makes of each input."""
    same_as_vbts_decode(path)
