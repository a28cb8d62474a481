"""The reuse dataflow, TT-Metal's reuse factory (matmul_multicore_reuse_program_factory.cpp,
tenstorrent/tt-metal@1e768b71 and @be663def, which compute the same args; its kernels, the wheel's own,
reader_bmm_tile_layout.cpp and writer_bmm_tile_layout.cpp it binds): a 2D grid of blocks in which every
core reads its own in0 rows and in1 columns from DRAM, without multicast, and writes its own output block.
Checked against the 0.81.1 wheel (docs/reference/provenance.md, F11): the args match those two kernels'
reads, but no 0.81.1 code binds them; for a MatmulMultiCoreReuseProgramConfig, ttnn.matmul 0.81.1 runs
MatmulMultiCoreReuseOptimizedProgramFactory (reader_bmm_tile_layout_in0.cpp and
reader_writer_bmm_tile_layout_in1.cpp, with named args), which kgen does not port yet.

The factory's work split: `num_blocks_y = Mt / per_core_M` by `num_blocks_x = Nt / per_core_N` output
blocks, one per core, and every core loops over the B batches of its block (the reader's `batch` loop),
stepping in0 by `MtKt`, in1 by `KtNt` unless `bcast_B`, and the output by `MtNt`. With in1 broadcast
kgen fuses the batch into M instead (B = 1, Mt = B x M per batch: the same tiles in the same order per
core); with one in1 per batch (`broadcast_in1 = false`, TT's `bcast_batch = false`) the kernels loop over
the batch as TT's do. That is the only factory of kgen's that runs a batched in1: the multicast ones fuse
the batch (base.BATCHED_IN1_RULE). Mt, Nt and Kt must then divide as the factory's TT_FATALs ask
(`Mt % per_core_M == 0`, `Nt % per_core_N == 0`): its reader has no padding path. At 0.81.1
ttnn.matmul's MatmulMultiCoreReuseProgramConfig dispatches to the optimized reuse factory
(matmul_device_operation.cpp @001cea9a, select_program_factory), whose kernels read their args through
experimental/kernel_args.h; kgen ports this factory's kernels, which take the same per-batch offsets."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.types import Placement
from kgen.gen.dataflow.base import INTERLEAVED, GridOfBlocks, Layout, grid_layout, per_core_edit
from kgen.gen.dataflow.kernels import (Tiles, dm_kernel, needs_bias_read, out_block_loops, read_block, tensors_of,
                                       writer_ops)
from kgen.gen.ir import CoreRange, Kernel, Loop, Node, Semaphore
from kgen.gen.rules import CB_BIAS, CB_IN0, CB_IN1, CB_OUT, PlanError, divisors, nearest_offer

if TYPE_CHECKING:
    from kgen.gen.dataflow.tt_program import ExpectedDifference, TtProgram
    from kgen.gen.planned import Plan
    from kgen.gen.matmul_spec import MatmulSpec


class Reuse(GridOfBlocks):
    name = "reuse"
    factory = "matmul_multicore_reuse_program_factory.cpp"
    label = "reuse"
    placements: Mapping[str, frozenset[Placement]] = INTERLEAVED   # in DRAM or L1
    transpose_mcast = False
    transposes_inside = True
    shared_axis: int | None = None
    paced_by: Mapping[str, str] = MappingProxyType({})
    is_1d = False
    batched_in1 = True
    loops_batch = True

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        layout = grid_layout(spec, mt, nt, grid_req, choices)
        if not spec.fuses_batch:
            _check_whole_blocks(spec, mt, nt, layout)
        return layout

    def in0_reader_cores(self, p: Plan) -> int:
        """Every core reads its own in0 rows."""
        return p.num_cores

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        return _reuse_kernels(p, all_cores), ()

    def tt_unsupported(self, p: Plan, manifest: Mapping[str, Any]) -> str | None:
        from kgen.gen.dataflow import tt_reuse
        return tt_reuse.unsupported_reason(p, manifest)

    def tt_program(self, p: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int]) -> TtProgram:
        from kgen.gen.dataflow import tt_reuse
        return tt_reuse.program(p, manifest, f"{self.label} factory's")

    def tt_expected_differences(self, p: Plan) -> tuple[ExpectedDifference, ...]:
        from kgen.gen.dataflow import tt_reuse
        return tt_reuse.expected_differences(p)


REUSE = Reuse()


def _check_whole_blocks(spec: MatmulSpec, mt: int, nt: int, layout: Layout) -> None:
    """A batched in1 runs the reuse factory's own loop over the batch, whose reader has no padding path:
    TT_FATAL(Mt % per_core_M == 0) and TT_FATAL(Nt % per_core_N == 0) (matmul_multicore_reuse_program_factory.cpp)."""
    for dim, tiles, per_core in (("M", mt, layout.per_core_m), ("N", nt, layout.per_core_n)):
        if tiles % per_core:
            raise PlanError(f"reuse factory: {dim}t % per_core_{dim} == 0 (matmul_multicore_reuse_program_factory.cpp)",
                            f"per_core_{dim} = {per_core} leaves a padded last block of {dim}t = {tiles} tiles per "
                            f"batch; with the batch not fused the reuse factory's reader and writer loop over the "
                            f"batch without padding args", spec.span("block.per_core"),
                            nearest_offer(divisors(tiles), per_core, f"per_core_{dim} dividing {dim}t",
                                          per_core_edit(spec, dim, layout.per_core_n if dim == "M" else
                                                        layout.per_core_m)))


def _reuse_kernels(p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...]:
    t = Tiles(p)
    tensors = tensors_of(p)
    k_block = Loop("block", 0, p.num_blocks, tuple(
        read_block(CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, t.strides("in0"), p.in0_block_tiles,
                   t.in0_rows(), None)
        + read_block(CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, t.strides("in1"), p.in1_block_tiles,
                None, t.in1_cols())))

    def reader_body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [k_block]
        if needs_bias_read(p, first):
            ops += read_block(CB_BIAS, "bias", t.bias_block(), 1, p.out_block_w, p.nt, p.out_block_w, None, t.in1_cols())
        return tuple(ops)

    read_tensors = tuple(tensors[n] for n in ("in0", "in1", "bias") if n in tensors)
    read_cbs = (("cb_in0", CB_IN0), ("cb_in1", CB_IN1)) + ((("cb_bias", CB_BIAS),) if p.fuse_bias else ())
    reader = dm_kernel("reader", "NCRISC", 1, all_cores, out_block_loops(p, reader_body), read_tensors, read_cbs)
    writer = dm_kernel("writer", "BRISC", 0, all_cores, out_block_loops(p, lambda first: tuple(writer_ops(p, t))),
                        (tensors["out"],), (("cb_out", CB_OUT),))
    return reader, writer


