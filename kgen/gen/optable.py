"""The op table: every IR op kind once, with its facts.

Each row says what an op is: its arguments in print order, the processor that runs it, the TT-Metal
0.81.1 header and C++ function it prints as (the compute template holds one macro per op, named after
the kind), what it does to the circular buffers and to DST, and the work one execution does (tiles
unpacked, packed, moved over the NoC). The renderer, the verifier, the performance model and `ab`'s op
counts read these rows instead of each keeping its own list of kinds.
Compute ops mirror TT-Metal's compute API (tt_metal/hw/inc/api/compute/), data-movement ops its
dataflow API (tt_metal/hw/inc/api/dataflow/dataflow_api.h).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

# processor
COMPUTE, DATAFLOW, ANY = "compute", "dataflow", "any"      # ANY: the CB protocol, in every kernel
# TRISC thread whose configuration or work a compute op is
UNPACK, MATH, PACK = "unpack", "math", "pack"
# category: what kind of step the op is
STARTUP, RECONFIG, L1_ACC_SWITCH = "startup", "reconfig", "l1_acc_switch"
DST_PROTOCOL, CB_PROTOCOL = "dst_protocol", "cb_protocol"
MATMUL, DATACOPY, ELTWISE, PACK_OP, SFPU = "matmul", "datacopy", "eltwise", "pack", "sfpu"
NOC_READ, NOC_WRITE, BARRIER, SEMAPHORE, MULTICAST = "noc_read", "noc_write", "barrier", "semaphore", "multicast"
CONFIGURING = (STARTUP, RECONFIG, L1_ACC_SWITCH)
# DST effect
ACQUIRE, COMMIT, WAIT, RELEASE = "acquire", "commit", "wait", "release"   # tile_regs_* (the DST handshake)
WRITES_DST, READS_DST = "writes", "reads"

_API = "api/compute/"
# TT's fused-activation helpers, on the JIT include path through ttnn/cpp (configs/toolchain.toml)
FUSED_ACTIVATION_HEADER = "ttnn/operations/matmul/device/kernels/compute/bmm_fused_activation.hpp"


@dataclass(frozen=True)
class Work:
    """What one execution of an op does, in tiles, pages and transactions."""

    unpack_tiles: int = 0        # tiles the unpackers bring from L1 into SrcA/SrcB
    pack_tiles: int = 0          # tiles the packer writes from DST into a CB
    dst_sections: int = 0        # DST sections opened
    noc_read_tiles: int = 0      # tiles read from a tensor over the NoC
    noc_write_pages: int = 0     # pages written to a tensor over the NoC
    multicasts: int = 0          # multicast transactions issued
    semaphore_ops: int = 0       # semaphore waits, sets and increments (a semaphore multicast counts)
    sfpu_tiles: int = 0          # DST tiles an SFPU activation runs over (on the pack thread)


@dataclass(frozen=True)
class OpSpec:
    kind: str
    args: tuple[str, ...]                 # argument names, in print order
    processor: str                        # COMPUTE | DATAFLOW | ANY
    category: str
    thread: str = ""                      # compute ops: the TRISC thread it configures or occupies
    header: str = ""                      # the compute API header that declares it
    cxx: str = ""                         # the C++ function it prints as
    cb: str = ""                          # CB effect: wait | pop | reserve | push (the CB protocol), else ""
    # CB tiles read at the front, as (CB arg, first-tile arg, tile count: an int or an arg name)
    reads_front: tuple[tuple[str, str, int | str], ...] = ()
    writes_back: str = ""                 # the CB arg whose reserved pages the op fills
    dst: str = ""                         # DST effect: acquire | commit | wait | release | writes | reads
    # DST tiles written (WRITES_DST) or packed (READS_DST) by one execution, from the op's arguments
    dst_tiles: Callable[[Any], int] = field(default=lambda o: 0, compare=False)
    work: Callable[[Any], Work] = field(default=lambda o: Work(), compare=False)


def matmul_unpacks(o: Any) -> tuple[tuple[str, int], tuple[str, int]]:
    """One `matmul_block` call's unpacks as ((operand held, tiles), (operand streamed, tiles)): LLK unpacks
    min(rt, ct) held tiles and rt*ct streamed ones per call on the two unpackers (in0 -> SrcB, in1 -> SrcA);
    in1 streams when ct >= rt, else in0 streams (tt-llk llk_unpack_AB_matmul.h)."""
    rt, ct = int(o["rt"]), int(o["ct"])
    held, streamed = ("in0", "in1") if ct >= rt else ("in1", "in0")
    return (held, min(rt, ct)), (streamed, rt * ct)


def _matmul_work(o: Any) -> Work:
    (_, held), (_, streamed) = matmul_unpacks(o)
    return Work(unpack_tiles=held + streamed)


def _compute(kind: str, args: tuple[str, ...], category: str, thread: str, header: str, cxx: str = "",
             **facts: Any) -> OpSpec:
    return OpSpec(kind, args, COMPUTE, category, thread, _API + header if header else "", cxx or kind, **facts)


def _dataflow(kind: str, args: tuple[str, ...], category: str, cxx: str, **facts: Any) -> OpSpec:
    return OpSpec(kind, args, DATAFLOW, category, cxx=cxx, **facts)


_TILE_ARGS = ("tensor", "cb", "start", "rows", "cols", "row_stride", "row_extent", "col_extent")

_ROWS: tuple[OpSpec, ...] = (
    # compute: init and reconfiguration
    _compute("hw_startup", ("in0", "in1", "out"), STARTUP, UNPACK, "compute_kernel_hw_startup.h",
             "compute_kernel_hw_startup"),
    _compute("matmul_init", ("in0", "in1", "transpose", "ct", "rt", "kt"), RECONFIG, UNPACK, "matmul.h",
             "matmul_block_init"),
    _compute("reconfig_srca", ("old", "new"), RECONFIG, UNPACK, "reconfig_data_format.h", "reconfig_data_format_srca"),
    _compute("reconfig_srcab", ("srca_old", "srca_new", "srcb_old", "srcb_new"), RECONFIG, UNPACK,
             "reconfig_data_format.h", "reconfig_data_format"),
    _compute("pack_reconfig_format", ("cb",), RECONFIG, PACK, "reconfig_data_format.h", "pack_reconfig_data_format"),
    _compute("pack_l1_acc", ("enable",), L1_ACC_SWITCH, PACK, "pack.h", "pack_reconfig_l1_acc"),
    _compute("pack_relu", ("mode",), RECONFIG, PACK, "pack.h", "pack_relu_config"),     # mode: none | zero
    # the SFPU activation's init on the pack thread (ActivationInitHelper<type, param0, param1>::init())
    OpSpec("activation_init", ("activation",), COMPUTE, RECONFIG, PACK, FUSED_ACTIVATION_HEADER,
           "ActivationInitHelper"),
    _compute("copy_init", ("cb",), RECONFIG, UNPACK, "tile_move_copy.h"),
    _compute("add_bcast_rows_init", ("a", "b"), RECONFIG, UNPACK, "bcast.h"),
    _compute("pack_untilize_init", ("cb", "block_ct", "full_ct"), RECONFIG, PACK, "pack_untilize.h",
             "pack_untilize_dest_init"),
    _compute("pack_untilize_uninit", ("cb",), RECONFIG, PACK, "pack_untilize.h"),
    # compute: the DST handshake between math and pack (declared by common.h, always included)
    _compute("tile_regs_acquire", (), DST_PROTOCOL, MATH, "", dst=ACQUIRE, work=lambda o: Work(dst_sections=1)),
    _compute("tile_regs_commit", (), DST_PROTOCOL, MATH, "", dst=COMMIT),
    _compute("tile_regs_wait", (), DST_PROTOCOL, PACK, "", dst=WAIT),
    _compute("tile_regs_release", (), DST_PROTOCOL, PACK, "", dst=RELEASE),
    # tile_regs_wait's place when an SFPU activation is fused: the pack thread waits for math's DST
    # section (the same semaphore), runs the activation over `tiles` DST tiles, then packs
    # (apply_activation_from_pack in bmm_fused_activation.hpp)
    OpSpec("activation_apply", ("activation", "tiles"), COMPUTE, SFPU, PACK, FUSED_ACTIVATION_HEADER,
           "apply_activation_from_pack", dst=WAIT, work=lambda o: Work(sfpu_tiles=int(o["tiles"]))),
    # compute: math and pack
    _compute("matmul_block", ("in0", "in1", "in0_tile", "in1_tile", "dst", "transpose", "ct", "rt", "kt"), MATMUL,
             MATH, "matmul.h", reads_front=(("in0", "in0_tile", 1), ("in1", "in1_tile", "ct")), dst=WRITES_DST,
             dst_tiles=lambda o: o["ct"] * o["rt"], work=_matmul_work),
    _compute("copy_block", ("cb", "tile", "dst", "tiles"), DATACOPY, MATH, "tile_move_copy.h",   # reload partials -> DST
             reads_front=(("cb", "tile", "tiles"),), dst=WRITES_DST, dst_tiles=lambda o: o["tiles"],
             work=lambda o: Work(unpack_tiles=int(o["tiles"]))),
    _compute("copy_tile", ("cb", "tile", "dst"), DATACOPY, MATH, "tile_move_copy.h", reads_front=(("cb", "tile", 1),),
             dst=WRITES_DST, dst_tiles=lambda o: 1, work=lambda o: Work(unpack_tiles=1)),
    _compute("add_bcast_rows", ("a", "b", "a_tile", "b_tile", "dst"), ELTWISE, MATH, "bcast.h", "add_tiles_bcast_rows",
             reads_front=(("a", "a_tile", 1), ("b", "b_tile", 1)), dst=WRITES_DST, dst_tiles=lambda o: 1,
             work=lambda o: Work(unpack_tiles=2)),
    _compute("pack_block", ("cb", "dst", "tiles"), PACK_OP, PACK, "pack.h", writes_back="cb", dst=READS_DST,
             dst_tiles=lambda o: o["tiles"], work=lambda o: Work(pack_tiles=int(o["tiles"]))),
    _compute("pack_tile", ("dst", "cb"), PACK_OP, PACK, "pack.h", writes_back="cb", dst=READS_DST,
             dst_tiles=lambda o: 1, work=lambda o: Work(pack_tiles=1)),
    _compute("pack_untilize_dest", ("cb", "block_ct", "full_ct", "rows", "block_index"), PACK_OP, PACK,
             "pack_untilize.h", writes_back="cb", dst=READS_DST, dst_tiles=lambda o: o["block_ct"],
             work=lambda o: Work(pack_tiles=int(o["block_ct"]))),
    # the CB protocol (every kernel)
    OpSpec("cb_wait_front", ("cb", "tiles"), ANY, CB_PROTOCOL, UNPACK, cxx="cb_wait_front", cb="wait"),
    OpSpec("cb_pop_front", ("cb", "tiles"), ANY, CB_PROTOCOL, UNPACK, cxx="cb_pop_front", cb="pop"),
    OpSpec("cb_reserve_back", ("cb", "tiles"), ANY, CB_PROTOCOL, PACK, cxx="cb_reserve_back", cb="reserve"),
    OpSpec("cb_push_back", ("cb", "tiles"), ANY, CB_PROTOCOL, PACK, cxx="cb_push_back", cb="push"),
    # data movement. Tiles past the tensor in a padded last block are skipped where `row_extent` /
    # `col_extent` (an Extent, or None: every tile is inside) say so; a skipped tile's L1 page keeps its slot.
    _dataflow("read_tiles", _TILE_ARGS, NOC_READ, "noc_async_read_page", writes_back="cb",      # DRAM -> CB write ptr
              work=lambda o: Work(noc_read_tiles=int(o["rows"]) * int(o["cols"]))),
    _dataflow("write_tiles", _TILE_ARGS, NOC_WRITE, "noc_async_write_page",                     # CB read ptr -> DRAM
              work=lambda o: Work(noc_write_pages=int(o["rows"]) * int(o["cols"]))),
    # Row-major (untilized) output: `rows` pages from `start_row`, each `row_bytes` long, written at
    # byte `offset_bytes` within the page; the CB holds the rows back to back.
    _dataflow("write_rows", ("tensor", "cb", "start_row", "rows", "row_bytes", "offset_bytes"), NOC_WRITE,
              "noc_async_write_page", work=lambda o: Work(noc_write_pages=int(o["rows"]))),
    # A tensor width-sharded over the DRAM banks (the DRAM-sharded factory's in1): `tiles` pages, back to
    # back from page `offset` of DRAM bank `bank`'s shard, in one read into the CB's write pointer
    _dataflow("read_bank_tiles", ("tensor", "cb", "bank", "offset", "tiles", "page_bytes"), NOC_READ,
              "noc_async_read", writes_back="cb", work=lambda o: Work(noc_read_tiles=int(o["tiles"]))),
    # A block of this core's L1 shard (CB `src_cb`, row-major `row_stride` tiles wide) into `cb`'s write
    # pointer: `rows` local NoC reads of `cols` tiles of `page_bytes` each
    _dataflow("copy_shard", ("cb", "src_cb", "start", "rows", "cols", "row_stride", "page_bytes"), NOC_READ,
              "noc_async_read", writes_back="cb"),
    _dataflow("noc_read_barrier", (), BARRIER, "noc_async_read_barrier"),
    _dataflow("noc_write_barrier", (), BARRIER, "noc_async_write_barrier"),
    # Blackhole: data multicast flushed before the flag multicast
    _dataflow("noc_writes_flushed", (), BARRIER, "noc_async_writes_flushed"),
    _dataflow("sem_wait", ("sem", "value"), SEMAPHORE, "noc_semaphore_wait", work=lambda o: Work(semaphore_ops=1)),
    _dataflow("sem_set", ("sem", "value"), SEMAPHORE, "noc_semaphore_set", work=lambda o: Work(semaphore_ops=1)),
    # Remote cores are named by RuntimeArgs (NoC coordinates reach the kernel at run time).
    _dataflow("sem_inc", ("sem", "noc_x", "noc_y", "value"), SEMAPHORE, "noc_semaphore_inc",   # remote increment
              work=lambda o: Work(semaphore_ops=1)),
    # Multicast rectangles in NoC order: on NOC 1 start is the far corner (TT-Metal swaps start and
    # end for NOC 1 in its mcast factories).
    _dataflow("mcast_cb", ("cb", "tiles", "bytes", "start_x", "start_y", "end_x", "end_y", "num_dests"), MULTICAST,
              "noc_async_write_multicast", work=lambda o: Work(multicasts=1)),
    # copies this core's word of `sem` (set to `value` just before) to the same semaphore on the rectangle
    _dataflow("mcast_sem_set", ("sem", "value", "start_x", "start_y", "end_x", "end_y", "num_dests"), MULTICAST,
              "noc_semaphore_set_multicast", work=lambda o: Work(multicasts=1, semaphore_ops=1)),
    # Loopback multicasts (TT-Metal's MCAST_INCL_SRC): the rectangle's cores *including this one*, and
    # num_dests counts it. `mcast_shard` sends `tiles` tiles of this core's L1 shard (CB `src_cb` from
    # tile `start`, contiguous there) into `cb`'s reserved pages, its own included.
    _dataflow("mcast_shard", ("cb", "src_cb", "start", "page_bytes", "tiles", "bytes", "start_x", "start_y", "end_x",
                              "end_y", "num_dests"), MULTICAST, "noc_async_write_multicast_loopback_src",
              writes_back="cb", work=lambda o: Work(multicasts=1)),
    _dataflow("mcast_sem_set_loopback", ("sem", "value", "start_x", "start_y", "end_x", "end_y", "num_dests"),
              MULTICAST, "noc_semaphore_set_multicast_loopback_src",
              work=lambda o: Work(multicasts=1, semaphore_ops=1)),
)

OPS: Mapping[str, OpSpec] = {row.kind: row for row in _ROWS}


def kinds_in(*categories: str) -> frozenset[str]:
    """The op kinds of these categories."""
    return frozenset(k for k, row in OPS.items() if row.category in categories)


def work_of(o: Any) -> Work:
    """What one execution of an op does."""
    return OPS[o.kind].work(o)
