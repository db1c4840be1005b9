# SPDX-License-Identifier: MIT
"""Symbols resolved in bulk (System.map text and ELF), and to_pandas():
what vbts-decode --symbols shows, kinds and counts as it has them."""
import collections
import json
import re

import numpy as np
import pytest

import vbts
from conftest import STUBS, decode, needs_kvm, run_vbts

pytestmark = needs_kvm


def system_map(nasm_map, out):
    """A nasm map's code labels (not the local ".x" ones) as a System.map."""
    text, lines = False, []
    for line in open(nasm_map):
        if line.startswith("---- Section "):
            text = line.startswith("---- Section .text")
            continue
        f = line.split()
        if text and len(f) == 3 and re.fullmatch(r"[0-9A-Fa-f]+", f[0]) and "." not in f[2]:
            lines.append("%016x t %s\n" % (int(f[0], 16), f[2]))
    open(out, "w").writelines(lines)
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The 64-bit branches stub with its System.map, and the C stub with its ELF."""
    d = tmp_path_factory.mktemp("sym")
    out = {}
    for name, image, syms in (("map", STUBS + "/branches64.bin", None),
                              ("elf", STUBS + "/c/calls.elf", STUBS + "/c/calls.elf")):
        t = str(d / (name + ".vbts.zst"))
        p = run_vbts("-q", "--trace", t, image)
        assert p.returncode in (0, 1), p.stderr
        out[name] = (t, syms or system_map(STUBS + "/branches64.map", str(d / "System.map")))
    return out


@pytest.mark.parametrize("kind", ["map", "elf"])
def test_pandas_with_symbols_is_vbts_decode(traces, kind):
    trace, syms = traces[kind]
    st, lines, err = decode("--symbols", syms, trace)
    assert st == 0, err
    want = [json.loads(l) for l in lines if '"from"' in l]
    df = vbts.open(trace).to_pandas(symbols=syms)
    assert list(df.columns) == ["cpu", "seq", "from", "to", "kind", "flags", "from_sym", "from_off",
                                "to_sym", "to_off"]
    assert len(df) == len(want) > 10

    def sym(name, off, addr):
        return "0x%x" % addr if not isinstance(name, str) else "%s+0x%x" % (name, off)
    got = [{"cpu": int(r.cpu), "seq": int(r.seq), "from": hex(r[2]), "to": hex(r[3]), "kind": r.kind,
            "from_sym": sym(r.from_sym, r.from_off, r[2]), "to_sym": sym(r.to_sym, r.to_off, r[3])}
           for r in df.itertuples(index=False)]
    assert got == want
    # Kinds and their counts, as vbts-decode has them.
    counts = {k: v for k, v in df["kind"].value_counts().items() if v}
    assert counts == dict(collections.Counter(w["kind"] for w in want))


def test_lookup_format_resolve(traces):
    _, path = traces["map"]
    s = vbts.Symbols(path)
    assert len(s) > 5
    first = int(open(path).readline().split()[0], 16)
    name = open(path).readline().split()[2]
    assert s.lookup(first + 3) == (name, 3) and s.format(first + 3) == "%s+0x3" % name
    assert s.lookup(5) is None and s.format(5) == "0x5"
    rng = np.random.default_rng(7)
    addrs = np.concatenate([rng.integers(first - 64, first + 0x300, 5000, dtype=np.uint64),
                            np.array([0, 2**64 - 1], dtype=np.uint64)])
    codes, names, offs = s.resolve(addrs)
    assert codes.dtype == np.int32 and len(set(names)) == len(names)
    for a, c, o in zip(addrs.tolist(), codes.tolist(), offs.tolist()):
        hit = s.lookup(a)
        assert (hit is None and c == -1 and o == a) or (hit == (names[c], o))
    s.close()
    s.close()
    with pytest.raises(ValueError):
        s.lookup(1)


def test_bad_symbol_files(tmp_path, traces):
    """vbts_symtab_load()'s reasons, as vbts-decode prints them."""
    trace, _ = traces["map"]
    bad = tmp_path / "bad.map"
    bad.write_text("ffffffff81000000 T ok\nnot a symbol\n")
    for path in (str(bad), str(tmp_path / "none.map")):
        st, _, err = decode("--symbols", path, trace)
        with pytest.raises(vbts.SymbolsError) as e:
            vbts.Symbols(path)
        assert st == 1 and str(e.value) == err
        with pytest.raises(vbts.SymbolsError):
            vbts.open(trace).to_pandas(symbols=path)


def test_pandas_kinds(loop_trace):
    df = vbts.open(loop_trace[1]).to_pandas()
    assert df["kind"].dtype.name == "category"
    assert list(df["kind"].cat.categories) == list(vbts.KINDS)
    assert df["kind"].value_counts()[["call", "ret", "jcc"]].tolist() == [3000, 3000, 2999]
    assert df["seq"].tolist() == list(range(2, 9001))
    # A kind the format does not define gets vbts-decode's name.
    data = bytearray(open(loop_trace[0], "rb").read())
    data[32 + 24 + 2 * 24 + 17] = 200
    df = vbts.open(bytes(data)).to_pandas()
    assert df["kind"][0] == "kind-200" and df["kind"][1] == "ret"
