# SPDX-License-Identifier: MIT
"""The examples (python/examples) as a person runs them, and the package
installed by make install PREFIX=DIR."""
import collections
import json
import os
import subprocess
import sys

from conftest import BUILD, PRELOAD, ROOT, STUBS, decode, loop_image, needs_kvm, run_vbts
from test_socket import Monitor
from test_symbols import system_map

pytestmark = needs_kvm
EXAMPLES = os.path.join(ROOT, "python", "examples")


def python(*args, env=None, **kw):
    env = dict(os.environ if env is None else env, **({"LD_PRELOAD": PRELOAD} if PRELOAD else {}))
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=300, **kw)


def test_hot_functions(tmp_path):
    t = str(tmp_path / "b.vbts.zst")
    assert run_vbts("-q", "--trace", t, STUBS + "/branches64.bin").returncode in (0, 1)
    smap = system_map(STUBS + "/branches64.map", str(tmp_path / "System.map"))
    png = str(tmp_path / "hot.png")
    p = python(os.path.join(EXAMPLES, "hot_functions.py"), "--top", "3", "--png", png, t, smap)
    assert p.returncode == 0, p.stderr
    # The counts by function are vbts-decode's.
    st, lines, _ = decode("--symbols", smap, t)
    by_fn = collections.Counter(json.loads(l)["from_sym"].split("+")[0] for l in lines if '"from"' in l)
    rows = p.stdout.splitlines()
    assert rows[0].startswith("%d branch records" % sum(by_fn.values()))
    top = [(r.split()[0], int(r.split()[1])) for r in rows[2:5]]
    assert [n for _, n in top] == [n for _, n in by_fn.most_common(3)]     # (ties in any order)
    assert dict(top) == {f: by_fn[f] for f, _ in top}
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n" and rows[-1] == "histogram: " + png


def test_live(tmp_path):
    img = loop_image(str(tmp_path / "g.bin"), 3000)
    m = Monitor(tmp_path, "-q", img)
    try:
        p = python(os.path.join(EXAMPLES, "live.py"), "--compress", "unix:" + m.sock)
        assert m.wait() == 1
    finally:
        m.kill()
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == \
        "end: 8999 branches, 3 markers, 0 records lost, vCPU 0 stopped (guest-exit)"


def test_make_install(tmp_path):
    """make install PREFIX=DIR: the package in DIR's site-packages (as
    Python computes it), the library in DIR/lib; `python3 -c 'import vbts'`
    with that path, no VBTS_LIB, finds the installed library."""
    prefix = str(tmp_path / "p")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "MFLAGS"}
    p = subprocess.run(["make", "-s", "install", "PREFIX=" + prefix, "BUILD=" + os.path.relpath(BUILD, ROOT),
                        "PYTHON=" + sys.executable], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    site = p.stdout.strip().rsplit(" ", 1)[1]
    assert site.startswith(prefix + "/") and os.path.isfile(os.path.join(site, "vbts", "trace.py"))
    assert os.path.isfile(os.path.join(prefix, "lib", "libvbtsdecode.so.0"))
    assert os.readlink(os.path.join(prefix, "lib", "libvbtsdecode.so")) == "libvbtsdecode.so.0"
    env.pop("VBTS_LIB", None)
    env["PYTHONPATH"] = site
    q = python("-c", "import vbts, vbts._lib as l; print(vbts.__file__, l.path)", env=env, cwd=str(tmp_path))
    assert q.returncode == 0, q.stderr
    assert q.stdout.split() == [os.path.join(site, "vbts", "__init__.py"),
                                os.path.join(prefix, "lib", "libvbtsdecode.so.0")]
