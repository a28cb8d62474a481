"""What the planner produces and what it is planned for: the `Plan` of one matmul, and the interface of
the TT-Metal program factory (`Dataflow`) that lays out its cores, writes its data-movement kernels and
says what TT-Metal's own program of it is, for port-check.
The two read each other (a plan asks its factory for the per-core terms; a factory builds from a plan),
so they share this module; the factories themselves are in kgen/gen/dataflow/."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from random import Random
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.arch import ArchFacts
from kgen.core.types import TILE_HW, Placement
from kgen.gen import activations
from kgen.gen.activations import Activation
from kgen.gen.ir import CircularBuffer, CoreRange, L1Region, SubblockCounts
from kgen.gen.matmul_spec import ComputeConfig, MatmulSpec
from kgen.gen.rules import CB_PARTIALS, CB_PARTIALS_RELOAD_ALIAS, round_up_tiles

if TYPE_CHECKING:
    from kgen.gen.dataflow.tt_program import ExpectedDifference, TtProgram
    from kgen.gen.ir import Kernel, Semaphore
    from kgen.gen.matmul_spec import MemorySpec


@dataclass(frozen=True)
class Layout:
    """The cores of a plan: per-core M and N tiles, the grid of cores with work (x, y), the count
    of N-blocks (cores along N), and the cores holding a width-sharded in0's K slices (0: none)."""

    per_core_m: int
    per_core_n: int
    grid: tuple[int, int]
    n_blocks: int
    in0_shards: int = 0
    # cores with work when fewer than the grid's (a 1D run whose last row is partial; 0: all of them)
    cores: int = 0


@dataclass(frozen=True)
class FuzzLimits:
    """The bounds kgen fuzz keeps every case within (tiles, cores per grid side, tile products)."""

    max_nt: int
    max_kt: int
    max_grid: int
    max_tile_macs: int


@dataclass(frozen=True)
class FuzzLayout:
    """A case a factory that places its own cores draws for kgen fuzz: the shape in tiles, the grid and
    blocking a spec writes, and where in0 and the output live."""

    mt: int
    nt: int
    kt: int
    grid: tuple[int, int]
    per_core: tuple[int, int]
    out_block: tuple[int, int]
    in0_block_w: int
    subblock: tuple[int, int]
    placements: tuple[Placement, Placement]         # in0, out


DRAM_ONLY: Mapping[str, frozenset[Placement]] = MappingProxyType(
    {t: frozenset({Placement.DRAM}) for t in ("in0", "in1", "out")})
# Every tensor interleaved, in DRAM or over the L1 banks: the factories whose readers and writers take a
# TensorAccessor built from each buffer (TensorAccessorArgs(*buffer), its IsDram bit the buffer's), as
# TT-Metal 0.81.1's reuse and 1D multicast factories do
INTERLEAVED: Mapping[str, frozenset[Placement]] = MappingProxyType(
    {t: frozenset({Placement.DRAM, Placement.L1}) for t in ("in0", "in1", "out")})


class Dataflow(ABC):
    """One way of moving the operands to the cores: a TT-Metal program factory (or one mode of it).

    The planner asks it for the layout of the cores and the rules that differ by factory, lowering
    for its data-movement kernels and semaphores, the model for which kernel waits on which, tune for
    the layouts it may search, the grammar for its spelling, and port-check for TT-Metal's own program
    (the `tt_*` members, derived in the factory's tt_*.py beside it). A factory module subclasses it once,
    sets what differs from the defaults below, and is listed once in kgen/gen/dataflow/__init__.py."""

    name: str                        # the spelling in a spec's `dataflow =` line
    # TT-Metal's program factory file it mirrors (ttnn/cpp/ttnn/operations/matmul/device/factory/, 0.81.1)
    factory: str
    label: str                       # the factory as a sentence names it ("TT-Metal's 2D multicast factory")
    placements: Mapping[str, frozenset[Placement]] = DRAM_ONLY    # tensor -> where this factory accepts it
    transpose_mcast: bool = False    # takes the 2D config's transpose_mcast
    # tune: the per_core axis (0 M, 1 N) that must cover all of its tiles (a 1D multicast's shared
    # operand), or None when the cores form the 2D grid of blocks
    shared_axis: int | None = None
    # the model: a receiver kernel role -> the sender role it waits on
    paced_by: Mapping[str, str] = MappingProxyType({})
    is_1d: bool = False              # a 1D multicast: one row-major run of cores, one operand shared
    batched_in1: bool = False        # fuzz and tune draw a batched in1 on it (TT's bcast_batch = false)
    # runs fuse_batch = false: per_core of one batch's Mt, every core looping over the batch (the
    # kernels' B, MtKt, KtNt unless bcast_B, MtNt), with in1 shared (bcast_B = 1) or one per batch
    loops_batch: bool = False
    # in1 and the output in per_core_N-wide shards of which the last may hold fewer real columns (the
    # planner's whole-shard rule then leaves N alone)
    pads_last_n_shard: bool = False
    # c_4 is a buffer of its own and the writer copies the real columns into the output shard (c_7)
    separate_out_shard: bool = False
    compute_defines: tuple[tuple[str, str], ...] = ()      # defines the factory adds to the compute kernel
    # fuzz and tune draw its cases as per_core blocks of a grid (GRID_2D, ONE_D); False: a factory without
    # blocks (the multi-core factory, one output tile at a time), which they do not draw
    draws_blocks: bool = True
    # tune: the factory places its own cores and tensors (tune_memory, tune_per_core, tune_grid)
    places_own_cores: bool = False
    # TT-Metal 0.81.1's dst_full_sync_en (docs/reference/matmul.md §3.3, docs/reference/provenance.md R10,
    # read in the wheel's machine code): every factory turns the compute config into a hardware config
    # (to_compute_hardware_config: double_buffer_dest = !dst_full_sync_en) and the JIT writes DST_SYNC_MODE
    # from it. The 1D builders (create_program_mcast_in0/in1_artifacts) set double_buffer_dest right after
    # the conversion: their kernel compiles SyncHalf whatever is asked.
    full_sync_dropped: bool = False
    # ttnn.matmul's validation (validate_on_program_cache_miss) bounds out_subblock_h x out_subblock_w by
    # get_dest_reg_count with dst_full_sync_en cleared (the half-sync DST) for the reuse, 2D and 1D program
    # configs; the DRAM-sharded config is not checked (its factory picks the subblock itself).
    subblock_bound_half_sync: bool = True
    # The builder keeps the partials out of a sharded output's region (`do_not_inplace_interm0_out_CB`)
    # when per_core != out_block, read in 0.81.1's _ttnncpp.so (docs/reference/provenance.md R9): the 2D
    # builder (create_program_mcast_in0_in1_spec, 0x1234b8e-0x1234ba8) and both 1D builders test it; the
    # reuse config has no out block, and the DRAM-sharded builder shares c_4 and c_5 on formats alone.
    do_not_inplace_interm0_out: bool = False
    # Float32 partials reload straight into DST (UnpackToDestFp32), read in 0.81.1's _ttnncpp.so
    # (docs/reference/provenance.md N8): with fp32_dest_acc_en and Float32 partials every builder ttnn.matmul
    # reaches (2D create_program_mcast_in0_in1_spec, 1D create_program_mcast_in{0,1}_artifacts, reuse
    # MatmulMultiCoreReuseOptimizedProgramFactory::create_program_artifacts, create_program_dram_sharded_spec)
    # gives the partials buffer UnpackMode::UnpackToDest, or, with a fused bias (whose add reads the partials
    # through SrcA), a second buffer over the same L1 with the kernel define MM_PARTIALS_RELOAD_ALIAS; the
    # legacy builders do it by CB index (c_5, or c_7 with MM_PARTIALS_RELOAD_ALIAS_CB = 7). The JIT then
    # writes unpack_dst_format Float32 for that CB (libtt_metal.so get_unpack_dst_formats), so the reload
    # keeps every bit instead of truncating to TF32 in SrcA. No 0.81.1 factory leaves it out.
    partials_unpack_to_dest: bool = True
    # ttnn.matmul's transpose_a / transpose_b (0.81.1): True where kgen reads the transposed tensors inside
    # the factory as TT's reuse, 2D and 1D factories do (swapped tile strides, the compute kernel's in0 tile
    # transpose into c_10 and its IN1_TRANSPOSE_TILE define); else `transpose_refusal` says what TT does.
    transposes_inside: bool = False
    transpose_refusal: str = "kgen does not build this factory's transposed reads"
    # port-check's compute comparison: the legacy TT-Metal compute kernel (the headers' compute folder) in
    # place of kgen's; "" is bmm_large_block_zm_fused_bias_activation.cpp, which every factory but the
    # tile-at-a-time one binds
    reference_compute: str = ""

    def __repr__(self) -> str:
        return f"<dataflow {self.name}>"

    @abstractmethod
    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        """The cores of a plan (appending to `choices` how each auto value was chosen)."""

    @abstractmethod
    def core_m_terms(self, p: Plan) -> dict[str, int]:
        """A core's M-block index as a sum of its coordinates."""

    @abstractmethod
    def core_n_terms(self, p: Plan) -> dict[str, int]:
        """A core's N-block index as a sum of its coordinates."""

    @abstractmethod
    def in0_reader_cores(self, p: Plan) -> int:
        """Cores that read in0 from DRAM."""

    @abstractmethod
    def padding_notes(self, p: Plan) -> tuple[str, ...]:
        """What the factory's cores pad, for `kgen check`."""

    @abstractmethod
    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        """The data-movement kernels and semaphores of the program."""

    def pads_last_m_block(self, m_blocks: int) -> bool:
        """Whether the factory's kernels take a plan of `m_blocks` M-blocks whose last one holds fewer than
        per_core_M rows of tiles (fuzz draws padded M only where they do)."""
        return True

    # one core with an M tail takes it only in one internal H block or with out_block_h dividing Mt (TT's
    # single-Y mcast_in1 sender/writer; blocking.Blocking._single_y_violation)
    single_y_m_tail_rule: bool = False

    def skips_padded_out_blocks(self, axis: int, m_blocks: int) -> bool:
        """Whether TT-Metal's program of this factory runs a last core (along M, axis 0, or N, axis 1) whose
        out blocks past its last tiles lie entirely outside the tensor: its writers stop at that core's
        last_num_blocks_h_dim / last_num_blocks_w_dim and skip the rest (blocking.padding_violation).
        False: TT's writers of that axis have no such arg, so the rule stays."""
        return False

    def cb_depths(self, num_blocks: int, default: int) -> tuple[int, int]:
        """K-blocks the in0 and in1 CBs hold: `default` for both (the 2D factory's double buffering)."""
        return default, default

    def factory_blocking(self, spec: MatmulSpec, per_core_m: int, per_core_n: int, fp32_dest_acc: bool,
                         choices: list[str]) -> tuple[tuple[int, int], tuple[int, int], int] | None:
        """(out_block, out_subblock, per_core_n_compute) for a factory that chooses its own subblock and may
        pad the N a core computes for it; None: the planner chooses, as the 2D factory does."""
        return None

    def tune_memory(self, spec: MatmulSpec, mt: int) -> MemorySpec | None:
        """With `places_own_cores`: the placements tune gives this factory's candidates, None where not tried."""
        raise NotImplementedError(f"{self.name} does not place its own cores")

    def tune_per_core(self, spec: MatmulSpec, mt: int, nt: int) -> tuple[int, int]:
        """With `places_own_cores`: the one per_core the factory takes."""
        raise NotImplementedError(f"{self.name} does not place its own cores")

    def tune_grid(self, spec: MatmulSpec) -> tuple[int, int]:
        """With `places_own_cores`: the grid a candidate names."""
        raise NotImplementedError(f"{self.name} does not place its own cores")

    def fuzz_layout(self, rng: Random, arch: str, fp32_dest_acc: bool, limits: FuzzLimits) -> FuzzLayout:
        """For a factory that takes no DRAM-interleaved tensor: one case of its own for kgen fuzz (the
        others are drawn by fuzz's 2D and 1D drawers from their placements and layouts)."""
        raise NotImplementedError(f"{self.name} is drawn by kgen fuzz's own drawers")

    def tt_unsupported(self, p: Plan, manifest: Mapping[str, Any]) -> str | None:
        """Why port-check cannot run TT-Metal's program of this factory on `p` (built to `manifest`), None
        when it can."""
        return f"dataflow {self.name}: kgen does not reproduce TT-Metal's {self.label} factory's readers/writers"

    def tt_program(self, p: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int]) -> TtProgram:
        """TT-Metal's program of this factory on `p`: TT's kernels in the places of kgen's, with the args the
        factory gives them (`noc`: the NoC offsets of a logical worker core on the machine that runs it).
        Raises DataflowSwapError where `tt_unsupported` gives a reason."""
        # imported when called: loading the dataflow package loads the factories, which import this module
        from kgen.gen.dataflow.tt_program import DataflowSwapError
        raise DataflowSwapError(self.tt_unsupported(p, manifest) or f"dataflow {self.name}: no TT-Metal program")

    def tt_expected_differences(self, p: Plan) -> tuple[ExpectedDifference, ...]:
        """Where TT-Metal's program counts a data-movement op differently from kgen's by design, when
        port-check runs it: (op, TT's count minus kgen's, why)."""
        return ()

    def compute_kernels(self, p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...] | None:
        """The factory's own compute kernel(s), where it binds another than the large-block one kgen lowers
        (kgen/gen/lower.py); None: that one."""
        return None

    def fixed_in0_block_w(self, kt: int) -> int | None:
        """The in0_block_w the factory's compute kernel implies, where it fixes one (auto takes it); None:
        the planner chooses."""
        return None

    def factory_cbs(self, cbs: tuple[CircularBuffer, ...]) -> tuple[CircularBuffer, ...]:
        """The CB table as the factory sizes it, from the large-block table (blocking.cb_table): that one."""
        return cbs


def partials_unpack_to_dest_cb(dataflow: Dataflow, fp32_dest_acc: bool, partials_format: str,
                               fuse_bias: bool) -> int | None:
    """The CB index TT-Metal's factory gives UnpackToDestFp32 (Dataflow.partials_unpack_to_dest), None when
    none: with fp32_dest_acc_en and Float32 partials, the partials CB (c_5), or with a fused bias, whose
    add reads the partials through SrcA, the reload's alias over them (CB_PARTIALS_RELOAD_ALIAS)."""
    if not (dataflow.partials_unpack_to_dest and fp32_dest_acc and partials_format == "Float32"):
        return None
    return CB_PARTIALS_RELOAD_ALIAS if fuse_bias else CB_PARTIALS


@dataclass(frozen=True)
class Plan(SubblockCounts):
    spec: MatmulSpec
    dataflow: Dataflow                   # the factory of the spec's dataflow: it owns the per-core terms below
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
    in0_shards: int = 0                  # cores holding a width-sharded in0's K slices (0: not width-sharded)
    # the N tiles a core computes: per_core_n, or more where the factory pads them for a wider subblock
    # (the DRAM-sharded factory's per_core_N_compute; its per_core_N_in1_sender is per_core_n)
    per_core_n_compute: int = 0
    # `dataflow = auto`: which of TT's rules chose each field (or that the spec fixed it); else empty
    tt_choice: tuple[str, ...] = ()
    # the cores with work when fewer than the grid's: a 1D run whose last row is partial, `grid` its
    # bounding box, whose other cores only receive the multicasts (0: every core of the grid)
    cores_with_work: int = 0

    @property
    def padded_lanes(self) -> int:
        """Output columns a core computes past per_core_n: the last in1 subblock's lanes no in1 tile backs."""
        return max(0, self.per_core_n_compute - self.per_core_n)

    @property
    def last_subblock_w_valid(self) -> int:
        """Lanes of the last in1 subblock backed by in1 tiles (the DRAM-sharded factory's
        last_subblock_w_valid = out_subblock_w - (per_core_N_compute - per_core_N_in1_sender))."""
        return self.out_subblock_w - self.padded_lanes

    @property
    def in1_block_w(self) -> int:
        """Tiles of one in1 row in c_1: the out block's width less the padded lanes (TT's compute arg
        in1_block_w, the row stride of its in1 index)."""
        return self.out_block_w - self.padded_lanes

    @property
    def factory_departures(self) -> tuple[str, ...]:
        """Where this plan runs a kernel as ttnn.matmul 0.81.1 would not: in a sync mode its factory does
        not compile, or with a subblock its validation refuses (`factory_departures`)."""
        return factory_departures(self)

    # derived quantities of the compute kernel (docs/reference/matmul.md §1.1; the subblock counts are
    # SubblockCounts')
    @property
    def in0_block_tiles(self) -> int:
        return self.out_block_h * self.in0_block_w

    @property
    def in1_block_tiles(self) -> int:
        return self.in1_block_w * self.in0_block_w

    @property
    def fuse_bias(self) -> bool:
        return self.spec.fuse_bias

    @property
    def activation(self) -> Activation:
        return activations.planned(self.spec.activation)

    @property
    def pack_relu(self) -> bool:
        return self.activation.packer_relu

    @property
    def sfpu_activation(self) -> Activation | None:
        """The activation bmm_fused_activation.hpp applies on the pack thread, if any."""
        act = self.activation
        return act if act.sfpu else None

    @property
    def untilize_out(self) -> bool:
        return self.spec.untilize_out

    @property
    def num_cores(self) -> int:
        return self.cores_with_work or self.grid[0] * self.grid[1]

    @property
    def all_cores(self) -> CoreRange:
        """The cores with work: the grid, or the first num_cores of it in row-major order."""
        return CoreRange(0, 0, self.grid[0] - 1, self.grid[1] - 1, self.cores_with_work)

    @property
    def is_1d(self) -> bool:
        return self.dataflow.is_1d

    @property
    def batched_in1(self) -> bool:
        """in1 holds one K x N matrix per batch: the kernels loop over the batch (batch_ct = B, Mt per batch)."""
        return self.batch_ct > 1 and not self.spec.broadcast_in1

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
        if self.in0_shards:
            return self.kt // self.in0_shards
        return self.kt // self.n_blocks if self.memory.in0 == Placement.L1_BLOCK_SHARDED else (
            self.kt if self.memory.in0 == Placement.L1_HEIGHT_SHARDED else 0)

    @property
    def shard_specs(self) -> dict[str, dict]:
        """ttnn ShardSpecs of the sharded tensors: core grid (x0, y0, x1, y1), shard shape in elements
        (height, width) and orientation. in0 block-sharded: per_core_M x Kt / (cores along N) on the grid
        with work, COL_MAJOR under transpose_mcast (its width along y); height-sharded: per_core_M x K on
        the in0 senders' column (2D) or on the compute grid (1D, shard i on core i); the output:
        per_core_M x per_core_N on the grid with work (block-sharded) or on the 1D compute grid (height)."""
        out: dict[str, dict] = {}
        orientation = "COL_MAJOR" if self.transpose_mcast else "ROW_MAJOR"
        grid = (0, 0, self.grid[0] - 1, self.grid[1] - 1)
        # the 1D factory's compute grid: its core i (row-major) holds M-block i, as shard i of a height-sharded
        # tensor on that grid (ROW_MAJOR)
        run = (0, 0, self.grid_requested[0] - 1, self.grid_requested[1] - 1)
        if self.memory.in0 == Placement.L1_BLOCK_SHARDED:
            out["in0"] = {"memory_layout": "BLOCK_SHARDED", "grid": grid, "orientation": orientation,
                          "shape": (self.per_core_m * TILE_HW, self.in0_shard_w * TILE_HW)}
        elif self.memory.in0 == Placement.L1_HEIGHT_SHARDED:
            # the 2D factory: on the in0 senders' column; the 1D (mcast_in1): shard i on core i of its grid
            out["in0"] = {"memory_layout": "HEIGHT_SHARDED", "grid": run if self.is_1d else (0, 0, 0, self.m_blocks - 1),
                          "orientation": "ROW_MAJOR", "shape": (self.per_core_m * TILE_HW, self.kt * TILE_HW)}
        if self.memory.out == Placement.L1_HEIGHT_SHARDED:
            out["out"] = {"memory_layout": "HEIGHT_SHARDED", "grid": run, "orientation": "ROW_MAJOR",
                          "shape": (self.per_core_m * TILE_HW, self.per_core_n * TILE_HW)}
        if self.memory.out == Placement.L1_BLOCK_SHARDED:
            out["out"] = {"memory_layout": "BLOCK_SHARDED", "grid": grid, "orientation": orientation,
                          "shape": (self.per_core_m * TILE_HW, self.per_core_n * TILE_HW)}
        # width-sharded (the DRAM-sharded factory): all of M per shard, row-major over the workers;
        # in0's in0_shards shards on the first in0_shards of them; the 1D in0 multicast: on its whole compute
        # grid, shard i on core i (row-major), the output's shard i on core i too (N-block i)
        if self.memory.in0 == Placement.L1_WIDTH_SHARDED:
            out["in0"] = {"memory_layout": "WIDTH_SHARDED", "grid": run if self.is_1d else grid,
                          "orientation": "ROW_MAJOR", "shape": (self.mt * TILE_HW, self.in0_shard_w * TILE_HW)}
        if self.memory.in1 == Placement.DRAM_WIDTH_SHARDED:
            # one per_core_N-wide shard of all K per DRAM bank, bank i for worker i
            out["in1"] = {"memory_layout": "WIDTH_SHARDED", "buffer_type": "DRAM", "grid": (0, 0, self.num_cores - 1, 0),
                          "orientation": "ROW_MAJOR", "shape": (self.kt * TILE_HW, self.per_core_n * TILE_HW)}
        if self.memory.out == Placement.L1_WIDTH_SHARDED:
            out["out"] = {"memory_layout": "WIDTH_SHARDED", "grid": run if self.is_1d else grid, "orientation": "ROW_MAJOR",
                          "shape": (self.mt * TILE_HW, self.per_core_n * TILE_HW)}
        return out

    @property
    def transpose_mcast(self) -> bool:
        return self.spec.transpose_mcast

    @property
    def transpose_a(self) -> bool:
        """in0 is stored K x M: its readers step M by one tile and K by Mt, the compute kernel transposes
        each tile into c_10 (TT's in0_transpose_tile)."""
        return self.spec.transpose_a

    @property
    def transpose_b(self) -> bool:
        """in1 is stored N x K: its readers step K by one tile and N by Kt, matmul_block transposes each
        tile (TT's IN1_TRANSPOSE_TILE)."""
        return self.spec.transpose_b

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

    @property
    def reload_cb(self) -> int:
        """The CB index the K-block reload copies the partials through: their UnpackToDestFp32 alias where
        the factory makes one (a fused bias), else the partials CB itself (TT's mm_partials_reload_cb_id)."""
        return next((c.index for c in self.cbs if c.index_define), CB_PARTIALS)

    @property
    def reload_to_dest(self) -> bool:
        """The K-block reload unpacks the Float32 partials straight into DST, losslessly (UnpackToDestFp32
        on the CB it copies through), instead of through SrcA's TF32."""
        return self.cb(self.reload_cb).unpack_to_dest

    @property
    def untilize_copy_to_dest(self) -> bool:
        """untilize_out's copy of the result out of the partials CB goes straight into DST: the partials
        CB itself carries UnpackToDestFp32 (not its alias: with a bias it is read through SrcA)."""
        return self.cb(CB_PARTIALS).unpack_to_dest

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



def factory_departures(p: Plan) -> tuple[str, ...]:
    """Where kgen emits, as the spec asks, what ttnn.matmul 0.81.1 would not run: SyncFull on a factory
    that compiles SyncHalf whatever is asked, or a subblock larger than the half-sync DST TT's validation
    bounds it by under dst_full_sync = true. `kgen check` warns of them; port-check says that TT-Metal's
    kernel ran so. Without dst_full_sync there is none: kgen's DST rule is then TT's."""
    c = p.compute
    if not c.dst_full_sync:
        return ()
    df = p.dataflow
    name = df.label
    out = []
    if df.full_sync_dropped:
        out.append(f"dst_full_sync = true: TT-Metal's {name} factory compiles SyncHalf whatever is asked (its "
                   f"builders set double_buffer_dest in the compute kernel's hardware config); kgen emits "
                   f"{p.dst_sync} as asked and limits subblocks to its {p.dst_capacity}-tile DST")
    half = p.arch.dst_tiles(False, c.fp32_dest_acc)
    if df.subblock_bound_half_sync and p.out_subblock_tiles > half:
        compiled = ("" if df.full_sync_dropped
                    else f" (TT-Metal's {name} factory itself compiles SyncFull)")
        out.append(f"dst_full_sync = true with out_subblock {p.out_subblock_h} x {p.out_subblock_w} = "
                   f"{p.out_subblock_tiles} tiles: ttnn.matmul's validation bounds a subblock by the DST with "
                   f"dst_full_sync_en cleared, {half} tiles with {p.dst_accum_format} accumulation, and would "
                   f"refuse this program config{compiled}; kgen emits it as asked within its "
                   f"{p.dst_capacity}-tile {p.dst_sync} DST")
    return tuple(out)


