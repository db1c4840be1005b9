# SPDX-License-Identifier: MIT
"""Guest symbols (System.map, /proc/kallsyms text, or an ELF's symbol
table) for the addresses of a trace, one at a time or a whole array at once."""
import ctypes
import os

import numpy as np

from .errors import SymbolsError
from ._lib import Handle, lib


class Symbols(Handle):
    """The symbol table vbts-decode --symbols FILE uses: lookups give what
    its lines show."""

    def __init__(self, path):
        self.path = os.fsdecode(path)
        err = ctypes.create_string_buffer(512)
        self._h = lib.vbts_symtab_load(os.fsencode(path), err, len(err))
        if not self._h:
            raise SymbolsError(err.value.decode(errors="backslashreplace"))

    def __len__(self):
        return lib.vbts_symtab_count(self._handle())

    def lookup(self, addr):
        """(name, offset) of the symbol that covers addr, or None."""
        off = ctypes.c_uint64()
        name = lib.vbts_symtab_lookup(self._handle(), addr, ctypes.byref(off))
        return None if name is None else (name.decode(errors="backslashreplace"), off.value)

    def format(self, addr):
        """"name+0xoff", or "0xaddr" where no symbol covers addr."""
        hit = self.lookup(addr)
        return "%s+0x%x" % hit if hit else "0x%x" % addr

    def resolve(self, addrs):
        """All of addrs at once (vbts_symtab_lookup_many): (codes, names,
        offsets), where names[codes[i]] names addrs[i] (code -1: no symbol)
        and offsets[i] is the offset into it (the address where there is
        none).  codes and names make a pandas Categorical as they are."""
        a = np.ascontiguousarray(addrs, dtype=np.uint64)
        ptrs = np.empty(a.size, dtype=np.uintp)
        offs = np.empty(a.size, dtype=np.uint64)
        lib.vbts_symtab_lookup_many(self._handle(), a.ctypes.data, a.size, ptrs.ctypes.data,
                                    offs.ctypes.data)
        # A name per distinct symbol, not per address; two symbols may
        # share a name (static functions): one category each name.
        uniq, inv = np.unique(ptrs, return_inverse=True)
        names, code_of, lut = [], {}, np.empty(uniq.size, dtype=np.int32)
        for i, p in enumerate(uniq.tolist()):
            if not p:
                lut[i] = -1
                continue
            name = ctypes.string_at(p).decode(errors="backslashreplace")
            lut[i] = code_of.setdefault(name, len(names))
            if lut[i] == len(names):
                names.append(name)
        return lut[inv].reshape(a.shape), names, offs.reshape(a.shape)

    def _free(self, h):
        lib.vbts_symtab_free(h)


__all__ = ["Symbols"]
