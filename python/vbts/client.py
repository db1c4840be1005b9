# SPDX-License-Identifier: MIT
"""The control protocol (docs/protocol.md) through libvbtsdecode's client:
a running vbts's buffers from Python, with vbts-ctl's commands and errors."""
import ctypes
import struct
from dataclasses import dataclass, field
from typing import List

from . import errors
from ._lib import ON_ITEM, Handle, Item, lib
from .records import from_record

# enum vbts_msg_type, include/vbts/protocol.h
_HELLO_ZSTD = 1
_STATUS, _CONFIG, _SIZE, _GET, _CLEAR, _DRAIN, _STREAM = 2, 3, 4, 5, 6, 7, 8
_ALL_CPUS = 0xffff
_ITEM_CHUNK = 2
OVERFLOW_MODES = ("block", "wrap", "drop")


@dataclass
class CpuStatus:
    """One vCPU's buffer (STATUS): records in it, its capacity, the next
    sequence number, and what drop, wrap and CLEAR took from it."""
    cpu: int
    size: int
    capacity: int
    head: int
    dropped: int
    overwritten: int
    cleared: int
    full: bool
    stopped: bool


@dataclass
class Status:
    """The monitor's state, as `vbts-ctl ADDR status` prints it."""
    state: str              # "running" or "ended"
    overflow: str           # "block", "wrap" or "drop"
    trace: bool             # branches are recorded
    ctx_markers: bool
    clients: int
    buffer_size: int        # bytes per vCPU
    buffer_limit: int       # bytes, all vCPUs
    cpus: List[CpuStatus] = field(default_factory=list)


@dataclass
class Config:
    """The configuration in force after CONFIG."""
    overflow: str
    buffer_size: int
    trace: bool
    ctx_markers: bool


def _mode(m):
    return OVERFLOW_MODES[m] if m < len(OVERFLOW_MODES) else "?"


class Client(Handle):
    """A control session with a running vbts (`--trace unix:PATH` or
    `tcp:HOST:PORT`): HELLO on connecting, then status(), config(), size(),
    get(), clear(), drain() and stream().  Errors are ClientError (the
    connection) and MonitorError subclasses (the monitor's refusals), with
    vbts-ctl's messages.  compress asks for stream() as zstd frames."""

    def __init__(self, addr, *, compress=False):
        self.addr = addr
        err = ctypes.create_string_buffer(512)
        self._h = lib.vbts_client_open_opts(addr.encode(), _HELLO_ZSTD if compress else 0, err,
                                            len(err))
        if not self._h:
            raise errors.client_error(err.value.decode(errors="backslashreplace"))
        self.ncpus = lib.vbts_client_ncpus(self._h)
        #: the trace's file-header flags (bit 0: branch records carry kinds)
        self.file_flags = lib.vbts_client_file_flags(self._h)

    def _call(self, msg, payload=b"", on_chunk=None):
        """The reply's payload after its status; chunks before it to on_chunk(item)."""
        c = self._handle()
        it = Item()
        err = ctypes.create_string_buffer(512)
        cb = ON_ITEM(lambda ctx, p: on_chunk(p.contents) if p.contents.kind == _ITEM_CHUNK else 0) \
            if on_chunk else ON_ITEM()
        if lib.vbts_client_call(c, msg, payload, len(payload), ctypes.byref(it), err,
                                len(err), cb, None) < 0:
            status = it.status if it.kind == 1 and it.type & 0x8000 else None
            raise errors.client_error("%s: %s" % (self.addr, err.value.decode(errors="backslashreplace")),
                                      status)
        return ctypes.string_at(it.payload, it.length)[4:] if it.length else b""

    def _short(self, what):
        return errors.ClientError("%s: short %s reply" % (self.addr, what))

    def status(self):
        """STATUS: a Status with one CpuStatus per vCPU."""
        p = self._call(_STATUS)
        if len(p) < 36:
            raise self._short("STATUS")
        ncpus, overflow, flags, state, clients, size, limit = struct.unpack_from("<5I2Q", p)
        if (len(p) - 36) // 56 < ncpus:
            raise self._short("STATUS")
        cpus = [CpuStatus(i, *struct.unpack_from("<6Q", p, 36 + 56 * i),
                          *(bool(x) for x in struct.unpack_from("<2I", p, 36 + 56 * i + 48)))
                for i in range(ncpus)]
        return Status("ended" if state else "running", _mode(overflow), bool(flags & 1),
                      bool(flags & 2), clients, size, limit, cpus)

    def config(self, *, buffer_size=None, overflow=None, trace=None, ctx_markers=None):
        """CONFIG what is given (overflow: "block", "wrap" or "drop"; trace,
        ctx_markers: True or False); the Config then in force."""
        mask = flags = mode = 0
        size = 0
        if buffer_size is not None:
            mask |= 1
            size = buffer_size
        if trace is not None or ctx_markers is not None:
            mask |= 2
            st = self.status()
            on = {"trace": st.trace if trace is None else trace,
                  "ctx": st.ctx_markers if ctx_markers is None else ctx_markers}
            flags = (1 if on["trace"] else 0) | (2 if on["ctx"] else 0)
        if overflow is not None:
            if overflow not in OVERFLOW_MODES:
                raise ValueError("overflow %r is not block, wrap or drop" % (overflow,))
            mask |= 4
            mode = OVERFLOW_MODES.index(overflow)
        p = self._call(_CONFIG, struct.pack("<4IQ", mask, flags, mode, 0, size))
        if len(p) < 20:
            raise self._short("CONFIG")
        flags, mode, _, size = struct.unpack_from("<3IQ", p)
        return Config(_mode(mode), size, bool(flags & 1), bool(flags & 2))

    @staticmethod
    def _cpu(cpu):
        return struct.pack("<HHI", _ALL_CPUS if cpu is None else cpu, 0, 0)

    def _count(self, msg, cpu, on_chunk=None):
        p = self._call(msg, self._cpu(cpu), on_chunk)
        if len(p) < 8:
            raise self._short("")
        return struct.unpack_from("<Q", p)[0]

    def size(self, cpu=None):
        """SIZE: records in the buffer of vCPU cpu, or of all."""
        return self._count(_SIZE, cpu)

    def clear(self, cpu=None):
        """CLEAR: empty the buffer (of cpu, or all); the records removed."""
        return self._count(_CLEAR, cpu)

    def get(self, index, cpu=0):
        """GET: record index of cpu's buffer (0: the newest), as a Branch or
        a Marker; the buffer keeps it."""
        p = self._call(_GET, struct.pack("<HHIQ", cpu, 0, 0, index))
        if len(p) < 36:
            raise self._short("GET")
        c, _, seq, f, t, fl = struct.unpack_from("<HHQ3Q", p)
        return from_record(c, seq, f, t, fl, self.file_flags & 1)

    def drain(self, cpu=None):
        """DRAIN: every record of the buffer (of cpu, or all), oldest first,
        as the bytes of a trace file (what `vbts-ctl ADDR drain` writes:
        vbts.open() reads them); the buffer is empty after."""
        hdr = ctypes.create_string_buffer(32)
        lib.vbts_encode_file_header(hdr, self.file_flags, self.ncpus)
        parts = [hdr.raw]

        def chunk(it):
            h = ctypes.create_string_buffer(24)
            lib.vbts_encode_chunk_header(h, it.chunk.cpu, it.chunk.count, it.chunk.seq)
            parts.append(h.raw)
            parts.append(ctypes.string_at(it.records, it.chunk.count * 24) if it.chunk.count else b"")
            return 0

        self._count(_DRAIN, cpu, chunk)
        return b"".join(parts)

    def _start_stream(self):
        self._call(_STREAM, bytes(8))
        return lib.vbts_client_fd(self._handle())

    def stream(self, check_complete=True):
        """STREAM: the live trace from here on as a Trace (which then owns
        this connection: closing it closes both)."""
        from .trace import Trace
        return Trace(self, check_complete=check_complete)

    def _free(self, h):
        lib.vbts_client_close(h)


__all__ = ["Client", "Status", "CpuStatus", "Config", "OVERFLOW_MODES"]
