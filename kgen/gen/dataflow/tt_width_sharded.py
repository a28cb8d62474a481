"""TT-Metal's in0 reader for a width-sharded in0 on the 1D in0-multicast factory, for port-check: the factory's
args for reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp on each core of the grid
(process_mcast_in0_program_and_create_override_variables with in0_is_sharded, tt-metal @00629f0f, in the
argument layout of the 0.81.1 kernel), and where its op counts differ from kgen's in0_sharded_<i> kernels
(kgen/gen/dataflow/in0_width_sharded.py)."""

from __future__ import annotations

from typing import Any

from kgen.core.manifest import cores_of
from kgen.core.types import Placement
from kgen.gen.dataflow import tt_transpose
from kgen.gen.dataflow.in0_width_sharded import box_size
from kgen.gen.dataflow.kernels import in0_shard_is_copied
from kgen.gen.dataflow.tt_program import INTERLEAVED_L1, ExpectedDifference, TtKernelArgs, noc_index

READER = "reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp"
WHY_C2 = ("TT-Metal's block-sharded reader reserves and pushes its shard CB c_2 once, to take the shard's address; "
          "kgen reads c_2's read pointer")


def in0_width_sharded_1d(f: Any, k: dict) -> TtKernelArgs:
    """The reader on core i of the grid (its kernel in0_sharded_<i>). Compile-time args: core_has_output_block_work
    (i < cores with work), core_in_in0_receiver_mcast_grid (i < the bounding box of the cores with work, the
    factory's in0_mcast_receiver_num_dests), the block's tiles and bytes, in0_last_ktile_w / _h, num_blocks, the
    out blocks along N and M, the semaphores, in0_mcast_num_dests = in0_mcast_num_cores = that box's cores, num_x
    and num_y = the sender cores' bounding box (the grid), transpose_mcast 0, the shard's width and height in
    tiles, in0_block_w, in0_block_h, B, fuse_op 0, then TensorAccessorArgs(in0) (as INTERLEAVED_L1, unread),
    the sparsity placeholder and num_batch_compute. Runtime args: sender_id i, the box's corners (swapped on
    NOC 1), the NoC x of the grid's columns, then the NoC y of its rows. Named args as the factory gives each
    group (cb_l1_array names c_6, which the 0.81.1 kernel does not read and kgen does not allocate)."""
    p = f.plan
    gx, gy = p.grid_requested
    bx, by = p.grid
    box = box_size(p)
    tile = p.cb(0).page_bytes
    rt = []
    core = (0, 0)
    for core in cores_of(k["core_ranges"]):
        lo, hi = (0, 0), (bx - 1, by - 1)
        if noc_index(k) == 1:
            lo, hi = hi, lo
        rt.append((core, (core[1] * gx + core[0], {"noc_x": lo[0]}, {"noc_y": lo[1]}, {"noc_x": hi[0]},
                          {"noc_y": hi[1]}, *({"noc_x": x} for x in range(gx)), *({"noc_y": y} for y in range(gy)))))
    i = core[1] * gx + core[0]
    work = i < p.num_cores
    named = {"cb_in0": 0, "cb_in0_sharded": 2, "cb_l1_array": 6}
    if work:
        named.update(cb_sparsity=6, num_active=0)
    return TtKernelArgs(
        k["name"], READER,
        (int(work), int(i < box), p.in0_block_tiles, p.in0_block_tiles * tile, *tt_transpose.in0_last_ktile(p),
         p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim, f.sems["in0_sender"], f.sems["in0_receiver"],
         box, box, gx, gy, 0, p.in0_shard_w, p.per_core_m, p.in0_block_w, p.out_block_h, f.batch,
         0,                                          # fuse_op
         INTERLEAVED_L1, f.page["in0"], 0, 0,        # TensorAccessorArgs(in0) (see INTERLEAVED_L1), sparsity's
         0),                                         # num_batch_compute
        named, {"SKIP_MCAST": "1"} if box == 1 else {}, tuple(rt))


def width_sharded_differences(p: Any) -> tuple[ExpectedDifference, ...]:
    """Where TT's reader and kgen's in0_sharded_<i> kernels count differently by design, with the counts the
    kernels' structure give: each K-block is sent once per out block, by a core inside the multicast rectangle
    (`sends_in`) or outside it (`sends_out`)."""
    if not (p.is_1d and p.memory.in0 == Placement.L1_WIDTH_SHARDED):
        return ()
    cores, box, obh = p.grid_requested[0] * p.grid_requested[1], box_size(p), p.out_block_h
    per_shard = p.in0_shard_w // p.in0_block_w
    rounds = p.batch_ct * p.num_blocks_h_dim * p.num_blocks_w_dim
    inside = sum(1 for g in range(p.num_blocks) if g // per_shard < box)
    sends_in, sends_out = rounds * inside, rounds * (p.num_blocks - inside)
    out: list[ExpectedDifference] = [("cb_reserve_back", cores, WHY_C2), ("cb_push_back", cores, WHY_C2)]
    idle = (cores - p.num_cores) * rounds * p.num_blocks
    if idle:
        out.append(("cb_wait_front", -idle, "a core without output work frees each K-block of c_0 at once: TT-Metal's "
                                            "reader pops it without a wait, kgen's waits for its own pages first"))
    copies = 0 if in0_shard_is_copied(p) else sends_out
    local = sends_in if box == 1 and not in0_shard_is_copied(p) else 0
    if copies or local:
        why = ("a core outside the multicast rectangle: TT-Metal's reader multicasts a K-block contiguous in its shard "
               "straight out of it, kgen copies it into c_0 first (one local read per tile row and a barrier) and "
               "multicasts c_0" if copies else "")
        if local:
            why += ("; " if why else "") + ("a rectangle of one core: TT-Metal's reader copies its K-block into c_0 "
                                            "with one NoC write to itself, kgen with one local read per tile row "
                                            "and a barrier")
        out += [("noc_async_read", -(copies + local) * obh, why), ("noc_async_read_barrier", -(copies + local), why)]
        if local:
            out.append(("noc_async_write", local, why))
    if box == 1 and sends_in:
        out.append(("noc_semaphore_wait", 2 * sends_in, "a rectangle of one core: TT-Metal's reader still waits for "
                                                         "0 acknowledgements and for its own VALID flag per K-block; "
                                                         "kgen's kernel has no handshake"))
    if p.arch.behaviour.flush_mcast_before_flag and sends_out + (sends_in if box > 1 else 0):
        out.append(("noc_async_writes_flushed", -(sends_out + (sends_in if box > 1 else 0)),
                    "kgen also flushes the data multicast before the flag multicast on Blackhole, as its other "
                    "senders do"))
    return tuple(out)
