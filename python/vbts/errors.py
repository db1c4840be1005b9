# SPDX-License-Identifier: MIT
"""The package's exceptions: one class per libvbtsdecode error and per
status of the control protocol, named after it, with the message the C
tools print (vbts-decode's and vbts-ctl's lines without the program name).

    Error
    ├── TraceError          a trace that is unreadable, cut, corrupt or incomplete
    │   ├── TruncRecordError, ZstdError, SeqGapError, ...   (VBTS_ERR_TRUNC_RECORD, ...)
    │   └── IncompleteError  read to its end, but a vCPU has no stop marker, or
    │                        one stopped early (desync, unsupported, error)
    ├── SymbolsError        a symbol file that cannot be loaded
    └── ClientError         the control protocol: connection, I/O, short replies
        └── MonitorError    the monitor refused a request (a status code)
            └── MonitorWatchError, MonitorCpuError, ...  (E_WATCH, E_CPU, ...)
"""
import os

from ._lib import lib


class Error(Exception):
    """Anything this package reports about traces, symbols or monitors."""


class TraceError(Error):
    """A trace vbts-decode would end with status 1 for.  `code` is the
    negative enum vbts_error (None for IncompleteError), `offset` the byte
    offset of the offending item (decompressed bytes for a .zst), `name`
    the trace's name as given."""

    code = None

    def __init__(self, message, name=None, offset=None, errno=None):
        super().__init__(message)
        self.name = name
        self.offset = offset
        self.errno = errno


class IncompleteError(TraceError):
    """Every record was read, but a vCPU that has records has no stop
    marker (the trace was cut at a chunk boundary, or the monitor killed),
    or a vCPU's stop marker says the trace ended early."""


# enum vbts_error (decoder/include/vbts/decode.h): the class names follow
# the C names (VBTS_ERR_TRUNC_RECORD: TruncRecordError).
_TRACE_ERRORS = {
    -1: "IO", -2: "NOMEM", -3: "INVAL", -4: "AGAIN", -5: "BAD_MAGIC", -6: "VERSION",
    -7: "HEADER_SIZE", -8: "RECORD_SIZE", -9: "TRUNC_HEADER", -10: "CHUNK_MAGIC", -11: "CPU",
    -12: "RESERVED", -13: "TRUNC_CHUNK", -14: "TRUNC_RECORD", -15: "SEQ_GAP", -16: "SEQ_BACK",
    -17: "ZSTD",
}
AGAIN = -4
IO = -1


def _camel(name):
    return "".join(w.capitalize() for w in name.split("_"))


def _make(base, prefix, name, code, attr):
    cls = type(prefix + _camel(name) + "Error", (base,), {attr: code, "__module__": __name__})
    cls.__doc__ = "%s (%s%s)." % (base.__name__, "VBTS_ERR_" if attr == "code" else "E_", name)
    return cls


TRACE_ERROR_CLASSES = {}
for _code, _name in _TRACE_ERRORS.items():
    TRACE_ERROR_CLASSES[_code] = _make(TraceError, "", _name, _code, "code")
    globals()[TRACE_ERROR_CLASSES[_code].__name__] = TRACE_ERROR_CLASSES[_code]


def trace_error(code, name, offset, errno=0):
    """The exception for a reader that returned code, worded as vbts-decode words it."""
    cls = TRACE_ERROR_CLASSES.get(code, TraceError)
    if code == IO:
        return cls("%s: %s" % (name, os.strerror(errno)), name, offset, errno)
    return cls("%s: %s at byte offset %d" % (name, lib.vbts_strerror(code).decode(), offset),
               name, offset)


class SymbolsError(Error):
    """vbts_symtab_load()'s reason ("FILE:12: not a symbol line ...")."""


class ClientError(Error):
    """What vbts-ctl prints after "vbts-ctl: ": the address and what went
    wrong (connection, I/O, a reply that makes no sense).  `status` is the
    monitor's status code for a MonitorError, else None."""

    status = None


class MonitorError(ClientError):
    """The monitor answered with an error status (docs/protocol.md)."""


# enum vbts_proto_status (include/vbts/protocol.h): E_WATCH: MonitorWatchError.
_STATUSES = {
    1: "MAGIC", 2: "TOO_LONG", 3: "TYPE", 4: "LENGTH", 5: "VERSION", 6: "HELLO", 7: "FIELD",
    8: "CPU", 9: "RANGE", 10: "LIMIT", 11: "BUSY", 12: "NOMEM", 13: "CLIENTS", 14: "FLAGS",
    15: "WATCH",
}
MONITOR_ERROR_CLASSES = {}
for _code, _name in _STATUSES.items():
    MONITOR_ERROR_CLASSES[_code] = _make(MonitorError, "Monitor", _name, _code, "status")
    globals()[MONITOR_ERROR_CLASSES[_code].__name__] = MONITOR_ERROR_CLASSES[_code]


def client_error(message, status=None):
    if not status:
        return ClientError(message)
    e = MONITOR_ERROR_CLASSES.get(status, MonitorError)(message)
    e.status = status   # also for a status this package does not know
    return e


__all__ = (["Error", "TraceError", "IncompleteError", "SymbolsError", "ClientError",
            "MonitorError"] + [c.__name__ for c in TRACE_ERROR_CLASSES.values()] +
           [c.__name__ for c in MONITOR_ERROR_CLASSES.values()])
