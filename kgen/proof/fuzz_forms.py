"""The fuzz generator's forms of issue #39 (kgen/proof/fuzz.py draws a case, these make some of the
drawn cases one of them, each on its own random stream so the other cases of a seed stay as they were):
in0, in1 and the output interleaved over the L1 banks, `dataflow = auto` (ttnn.matmul's own choice),
transposed inputs, in0 of rank 4 and 5, the batch looped over (`fuse_batch = false`, in1 shared or one
per batch), TT's multi-core factory, height shards on the 1D in1 multicast and the shard specs written.
Each restates the rules that make its cases legal, as the rest of the generator does; `forms` names the
forms a planned case has, for the fuzz's counts."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW, Placement
from kgen.gen import activations
from kgen.gen import dataflow as dataflows

if TYPE_CHECKING:
    from kgen.gen.planned import Plan

L1_INTERLEAVED_SHARE = 0.2   # of the all-DRAM cases: in0, in1 and/or the output interleaved over the L1 banks
AUTO_SHARE = 0.3             # of the DRAM-interleaved 2D and reuse cases that can be: `dataflow = auto`
BATCH_RANK_SHARE = 0.5       # of the cases with a batch: an in0 of rank 4 or 5 (`batch = 2 x 3`, `1 x 3`)
TRANSPOSE_B_SHARE = 0.2      # of the cases on a factory that reads transposed inputs: transpose_b
TRANSPOSE_A_SHARE = 0.15     # of those with batch 1 (or the batch looped over) and an interleaved in0: transpose_a
UNFUSED_SHARE = 0.8          # of the batched cases on a factory that loops over the batch: fuse_batch = false
BATCHED_IN1_SHARE = 0.6      # of those: one in1 per batch (broadcast_in1 = false), else in1 shared
MULTI_CORE_SHARE = 0.08      # of the DRAM-interleaved cases: TT's multi-core factory (`dataflow = multi_core`)
HEIGHT_SHARDED_SHARE = 0.4   # of the 1D in1-multicast cases that can be: in0 and/or the output height-sharded
WIDTH_SHARDED_SHARE = 0.8    # of the 1D in0-multicast cases that can be: in0 (and the output) width-sharded
WIDTH_SHARDED_MAX_CORES = 16  # ... on a grid of at most this many cores
SHARDED_SHARE = 0.3          # of the mcast_2d cases that can be: in0 and/or the output block- or height-sharded in L1
SHARD_SPEC_SHARE = 0.5       # of the L1-sharded cases: the shard specs written (`memory.in0_shard = ...`)
SHARD_DEFAULTS_SHARE = 0.5   # of those whose shard implies them: the grid and per_core left to it

C = TypeVar("C")             # fuzz._Choice (not imported: fuzz imports this module)


def transposed_inputs(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some cases with ttnn.matmul's transpose_a / transpose_b (in0 stored K x M, in1 N x K), on the
    factories that read them in place (Dataflow.transposes_inside: every one but the DRAM-sharded, before
    which TT runs a separate transpose; `dataflow = auto` picks only such ones). transpose_a needs batch 1
    or the batch looped over (TT's fuse_batch rule: each batch's K x M is read transposed) and its tensors in DRAM (kgen's L1 check of c_0 and the L1 tensors is the form above's), and adds c_10, as large as c_0: the drawn CBs twice over
    stay within L1."""
    if not dataflows.get(c.dataflow).transposes_inside:
        return c
    arch = load_arch(c.arch)
    b = rng.random() < TRANSPOSE_B_SHARE
    a = (rng.random() < TRANSPOSE_A_SHARE and (c.batch == 1 or c.unfused)
         and (c.memory, c.memory_in1) == ((Placement.DRAM, Placement.DRAM), Placement.DRAM)
         and 2 * cb_bytes(arch, c) <= arch.usable_cb_bytes)
    return dataclasses.replace(c, transposed=(a, b)) if a or b else c


def l1_interleaved(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some all-DRAM cases with in0, in1 and/or the output interleaved over the L1 banks (ttnn's L1
    INTERLEAVED memory config) on a factory that takes them there: no shard rule applies, padded
    blocks and untilize_out included. TT-Metal's allocator deals each tensor's pages round-robin over
    the L1 banks (one per worker core) from the top of each bank down, and the CBs must end below them:
    each tensor takes ceil(tiles / banks) tiles of every bank, checked with the CBs against L1."""
    placements = dataflows.get(c.dataflow).placements
    if ((c.memory, c.memory_in1) != ((Placement.DRAM, Placement.DRAM), Placement.DRAM)
            or rng.random() >= L1_INTERLEAVED_SHARE):
        return c
    where = [t for t in ("in0", "in1", "out") if Placement.L1 in placements.get(t, ())]
    picked = {t for t in where if rng.random() < 0.5} or ({rng.choice(where)} if where else set())
    if not picked:
        return c
    arch = load_arch(c.arch)
    tiles = {"in0": c.mt * c.kt, "in1": c.kt * c.nt * (1 if c.broadcast_in1 else c.batch), "out": c.mt * c.nt}
    formats = {"in0": c.dtypes[0], "in1": c.dtypes[1], "out": c.dtypes[2]}
    banks = arch.toolchain.num_l1_banks
    held = sum(-(-tiles[t] // banks) * arch.tile_bytes[DTYPE_TO_FORMAT[formats[t]]] for t in picked)
    if cb_bytes(arch, c) + held > arch.usable_cb_bytes:
        return c
    at = {t: Placement.L1 if t in picked else Placement.DRAM for t in ("in0", "in1", "out")}
    return dataclasses.replace(c, memory=(at["in0"], at["out"]), memory_in1=at["in1"])


def _is_narrow(height: int, width: int) -> bool:
    """TT's is_narrow_shape as create_matmul_program_config calls it (matmul_program_config.cpp,
    all_dram false): the larger of height and width over the smaller, in whole numbers, above 8."""
    return max(height, width) // min(height, width) > 8


def tt_auto(rng: random.Random, c: C, drawn: tuple[str, ...]) -> C:
    """Some DRAM-interleaved cases with `dataflow = auto`: ttnn.matmul 0.81.1's own choice of factory and
    blocking, with no program config (kgen/gen/ttauto.py reconstructs it; the fuzzer restates only the
    parts that decide legality). The drawn grid is written as ttnn.matmul's core_grid, or, with batch 1,
    left out (TT's whole worker grid). Where TT's choice is its 1D systolic config (a narrow shape or a
    dimension of one tile: create_matmul_program_config; with no core grid, a shape that fills one row
    or column), the split dimension must lie in one row of cores, one tile a core: TT's per_core =
    div_up(tiles, cores) then divides the tiles and the cores are one row-major run of a single row.
    Not with a batched in1, L1 or sharded tensors, transpose_mcast, untilize_out (TT takes it only with a
    1D program config given) or the DRAM-sharded factory: kgen reconstructs TT's choice without them.
    Made only of drawn 2D and reuse cases without padded blocks, so the rarer forms keep their share."""
    if (c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM or c.unfused
            or c.transpose_mcast or c.untilize or c.dataflow not in drawn
            or c.mt % c.per_core[0] or c.nt % c.per_core[1] or rng.random() >= AUTO_SHARE):
        return c
    gx = c.grid_req[0]
    mt_batch = c.mt // c.batch                       # one batch's M tiles (the batch divides the fused Mt)
    split = max(c.mt, c.nt)                       # the 1D systolic config's split dimension (tall or wide)
    one_d = _is_narrow(c.mt * TILE_HW, c.nt * TILE_HW) or min(c.kt, mt_batch, c.nt) == 1
    with_grid = not one_d or split <= gx
    cols = load_arch(c.arch).worker_grid[0]
    without_grid = c.batch == 1 and max(c.mt, c.nt) <= cols
    if not (with_grid or without_grid):
        return c
    write_grid = rng.choice([w for w, ok in ((True, with_grid), (False, without_grid)) if ok])
    return dataclasses.replace(c, tt_auto=True, write_grid=write_grid, auto=frozenset(), untilize=False)


def batch_spelling(rng: random.Random, batch: int) -> str:
    """`batch = B`, or for some batches, in0's leading dims of a rank-4 to rank-8 in0 (`2 x 3`,
    `2 x 1 x 3`, `1 x 2 x 1 x 1 x 3 x 1`): ttnn.matmul folds them into one batch of their product (get_batch_size), as kgen does,
    so the case plans as the drawn batch; the manifest keeps the dims."""
    factors = [d for d in range(1, batch + 1) if batch % d == 0]      # 1 and the batch itself too: `1 x 3`
    if batch == 1 or rng.random() >= BATCH_RANK_SHARE:
        return str(batch)
    first = rng.choice(factors)
    dims = [first, batch // first]
    if rng.random() < 0.5:                   # rank 5: a dim of 1 anywhere, or a further split
        dims.insert(rng.randrange(3), 1)
        if rng.random() < 0.3:               # up to rank 8, TT's largest (spec.MAX_TENSOR_RANK)
            while len(dims) < 6:
                dims.insert(rng.randrange(len(dims) + 1), 1)
    return " x ".join(map(str, dims))


def _run_grid(cores: int, cols: int) -> tuple[int, int]:
    """The bounding box of a row-major run of `cores` cores `cols` wide (the 1D factory's grid)."""
    return (cores, 1) if cores <= cols else (cols, -(-cores // cols))


def unfused_batch(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some batched cases with every core looping over the batch (TT's fuse_batch = false, on the
    factories that run it: Dataflow.loops_batch), in1 shared (`fuse_batch = false`) or one per batch
    (`broadcast_in1 = false`, unfused by default). per_core is then of one batch's Mt: the 2D grids keep their
    columns and take one batch's rows of blocks; mcast_1d_in0's one M-block becomes one batch's Mt (its out
    block with it, when that was the whole block); mcast_1d_in1's run shrinks to one batch's M-blocks. Where
    per_core_M does not divide one batch's Mt, each batch's last row of cores is padded where the factory's
    writers take it (mcast_2d, mcast_1d_in1: more than one M-block, Dataflow.pads_last_m_block and
    skips_padded_out_blocks), not on reuse (its TT_FATAL(Mt % per_core_M == 0)). Not
    with a sharded tensor (TT: "fuse_batch must be enabled when input A is sharded", a block-sharded output
    "is incompatible with batch > 1 ... when batch fusion is disabled"). M, N, K short of whole tiles stay,
    some drawn (ttnn's tilize pads them). The kernels loop over the batch, which double-buffers in0/in1 and
    passes several output blocks through out/partials: the L1 budget is checked again."""
    df = dataflows.get(c.dataflow)
    if (c.batch == 1 or not df.loops_batch or not df.draws_blocks or c.mt % c.batch
            or c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM
            or rng.random() >= UNFUSED_SHARE):
        return c
    batched = rng.random() < BATCHED_IN1_SHARE
    written = False if not batched or rng.random() < 0.3 else None      # `fuse_batch = false` written
    mt_b = c.mt // c.batch
    (pm, pn), (obh, obw), (sbh, _) = c.per_core, c.out_block, c.subblock
    grid_req = c.grid_req
    if df.shared_axis == 0:                    # mcast_1d_in0: the one M-block is one batch's Mt
        if mt_b % obh and obh != pm:
            return c
        pm, obh = mt_b, obh if mt_b % obh == 0 else mt_b
        if obh % sbh or ((pm, obh) != c.per_core[:1] + c.out_block[:1] and "out_subblock" in c.auto):
            return c
    elif mt_b % pm and (df.name == dataflows.REUSE.name or not df.pads_last_m_block(-(-mt_b // pm))
                        or not df.skips_padded_out_blocks(0, -(-mt_b // pm))):
        return c
    elif df.is_1d:                             # mcast_1d_in1: one batch's M-blocks on a run as wide as drawn
        grid_req = _run_grid(-(-mt_b // pm), c.grid_req[0])
    elif c.transpose_mcast and grid_req[0] == c.mt // pm:      # M blocks along x
        grid_req = (-(-mt_b // pm), grid_req[1])
    elif not c.transpose_mcast and grid_req[1] == c.mt // pm:
        grid_req = (grid_req[0], -(-mt_b // pm))
    trim = c.trim
    if not any(trim) and not c.untilize and rng.random() < 0.5:
        trim = tuple(rng.randint(1, TILE_HW - 1) if rng.random() < 0.5 else 0 for _ in range(3))
    out = dataclasses.replace(c, broadcast_in1=not batched, fuse_batch=written, auto=c.auto - {"per_core"},
                              grid_req=grid_req, trim=trim, per_core=(pm, pn), out_block=(obh, obw))
    arch = load_arch(c.arch)
    return out if cb_bytes(arch, out) <= arch.usable_cb_bytes else c


def multi_core(rng: random.Random, c: C) -> C:
    """Some DRAM-interleaved cases on TT's multi-core factory (`dataflow = multi_core`,
    MatmulMultiCoreProgramFactory; kgen/gen/dataflow/multi_core.py): split_work_to_cores over the output
    tiles of the requested grid, one tile at a time with all of K in DST. Its own rules, restated: no
    bias, no activation, no untilize_out, no transposed inputs (it reads A and B as stored), and the block
    is per_core = out_block = out_subblock = 1 x 1, in0_block_w = Kt: written so, as `auto`, or left out.
    Any batch (fused, looped, one in1 per batch), shape and grid: the drawn ones. Its CBs (two tiles each)
    fit L1 wherever the drawn case's did."""
    if (c.dataflow not in dataflows.GRID_2D + tuple(dataflows.ONE_D) or c.tt_auto
            or c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM
            or rng.random() >= MULTI_CORE_SHARE):
        return c
    style = rng.choice(("written", "auto", "left out"))
    keys = frozenset({"in0_block_w", "out_subblock", "per_core", "out_block"})
    omit = (c.omit - {"dataflow", "per_core"}) | ({"block"} if style == "left out" else set())
    return dataclasses.replace(c, dataflow=dataflows.MULTI_CORE.name, per_core=(1, 1), out_block=(1, 1),
                               subblock=(1, 1), in0_block_w=c.kt, auto=keys if style == "auto" else frozenset(),
                               omit=frozenset(omit), bias=False, relu=False, activation=activations.NONE,
                               untilize=False, transpose_mcast=False, dtypes=c.dtypes[:3] + (None,))


def height_sharded(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some 1D in1-multicast cases with in0 and/or the output height-sharded in L1 (TT-Metal 0.81.1's
    IN0_SHARDED / OUT_SHARDED 1D builds: shard i, per_core_M rows, on core i of the compute grid), where TT's
    validation and kgen's limits allow it, restated here: the batch fused, no untilize; in0: out_block_h ==
    per_core_M (kgen: the compute kernel takes the shard's rows in one out block), in0_block_w drawn (one
    K-block: c_0 on the shard; several: copied out of the shard, TT's extract_shard_sub_blocks), N and K whole
    tiles, M any (ttnn pads it per batch and the last shard; a padded last core) unless the output is sharded
    too; the output: whole shards (tile-multiple shapes, per_core_M dividing Mt), out_subblock_w ==
    per_core_N or out_subblock_h == 1 (drawn), the same of out_block. c_0 grows to the whole shard (and c_2
    is the shard with several K-blocks), c_4 to the output shard: checked against L1 with room to spare."""
    df = dataflows.get(c.dataflow)
    (pm, pn), (obh, obw), (sbh, sbw) = c.per_core, c.out_block, c.subblock
    if (not df.is_1d or Placement.L1_HEIGHT_SHARDED not in df.placements["in0"] or c.untilize or c.unfused
            or c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM
            or rng.random() >= HEIGHT_SHARDED_SHARE):
        return c
    whole = not any(c.trim) and c.mt % pm == 0 and c.nt % pn == 0
    in0_ok = "in0_block_w" not in c.auto and obh == pm and c.trim[1:] == (0, 0)
    out_ok = whole and "out_subblock" not in c.auto and (sbw == pn or sbh == 1) and (obw == pn or obh == 1)
    h = Placement.L1_HEIGHT_SHARDED
    choices = [m for m, ok in (((h, Placement.DRAM), in0_ok), ((Placement.DRAM, h), out_ok),
                               ((h, h), in0_ok and out_ok and whole)) if ok]
    if not choices:
        return c
    arch = load_arch(c.arch)
    tb = arch.tile_bytes
    extra = (pm * c.kt * tb[DTYPE_TO_FORMAT[c.dtypes[0]]] * (2 if c.num_blocks > 1 else 1) + 64
             + 2 * pm * pn * max(tb[DTYPE_TO_FORMAT[c.dtypes[2]]], tb["Float32"]))
    if cb_bytes(arch, c) + extra > arch.usable_cb_bytes:
        return c
    return dataclasses.replace(c, memory=rng.choice(choices))


def width_sharded(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some 1D in0-multicast cases with in0 (and some with the output too) width-sharded in L1 (TT-Metal
    0.81.1's in0_is_sharded 1D build: every core of the requested grid holds a K slice of all of M and
    multicasts it; OUT_SHARDED: core i's output block on core i), where TT's validation and kgen's limits
    allow it, restated here: the batch fused, no untilize, whole tiles; M one per-core block ("M must be
    equal to per_core_M"); the shard the planner lays out, ceil(Kt / cores) K tiles on each core of the
    grid, dividing Kt (kgen's whole shards) and divided by in0_block_w (drawn, not auto); the output: N in
    whole per-core blocks, out_subblock_w == per_core_N or out_subblock_h == 1 (drawn), the same of
    out_block. c_2 holds the shard, c_4 grows to the output block: checked against L1 with room to spare."""
    df = dataflows.get(c.dataflow)
    (pm, pn), (obh, obw), (sbh, sbw) = c.per_core, c.out_block, c.subblock
    if (not df.is_1d or Placement.L1_WIDTH_SHARDED not in df.placements["in0"] or c.untilize or c.unfused
            or c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM or any(c.trim)
            or c.mt != pm or "in0_block_w" in c.auto or rng.random() >= WIDTH_SHARDED_SHARE):
        return c
    cells = c.grid_req[0] * c.grid_req[1]
    width = -(-c.kt // cells)
    # every core of the grid runs a reader of its own, each compiled for the emulator: grids of up to
    # WIDTH_SHARDED_MAX_CORES keep a case to seconds
    if c.kt % width or width % c.in0_block_w or cells > WIDTH_SHARDED_MAX_CORES:
        return c
    w = Placement.L1_WIDTH_SHARDED
    out_ok = (c.nt % pn == 0 and "out_subblock" not in c.auto and (sbw == pn or sbh == 1)
              and (obw == pn or obh == 1))
    memory = (w, w) if out_ok and rng.random() < 0.5 else (w, Placement.DRAM)
    arch = load_arch(c.arch)
    tb = arch.tile_bytes
    extra = (pm * width * tb[DTYPE_TO_FORMAT[c.dtypes[0]]] + 64
             + 2 * pm * pn * max(tb[DTYPE_TO_FORMAT[c.dtypes[2]]], tb["Float32"]))
    if cb_bytes(arch, c) + extra > arch.usable_cb_bytes:
        return c
    return dataclasses.replace(c, memory=memory)


def sharded_2d(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some mcast_2d cases with in0 and/or the output block-sharded in L1, where TT's
    2D validation and kgen's limits allow it, restated here: whole shards (tile-multiple shapes, per_core
    dividing Mt and Nt, no untilize); in0's K split evenly over the n cores along N, its shard width a
    multiple of in0_block_w (drawn, not auto: auto would pick within the shard); a sharded output needs
    out_subblock_w == per_core_N || out_subblock_h == 1, and the same of out_block (the subblock drawn,
    not auto). The shards add c_2 (per_core_M x shard width) and grow c_4 to the whole per-core output,
    checked against L1 with room to spare."""
    (pm, pn), (obh, obw), (sbh, sbw) = c.per_core, c.out_block, c.subblock
    if (Placement.L1_BLOCK_SHARDED not in dataflows.get(c.dataflow).placements["in0"] or c.untilize or any(c.trim) or c.mt % pm or c.nt % pn
            or rng.random() >= SHARDED_SHARE):
        return c
    arch = load_arch(c.arch)
    tb = arch.tile_bytes
    n = c.nt // pn
    in0_ok = c.kt % n == 0 and (c.kt // n) % c.in0_block_w == 0 and "in0_block_w" not in c.auto
    out_ok = "out_subblock" not in c.auto and (sbw == pn or sbh == 1) and (obw == pn or obh == 1)
    # height-sharded: !transpose_mcast, K == in0_block_w, and (kgen) out_block_h == per_core_M
    height_ok = not c.transpose_mcast and c.in0_block_w == c.kt and obh == pm
    choices = [m for m, ok in (((Placement.L1_BLOCK_SHARDED, Placement.DRAM), in0_ok), ((Placement.DRAM, Placement.L1_BLOCK_SHARDED), out_ok),
                               ((Placement.L1_BLOCK_SHARDED, Placement.L1_BLOCK_SHARDED), in0_ok and out_ok),
                               ((Placement.L1_HEIGHT_SHARDED, Placement.DRAM), height_ok),
                               ((Placement.L1_HEIGHT_SHARDED, Placement.L1_BLOCK_SHARDED), height_ok and out_ok)) if ok]
    if not choices:
        return c
    memory = rng.choice(choices)
    extra = (pm * c.kt * tb[DTYPE_TO_FORMAT[c.dtypes[0]]] + 64
             + 2 * pm * pn * max(tb[DTYPE_TO_FORMAT[c.dtypes[2]]], tb["Float32"]))
    if cb_bytes(arch, c) + extra > arch.usable_cb_bytes:
        return c
    return dataclasses.replace(c, memory=memory)


def _shards_of(c: C) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """The shards a sharded case's factory lays out (what Plan.shard_specs gives, restated from the factories:
    docs/spec.md), in elements on grids (x, y). mcast_2d: a block-sharded in0
    per_core_M x Kt / (cores along N) and a block-sharded output per_core_M x per_core_N on the grid with
    work (M along x with transpose_mcast), a height-sharded in0 per_core_M x Kt on the in0 senders' column;
    mcast_1d_in1: per_core_M x Kt (in0) and per_core_M x Nt (output) on the requested grid (its compute grid)."""
    (pm, pn), t = c.per_core, TILE_HW
    m_blocks, n_blocks = c.mt // pm, c.nt // pn
    with_work = (m_blocks, n_blocks) if c.transpose_mcast else (n_blocks, m_blocks)
    one_d = dataflows.get(c.dataflow).is_1d
    out = []
    if c.memory[0] == Placement.L1_BLOCK_SHARDED:
        out.append(("in0", (pm * t, c.kt // n_blocks * t), with_work))
    elif c.memory[0] == Placement.L1_HEIGHT_SHARDED:
        out.append(("in0", (pm * t, c.kt * t), c.grid_req if one_d else (1, m_blocks)))
    if c.memory[1] in (Placement.L1_BLOCK_SHARDED, Placement.L1_HEIGHT_SHARDED):
        out.append(("out", (pm * t, pn * t), c.grid_req if one_d else with_work))
    return out


def shard_specs(rng: random.Random, c: C) -> C:
    """Some L1-sharded cases (mcast_2d's block and height shards, mcast_1d_in1's height shards) with their
    shard specs written, `memory { in0_shard = H x W on X x Y }` (ttnn.ShardSpec's shape on a CoreRange from
    core (0, 0)): each tensor's, or one of them, the very shard the factory lays out. Where the shard
    implies them (ttnn's get_matmul_program_config: a block-sharded in0 on the 2D multicast, a height-sharded
    in0 on the 1D in1 multicast, else an output shard alone), some cases leave the grid (the shard grid,
    which is then the grid asked for) and per_core to it."""
    if dataflows.get(c.dataflow).name == dataflows.DRAM_SHARDED.name or c.tt_auto or rng.random() >= SHARD_SPEC_SHARE:
        return c
    laid = _shards_of(c)
    if not laid:
        return c
    if len(laid) > 1 and rng.random() < 0.5:
        laid = [rng.choice(laid)]
    one_d = dataflows.get(c.dataflow).is_1d
    first = laid[0]
    implies = (first[0] == "out" or (c.memory[0] == Placement.L1_BLOCK_SHARDED and not one_d)
               or (c.memory[0] == Placement.L1_HEIGHT_SHARDED and one_d))
    out = dataclasses.replace(c, shards=tuple(laid))
    if implies and rng.random() < SHARD_DEFAULTS_SHARE:
        out = dataclasses.replace(out, grid_req=first[2], omit=c.omit | {"grid", "per_core"},
                                  auto=c.auto - {"per_core"})
    return out


# The forms `kgen fuzz` counts (its summary's `forms:` line), in the order it lists them
FORMS: tuple[str, ...] = (
    "1D in0", "1D in1", "1D partial row", "padded blocks", "tile padding", "L1 interleaved", "auto",
    "transpose_mcast", "transpose_a", "transpose_b", "batch rank > 3", "unfused batch", "batched in1",
    "multi-core", "DRAM-sharded", "block-sharded", "height-sharded 2D", "height-sharded 1D", "width-sharded 1D",
    "shard spec")


def forms(p: Plan) -> tuple[str, ...]:
    """The forms a planned case has (FORMS), read from its plan and spec."""
    s, mem = p.spec, (p.memory.in0, p.memory.in1, p.memory.out)
    height = Placement.L1_HEIGHT_SHARDED in mem
    facts = {
        "1D in0": s.dataflow == dataflows.MCAST_1D_IN0.name, "1D in1": s.dataflow == dataflows.MCAST_1D_IN1.name,
        "1D partial row": p.is_1d and p.num_cores < p.grid[0] * p.grid[1],
        "padded blocks": p.padded_blocks, "tile padding": bool(p.tile_padding), "L1 interleaved": Placement.L1 in mem,
        "auto": bool(p.tt_choice), "transpose_mcast": p.transpose_mcast, "transpose_a": s.transpose_a,
        "transpose_b": s.transpose_b, "batch rank > 3": len(s.batch_dims) > 1,
        "unfused batch": s.batch > 1 and not s.fuses_batch, "batched in1": p.batched_in1,
        "multi-core": s.dataflow == dataflows.MULTI_CORE.name, "DRAM-sharded": s.dataflow == dataflows.DRAM_SHARDED.name,
        "block-sharded": Placement.L1_BLOCK_SHARDED in mem, "height-sharded 2D": height and not p.is_1d,
        "height-sharded 1D": height and p.is_1d, "width-sharded 1D": mem[0] == Placement.L1_WIDTH_SHARDED and p.is_1d,
        "shard spec": any(s.memory.shard(t) is not None for t in ("in0", "out")),
    }
    return tuple(f for f in FORMS if facts[f])


def forms_line(counts: Counter, word: Callable[[str], str] = str) -> str:
    """`forms: 1D in0 3, 1D in1 0, ...`: the cases of each form (FORMS, every one, 0 included; a case counts
    in each form it has); `word` keeps each count with its form (terminal.keep_together) for the wrappers."""
    return "forms: " + ", ".join(word(f"{form} {counts[form]}") for form in FORMS)
