"""What a dataflow is: the protocol each TT-Metal program factory's module implements, and the
layout of cores the 2D-grid factories (2D multicast, reuse) share."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, Protocol

from kgen.core.types import Placement
from kgen.gen.rules import PlanError, ceil_div, divisors, nearest

if TYPE_CHECKING:
    from kgen.gen.ir import CoreRange, Kernel, Semaphore
    from kgen.gen.plan import Plan
    from kgen.gen.matmul_spec import MatmulSpec, MemorySpec


class Factory(Enum):
    """TT-Metal's matmul program factories, one file each (ttnn/cpp/ttnn/operations/matmul/device/factory/,
    TT-Metal 0.81.1), as its `enum class` of program-config families names them."""

    REUSE = "matmul_multicore_reuse_program_factory.cpp"
    MCAST_2D = "matmul_multicore_reuse_mcast_2d_program_factory.cpp"
    MCAST_1D = "matmul_multicore_reuse_mcast_1d_program_factory.cpp"
    DRAM_SHARDED = "matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp"

    @property
    def label(self) -> str:
        """The factory as a sentence names it ("TT-Metal's 2D multicast factory")."""
        return {Factory.REUSE: "reuse", Factory.MCAST_2D: "2D multicast", Factory.MCAST_1D: "1D multicast",
                Factory.DRAM_SHARDED: "DRAM-sharded"}[self]


@dataclass(frozen=True)
class Layout:
    """The cores of a plan: per-core M and N tiles, the grid of cores with work (x, y), the count
    of N-blocks (cores along N), and the cores holding a width-sharded in0's K slices (0: none)."""

    per_core_m: int
    per_core_n: int
    grid: tuple[int, int]
    n_blocks: int
    in0_shards: int = 0


class Dataflow(Protocol):
    """One way of moving the operands to the cores: a TT-Metal program factory (or one mode of it).

    The planner asks it for the layout of the cores and the rules that differ by factory, lowering
    for its data-movement kernels and semaphores, the model for which kernel waits on which, tune for
    the layouts it may search, and the grammar for its spelling.

    Optional hooks, for a factory that places its own cores and tensors (the DRAM-sharded one); a
    consumer asks for them with getattr and falls back to the 2D factory's behaviour without them:
    `cb_depths(num_blocks) -> (in0, in1)` K-blocks in c_0 / c_1 (blocking, through `cb_depths` below);
    `tune_memory(spec, mt)`, `tune_per_core(spec, mt, nt)`, `tune_grid(spec)`: the placements, per_core
    and grid tune gives its candidates (perf/tune/search.py); `pads_last_n_shard`: True when the factory
    shards in1 and the output in per_core_N-wide shards of which the last may hold fewer real columns
    (the planner's whole-shard rule then leaves N alone); `factory_blocking(spec, per_core_m, per_core_n,
    fp32_dest_acc, choices) -> (out_block, out_subblock, per_core_n_compute)`: a factory that chooses its
    own subblock and may pad the N a core computes for it; `separate_out_shard`: c_4 is a buffer of its
    own and the writer copies the real columns into the output shard (c_7); `compute_defines`: defines
    the factory adds to the compute kernel."""

    name: str                        # the spelling in a spec's `dataflow =` line
    factory: Factory
    placements: Mapping[str, frozenset[Placement]]   # tensor -> where this factory accepts it
    transpose_mcast: bool            # takes the 2D config's transpose_mcast
    # tune: the per_core axis (0 M, 1 N) that must cover all of its tiles (a 1D multicast's shared
    # operand), or None when the cores form the 2D grid of blocks
    shared_axis: int | None
    paced_by: Mapping[str, str]      # the model: a receiver kernel role -> the sender role it waits on
    is_1d: bool                      # a 1D multicast: one row-major run of cores, one operand shared
    # takes one in1 matrix per batch (TT's bcast_batch = false); a factory without the attribute refuses it
    batched_in1: bool

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout: ...

    def core_m_terms(self, p: Plan) -> dict[str, int]: ...

    def core_n_terms(self, p: Plan) -> dict[str, int]: ...

    def in0_reader_cores(self, p: Plan) -> int: ...

    def padding_notes(self, p: Plan) -> tuple[str, ...]: ...

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]: ...


def cb_depths(df: Dataflow, num_blocks: int, default: int) -> tuple[int, int]:
    """K-blocks the in0 and in1 CBs hold: the factory's own (its optional `cb_depths` hook), else
    `default` for both (the 2D factory's double buffering)."""
    hook = getattr(df, "cb_depths", None)
    return hook(num_blocks) if hook else (default, default)


def takes_dram(df: Dataflow) -> bool:
    """Whether the factory takes every tensor interleaved in DRAM (the form tune and fuzz draw)."""
    return all(Placement.DRAM in where for where in df.placements.values())


DRAM_ONLY: Mapping[str, frozenset[Placement]] = MappingProxyType(
    {t: frozenset({Placement.DRAM}) for t in ("in0", "in1", "out")})


# TT-Metal's rule behind a refused batched in1 (tenstorrent/tt-metal@001cea9a, ttnn 0.81.1): the 2D and
# 1D multicast program configs fuse the batch into M (kgen always does: fuse_batch), and
# matmul_device_operation.cpp's validate_on_program_cache_miss then requires
# `get_batch_size(b_shape_padded) == 1` ("Matmul with fused batch requires input tensors of shapes
# BCMK*11KN=BCMN"). Only MatmulMultiCoreReuseProgramConfig runs a batched in1 (bcast_batch = false).
BATCHED_IN1_RULE = ("matmul_device_operation.cpp @001cea9a: with fuse_batch, "
                    "get_batch_size(b_shape_padded) == 1 (BCMK*11KN=BCMN)")


def takes_batched_in1(df: Dataflow) -> bool:
    """Whether the factory runs one in1 matrix per batch."""
    return bool(getattr(df, "batched_in1", False))


def check_batched_in1(df: Dataflow, spec: MatmulSpec) -> None:
    """A spec asking for a batched in1 (broadcast_in1 = false with batch > 1) on a factory that refuses it."""
    if spec.broadcast_in1 or spec.batch == 1 or takes_batched_in1(df):
        return
    from kgen.gen import dataflow as registry      # the registry imports this module
    takers = [d.name for d in registry.REGISTRY if takes_batched_in1(d)]
    raise PlanError(BATCHED_IN1_RULE,
                    f"broadcast_in1 = false with batch = {spec.batch} asks for {spec.batch} in1 matrices, but "
                    f"dataflow {df.name} ({df.factory.value}) fuses the batch into M and takes one in1 shared by "
                    f"every batch", spec.span("broadcast_in1"),
                    f"dataflow = {' or '.join(takers)}, or broadcast_in1 = true")


def accepts(df: Dataflow, memory: MemorySpec) -> bool:
    """Whether the factory takes every tensor where `memory` puts it."""
    return all(getattr(memory, t) in where for t, where in df.placements.items())


# ----------------------------------------------------------------------------------------------
# The 2D grid of blocks (2D multicast, reuse): M blocks over the grid's rows, N blocks over its columns
# ----------------------------------------------------------------------------------------------

def _per_core(spec: MatmulSpec, dim: str, tiles: int, cores: int, given: int | None, choices: list[str],
              axis: str) -> int:
    """per_core_M (dim "M", over the grid's y cores, x with transpose_mcast) or per_core_N ("N", over
    x, or y): the given value checked, or the smallest that spreads the tiles over at most `cores` cores."""
    legal = [d for d in divisors(tiles) if tiles // d <= cores]
    if given is None:
        value = min(legal)
        choices.append(f"per_core_{dim} auto -> {value}: {dim}t = {tiles} over {tiles // value} of "
                       f"{cores} grid {axis} cores")
        return value
    blocks = ceil_div(tiles, given)
    if blocks > cores:
        # the smallest per_core that fits is ceil(tiles / cores); it need not divide (padded last block)
        least = ceil_div(tiles, cores)
        blocks_name = "num_blocks_y" if dim == "M" else "num_blocks_x"     # the factory's names, whatever the axis
        raise PlanError(f"{blocks_name} <= grid.{axis}, {blocks_name} = ceil({dim}t / per_core_{dim})"
                        + (" (swapped by transpose_mcast)" if spec.transpose_mcast else ""),
                        f"per_core_{dim} = {given} needs {blocks} cores along {axis}, "
                        f"the grid has {cores}", spec.span("block.per_core"),
                        nearest(range(least, min(tiles, least + 3) + 1), given))
    return given


def grid_layout(spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
    """M blocks over the grid's rows, N blocks over its columns; transpose_mcast swaps them (2D factory:
    `if (transpose_mcast) std::swap(num_cores_with_work_c, num_cores_with_work_r)`)."""
    pc = spec.block.per_core
    m_axis, n_axis = (0, 1) if spec.transpose_mcast else (1, 0)
    per_core_m = _per_core(spec, "M", mt, grid_req[m_axis], pc[0] if pc else None, choices, "xy"[m_axis])
    per_core_n = _per_core(spec, "N", nt, grid_req[n_axis], pc[1] if pc else None, choices, "xy"[n_axis])
    # num_blocks_x = ceil(Nt / per_core_N), num_blocks_y = ceil(Mt / per_core_M) (2D factory)
    m_blocks, n_blocks = ceil_div(mt, per_core_m), ceil_div(nt, per_core_n)
    grid = (m_blocks, n_blocks) if spec.transpose_mcast else (n_blocks, m_blocks)
    return Layout(per_core_m, per_core_n, grid, n_blocks)


class GridOfBlocks:
    """The per-core terms of a 2D grid of blocks: one row of cores per M-block, one column per N-block
    (the other way round under transpose_mcast)."""

    def core_m_terms(self, p: Plan) -> dict[str, int]:
        # transpose_mcast lays the M blocks along x (the factory: `std::swap(in0_idx, in1_idx)`)
        return {"core_x": 1} if p.transpose_mcast else {"core_y": 1}

    def core_n_terms(self, p: Plan) -> dict[str, int]:
        return {"core_y": 1} if p.transpose_mcast else {"core_x": 1}

    def padding_notes(self, p: Plan) -> tuple[str, ...]:
        notes = []
        if p.padded_m:
            notes.append(f"{'right column' if p.transpose_mcast else 'bottom row'} of cores: {p.last_per_core_m} "
                         f"of per_core_M = {p.per_core_m} rows of tiles "
                         f"(Mt = {p.mt} = {p.m_blocks - 1} x {p.per_core_m} + {p.last_per_core_m}); "
                         f"its last out block has {p.last_out_block_h} of {p.out_block_h} rows, the rest "
                         f"is padding: not read, computed on stale data, not written")
        if p.padded_n:
            notes.append(f"{'bottom row' if p.transpose_mcast else 'right column'} of cores: {p.last_per_core_n} "
                         f"of per_core_N = {p.per_core_n} columns of tiles "
                         f"(Nt = {p.nt} = {p.n_blocks - 1} x {p.per_core_n} + {p.last_per_core_n}); "
                         f"its last out block has {p.last_out_block_w} of {p.out_block_w} columns, the rest "
                         f"is padding: not read, computed on stale data, not written")
        return tuple(notes)
