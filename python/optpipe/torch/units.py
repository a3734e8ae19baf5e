# Byte sizes as optpipe-instance/1 writes them (../shared/spec/problem.md §5; docs/semantics.md,
# "Byte units"): numbers, or strings with binary (KiB, MiB, GiB, TiB) or decimal (kB, KB, MB, GB,
# TB) units, with or without a space.
from __future__ import annotations

__all__ = ["parse_bytes"]

_UNITS = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4, "kB": 1e3, "KB": 1e3, "MB": 1e6,
          "GB": 1e9, "TB": 1e12, "B": 1}


def parse_bytes(v) -> float:
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    for u in sorted(_UNITS, key=len, reverse=True):
        if s.endswith(u):
            return float(s[: -len(u)].strip()) * _UNITS[u]
    return float(s)
