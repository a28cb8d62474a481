"""What TT-Metal would have picked, for `kgen tune`'s comparison table.

**TT's out-of-box choice.** ttnn's matmul, given no program config and interleaved inputs, calls
`create_matmul_program_config` (tenstorrent/tt-metal,
ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp, read at commit
001cea9a149df28de134c87b5324972bf4308d48; its helpers get_estimated_size_of_cbs and
estimate_interm_tile_size in ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.cpp,
same commit). Written here from those facts, for the 2D multicast branch:

1. A narrow problem (the larger of batch*M and N over the smaller, integer division, above 8) or
   one with M, N or K within one tile takes the 1D systolic config instead; kgen has no 1D dataflow,
   so the table says so and predicts nothing for it.
2. per_core_M = ceil(batch*Mt / grid_y), per_core_N = ceil(Nt / grid_x) over the device's
   compute_with_storage_grid (the arch's whole worker grid), or the user's core grid when it fits
   (the spec's `grid`); in0_block_w = 4, lowered until it divides Kt.
3. out_block (get_multi_dim_per_core_factor, adjust_in0_block_w = false): per_core if TT's CB
   estimate fits; else the largest m x n product of factors of per_core_M x per_core_N (the factors
   are per_core, 1, and the divisors from per_core/2 down to 2; per product the squarest pair,
   a later pair of equal ratio replacing an earlier one) whose estimate fits. The estimate is
   2*m*w*in0_tile + 2*n*w*in1_tile + m*n*in0_tile (the output, sized as in0) + m*n*interm_tile
   + n*bias_tile, compared (strictly below) with the core's free L1, here the arch's usable CB
   bytes (configs/arch); interm_tile is Float32's with fp32 dest accumulation, else the larger of
   Float16_b's and the output's.
4. out_subblock (get_subblock_sizes): the first SUBBLOCK_HW_CHOICES pair read as (w, h), with at
   most 4 tiles under fp32 dest accumulation, that divides the out block; then out_subblock_h = 1
   unless out_subblock_w == per_core_N.

When per_core does not divide the tiles, TT pads the last row/column of cores; so does kgen's
planner, as TT-Metal's padding kernels do (issue #17), and the table marks the choice `padded`.

**TT's manual (benchmark) choice.** tests/ttnn/unit_tests/benchmarks/test_benchmark.py
(test_matmul_2d_host_perf) picks per shape; its rows and rule live in benchmarks/gemm_rows.py
(`rows(card, kind)`, `manual_spec(row)`, `placement(row)`), read here when that file exists.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass, replace
from functools import cache
from types import ModuleType
from typing import Mapping

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.errors import KgenError
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW
from kgen.gen.plan import SUBBLOCK_HW_CHOICES, round_up_tiles
from kgen.gen.spec import BlockSpec, MatmulSpec

TT_SOURCE = ("tenstorrent/tt-metal@001cea9a149df28de134c87b5324972bf4308d48: "
             "ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp create_matmul_program_config")
NARROW_SHAPE_RATIO_THRESHOLD = 8


@dataclass(frozen=True)
class TTConfig:
    """A TT-Metal program config in kgen's terms."""

    label: str
    grid: tuple[int, int]            # compute_with_storage_grid_size (x, y)
    per_core: tuple[int, int]
    in0_block_w: int
    out_block: tuple[int, int]
    out_subblock: tuple[int, int]
    note: str = ""


@dataclass(frozen=True)
class Choice:
    """A config and the spec kgen predicts it with (None when kgen cannot express it)."""

    config: TTConfig | None
    spec: MatmulSpec | None
    padded: bool
    note: str


def _tile_bytes(arch: ArchFacts, dtype: str) -> int:
    return arch.tile_bytes[DTYPE_TO_FORMAT[dtype]]


def _estimate(arch: ArchFacts, spec: MatmulSpec, m: int, n: int, w: int) -> int:
    """TT's get_estimated_size_of_cbs for interleaved inputs (no shard, no transpose)."""
    in0 = _tile_bytes(arch, spec.dtype_in0)
    in1 = _tile_bytes(arch, spec.dtype_in1)
    if spec.compute.fp32_dest_acc:
        interm = arch.tile_bytes["Float32"]
    else:
        interm = max(arch.tile_bytes["Float16_b"], _tile_bytes(arch, spec.dtype_out))
    bias = _tile_bytes(arch, spec.dtype_bias) if spec.fuse_bias else 0
    return 2 * m * w * in0 + 2 * n * w * in1 + m * n * in0 + m * n * interm + n * bias


def _out_block(arch: ArchFacts, spec: MatmulSpec, pm: int, pn: int, w: int) -> tuple[int, int]:
    """get_multi_dim_per_core_factor with adjust_in0_block_w = false."""
    limit = arch.usable_cb_bytes
    if _estimate(arch, spec, pm, pn, w) < limit:
        return pm, pn
    m_factors = [pm, 1] + [d for d in range(pm // 2, 1, -1) if pm % d == 0]
    n_factors = [pn, 1] + [d for d in range(pn // 2, 1, -1) if pn % d == 0]
    by_product: dict[int, tuple[int, int]] = {}
    for fm in m_factors:
        for fn in n_factors:
            ratio = max(fm, fn) / min(fm, fn)
            old = by_product.get(fm * fn)
            if old is not None and max(old) / min(old) < ratio:
                continue
            by_product[fm * fn] = (fm, fn)
    for product in sorted(by_product, reverse=True):
        fm, fn = by_product[product]
        if _estimate(arch, spec, fm, fn, w) < limit:
            return fm, fn
    return 1, 1


def _subblock(obh: int, obw: int, fp32: bool) -> tuple[int, int] | None:
    """get_subblock_sizes: SUBBLOCK_HW_CHOICES read as (w, h)."""
    for first, second in SUBBLOCK_HW_CHOICES:
        w, h = first, second
        if h * w <= 4 or not fp32:
            if obh % h == 0 and obw % w == 0:
                return h, w
    return None


def tt_auto_config(spec: MatmulSpec, arch: ArchFacts | None = None) -> TTConfig | str:
    """ttnn's automatic program config for this matmul, or why it is not the 2D multicast one."""
    arch = arch or load_arch(spec.arch)
    height, width = spec.batch * spec.m, spec.n
    ratio = max(height, width) // min(height, width)
    if ratio > NARROW_SHAPE_RATIO_THRESHOLD or min(spec.k, spec.m, spec.n) <= TILE_HW:
        return ("TT picks its 1D systolic config here (narrow shape or a dimension within one tile); "
                "kgen has no 1D dataflow to predict it with")
    gx, gy = arch.worker_grid
    if spec.grid is not None and spec.grid[0] <= gx and spec.grid[1] <= gy:
        gx, gy = spec.grid          # the user's core grid, when it fits the device's (user_core_coord)
    # ttnn tilizes a shape short of whole tiles: the padded tile counts
    mt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    pm, pn = math.ceil(mt / gy), max(1, math.ceil(nt / gx))
    w = 4
    while kt % w:
        w -= 1
    obh, obw = _out_block(arch, spec, pm, pn, w)
    sb = _subblock(obh, obw, spec.compute.fp32_dest_acc)
    if sb is None:
        return "TT finds no subblock (TT_THROW: Unable to find subblock sizes)"
    sbh, sbw = sb
    if sbw != pn:
        sbh = 1
    return TTConfig("TT auto", (gx, gy), (pm, pn), w, (obh, obw), (sbh, sbw))


def spec_for_config(spec: MatmulSpec, cfg: TTConfig) -> tuple[MatmulSpec, bool]:
    """The kgen spec of a TT config, and whether its per_core pads the last row/column of cores
    (which the planner then does, as TT-Metal's padding kernels do)."""
    mt, nt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n)
    pm, pn = cfg.per_core
    rows, cols = math.ceil(mt / pm), math.ceil(nt / pn)
    block = BlockSpec(in0_block_w=cfg.in0_block_w, out_subblock=cfg.out_subblock, per_core=cfg.per_core,
                      out_block=cfg.out_block)
    return (replace(spec, grid=(cols, rows), dataflow="mcast_2d", block=block, variant=None),
            rows * pm != mt or cols * pn != nt)


def tt_auto(spec: MatmulSpec) -> Choice:
    cfg = tt_auto_config(spec)
    if isinstance(cfg, str):
        return Choice(None, None, False, cfg)
    s, padded = spec_for_config(spec, cfg)
    return Choice(cfg, s, padded, "padded last blocks" if padded else "")


# ----------------------------------------------------------------------------------------------
# the benchmark's manual configuration (benchmarks/gemm_rows.py, when present)
# ----------------------------------------------------------------------------------------------

CARDS = {"wormhole_b0": ("n150",), "blackhole": ("p150", "p150_11x10")}


@cache
def gemm_rows() -> ModuleType | None:
    """benchmarks/gemm_rows.py of the checkout (rows of TT's published GEMM tables), or None."""
    from kgen.core.resources import data_dir

    try:
        path = data_dir("configs").parent / "benchmarks" / "gemm_rows.py"
    except FileNotFoundError:
        return None
    if not path.is_file():
        return None
    module_spec = importlib.util.spec_from_file_location("kgen_gemm_rows", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module          # dataclasses look their module up while it loads
    try:
        module_spec.loader.exec_module(module)
    except Exception:       # noqa: BLE001 - a checkout without its data: no manual column
        del sys.modules[module_spec.name]
        return None
    return module


def benchmark_row(spec: MatmulSpec, kind: str = "manual"):
    """The row of TT's published table (kind manual | oob) for this spec's card, shape, dtype and
    fidelity, if there is one (on Blackhole the 13 x 10 table first, the 11 x 10 one when the
    spec's grid is 11 x 10)."""
    mod = gemm_rows()
    if mod is None or spec.batch != 1:
        return None
    cards = CARDS.get(spec.arch, ())
    if spec.grid == (11, 10):
        cards = tuple(reversed(cards))
    for card in cards:
        try:
            rows = mod.rows(card, kind)
        except Exception:   # noqa: BLE001 - missing data
            continue
        for r in rows:
            if (r.m, r.k, r.n) == (spec.m, spec.k, spec.n) and mod.KGEN_DTYPE.get(r.dtype) == spec.dtype_in0 \
                    and spec.dtype_in1 == spec.dtype_in0 == spec.dtype_out \
                    and r.math_fidelity == spec.compute.math_fidelity:
                return r
    return None


def tt_manual(spec: MatmulSpec) -> tuple[Choice, Mapping[str, str] | None] | None:
    """TT's manual config for this spec (a benchmark shape) and its placement, or None."""
    row = benchmark_row(spec, "manual")
    if row is None:
        return None
    from kgen.gen.spec import parse_text, resolve

    mod = gemm_rows()
    try:
        text = mod.manual_spec(row)
        s = resolve(parse_text(text, "<TT manual>"))
        placement = mod.placement(row)
    except (KgenError, Exception) as exc:   # noqa: BLE001 - the row's spec is another module's text
        return Choice(None, None, False, f"TT's manual config does not load: {exc}"), None
    return Choice(None, s, False, "TT's benchmark config"), placement
