"""What TT-Metal would have picked: ttnn.matmul's automatic choice, for `dataflow = auto` (the planner)
and `kgen tune`'s comparison table (kgen/perf/ttchoice.py re-exports it).

Every rule here is read from the one TT-Metal version kgen targets: ttnn 0.81.1, tenstorrent/tt-metal
at TT_METAL_COMMIT (kgen/gen/ttnn_defaults.py says how that commit was matched to the 0.81.1 wheel),
files config/matmul_program_config.cpp (the program config), matmul_device_operation.cpp (the compute
config) and utilities/matmul_utilities.cpp (the CB estimate), all under ttnn/cpp/ttnn/operations/matmul/device/.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW
from kgen.gen import dataflow as dataflows
from kgen.gen.rules import SUBBLOCK_HW_CHOICES, matmul_subblock_params, round_up_tiles
from kgen.gen.spec import COMPUTE_FIELDS, BlockSpec, ComputeConfig, MatmulSpec
from kgen.gen.ttnn_defaults import MATMUL_DEFAULT, MATMUL_DEFAULT_SOURCE, is_matmul_default, matmul_default_compute

NARROW_SHAPE_RATIO_THRESHOLD = 8
PER_CORE_FACTORS = (16, 8, 4, 2)        # get_per_core_factor's trials, largest first
SIMPLE_IN0_BLOCK_W = 2                  # create_simple_matmul_program_config's starting in0_block_w
USER_GRID_IN0_BLOCK_W = 4               # create_matmul_program_config's starting k_tiles_per_core
MCAST_INPUT_BUFFERING_DEPTH = 2         # get_estimated_size_of_cbs: in0 and in1 double-buffered

# Where each rule lives, at the one version kgen targets (`kgen check` names them for `dataflow = auto`)
_TT_DIR = "ttnn/cpp/ttnn/operations/matmul/device"
# the paths as the 0.81.1 wheel's own _ttnncpp.so records them (its assertion strings)
PROGRAM_CONFIG_CPP = f"tenstorrent/tt-metal {_TT_DIR}/config/matmul_program_config.cpp @ v0.81.1"
DEVICE_OPERATION_CPP = f"tenstorrent/tt-metal {_TT_DIR}/matmul_device_operation.cpp @ v0.81.1"
UTILITIES_CPP = f"tenstorrent/tt-metal {_TT_DIR}/utilities/matmul_utilities.cpp @ v0.81.1"
OUT_BLOCK_RULE = (f"get_multi_dim_per_core_factor ({PROGRAM_CONFIG_CPP}), under get_estimated_size_of_cbs "
                  f"({UTILITIES_CPP})")
COMPUTE_RULE = f"create_matmul_attributes ({DEVICE_OPERATION_CPP})"


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
    # the TT function (and file) that chose each field: dataflow, grid, per_core, in0_block_w,
    # out_block, out_subblock
    rules: tuple[tuple[str, str], ...] = ()

    def rule(self, field: str) -> str:
        return dict(self.rules).get(field, "")


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


def _mcast_1d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], mcast_in0: bool,
              why: str = "") -> TTConfig:
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
    why = why or ("one row of blocks or a wide shape: in0 multicast" if mcast_in0
                  else "one column of blocks or a tall shape: in1 multicast")
    chooser = f"create_simple_matmul_program_config ({PROGRAM_CONFIG_CPP}): {why}"
    one_d = f"get_mcast_1d_config ({PROGRAM_CONFIG_CPP})"
    rules = (("dataflow", chooser), ("grid", f"{chooser}; the device's compute grid"),
             ("per_core", one_d), ("in0_block_w", f"{one_d}: 2 when Kt is even, else 1"),
             ("out_block", OUT_BLOCK_RULE),
             ("out_subblock", f"bmm_op_utils::get_matmul_subblock_params ({PROGRAM_CONFIG_CPP})"))
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb,
                    dataflow=(dataflows.MCAST_1D_IN0 if mcast_in0 else dataflows.MCAST_1D_IN1).name, rules=rules)


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
    blocks = f"{blocks_x} x {blocks_y} blocks of {factor} x {factor} tiles (get_per_core_factor, get_core_range)"
    if range_y == 1 or wide:
        return _mcast_1d(arch, spec, grid, mcast_in0=True,
                         why="a wide shape (is_narrow_shape): in0 multicast" if wide
                         else f"{blocks} in one row: in0 multicast")
    if range_x == 1 or tall:
        return _mcast_1d(arch, spec, grid, mcast_in0=False,
                         why="a tall shape (is_narrow_shape): in1 multicast" if tall
                         else f"{blocks} in one column: in1 multicast")
    w0 = w = kt // cols if kt % cols == 0 else 1
    pm, pn = math.ceil(mt / rows), math.ceil(nt / cols)
    obh, obw, w = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=True)
    sb = _subblock_hw(obh, obw, spec.compute.fp32_dest_acc)
    chooser = f"create_simple_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    rules = (("dataflow", f"{chooser}: {blocks} fill rows and columns, every tensor DRAM-interleaved: "
                          f"the 2D multicast"),
             ("grid", f"{chooser}: the device's compute grid, per_core = ceil(Mt / rows) x ceil(Nt / cols)"),
             ("per_core", f"{chooser}: ceil(Mt / grid rows) x ceil(Nt / grid columns)"),
             ("in0_block_w", f"{chooser}: Kt / grid columns when they divide Kt, else 1"
                             + (f" ({w0}), lowered by {OUT_BLOCK_RULE}" if w != w0 else "")),
             ("out_block", OUT_BLOCK_RULE),
             ("out_subblock", f"bmm_op_utils::get_matmul_subblock_params ({PROGRAM_CONFIG_CPP})"))
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb, rules=rules)


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
    chooser = f"create_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    systolic = f"create_matmul_1d_systolic_array_program_config ({PROGRAM_CONFIG_CPP})"
    rules = (("dataflow", f"{chooser}: a narrow shape or a dimension within one tile -> {systolic}: "
                          + ("batch * Mt > Nt, in1 multicast" if tall else "batch * Mt <= Nt, in0 multicast")),
             ("grid", f"{chooser}: the core grid the spec gives (ttnn.matmul's core_grid)"),
             ("per_core", systolic), ("in0_block_w", f"{systolic}: ceil(Kt / cores) lowered to a divisor of Kt"),
             ("out_block", OUT_BLOCK_RULE), ("out_subblock", f"get_subblock_sizes ({PROGRAM_CONFIG_CPP})"))
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb,
                    dataflow=(dataflows.MCAST_1D_IN1 if tall else dataflows.MCAST_1D_IN0).name, rules=rules)


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
    chooser = f"create_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    rules = (("dataflow", f"{chooser}: not a narrow shape, no dimension within one tile: the 2D multicast"),
             ("grid", f"{chooser}: the core grid the spec gives (ttnn.matmul's core_grid)"),
             ("per_core", f"{chooser}: ceil(batch * Mt / grid y) x ceil(Nt / grid x)"),
             ("in0_block_w", f"{chooser}: 4 lowered to a divisor of Kt"),
             ("out_block", OUT_BLOCK_RULE),
             ("out_subblock", f"get_subblock_sizes ({PROGRAM_CONFIG_CPP}), out_subblock_h = 1 unless "
                              f"out_subblock_w == per_core_N"))
    return TTConfig("TT auto", (gx, gy), (pm, pn), w, (obh, obw), (sbh, sbw), rules=rules)


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
# `dataflow = auto`: the planner's spec is TT's choice, but where the spec fixes a field itself
# ----------------------------------------------------------------------------------------------

AUTO_RULE = "dataflow = auto reconstructs ttnn.matmul's automatic choice (kgen)"


def _fmt(value) -> str:
    return f"{value[0]} x {value[1]}" if isinstance(value, tuple) else str(value)


def _auto_refusal(spec: MatmulSpec, arch: ArchFacts) -> None:
    """What `dataflow = auto` cannot reconstruct: TT's choice for tensors other than DRAM-interleaved
    (its sharded paths), and for a batched in1 (bcast_batch false), which kgen does not model."""
    from kgen.gen.rules import Offer, PlanError, suggestion

    def dataflow_offer(names, what: str, extra=()) -> Offer:
        cands = tuple(suggestion(f"dataflow = {n}", ("dataflow", n)) for n in names) + tuple(extra)
        return Offer(cands, what, count=len(cands), sep=", or ")

    mem = spec.memory
    placed = [f"{t} = {getattr(mem, t)}" for t in ("in0", "in1", "out") if getattr(mem, t) != "dram"]
    if placed:
        takers = [d.name for d in dataflows.REGISTRY if dataflows.accepts(d, mem)]
        raise PlanError(AUTO_RULE,
                        f"dataflow = auto with memory {', '.join(placed)}: kgen reconstructs TT's automatic "
                        f"choice (create_simple_matmul_program_config / create_matmul_program_config, "
                        f"{PROGRAM_CONFIG_CPP}) for DRAM-interleaved tensors only, not its L1 and sharded "
                        f"paths", spec.span("memory"),
                        dataflow_offer(takers, "a dataflow that takes this placement"))
    if spec.batch > 1 and not spec.broadcast_in1:
        takers = [d.name for d in dataflows.REGISTRY if dataflows.takes_batched_in1(d)]
        raise PlanError(AUTO_RULE,
                        f"dataflow = auto with broadcast_in1 = false and batch = {spec.batch}: kgen does not "
                        f"reconstruct TT's automatic choice for a batched in1 (one in1 matrix per batch)",
                        spec.span("broadcast_in1"),
                        dataflow_offer(takers, "a dataflow that runs a batched in1",
                                       (suggestion("broadcast_in1 = true", ("broadcast_in1", True)),)))


def resolve_auto(spec: MatmulSpec, arch: ArchFacts) -> tuple[MatmulSpec, tuple[str, ...]]:
    """The spec `dataflow = auto` plans: TT's automatic choice (`tt_auto`: its factory, grid,
    per-core blocking, in0_block_w, out_subblock and, where the spec leaves compute to the defaults,
    ttnn.matmul's compute config), except the block fields the spec fixes itself. A value TT derives
    from a field the spec fixes is left to kgen's planner (per_core fixed: TT's grid, out_block and
    out_subblock; out_block fixed: its out_subblock). The spec's grid is ttnn.matmul's core_grid, an
    input of TT's rule. Returns the spec and one line per field: which rule chose it, or that the
    spec fixed it."""
    from kgen.gen.rules import PlanError

    _auto_refusal(spec, arch)
    choice = tt_auto(replace(spec, dataflow=dataflows.DEFAULT.name), device_grid=arch.worker_grid)
    if choice.config is None:
        raise PlanError(AUTO_RULE, f"dataflow = auto: {choice.note}", spec.span("dataflow"),
                        "a dataflow named explicitly (" + " | ".join(dataflows.NAMES) + "), or a core grid "
                        "(`grid = X x Y`, ttnn.matmul's core_grid)")
    cfg, tt = choice.config, choice.spec
    fixed, mine = spec.block, tt.block
    df = dataflows.get(cfg.dataflow)
    if spec.transpose_mcast and not df.transpose_mcast:
        raise PlanError("transpose_mcast belongs to the 2D multicast factory",
                        f"transpose_mcast = true with dataflow = auto: TT's rule chose {cfg.dataflow} "
                        f"({cfg.rule('dataflow')}), which has no transpose_mcast", spec.span("transpose_mcast"),
                        "dataflow = mcast_2d, or transpose_mcast = false")
    lines = [f"dataflow auto -> {cfg.dataflow} ({df.factory}): {cfg.rule('dataflow')}"]

    # the per_core the spec fixes re-derives TT's grid (the 2D factories: the blocks') and out block
    derived: dict[str, str] = {}
    if fixed.per_core is not None:
        derived.update(out_block="per_core", out_subblock="per_core")
    if fixed.out_block is not None:
        derived.setdefault("out_subblock", "out_block")
    grid = tt.grid
    if fixed.per_core is not None and not df.is_1d:
        grid = spec.grid
        lines.append(f"grid -> {'auto' if grid is None else _fmt(grid)}: the blocks of the per_core the spec "
                     f"fixes (TT's rule chose {_fmt(tt.grid)}: {cfg.rule('grid')})")
    else:
        lines.append(f"grid -> {_fmt(grid)}: {cfg.rule('grid')}")
    block: dict[str, object] = {}
    for field in ("per_core", "in0_block_w", "out_block", "out_subblock"):
        given, theirs = getattr(fixed, field), getattr(mine, field)
        if given is not None:
            block[field] = given
            lines.append(f"{field} = {_fmt(given)}: fixed by the spec (TT's rule chose {_fmt(theirs)}: "
                         f"{cfg.rule(field)})")
        elif field in derived:
            block[field] = None
            lines.append(f"{field} auto: kgen's planner (TT's {_fmt(theirs)} follows from its "
                         f"{derived[field]}, which the spec fixes)")
        else:
            block[field] = theirs
            lines.append(f"{field} -> {_fmt(theirs)}: {cfg.rule(field)}")
    c = choice.compute
    if is_matmul_default(spec.compute):
        lines.append(f"compute -> {c.math_fidelity} fp32_dest_acc={str(c.fp32_dest_acc).lower()} "
                     f"packer_l1_acc={str(c.packer_l1_acc).lower()}: ttnn.matmul's default with no program "
                     f"config, {COMPUTE_RULE}")
    else:
        lines.append("compute: the spec's compute config (ttnn.matmul's compute_kernel_config)")
    if choice.padded:
        lines.append("padded: per_core does not divide the tiles, so TT pads the last row/column of cores")
    resolved = replace(spec, dataflow=cfg.dataflow, grid=grid, compute=c, block=replace(spec.block, **block))
    return resolved, tuple(lines)
