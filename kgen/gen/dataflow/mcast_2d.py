"""The 2D multicast dataflow, TT-Metal's MatmulMultiCoreReuseMultiCastProgramConfig factory
(matmul_multicore_reuse_mcast_2d_program_factory.cpp): a 2D grid of blocks; the left column reads in0
and multicasts it along each row, the top row reads in1 (and the bias) and multicasts it down each
column (swapped under transpose_mcast). The only factory that takes tensors in L1."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.types import Placement, is_sharded
from kgen.gen.dataflow.base import GridOfBlocks, Layout, grid_layout, per_core_edit
from kgen.gen.dataflow.kernels import (A, Tiles, dm_kernel, in0_shard_copy, in0_shard_handover,
                                       in1_receiver_body_of, noc_rect, out_block_loops, receiver_block, sender_block,
                                       sharded_out_tail, tensors_of, writer_ops, needs_bias_read)
from kgen.gen.ir import INVALID, Affine, CoreRange, Kernel, Loop, Node, RuntimeArg, Semaphore, op
from kgen.gen.rules import CB_BIAS, CB_IN0, CB_IN0_SHARD, CB_IN1, CB_OUT, PlanError, ceil_div, nearest_offer

if TYPE_CHECKING:
    from kgen.gen.dataflow.tt_program import ExpectedDifference, TtProgram
    from kgen.gen.planned import Plan
    from kgen.gen.matmul_spec import MatmulSpec


class Mcast2D(GridOfBlocks):
    name = "mcast_2d"
    factory = "matmul_multicore_reuse_mcast_2d_program_factory.cpp"
    label = "2D multicast"
    # each tensor interleaved in DRAM or L1 (its readers and writers take TensorAccessorArgs(*buffer)), in0
    # block- or height-sharded, the output block-sharded (the factory and its validation in
    # matmul_device_operation.cpp)
    placements: Mapping[str, frozenset[Placement]] = MappingProxyType({
        "in0": frozenset({Placement.DRAM, Placement.L1, Placement.L1_BLOCK_SHARDED, Placement.L1_HEIGHT_SHARDED}),
        "in1": frozenset({Placement.DRAM, Placement.L1}),
        "out": frozenset({Placement.DRAM, Placement.L1, Placement.L1_BLOCK_SHARDED})})
    transpose_mcast = True
    transposes_inside = True
    do_not_inplace_interm0_out = True
    shared_axis: int | None = None
    # A multicast receiver waits for its sender: it runs at the sender's pace.
    paced_by: Mapping[str, str] = MappingProxyType({"in0_receiver": "in0_sender",
                                                    "in1_receiver_writer": "in1_sender_writer"})
    is_1d = False
    # fuse_batch = false (B > 1): every core loops over the batch, in1 shared or one per batch (a batched in1
    # needs it: TT's "Matmul with fused batch requires ... BCMK*11KN=BCMN"); fuzz and tune draw a batched
    # in1 on reuse only
    batched_in1 = False
    loops_batch = True

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        layout = grid_layout(spec, mt, nt, grid_req, choices)
        _check_padded_top_row(spec, mt, layout.per_core_m, ceil_div(mt, layout.per_core_m))
        return layout

    def pads_last_m_block(self, m_blocks: int) -> bool:
        """Below the top row only: its in1 sender/writer has no M padding args (_check_padded_top_row)."""
        return m_blocks > 1

    def skips_padded_out_blocks(self, axis: int, m_blocks: int) -> bool:
        """N: both in1 writers of the last N-block take last_num_blocks_w_dim (0.81.1
        reader_bmm_tile_layout_in1_sender_writer_padding.cpp and _receiver_writer_padding.cpp: `bw <
        num_blocks_w_dim_` guards every write). M: the receiver writers of the rows below the top take
        last_num_blocks_h_dim; the top row's sender/writer has no M padding (_check_padded_top_row), so
        only with more than one M-block. Their readers still read those blocks whole, past the tensor,
        and the compute kernel computes them; nothing of them is written."""
        return axis == 1 or m_blocks > 1

    def in0_reader_cores(self, p: Plan) -> int:
        """One per M-block: the left column's senders (the top row's under transpose_mcast)."""
        return p.m_blocks

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        return (_mcast_kernels(p, all_cores),
                tuple(Semaphore(name, i, INVALID, all_cores) for name, i in SEMAPHORE_IDS.items()))

    def tt_unsupported(self, p: Plan, manifest: Mapping[str, Any]) -> str | None:
        from kgen.gen.dataflow import tt_mcast
        return tt_mcast.unsupported_reason(p, manifest)

    def tt_program(self, p: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int]) -> TtProgram:
        from kgen.gen.dataflow import tt_mcast
        return tt_mcast.program(p, manifest, tt_mcast.ARGS_2D, self.label)

    def tt_expected_differences(self, p: Plan) -> tuple[ExpectedDifference, ...]:
        """The block-sharded in0 reader's (the only factory that takes in0 block-sharded), and the reads of a
        last core's whole out blocks past the tensor."""
        from kgen.gen.dataflow import tt_mcast
        return tt_mcast.merged_differences(tt_mcast.block_sharded_differences(p), tt_mcast.padded_block_reads(p))


MCAST_2D = Mcast2D()


def _check_padded_top_row(spec: MatmulSpec, mt: int, per_core_m: int, m_blocks: int) -> None:
    """The 2D factory gives the top row's in1 sender/writer no M padding: its writer args are
    out_block_h / out_subblock_h, out_subblock_h and a 0 h-skip whatever the row (only the receiver
    writers of the rows below get last_block_num_nonzero_subblocks_h, last_subblock_of_last_block_h and
    last_block_padded_block_tiles_h_skip). So with one row of cores a padded M would be written past
    the output tensor by TT-Metal's program."""
    if mt % per_core_m and m_blocks == 1:
        raise PlanError("mcast_2d: a padded last row of cores is not the top row (TT-Metal's in1 sender/writer "
                        "has no M padding args)",
                        f"per_core_M = {per_core_m} leaves Mt = {mt} on one row of cores with {per_core_m - mt} "
                        f"padded rows of tiles, which TT-Metal's 2D factory would write past the output",
                        spec.span("block.per_core"),
                        nearest_offer(range(1, mt + 1), per_core_m, "per_core_M without a padded single row of cores",
                                      per_core_edit(spec, "M")))


SEMAPHORE_IDS = {"in0_sender": 0, "in0_receiver": 1, "in1_sender": 2, "in1_receiver": 3}


def _mcast_kernels(p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...]:
    t = Tiles(p)
    tensors = tensors_of(p)
    nx, ny = p.grid
    in0_noc, in1_noc = 1, 0     # in0 on NCRISC/NOC 1, in1 + writer on BRISC/NOC 0 (docs/reference/matmul.md §2.4)
    kernels: list[Kernel] = []

    # in0 travels along its row; in1 and the bias down their column. transpose_mcast swaps the two
    # (the factory swaps the sender ranges and the multicast rectangles): in0 from the top row down its
    # column, in1 from the left column along its row. Each keeps its NoC.
    def row_rect(noc: int) -> tuple[RuntimeArg, ...]:      # the rest of this core's row
        return noc_rect(noc, A(1), A(0, core_y=1), A(nx - 1), A(0, core_y=1))

    def col_rect(noc: int) -> tuple[RuntimeArg, ...]:      # the rest of this core's column
        return noc_rect(noc, A(0, core_x=1), A(1), A(0, core_x=1), A(ny - 1))

    left_column, top_row = CoreRange(0, 0, 0, ny - 1), CoreRange(0, 0, nx - 1, 0)
    left_sender = (A(0), A(0, core_y=1))            # the core at the left end of this core's row
    top_sender = (A(0, core_x=1), A(0))             # the core at the top of this core's column
    if p.transpose_mcast:
        in0_rect, in1_rect = col_rect(in0_noc), row_rect(in1_noc)
        in0_senders, in1_senders = top_row, left_column
        in0_receivers, in1_receivers = CoreRange(0, 1, nx - 1, ny - 1), CoreRange(1, 0, nx - 1, ny - 1)
        in0_from, in1_from = top_sender, left_sender
    else:
        in0_rect, in1_rect = row_rect(in0_noc), col_rect(in1_noc)
        in0_senders, in1_senders = left_column, top_row
        in0_receivers, in1_receivers = CoreRange(1, 0, nx - 1, ny - 1), CoreRange(0, 1, nx - 1, ny - 1)
        in0_from, in1_from = left_sender, top_sender
    in0_dests, in1_dests = p.n_blocks - 1, p.m_blocks - 1   # in0 goes to every core of its M block
    in0_sems = (("in0_sender", SEMAPHORE_IDS["in0_sender"]), ("in0_receiver", SEMAPHORE_IDS["in0_receiver"]))
    in1_sems = (("in1_sender", SEMAPHORE_IDS["in1_sender"]), ("in1_receiver", SEMAPHORE_IDS["in1_receiver"]))

    if p.memory.in0 == Placement.L1_BLOCK_SHARDED:
        kernels += _in0_block_sharded_kernels(p, in0_noc, in0_sems)
    in0_send = Loop("block", 0, p.num_blocks, tuple(sender_block(
        p, CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, p.kt, p.in0_block_tiles, (t.in0_rows(), None),
        "in0_sender", "in0_receiver", in0_dests, in0_rect)))
    if p.memory.in0 != Placement.L1_BLOCK_SHARDED:
        kernels.append(dm_kernel("in0_sender", "NCRISC", in0_noc, in0_senders,
                                  out_block_loops(p, lambda first: (in0_send,)),
                                  (tensors["in0"],) if not is_sharded(p.memory.in0) else (),
                                  (("cb_in0", CB_IN0),), in0_sems, in0_rect if in0_dests else ()))
    if in0_dests and p.memory.in0 != Placement.L1_BLOCK_SHARDED:
        in0_sender_core = (RuntimeArg("in0_sender_noc_x", "noc_x", in0_from[0]),
                           RuntimeArg("in0_sender_noc_y", "noc_y", in0_from[1]))
        in0_recv = Loop("block", 0, p.num_blocks, tuple(receiver_block(
            CB_IN0, p.in0_block_tiles, "in0_sender", "in0_receiver", in0_sender_core)))
        kernels.append(dm_kernel("in0_receiver", "NCRISC", in0_noc, in0_receivers,
                                  out_block_loops(p, lambda first: (in0_recv,)), (), (("cb_in0", CB_IN0),),
                                  in0_sems, in0_sender_core))

    in1_send = Loop("block", 0, p.num_blocks, tuple(sender_block(
        p, CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, p.nt, p.in1_block_tiles, (None, t.in1_cols()),
        "in1_sender", "in1_receiver", in1_dests, in1_rect)))

    def in1_sender_body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [in1_send]
        if needs_bias_read(p, first):
            ops += sender_block(p, CB_BIAS, "bias", t.bias_block(), 1, p.out_block_w, p.nt, p.out_block_w,
                                (None, t.in1_cols()), "in1_sender", "in1_receiver", in1_dests, in1_rect)
        return tuple(ops + writer_ops(p, t))

    writer_cbs = (("cb_in1", CB_IN1),) + ((("cb_bias", CB_BIAS),) if p.fuse_bias else ()) + (("cb_out", CB_OUT),)
    written = ("out",) if not is_sharded(p.memory.out) else ()
    send_tensors = tuple(tensors[n] for n in ("in1", "bias", *written) if n in tensors)
    kernels.append(dm_kernel("in1_sender_writer", "BRISC", in1_noc, in1_senders,
                              out_block_loops(p, in1_sender_body) + tuple(sharded_out_tail(p)), send_tensors,
                              writer_cbs, in1_sems, in1_rect if in1_dests else ()))
    if in1_dests:
        in1_sender_core = (RuntimeArg("in1_sender_noc_x", "noc_x", in1_from[0]),
                           RuntimeArg("in1_sender_noc_y", "noc_y", in1_from[1]))
        in1_receiver_body = in1_receiver_body_of(p, t, in1_sender_core)
        kernels.append(dm_kernel("in1_receiver_writer", "BRISC", in1_noc, in1_receivers,
                                  out_block_loops(p, in1_receiver_body) + tuple(sharded_out_tail(p)),
                                  tuple(tensors[n] for n in written), writer_cbs, in1_sems, in1_sender_core))
    return tuple(kernels)


def _in0_block_sharded_kernels(p: Plan, noc: int, sems: tuple[tuple[str, int], ...]) -> list[Kernel]:
    """A block-sharded in0 (docs/reference/matmul.md §2.4; TT-Metal's
    reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp): every core holds per_core_M x
    (Kt / n) tiles of in0, its K slice of its M block, for the n cores along its in0 multicast. K-block k
    comes from the core at position k / (blocks per shard) along that line, which multicasts it once to
    the whole line, itself included (see _in0_shard_send). TT-Metal runs one kernel everywhere and branches
    on its sender id; kgen emits one kernel per position, so that whose turn it is is a loop bound, not a
    runtime branch."""
    n = p.n_blocks
    per_shard = p.in0_shard_w // p.in0_block_w
    tiles = p.in0_block_tiles

    # the line of cores an in0 block travels: this core's row, or its column under transpose_mcast
    def at(pos: int) -> tuple[Affine, Affine]:          # (x, y) of position `pos` on this core's line
        return (A(0, core_x=1), A(pos)) if p.transpose_mcast else (A(pos), A(0, core_y=1))

    (x0, y0), (x1, y1) = at(0), at(n - 1)
    line = noc_rect(noc, x0, y0, x1, y1) if n > 1 else ()
    kernels = []
    for i in range(n):
        senders = {j: (RuntimeArg(f"sender{j}_noc_x", "noc_x", at(j)[0]),
                       RuntimeArg(f"sender{j}_noc_y", "noc_y", at(j)[1])) for j in range(n) if j != i}
        send = tuple(_in0_shard_send(p, line))
        k_loops = tuple(
            Loop("kb", 0, per_shard, send if j == i else
                 tuple(receiver_block(CB_IN0, tiles, "in0_sender", "in0_receiver", senders[j])),
                 f"K-blocks {j * per_shard}..{(j + 1) * per_shard - 1}: " + ("this core's shard" if j == i
                                                                          else f"from position {j}"))
            for j in range(n))
        cores = CoreRange(0, i, p.grid[0] - 1, i) if p.transpose_mcast else CoreRange(i, 0, i, p.grid[1] - 1)
        coords = line + tuple(a for j in sorted(senders) for a in senders[j])
        kernels.append(dm_kernel(f"in0_sharded_{i}", "NCRISC", noc, cores,
                                  out_block_loops(p, lambda first: k_loops), (),
                                  (("cb_in0", CB_IN0), ("cb_in0_sharded", CB_IN0_SHARD)), sems, coords))
    return kernels


def _in0_shard_send(p: Plan, line: tuple[RuntimeArg, ...]) -> list[Node]:
    """One K-block handed over from this core's shard as TT's block-sharded reader does it: a single
    multicast to the whole line, this core included (in0_shard_handover). With one core on the line the
    block is only copied into c_0 (no handshake)."""
    n, tiles = p.n_blocks, p.in0_block_tiles
    if n == 1:
        return [op("cb_reserve_back", CB_IN0, tiles),
                *in0_shard_copy(p, "this core's K slice: the block comes out of its own shard"),
                op("cb_push_back", CB_IN0, tiles)]
    return in0_shard_handover(p, line, n, "line")
