"""Helpers the factory modules share: what a factory takes, and the layout of cores the 2D-grid
factories (2D multicast, reuse) share. The factory interface itself is `kgen.gen.planned.Dataflow`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kgen.core.types import Placement
from kgen.gen.planned import DRAM_ONLY, INTERLEAVED, Dataflow, Layout, Plan  # noqa: F401 (the factories' vocabulary)
from kgen.gen.rules import PlanError, ceil_div, divisors, nearest_offer

if TYPE_CHECKING:
    from kgen.gen.matmul_spec import MatmulSpec, MemorySpec


def takes_dram(df: Dataflow) -> bool:
    """Whether the factory takes every tensor interleaved in DRAM (the form tune and fuzz draw)."""
    return all(Placement.DRAM in where for where in df.placements.values())


def takes_batched_in1(df: Dataflow) -> bool:
    """Whether the factory runs one in1 matrix per batch."""
    return df.batched_in1


def accepts(df: Dataflow, memory: MemorySpec) -> bool:
    """Whether the factory takes every tensor where `memory` puts it."""
    return all(getattr(memory, t) in where for t, where in df.placements.items())


# ----------------------------------------------------------------------------------------------
# The 2D grid of blocks (2D multicast, reuse): M blocks over the grid's rows, N blocks over its columns
# ----------------------------------------------------------------------------------------------

def per_core_edit(spec: MatmulSpec, dim: str, other: int | None = None):
    """A hint's edit of one dimension of per_core ("M" or "N"); the other is `other` when given (the
    planner's value, or one that passes the rule the given one breaks), else as the spec gives it."""
    pc = spec.block.per_core

    def edit(v: int) -> tuple[str, tuple[int, int]]:
        m, n = pc if pc else (other, other)
        if other is not None:
            m, n = (m, other) if dim == "M" else (other, n)
        return "block.per_core", (v, n) if dim == "M" else (m, v)
    return edit


def _per_core(spec: MatmulSpec, dim: str, tiles: int, cores: int, given: int | None, choices: list[str],
              axis: str, other: tuple[int, int, int | None] = (1, 1, None)) -> int:
    """per_core_M (dim "M", over the grid's y cores, x with transpose_mcast) or per_core_N ("N", over
    x, or y): the given value checked, or the smallest that spreads the tiles over at most `cores` cores.
    `other`: the other dimension's tiles, cores and given value, for the hint (which changes it too when
    it breaks the same rule)."""
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
        other_tiles, other_cores, other_given = other
        fixed = other_given
        if other_given is not None and ceil_div(other_tiles, other_given) > other_cores:
            fixed = ceil_div(other_tiles, other_cores)      # the other dimension breaks the rule too
        offer = nearest_offer(range(least, tiles + 1), given, f"per_core_{dim} of at most {cores} core{'s' * (cores != 1)}",
                              per_core_edit(spec, dim, fixed))
        if fixed != other_given:
            pair = (lambda v: f"{v} x {fixed}") if dim == "M" else (lambda v: f"{fixed} x {v}")
            offer = replace(offer, candidates=(replace(c, text=pair(int(c.order))) for c in offer.candidates),
                            prefix="per_core = ", what=f"per_core within {cores} x {other_cores} cores")
        raise PlanError(f"{blocks_name} <= grid.{axis}, {blocks_name} = ceil({dim}t / per_core_{dim})"
                        + (" (swapped by transpose_mcast)" if spec.transpose_mcast else ""),
                        f"per_core_{dim} = {given} needs {blocks} cores along {axis}, "
                        f"the grid has {cores}", spec.span("block.per_core"), offer)
    return given


def grid_layout(spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
    """M blocks over the grid's rows, N blocks over its columns; transpose_mcast swaps them (2D factory:
    `if (transpose_mcast) std::swap(num_cores_with_work_c, num_cores_with_work_r)`)."""
    pc = spec.block.per_core
    m_axis, n_axis = (0, 1) if spec.transpose_mcast else (1, 0)
    given_m, given_n = pc if pc else (None, None)
    per_core_m = _per_core(spec, "M", mt, grid_req[m_axis], given_m, choices, "xy"[m_axis],
                           (nt, grid_req[n_axis], given_n))
    per_core_n = _per_core(spec, "N", nt, grid_req[n_axis], given_n, choices, "xy"[n_axis],
                           (mt, grid_req[m_axis], given_m))
    # num_blocks_x = ceil(Nt / per_core_N), num_blocks_y = ceil(Mt / per_core_M) (2D factory)
    m_blocks, n_blocks = ceil_div(mt, per_core_m), ceil_div(nt, per_core_n)
    grid = (m_blocks, n_blocks) if spec.transpose_mcast else (n_blocks, m_blocks)
    return Layout(per_core_m, per_core_n, grid, n_blocks)


def whole_padded_blocks_note(p: Plan, axis: int) -> str:
    """The tail of a padding note when the last core's out blocks past its tiles lie wholly outside the
    tensor (Dataflow.skips_padded_out_blocks): how many, and what TT's program does with them."""
    tiles, per, block, blocks = ((p.last_per_core_m, p.per_core_m, p.out_block_h, p.num_blocks_h_dim) if axis == 0
                                 else (p.last_per_core_n, p.per_core_n, p.out_block_w, p.num_blocks_w_dim))
    real = ceil_div(tiles, block)
    if real == blocks:
        return ""
    dim = "hw"[axis]
    return (f"; its {blocks - real} out block(s) after that lie wholly past the tensor: read past it by TT-Metal's "
            f"readers (kgen's skip them), computed, not written (last_num_blocks_{dim}_dim = {real})")


class GridOfBlocks(Dataflow):
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
                         f"is padding: not read, computed on stale data, not written" + whole_padded_blocks_note(p, 0))
        if p.padded_n:
            notes.append(f"{'bottom row' if p.transpose_mcast else 'right column'} of cores: {p.last_per_core_n} "
                         f"of per_core_N = {p.per_core_n} columns of tiles "
                         f"(Nt = {p.nt} = {p.n_blocks - 1} x {p.per_core_n} + {p.last_per_core_n}); "
                         f"its last out block has {p.last_out_block_w} of {p.out_block_w} columns, the rest "
                         f"is padding: not read, computed on stale data, not written" + whole_padded_blocks_note(p, 1))
        return tuple(notes)
