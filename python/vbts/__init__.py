# SPDX-License-Identifier: MIT
"""vbts: branch traces of vbts (docs/python.md) in Python, on libvbtsdecode.

    import vbts
    with vbts.open("t.vbts.zst") as t:           # FILE, FILE.zst, -, unix:PATH, tcp:HOST:PORT
        for rec in t:                              # Branch, Start, Stop, Lost, CtxArrive, ...
            ...
    with vbts.open("t.vbts.zst") as t:
        for a in t.chunks():                       # NumPy arrays: cpu, seq, from, to, kind, flags
            ...
    df = vbts.open("t.vbts").to_pandas(symbols="System.map")
    with vbts.Client("unix:/tmp/s") as c:         # the control protocol
        print(c.status())

A trace that is cut, corrupt or closed mid-stream raises the TraceError
subclass named after libvbtsdecode's error (TruncRecordError, ZstdError,
...) once every record before it was given; one read to its end without a
vCPU's stop marker raises IncompleteError: vbts-decode's verdicts, worded
as it words them.
"""
from . import errors
from .client import OVERFLOW_MODES, Client, Config, CpuStatus, Status
from .errors import *  # noqa: F401,F403 (the exception classes)
from .records import (BRANCH_DTYPE, KINDS, Branch, CtxArrive, CtxDepart, Lost, Marker, Start,
                      Stop, kind_name)
from .symbols import Symbols
from .trace import CHUNK, Trace, open  # noqa: A004

__version__ = "0.1.0"

__all__ = (["open", "Trace", "Client", "Status", "CpuStatus", "Config", "Symbols", "Branch",
            "Marker", "Start", "Stop", "Lost", "CtxArrive", "CtxDepart", "BRANCH_DTYPE",
            "KINDS", "CHUNK", "OVERFLOW_MODES", "kind_name"] + errors.__all__)
