"""A strict stand-in for blackhole-py's dispatch.py (github.com/boopdotpng/blackhole-py, dispatch.py at
commit 37709f0ac0f028ce9ea653e9d2ed34468bf5281b), written from that source for kgen's tests: the same
Dtype codes, MathFidelity members, CBConfig and Program fields and defaults. Stricter than the
dataclasses it stands for: an unknown keyword, a wrong type or a CB index out of range raises."""

from __future__ import annotations

from enum import Enum
from typing import Callable

_FAST_CQ_NUM_CIRCULAR_BUFFERS = 32        # dispatch.py FAST_CQ_NUM_CIRCULAR_BUFFERS


class Dtype(Enum):
    Float32 = 0
    Float16 = 1
    Float16_b = 5
    Int32 = 8
    UInt16 = 9
    Int8 = 14
    UInt32 = 24
    UInt8 = 30

    @property
    def tile_size(self) -> int:
        return 32 * 32 * {0: 4, 1: 2, 5: 2, 8: 4, 9: 2, 14: 1, 24: 4, 30: 1}[self.value]


class MathFidelity(Enum):
    LoFi = 0
    HiFi2 = 2


def _require(name: str, value, kind) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{name} must be {kind}, not {type(value).__name__}")


class CBConfig:
    def __init__(self, index: int, dtype: Dtype, tiles: int = 2):
        _require("index", index, int)
        _require("dtype", dtype, Dtype)
        _require("tiles", tiles, int)
        if not 0 <= index < _FAST_CQ_NUM_CIRCULAR_BUFFERS:
            raise ValueError(f"CB index {index} out of range 0..{_FAST_CQ_NUM_CIRCULAR_BUFFERS - 1}")
        if tiles < 1:
            raise ValueError("tiles must be positive")
        self.index, self.dtype, self.tiles = index, dtype, tiles


_ARGS = (list, Callable)
_FIELDS = {  # name: (types, default); dispatch.py's Program in declaration order
    "cores": ((int, str), None), "reader_kernel": (str, None), "compute_kernel": (str, None),
    "writer_kernel": (str, None), "cbs": (list, None), "name": (str, ""), "reader_args": (_ARGS, []),
    "writer_args": (_ARGS, []), "compute_args": (_ARGS, []), "semaphores": (int, 0),
    "math_fidelity": (MathFidelity, MathFidelity.HiFi2), "approx": (bool, False), "dst_accum_mode": (bool, False),
    "dst_full_sync": (bool, False), "reader_recv_kernel": (str, ""), "writer_recv_kernel": (str, ""),
    "grid": ((tuple, type(None)), None),
}


class Program:
    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError("the stand-in takes keyword arguments only")
        unknown = set(kwargs) - set(_FIELDS)
        if unknown:
            raise TypeError(f"Program() got unexpected keyword arguments {sorted(unknown)}")
        for name, (kind, default) in _FIELDS.items():
            if name not in kwargs and default is None and name != "grid":
                raise TypeError(f"Program() missing {name}")
            value = kwargs.get(name, default)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise TypeError(f"Program.{name}: {type(value).__name__} is not {kind}")
            setattr(self, name, value)
        if self.cores != "all" and not isinstance(self.cores, int):
            raise TypeError("cores must be an int or 'all'")
        if not all(isinstance(cb, CBConfig) for cb in self.cbs):
            raise TypeError("cbs must be CBConfig")
        if self.grid is not None and not (len(self.grid) == 2 and all(isinstance(v, int) for g in self.grid for v in g)):
            raise TypeError("grid must be (rows, cols) of ints")
