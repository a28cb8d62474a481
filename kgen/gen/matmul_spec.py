"""What a resolved spec is: `MatmulSpec` and its groups, the values the parser (`kgen.gen.spec`)
hands to the planner and the factories. Frozen dataclasses that keep the source spans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from kgen.core.errors import Span
from kgen.core.types import Placement


@dataclass(frozen=True)
class ComputeConfig:
    """TTNN ComputeKernelConfig fields (compute_kernel_config.hpp). As in ttnn, a compute config the
    spec gives (a preset, an inline block, or both) is passed whole: a field it leaves out takes the
    ComputeKernelConfig struct's default (configs/compute/ttnn_default.kspec, DEFAULT_COMPUTE). A
    matmul with no compute line and no compute.* key gets what ttnn.matmul fills in when it is given
    no config (kgen.gen.ttnn_defaults.matmul_default_compute). `sources` says, per field, where its
    value came from (`kgen check` prints it); it takes no part in equality."""

    math_fidelity: str
    fp32_dest_acc: bool
    packer_l1_acc: bool
    math_approx: bool
    dst_full_sync: bool
    preset: str
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class BlockSpec:
    """Blocking in tiles; None means `auto` (the planner chooses)."""

    in0_block_w: int | None = None
    out_subblock: tuple[int, int] | None = None   # h x w
    per_core: tuple[int, int] | None = None       # M x N
    out_block: tuple[int, int] | None = None      # h x w


# Where each tensor lives (ttnn MemoryConfig): interleaved in DRAM, or in L1, as the 2D multicast
# factory takes them (matmul_multicore_reuse_mcast_2d_program_factory.cpp; its validation in
# matmul_device_operation.cpp): each tensor interleaved in DRAM or in L1 (the same readers and writers,
# their TensorAccessorArgs saying which), in0 block- or height-sharded, the output block-sharded; the
# DRAM-sharded factory's in0 and output width-sharded in L1 and in1 width-sharded over the DRAM banks;
# the 1D in1-multicast factory's in0 and output height-sharded in L1.
MEMORY_IN0 = (Placement.DRAM, Placement.L1, Placement.L1_BLOCK_SHARDED, Placement.L1_HEIGHT_SHARDED,
              Placement.L1_WIDTH_SHARDED)
MEMORY_IN1 = (Placement.DRAM, Placement.L1, Placement.DRAM_WIDTH_SHARDED)
MEMORY_OUT = (Placement.DRAM, Placement.L1, Placement.L1_BLOCK_SHARDED, Placement.L1_WIDTH_SHARDED,
              Placement.L1_HEIGHT_SHARDED)
SHARD_ORIENTATIONS = ("row_major", "col_major")


@dataclass(frozen=True)
class ShardGiven:
    """A shard spec the spec fixes, as ttnn.ShardSpec gives it: the shard shape in elements (height,
    width) and the grid of cores it lies on, x columns by y rows from core (0, 0) (a CoreRange
    (0, 0)-(x - 1, y - 1)); its orientation is `memory.orientation` (ROW_MAJOR unless it says
    col_major). Written `in0_shard = 256 x 32 on 8 x 4`."""

    shape: tuple[int, int]
    grid: tuple[int, int]

    def __str__(self) -> str:
        return f"{self.shape[0]} x {self.shape[1]} on {self.grid[0]} x {self.grid[1]}"


@dataclass(frozen=True)
class MemorySpec:
    in0: Placement = Placement.DRAM
    in1: Placement = Placement.DRAM
    out: Placement = Placement.DRAM
    orientation: str | None = None      # shard orientation; None: the one the factory requires
    # the shard specs the spec fixes (None: laid out by the planner, as TT's op lays a shard it is not given)
    in0_shard: ShardGiven | None = None
    out_shard: ShardGiven | None = None

    def shard(self, tensor: str) -> ShardGiven | None:
        return getattr(self, f"{tensor}_shard")

    @property
    def sharded(self) -> bool:
        return any(where != Placement.DRAM for where in (self.in0, self.in1, self.out))


@dataclass(frozen=True)
class MatmulSpec:
    name: str
    path: str
    arch: str
    m: int                      # elements
    n: int
    k: int
    batch: int
    dtype_in0: str              # ttnn names
    dtype_in1: str
    dtype_out: str
    dtype_bias: str
    grid: tuple[int, int] | None  # x (columns), y (rows); None = auto
    dataflow: str
    block: BlockSpec
    compute: ComputeConfig
    fuse_bias: bool
    activation: str
    untilize_out: bool
    variant: str | None
    variants: tuple[str, ...]
    spans: Mapping[str, Span] = field(compare=False, repr=False)
    # MatmulMultiCoreReuseMultiCastProgramConfig.transpose_mcast: in0 multicast down columns, in1 across rows
    transpose_mcast: bool = False
    # an in0 of rank 4 to 8 ([B1, B2, M, K] ... [B1, ..., B6, M, K]): its leading dims as the spec writes
    # them (`batch = B1 x B2`); () for rank 2 or 3. ttnn folds them into one batch of their product
    # (get_batch_size, matmul_utilities.cpp), which `batch` holds; the shapes kgen prints keep them
    batch_dims: tuple[int, ...] = ()
    memory: MemorySpec = MemorySpec()
    # in1 shared by every batch (TT's bcast_batch, the batch fused into M) or one in1 matrix per batch
    broadcast_in1: bool = True
    # ttnn.matmul's transpose_a / transpose_b: in0 is stored K x M (in1 N x K) and the op multiplies its
    # transpose; the reuse, 2D and 1D factories read it transposed (matmul_device_operation.cpp, 0.81.1)
    transpose_a: bool = False
    transpose_b: bool = False
    # the multicast program configs' fuse_batch: the batch fused into M (True), or every core looping over
    # the batch with per_core of one batch's Mt (False, the only form of a batched in1); None: the default,
    # fused unless in1 holds one matrix per batch (`fuses_batch`)
    fuse_batch: bool | None = None

    @property
    def fuses_batch(self) -> bool:
        """Whether the batch is fused into M: `fuse_batch`, or by default unless in1 is batched."""
        if self.batch == 1:
            return True
        return self.fuse_batch if self.fuse_batch is not None else self.broadcast_in1

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """in0's (and the output's) leading dims: `batch_dims`, or the one batch dim of rank 3."""
        return self.batch_dims or (self.batch,)

    def span(self, key: str) -> Span:
        """The span of a key, else of its group, else of the matmul header."""
        while key:
            if key in self.spans:
                return self.spans[key]
            key = key.rpartition(".")[0]
        return self.spans["matmul"]
