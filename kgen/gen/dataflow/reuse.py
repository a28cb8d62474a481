"""The reuse dataflow, TT-Metal's MatmulMultiCoreReuseProgramConfig factory
(matmul_multicore_reuse_program_factory.cpp): a 2D grid of blocks in which every core reads its own
in0 rows and in1 columns from DRAM, without multicast, and writes its own output block."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from kgen.core.types import Placement
from kgen.gen.dataflow.base import DRAM_ONLY, Factory, GridOfBlocks, Layout, grid_layout
from kgen.gen.dataflow.kernels import (Tiles, dm_kernel, needs_bias_read, out_block_loops, read_block, tensors_of,
                                       writer_ops)
from kgen.gen.ir import CoreRange, Kernel, Loop, Node, Semaphore
from kgen.gen.rules import CB_BIAS, CB_IN0, CB_IN1, CB_OUT

if TYPE_CHECKING:
    from kgen.gen.plan import Plan
    from kgen.gen.spec import MatmulSpec


class Reuse(GridOfBlocks):
    name = "reuse"
    factory = Factory.REUSE
    placements: Mapping[str, frozenset[Placement]] = DRAM_ONLY
    transpose_mcast = False
    shared_axis: int | None = None
    l1_acc_rule: tuple[int, str] | None = None
    paced_by: Mapping[str, str] = MappingProxyType({})
    is_1d = False

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        return grid_layout(spec, mt, nt, grid_req, choices)

    def in0_reader_cores(self, p: Plan) -> int:
        """Every core reads its own in0 rows."""
        return p.num_cores

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        return _reuse_kernels(p, all_cores), ()


REUSE = Reuse()


def _reuse_kernels(p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...]:
    t = Tiles(p)
    tensors = tensors_of(p)
    k_block = Loop("block", 0, p.num_blocks, tuple(
        read_block(CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, p.kt, p.in0_block_tiles, t.in0_rows(), None)
        + read_block(CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, p.nt, p.in1_block_tiles,
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


