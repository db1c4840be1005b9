# SPDX-License-Identifier: MIT
"""libvbtsdecode, loaded with ctypes.

ctypes rather than cffi: it is in every Python, so the package needs no
compiler and no package beyond NumPy, and what costs time is not the call
but the records, which libvbtsdecode copies in bulk
(vbts_reader_branches(3) fills a NumPy array a few thousand records per
call; vbts_symtab_lookup_many(3) resolves an array of addresses).  cffi's
ABI mode would add a dependency for the same calls; its API mode, an
extension module built per interpreter.  ctypes also drops the GIL during
each call, so a reader blocked on a live socket does not hold up other
threads.

Where the library is: $VBTS_LIB (the tests point it at the build tree's),
else the one `make install` put beside this package (_installed.py, written
at install time), else the system's loader path.
"""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_size_t,
                    c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)

SONAME = "libvbtsdecode.so.0"


def _path():
    env = os.environ.get("VBTS_LIB")
    if env:
        return env
    try:
        from . import _installed
        return os.path.join(_installed.LIBDIR, SONAME)
    except ImportError:
        return SONAME


class Record(Structure):
    _fields_ = [("from_", c_uint64), ("to", c_uint64), ("flags", c_uint64)]


class Event(Structure):
    _fields_ = [("rec", Record), ("offset", c_uint64), ("seq", c_uint64), ("cpu", c_uint16),
                ("is_marker", c_uint8), ("qualifier", c_uint8), ("kind", c_uint8),
                ("aux", c_uint64)]


class FileHeader(Structure):
    _fields_ = [("magic", c_char * 8), ("version_major", c_uint16), ("version_minor", c_uint16),
                ("header_size", c_uint32), ("record_size", c_uint32), ("flags", c_uint32),
                ("ncpus", c_uint32), ("reserved", c_uint32)]


class ChunkHeader(Structure):
    _fields_ = [("magic", c_uint32), ("cpu", c_uint16), ("flags", c_uint16), ("count", c_uint32),
                ("reserved", c_uint32), ("seq", c_uint64)]


class Item(Structure):
    _fields_ = [("kind", c_int), ("type", c_uint16), ("length", c_uint32),
                ("payload", c_void_p), ("status", c_uint32), ("text", c_char_p),
                ("chunk", ChunkHeader), ("records", c_void_p)]


ON_ITEM = CFUNCTYPE(c_int, c_void_p, POINTER(Item))

# name: (result, arguments)
_PROTOS = {
    "vbts_reader_new": (c_void_p, [c_int]),
    "vbts_reader_new_mem": (c_void_p, [c_void_p, c_size_t]),
    "vbts_reader_free": (None, [c_void_p]),
    "vbts_reader_header": (c_int, [c_void_p, POINTER(FileHeader)]),
    "vbts_reader_next": (c_int, [c_void_p, POINTER(Event)]),
    "vbts_reader_branches": (c_size_t, [c_void_p, c_void_p, c_size_t]),
    "vbts_reader_offset": (c_uint64, [c_void_p]),
    "vbts_reader_buffered": (c_size_t, [c_void_p]),
    "vbts_strerror": (c_char_p, [c_int]),
    "vbts_kind_name": (c_char_p, [ctypes.c_uint]),
    "vbts_marker_name": (c_char_p, [ctypes.c_uint]),
    "vbts_stop_reason_name": (c_char_p, [ctypes.c_uint]),
    "vbts_encode_file_header": (c_size_t, [c_void_p, c_uint32, c_uint32]),
    "vbts_encode_chunk_header": (c_size_t, [c_void_p, c_uint16, c_uint32, c_uint64]),
    "vbts_is_socket_addr": (c_int, [c_char_p]),
    "vbts_client_open_opts": (c_void_p, [c_char_p, c_uint32, c_char_p, c_size_t]),
    "vbts_client_close": (None, [c_void_p]),
    "vbts_client_fd": (c_int, [c_void_p]),
    "vbts_client_ncpus": (c_uint32, [c_void_p]),
    "vbts_client_file_flags": (c_uint32, [c_void_p]),
    "vbts_client_call": (c_int, [c_void_p, c_uint16, c_char_p, c_uint32, POINTER(Item), c_char_p,
                                 c_size_t, ON_ITEM, c_void_p]),
    "vbts_symtab_load": (c_void_p, [c_char_p, c_char_p, c_size_t]),
    "vbts_symtab_free": (None, [c_void_p]),
    "vbts_symtab_count": (c_size_t, [c_void_p]),
    "vbts_symtab_lookup": (c_char_p, [c_void_p, c_uint64, POINTER(c_uint64)]),
    "vbts_symtab_lookup_many": (None, [c_void_p, c_void_p, c_size_t, c_void_p, c_void_p]),
}


def _load():
    path = _path()
    try:
        lib = ctypes.CDLL(path, use_errno=True)
    except OSError as e:
        raise ImportError("vbts: cannot load %s (%s); set VBTS_LIB to the path of "
                          "libvbtsdecode.so" % (path, e)) from None
    for name, (res, args) in _PROTOS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


lib = _load()
path = lib._name


class Handle:
    """A libvbtsdecode object (`_h`), freed by close(): at the end of a
    with block, or when the Python object goes."""

    _h = None

    def _free(self, h):
        raise NotImplementedError

    def _handle(self):
        if not self._h:
            raise ValueError("operation on a closed vbts.%s" % type(self).__name__)
        return self._h

    def close(self):
        if self._h:
            self._free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def text(p):
    """A C string from the library as str (names are the file's bytes: never fail on them)."""
    return None if p is None else p.decode("utf-8", "backslashreplace")
