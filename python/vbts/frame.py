# SPDX-License-Identifier: MIT
"""Trace.to_pandas(): the branch records as a pandas DataFrame (pandas is
imported here only, so the package works without it)."""
import numpy as np

from .records import KINDS, kind_name
from .symbols import Symbols


def _kinds(kind):
    """The kind column as a Categorical of vbts-decode's names."""
    import pandas as pd
    names = list(KINDS)
    extra = sorted(set(np.unique(kind).tolist()) - set(range(len(KINDS))))
    codes = kind.astype(np.int16)
    if extra:
        lut = np.arange(256, dtype=np.int16)
        for i, k in enumerate(extra):
            lut[k] = len(KINDS) + i
            names.append(kind_name(k))
        codes = lut[kind]
    return pd.Categorical.from_codes(codes, categories=names)


def to_pandas(arr, symbols=None):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("vbts: to_pandas() needs pandas (Debian: python3-pandas)") from None
    cols = {"cpu": arr["cpu"], "seq": arr["seq"], "from": arr["from"], "to": arr["to"],
            "kind": _kinds(arr["kind"]), "flags": arr["flags"]}
    if symbols is not None:
        own = not isinstance(symbols, Symbols)
        syms = Symbols(symbols) if own else symbols
        try:
            for col in ("from", "to"):
                codes, names, offs = syms.resolve(arr[col])
                cols[col + "_sym"] = pd.Categorical.from_codes(codes, categories=names)
                cols[col + "_off"] = offs
        finally:
            if own:
                syms.close()
    return pd.DataFrame(cols)
