# SPDX-License-Identifier: MIT
"""What a trace holds, as small objects (iteration) and as a NumPy dtype
(chunks).  Names and fields are those of vbts-decode --format json."""
import numpy as np

from ._lib import lib, text

# struct vbts_branch (decoder/include/vbts/decode.h): 40 bytes, fields in
# the order people read them; `flags` is the record's third qword as
# written (bit 4: predicted; bits 8..15: the kind, when the trace has kinds).
BRANCH_DTYPE = np.dtype({
    "names": ["cpu", "seq", "from", "to", "kind", "flags"],
    "formats": ["<u2", "<u8", "<u8", "<u8", "u1", "<u8"],
    "offsets": [32, 24, 0, 8, 34, 16],
    "itemsize": 40,
})

#: Branch kind names by value (docs/format.md, "Branch kinds").
KINDS = tuple(text(lib.vbts_kind_name(k)) for k in range(13))


def kind_name(kind):
    """vbts-decode's name of a kind value: "call", ..., or "kind-N" if undefined."""
    return text(lib.vbts_kind_name(kind)) or "kind-%d" % kind


class Branch:
    """One branch record.  `from_` since `from` is a Python keyword."""

    __slots__ = ("cpu", "seq", "from_", "to", "kind", "flags")

    def __init__(self, cpu, seq, from_, to, kind, flags):
        self.cpu = cpu
        self.seq = seq
        self.from_ = from_
        self.to = to
        self.kind = kind
        self.flags = flags

    @property
    def kind_name(self):
        return kind_name(self.kind)

    @property
    def predicted(self):
        return bool(self.flags & 0x10)

    def _key(self):
        return (self.cpu, self.seq, self.from_, self.to, self.kind, self.flags)

    def __eq__(self, other):
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "Branch(cpu=%d, seq=%d, from_=%#x, to=%#x, kind=%r)" % (
            self.cpu, self.seq, self.from_, self.to, self.kind_name)


class Marker:
    """A marker record (docs/format.md, "Markers"): `qualifier`, and its
    payload as recorded, `to` and the 48-bit `aux`.  The subclasses give
    the payload its meaning; a qualifier the format does not define stays a
    plain Marker."""

    __slots__ = ("cpu", "seq", "qualifier", "to", "aux")

    def __init__(self, cpu, seq, qualifier, to, aux):
        self.cpu = cpu
        self.seq = seq
        self.qualifier = qualifier
        self.to = to
        self.aux = aux

    @property
    def name(self):
        return text(lib.vbts_marker_name(self.qualifier)) or "marker-%d" % self.qualifier

    def _key(self):
        return (self.cpu, self.seq, self.qualifier, self.to, self.aux)

    def __eq__(self, other):
        return isinstance(other, Marker) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _fields(self):
        return "to=%#x, aux=%d" % (self.to, self.aux)

    def __repr__(self):
        return "%s(cpu=%d, seq=%d, %s)" % (type(self).__name__, self.cpu, self.seq, self._fields())


class Start(Marker):
    """The vCPU's trace starts: `time_ns`, CLOCK_REALTIME in ns."""
    __slots__ = ()
    time_ns = property(lambda self: self.to)

    def _fields(self):
        return "time_ns=%d" % self.to


class Stop(Marker):
    """The vCPU's trace ends: `time_ns`, and `reason` ("guest-exit",
    "limit", ...; `reason_code` its value)."""
    __slots__ = ()
    time_ns = property(lambda self: self.to)
    reason_code = property(lambda self: self.aux)

    @property
    def reason(self):
        r = self.aux & 0xffffffff    # as vbts-decode has it: (unsigned)aux
        return text(lib.vbts_stop_reason_name(r)) or "reason-%d" % r

    def _fields(self):
        return "reason=%r, time_ns=%d" % (self.reason, self.to)


class Lost(Marker):
    """`count` records the monitor could not keep were here."""
    __slots__ = ()
    count = property(lambda self: self.to)

    def _fields(self):
        return "count=%d" % self.to


class CtxArrive(Marker):
    """A context (CR3 `cr3`) arrives on the vCPU, `t_ns` after its start."""
    __slots__ = ()
    cr3 = property(lambda self: self.to)
    t_ns = property(lambda self: self.aux)

    def _fields(self):
        return "cr3=%#x, t_ns=%d" % (self.to, self.aux)


class CtxDepart(CtxArrive):
    """The context (CR3 `cr3`) leaves the vCPU, `t_ns` after its start."""
    __slots__ = ()


_MARKERS = {1: Start, 2: Stop, 3: Lost, 4: CtxArrive, 5: CtxDepart}


def marker(cpu, seq, qualifier, to, aux):
    return _MARKERS.get(qualifier, Marker)(cpu, seq, qualifier, to, aux)


def from_record(cpu, seq, from_, to, flags, kinds):
    """The object for a raw record (GET's reply); kinds: the trace has kinds."""
    if from_ == 0 and flags >> 63:
        return marker(cpu, seq, (flags >> 48) & 0x7f, to, flags & ((1 << 48) - 1))
    return Branch(cpu, seq, from_, to, (flags >> 8) & 0xff if kinds else 0, flags)
