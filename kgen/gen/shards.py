"""Shard specs a spec fixes (`memory { in0_shard = 256 x 32 on 8 x 4 }`, ttnn.ShardSpec's shape and
grid): the planner lays the tensors out from them where the spec leaves the grid and per_core to it, and
refuses a plan whose shards are not the given ones, with the TT-Metal 0.81.1 rule that fails there
(tenstorrent/tt-metal@001cea9a: matmul_device_operation.cpp's validation, config/matmul_program_config.cpp;
the strings are the 0.81.1 wheel's _ttnncpp.so's).

What each factory reads and writes where (the shards `Plan.shard_specs` gives, which the emulator and
port-check place exactly so):

- the 2D multicast, a block-sharded in0: per_core_M x Kt / (cores along N) on the grid of blocks, ROW_MAJOR
  (COL_MAJOR with transpose_mcast); a block-sharded output: per_core_M x per_core_N on the same grid;
- the 2D multicast, a height-sharded in0: per_core_M x Kt on the in0 senders' column;
- the 1D in1 multicast, a height-sharded in0 or output: per_core_M x Kt (x Nt) on the compute grid, shard i on
  core i in row-major order (the factory's core i holds M-block i);
- the 1D in0 multicast, a width-sharded in0: Mt x (shard width) on the compute grid, shard i (K tiles i * width
  onwards) on core i in row-major order, every core of the grid taking part (its
  in0_sender_num_cores); a width-sharded output: per_core_M x per_core_N, shard i on core i (N-block i).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kgen.core.types import TILE_HW, Placement
from kgen.gen.rules import PlanError, ceil_div, round_up_tiles

if TYPE_CHECKING:
    from kgen.gen.matmul_spec import MatmulSpec, ShardGiven
    from kgen.gen.planned import Plan

# TT-Metal 0.81.1's rules a given shard can break (matmul_device_operation.cpp, matmul_program_config.cpp)
PER_CORE_M_RULE = "per_core_M == shard_shape[0] / tile height (matmul_device_operation.cpp)"
WIDTH_M_RULE = "mcast_in0 with a sharded in0: M == per_core_M, no padding (matmul_device_operation.cpp)"
HEIGHT_K_RULE = "a height-sharded in0's shard holds all of K: K == shard_shape[1] / tile width (matmul_device_operation.cpp)"
BLOCK_K_RULE = ("a block-sharded in0: cores along x == K / shard width, along y == M / shard height "
                "(get_matmul_program_config, matmul_program_config.cpp)")
GRID_RULE = "kgen: a given shard grid is the factory's grid of cores with work"
OUT_RULE = "kgen: a sharded output's shard is per_core_M x per_core_N, on the factory's cores with work"


def _tiles(given: ShardGiven) -> tuple[int, int]:
    return given.shape[0] // TILE_HW, given.shape[1] // TILE_HW


def with_shard_defaults(spec: MatmulSpec, is_1d: bool) -> MatmulSpec:
    """The spec with the grid and per_core its given in0 shard (else its given output shard) implies,
    where it leaves them to the planner, as ttnn derives them from the tensor's shard spec
    (get_matmul_program_config): the shard grid is the compute grid; a block-sharded in0 on the 2D
    multicast gives per_core_M = its rows and per_core_N = Nt over K / its width cores; a height-sharded
    in0 on the 1D in1 multicast per_core_M = its rows, per_core_N = Nt; a width-sharded in0 on the 1D in0
    multicast per_core_M = its rows, per_core_N = div_up(Nt, its cores); an output shard per_core itself."""
    mem = spec.memory
    nt, kt = round_up_tiles(spec.n), round_up_tiles(spec.k)
    given, per_core = None, None
    if mem.in0_shard is not None and mem.in0 == Placement.L1_BLOCK_SHARDED and not is_1d:
        given = mem.in0_shard
        h, w = _tiles(given)
        if w and kt % w == 0:
            per_core = (h, ceil_div(nt, kt // w))
    elif mem.in0_shard is not None and mem.in0 == Placement.L1_HEIGHT_SHARDED and is_1d:
        given = mem.in0_shard
        per_core = (_tiles(given)[0], nt)
    elif mem.in0_shard is not None and mem.in0 == Placement.L1_WIDTH_SHARDED and is_1d:
        # get_matmul_program_config's 1D in0 config: per_core_M = M (the shard's rows), per_core_N = div_up(Nt,
        # the shard grid's cores)
        given = mem.in0_shard
        per_core = (_tiles(given)[0], ceil_div(nt, given.grid[0] * given.grid[1]))
    elif mem.in0_shard is None and mem.out_shard is not None:
        given = mem.out_shard
        per_core = _tiles(given)
    if given is None:
        return spec
    grid = spec.grid if spec.grid is not None else given.grid
    block = spec.block if spec.block.per_core is not None or per_core is None else \
        replace(spec.block, per_core=per_core)
    return replace(spec, grid=grid, block=block)


def height_shard(spec: MatmulSpec, grid: tuple[int, int]) -> tuple[int, int, tuple[int, int]]:
    """A height-sharded in0's shard: (rows, width in tiles, grid): the spec's `memory.in0_shard`, else the one
    kgen lays out for the op (a placement without a shard spec): ceil(batch * Mt / cores) rows of all Kt on
    each core of `grid`, in row-major order (the 1D in1-multicast factory's core i holding M-block i)."""
    given = spec.memory.in0_shard
    if given is not None:
        return _tiles(given)[0], _tiles(given)[1], given.grid
    mt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.k)
    return ceil_div(mt, grid[0] * grid[1]), kt, grid


def width_shard(spec: MatmulSpec, grid: tuple[int, int]) -> tuple[int, int, tuple[int, int]]:
    """A width-sharded in0's shard: (rows, width in tiles, grid): the spec's `memory.in0_shard`, else the one
    kgen lays out for the op (a placement without a shard spec): all batch * Mt rows by ceil(Kt / cores) K tiles
    on each core of `grid`, shard i on core i in row-major order (a last core past K holds padding only)."""
    given = spec.memory.in0_shard
    if given is not None:
        return _tiles(given)[0], _tiles(given)[1], given.grid
    mt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.k)
    return mt, ceil_div(kt, grid[0] * grid[1]), grid


def check_shards(p: Plan) -> None:
    """Refuse a plan whose shards are not the ones the spec gives (TT's rule where TT has one)."""
    spec = p.spec
    ours = p.shard_specs
    for tensor in ("in0", "out"):
        given = spec.memory.shard(tensor)
        if given is None:
            continue
        key = f"memory.{tensor}_shard"
        laid = ours.get(tensor)
        if laid is None:
            raise PlanError(GRID_RULE, f"{key} = {given}: dataflow {spec.dataflow} does not read {tensor} from L1 "
                            f"shards", spec.span(key), f"leave {tensor}_shard out")
        x0, y0, x1, y1 = laid["grid"]
        shape, grid = tuple(laid["shape"]), (x1 - x0 + 1, y1 - y0 + 1)
        if shape == given.shape and grid == given.grid:
            continue
        rule, why = _why(p, tensor, given, shape, grid)
        raise PlanError(rule, f"{key} = {given}, but {why}", spec.span(key),
                        f"{tensor}_shard = {shape[0]} x {shape[1]} on {grid[0]} x {grid[1]}, or leave it out "
                        f"(the planner lays {tensor} out itself)")


def _why(p: Plan, tensor: str, given: ShardGiven, shape: tuple[int, int], grid: tuple[int, int]) -> tuple[str, str]:
    """TT's rule the given shard breaks and what the plan's layout is."""
    h, w = _tiles(given)
    laid = (f"dataflow {p.spec.dataflow} lays {tensor} out as {shape[0]} x {shape[1]} shards on "
            f"{grid[0]} x {grid[1]} cores")
    if tensor == "out":
        return OUT_RULE, f"{laid} (per_core {p.per_core_m} x {p.per_core_n})"
    if h != p.per_core_m:
        return PER_CORE_M_RULE, f"per_core_M = {p.per_core_m}: TT-Metal requires \"per_core_M ({p.per_core_m}) " \
                                f"must equal shard_shape[0] / in0_tile.get_height() ({h})\""
    if p.memory.in0 == Placement.L1_HEIGHT_SHARDED and w != p.kt:
        return HEIGHT_K_RULE, f"Kt = {p.kt}: TT-Metal requires \"K must be equal to shard_shape[1] / " \
                              f"in0_tile.get_width()\" ({w})"
    if p.memory.in0 == Placement.L1_BLOCK_SHARDED and (w * p.n_blocks != p.kt or given.grid != grid):
        return BLOCK_K_RULE, f"{laid}: TT-Metal requires \"Num cores along x ({p.n_blocks}) must match provided " \
                             f"grid size\" (Kt = {p.kt} over shards {w} tiles wide, rows of {p.per_core_m} tiles " \
                             f"over {p.m_blocks} cores)"
    return GRID_RULE, laid
