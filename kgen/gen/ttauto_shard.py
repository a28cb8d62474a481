"""TT's CB estimate for ttnn.matmul's automatic choice (kgen/gen/ttauto.py), with the L1 a sharded in0's shard
holds: get_estimated_size_of_cbs and get_max_l1_space (ttnn/cpp/ttnn/operations/matmul/device/utilities/
matmul_utilities.cpp @ v0.81.1), as ttauto's module docstring states them."""

from __future__ import annotations

from kgen.core.arch import ArchFacts
from kgen.core.types import DTYPE_TO_FORMAT, Placement
from kgen.gen.rules import round_up_tiles
from kgen.gen.spec import MatmulSpec

MCAST_INPUT_BUFFERING_DEPTH = 2         # get_estimated_size_of_cbs: in0 and in1 double-buffered


def _tile_bytes(arch: ArchFacts, dtype: str) -> int:
    return arch.tile_bytes[DTYPE_TO_FORMAT[dtype]]


def _l1_held(arch: ArchFacts, spec: MatmulSpec, shard_w: int, pm: int) -> int:
    """Bytes of a core's L1 the inputs hold when ttnn.matmul picks its config: get_max_l1_space is the
    lowest occupied L1 address less the allocator's base, and the allocator places buffers from the top
    of each bank down. An L1-interleaved in0 / in1 holds its pages dealt over the L1 banks; a sharded
    in0 its shard (per_core_M x shard width, the shard kgen's planner gives it). The output is not
    allocated yet (the config is picked from the attributes, before the output tensor exists)."""
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    banks = arch.toolchain.num_l1_banks
    held = 0
    if spec.memory.in0 == Placement.L1:
        held += -(-spec.batch * mt * kt // banks) * _tile_bytes(arch, spec.dtype_in0)
    if spec.memory.in1 == Placement.L1:
        in1_tiles = kt * nt * (1 if spec.broadcast_in1 else spec.batch)
        held += -(-in1_tiles // banks) * _tile_bytes(arch, spec.dtype_in1)
    if shard_w:
        held += pm * shard_w * _tile_bytes(arch, spec.dtype_in0)
    return held


def _estimate(arch: ArchFacts, spec: MatmulSpec, m: int, n: int, w: int, shard_w: int = 0) -> int:
    """TT's get_estimated_size_of_cbs (no transpose): the in0 shard's CB (per_core_M x shard width, in
    in0's tile) when in0 is sharded (`shard_w` tiles wide), else none."""
    in0 = _tile_bytes(arch, spec.dtype_in0)
    in1 = _tile_bytes(arch, spec.dtype_in1)
    if spec.compute.fp32_dest_acc:
        interm = arch.tile_bytes["Float32"]
    else:
        interm = max(arch.tile_bytes["Float16_b"], _tile_bytes(arch, spec.dtype_out))
    bias = _tile_bytes(arch, spec.dtype_bias) if spec.fuse_bias else 0
    depth = MCAST_INPUT_BUFFERING_DEPTH
    return (depth * m * w * in0 + depth * n * w * in1 + m * n * in0 + m * n * interm + n * bias
            + m * shard_w * in0)


def _fits(arch: ArchFacts, spec: MatmulSpec, m: int, n: int, w: int, shard: tuple[int, int] = (0, 0)) -> bool:
    """The estimate strictly below get_max_l1_space; `shard`: (shard width, shard height) of a sharded in0."""
    shard_w, shard_h = shard
    free = arch.usable_cb_bytes - _l1_held(arch, spec, shard_w, shard_h)
    return _estimate(arch, spec, m, n, w, shard_w) < free
