"""A width-sharded in0 on the 1D in0-multicast factory (matmul_multicore_reuse_mcast_1d_program_factory.cpp,
process_mcast_in0_program_and_create_override_variables with in0_is_sharded, tt-metal @00629f0f; its kernel
reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp as the 0.81.1 wheel has it).

ttnn lays the shards row-major over the compute grid: core i holds all Mt rows of K tiles i * w .. (i + 1) * w - 1
(w the shard width). The factory runs the sharded reader on every core of the grid (num_cores = max(cores with
work, in0_sender_num_cores)), in three groups by compile-time args 0 and 1:

- the cores with work (output block work, in the receiver grid);
- the cores past them inside the bounding box of the cores with work, the multicast rectangle (no work, in
  the receiver grid): they receive and acknowledge every K-block like the others, and free c_0 at once;
- the cores past the bounding box (no work, not in the receiver grid): they only multicast their own K-blocks
  into it, and otherwise reserve, push and free c_0 to keep its pointers in step.

K-block j comes from core j / (w / in0_block_w) (the kernel's `block_id == sender_id`). A core in the receiver
grid sends it as the 2D block-sharded reader does (one multicast to the whole rectangle, itself included,
straight out of the shard, or out of a copy in c_0 when its rows lie apart there: extract_shard_sub_blocks),
waiting for the rectangle's other num_dests - 1 cores; a core outside it copies the block into c_0 and
multicasts it to the whole rectangle (num_dests cores, no loopback) after all of them have reserved space.
TT-Metal runs one kernel and branches on its sender id; kgen emits one kernel per core (`in0_sharded_<i>`),
so that whose turn it is is a loop bound, not a runtime branch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgen.gen.dataflow.kernels import (A, dm_kernel, in0_shard_copy, in0_shard_handover, noc_rect, out_block_loops,
                                       receiver_block)
from kgen.gen.ir import VALID, CoreRange, Kernel, Loop, Node, RuntimeArg, op
from kgen.gen.rules import CB_IN0, CB_IN0_SHARD, PlanError, round_up_tiles
from kgen.gen.shards import WIDTH_M_RULE, width_shard

if TYPE_CHECKING:
    from kgen.gen.matmul_spec import MatmulSpec
    from kgen.gen.planned import Plan

WHOLE_SHARDS_RULE = "kgen: sharded tensors in whole shards"


def width_shards(spec: MatmulSpec, mt: int, grid: tuple[int, int], per_core_m: int, choices: list[str]) -> int:
    """The shards that hold K tiles (kgen's Layout.in0_shards; the rest of the grid's cores hold padding only),
    after TT's rules on them: "M must be equal to per_core_M" (no padding) and K in whole shards (kgen's)."""
    rows, width, sgrid = width_shard(spec, grid)
    kt = round_up_tiles(spec.k)
    if per_core_m != mt:
        raise PlanError(WIDTH_M_RULE, f"in0 = l1_width_sharded with per_core_M = {per_core_m}: TT-Metal requires "
                        f"\"M ({mt}) must be equal to per_core_M ({per_core_m})\"", spec.span("block.per_core"),
                        f"per_core_M = {mt}")
    if not width or kt % width:
        raise PlanError(WHOLE_SHARDS_RULE, f"in0 = l1_width_sharded in shards {width} tiles wide, which do not "
                        f"divide Kt = {kt}: kgen shards only evenly divided tensors", spec.span("memory"),
                        "a shard width dividing K")
    shards = kt // width
    cells = sgrid[0] * sgrid[1]
    if shards > cells:
        raise PlanError("a sharded tensor's shards fit its shard grid (ttnn ShardSpec)",
                        f"in0's {shards} shards of {width} K tiles do not fit the {cells} cores of its "
                        f"{sgrid[0]} x {sgrid[1]} shard grid", spec.span("memory"), "a wider shard or a larger grid")
    choices.append(f"in0 width-sharded: {shards} shards of {rows} x {width} tiles on cores 0..{shards - 1} of the "
                   f"{sgrid[0]} x {sgrid[1]} grid (row-major), every core of it multicasting its K slice")
    return shards


def shard_cores(p: Plan) -> CoreRange:
    """Every core of the compute grid: each holds a shard (or padding) and runs the sharded reader."""
    gx, gy = p.grid_requested
    return CoreRange(0, 0, gx - 1, gy - 1)


def box_size(p: Plan) -> int:
    """The cores of the multicast rectangle, the bounding box of the cores with work (the factory's
    in0_mcast_receiver_num_cores; its num_dests is the same, the grid being at least as large)."""
    return p.grid[0] * p.grid[1]


def width_sharded_kernels(p: Plan, noc: int, sems: tuple[tuple[str, int], ...]) -> list[Kernel]:
    """One kernel per core of the grid, in0_sharded_<i> on core i (row-major)."""
    gx, gy = p.grid_requested
    bx, by = p.grid
    box, per_shard, tiles = box_size(p), p.in0_shard_w // p.in0_block_w, p.in0_block_tiles
    rect = noc_rect(noc, A(0), A(0), A(bx - 1), A(by - 1))
    kernels = []
    for i in range(gx * gy):
        in_grid, has_work = i < box, i < p.num_cores
        senders = {j: (RuntimeArg(f"sender{j}_noc_x", "noc_x", A(j % gx)),
                       RuntimeArg(f"sender{j}_noc_y", "noc_y", A(j // gx)))
                   for j in range(p.in0_shards) if j != i and in_grid}

        def step(j: int) -> Loop:
            if j == i:
                body, note = _send(p, rect, box, in_grid), "this core's shard"
            elif in_grid:
                body = receiver_block(CB_IN0, tiles, "in0_sender", "in0_receiver", senders[j])
                note = f"from core {j}"
            else:
                body = [op("cb_reserve_back", CB_IN0, tiles), op("cb_push_back", CB_IN0, tiles)]
                note = f"core {j}'s, multicast to the cores with work only: c_0 kept in step"
            if not has_work:
                # (TT's reader pops without a wait; kgen's CB protocol waits for its own pages first)
                body = body + [op("cb_wait_front", CB_IN0, tiles),
                               op("cb_pop_front", CB_IN0, tiles, note="no output work: c_0 freed at once")]
            return Loop("kb", 0, per_shard, tuple(body), f"K-blocks {j * per_shard}..{(j + 1) * per_shard - 1}: {note}")
        k_loops = tuple(step(j) for j in range(p.in0_shards))
        coords = rect + tuple(a for j in sorted(senders) for a in senders[j])
        kernels.append(dm_kernel(f"in0_sharded_{i}", "NCRISC", noc, CoreRange(i % gx, i // gx, i % gx, i // gx),
                                 out_block_loops(p, lambda first: k_loops), (),
                                 (("cb_in0", CB_IN0), ("cb_in0_sharded", CB_IN0_SHARD)), sems, coords))
    return kernels


def _send(p: Plan, rect: tuple[RuntimeArg, ...], box: int, in_grid: bool) -> list[Node]:
    """One K-block of this core's shard handed to the rectangle, as TT's reader does it (see the module)."""
    tiles, page = p.in0_block_tiles, p.cb(CB_IN0).page_bytes
    if not in_grid:
        return [op("cb_reserve_back", CB_IN0, tiles),
                *in0_shard_copy(p, "this core's K slice, into c_0 to multicast from"),
                op("sem_wait", "in0_sender", box, note="every core of the rectangle has reserved space"),
                op("sem_set", "in0_sender", 0), op("mcast_cb", CB_IN0, tiles, tiles * page, *rect, box),
                *([op("noc_writes_flushed")] if p.arch.behaviour.flush_mcast_before_flag else []),
                op("sem_set", "in0_receiver", VALID, note="the local word the flag multicast copies"),
                op("mcast_sem_set", "in0_receiver", VALID, *rect, box), op("noc_writes_flushed"),
                op("cb_push_back", CB_IN0, tiles)]
    if box == 1:        # the rectangle is this core: only the copy into c_0, no handshake
        return [op("cb_reserve_back", CB_IN0, tiles), *in0_shard_copy(p, "this core's K slice, into its own c_0"),
                op("cb_push_back", CB_IN0, tiles)]
    return in0_shard_handover(p, rect, box, "rectangle")
