"""Stage 2, plan: `MatmulSpec` + arch facts -> `Plan`.

Fills every `auto`, checks every rule TT-Metal's matmul validation checks
(matmul_device_operation.cpp; ttmetal-matmul.md §2.2, §2.8, §3.3) plus the L1 budget, and takes
the accumulation-policy and CB decisions exactly as the 2D multicast factory does
(matmul_multicore_reuse_mcast_2d_program_factory.cpp). What differs by factory (the layout of the
cores, the L1-accumulation threshold, the placements taken) is the dataflow module's
(kgen/gen/dataflow/).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kgen.core.arch import ArchFacts, load_arch
from kgen.gen.rules import (CB_BIAS, CB_IN0, CB_IN0_SHARD, CB_IN1, CB_L1_ARRAY, CB_OUT, CB_PARTIALS, L1_ARRAY_BYTES,
                            PlanError, divisors as _divisors, fmt_pair as _fmt_pair,
                            nearest as _nearest, round_up_tiles)
from kgen.gen.spec import ComputeConfig, MatmulSpec
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW, Placement
from kgen.gen.dataflow import REGISTRY, Dataflow, accepts, get as dataflow_of

# SUBBLOCK_HW_CHOICES (matmul_program_config.cpp), read as (h, w) the way
# bmm_op_utils::get_matmul_subblock_params and TT's peak benchmark read it (ttmetal-matmul.md §3.4).
SUBBLOCK_HW_CHOICES: tuple[tuple[int, int], ...] = (
    (4, 2), (2, 4), (8, 1), (1, 8),
    (7, 1), (1, 7),
    (3, 2), (2, 3), (6, 1), (1, 6),
    (5, 1), (1, 5),
    (2, 2), (4, 1), (1, 4),
    (3, 1), (1, 3),
    (2, 1), (1, 2),
    (1, 1),
)
# in0/in1 CBs are double-buffered when more than one K-block flows (MCAST_INPUT_BUFFERING_DEPTH).
INPUT_BUFFERING_DEPTH = 2
# Upper bound of the auto in0_block_w search: deeper K-blocks buy little once the matrix engine is
# fed and cost L1 twice (double buffering).
AUTO_IN0_BLOCK_W_MAX = 8

POLICY_L1_ACC = "packer_l1_acc"
POLICY_SPILL = "spill_reload"
POLICY_DST = "dst_only"


@dataclass(frozen=True)
class CircularBuffer:
    index: int            # CB index c_<index>
    name: str             # TT-Metal named compile-time arg
    role: str
    data_format: str      # tt::DataFormat name
    page_bytes: int
    pages: int
    region: str           # CBs with the same region share one L1 allocation
    buffer: str | None = None   # the tensor whose L1 buffer this CB is globally allocated on (a shard)

    @property
    def total_bytes(self) -> int:
        return self.page_bytes * self.pages


@dataclass(frozen=True)
class L1Region:
    name: str
    cb_indices: tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class Plan:
    spec: MatmulSpec
    arch: ArchFacts
    compute: ComputeConfig
    # problem in tiles; batch is fused into M (fuse_batch, as TT's 2D multicast path does)
    mt: int
    nt: int
    kt: int
    batch_ct: int
    grid_requested: tuple[int, int]      # x, y
    grid: tuple[int, int]                # cores with work: x = num_blocks_x, y = num_blocks_y (2D, reuse);
                                         # 1D multicast: the rectangle their row-major run fills
    per_core_m: int
    per_core_n: int
    out_block_h: int
    out_block_w: int
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    num_blocks: int                      # K-blocks (num_blocks_inner_dim)
    num_blocks_h_dim: int
    num_blocks_w_dim: int
    policy: str
    policy_reason: str
    l1_acc_enabled: bool                 # the decision, TT-Metal's packer_l1_acc_en: PACKER_L1_ACC is defined
                                         # (the request is compute.packer_l1_acc, TTNN's field)
    partials_format: str
    partials_reason: str
    out_format: str
    in0_format: str
    in1_format: str
    bias_format: str | None
    dst_sync: str                        # SyncHalf | SyncFull, as emitted
    dst_capacity: int
    dst_accum_format: str
    cbs: tuple[CircularBuffer, ...]
    regions: tuple[L1Region, ...]
    warnings: tuple[str, ...]
    choices: tuple[str, ...]             # how each auto value was chosen
    out_partials_sharing: str = ""       # whether c_4 and c_5 share one L1 region, and why

    @property
    def factory_departures(self) -> tuple[str, ...]:
        """Where this plan runs a kernel in a mode TT-Metal's 2D factory would not compile."""
        return factory_departures(self.compute, self.dst_sync, self.dst_capacity)

    # derived quantities of the compute kernel (ttmetal-matmul.md §1.1)
    @property
    def in0_num_subblocks(self) -> int:
        return self.out_block_h // self.out_subblock_h

    @property
    def in1_num_subblocks(self) -> int:
        return self.out_block_w // self.out_subblock_w

    @property
    def out_subblock_tiles(self) -> int:
        return self.out_subblock_h * self.out_subblock_w

    @property
    def out_block_tiles(self) -> int:
        return self.out_block_h * self.out_block_w

    @property
    def in0_block_tiles(self) -> int:
        return self.out_block_h * self.in0_block_w

    @property
    def in1_block_tiles(self) -> int:
        return self.out_block_w * self.in0_block_w

    @property
    def fuse_bias(self) -> bool:
        return self.spec.fuse_bias

    @property
    def pack_relu(self) -> bool:
        return self.spec.activation == "relu"

    @property
    def untilize_out(self) -> bool:
        return self.spec.untilize_out

    @property
    def num_cores(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def dataflow(self) -> Dataflow:
        """The factory module of the spec's dataflow: it owns the per-core terms below."""
        return dataflow_of(self.spec.dataflow)

    @property
    def is_1d(self) -> bool:
        return self.dataflow.is_1d

    @property
    def core_m_terms(self) -> dict[str, int]:
        """A core's M-block index as a sum of its coordinates (core_y on a 2D grid of blocks, core_x under
        transpose_mcast, the row-major index or nothing on a 1D run of cores)."""
        return self.dataflow.core_m_terms(self)

    @property
    def core_n_terms(self) -> dict[str, int]:
        """A core's N-block index as a sum of its coordinates."""
        return self.dataflow.core_n_terms(self)

    @property
    def in0_reader_cores(self) -> int:
        """Cores that read in0 from DRAM."""
        return self.dataflow.in0_reader_cores(self)

    @property
    def cb_bytes(self) -> int:
        return sum(r.bytes for r in self.regions)

    @property
    def l1_margin(self) -> int:
        return self.arch.usable_cb_bytes - self.cb_bytes

    @property
    def memory(self):
        return self.spec.memory

    @property
    def in0_shard_w(self) -> int:
        """K tiles of each core's block-sharded in0 shard (the factory's in0_shard_width_in_tiles)."""
        return self.kt // self.n_blocks if self.memory.in0 == Placement.L1_BLOCK_SHARDED else (
            self.kt if self.memory.in0 == Placement.L1_HEIGHT_SHARDED else 0)

    @property
    def shard_specs(self) -> dict[str, dict]:
        """ttnn ShardSpecs of the sharded tensors: core grid (x0, y0, x1, y1), shard shape in elements
        (height, width) and orientation. in0 block-sharded: per_core_M x Kt / (cores along N) on the grid
        with work, COL_MAJOR under transpose_mcast (its width along y); height-sharded: per_core_M x K on
        the in0 senders' column; the output: per_core_M x per_core_N on the grid with work."""
        out: dict[str, dict] = {}
        orientation = "COL_MAJOR" if self.transpose_mcast else "ROW_MAJOR"
        grid = (0, 0, self.grid[0] - 1, self.grid[1] - 1)
        if self.memory.in0 == Placement.L1_BLOCK_SHARDED:
            out["in0"] = {"memory_layout": "BLOCK_SHARDED", "grid": grid, "orientation": orientation,
                          "shape": (self.per_core_m * TILE_HW, self.in0_shard_w * TILE_HW)}
        elif self.memory.in0 == Placement.L1_HEIGHT_SHARDED:
            out["in0"] = {"memory_layout": "HEIGHT_SHARDED", "grid": (0, 0, 0, self.m_blocks - 1),
                          "orientation": "ROW_MAJOR", "shape": (self.per_core_m * TILE_HW, self.kt * TILE_HW)}
        if self.memory.out == Placement.L1_BLOCK_SHARDED:
            out["out"] = {"memory_layout": "BLOCK_SHARDED", "grid": grid, "orientation": orientation,
                          "shape": (self.per_core_m * TILE_HW, self.per_core_n * TILE_HW)}
        return out

    @property
    def transpose_mcast(self) -> bool:
        return self.spec.transpose_mcast

    @property
    def m_blocks(self) -> int:
        """Cores along M (the factory's num_blocks_y): the grid's rows, its columns with transpose_mcast."""
        return self.grid[0] if self.transpose_mcast else self.grid[1]

    @property
    def n_blocks(self) -> int:
        """Cores along N (the factory's num_blocks_x): the grid's columns, its rows with transpose_mcast."""
        return self.grid[1] if self.transpose_mcast else self.grid[0]

    def cb(self, index: int) -> CircularBuffer:
        return next(c for c in self.cbs if c.index == index)

    # The last row / column of cores may hold a partial block: TT-Metal's 2D factory computes the grid
    # as ceil(Mt / per_core_M) x ceil(Nt / per_core_N) and gives the last row/column these values
    # (matmul_multicore_reuse_mcast_2d_program_factory.cpp, "Parameters for last row, col, or block").
    @property
    def last_per_core_m(self) -> int:
        return self.mt % self.per_core_m or self.per_core_m

    @property
    def last_per_core_n(self) -> int:
        return self.nt % self.per_core_n or self.per_core_n

    @property
    def last_out_block_h(self) -> int:
        return self.last_per_core_m % self.out_block_h or self.out_block_h

    @property
    def last_out_block_w(self) -> int:
        return self.last_per_core_n % self.out_block_w or self.out_block_w

    @property
    def padded_m(self) -> bool:
        """The bottom row of cores has fewer than per_core_M rows of tiles."""
        return self.mt % self.per_core_m != 0

    @property
    def padded_n(self) -> bool:
        """The right column of cores has fewer than per_core_N columns of tiles."""
        return self.nt % self.per_core_n != 0

    @property
    def padded_blocks(self) -> bool:
        return self.padded_m or self.padded_n

    @property
    def tile_padding(self) -> dict[str, tuple[int, int]]:
        """Dimensions that are not tile multiples: name -> (elements, elements padded to tiles)."""
        return {d: (v, round_up_tiles(v) * TILE_HW) for d, v in (("M", self.spec.m), ("N", self.spec.n),
                                                               ("K", self.spec.k)) if v % TILE_HW}

    @property
    def in0_last_ktile_w(self) -> int:
        """Columns of in0's last K tile inside the tensor, 0 when K is a tile multiple (the factory's
        in0_last_ktile_w = logical_K % tile_w; its reader zeroes the rest of that tile)."""
        return self.spec.k % TILE_HW

    @property
    def padding_notes(self) -> tuple[str, ...]:
        """What was padded, for `kgen check`: tensors to whole tiles, and the last row/column of cores."""
        notes = []
        for d, (v, padded) in self.tile_padding.items():
            notes.append(f"{d} = {v} padded to {padded} ({padded - v} zero {'columns' if d != 'M' else 'rows'} "
                         f"in the last tile, as ttnn tilizes; "
                         + ("the output is sliced back" if d != "K" else
                            f"zero K padding never changes the result; TT-Metal's in0 reader also zeroes "
                            f"the last K tile past column {self.in0_last_ktile_w}") + ")")
        return tuple(notes) + self.dataflow.padding_notes(self)


# ----------------------------------------------------------------------------------------------

def dst_capacity(arch: ArchFacts, compute: ComputeConfig) -> int:
    return arch.dst_tiles(compute.dst_full_sync, compute.fp32_dest_acc)


def out_partials_share(spec: MatmulSpec, partials_fmt: str, out_fmt: str, in1_num_subblocks: int,
                       num_blocks: int, out_blocks_per_core: int) -> tuple[bool, str]:
    """Whether out (c_4) and partials (c_5) share one L1 region, and why (ttmetal-matmul.md §2.3).

    TT-Metal's factory shares them unless the formats differ, or untilize_out has more than one
    subblock column, or `do_not_inplace_interm0_out_CB` (a sharded output whose c_4 holds more than
    one output block). kgen also splits them whenever more than one output block passes through the
    region on a core and partials are packed before a block's final result: the first partials
    pack of block i+1 would land on pages c_4 still holds for block i until the writer (another
    kernel) drains them. TT-Metal's compute kernel has no wait for that (its classic kernel had
    one: cb_reserve_back(out_cb, ...) "since interm and output share memory"), so the plan must
    keep the two apart for TT-Metal's kernel and kgen's alike (issue #12: reuse, per_core 2 x 2,
    out_block 2 x 1 packed over undrained output)."""
    if partials_fmt != out_fmt:
        return False, f"separate: partials {partials_fmt} and out {out_fmt} differ in format"
    if spec.untilize_out and in1_num_subblocks > 1:
        return False, "separate: untilize_out with more than one subblock column (TT-Metal's factory rule)"
    partials_first = num_blocks > 1 or spec.fuse_bias or spec.untilize_out
    if out_blocks_per_core > 1 and partials_first:
        return False, (f"separate: {out_blocks_per_core} output blocks per core pass through it and partials are "
                       f"packed before each block's result, so sharing would overwrite output the writer has "
                       f"not drained")
    return True, "shared: one output block's pages are reused by partials and out in turn (TT-Metal's in-place rule)"


def _cb_table(spec: MatmulSpec, arch: ArchFacts, in0_fmt: str, in1_fmt: str, out_fmt: str, bias_fmt: str | None,
              partials_fmt: str, out_block: tuple[int, int], in0_block_w: int, num_blocks: int,
              batch_ct: int, in1_num_subblocks: int, out_blocks_per_core: int,
              per_core: tuple[int, int] = (0, 0), in0_shard_w: int = 0
              ) -> tuple[tuple[CircularBuffer, ...], tuple[L1Region, ...], str]:
    """CB sizing of the 2D factory (ttmetal-matmul.md §2.3). With a block-sharded in0, c_2 holds the
    core's shard (per_core_M x shard width tiles, globally allocated on in0) and c_6 is the factory's
    64-byte scratch; with a sharded output c_4 holds the core's whole output shard (per_core_M x
    per_core_N tiles, globally allocated on out), and `do_not_inplace_interm0_out_CB = output_is_sharded
    && per_core_M != out_block_h` keeps the partials apart."""
    tb = arch.tile_bytes
    obh, obw = out_block
    depth = INPUT_BUFFERING_DEPTH if batch_ct * num_blocks > 1 else 1
    out_sharded = spec.memory.out != Placement.DRAM
    share, sharing = out_partials_share(spec, partials_fmt, out_fmt, in1_num_subblocks, num_blocks,
                                        out_blocks_per_core)
    if out_sharded and per_core[0] != obh:       # TT's own rule first, whatever kgen's says
        share, sharing = False, (f"separate: do_not_inplace_interm0_out_CB (TT-Metal's factory: a sharded output "
                                 f"with per_core_M = {per_core[0]} != out_block_h = {obh})")
    out_region = "out+partials" if share else "out"
    out_pages = per_core[0] * per_core[1] if out_sharded else obh * obw
    cbs = [
        # a height-sharded in0: c_0 itself is globally allocated on the in0 buffer (the factory:
        # `if (in0_height_sharded) src0_cb_config.set_globally_allocated_address(*in0_buffer)`)
        CircularBuffer(CB_IN0, "cb_in0", "in0", in0_fmt, tb[in0_fmt], obh * in0_block_w * depth, "in0",
                       buffer="in0" if spec.memory.in0 == Placement.L1_HEIGHT_SHARDED else None),
        CircularBuffer(CB_IN1, "cb_in1", "in1", in1_fmt, tb[in1_fmt], obw * in0_block_w * depth, "in1"),
    ]
    if spec.memory.in0 == Placement.L1_BLOCK_SHARDED:
        cbs.append(CircularBuffer(CB_IN0_SHARD, "cb_in0_sharded", "in0 shard", in0_fmt, tb[in0_fmt],
                                  per_core[0] * in0_shard_w, "in0 shard", buffer="in0"))
        cbs.append(CircularBuffer(CB_L1_ARRAY, "cb_l1_array", "l1 array", "Float16_b", L1_ARRAY_BYTES, 1, "l1 array"))
    if bias_fmt is not None:
        cbs.append(CircularBuffer(CB_BIAS, "cb_bias", "bias", bias_fmt, tb[bias_fmt], obw, "bias"))
    cbs.append(CircularBuffer(CB_OUT, "cb_out", "out", out_fmt, tb[out_fmt], out_pages, out_region,
                              buffer="out" if out_sharded else None))
    cbs.append(CircularBuffer(CB_PARTIALS, "cb_intermed0", "partials", partials_fmt, tb[partials_fmt], obh * obw,
                              out_region if share else "partials"))
    regions: dict[str, list[CircularBuffer]] = {}
    for c in cbs:
        regions.setdefault(c.region, []).append(c)
    return tuple(cbs), tuple(L1Region(name, tuple(c.index for c in members), max(c.total_bytes for c in members))
                             for name, members in regions.items()), sharing


def plan(spec: MatmulSpec, arch: ArchFacts | None = None) -> Plan:
    """Fill every auto and take every decision the 2D multicast factory takes, in its order: the grid,
    per-core M/N, the blocking that fits L1, the accumulation policy and the CB table."""
    arch = arch or load_arch(spec.arch)
    c = spec.compute
    choices: list[str] = []

    # ttnn pads each tensor to whole tiles (tilize pads with zeros); batch is fused into M after padding
    mt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    batch_ct = 1

    in0_fmt, in1_fmt, out_fmt = (DTYPE_TO_FORMAT[d] for d in (spec.dtype_in0, spec.dtype_in1, spec.dtype_out))
    bias_fmt = DTYPE_TO_FORMAT[spec.dtype_bias] if spec.fuse_bias else None

    grid_req = _requested_grid(spec, arch, choices)
    _check_transpose_mcast(spec)
    layout = dataflow_of(spec.dataflow).layout(spec, mt, nt, grid_req, choices)
    per_core_m, per_core_n, grid, n_blocks = layout.per_core_m, layout.per_core_n, layout.grid, layout.n_blocks
    in0_shard_w = _check_memory(spec, mt, nt, kt, per_core_m, per_core_n, n_blocks)

    # DST capacity of the sync mode and accumulation format kgen emits
    capacity = dst_capacity(arch, c)
    dst_sync = "SyncFull" if c.dst_full_sync else "SyncHalf"
    dst_accum = "Float32" if c.fp32_dest_acc else "Float16_b"

    blocking = _Blocking(spec, arch, kt, per_core_m, per_core_n, capacity, dst_sync, dst_accum, batch_ct,
                         in0_fmt, in1_fmt, out_fmt, bias_fmt, mt, nt, in0_shard_w)
    (obh, obw), in0_block_w, (sbh, sbw) = blocking.choose(choices)

    num_blocks = kt // in0_block_w
    l1acc, policy_reason = _policy(spec, c, num_blocks)
    partials_fmt, partials_reason = _partials_format(c, l1acc, out_fmt)
    if l1acc and partials_fmt not in arch.packer_l1_acc_formats:
        raise PlanError("packer L1 accumulation format in PACK_L1_ACC_FORMATS",
                        f"partials format {partials_fmt} cannot be L1-accumulated", spec.span("compute"))
    policy = POLICY_L1_ACC if l1acc else (POLICY_SPILL if num_blocks > 1 else POLICY_DST)
    cbs, regions, sharing = blocking.cbs_for((obh, obw), in0_block_w, (sbh, sbw))
    total = sum(r.bytes for r in regions)
    if total > arch.usable_cb_bytes:
        raise PlanError("CBs fit the usable L1 of the core",
                        f"CBs need {total} bytes per core but {arch.name} has {arch.usable_cb_bytes} "
                        f"usable L1 bytes (over by {total - arch.usable_cb_bytes})",
                        spec.span("block"), _l1_suggestions(kt, per_core_m, per_core_n, (obh, obw), in0_block_w,
                                                            (sbh, sbw), blocking.fits))
    _check_untilized_output(spec, out_fmt, partials_fmt, partials_reason)
    _check_untilized_padding(spec, mt, nt, per_core_m, per_core_n)

    chosen = Plan(
        spec=spec, arch=arch, compute=c, mt=mt, nt=nt, kt=kt, batch_ct=batch_ct, grid_requested=grid_req,
        grid=grid, per_core_m=per_core_m, per_core_n=per_core_n, out_block_h=obh, out_block_w=obw,
        in0_block_w=in0_block_w, out_subblock_h=sbh, out_subblock_w=sbw, num_blocks=num_blocks,
        num_blocks_h_dim=per_core_m // obh, num_blocks_w_dim=per_core_n // obw, policy=policy,
        policy_reason=policy_reason, l1_acc_enabled=l1acc, partials_format=partials_fmt,
        partials_reason=partials_reason, out_format=out_fmt, in0_format=in0_fmt, in1_format=in1_fmt,
        bias_format=bias_fmt, dst_sync=dst_sync, dst_capacity=capacity, dst_accum_format=dst_accum,
        cbs=cbs, regions=regions, warnings=(), choices=tuple(choices), out_partials_sharing=sharing,
    )
    return replace(chosen, warnings=_warnings(chosen))


def _requested_grid(spec: MatmulSpec, arch: ArchFacts, choices: list[str]) -> tuple[int, int]:
    """The grid the spec asks for (x, y), or the whole worker grid for `auto`."""
    gx, gy = arch.worker_grid
    if spec.grid is None:
        choices.append(f"grid auto -> {_fmt_pair((gx, gy))}: the whole {arch.name} worker grid")
        return gx, gy
    grid_req = spec.grid
    if grid_req[0] > gx or grid_req[1] > gy:
        raise PlanError("grid within compute_with_storage_grid_size",
                        f"grid {_fmt_pair(grid_req)} exceeds the {arch.name} worker grid {gx} x {gy}",
                        spec.span("grid"), f"{min(grid_req[0], gx)} x {min(grid_req[1], gy)}")
    return grid_req


@dataclass(frozen=True)
class _Blocking:
    """The out_block / in0_block_w / out_subblock search of one core's work: the given values checked,
    each auto filled with the largest choice whose CBs fit L1."""
    spec: MatmulSpec
    arch: ArchFacts
    kt: int
    per_core_m: int
    per_core_n: int
    capacity: int                    # DST tiles in this sync mode and accumulation format
    dst_sync: str
    dst_accum: str
    batch_ct: int
    in0_fmt: str
    in1_fmt: str
    out_fmt: str
    bias_fmt: str | None
    mt: int
    nt: int
    in0_shard_w: int = 0             # K tiles of a block-sharded in0's shard (0: in0 is not block-sharded)

    @property
    def out_sharded(self) -> bool:
        return self.spec.memory.out != Placement.DRAM

    def sharded_out_allows(self, hw: tuple[int, int]) -> bool:
        """TT's validation of a sharded output (matmul_device_operation.cpp @001cea9a): out_subblock_w ==
        per_core_N || out_subblock_h == 1, and the same of out_block, so that the packed tiles land in
        the shard row by row."""
        return not self.out_sharded or hw[1] == self.per_core_n or hw[0] == 1

    def check_out_block(self, ob: tuple[int, int]) -> None:
        for i, (dim, per) in enumerate((("h", self.per_core_m), ("w", self.per_core_n))):
            if per % ob[i]:
                raise PlanError(f"per_core_{'MN'[i]} % out_block_{dim} == 0",
                                f"out_block_{dim} = {ob[i]} does not divide per_core_{'MN'[i]} = {per}",
                                self.spec.span("block.out_block"), _nearest(_divisors(per), ob[i]))
        if not self.sharded_out_allows(ob):
            raise PlanError("sharded output: out_block_w == per_core_N || out_block_h == 1",
                            f"out_block {_fmt_pair(ob)} with a sharded output and per_core_N = {self.per_core_n}",
                            self.spec.span("block.out_block"), f"{ob[0]} x {self.per_core_n}, 1 x {ob[1]}")

    def padding_violation(self, ob: tuple[int, int]) -> tuple[str, str, str] | None:
        """TT-Metal's _padding readers skip rows/columns past the tensor only in a core's last out block
        (reader_bmm_tile_layout_in0_sender_padding.cpp: `bh < num_blocks_h_dim - 1 || h < last_block_h`;
        in1: `bw < num_blocks_w_dim - 1 || w < last_block_w`): every earlier block is read whole. So the
        last core's tiles must reach into its last out block, or its readers would read past the tensor."""
        for i, (dim, tiles, per) in enumerate((("h", self.mt, self.per_core_m), ("w", self.nt, self.per_core_n))):
            last = tiles % per or per
            if last <= per - ob[i]:
                mn = "MN"[i]
                return (f"{mn}t % per_core_{mn} > per_core_{mn} - out_block_{dim} (TT-Metal's readers pad only a "
                        f"core's last out block)",
                        f"the last core along {'yx'[i]} holds {last} of per_core_{mn} = {per} tiles, so out_block_{dim} "
                        f"= {ob[i]} leaves it {(per - last) // ob[i]} out block(s) entirely past the tensor, which "
                        f"TT-Metal's _padding readers would read in full",
                        _nearest([d for d in _divisors(per) if last > per - d], ob[i]))
        return None

    def check_padding(self, ob: tuple[int, int]) -> None:
        bad = self.padding_violation(ob)
        if bad:
            raise PlanError(bad[0], bad[1], self.spec.span("block.out_block"), bad[2])

    def check_in0_block_w(self, w: int) -> None:
        if self.kt % w:
            raise PlanError("Kt % in0_block_w == 0", f"in0_block_w = {w} does not divide Kt = {self.kt}",
                            self.spec.span("block.in0_block_w"), _nearest(_divisors(self.kt), w))
        if self.in0_shard_w and self.in0_shard_w % w:
            raise PlanError("shard_shape[1] / tile_width % in0_block_w == 0 (sharded in0)",
                            f"in0_block_w = {w} does not divide the in0 shard width of {self.in0_shard_w} tiles",
                            self.spec.span("block.in0_block_w"), _nearest(_divisors(self.in0_shard_w), w))

    def w_allowed(self, w: int) -> bool:
        return not self.in0_shard_w or self.in0_shard_w % w == 0

    def subblock_for(self, ob: tuple[int, int]) -> tuple[int, int] | None:
        for h, w in SUBBLOCK_HW_CHOICES:
            if ob[0] % h == 0 and ob[1] % w == 0 and h * w <= self.capacity and self.sharded_out_allows((h, w)):
                return h, w
        return None

    def check_subblock(self, sb: tuple[int, int], ob: tuple[int, int]) -> None:
        for i, dim in enumerate("hw"):
            if ob[i] % sb[i]:
                raise PlanError(f"out_block_{dim} % out_subblock_{dim} == 0",
                                f"out_subblock_{dim} = {sb[i]} does not divide out_block_{dim} = {ob[i]}",
                                self.spec.span("block.out_subblock"), _nearest(_divisors(ob[i]), sb[i]))
        if sb[0] * sb[1] > self.capacity:
            legal = [f"{h} x {w}" for h, w in SUBBLOCK_HW_CHOICES
                     if ob[0] % h == 0 and ob[1] % w == 0 and h * w <= self.capacity][:4]
            raise PlanError("out_subblock_h * out_subblock_w <= get_dest_reg_count",
                            f"out_subblock {_fmt_pair(sb)} = {sb[0] * sb[1]} tiles, but DST holds {self.capacity} "
                            f"tiles in {self.dst_sync} with {self.dst_accum} accumulation",
                            self.spec.span("block.out_subblock"), ", ".join(legal) or "none")
        if not self.sharded_out_allows(sb):
            raise PlanError("sharded output: out_subblock_w == per_core_N || out_subblock_h == 1",
                            f"out_subblock {_fmt_pair(sb)} with a sharded output and per_core_N = {self.per_core_n}",
                            self.spec.span("block.out_subblock"), f"1 x {sb[1]}")

    def cbs_for(self, ob: tuple[int, int], w: int, sb: tuple[int, int]):
        nb = self.kt // w
        l1acc, _ = _policy(self.spec, self.spec.compute, nb)
        pf, _ = _partials_format(self.spec.compute, l1acc, self.out_fmt)
        out_blocks = self.batch_ct * (self.per_core_m // ob[0]) * (self.per_core_n // ob[1])
        return _cb_table(self.spec, self.arch, self.in0_fmt, self.in1_fmt, self.out_fmt, self.bias_fmt, pf, ob, w,
                         nb, self.batch_ct, ob[1] // sb[1], out_blocks, (self.per_core_m, self.per_core_n),
                         self.in0_shard_w)

    def fits(self, ob: tuple[int, int], w: int, sb: tuple[int, int]) -> bool:
        _, regions, _ = self.cbs_for(ob, w, sb)
        return sum(r.bytes for r in regions) <= self.arch.usable_cb_bytes

    def choose(self, choices: list[str]) -> tuple[tuple[int, int], int, tuple[int, int]]:
        """(out_block, in0_block_w, out_subblock): the first candidate whose CBs fit, largest out block
        first; if none fits, the first legal one, whose L1 overflow plan() then reports."""
        block = self.spec.block
        given_ob, given_w, given_sb = block.out_block, block.in0_block_w, block.out_subblock
        if given_ob is not None:
            self.check_out_block(given_ob)
            self.check_padding(given_ob)
        if given_w is not None:
            self.check_in0_block_w(given_w)

        ob_candidates = [given_ob] if given_ob else sorted(
            ((h, w) for h in _divisors(self.per_core_m) for w in _divisors(self.per_core_n)),
            key=lambda p: (-(p[0] * p[1]), -p[1]))
        ob_candidates = [ob for ob in ob_candidates if given_ob or (self.padding_violation(ob) is None
                                                                     and self.sharded_out_allows(ob)
                                                                     and (self.spec.memory.in0 != Placement.L1_HEIGHT_SHARDED
                                                                          or ob[0] == self.per_core_m))]
        w_candidates = [given_w] if given_w else [d for d in reversed(_divisors(self.kt))
                                                  if d <= AUTO_IN0_BLOCK_W_MAX and self.w_allowed(d)]
        if self.spec.memory.in0 == Placement.L1_HEIGHT_SHARDED and not given_w:
            w_candidates = [self.kt]          # TT: K == in0_block_w == the shard's width
        chosen: tuple[tuple[int, int], int, tuple[int, int]] | None = None
        first_legal: tuple[tuple[int, int], int, tuple[int, int]] | None = None
        for ob in ob_candidates:
            sb = given_sb or self.subblock_for(ob)
            if sb is None:
                continue
            if given_sb:
                try:
                    self.check_subblock(sb, ob)
                except PlanError:
                    if given_ob:
                        raise
                    continue
            for w in w_candidates:
                first_legal = first_legal or (ob, w, sb)
                if self.fits(ob, w, sb):
                    chosen = (ob, w, sb)
                    break
            if chosen:
                break
        if chosen is None:
            if first_legal is None:
                if given_sb:
                    self.check_subblock(given_sb, given_ob or (self.per_core_m, self.per_core_n))
                raise PlanError("a subblock from SUBBLOCK_HW_CHOICES fits the out block and DST",
                                "no out_block has a legal subblock", self.spec.span("block"))
            chosen = first_legal  # plan() reports its L1 overflow with suggestions
        (obh, obw), in0_block_w, (sbh, sbw) = chosen
        if given_ob is None:
            choices.append(f"out_block auto -> {obh} x {obw}: the largest block dividing per_core "
                           f"{self.per_core_m} x {self.per_core_n} whose CBs fit L1")
        if given_w is None and self.spec.memory.in0 == Placement.L1_HEIGHT_SHARDED:
            choices.append(f"in0_block_w auto -> {in0_block_w} = Kt: a height-sharded in0 is one K-block "
                           f"(TT-Metal: K == in0_block_w == the shard's width)")
        elif given_w is None:
            choices.append(f"in0_block_w auto -> {in0_block_w}: the largest divisor of Kt = {self.kt} up to "
                           f"{AUTO_IN0_BLOCK_W_MAX}" + (f" dividing the in0 shard's {self.in0_shard_w} tiles"
                                                        if self.in0_shard_w else "") + " whose CBs fit L1")
        if given_sb is None:
            choices.append(f"out_subblock auto -> {sbh} x {sbw}: first of TT-Metal's SUBBLOCK_HW_CHOICES (h, w) "
                           f"dividing out_block {obh} x {obw} within DST capacity {self.capacity}")
        else:
            self.check_subblock(given_sb, (obh, obw))
        return chosen


def _check_untilized_output(spec: MatmulSpec, out_fmt: str, partials_fmt: str, partials_reason: str) -> None:
    if spec.untilize_out and out_fmt.startswith("Bfp"):
        raise PlanError("row-major (untilized) output needs a non-block-float dtype",
                        f"untilize_out with out = {spec.dtype_out}: block-float formats exist only as tiles",
                        spec.span("untilize_out"), "dtype out = bfloat16 or float32")

    # The bias stage packs into the partials CB when the output is untilized, after the kernel has
    # set the packer to the output format (bmm_large_block_zm_fused_bias_activation.cpp:
    # pack_reconfig_data_format(out) then pack_tile(i, untilize_mode_out = mm_partials)): the two
    # formats must agree, or the packer writes output-format tiles into partials-sized pages.
    # Found by `kgen fuzz` (seed 1, case 47) through the emulator's format-mismatch diagnosis.
    if spec.untilize_out and spec.fuse_bias and partials_fmt != out_fmt:
        raise PlanError("with a fused bias, untilize_out needs the partials in the output format",
                        f"untilize_out with a fused bias packs the biased result into the partials CB "
                        f"({partials_fmt}: {partials_reason}) with the packer set to the output format {out_fmt}",
                        spec.span("untilize_out"),
                        "untilize_out = false, dtype out = the partials' dtype, or a compute config whose "
                        "partials format is the output format (see `kgen check`: partials)")


def _check_memory(spec: MatmulSpec, mt: int, nt: int, kt: int, per_core_m: int, per_core_n: int,
                  n_blocks: int) -> int:
    """TT's validation of sharded operands for the 2D multicast program config
    (matmul_device_operation.cpp @001cea9a) and kgen's own limits; returns the K tiles of a
    block-sharded in0's shard (0 when in0 is not block-sharded). Batch fusion, which TT requires for a
    sharded in0, is always on in kgen."""
    mem = spec.memory
    if not mem.sharded:
        if mem.orientation is not None:
            raise PlanError("a shard orientation needs a sharded tensor", "memory.orientation is given but no tensor "
                            "is sharded", spec.span("memory.orientation"), "leave memory.orientation out")
        return 0
    if not accepts(dataflow_of(spec.dataflow), mem):
        raise PlanError("L1 placements are the 2D multicast factory's",
                        f"memory {{ in0 = {mem.in0}  in1 = {mem.in1}  out = {mem.out} }} with dataflow = "
                        f"{spec.dataflow}: kgen places tensors in L1 as the 2D multicast factory does",
                        spec.span("memory"), ", ".join(f"dataflow = {d.name}" for d in REGISTRY if accepts(d, mem)))
    if mem.orientation is not None and mem.in0 != Placement.L1_BLOCK_SHARDED:
        raise PlanError("memory.orientation is a block-sharded in0's",
                        f"memory.orientation = {mem.orientation} with in0 = {mem.in0}: only a block-sharded in0 takes "
                        f"an orientation (the output's shards follow the grid with work, as TT-Metal computes them)",
                        spec.span("memory.orientation"), "leave memory.orientation out")
    required = "col_major" if spec.transpose_mcast else "row_major"
    if mem.in0 == Placement.L1_BLOCK_SHARDED and mem.orientation not in (None, required):
        raise PlanError("BLOCK_SHARDED in0: COL_MAJOR orientation with transpose_mcast, else ROW_MAJOR",
                        f"memory.orientation = {mem.orientation} with transpose_mcast = "
                        f"{str(spec.transpose_mcast).lower()}: in0's shards must be laid {required.upper()} so that "
                        f"each core's K slice lies along its in0 multicast", spec.span("memory.orientation"),
                        f"memory.orientation = {required}")
    if mem.in0 == Placement.L1_HEIGHT_SHARDED and spec.transpose_mcast:
        raise PlanError("HEIGHT_SHARDED in0 needs !transpose_mcast",
                        "in0 = l1_height_sharded with transpose_mcast = true (TT-Metal: \"Transpose MCAST not "
                        "supported with HEIGHT_SHARDED layout\")", spec.span("memory.in0"),
                        "transpose_mcast = false, or in0 = l1_block_sharded")
    if mem.in0 == Placement.L1_HEIGHT_SHARDED and spec.block.in0_block_w not in (None, kt):
        raise PlanError("HEIGHT_SHARDED in0: K == in0_block_w == shard width",
                        f"in0 = l1_height_sharded holds all Kt = {kt} tiles of a row per core and TT-Metal reads "
                        f"them as one K-block, but in0_block_w = {spec.block.in0_block_w}",
                        spec.span("block.in0_block_w"), f"in0_block_w = {kt}")
    if spec.untilize_out and mem.out != Placement.DRAM:
        raise PlanError("a sharded output is tiles", "untilize_out with out = l1_block_sharded: the output CB is "
                        "the shard itself, packed as tiles", spec.span("untilize_out"), "untilize_out = false")
    # kgen's limits (not TT's): whole shards, one per core with work
    sharded = [t for t, where in (("in0", mem.in0), ("out", mem.out)) if where != Placement.DRAM]
    if sharded and (spec.m % TILE_HW or spec.n % TILE_HW or spec.k % TILE_HW or mt % per_core_m or nt % per_core_n):
        raise PlanError("kgen: sharded tensors in whole shards",
                        f"{' and '.join(sharded)} sharded with a shape short of whole tiles or per_core not dividing "
                        f"Mt x Nt = {mt} x {nt}: kgen shards only evenly divided tensors",
                        spec.span("memory"), "tile-multiple M, N, K and per_core dividing Mt and Nt")
    if mem.in0 == Placement.L1_HEIGHT_SHARDED and spec.block.out_block not in (None,) and \
            spec.block.out_block[0] != per_core_m:
        raise PlanError("kgen: a height-sharded in0 needs out_block_h == per_core_M",
                        f"in0 = l1_height_sharded with out_block_h = {spec.block.out_block[0]} < per_core_M = "
                        f"{per_core_m}: TT-Metal's c_0, globally allocated on the shard, holds out_block_h x K tiles, "
                        f"so the shard's later rows would never reach the compute kernel",
                        spec.span("block.out_block"), f"out_block = {per_core_m} x {spec.block.out_block[1]}")
    if mem.in0 == Placement.L1_BLOCK_SHARDED:
        if kt % n_blocks:
            raise PlanError("kgen: in0's shard grid is the grid with work",
                            f"in0 = l1_block_sharded splits Kt = {kt} over the {n_blocks} cores along each in0 "
                            f"multicast, which does not divide it", spec.span("memory.in0"),
                            _nearest([d for d in _divisors(kt) if d <= 64], n_blocks))
        return kt // n_blocks
    return 0


def _check_transpose_mcast(spec: MatmulSpec) -> None:
    """transpose_mcast is a field of the 2D multicast program config only
    (MatmulMultiCoreReuseMultiCastProgramConfig, matmul_program_config_types.hpp)."""
    if spec.transpose_mcast and not dataflow_of(spec.dataflow).transpose_mcast:
        takers = ", ".join(d.name for d in REGISTRY if d.transpose_mcast)
        raise PlanError("transpose_mcast belongs to the 2D multicast factory",
                        f"transpose_mcast = true with dataflow = {spec.dataflow}: only {takers} multicasts in0 "
                        f"and in1, so only it can swap their directions", spec.span("transpose_mcast"),
                        f"dataflow = {takers}, or transpose_mcast = false")


def _check_untilized_padding(spec: MatmulSpec, mt: int, nt: int, per_core_m: int, per_core_n: int) -> None:
    if spec.untilize_out and (mt % per_core_m or nt % per_core_n or spec.m % TILE_HW or spec.n % TILE_HW
                              or spec.k % TILE_HW):
        raise PlanError("untilize_out needs tile-multiple shapes and per_core dividing Mt and Nt",
                        "untilize_out with a padded shape or a padded last block: kgen's row-major writer "
                        "writes whole out blocks (and TT-Metal's 2D multicast writers write tiles only)",
                        spec.span("untilize_out"), "untilize_out = false, or per_core dividing Mt x Nt")


def _warnings(p: Plan) -> tuple[str, ...]:
    """What `kgen check` warns of in a legal plan; each warning cites its source."""
    c, spec = p.compute, p.spec
    warnings: list[str] = []
    if p.arch.behaviour.hifi4_fp32_dest_accuracy_bug and c.fp32_dest_acc and c.math_fidelity == "HiFi4":
        warnings.append("Wormhole + HiFi4 + fp32 dest accumulation: output accuracy can be worse with HiFi4 "
                        "than HiFi3 due to a hardware bug; prefer HiFi3 (TT-Metal verify_numerical_configuration, "
                        "tt-metal#38306)")
    if p.l1_acc_enabled and c.fp32_dest_acc:
        warnings.append("packer L1 accumulation with fp32 dest accumulation: known hardware limitation "
                        "tt-metal#28800 (format conversion ordering around the L1-acc adder); TT-Metal's "
                        "DRAM-sharded factory turns L1 acc off here (PR #38066), the 2D factory kgen mirrors "
                        "does not")
    if p.policy == POLICY_SPILL and not c.fp32_dest_acc:
        warnings.append(f"spill/reload without fp32 dest: partials round-trip through {p.partials_format} "
                        f"{p.num_blocks - 1} time(s); precision loss grows with K (tt-metal#5729, #8449)")
    warnings += factory_departures(c, p.dst_sync, p.dst_capacity)
    if "dtype.bias" in spec.spans and not spec.fuse_bias:
        warnings.append(f"dtype bias = {spec.dtype_bias} ({spec.span('dtype.bias')}) has no effect: there is no "
                        f"bias without fuse {{ bias = true }}")
    if p.grid != p.grid_requested:
        warnings.append(f"only {p.grid[0]} x {p.grid[1]} of the {_fmt_pair(p.grid_requested)} grid have work "
                        f"(per_core {p.per_core_m} x {p.per_core_n} over Mt x Nt = {p.mt} x {p.nt})")
    return tuple(warnings)


def factory_departures(c: ComputeConfig, dst_sync: str, capacity: int) -> tuple[str, ...]:
    """The modes kgen emits as asked that TT-Metal's 2D factory would not compile. `kgen check` warns
    of them; port-check says that TT-Metal's kernel ran in them."""
    if c.dst_full_sync:
        return ("dst_full_sync = true: TT-Metal's 2D factory drops dst_full_sync_en and compiles SyncHalf; "
                f"kgen emits {dst_sync} as asked and limits subblocks to its {capacity}-tile DST",)
    return ()


def _policy(spec: MatmulSpec, c: ComputeConfig, num_blocks: int) -> tuple[bool, str]:
    """packer_l1_acc_en = packer_l1_acc && ((bias && num_blocks > 1) || num_blocks > 2) (2D factory, and the
    1D factory's mcast_in1 path); packer_l1_acc && num_blocks > 1 (the 1D factory's mcast_in0 path,
    process_mcast_in0_program_and_create_override_variables)."""
    threshold, why_threshold = dataflow_of(spec.dataflow).l1_acc_rule or (
        (1, "TT-Metal turns L1 accumulation on only when num_blocks > 1 with a fused bias "
            "(the last block stays in the partials for the bias add)") if spec.fuse_bias else
        (2, "TT-Metal turns L1 accumulation on only when num_blocks > 2, or > 1 with a fused bias "
            "(the last K-block is always a spill/reload, so 2 blocks gain nothing)"))
    fallback = "spill/reload" if num_blocks > 1 else "no spill: one K-block accumulates in DST"
    if not c.packer_l1_acc:
        if num_blocks > 1:
            return False, f"packer_l1_acc = false -> spill/reload: each of the {num_blocks} K-blocks after the " \
                          "first reloads the partials into DST"
        return False, "packer_l1_acc = false, num_blocks = 1 -> no spill: one K-block accumulates in DST"
    if num_blocks > threshold:
        extra = ("; the last K-block packs into the partials with L1 acc and the bias stage consumes them"
                 if spec.fuse_bias else
                 "; with 2 K-blocks the packer never accumulates (block 0 packs the partials with L1 acc off, "
                 "the last block reloads them): TT-Metal's kernel under its 1D mcast_in0 factory"
                 if num_blocks == 2 else
                 "; blocks 0..n-2 accumulate in L1, the last block reloads once and packs to out with L1 acc off")
        return True, f"packer_l1_acc requested and num_blocks = {num_blocks} > {threshold} -> packer L1 accumulation" + extra
    return False, f"packer_l1_acc requested, but num_blocks = {num_blocks}: {why_threshold} -> {fallback}"


def _partials_format(c: ComputeConfig, l1acc: bool, out_fmt: str) -> tuple[str, str]:
    """interm0_data_format (2D factory): Float32 with fp32 dest, else Float16_b with L1 acc, else out."""
    if c.fp32_dest_acc:
        return "Float32", "fp32_dest_acc = true -> partials in Float32"
    if l1acc:
        return "Float16_b", "packer L1 accumulation without fp32 dest -> partials in Float16_b (L1 acc cannot add into block-float)"
    return out_fmt, f"no fp32 dest and no L1 accumulation -> partials in the output format {out_fmt}"


def _l1_suggestions(kt: int, pm: int, pn: int, ob: tuple[int, int], w: int, sb: tuple[int, int], fits) -> str:
    options: list[str] = []
    for d in reversed(_divisors(kt)):
        if d < w and fits(ob, d, sb):
            options.append(f"in0_block_w = {d}")
            break
    for h in reversed(_divisors(pm)):
        for ww in reversed(_divisors(pn)):
            if h * ww < ob[0] * ob[1] and h % sb[0] == 0 and ww % sb[1] == 0 and fits((h, ww), w, sb):
                options.append(f"out_block = {h} x {ww}")
                break
        if len(options) >= 2:
            break
    return "; ".join(options) or "a smaller per_core block or a larger grid"
