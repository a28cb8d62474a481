"""The 1D multicast dataflows, TT-Metal's MatmulMultiCoreReuseMultiCast1DProgramConfig factory
(matmul_multicore_reuse_mcast_1d_program_factory.cpp), in its two modes: `mcast_1d_in0` (mcast_in0 =
true: one M-block, in0 multicast from core (0, 0) to a row-major run of cores, each holding an N-block)
and `mcast_1d_in1` (mcast_in0 = false: one N-block, in1 multicast, each core an M-block)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.types import Placement, is_sharded
from kgen.gen.dataflow.base import INTERLEAVED, Dataflow, Layout, per_core_edit, whole_padded_blocks_note
from kgen.gen.dataflow.in0_width_sharded import shard_cores, width_sharded_kernels, width_shards
from kgen.gen.dataflow.kernels import (A, Tiles, all_but_first, dm_kernel, in1_receiver_body_of, needs_bias_read,
                                       noc_rect, out_block_loops, receiver_block, sender_block, sharded_out_tail,
                                       tensors_of, writer_ops)
from kgen.gen.ir import INVALID, CoreRange, Kernel, Loop, Node, RuntimeArg, Semaphore, TensorArg, op
from kgen.gen.rules import CB_BIAS, CB_IN0, CB_IN0_SHARD, CB_IN1, CB_OUT, Offer, PlanError, ceil_div, divisors, fmt_pair, nearest_offer, suggestion

if TYPE_CHECKING:
    from kgen.gen.dataflow.tt_program import ExpectedDifference, TtProgram
    from kgen.gen.planned import Plan
    from kgen.gen.matmul_spec import MatmulSpec


class Mcast1D(Dataflow):
    """One mode of the 1D factory: `mcast_in0` says which operand core (0, 0) multicasts."""

    factory = "matmul_multicore_reuse_mcast_1d_program_factory.cpp"
    label = "1D multicast"
    placements: Mapping[str, frozenset[Placement]] = INTERLEAVED   # in DRAM or L1
    transpose_mcast = False
    transposes_inside = True         # TT's 1D factory reads transposed inputs with swapped strides, as the 2D
    # A multicast receiver waits for its sender: it runs at the sender's pace.
    paced_by: Mapping[str, str] = MappingProxyType({"in0_receiver": "in0_sender",
                                                    "in1_receiver_writer": "in1_sender_writer"})
    is_1d = True
    full_sync_dropped = True           # its builders compile SyncHalf whatever is asked
    do_not_inplace_interm0_out = True
    # fuse_batch = false (B > 1): every core loops over the batch, in1 shared or one per batch (a batched in1
    # needs it: TT's "Matmul with fused batch requires ... BCMK*11KN=BCMN"); fuzz and tune draw a batched
    # in1 on reuse only
    batched_in1 = False
    loops_batch = True

    def __init__(self, name: str, mcast_in0: bool):
        self.name, self.mcast_in0 = name, mcast_in0
        if not mcast_in0:
            # mcast_in1 reads in0 from a height shard on every core (IN0_SHARDED: c_0 globally allocated on
            # the shard) and writes a height-sharded output (OUT_SHARDED: c_4 on the shard); the factory's
            # validation: "input_tensor_a must be height sharded", "Output memory layout must be
            # HEIGHT_SHARDED or BLOCK_SHARDED on a 1-column grid" (matmul_device_operation.cpp, 0.81.1)
            self.placements = MappingProxyType({
                "in0": INTERLEAVED["in0"] | {Placement.L1_HEIGHT_SHARDED},
                "in1": INTERLEAVED["in1"],
                "out": INTERLEAVED["out"] | {Placement.L1_HEIGHT_SHARDED}})
        else:
            # mcast_in0 reads a width-sharded in0 from every core of its grid (in0_is_sharded: each core multicasts
            # its K slice, reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp, c_2 on the shard)
            # and writes a width-sharded output (OUT_SHARDED: c_4 on the shard); the factory's validation: "input_
            # tensor_a must be width sharded", "Output memory layout must be WIDTH_SHARDED or BLOCK_SHARDED on a
            # 1-row grid" (matmul_device_operation.cpp, 0.81.1)
            self.placements = MappingProxyType({
                "in0": INTERLEAVED["in0"] | {Placement.L1_WIDTH_SHARDED},
                "in1": INTERLEAVED["in1"],
                "out": INTERLEAVED["out"] | {Placement.L1_WIDTH_SHARDED}})
        self.single_y_m_tail_rule = not mcast_in0
        # the per_core axis that covers all of its tiles: M for mcast_in0 (one M-block), N for mcast_in1
        self.shared_axis: int | None = 0 if mcast_in0 else 1
        # the factory creates two semaphores, sender then receiver, for the operand it multicasts
        operand = "in0" if mcast_in0 else "in1"
        self.semaphore_ids: Mapping[str, int] = MappingProxyType({f"{operand}_sender": 0, f"{operand}_receiver": 1})

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        per_core_m, per_core_n, grid = _plan_1d(spec, mt, nt, grid_req, choices, self.mcast_in0)
        cores = ceil_div(nt, per_core_n) * ceil_div(mt, per_core_m)
        shards = width_shards(spec, mt, grid_req, per_core_m, choices) if _width_sharded(spec.memory) else 0
        return Layout(per_core_m, per_core_n, grid, ceil_div(nt, per_core_n), in0_shards=shards,
                      cores=cores if cores < grid[0] * grid[1] else 0)

    def core_m_terms(self, p: Plan) -> dict[str, int]:
        """A core's M-block index: none (mcast_in0: every core holds the one M-block), or its row-major
        index core_y * grid_x + core_x (mcast_in1: core i holds M-block i, the factory's output_idx_y = i)."""
        return {} if self.mcast_in0 else {"core_x": 1, "core_y": p.grid[0]}

    def core_n_terms(self, p: Plan) -> dict[str, int]:
        """A core's N-block index: the row-major index (mcast_in0: the factory's output_idx_x = i), or
        none (mcast_in1: every core holds the one N-block)."""
        return {"core_x": 1, "core_y": p.grid[0]} if self.mcast_in0 else {}

    def pads_last_m_block(self, m_blocks: int) -> bool:
        """mcast_in0 pads the one M-block on every core; mcast_in1 the last of several cores (a receiver,
        whose writer takes last_out_num_blocks_h; not the one core: _plan_1d)."""
        return self.mcast_in0 or m_blocks > 1

    def skips_padded_out_blocks(self, axis: int, m_blocks: int) -> bool:
        """mcast_in0, N: the last core's in1 sender/writer takes last_out_num_blocks_w (the factory's
        `output_idx_x == num_blocks_x - 1` args; 0.81.1 reader_bmm_tile_layout_in1_sender_writer_padding.cpp
        writes only `bw < num_blocks_w_dim_`). mcast_in0, M: the one M-block's padding args describe its
        last h-block only and the sender/writer writes every h-block, so whole h-blocks past M would be
        written past the output (tests/gen/test_padded_out_blocks.py). mcast_in1, M over several cores:
        the last is a receiver whose writer takes last_out_num_blocks_h. mcast_in1 otherwise: TT-Metal
        refuses ("mcast_in1 requires the logical N tail to be in the final internal W block", "a
        single-Y mcast_in1 sender requires the logical M tail to be in the final internal H block")."""
        return (self.mcast_in0 and axis == 1) or (not self.mcast_in0 and axis == 0 and m_blocks > 1)

    def tt_expected_differences(self, p: Plan) -> tuple[ExpectedDifference, ...]:
        """The reads of the last core's whole out blocks past the tensor (tt_mcast.padded_block_reads), and the
        width-sharded in0 reader's (tt_mcast.width_sharded_differences)."""
        from kgen.gen.dataflow import tt_mcast
        return tt_mcast.merged_differences(tt_mcast.width_sharded_differences(p), tt_mcast.padded_block_reads(p))

    def in0_reader_cores(self, p: Plan) -> int:
        """Cores that read in0 from DRAM: the one sender (mcast_in0), none (a width-sharded in0), or every core
        (mcast_in1)."""
        if _width_sharded(p.memory):
            return 0
        return 1 if self.mcast_in0 else p.num_cores

    def padding_notes(self, p: Plan) -> tuple[str, ...]:
        """The padded last block of the 1D factory: inside the one block of the multicast dimension on
        every core, and on the last core of the row-major run for the other."""
        notes = []
        every, last = "every core (the one M-block)", f"the last of the {p.num_cores} cores"
        if p.padded_m:
            where = every if self.mcast_in0 else last
            notes.append(f"{where}: {p.last_per_core_m} of per_core_M = {p.per_core_m} rows of tiles "
                         f"(Mt = {p.mt}); its last out block has {p.last_out_block_h} of {p.out_block_h} "
                         f"rows, the rest is padding: not read, computed on stale data, not written"
                         + whole_padded_blocks_note(p, 0))
        if p.padded_n:
            where = last if self.mcast_in0 else "every core (the one N-block)"
            notes.append(f"{where}: {p.last_per_core_n} of per_core_N = {p.per_core_n} columns of tiles "
                         f"(Nt = {p.nt}); its last out block has {p.last_out_block_w} of {p.out_block_w} "
                         f"columns, the rest is padding: not read, computed on stale data, not written"
                         + whole_padded_blocks_note(p, 1))
        return tuple(notes)

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        # a width-sharded in0: every core of the grid holds a shard and takes part in the multicasts (the
        # factory's all_cores, its num_cores = max(cores with work, in0_sender_num_cores)), the semaphores too
        sem_cores = shard_cores(p) if _width_sharded(p.memory) else all_cores
        return (_mcast_1d_kernels(p, all_cores, self.mcast_in0, self.semaphore_ids),
                tuple(Semaphore(name, i, INVALID, sem_cores) for name, i in self.semaphore_ids.items()))

    def tt_unsupported(self, p: Plan, manifest: Mapping[str, Any]) -> str | None:
        from kgen.gen.dataflow import tt_mcast
        return tt_mcast.unsupported_reason(p, manifest)

    def tt_program(self, p: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int]) -> TtProgram:
        from kgen.gen.dataflow import tt_mcast
        return tt_mcast.program(p, manifest, tt_mcast.ARGS_1D, self.label)


MCAST_1D_IN0 = Mcast1D("mcast_1d_in0", mcast_in0=True)
MCAST_1D_IN1 = Mcast1D("mcast_1d_in1", mcast_in0=False)


def _rectangle_of(cores: int, cols: int) -> tuple[int, int] | None:
    """The rectangle a row-major run of `cores` cores fills on a grid `cols` wide (the 1D factory's
    num_cores_to_corerangeset(..., row_major = true)), or None when its last row is partial."""
    if cores <= cols:
        return cores, 1
    return (cols, cores // cols) if cores % cols == 0 else None


def _bounding_box(cores: int, cols: int) -> tuple[int, int]:
    """The bounding box of a row-major run of `cores` cores on a grid `cols` wide: the 1D factory's
    multicast rectangle (`all_cores_with_work.bounding_box()`), whose cores past the run have no work
    and only receive the multicasts."""
    return (cores, 1) if cores <= cols else (cols, ceil_div(cores, cols))


def _plan_1d(spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int],
             choices: list[str], in0: bool) -> tuple[int, int, tuple[int, int]]:
    """per_core_M, per_core_N and the cores of TT-Metal's 1D multicast factory
    (matmul_multicore_reuse_mcast_1d_program_factory.cpp; validation in matmul_device_operation.cpp):

    - num_blocks_y = ceil(Mt / per_core_M), num_blocks_x = ceil(Nt / per_core_N), and their product
      (num_cores) <= grid.x * grid.y ("Number of blocks exceeds number of cores");
    - mcast_in0: num_blocks_y == 1 (M fits one per_core_M); mcast_in1: num_blocks_x == 1;
    - the cores are the first num_cores of the grid in row-major order, core i holding block i; the
      multicast goes to their bounding box, whose cores past the run (a partial last row) have no
      work: no kernel, CB or semaphore, they only receive the data and the flag (num_dests = num_cores
      - 1 receivers signal the sender; the NoC multicast counts the box less the sender).

    kgen's auto per_core prefers a run filling whole rows (the choice before partial rows were planned)."""
    pc = spec.block.per_core
    cols, rows = grid_req
    cells = cols * rows
    # the operand every core shares: its per_core must cover the whole dimension
    shared_dim, shared_tiles = ("M", mt) if in0 else ("N", nt)
    split_dim, split_tiles = ("N", nt) if in0 else ("M", mt)
    given_shared = (pc[0] if in0 else pc[1]) if pc else None
    given_split = (pc[1] if in0 else pc[0]) if pc else None
    flavour = "mcast_in0" if in0 else "mcast_in1"
    if given_shared is None:
        shared = shared_tiles
        choices.append(f"per_core_{shared_dim} auto -> {shared}: {flavour} gives every core all "
                       f"{shared_dim}t = {shared_tiles} tiles")
    elif given_shared < shared_tiles:
        raise PlanError(f"{flavour}: num_blocks_{'y' if in0 else 'x'} == 1 ({shared_dim}t <= per_core_{shared_dim})",
                        f"per_core_{shared_dim} = {given_shared} splits {shared_dim}t = {shared_tiles} over "
                        f"{ceil_div(shared_tiles, given_shared)} blocks, but TT-Metal's 1D factory multicasts "
                        f"{'in0' if in0 else 'in1'} to every core, so every core holds all of {shared_dim}",
                        spec.span("block.per_core"),
                        Offer((suggestion(str(shared_tiles), per_core_edit(spec, shared_dim)(shared_tiles)),),
                              f"per_core_{shared_dim} covering {shared_dim}t"))
    else:
        shared = given_shared
    if given_split is None:
        legal = [d for d in divisors(split_tiles) if _rectangle_of(split_tiles // d, cols)
                 and split_tiles // d <= cells]
        split = min(legal)
        choices.append(f"per_core_{split_dim} auto -> {split}: {split_dim}t = {split_tiles} over "
                       f"{split_tiles // split} of the {cells} cores of the {fmt_pair(grid_req)} grid")
    else:
        split = given_split
    cores = ceil_div(split_tiles, split)
    if cores > cells:
        least = ceil_div(split_tiles, cells)
        raise PlanError("num_blocks_x * num_blocks_y <= grid.x * grid.y (1D factory)",
                        f"per_core_{split_dim} = {split} needs {cores} cores, the {fmt_pair(grid_req)} grid has "
                        f"{cells}", spec.span("block.per_core"),
                        nearest_offer(range(least, split_tiles + 1), split, f"per_core_{split_dim} within {cells} cores",
                                      per_core_edit(spec, split_dim, shared)))
    grid = _bounding_box(cores, cols)
    return (shared, split, grid) if in0 else (split, shared, grid)


def _width_sharded(memory) -> bool:
    """in0 width-sharded: the in0 multicast's form that reads it from every core's shard."""
    return memory.in0 == Placement.L1_WIDTH_SHARDED


def _in0_read(p: Plan, t: Tiles, dests: int, rect: tuple[RuntimeArg, ...], acks: int
              ) -> tuple[Loop, tuple[tuple[str, int], ...]]:
    """in0's K-blocks and the in0 reader's CBs: each block read (and, by the mcast_in0 sender, multicast) as
    sender_block does it, or from a height shard, already in c_0 (one K-block), or in several K-blocks
    each copied out of the shard (c_2) into c_0, tile row by tile row (TT's reader under IN0_SHARDED with
    extract_shard_sub_blocks: a NoC read of in0_block_w tiles per row from its own L1, then a barrier)."""
    if p.memory.in0 == Placement.L1_HEIGHT_SHARDED and p.num_blocks > 1:
        tiles, page = p.in0_block_tiles, p.cb(CB_IN0).page_bytes
        start = A(0, bh=p.out_block_h * p.kt, block=p.in0_block_w)      # the block's first tile in the shard
        body = (op("cb_reserve_back", CB_IN0, tiles),
                op("copy_shard", CB_IN0, CB_IN0_SHARD, start, p.out_block_h, p.in0_block_w, p.kt, page,
                   note="this K-block's rows out of the core's shard"),
                op("noc_read_barrier"), op("cb_push_back", CB_IN0, tiles))
        return Loop("block", 0, p.num_blocks, body), (("cb_in0", CB_IN0), ("cb_in0_sharded", CB_IN0_SHARD))
    return Loop("block", 0, p.num_blocks, tuple(sender_block(
        p, CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, p.kt, p.in0_block_tiles,
        (t.in0_rows(), None), "in0_sender", "in0_receiver", dests, rect, acks))), (("cb_in0", CB_IN0),)


def _mcast_1d_kernels(p: Plan, all_cores: CoreRange, in0_mcast: bool,
                      sem_ids: Mapping[str, int]) -> tuple[Kernel, ...]:
    """The kernels of TT-Metal's 1D multicast factory (matmul_multicore_reuse_mcast_1d_program_factory.cpp).
    Core (0, 0) reads the shared operand and multicasts it to the bounding box of all cores (itself
    excluded: a multicast without loopback); every core reads its own block of the other operand.

    - mcast_1d_in0: in0_sender on (0, 0), in0_receiver on the rest (a width-sharded in0: in0_width_sharded.py);
      in1_sender_writer on every core reads its in1 (and bias) columns without multicast and writes its output.
    - mcast_1d_in1: in1_sender_writer on (0, 0) multicasts in1 (and the bias), in1_receiver_writer on the
      rest; in0_sender on every core reads its in0 rows without multicast.
    The receivers of a grid taller than one row run on two ranges (the rest of row 0, the rows below:
    a run whose last row may be partial), one kernel each with the same body (role in0_receiver /
    in1_receiver_writer). The multicast rectangle is the bounding box of the cores with work; its cores
    past them (a partial last row) run nothing: the sender waits for num_cores - 1 receivers and
    multicasts to the box's nx * ny - 1 cores (the factory's in0/in1_mcast_num_dests and _num_cores)."""
    t = Tiles(p)
    tensors = tensors_of(p)
    nx, ny = p.grid
    dests = nx * ny - 1
    acks = p.num_cores - 1
    in0_noc, in1_noc = 1, 0     # in0 on NCRISC/NOC 1, in1 + writer on BRISC/NOC 0, as the factory places them
    sems = tuple(sem_ids.items())
    origin = CoreRange(0, 0, 0, 0)
    sender_core = (RuntimeArg("mcast_sender_noc_x", "noc_x", A(0)), RuntimeArg("mcast_sender_noc_y", "noc_y", A(0)))
    kernels: list[Kernel] = []

    def rect(noc: int) -> tuple[RuntimeArg, ...]:
        # the bounding box of every core with work, from (0, 0): the factory's in0/in1 mcast rectangle
        return noc_rect(noc, A(0), A(0), A(nx - 1), A(ny - 1))

    def receivers(name: str, processor: str, noc: int, body: tuple[Node, ...], kernel_tensors: tuple[TensorArg, ...],
                  cbs: tuple[tuple[str, int], ...]) -> list[Kernel]:
        out = []
        for i, cores in enumerate(all_but_first(nx, ny)):
            if cores.y0 == 1 and p.num_cores < nx * ny:
                cores = replace(cores, count=p.num_cores - nx)      # the rows below: a partial last row
            k = dm_kernel(name if i == 0 else f"{name}_rows", processor, noc, cores, body, kernel_tensors, cbs,
                           sems, sender_core)
            out.append(replace(k, role=name))
        return out

    if _width_sharded(p.memory):      # every core of the grid multicasts its K slice (in0_width_sharded.py)
        kernels += width_sharded_kernels(p, in0_noc, sems)
    else:
        in0_dests = dests if in0_mcast else 0
        in0_read, in0_cbs = _in0_read(p, t, in0_dests, rect(in0_noc), acks)
        kernels.append(dm_kernel("in0_sender", "NCRISC", in0_noc, origin if in0_mcast else all_cores,
                                  out_block_loops(p, lambda first: (in0_read,)), () if is_sharded(p.memory.in0)
                                  else (tensors["in0"],), in0_cbs, sems if in0_mcast else (),
                                  rect(in0_noc) if in0_dests else ()))
    if in0_mcast and dests and not _width_sharded(p.memory):
        in0_recv = Loop("block", 0, p.num_blocks, tuple(receiver_block(
            CB_IN0, p.in0_block_tiles, "in0_sender", "in0_receiver", sender_core)))
        kernels += receivers("in0_receiver", "NCRISC", in0_noc, out_block_loops(p, lambda first: (in0_recv,)),
                             (), (("cb_in0", CB_IN0),))

    in1_dests = 0 if in0_mcast else dests
    in1_read = Loop("block", 0, p.num_blocks, tuple(sender_block(
        p, CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, p.nt, p.in1_block_tiles,
        (None, t.in1_cols()), "in1_sender", "in1_receiver", in1_dests, rect(in1_noc), acks)))

    def in1_sender_body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [in1_read]
        if needs_bias_read(p, first):
            ops += sender_block(p, CB_BIAS, "bias", t.bias_block(), 1, p.out_block_w, p.nt, p.out_block_w,
                                 (None, t.in1_cols()), "in1_sender", "in1_receiver", in1_dests, rect(in1_noc), acks)
        return tuple(ops + writer_ops(p, t))

    writer_cbs = (("cb_in1", CB_IN1),) + ((("cb_bias", CB_BIAS),) if p.fuse_bias else ()) + (("cb_out", CB_OUT),)
    written = ("out",) if not is_sharded(p.memory.out) else ()      # a sharded output: c_4 is the shard
    send_tensors = tuple(tensors[n] for n in ("in1", "bias", *written) if n in tensors)
    kernels.append(dm_kernel("in1_sender_writer", "BRISC", in1_noc, all_cores if in0_mcast else origin,
                              out_block_loops(p, in1_sender_body) + tuple(sharded_out_tail(p)), send_tensors, writer_cbs,
                              () if in0_mcast else sems, rect(in1_noc) if in1_dests else ()))
    if not in0_mcast and dests:
        in1_receiver_body = in1_receiver_body_of(p, t, sender_core)
        kernels += receivers("in1_receiver_writer", "BRISC", in1_noc,
                             out_block_loops(p, in1_receiver_body) + tuple(sharded_out_tail(p)),
                             tuple(tensors[n] for n in written), writer_cbs)
    return tuple(kernels)
