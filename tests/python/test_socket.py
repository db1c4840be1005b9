# SPDX-License-Identifier: MIT
"""Live traces from a running vbts's socket, streams closed mid-way, and
the control protocol: vbts-decode's records and verdicts, vbts-ctl's
answers and errors."""
import os
import re
import signal
import subprocess
import time

import pytest

import vbts
from conftest import (VBTS, VBTS_CTL, FakeMonitor, decode, json_line, loop_image, needs_kvm,
                      read_chunks, read_objects, split)

pytestmark = needs_kvm


class Monitor:
    """vbts in the background, its trace socket ready."""

    def __init__(self, tmp, *args, sock=True):
        self.sock = str(tmp / "s.sock")
        self.err = str(tmp / "vbts.err")
        argv = [VBTS, *(["--trace", "unix:" + self.sock] if sock else []), *args]
        with open(self.err, "w") as err:
            self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=err)
        for _ in range(2400):     # 60 s: a sanitized vbts on a busy machine
            if os.path.exists(self.sock) or not sock:
                break
            time.sleep(0.025)
        assert os.path.exists(self.sock) or not sock, self.stderr()

    def addr(self, kind="tcp:"):
        """The address the monitor said it listens on, of that kind."""
        for _ in range(2400):     # 60 s: a sanitized vbts on a busy machine
            m = re.search(r"^vbts: listening on (%s\S*)" % kind, self.stderr(), re.M)
            if m:
                return m.group(1)
            time.sleep(0.025)
        raise AssertionError(self.stderr())

    def stderr(self):
        return open(self.err).read()

    def wait(self, timeout=300):
        return self.p.wait(timeout)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(30)


@pytest.fixture
def monitors():
    started = []
    yield started
    for m in started:
        m.kill()


def strip_times(lines):
    return [re.sub(r'"time_ns":\d+', '"time_ns":T', l) for l in lines]


@pytest.mark.parametrize("where,compress", [("unix", False), ("unix", True), ("tcp", False)])
def test_live_socket_is_the_file(tmp_path, monitors, where, compress):
    """vbts.open("unix:S") or "tcp:HOST:PORT" while vbts runs: the records
    of the file the same run writes (block mode: nothing lost), plain or
    asked compressed."""
    img = loop_image(str(tmp_path / "g.bin"), 3000)
    f = str(tmp_path / "f.vbts")
    if where == "unix":
        m = Monitor(tmp_path, "-q", "--trace", f, img)
        addr = "unix:" + m.sock
    else:
        m = Monitor(tmp_path, "--trace", f, "--trace", "tcp:0,control", img, sock=False)
        addr = m.addr()
    monitors.append(m)
    got, exc = read_objects(addr, compress=compress)
    assert exc is None, exc
    assert m.wait() == 1
    st, lines, err = decode(f)
    assert exc is None and st == 0 and got == lines and len(got) == 9002


def test_live_read_loop(tmp_path, monitors):
    """The example's loop: chunks() of a guest that never ends come while
    it runs; killed (-9) mid-stream, the monitor's end raises a TraceError
    after the records that came, never a crash."""
    img = loop_image(str(tmp_path / "spin.bin"), 100000000)
    m = Monitor(tmp_path, "-q", img)
    monitors.append(m)
    seqs = []
    with pytest.raises(vbts.TraceError) as e:
        with vbts.open("unix:" + m.sock) as t:
            for a in t.chunks():
                assert m.p.poll() is None or seqs, "records come while vbts runs"
                seqs.extend(a["seq"].tolist())
                if len(seqs) >= 20000 and m.p.poll() is None:
                    m.p.send_signal(signal.SIGKILL)
    m.kill()
    assert type(e.value).__name__ in ("TruncRecordError", "TruncChunkError", "IncompleteError")
    assert len(seqs) >= 20000 and seqs == list(range(2, 2 + len(seqs)))
    assert [mk.name for mk in t.markers] == ["start", "ctx-arrive"]


def cut_points(data):
    """Where to close a stream: inside a record, inside a chunk header, at a chunk boundary."""
    second = 32 + 24 + 4096 * 24
    return {"mid-record": second - 30, "mid-chunk-header": second + 7, "chunk-boundary": second}


@pytest.mark.parametrize("cut", ["mid-record", "mid-chunk-header", "chunk-boundary", "zstd-mid-frame"])
def test_socket_closed_mid_stream(loop_trace, tmp_path, cut):
    """A monitor that closes the stream part-way (a fake one serving the
    bytes of a real trace): vbts-decode's records, then its verdict."""
    if cut == "zstd-mid-frame":
        data = open(loop_trace[1], "rb").read()
        data = data[:len(data) - 40]
    else:
        data = open(loop_trace[0], "rb").read()
        data = data[:cut_points(data)[cut]]
    path = str(tmp_path / "fake.sock")
    fake = FakeMonitor(path, data, clients=3)
    st, lines, err = decode("unix:" + path)
    got, exc = read_objects("unix:" + path)
    b, mk, cexc = read_chunks("unix:" + path)
    fake.close()
    want = {"mid-record": "TruncRecordError", "mid-chunk-header": "TruncChunkError",
            "chunk-boundary": "IncompleteError", "zstd-mid-frame": "IncompleteError"}[cut]
    assert st == 1 and got == lines and (b, mk) == split(lines)
    for e in (exc, cexc):
        assert type(e).__name__ == want and str(e) == err


def test_connection_errors(tmp_path):
    """The C client's errors, as vbts-ctl and vbts-decode word them."""
    addr = "unix:%s/none.sock" % tmp_path
    p = subprocess.run([VBTS_CTL, addr, "status"], capture_output=True, text=True)
    with pytest.raises(vbts.ClientError) as e:
        vbts.Client(addr)
    assert "vbts-ctl: %s\n" % e.value == p.stderr and e.value.status is None
    st, lines, err = decode(addr)
    with pytest.raises(vbts.ClientError) as e:
        vbts.open(addr)
    assert str(e.value) == err == "%s: No such file or directory" % addr


def ctl(addr, *args):
    p = subprocess.run([VBTS_CTL, "-f", "json", addr, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def test_client_commands(tmp_path, monitors):
    """wrap mode, 10 records kept after the guest ended: STATUS, SIZE, GET,
    DRAIN as vbts-ctl gives them; GET and SIZE beyond the buffer refused
    with vbts-ctl's messages."""
    img = loop_image(str(tmp_path / "g.bin"), 1000)
    f = str(tmp_path / "w.vbts")
    m = Monitor(tmp_path, "--trace", f, "--overflow", "wrap", "--buffer-size", "240", "--linger", "30", img)
    monitors.append(m)
    addr = "unix:" + m.sock
    with vbts.Client(addr) as c:
        assert (c.ncpus, c.file_flags) == (1, 1)
        for _ in range(200):
            st = c.status()
            if st.state == "ended":
                break
            time.sleep(0.05)
        assert (st.state, st.overflow, st.trace, st.ctx_markers, st.buffer_size) == \
            ("ended", "wrap", True, True, 240)
        cpu = st.cpus[0]
        assert (cpu.cpu, cpu.size, cpu.capacity, cpu.head, cpu.stopped) == (0, 10, 10, 3002, True)
        assert cpu.overwritten == 3002 - 10 and cpu.dropped == cpu.cleared == 0
        js = ctl(addr, "status")[1]
        assert '"state":"ended","overflow":"wrap"' in js and '"size":10,"capacity":10,"head":3002' in js
        assert c.size() == c.size(0) == 10
        st_, lines, _ = decode(f)
        assert json_line(c.get(9)) == lines[-10] == ctl(addr, "get", "9")[1].strip()
        stop = c.get(0)
        assert isinstance(stop, vbts.Stop) and stop.seq == 3001 and stop.reason == "guest-exit"
        for args, call, cls in ((("get", "10"), lambda: c.get(10), vbts.MonitorRangeError),
                                (("size", "5"), lambda: c.size(5), vbts.MonitorCpuError),
                                (("get", "0", "7"), lambda: c.get(0, cpu=7), vbts.MonitorCpuError)):
            rc, _, err = ctl(addr, *args)
            with pytest.raises(cls) as e:
                call()
            assert rc == 1 and err == "vbts-ctl: %s\n" % e.value
        assert str(e.value) == "%s: no vCPU 7 (the guest has 1)" % addr
        data = c.drain()
    got, exc = read_objects(data)
    assert exc is None and got == lines[-10:]
    assert m.wait() == 1, "once drained the monitor exits"


def test_client_stream_config_clear(tmp_path, monitors):
    """CONFIG, CLEAR, then STREAM on the same connection; a watch-only
    listener's CLEAR refused as vbts-ctl says."""
    img = loop_image(str(tmp_path / "spin.bin"), 100000000)
    m = Monitor(tmp_path, "--trace", "tcp:0", "--overflow", "wrap", "--buffer-size", "2400", img)
    monitors.append(m)
    taddr = m.addr()
    rc, _, err = ctl(taddr, "clear")
    with vbts.Client(taddr) as w, pytest.raises(vbts.MonitorWatchError) as e:
        w.clear()
    assert rc == 1 and err == "vbts-ctl: %s\n" % e.value
    assert str(e.value) == "%s: this connection may only watch (the listener has no ',control')" % taddr
    c = vbts.Client("unix:" + m.sock)
    cfg = c.config(buffer_size=4800, ctx_markers=False)
    assert (cfg.overflow, cfg.buffer_size, cfg.trace, cfg.ctx_markers) == ("wrap", 4800, True, False)
    assert c.config(trace=False).trace is False and c.config(trace=True).trace is True
    with pytest.raises(ValueError):
        c.config(overflow="sometimes")
    assert c.clear() >= 0
    with c.stream(check_complete=False) as t:
        for a in t.chunks():
            assert a.size > 0
            break
        assert t.name == "unix:" + m.sock
    m.kill()
