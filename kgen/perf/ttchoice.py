"""What TT-Metal would have picked, for `kgen tune`'s comparison table.

Every rule here is read from the one TT-Metal version kgen targets: ttnn 0.81.1, tenstorrent/tt-metal
at TT_METAL_COMMIT (kgen/gen/ttnn_defaults.py says how that commit was matched to the 0.81.1 wheel),
files matmul_program_config.cpp (the program config), matmul_device_operation.cpp (the compute
config) and matmul_utilities.cpp (the CB estimate), all under ttnn/cpp/ttnn/operations/matmul/device/.

**TT's compute config.** Where the spec leaves compute to the defaults (no compute line), TT auto
runs ttnn.matmul's own default (create_matmul_attributes, kgen.gen.ttnn_defaults.matmul_default_compute:
HiFi2, LoFi with a core grid or two block-float inputs, packer L1 accumulation unless the output is
float32). Where the spec sets compute, the same config passed to ttnn.matmul is the comparison.

**TT's program config.** `ttnn.matmul(a, b)` with no program config picks one in
generate_matmul_program_config. Written here from those facts:

- **No core grid given, interleaved inputs** (the out-of-box benchmark's call):
  create_simple_matmul_program_config on the device's compute grid.
  1. A narrow shape (of the padded M and N, the larger over the smaller, integer division, above 8;
     with all tensors in DRAM also M or N within one tile) is wide (N > M) or tall.
  2. per_core_factor: the largest of 16, 8, 4, 2 whose square block passes TT's CB estimate with
     in0_block_w = 2 (get_per_core_factor); blocks = ceil(Mt / f) x ceil(Nt / f).
  3. get_core_range: the blocks, unless there is one block or they do not fit the grid (then 0 x 0).
     One row of blocks, or a wide shape: the 1D config multicasting in0 (get_mcast_1d_config:
     per_core_M = Mt, per_core_N = ceil(ceil(N / cores) / 32), in0_block_w 2 when Kt is even, else 1).
     One column, or a tall shape: the 1D config multicasting in1 (per_core_M = ceil(ceil(M / cores) / 32),
     per_core_N = Nt). Otherwise, with every tensor DRAM-interleaved, the 2D multicast config over the
     whole grid: per_core = ceil(Mt / rows) x ceil(Nt / cols), in0_block_w = Kt / cols when cols
     divides Kt, else 1.
  4. out_block: get_multi_dim_per_core_factor (below); the 2D config may also lower in0_block_w to
     a divisor (adjust_in0_block_w = true), the 1D one may not. out_subblock: get_matmul_subblock_params,
     SUBBLOCK_HW_CHOICES read as (h, w), at most 4 tiles under fp32 dest accumulation, else 1 x 1.
- **A core grid given** (`ttnn.matmul(..., core_grid=...)`, the spec's `grid` here):
  create_matmul_program_config on that grid (on the device's compute grid when the core grid does not
  fit it), all sizes padded to whole tiles. A narrow shape (batch * M against N, above 8) or M, N or K
  within one tile takes create_matmul_1d_systolic_array_program_config: tall when batch * Mt > Nt
  (per_core ceil(batch*Mt / cores) x Nt, in1 multicast), else wide (batch*Mt x ceil(Nt / cores), in0
  multicast); in0_block_w = ceil(Kt / cores) lowered to a divisor of Kt; out_subblock from
  get_subblock_sizes. Otherwise the 2D config: per_core = ceil(batch*Mt / grid_y) x ceil(Nt / grid_x),
  in0_block_w = 4 lowered to a divisor of Kt, out_block as below (in0_block_w kept), out_subblock from
  get_subblock_sizes (SUBBLOCK_HW_CHOICES read as (w, h)) with out_subblock_h = 1 unless
  out_subblock_w == per_core_N.

get_multi_dim_per_core_factor: per_core if TT's CB estimate fits; else, for in0_block_w and (when
allowed) its divisors going down, the largest m x n product of factors of per_core_M x per_core_N
(per_core, 1, and the divisors from per_core/2 down to 2; per product the squarest pair, a later pair
of equal ratio replacing an earlier one) whose estimate fits. The estimate (get_estimated_size_of_cbs)
is 2*m*w*in0_tile + 2*n*w*in1_tile + m*n*in0_tile (the output, sized as in0) + m*n*interm_tile +
n*bias_tile, compared (strictly below) with the core's free L1, here the arch's usable CB bytes
(configs/arch); interm_tile is Float32's with fp32 dest accumulation, else the larger of Float16_b's
and the output's (estimate_interm_tile_size).

When per_core does not divide the tiles, TT pads the last row/column of cores; so does kgen's
planner, as TT-Metal's padding kernels do, and the table marks the choice `padded`.

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
from kgen.gen.rules import matmul_subblock_params
from kgen.gen import dataflow as dataflows
from kgen.gen.spec import COMPUTE_FIELDS, BlockSpec, ComputeConfig, MatmulSpec
from kgen.gen.ttnn_defaults import MATMUL_DEFAULT, MATMUL_DEFAULT_SOURCE, is_matmul_default, matmul_default_compute

NARROW_SHAPE_RATIO_THRESHOLD = 8
PER_CORE_FACTORS = (16, 8, 4, 2)        # get_per_core_factor's trials, largest first
SIMPLE_IN0_BLOCK_W = 2                  # create_simple_matmul_program_config's starting in0_block_w
USER_GRID_IN0_BLOCK_W = 4               # create_matmul_program_config's starting k_tiles_per_core
MCAST_INPUT_BUFFERING_DEPTH = 2         # get_estimated_size_of_cbs: in0 and in1 double-buffered


@dataclass(frozen=True)
class TTConfig:
    """A TT-Metal program config in kgen's terms."""

    label: str
    grid: tuple[int, int]            # compute_with_storage_grid_size (x, y)
    per_core: tuple[int, int]
    in0_block_w: int
    out_block: tuple[int, int]
    out_subblock: tuple[int, int]
    dataflow: str = dataflows.MCAST_2D.name       # mcast_2d | mcast_1d_in0 | mcast_1d_in1
    note: str = ""


@dataclass(frozen=True)
class Choice:
    """A config and the spec kgen predicts it with (None when kgen cannot express it); `compute` is
    the compute config TT runs it with, `compute_from` where that config comes from."""

    config: TTConfig | None
    spec: MatmulSpec | None
    padded: bool
    note: str
    compute: ComputeConfig | None = None
    compute_from: str = ""


def tt_matmul_compute(spec: MatmulSpec, *, user_grid: bool | None = None) -> ComputeConfig:
    """The compute config ttnn.matmul runs with when it is given none and no program config
    (create_matmul_attributes); `user_grid` (default: the spec has a grid) is the core_grid argument."""
    values, reasons = matmul_default_compute(
        spec.arch, spec.dtype_in0, spec.dtype_in1, spec.dtype_out,
        user_grid=spec.grid is not None if user_grid is None else user_grid, program_config=False)
    sources = tuple((k, f"{MATMUL_DEFAULT_SOURCE} ({reasons[k]})") for k in COMPUTE_FIELDS)
    return ComputeConfig(preset=MATMUL_DEFAULT, sources=sources, **values)


def tt_compute(spec: MatmulSpec) -> tuple[ComputeConfig, str]:
    """The compute config TT's automatic choice runs with, and where it comes from: ttnn.matmul's
    default where the spec leaves compute to the defaults, else the spec's own config (passed to
    ttnn.matmul as compute_kernel_config)."""
    if is_matmul_default(spec.compute):
        return tt_matmul_compute(spec), MATMUL_DEFAULT_SOURCE
    return spec.compute, "the spec's compute config, passed to ttnn.matmul"


def _tile_bytes(arch: ArchFacts, dtype: str) -> int:
    return arch.tile_bytes[DTYPE_TO_FORMAT[dtype]]


def _estimate(arch: ArchFacts, spec: MatmulSpec, m: int, n: int, w: int) -> int:
    """TT's get_estimated_size_of_cbs for interleaved inputs (no in0 shard, no transpose)."""
    in0 = _tile_bytes(arch, spec.dtype_in0)
    in1 = _tile_bytes(arch, spec.dtype_in1)
    if spec.compute.fp32_dest_acc:
        interm = arch.tile_bytes["Float32"]
    else:
        interm = max(arch.tile_bytes["Float16_b"], _tile_bytes(arch, spec.dtype_out))
    bias = _tile_bytes(arch, spec.dtype_bias) if spec.fuse_bias else 0
    depth = MCAST_INPUT_BUFFERING_DEPTH
    return depth * m * w * in0 + depth * n * w * in1 + m * n * in0 + m * n * interm + n * bias


def _fits(arch: ArchFacts, spec: MatmulSpec, m: int, n: int, w: int) -> bool:
    return _estimate(arch, spec, m, n, w) < arch.usable_cb_bytes


def _factors(per_core: int) -> list[int]:
    return [per_core, 1] + [d for d in range(per_core // 2, 1, -1) if per_core % d == 0]


def _out_block(arch: ArchFacts, spec: MatmulSpec, pm: int, pn: int, w: int,
               adjust_in0_block_w: bool) -> tuple[int, int, int]:
    """get_multi_dim_per_core_factor: (out_block_h, out_block_w, in0_block_w)."""
    if _fits(arch, spec, pm, pn, w):
        return pm, pn, w
    by_product: dict[int, tuple[int, int]] = {}
    for fm in _factors(pm):
        for fn in _factors(pn):
            ratio = max(fm, fn) / min(fm, fn)
            old = by_product.get(fm * fn)
            if old is not None and max(old) / min(old) < ratio:
                continue
            by_product[fm * fn] = (fm, fn)
    for k in range(w, 0 if adjust_in0_block_w else w - 1, -1):
        if w % k:
            continue
        for product in sorted(by_product, reverse=True):
            fm, fn = by_product[product]
            if _fits(arch, spec, fm, fn, k):
                return fm, fn, k
    return 1, 1, 1


def _subblock_hw(obh: int, obw: int, fp32: bool) -> tuple[int, int]:
    """bmm_op_utils::get_matmul_subblock_params, no equality constraint: SUBBLOCK_HW_CHOICES as (h, w)."""
    return matmul_subblock_params(obh, obw, fp32)


def _subblock_wh(obh: int, obw: int, fp32: bool) -> tuple[int, int] | None:
    """get_subblock_sizes: SUBBLOCK_HW_CHOICES read as (w, h)."""
    for w, h in SUBBLOCK_HW_CHOICES:
        if h * w <= 4 or not fp32:
            if obh % h == 0 and obw % w == 0:
                return h, w
    return None


def _is_narrow(height: int, width: int, all_dram: bool) -> bool:
    """is_narrow_shape, of element counts padded to whole tiles."""
    if max(height, width) // min(height, width) > NARROW_SHAPE_RATIO_THRESHOLD:
        return True
    return all_dram and (height <= TILE_HW or width <= TILE_HW)


def _mcast_1d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], mcast_in0: bool) -> TTConfig:
    """get_mcast_1d_config (fuse_batch false, output interleaved)."""
    cores = grid[0] * grid[1]
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    if mcast_in0:
        pm, pn = mt, math.ceil(math.ceil(nt * TILE_HW / cores) / TILE_HW)
    else:
        pm, pn = math.ceil(math.ceil(mt * TILE_HW / cores) / TILE_HW), nt
    w = 2 if kt % 2 == 0 else 1
    obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False)
    sb = _subblock_hw(obh, obw, spec.compute.fp32_dest_acc)
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb,
                    dataflow=(dataflows.MCAST_1D_IN0 if mcast_in0 else dataflows.MCAST_1D_IN1).name)


def _simple(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int]) -> TTConfig | str:
    """create_simple_matmul_program_config for DRAM-interleaved tensors."""
    cols, rows = grid
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    narrow = _is_narrow(mt * TILE_HW, nt * TILE_HW, all_dram=True)
    wide = narrow and nt > mt
    tall = narrow and not wide
    factor = next((f for f in PER_CORE_FACTORS if _fits(arch, spec, f, f, SIMPLE_IN0_BLOCK_W)), 1)
    blocks_y, blocks_x = math.ceil(mt / factor), math.ceil(nt / factor)
    in_range = not (blocks_y == 1 and blocks_x == 1) and blocks_y <= rows and blocks_x <= cols
    range_x, range_y = (blocks_x, blocks_y) if in_range else (0, 0)
    if range_y == 1 or wide:
        return _mcast_1d(arch, spec, grid, mcast_in0=True)
    if range_x == 1 or tall:
        return _mcast_1d(arch, spec, grid, mcast_in0=False)
    w = kt // cols if kt % cols == 0 else 1
    pm, pn = math.ceil(mt / rows), math.ceil(nt / cols)
    obh, obw, w = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=True)
    sb = _subblock_hw(obh, obw, spec.compute.fp32_dest_acc)
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb)


def _systolic_1d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int]) -> TTConfig:
    """create_matmul_1d_systolic_array_program_config (interleaved in0, fuse_batch true)."""
    bmt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    cores = grid[0] * grid[1]
    tall = bmt > nt
    pm, pn = (math.ceil(bmt / cores), nt) if tall else (bmt, math.ceil(nt / cores))
    w = math.ceil(kt / cores)
    while kt % w:
        w -= 1
    obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False)
    sb = _subblock_wh(obh, obw, spec.compute.fp32_dest_acc) or (1, 1)
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb,
                    dataflow=(dataflows.MCAST_1D_IN1 if tall else dataflows.MCAST_1D_IN0).name)


def _with_user_grid(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int]) -> TTConfig | str:
    """create_matmul_program_config on the user's core grid (interleaved, in1 not batched)."""
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    height, width = spec.batch * mt * TILE_HW, nt * TILE_HW          # TT's padded shapes
    if _is_narrow(height, width, all_dram=False) or min(kt, mt, nt) * TILE_HW <= TILE_HW:
        return _systolic_1d(arch, spec, grid)
    gx, gy = grid
    bmt = spec.batch * mt
    pm, pn = math.ceil(bmt / gy), max(1, math.ceil(nt / gx))
    w = USER_GRID_IN0_BLOCK_W
    while kt % w:
        w -= 1
    obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False)
    sb = _subblock_wh(obh, obw, spec.compute.fp32_dest_acc)
    if sb is None:
        return "TT finds no subblock (TT_THROW: Unable to find subblock sizes)"
    sbh, sbw = sb
    if sbw != pn:
        sbh = 1
    return TTConfig("TT auto", (gx, gy), (pm, pn), w, (obh, obw), (sbh, sbw))


def tt_auto_config(spec: MatmulSpec, arch: ArchFacts | None = None, *,
                   device_grid: tuple[int, int] | None = None) -> TTConfig | str:
    """ttnn's automatic program config for this matmul (DRAM-interleaved tensors) under the spec's
    compute config, or why kgen does not reconstruct it. The spec's `grid`, when set, is the user's
    core grid; `device_grid` is the device's compute grid (the arch's whole worker grid by default)."""
    arch = arch or load_arch(spec.arch)
    device = device_grid or arch.worker_grid
    if spec.grid is not None:
        # a core grid larger than the device's falls back to the device's, still on this path
        fits = spec.grid[0] <= device[0] and spec.grid[1] <= device[1]
        return _with_user_grid(arch, spec, spec.grid if fits else device)
    if spec.batch != 1:
        return "TT's batched choice (batch > 1 without a core grid) is not reconstructed"
    return _simple(arch, spec, device)


def spec_for_config(spec: MatmulSpec, cfg: TTConfig) -> tuple[MatmulSpec, bool]:
    """The kgen spec of a TT config, and whether its per_core pads the last row/column of cores
    (which the planner then does, as TT-Metal's padding kernels do)."""
    mt, nt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n)
    pm, pn = cfg.per_core
    rows, cols = math.ceil(mt / pm), math.ceil(nt / pn)
    block = BlockSpec(in0_block_w=cfg.in0_block_w, out_subblock=cfg.out_subblock, per_core=cfg.per_core,
                      out_block=cfg.out_block)
    padded = rows * pm != mt or cols * pn != nt
    # the 2D factory's grid is the blocks'; the 1D factory takes the compute grid and uses its first
    # num_blocks cores in row-major order (the planner's _plan_1d)
    grid = (cols, rows) if not dataflows.get(cfg.dataflow).is_1d else cfg.grid
    return replace(spec, grid=grid, dataflow=cfg.dataflow, block=block, variant=None), padded


def tt_auto(spec: MatmulSpec, *, device_grid: tuple[int, int] | None = None) -> Choice:
    """TT's automatic choice for this spec: the compute config it runs with (tt_compute) and the
    program config ttnn picks under it."""
    compute, origin = tt_compute(spec)
    tt_spec = replace(spec, compute=compute)
    cfg = tt_auto_config(tt_spec, device_grid=device_grid)
    if isinstance(cfg, str):
        return Choice(None, None, False, cfg, compute, origin)
    s, padded = spec_for_config(tt_spec, cfg)
    notes = [n for n in (cfg.dataflow if dataflows.get(cfg.dataflow) is not dataflows.MCAST_2D else "",
                         "padded last blocks" if padded else "") if n]
    return Choice(cfg, s, padded, ", ".join(notes), compute, origin)


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
