# SPDX-License-Identifier: MIT
"""Reading a trace: vbts.open() and the Trace it returns."""
import ctypes
import os
import select
import stat

import numpy as np

from . import errors
from ._lib import Event, FileHeader, Handle, lib
from .records import BRANCH_DTYPE, Branch, Stop, marker

CHUNK = 65536           # records per array from chunks()
_ITER_CHUNK = 4096      # records per C call when iterating objects
_EARLY = {6: "the monitor lost its step synchronisation",    # VBTS_STOP_DESYNC
          3: "the host could not run the guest on",          # VBTS_STOP_UNSUPPORTED
          5: "the monitor failed"}                           # VBTS_STOP_ERROR


def open(source, *, compress=False, check_complete=True):   # noqa: A001 (vbts.open)
    """A Trace of `source`: a path (FILE or FILE.zst), "-" (standard input),
    "unix:PATH" or "tcp:HOST:PORT" (a running vbts's trace socket: HELLO and
    STREAM, as vbts-decode does; compress asks the monitor for zstd frames),
    an open file or descriptor, bytes, or a vbts.Client (its stream()).
    Use it in a with statement.

    check_complete: at the end, raise IncompleteError as vbts-decode fails
    (a vCPU without its stop marker, or one that stopped early)."""
    return Trace(source, compress=compress, check_complete=check_complete)


class Trace(Handle):
    """A trace being read.  Iterating it gives its records in stream order
    as Branch and Marker objects; chunks() gives its branch records as NumPy
    arrays (BRANCH_DTYPE); `markers` keeps every marker read.  Both may be
    used on one Trace, each going on where the other stopped.

    A trace that is cut, corrupt or unreadable raises the TraceError named
    after libvbtsdecode's error, once every record before it was given."""

    def __init__(self, source, *, compress=False, check_complete=True):
        self._fd = -1
        self._own_fd = False
        self._client = None
        self._mem = None
        self._live = False
        self.check_complete = check_complete
        #: every marker read so far, in stream order
        self.markers = []
        self._seen = set()      # vCPUs with records
        self._stopped = set()   # vCPUs with a stop marker
        self._early = None      # the first stop that says the trace ended early
        self._ev = Event()
        self._hdr = None
        self._done = False
        self._pend = None       # iteration's branches read ahead: an array,
        self._pend_rows = None  # its rows as tuples,
        self._pend_i = 0        # and the first not given yet
        self._open(source, compress)
        r = lib.vbts_reader_new_mem(self._mem.ctypes.data, self._mem.size) if self._mem is not None \
            else lib.vbts_reader_new(self._fd)
        if not r:
            e = ctypes.get_errno()
            self.close()
            raise OSError(e, os.strerror(e))
        self._h = r

    def _open(self, source, compress):
        from .client import Client   # the client module reads traces too
        if isinstance(source, (bytes, bytearray, memoryview)):
            self.name = "<memory>"
            self._mem = np.frombuffer(source, dtype=np.uint8)
            return
        if isinstance(source, Client):
            self.name = source.addr
            self._fd = source._start_stream()
            self._client = source
            # Waits happen in select(), where Ctrl-C reaches Python.
            os.set_blocking(self._fd, False)
            self._live = True
            return
        if isinstance(source, int):
            self.name = "<fd %d>" % source
            self._fd = source
        elif hasattr(source, "fileno"):
            self.name = str(getattr(source, "name", "<file>"))
            self._fd = source.fileno()
        else:
            self.name = os.fsdecode(source)
            if lib.vbts_is_socket_addr(self.name.encode()):
                return self._open(Client(self.name, compress=compress), False)
        if compress:
            raise ValueError("compress is for a monitor's socket (unix:PATH or tcp:HOST:PORT), "
                             "not %r: a file is read compressed or not as it is" % self.name)
        if self._fd < 0:
            self._fd = 0 if self.name == "-" else os.open(source, os.O_RDONLY | os.O_CLOEXEC)
            self._own_fd = self.name != "-"
        # A pipe or socket shows what has come; a file fills whole chunks.
        self._live = not stat.S_ISREG(os.fstat(self._fd).st_mode)

    # --- the stream's parts ------------------------------------------------

    @property
    def header(self):
        """The file header (ncpus, flags, versions), read if need be."""
        if self._hdr is None:
            h = FileHeader()
            while True:
                rc = lib.vbts_reader_header(self._handle(), ctypes.byref(h))
                if rc != errors.AGAIN:
                    break
                self._wait()
            if rc < 0:
                raise self._error(rc)
            self._hdr = h
        return self._hdr

    ncpus = property(lambda self: self.header.ncpus, doc="vCPUs the monitor ran")
    has_kinds = property(lambda self: bool(self.header.flags & 1),
                         doc="branch records carry their kind (VBTS_FILE_F_KIND)")

    @property
    def lost(self):
        """Records lost so far by the monitor, from the lost markers read."""
        return sum(m.to for m in self.markers if m.qualifier == 3)

    def __iter__(self):
        """Every record from here on: Branch, Start, Stop, Lost, CtxArrive,
        CtxDepart (Marker for a qualifier the format does not define)."""
        scratch = np.empty(_ITER_CHUNK, BRANCH_DTYPE)
        while True:
            # Branches read ahead and not given yet (a loop left early):
            # first, here or in chunks().
            while self._pend is not None:
                i = self._pend_i
                if i == len(self._pend_rows):
                    self._pend = None
                    break
                self._pend_i = i + 1
                yield Branch(*self._pend_rows[i])
            piece = next(self._pieces(lambda: scratch, markers=True), None)
            if piece is None:
                return
            if isinstance(piece, np.ndarray):
                self._pend, self._pend_rows, self._pend_i = piece.copy(), piece.tolist(), 0
            else:
                yield piece

    def chunks(self, size=CHUNK):
        """The branch records from here on, as NumPy arrays of BRANCH_DTYPE
        (cpu, seq, from, to, kind, flags) of `size` records; the last one, and
        with a live source (socket, pipe) those that would otherwise wait, are
        shorter.  The markers on the way are in `markers`.  Each array is the
        caller's."""
        if size < 1:
            raise ValueError("chunks of %r records" % (size,))
        if self._pend is not None:
            rest = self._pend[self._pend_i:]
            self._pend = None
            if rest.size:
                yield rest
        yield from self._pieces(lambda: np.empty(size, BRANCH_DTYPE), markers=False)

    def to_numpy(self):
        """Every branch record from here on, as one array.  If the trace
        ends in an error, the records before it are the exception's
        `partial` array."""
        # One array grown in place (ndarray.resize: realloc, which moves a
        # large block's pages without copying them): no record is copied,
        # and no page is touched twice.
        out = np.empty(self._size_hint(), BRANCH_DTYPE)
        n = 0
        if self._pend is not None:
            rest = self._pend[self._pend_i:]
            self._pend = None
            out[:rest.size] = rest
            n = rest.size

        def room():
            if out.size - n < CHUNK:
                out.resize(max(2 * out.size, n + CHUNK), refcheck=False)
            return out[n:]

        try:
            for piece in self._pieces(room, markers=False):
                n += piece.size
        except errors.TraceError as e:
            e.partial = out[:n].copy()
            raise
        piece = None
        out.resize(n, refcheck=False)   # no view of it is left
        return out

    def _size_hint(self):
        """Records a plain trace can hold at most (less than a .zst's)."""
        if self._mem is not None:
            size = self._mem.size
        else:
            st = os.fstat(self._fd)
            size = st.st_size if stat.S_ISREG(st.st_mode) else 0
        return max(size // 24 + 1, CHUNK)

    def to_pandas(self, symbols=None):
        """A pandas DataFrame of the branch records from here on: cpu, seq,
        from, to, kind (categorical, by name), flags; with symbols (a Symbols
        or a path), from_sym/to_sym (categorical) and from_off/to_off."""
        from .frame import to_pandas
        return to_pandas(self.to_numpy(), symbols)

    # --- reading -----------------------------------------------------------

    def _pieces(self, next_buf, markers):
        """Branch arrays and (markers=True) Marker objects in stream order.
        next_buf(): the array to fill next (the yielded pieces are views of
        it); asked for after each yield."""
        r = self._handle()
        self.header                          # noqa: B018 (errors of the header first)
        ev = self._ev
        buf = next_buf()
        size = buf.size
        n = 0
        while not self._done:
            n += lib.vbts_reader_branches(r, buf.ctypes.data + n * BRANCH_DTYPE.itemsize, size - n)
            # Full; or what comes next is not for this array (a marker
            # yielded apart, the end, an error); or a live source gives what
            # came before next() waits.  Nothing read stays unyielded across
            # a yield but what the reader repeats (the end, an error), so a
            # caller may leave at any yield and go on with another reading.
            if n == size or (n and (markers or (self._live and lib.vbts_reader_buffered(r) < 48))):
                yield self._saw(buf[:n])
                buf = next_buf()
                size = buf.size
                n = 0
                continue
            rc = lib.vbts_reader_next(r, ctypes.byref(ev))
            if rc == 1 and not ev.is_marker:     # a branch that came after a wait
                buf[n] = (ev.cpu, ev.seq, ev.rec.from_, ev.rec.to, ev.kind, ev.rec.flags)
                n += 1
                continue
            if n and rc != 1:
                yield self._saw(buf[:n])
                buf = next_buf()
                size = buf.size
                n = 0
            if rc == 1:
                m = self._marker(ev)
                if markers:
                    yield m
            elif rc == errors.AGAIN:
                self._wait()
            elif rc == 0:
                self._done = True
                self._check_end()
            else:
                self._done = True
                raise self._error(rc)

    def _saw(self, arr):
        cpus = arr["cpu"]
        lo, hi = int(cpus.min()), int(cpus.max())
        if lo == hi:
            self._seen.add(lo)
        else:
            self._seen.update(np.unique(cpus).tolist())
        return arr

    def _marker(self, ev):
        m = marker(ev.cpu, ev.seq, ev.qualifier, ev.rec.to, ev.aux)
        self.markers.append(m)
        self._seen.add(m.cpu)
        if isinstance(m, Stop):
            self._stopped.add(m.cpu)
            if m.aux in _EARLY and self._early is None:
                self._early = m
        return m

    def _check_end(self):
        """vbts-decode's verdict on a trace read to its end."""
        if not self.check_complete:
            return
        if not self._stopped or self._seen - self._stopped:
            raise errors.IncompleteError("%s: trace incomplete: no stop marker" % self.name, self.name)
        if self._early is not None:
            m = self._early
            raise errors.IncompleteError(
                "%s: trace incomplete: vCPU %d stopped where %s (stop %s); what the guest ran "
                "after is not in the trace" % (self.name, m.cpu, _EARLY[m.aux], m.reason), self.name)

    def _error(self, rc):
        return errors.trace_error(rc, self.name, lib.vbts_reader_offset(self._h), ctypes.get_errno())

    def _wait(self):
        select.select([self._fd], [], [])

    # --- lifetime ------------------------------------------------------------

    def _free(self, h):
        lib.vbts_reader_free(h)

    def close(self):
        super().close()
        if self._client is not None:
            self._client.close()
            self._client = None
        elif self._own_fd and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1

    def __repr__(self):
        return "<vbts.Trace %s%s>" % (self.name, "" if self._h else " (closed)")


__all__ = ["open", "Trace", "CHUNK"]
