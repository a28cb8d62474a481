"""The dataflows kgen generates, one module per TT-Metal program factory, and the one registry of
them that the grammar, the planner, lowering, tune, fuzz, port-check and the model read.

Adding a factory is one module implementing :class:`Dataflow` plus one line in ``REGISTRY``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from kgen.gen.dataflow.base import Dataflow, Layout, accepts, takes_batched_in1, takes_dram
from kgen.gen.dataflow.dram_sharded import DRAM_SHARDED
from kgen.gen.dataflow.mcast_1d import MCAST_1D_IN0, MCAST_1D_IN1
from kgen.gen.dataflow.mcast_2d import MCAST_2D
from kgen.gen.dataflow.multi_core import MULTI_CORE
from kgen.gen.dataflow.reuse import REUSE

# In the order the grammar lists them.
REGISTRY: tuple[Dataflow, ...] = (
    MCAST_2D,
    REUSE,
    MCAST_1D_IN0,
    MCAST_1D_IN1,
    DRAM_SHARDED,
    MULTI_CORE,
)
# TT's peak factory, where kgen itself must pick one (a spec with no dataflow line gets AUTO)
DEFAULT: Dataflow = MCAST_2D
# `dataflow = auto`: not a factory but a request for TT's own choice of one (ttnn.matmul with no program
# config, kgen/gen/ttauto.py); the planner resolves it to a registered name before anything reads it
AUTO = "auto"

NAMES: tuple[str, ...] = tuple(d.name for d in REGISTRY)
BY_NAME: Mapping[str, Dataflow] = MappingProxyType({d.name: d for d in REGISTRY})
# The dataflows whose cores form a 2D grid of blocks, and the 1D multicast ones (tune, fuzz).
# (Only those taking DRAM-interleaved tensors: a sharded-only factory is drawn by its own module.)
GRID_2D: tuple[str, ...] = tuple(d.name for d in REGISTRY if d.shared_axis is None and takes_dram(d) and d.draws_blocks)
ONE_D: Mapping[str, int] = MappingProxyType({d.name: d.shared_axis for d in REGISTRY
                                             if d.shared_axis is not None and takes_dram(d)})
# A receiver kernel role -> the sender role whose pace it takes, over every factory (the model).
PACED_BY: Mapping[str, str] = MappingProxyType({r: s for d in REGISTRY for r, s in d.paced_by.items()})


def get(name: str) -> Dataflow:
    """The dataflow spelled `name` (the spec's grammar admits only registered names)."""
    return BY_NAME[name]


__all__ = ["AUTO", "BY_NAME", "DEFAULT", "DRAM_SHARDED", "GRID_2D", "MCAST_1D_IN0", "MCAST_1D_IN1", "MCAST_2D", "NAMES", "ONE_D", "PACED_BY",
           "REGISTRY", "REUSE", "Dataflow",
           "Layout", "accepts", "get", "takes_batched_in1"]
