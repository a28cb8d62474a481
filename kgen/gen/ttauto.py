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

- **No core grid given, every tensor DRAM-interleaved** (the out-of-box benchmark's call):
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

- **Not every tensor DRAM-interleaved, no core grid** (create_simple_matmul_program_config, all_dram
  false): is_narrow_shape tests the ratio only, and only with every tensor interleaved; in0_block_w
  drops to 1 for an odd Kt when there is more than one block or the output is sharded. Unless the
  blocks number at most the grid's cores (and Kt is a multiple of in0_block_w), or once no branch
  below applies (a single block; blocks past the grid's rows or columns), TT returns
  MatmulMultiCoreProgramConfig, kgen's multi_core on the device's grid. One row of blocks, a wide
  shape or a width-sharded output: the 1D in0 config; one column, a tall shape or a height-sharded
  output: the 1D in1 config (both as above). Blocks within the grid, or a block-sharded output: the 2D
  config with per_core = out_block = the per-core factor square, in0_block_w as it stands and
  out_subblock 4 x 2, out_subblock_h = 1 unless out_subblock_w == per_core_N (get_program_config's
  divisibility checks refuse a factor of 2 or 1: TT's own failure). kgen's sharded output gives no
  shard spec (the op computes it), so TT's "BLOCK_SHARDED on a 1D grid" branches never apply.
- **batch > 1 with no core grid**: create_simple's configs take fuse_batch = false (every size above
  one batch's, every core looping over the batch: the factories' B, in0 stepped by MtKt, in1 by KtNt
  unless bcast_B, the output by MtNt), which kgen builds as `fuse_batch = false`.
- **A batched in1** (ttnn.matmul's user_run_batched, `broadcast_in1 = false`): with a core grid,
  create_matmul_program_config's `input_b_is_batched` branch: per_core = one batch's Mt x Nt,
  in0_block_w 1, get_subblock_sizes: MatmulMultiCoreReuseProgramConfig (kgen's reuse) when
  can_cbs_fit_in_l1, else create_simple on the core grid. Without one: create_simple (above, with
  bcast_B = 0).
- **A sharded in0, no core grid** (get_matmul_program_config, matmul = in1 not batched): in1 must be
  interleaved (TT_FATAL); a sharded output must have in0's layout (TT_FATAL). Height-sharded: the 1D in1
  config from the shard (_sharded_1d); width-sharded: the 1D in0 config from the shard (per_core_M = M,
  per_core_N = div_up(Nt, its cores), in0_block_w = gcd(shard width, Kt)).
  Block-sharded on a 2D shard grid: the 2D config, per_core = div_up(M / y cores) x div_up(N / x
  cores), in0_block_w = gcd(shard width, Kt), out_block as below, get_matmul_subblock_params with
  out_subblock_w == per_core_N under a sharded output, transpose_mcast = COL_MAJOR. kgen's
  `l1_block_sharded` leaves the shard to the op: the shard is the one kgen's planner lays out
  (mcast_2d's grid of blocks over the grid, per_core_M x Kt / the cores along the in0 multicast).
  A core grid with a block-sharded in0: create_matmul_program_config's sharded branch (per_core_M =
  the shard's rows, per_core_N = Nt x shard width / Kt, get_subblock_sizes).

TT's CB estimate and get_max_l1_space: the inputs already in L1 (an L1-interleaved in0 / in1, their
pages dealt over the L1 banks; a sharded in0's shard) lower the lowest occupied L1 address, so they
come off the free space; the estimate adds a sharded in0's CB (per_core_M x shard width).

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
from kgen.core.types import TILE_HW, Placement, is_sharded
from kgen.gen import dataflow as dataflows
from kgen.gen import tt_bound_matmul
from kgen.gen.rules import SUBBLOCK_HW_CHOICES, matmul_subblock_params, round_up_tiles
from kgen.gen.shards import height_shard, width_shard
from kgen.gen.spec import COMPUTE_FIELDS, BlockSpec, ComputeConfig, MatmulSpec
from kgen.gen.ttauto_shard import _fits
from kgen.gen.ttnn_defaults import MATMUL_DEFAULT, MATMUL_DEFAULT_SOURCE, is_matmul_default, matmul_default_compute

NARROW_SHAPE_RATIO_THRESHOLD = 8
PER_CORE_FACTORS = (16, 8, 4, 2)        # get_per_core_factor's trials, largest first
SIMPLE_IN0_BLOCK_W = 2                  # create_simple_matmul_program_config's starting in0_block_w
USER_GRID_IN0_BLOCK_W = 4               # create_matmul_program_config's starting k_tiles_per_core

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
    dataflow: str = dataflows.MCAST_2D.name       # mcast_2d | mcast_1d_in0 | mcast_1d_in1 | reuse
    note: str = ""
    transpose_mcast: bool = False                 # a COL_MAJOR block-sharded in0 (the 2D config's field)
    fuse_batch: bool = True                       # the multicast configs' fuse_batch (create_simple's: false)
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
    refusal: Refusal | None = None


@dataclass(frozen=True)
class Refusal:
    """Why kgen does not build TT's automatic choice: `rule` is TT's own (`tt_own`: ttnn.matmul itself
    fails there) or, tagged (kgen), that TT's choice is a form kgen has no factory for."""

    rule: str
    message: str
    tt_own: bool = False

    def __str__(self) -> str:
        return self.message


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


def _factors(per_core: int) -> list[int]:
    return [per_core, 1] + [d for d in range(per_core // 2, 1, -1) if per_core % d == 0]


def _out_block(arch: ArchFacts, spec: MatmulSpec, pm: int, pn: int, w: int,
               adjust_in0_block_w: bool, shard: tuple[int, int] = (0, 0)) -> tuple[int, int, int]:
    """get_multi_dim_per_core_factor: (out_block_h, out_block_w, in0_block_w)."""
    if _fits(arch, spec, pm, pn, w, shard):
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
            if _fits(arch, spec, fm, fn, k, shard):
                return fm, fn, k
    return 1, 1, 1


def _subblock_hw(obh: int, obw: int, fp32: bool, n_eq_w: bool = False) -> tuple[int, int]:
    """bmm_op_utils::get_matmul_subblock_params (M_eq_h false): SUBBLOCK_HW_CHOICES as (h, w); with
    `n_eq_w` (a sharded output) only w == out_block_w, h == 1 qualifies, else its fallback 1 x 1."""
    if not n_eq_w:
        return matmul_subblock_params(obh, obw, fp32)
    for h, w in SUBBLOCK_HW_CHOICES:
        if (fp32 and h * w > 4) or w != obw or h != 1:
            continue
        return h, w
    return 1, 1


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


def _bmm(spec: MatmulSpec) -> bool:
    """in1 holds one matrix per batch (ttnn.matmul's user_run_batched: is_input_batched(b))."""
    return spec.batch > 1 and not spec.broadcast_in1


def _mcast_1d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], mcast_in0: bool,
              why: str = "") -> TTConfig:
    """get_mcast_1d_config (fuse_batch false, output interleaved): one batch's M."""
    cores = grid[0] * grid[1]
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    if mcast_in0:
        pm, pn = mt, math.ceil(math.ceil(nt * TILE_HW / cores) / TILE_HW)
    else:
        pm, pn = math.ceil(math.ceil(mt * TILE_HW / cores) / TILE_HW), nt
    w = 2 if kt % 2 == 0 else 1
    obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False)
    # get_matmul_subblock_params' per_core_N_equals_subblock_w_constraint: out_sharded && !mcast_in0
    sb = _subblock_hw(obh, obw, spec.compute.fp32_dest_acc, n_eq_w=is_sharded(spec.memory.out) and not mcast_in0)
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


def _placed_2d(spec: MatmulSpec, grid: tuple[int, int], factor: int, w: int, blocks: str) -> TTConfig | Refusal:
    """create_simple_matmul_program_config's 2D config when not every tensor is DRAM-interleaved:
    per_core = out_block = the per-core factor square, in0_block_w as it stands, out_subblock 4 x 2
    with out_subblock_h = 1 unless out_subblock_w == per_core_N; TT checks it in get_program_config."""
    sbh, sbw = (4, 2) if factor == 2 else (1, 2)
    chooser = f"create_simple_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    for dim, pc, sub in (("M", factor, sbh), ("N", factor, sbw)):
        if pc % sub:
            side = "h" if dim == "M" else "w"
            return Refusal(f"get_program_config: per_core_{dim} % out_subblock_{side} == 0 ({PROGRAM_CONFIG_CPP})",
                           f"{chooser} gives the 2D config per_core {factor} x {factor} ({blocks}, tensors not all "
                           f"DRAM-interleaved) with out_subblock {sbh} x {sbw}, and get_program_config's check "
                           f"fails: \"per_core_{dim} must be divisible by out_subblock_{side}!\" (TT-Metal refuses "
                           f"this matmul with no program config)", tt_own=True)
    why = f"{blocks} fit the grid, tensors not all DRAM-interleaved: the 2D multicast"
    rules = (("dataflow", f"{chooser}: {why}"),
             ("grid", f"{chooser}: the blocks of the per-core factor"),
             ("per_core", f"{chooser}: per_core_M = per_core_N = get_per_core_factor"),
             ("in0_block_w", f"{chooser}: 2, or 1 when Kt is odd"),
             ("out_block", f"{chooser}: per_core (not DRAM-interleaved: no get_multi_dim_per_core_factor)"),
             ("out_subblock", f"{chooser}: 4 x 2, out_subblock_h = 1 unless out_subblock_w == per_core_N"))
    return TTConfig("TT auto", grid, (factor, factor), w, (factor, factor), (sbh, sbw), rules=rules)


def _dram_2d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], blocks: str) -> TTConfig:
    """create_simple_matmul_program_config's 2D config with every tensor DRAM-interleaved."""
    cols, rows = grid
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
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


def _multicore(spec: MatmulSpec, why: str, device: tuple[int, int]) -> TTConfig | Refusal:
    """create_simple_matmul_program_config's last resort, MatmulMultiCoreProgramConfig on the device's grid: kgen's
    multi_core (no block reuse, one output tile at a time; kgen/gen/dataflow/multi_core.py)."""
    if refused := dataflows.multi_core.auto_refusal(spec):
        return Refusal(AUTO_RULE, refused)
    chooser = f"create_simple_matmul_program_config ({PROGRAM_CONFIG_CPP}) returns MatmulMultiCoreProgramConfig ({why})"
    return TTConfig("TT auto", device, (1, 1), round_up_tiles(spec.k), (1, 1), (1, 1),
                    dataflow=dataflows.MULTI_CORE.name, rules=dataflows.multi_core.auto_rules(chooser))


def _unfused(spec: MatmulSpec, cfg: TTConfig) -> TTConfig:
    """create_simple_matmul_program_config's configs take fuse_batch = false (a batch of one: the same program)."""
    in1 = "one in1 matrix per batch, bcast_B = 0" if _bmm(spec) else "one in1 shared by the batch, bcast_B = 1"
    return cfg if spec.batch == 1 else replace(cfg, fuse_batch=False, rules=cfg.rules + (("fuse_batch", (
        f"create_simple_matmul_program_config ({PROGRAM_CONFIG_CPP}): fuse_batch = false, per_core of one "
        f"batch's Mt, every core looping over the {spec.batch} batches ({in1})")),))


def _simple(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int],
            device: tuple[int, int]) -> TTConfig | Refusal:
    """create_simple_matmul_program_config on `grid` (its 1D configs take the device's grid)."""
    cols, rows = grid
    mem = spec.memory
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    placed = (mem.in0, mem.in1, mem.out)
    all_interleaved = not any(is_sharded(p) for p in placed)
    all_dram = all(str(p).startswith("dram") for p in placed)
    dram_interleaved = all_dram and all_interleaved
    narrow = all_interleaved and _is_narrow(mt * TILE_HW, nt * TILE_HW, all_dram)
    wide = narrow and nt > mt
    tall = narrow and not wide
    factor = next((f for f in PER_CORE_FACTORS if _fits(arch, spec, f, f, SIMPLE_IN0_BLOCK_W)), 1)
    blocks_y, blocks_x = math.ceil(mt / factor), math.ceil(nt / factor)
    w = SIMPLE_IN0_BLOCK_W
    if (is_sharded(mem.out) or blocks_y > 1 or blocks_x > 1) and kt % w:
        w = 1
    blocks = f"{blocks_x} x {blocks_y} blocks of {factor} x {factor} tiles (get_per_core_factor, get_core_range)"
    if not (dram_interleaved or (blocks_x * blocks_y <= cols * rows and kt % w == 0)):
        why = (f"more than the {cols * rows} cores of the {cols} x {rows} grid" if blocks_x * blocks_y > cols * rows
               else f"a single block with Kt = {kt} not a multiple of in0_block_w = {w}")
        return _multicore(spec, f"{blocks}: {why}, tensors not all DRAM-interleaved", device)
    in_range = not (blocks_y == 1 and blocks_x == 1) and blocks_y <= rows and blocks_x <= cols
    range_x, range_y = (blocks_x, blocks_y) if in_range else (0, 0)
    # kgen's sharded output leaves the shard spec to the op (none given): never a BLOCK_SHARDED 1D grid
    out_sharded_as = mem.out if range_y == 0 else None
    if range_y == 1 or wide or out_sharded_as == Placement.L1_WIDTH_SHARDED:
        why = ("a wide shape (is_narrow_shape): in0 multicast" if wide else f"{blocks} in one row: in0 multicast"
               if range_y == 1 else "a width-sharded output: in0 multicast")
        return _unfused(spec, _mcast_1d(arch, spec, device, mcast_in0=True, why=why))
    if range_x == 1 or tall or out_sharded_as == Placement.L1_HEIGHT_SHARDED:
        why = ("a tall shape (is_narrow_shape): in1 multicast" if tall else f"{blocks} in one column: in1 "
               f"multicast" if range_x == 1 else "a height-sharded output: in1 multicast")
        return _unfused(spec, _mcast_1d(arch, spec, device, mcast_in0=False, why=why))
    if dram_interleaved:
        return _unfused(spec, _dram_2d(arch, spec, grid, blocks))
    if range_y > 0 or out_sharded_as == Placement.L1_BLOCK_SHARDED:
        cfg = _placed_2d(spec, grid, factor, w, blocks)
        return cfg if isinstance(cfg, Refusal) else _unfused(spec, cfg)
    why = "a single block" if blocks_x == blocks_y == 1 else f"blocks past the {cols} x {rows} grid's rows or columns"
    return _multicore(spec, f"{blocks}: {why}, not a narrow shape, tensors not all DRAM-interleaved", device)


def _systolic_1d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], tall: bool | None = None) -> TTConfig:
    """create_matmul_1d_systolic_array_program_config (fuse_batch true); `tall` forced by a height-sharded
    in0 (the config's `input_layout_a == HEIGHT_SHARDED` override)."""
    bmt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    cores = grid[0] * grid[1]
    tall = bmt > nt if tall is None else tall
    pm, pn = (math.ceil(bmt / cores), nt) if tall else (bmt, math.ceil(nt / cores))
    w = math.ceil(kt / cores)
    while kt % w:
        w -= 1
    shard = (0, 0)
    if spec.memory.in0 in (Placement.L1_HEIGHT_SHARDED, Placement.L1_WIDTH_SHARDED):   # the in0 shard TT is given
        sh, sw, _ = (height_shard if spec.memory.in0 == Placement.L1_HEIGHT_SHARDED else width_shard)(spec, grid)
        shard = (sw, sh)
    obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False, shard=shard)
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


def _reuse_batched(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int],
                   device: tuple[int, int]) -> TTConfig | Refusal:
    """create_matmul_program_config with a batched in1 (in0's batch > 1, interleaved): per_core = Mt x Nt
    of one batch, in0_block_w 1, MatmulMultiCoreReuseProgramConfig when its CBs fit, else
    create_simple_matmul_program_config on the core grid."""
    chooser = f"create_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    if any(is_sharded(p) for p in (spec.memory.in0, spec.memory.in1)):
        return Refusal(AUTO_RULE,
                       f"a batched in1 with a sharded input: {chooser} derives MatmulMultiCoreReuseProgramConfig "
                       f"from the shard spec; kgen's reuse factory takes interleaved tensors only")
    mt, nt = round_up_tiles(spec.m), round_up_tiles(spec.n)
    if not _fits(arch, spec, mt, nt, 1):
        return _simple(arch, spec, grid, device)
    sb = _subblock_wh(mt, nt, spec.compute.fp32_dest_acc) or (1, 1)
    why = (f"a batched in1 (in0's batch {spec.batch} > 1), per_core = Mt x Nt with in0_block_w 1 fits "
           f"(can_cbs_fit_in_l1): MatmulMultiCoreReuseProgramConfig, kgen's reuse factory (ttnn 0.81.1 "
           f"dispatches the config to MatmulMultiCoreReuseOptimizedProgramFactory, which spreads the "
           f"batch's blocks over the core grid; kgen's reuse port loops over the batch on one core per block)")
    rules = (("dataflow", f"{chooser}: {why}"),
             ("grid", f"{chooser}: the blocks of per_core (one block of one batch)"),
             ("per_core", f"{chooser}: one batch's Mt x Nt"), ("in0_block_w", f"{chooser}: 1"),
             ("out_block", f"{chooser}: per_core (the reuse config has no out block)"),
             ("out_subblock", f"get_subblock_sizes ({PROGRAM_CONFIG_CPP})"))
    return TTConfig("TT auto", grid, (mt, nt), 1, (mt, nt), sb, dataflow=dataflows.REUSE.name, rules=rules)


def _planner_shard(spec: MatmulSpec, grid: tuple[int, int]) -> tuple[int, int, int, int, bool] | Refusal:
    """The block-sharded in0's shard: the one the spec gives (`memory.in0_shard`: its rows, its width
    and its grid, as ttnn reads them from the tensor), else the one kgen's planner lays out (kgen's
    `l1_block_sharded` with no shard spec leaves it to the op): mcast_2d's grid of blocks over `grid`, one
    shard per core with work, per_core_M rows by Kt / (blocks along the in0 multicast) columns. Returns
    (per_core_M, shard width, blocks along x, blocks along y, COL_MAJOR orientation)."""
    from kgen.gen.dataflow.base import grid_layout
    from kgen.gen.rules import PlanError

    transpose = spec.transpose_mcast or spec.memory.orientation == "col_major"
    given = spec.memory.in0_shard
    if given is not None:
        (h, w), (gx, gy) = given.shape, given.grid
        return h // TILE_HW, w // TILE_HW, gx, gy, transpose
    s2d = replace(spec, dataflow=dataflows.MCAST_2D.name, transpose_mcast=transpose)
    mt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    try:
        layout = grid_layout(s2d, mt, nt, grid, [])
    except PlanError as exc:
        return Refusal(exc.rule, exc.message, tt_own=not exc.rule.endswith("(kgen)"))
    if kt % layout.n_blocks:
        return Refusal(AUTO_RULE,
                       f"in0 = l1_block_sharded: kgen's planner shards in0 over the grid with work, "
                       f"{layout.n_blocks} cores along each in0 multicast, which do not divide Kt = {kt}")
    gx, gy = layout.grid
    return layout.per_core_m, kt // layout.n_blocks, gx, gy, transpose


def _sharded_1d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], chooser: str,
                user_grid: bool = False) -> TTConfig | Refusal:
    """TT's 1D configs for a height- or width-sharded in0 (IN0_SHARDED). Height-sharded: the in1 multicast,
    with a core grid create_matmul_1d_systolic_array_program_config's tall config (HEIGHT_SHARDED forces
    is_tall), else get_matmul_program_config's from the shard (shards.height_shard): per_core_M its rows,
    per_core_N = Nt, in0_block_w = Kt, its grid, get_matmul_subblock_params (out_subblock_w == per_core_N
    under a sharded output). Width-sharded: the in0 multicast, with a core grid the systolic wide config
    (WIDTH_SHARDED forces !is_tall), else from the shard (shards.width_shard): per_core_M = M, per_core_N =
    div_up(Nt, its cores), in0_block_w = gcd(shard width, Kt)."""
    width = spec.memory.in0 == Placement.L1_WIDTH_SHARDED
    if spec.memory.orientation == "col_major":
        return Refusal("get_matmul_program_config: a height- or width-sharded in0 is ROW_MAJOR", f"in0 = "
                       f"{spec.memory.in0} with orientation = col_major: TT-Metal requires \"Input tensor A must "
                       f"have ROW_MAJOR shard orientation\" ({chooser})", tt_own=True)
    if user_grid:
        return _systolic_1d(arch, spec, grid, tall=not width)
    pm, shard_w, grid = (width_shard if width else height_shard)(spec, grid)
    if grid == (1, 1):
        return Refusal(AUTO_RULE, f"in0 = {spec.memory.in0} on one core: {chooser} falls through to "
                                  f"create_matmul_program_config's single-core choice, not built by kgen")
    nt, kt = round_up_tiles(spec.n), round_up_tiles(spec.k)
    pn, w = (math.ceil(nt / (grid[0] * grid[1])), math.gcd(shard_w, kt)) if width else (nt, kt)
    obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False, shard=(shard_w, pm))
    sb = _subblock_hw(obh, obw, spec.compute.fp32_dest_acc, n_eq_w=is_sharded(spec.memory.out))
    how = (f"{chooser}: in0 {'width' if width else 'height'}-sharded on {grid[0]} x {grid[1]} cores: the 1D config, "
           f"{'in0' if width else 'in1'} multicast")
    rules = (("dataflow", how), ("grid", f"{how}; the shard grid"),
             ("in0_block_w", f"{how}: " + ("gcd(shard width, Kt)" if width else "Kt")),
             ("per_core", f"{how}: " + ("M x div_up(Nt, the shard's cores)" if width else "the shard's rows x Nt")),
             ("out_block", OUT_BLOCK_RULE),
             ("out_subblock", f"bmm_op_utils::get_matmul_subblock_params ({PROGRAM_CONFIG_CPP})"))
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb, rules=rules,
                    dataflow=(dataflows.MCAST_1D_IN0 if width else dataflows.MCAST_1D_IN1).name)


def _shard_2d(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int], chooser: str,
              user_grid: bool) -> TTConfig | Refusal:
    """The 2D config a block-sharded in0 gives, from its shard (kgen's planner's, _planner_shard).
    get_matmul_program_config (no core grid, the shard grid 2D): per_core = ceil(M / y cores) x
    ceil(N / x cores), in0_block_w = gcd(shard width, Kt), get_matmul_subblock_params with
    out_subblock_w == per_core_N under a sharded output. create_matmul_program_config (a core grid, or a
    shard grid of one row or column): per_core_M = the shard's rows, per_core_N = Nt x shard width / Kt,
    in0_block_w = gcd(shard width, Kt), get_subblock_sizes with out_subblock_h = 1 unless
    out_subblock_w == per_core_N. transpose_mcast = a COL_MAJOR shard orientation."""
    shard = _planner_shard(spec, grid)
    if isinstance(shard, Refusal):
        return shard
    pm, shard_w, gx, gy, transpose = shard
    mem = spec.memory
    if is_sharded(mem.out) and mem.out != mem.in0:
        return Refusal(f"get_matmul_program_config: a sharded output's layout matches in0's ({PROGRAM_CONFIG_CPP})",
                       f"in0 = {mem.in0} with out = {mem.out}: TT-Metal requires \"Input A and output memory "
                       f"layouts must match\" (TT_FATAL in {chooser})", tt_own=True)
    mt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    fp32, w = spec.compute.fp32_dest_acc, math.gcd(shard_w, kt)
    x_cores, y_cores = (gy, gx) if transpose else (gx, gy)
    from_shard = not user_grid and gx > 1 and gy > 1
    if from_shard:
        pm, pn = math.ceil(mt / y_cores), math.ceil(nt / x_cores)
        obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False, shard=(shard_w, pm))
        sb = _subblock_hw(obh, obw, fp32, n_eq_w=is_sharded(mem.out))
        how = (f"get_matmul_program_config ({PROGRAM_CONFIG_CPP}): in0 block-sharded on a {gx} x {gy} grid "
               f"(the shard kgen's planner gives: per_core_M x Kt / {x_cores}): the 2D multicast")
        sub = f"bmm_op_utils::get_matmul_subblock_params ({PROGRAM_CONFIG_CPP})" + \
            (", out_subblock_w == per_core_N (sharded output)" if is_sharded(mem.out) else "")
        grid = (gx, gy)
    else:
        pn = max(1, nt * shard_w // kt)
        obh, obw, _ = _out_block(arch, spec, pm, pn, w, adjust_in0_block_w=False, shard=(shard_w, pm))
        sb = _subblock_wh(obh, obw, fp32)
        if sb is None:
            return Refusal("get_subblock_sizes finds a subblock", "TT finds no subblock (TT_THROW: Unable to find "
                           "subblock sizes)", tt_own=True)
        sb = (1, sb[1]) if sb[1] != pn else sb
        how = (f"{chooser}: in0 block-sharded (the shard kgen's planner gives), per_core from the shard: "
               f"the 2D multicast")
        sub = f"get_subblock_sizes ({PROGRAM_CONFIG_CPP}), out_subblock_h = 1 unless out_subblock_w == per_core_N"
    rules = (("dataflow", how), ("grid", how), ("per_core", how),
             ("in0_block_w", f"{how}: gcd(shard width, Kt)"), ("out_block", OUT_BLOCK_RULE), ("out_subblock", sub))
    return TTConfig("TT auto", grid, (pm, pn), w, (obh, obw), sb, transpose_mcast=transpose, rules=rules)


def _from_shard(arch: ArchFacts, spec: MatmulSpec, device: tuple[int, int]) -> TTConfig | Refusal:
    """get_matmul_program_config: a sharded in0 and no core grid (generate_matmul_program_config)."""
    chooser = f"get_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    mem = spec.memory
    if _bmm(spec):
        if mem.in0 == Placement.L1_WIDTH_SHARDED:
            return Refusal("get_matmul_program_config: a batched matmul's in0 is not WIDTH_SHARDED "
                           f"({PROGRAM_CONFIG_CPP})",
                           f"in0 = l1_width_sharded with a batched in1: TT-Metal requires \"Input A memory layout "
                           f"must not be WIDTH_SHARDED\" ({chooser})", tt_own=True)
        return Refusal(AUTO_RULE,
                       f"in0 = {mem.in0} with a batched in1: {chooser} gives MatmulMultiCoreReuseProgramConfig from "
                       f"in0's shard; kgen's reuse factory takes interleaved tensors only")
    if mem.in1 != Placement.DRAM and mem.in1 != Placement.L1:
        return Refusal(f"get_matmul_program_config: in1 INTERLEAVED for a sharded in0 ({PROGRAM_CONFIG_CPP})",
                       f"in0 = {mem.in0} with in1 = {mem.in1}: TT-Metal requires \"Input tensor B must have "
                       f"INTERLEAVED memory layout\" ({chooser}, ttnn.matmul with no program config)", tt_own=True)
    if mem.in0 != Placement.L1_BLOCK_SHARDED:
        if is_sharded(mem.out) and mem.out != mem.in0:
            return Refusal(f"get_matmul_program_config: a sharded output's layout matches in0's ({PROGRAM_CONFIG_CPP})",
                           f"in0 = {mem.in0} with out = {mem.out}: TT-Metal requires \"Input A and output memory "
                           f"layouts must match\" ({chooser})", tt_own=True)
        return _sharded_1d(arch, spec, device, chooser)
    return _shard_2d(arch, spec, device, chooser, user_grid=False)


def _with_user_grid(arch: ArchFacts, spec: MatmulSpec, grid: tuple[int, int],
                    device: tuple[int, int]) -> TTConfig | Refusal:
    """create_matmul_program_config on the user's core grid."""
    if _bmm(spec):
        return _reuse_batched(arch, spec, grid, device)
    chooser = f"create_matmul_program_config ({PROGRAM_CONFIG_CPP})"
    mt, nt, kt = round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    height, width = spec.batch * mt * TILE_HW, nt * TILE_HW          # TT's padded shapes
    block_sharded = spec.memory.in0 == Placement.L1_BLOCK_SHARDED
    one_d = _is_narrow(height, width, all_dram=False) or min(kt, mt, nt) * TILE_HW <= TILE_HW
    if is_sharded(spec.memory.in0):
        if not block_sharded:
            return _sharded_1d(arch, spec, grid, f"{chooser} -> create_matmul_1d_systolic_array_program_config",
                               user_grid=True)
        return _shard_2d(arch, spec, grid, chooser, user_grid=True)
    if one_d:
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
        return Refusal("get_subblock_sizes finds a subblock",
                       "TT finds no subblock (TT_THROW: Unable to find subblock sizes)", tt_own=True)
    sbh, sbw = sb
    if sbw != pn:
        sbh = 1
    rules = (("dataflow", f"{chooser}: not a narrow shape, no dimension within one tile: the 2D multicast"),
             ("grid", f"{chooser}: the core grid the spec gives (ttnn.matmul's core_grid)"),
             ("per_core", f"{chooser}: ceil(batch * Mt / grid y) x ceil(Nt / grid x)"),
             ("in0_block_w", f"{chooser}: 4 lowered to a divisor of Kt"),
             ("out_block", OUT_BLOCK_RULE),
             ("out_subblock", f"get_subblock_sizes ({PROGRAM_CONFIG_CPP}), out_subblock_h = 1 unless "
                              f"out_subblock_w == per_core_N"))
    return TTConfig("TT auto", (gx, gy), (pm, pn), w, (obh, obw), (sbh, sbw), rules=rules)


def tt_auto_config(spec: MatmulSpec, arch: ArchFacts | None = None, *,
                   device_grid: tuple[int, int] | None = None) -> TTConfig | Refusal:
    """ttnn's automatic program config for this matmul under the spec's compute config
    (generate_matmul_program_config), or why kgen does not build it (a Refusal: TT's own failure, or a
    form kgen has no factory for). The spec's `grid`, when set, is the user's core grid; `device_grid`
    is the device's compute grid (the arch's whole worker grid by default)."""
    arch = arch or load_arch(spec.arch)
    device = device_grid or arch.worker_grid
    if spec.grid is not None:
        # a core grid larger than the device's falls back to the device's, still on this path
        fits = spec.grid[0] <= device[0] and spec.grid[1] <= device[1]
        return _with_user_grid(arch, spec, spec.grid if fits else device, device)
    if is_sharded(spec.memory.in0):
        return _from_shard(arch, spec, device)
    return _simple(arch, spec, device, device)


def spec_for_config(spec: MatmulSpec, cfg: TTConfig) -> tuple[MatmulSpec, bool]:
    """The kgen spec of a TT config, and whether its per_core pads the last row/column of cores
    (which the planner then does, as TT-Metal's padding kernels do)."""
    fused = cfg.fuse_batch and not _bmm(spec)
    mt, nt = round_up_tiles(spec.m) * (spec.batch if fused else 1), round_up_tiles(spec.n)
    pm, pn = cfg.per_core
    rows, cols = math.ceil(mt / pm), math.ceil(nt / pn)
    block = BlockSpec(in0_block_w=cfg.in0_block_w, out_subblock=cfg.out_subblock, per_core=cfg.per_core,
                      out_block=cfg.out_block)
    padded = rows * pm != mt or cols * pn != nt
    # the 2D factory's grid is the blocks'; the 1D factory takes the compute grid and uses its first
    # num_blocks cores in row-major order (the planner's _plan_1d), the multi-core one all it needs
    if dataflows.get(cfg.dataflow).is_1d or not dataflows.get(cfg.dataflow).draws_blocks:
        grid = cfg.grid
    else:
        grid = (rows, cols) if cfg.transpose_mcast else (cols, rows)
    return replace(spec, grid=grid, dataflow=cfg.dataflow, block=block, variant=None,
                   transpose_mcast=cfg.transpose_mcast or spec.transpose_mcast,
                   fuse_batch=spec.fuse_batch if cfg.fuse_batch else False), padded


def tt_auto(spec: MatmulSpec, *, device_grid: tuple[int, int] | None = None) -> Choice:
    """TT's automatic choice for this spec: the compute config it runs with (tt_compute) and the
    program config ttnn picks under it."""
    compute, origin = tt_compute(spec)
    tt_spec = replace(spec, compute=compute)
    cfg = tt_auto_config(tt_spec, device_grid=device_grid)
    if isinstance(cfg, Refusal):
        return Choice(None, None, False, cfg.message, compute, origin, refusal=cfg)
    s, padded = spec_for_config(tt_spec, cfg)
    notes = [n for n in (cfg.dataflow if dataflows.get(cfg.dataflow) is not dataflows.MCAST_2D else "",
                         "padded last blocks" if padded else "") if n]
    return Choice(cfg, s, padded, ", ".join(notes), compute, origin)


# ----------------------------------------------------------------------------------------------
# `dataflow = auto`: the planner's spec is TT's choice, but where the spec fixes a field itself
# ----------------------------------------------------------------------------------------------

AUTO_RULE = "dataflow = auto builds ttnn.matmul's automatic choice where kgen has its factory and form (kgen)"


def _fmt(value) -> str:
    return f"{value[0]} x {value[1]}" if isinstance(value, tuple) else str(value)


def _batch_form(spec: MatmulSpec, cfg: TTConfig, tt: MatmulSpec) -> list[str]:
    """TT's fuse_batch (`tt`, the spec of its config), refused where the spec fixes the other form."""
    from kgen.gen.rules import PlanError
    if spec.batch > 1 and spec.fuse_batch is not None and spec.fuse_batch != tt.fuses_batch:
        raise PlanError(AUTO_RULE, f"fuse_batch = {str(spec.fuse_batch).lower()} with dataflow = auto: TT's rule "
                        f"chose {cfg.dataflow} with the batch {'fused into M' if tt.fuses_batch else 'not fused'} "
                        f"({cfg.rule('fuse_batch') or cfg.rule('per_core')}), and its blocking is that form's",
                        spec.span("fuse_batch"), "leave fuse_batch out, or name a dataflow")
    return [] if tt.fuses_batch else [f"fuse_batch -> false: {cfg.rule('fuse_batch') or cfg.rule('dataflow')}"]


def resolve_auto(spec: MatmulSpec, arch: ArchFacts) -> tuple[MatmulSpec, tuple[str, ...]]:
    """The spec `dataflow = auto` plans: TT's automatic choice (`tt_auto`: its factory, grid,
    per-core blocking, in0_block_w, out_subblock and, where the spec leaves compute to the defaults,
    ttnn.matmul's compute config), except the block fields the spec fixes itself. A value TT derives
    from a field the spec fixes is left to kgen's planner (per_core fixed: TT's grid, out_block and
    out_subblock; out_block fixed: its out_subblock). The spec's grid is ttnn.matmul's core_grid, an
    input of TT's rule. Returns the spec and one line per field: which rule chose it, or that the
    spec fixed it."""
    from kgen.gen.rules import PlanError

    choice = tt_auto(replace(spec, dataflow=dataflows.MCAST_2D.name), device_grid=arch.worker_grid)
    if choice.config is None:
        refusal = choice.refusal or Refusal(AUTO_RULE, choice.note)
        takers = [d.name for d in dataflows.REGISTRY if dataflows.accepts(d, spec.memory)
                  and (spec.broadcast_in1 or spec.batch == 1 or d.loops_batch)]
        hint = ("TT-Metal refuses this call itself; change the spec (see the rule)" if refusal.tt_own else
                (", ".join(f"dataflow = {t}" for t in takers) or "no dataflow takes this placement")
                + ("" if spec.grid is not None else ", or a core grid (`grid = X x Y`, ttnn.matmul's core_grid)"))
        raise PlanError(refusal.rule, f"dataflow = auto: {refusal.message}", spec.span("dataflow"), hint)
    cfg, tt = choice.config, choice.spec
    fixed, mine = spec.block, tt.block
    df = dataflows.get(cfg.dataflow)
    if spec.transpose_mcast and not df.transpose_mcast:
        raise PlanError("transpose_mcast belongs to the 2D multicast factory",
                        f"transpose_mcast = true with dataflow = auto: TT's rule chose {cfg.dataflow} "
                        f"({cfg.rule('dataflow')}), which has no transpose_mcast", spec.span("transpose_mcast"),
                        "dataflow = mcast_2d, or transpose_mcast = false")
    if not dataflows.accepts(df, spec.memory):
        where = ", ".join(f"{t} = {'|'.join(sorted(w))}" for t, w in df.placements.items())
        raise PlanError(AUTO_RULE, f"dataflow = auto: TT's rule chose {cfg.dataflow} ({cfg.rule('dataflow')}) for "
                        f"memory {{ in0 = {spec.memory.in0}  in1 = {spec.memory.in1}  out = {spec.memory.out} }}, "
                        f"but kgen's {cfg.dataflow} takes its tensors only as {where}", spec.span("memory"),
                        "a dataflow named explicitly, or memory placements that factory takes")
    lines = [f"dataflow auto -> {cfg.dataflow} ({df.factory}): {cfg.rule('dataflow')}"]
    lines += _batch_form(spec, cfg, tt)

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
    lines += tt_bound_matmul.separate_ops(spec)
    resolved = replace(spec, dataflow=cfg.dataflow, grid=grid, compute=c, block=replace(spec.block, **block),
                       transpose_mcast=tt.transpose_mcast, fuse_batch=tt.fuse_batch)
    return resolved, tuple(lines)
