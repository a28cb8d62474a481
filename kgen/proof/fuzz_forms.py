"""The fuzz generator's forms of issue #39 (kgen/proof/fuzz.py draws a case, these make some of the
drawn cases one of them, each on its own random stream so the other cases of a seed stay as they were):
in0, in1 and the output interleaved over the L1 banks, and `dataflow = auto`, ttnn.matmul's own choice.
Each restates the rules that make its cases legal, as the rest of the generator does."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import TypeVar

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW, Placement
from kgen.gen import dataflow as dataflows

L1_INTERLEAVED_SHARE = 0.2   # of the all-DRAM cases: in0, in1 and/or the output interleaved over the L1 banks
AUTO_SHARE = 0.3             # of the DRAM-interleaved 2D and reuse cases that can be: `dataflow = auto`
BATCH_RANK_SHARE = 0.5       # of the cases with a batch: an in0 of rank 4 or 5 (`batch = 2 x 3`, `1 x 3`)
TRANSPOSE_B_SHARE = 0.2      # of the cases on a factory that reads transposed inputs: transpose_b
TRANSPOSE_A_SHARE = 0.15     # of those with batch 1 and an interleaved in0: transpose_a

C = TypeVar("C")             # fuzz._Choice (not imported: fuzz imports this module)


def transposed_inputs(rng: random.Random, c: C, cb_bytes: Callable[[ArchFacts, C], int]) -> C:
    """Some cases with ttnn.matmul's transpose_a / transpose_b (in0 stored K x M, in1 N x K), on the
    factories that read them in place (Dataflow.transposes_inside: every one but the DRAM-sharded, before
    which TT runs a separate transpose; `dataflow = auto` picks only such ones). transpose_a needs batch 1
    (TT's fuse_batch rule) and its tensors in DRAM (kgen's L1 check of c_0 and the L1 tensors is the form above's), and adds c_10, as large as c_0: the drawn CBs twice over
    stay within L1."""
    if not dataflows.get(c.dataflow).transposes_inside:
        return c
    arch = load_arch(c.arch)
    b = rng.random() < TRANSPOSE_B_SHARE
    a = (rng.random() < TRANSPOSE_A_SHARE and c.batch == 1
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
    tiles = {"in0": c.mt * c.kt, "in1": c.kt * c.nt * c.batch_ct, "out": c.mt * c.nt}
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
    if (c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM or not c.broadcast_in1
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
    """`batch = B`, or for some batches, in0's leading dims of a rank-4 or rank-5 in0 (`2 x 3`,
    `2 x 1 x 3`): ttnn.matmul folds them into one batch of their product (get_batch_size), as kgen does,
    so the case plans as the drawn batch; the manifest keeps the dims."""
    factors = [d for d in range(1, batch + 1) if batch % d == 0]      # 1 and the batch itself too: `1 x 3`
    if batch == 1 or rng.random() >= BATCH_RANK_SHARE:
        return str(batch)
    first = rng.choice(factors)
    dims = [first, batch // first]
    if rng.random() < 0.5:                   # rank 5: a dim of 1 anywhere, or a further split
        dims.insert(rng.randrange(3), 1)
    return " x ".join(map(str, dims))
