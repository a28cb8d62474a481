"""The op table: every IR op kind once, with its facts.

Each row says what an op is: its arguments in print order, the processor that runs it, the TT-Metal
0.81.1 header and C++ function it prints as (the compute template holds one macro per op, named after
the kind), what it does to the circular buffers and to DST, and the work one execution does (tiles
unpacked, packed, moved over the NoC). Two groups of columns carry the rest of an op's rules: its
protocol effects (the CB, DST and semaphore handshakes, the L1 it fills, the index bounds it must
keep), which the verifier applies, and its cost term, which the performance model prices. The
renderer, the verifier, the performance model and `ab`'s op counts read these rows instead of each
keeping its own list of kinds: no module outside this table names an op kind.
Compute ops mirror TT-Metal's compute API (tt_metal/hw/inc/api/compute/), data-movement ops its
dataflow API (tt_metal/hw/inc/api/dataflow/dataflow_api.h).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum, auto
from typing import Any, Callable, Mapping


class OpKind(StrEnum):
    """Every op kind, spelled once: the value (the member's name in lower case) is what the IR, the
    kernel templates' macros and the emulator's report print."""

    # compute: init and reconfiguration
    HW_STARTUP = auto()
    MATMUL_INIT = auto()
    RECONFIG_SRCA = auto()
    RECONFIG_SRCAB = auto()
    PACK_RECONFIG_FORMAT = auto()
    PACK_L1_ACC = auto()
    PACK_RELU = auto()
    ACTIVATION_INIT = auto()
    COPY_INIT = auto()
    TRANSPOSE_INIT = auto()
    ADD_BCAST_ROWS_INIT = auto()
    PACK_UNTILIZE_INIT = auto()
    PACK_UNTILIZE_UNINIT = auto()
    # compute: the DST handshake, math and pack
    TILE_REGS_ACQUIRE = auto()
    TILE_REGS_COMMIT = auto()
    TILE_REGS_WAIT = auto()
    TILE_REGS_RELEASE = auto()
    ACTIVATION_APPLY = auto()
    MATMUL_BLOCK = auto()
    COPY_BLOCK = auto()
    COPY_TILE = auto()
    TRANSPOSE_TILE = auto()
    ADD_BCAST_ROWS = auto()
    PACK_BLOCK = auto()
    PACK_TILE = auto()
    PACK_UNTILIZE_DEST = auto()
    # the CB protocol (every kernel)
    CB_WAIT_FRONT = auto()
    CB_POP_FRONT = auto()
    CB_RESERVE_BACK = auto()
    CB_PUSH_BACK = auto()
    # data movement
    READ_TILES = auto()
    WRITE_TILES = auto()
    WRITE_ROWS = auto()
    READ_BANK_TILES = auto()
    COPY_SHARD = auto()
    NOC_READ_BARRIER = auto()
    NOC_WRITE_BARRIER = auto()
    NOC_WRITES_FLUSHED = auto()
    SEM_WAIT = auto()
    SEM_SET = auto()
    SEM_INC = auto()
    MCAST_CB = auto()
    MCAST_SEM_SET = auto()
    MCAST_SHARD = auto()
    MCAST_SEM_SET_LOOPBACK = auto()


K = OpKind

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
# CB effect: the CB protocol step (cb_wait_front, cb_pop_front, cb_reserve_back, cb_push_back)
CB_WAIT, CB_POP, CB_RESERVE, CB_PUSH = "wait", "pop", "reserve", "push"
# DST effect
ACQUIRE, COMMIT, WAIT, RELEASE = "acquire", "commit", "wait", "release"   # tile_regs_* (the DST handshake)
WRITES_DST, READS_DST = "writes", "reads"
# semaphore effect: a wait for a value, a local set, a remote increment, a set multicast to a rectangle
SEM_WAITS, SEM_SETS, SEM_INCREMENTS, SEM_MULTICASTS = "wait", "set", "inc", "mcast"
# L1 fill: what the op writes into its `cb` (the shared-region check): the pages its work packs or
# reads, at the write pointer; the whole reserved area (rows of a row-major block); or an unmodelled
# write (a multicast into the CB), which a shared region cannot take
FILLS_PAGES, FILLS_RESERVED, FILLS_UNMODELLED = "pages", "reserved", "unmodelled"
# index bounds the verifier checks over every loop iteration and core: a TileNest or RowNest of tensor
# pages, a block of the shard CB (copied, or multicast straight out of it), the matmul's operand tiles
TILE_NEST, ROW_NEST, SHARD_BLOCK, SHARD_MCAST, MATMUL_OPERANDS = (
    "tile_nest", "row_nest", "shard_block", "shard_mcast", "matmul_operands")
# the fused activation's two steps on the pack thread
ACTIVATION_INIT, ACTIVATION_APPLY = "init", "apply"
# the compute stage an op opens or closes: the K loop's matmul, the bias stage, the untilize stage
STAGE_MATMUL, STAGE_BIAS, STAGE_UNTILIZE = "matmul", "bias", "untilize"


class Cost(StrEnum):
    """The cost term the performance model prices an op by (kgen.perf.model, one rule per term)."""

    MATMUL = auto()          # matmul_block: FPU tile products, the LLK unpack of both operands
    RELOAD = auto()          # partials unpacked and copied back into DST (the policy's reload)
    BIAS_ADD = auto()        # the bias stage's broadcast add: two unpacks and an eltwise op
    PACK = auto()            # tiles packed from DST (with or without L1 accumulation)
    UNTILIZE = auto()        # rows packed untilized
    RECONFIG = auto()        # a TRISC thread's init or reconfiguration
    DST_ACQUIRE = auto()     # math opens a DST section
    DST_WAIT = auto()        # pack waits for math's DST section
    SFPU = auto()            # DST_WAIT, then the fused SFPU activation over the section's tiles
    HANDSHAKE = auto()       # a CB or DST handshake call, a local semaphore set, a flush
    SHARD_COPY = auto()      # a block of this core's L1 shard copied into a CB
    TILE_READ = auto()       # interleaved tiles read (DRAM, L1, or already in place when sharded)
    BANK_READ = auto()       # one read of a DRAM bank's own shard
    READ_BARRIER = auto()    # waits for the reads in flight
    TILE_WRITE = auto()      # output tiles written
    ROW_WRITE = auto()       # output rows written
    WRITE_BARRIER = auto()   # waits for the writes in flight
    DATA_MCAST = auto()      # a block multicast
    SEM_MCAST = auto()       # a semaphore value multicast
    SEM_HANDSHAKE = auto()   # a semaphore wait or remote increment

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
    kind: OpKind
    args: tuple[str, ...]                 # argument names, in print order
    processor: str                        # COMPUTE | DATAFLOW | ANY
    category: str
    thread: str = ""                      # compute ops: the TRISC thread it configures or occupies
    header: str = ""                      # the compute API header that declares it
    cxx: str = ""                         # the C++ function it prints as
    # -- protocol effects (the verifier) --
    cb: str = ""                          # CB effect: CB_WAIT | CB_POP | CB_RESERVE | CB_PUSH, else ""
    # CB tiles read at the front, as (CB arg, first-tile arg, tile count: an int or an arg name)
    reads_front: tuple[tuple[str, str, int | str], ...] = ()
    # the CB args of reads_front whose pages the shared-region check counts as consumed when read
    consumes: tuple[str, ...] = ()
    writes_back: str = ""                 # the CB arg whose reserved pages the op fills
    fills: str = ""                       # what it writes into its `cb`: FILLS_PAGES | _RESERVED | _UNMODELLED
    dst: str = ""                         # DST effect: acquire | commit | wait | release | writes | reads
    # DST tiles written (WRITES_DST) or packed (READS_DST) by one execution, from the op's arguments
    dst_tiles: Callable[[Any], int] = field(default=lambda o: 0, compare=False)
    pads_dst: bool = False                # a narrowed last subblock leaves DST lanes to padding
    sem: str = ""                         # semaphore effect: SEM_WAITS | SEM_SETS | SEM_INCREMENTS | SEM_MULTICASTS
    loopback: bool = False                # a multicast that reaches its own core too (MCAST_INCL_SRC)
    bounds: str = ""                      # the index bounds it keeps: TILE_NEST | ROW_NEST | SHARD_* | ...
    activation: str = ""                  # the fused activation's step: ACTIVATION_INIT | ACTIVATION_APPLY
    # -- cost terms (the performance model) --
    work: Callable[[Any], Work] = field(default=lambda o: Work(), compare=False)
    cost: Cost | None = None              # the model's rule for its cycles
    opens: str = ""                       # the compute stage it starts: STAGE_MATMUL | STAGE_BIAS | ...
    closes: str = ""                      # the compute stage it ends
    feeds: bool = False                   # brings an input CB's blocks (a read, a multicast, their handshake)
    from_shard: bool = False              # takes a K-block out of this core's shard (a relay's hand-over)
    hand_over: bool = False               # part of what a relay's hand-over of a K-block costs


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


def _compute(kind: OpKind, args: tuple[str, ...], category: str, thread: str, header: str, cxx: str = "",
             **facts: Any) -> OpSpec:
    # an init or reconfiguration costs its thread a reconfiguration, whatever it configures
    facts.setdefault("cost", Cost.RECONFIG if category in CONFIGURING else None)
    return OpSpec(kind, args, COMPUTE, category, thread, _API + header if header else "", cxx or kind.value, **facts)


def _dataflow(kind: OpKind, args: tuple[str, ...], category: str, cxx: str, **facts: Any) -> OpSpec:
    return OpSpec(kind, args, DATAFLOW, category, cxx=cxx, **facts)


def _cb(kind: OpKind, effect: str, thread: str) -> OpSpec:
    return OpSpec(kind, ("cb", "tiles"), ANY, CB_PROTOCOL, thread, cxx=kind.value, cb=effect, cost=Cost.HANDSHAKE)


_TILE_ARGS = ("tensor", "cb", "start", "rows", "cols", "row_stride", "row_extent", "col_extent", "col_stride")
_MCAST_RECT = ("start_x", "start_y", "end_x", "end_y", "num_dests")

_ROWS: tuple[OpSpec, ...] = (
    # compute: init and reconfiguration
    _compute(K.HW_STARTUP, ("in0", "in1", "out"), STARTUP, UNPACK, "compute_kernel_hw_startup.h",
             "compute_kernel_hw_startup"),
    _compute(K.MATMUL_INIT, ("in0", "in1", "transpose", "ct", "rt", "kt"), RECONFIG, UNPACK, "matmul.h",
             "matmul_block_init", opens=STAGE_MATMUL),
    _compute(K.RECONFIG_SRCA, ("old", "new"), RECONFIG, UNPACK, "reconfig_data_format.h", "reconfig_data_format_srca"),
    _compute(K.RECONFIG_SRCAB, ("srca_old", "srca_new", "srcb_old", "srcb_new"), RECONFIG, UNPACK,
             "reconfig_data_format.h", "reconfig_data_format"),
    _compute(K.PACK_RECONFIG_FORMAT, ("cb",), RECONFIG, PACK, "reconfig_data_format.h", "pack_reconfig_data_format"),
    _compute(K.PACK_L1_ACC, ("enable",), L1_ACC_SWITCH, PACK, "pack.h", "pack_reconfig_l1_acc"),
    _compute(K.PACK_RELU, ("mode",), RECONFIG, PACK, "pack.h", "pack_relu_config"),     # mode: none | zero
    # the SFPU activation's init on the pack thread (ActivationInitHelper<type, param0, param1>::init())
    OpSpec(K.ACTIVATION_INIT, ("activation",), COMPUTE, RECONFIG, PACK, FUSED_ACTIVATION_HEADER,
           "ActivationInitHelper", activation=ACTIVATION_INIT, cost=Cost.RECONFIG),
    _compute(K.COPY_INIT, ("cb",), RECONFIG, UNPACK, "tile_move_copy.h"),
    # transpose_a: TT's transpose stage (in0_transpose_tile), unpack with transpose into SrcA, datacopy to DST
    _compute(K.TRANSPOSE_INIT, ("cb",), RECONFIG, UNPACK, "transpose.h"),
    _compute(K.ADD_BCAST_ROWS_INIT, ("a", "b"), RECONFIG, UNPACK, "bcast.h", opens=STAGE_BIAS),
    _compute(K.PACK_UNTILIZE_INIT, ("cb", "block_ct", "full_ct"), RECONFIG, PACK, "pack_untilize.h",
             "pack_untilize_dest_init", opens=STAGE_UNTILIZE),
    _compute(K.PACK_UNTILIZE_UNINIT, ("cb",), RECONFIG, PACK, "pack_untilize.h", closes=STAGE_UNTILIZE),
    # compute: the DST handshake between math and pack (declared by common.h, always included)
    _compute(K.TILE_REGS_ACQUIRE, (), DST_PROTOCOL, MATH, "", dst=ACQUIRE, work=lambda o: Work(dst_sections=1),
             cost=Cost.DST_ACQUIRE),
    _compute(K.TILE_REGS_COMMIT, (), DST_PROTOCOL, MATH, "", dst=COMMIT, cost=Cost.HANDSHAKE),
    _compute(K.TILE_REGS_WAIT, (), DST_PROTOCOL, PACK, "", dst=WAIT, cost=Cost.DST_WAIT),
    _compute(K.TILE_REGS_RELEASE, (), DST_PROTOCOL, PACK, "", dst=RELEASE, cost=Cost.HANDSHAKE),
    # tile_regs_wait's place when an SFPU activation is fused: the pack thread waits for math's DST
    # section (the same semaphore), runs the activation over `tiles` DST tiles, then packs
    # (apply_activation_from_pack in bmm_fused_activation.hpp)
    OpSpec(K.ACTIVATION_APPLY, ("activation", "tiles"), COMPUTE, SFPU, PACK, FUSED_ACTIVATION_HEADER,
           "apply_activation_from_pack", dst=WAIT, activation=ACTIVATION_APPLY,
           work=lambda o: Work(sfpu_tiles=int(o["tiles"])), cost=Cost.SFPU),
    # compute: math and pack
    _compute(K.MATMUL_BLOCK, ("in0", "in1", "in0_tile", "in1_tile", "dst", "transpose", "ct", "rt", "kt"), MATMUL,
             MATH, "matmul.h", reads_front=(("in0", "in0_tile", 1), ("in1", "in1_tile", "ct")), dst=WRITES_DST,
             dst_tiles=lambda o: o["ct"] * o["rt"], pads_dst=True, bounds=MATMUL_OPERANDS, work=_matmul_work,
             cost=Cost.MATMUL),
    # reload partials -> DST. `view`: the CB index the unpacker reads `cb`'s waited pages through (TT's
    # MM_PARTIALS_RELOAD_ALIAS_CB: an alias of the same L1 whose read pointer is first set to `cb`'s), or
    # None for `cb` itself; the pages read, waited and popped are `cb`'s either way
    _compute(K.COPY_BLOCK, ("cb", "tile", "dst", "tiles", "view"), DATACOPY, MATH, "tile_move_copy.h",
             reads_front=(("cb", "tile", "tiles"),), consumes=("cb",), dst=WRITES_DST, dst_tiles=lambda o: o["tiles"],
             work=lambda o: Work(unpack_tiles=int(o["tiles"])), cost=Cost.RELOAD),
    _compute(K.COPY_TILE, ("cb", "tile", "dst"), DATACOPY, MATH, "tile_move_copy.h", reads_front=(("cb", "tile", 1),),
             consumes=("cb",), dst=WRITES_DST, dst_tiles=lambda o: 1, work=lambda o: Work(unpack_tiles=1),
             cost=Cost.RELOAD),
    _compute(K.TRANSPOSE_TILE, ("cb", "tile", "dst"), DATACOPY, MATH, "transpose.h", reads_front=(("cb", "tile", 1),),
             consumes=("cb",), dst=WRITES_DST, dst_tiles=lambda o: 1, work=lambda o: Work(unpack_tiles=1),
             cost=Cost.RELOAD),
    _compute(K.ADD_BCAST_ROWS, ("a", "b", "a_tile", "b_tile", "dst"), ELTWISE, MATH, "bcast.h", "add_tiles_bcast_rows",
             reads_front=(("a", "a_tile", 1), ("b", "b_tile", 1)), consumes=("a",), dst=WRITES_DST,
             dst_tiles=lambda o: 1, work=lambda o: Work(unpack_tiles=2), cost=Cost.BIAS_ADD),
    _compute(K.PACK_BLOCK, ("cb", "dst", "tiles"), PACK_OP, PACK, "pack.h", writes_back="cb", fills=FILLS_PAGES,
             dst=READS_DST, dst_tiles=lambda o: o["tiles"], work=lambda o: Work(pack_tiles=int(o["tiles"])),
             cost=Cost.PACK),
    _compute(K.PACK_TILE, ("dst", "cb"), PACK_OP, PACK, "pack.h", writes_back="cb", fills=FILLS_PAGES, dst=READS_DST,
             dst_tiles=lambda o: 1, work=lambda o: Work(pack_tiles=1), cost=Cost.PACK),
    _compute(K.PACK_UNTILIZE_DEST, ("cb", "block_ct", "full_ct", "rows", "block_index"), PACK_OP, PACK,
             "pack_untilize.h", writes_back="cb", fills=FILLS_RESERVED, dst=READS_DST,
             dst_tiles=lambda o: o["block_ct"], work=lambda o: Work(pack_tiles=int(o["block_ct"])),
             cost=Cost.UNTILIZE),
    # the CB protocol (every kernel)
    _cb(K.CB_WAIT_FRONT, CB_WAIT, UNPACK),
    _cb(K.CB_POP_FRONT, CB_POP, UNPACK),
    _cb(K.CB_RESERVE_BACK, CB_RESERVE, PACK),
    _cb(K.CB_PUSH_BACK, CB_PUSH, PACK),
    # data movement. Tiles past the tensor in a padded last block are skipped where `row_extent` /
    # `col_extent` (an Extent, or None: every tile is inside) say so; a skipped tile's L1 page keeps its slot.
    _dataflow(K.READ_TILES, _TILE_ARGS, NOC_READ, "noc_async_read_page", writes_back="cb",      # DRAM -> CB write ptr
              fills=FILLS_PAGES, bounds=TILE_NEST, work=lambda o: Work(noc_read_tiles=int(o["rows"]) * int(o["cols"])),
              cost=Cost.TILE_READ, feeds=True),
    _dataflow(K.WRITE_TILES, _TILE_ARGS, NOC_WRITE, "noc_async_write_page", bounds=TILE_NEST,  # CB read ptr -> DRAM
              work=lambda o: Work(noc_write_pages=int(o["rows"]) * int(o["cols"])), cost=Cost.TILE_WRITE),
    # Row-major (untilized) output: `rows` pages from `start_row`, each `row_bytes` long, written at
    # byte `offset_bytes` within the page; the CB holds the rows back to back.
    _dataflow(K.WRITE_ROWS, ("tensor", "cb", "start_row", "rows", "row_bytes", "offset_bytes"), NOC_WRITE,
              "noc_async_write_page", bounds=ROW_NEST, work=lambda o: Work(noc_write_pages=int(o["rows"])),
              cost=Cost.ROW_WRITE),
    # A tensor width-sharded over the DRAM banks (the DRAM-sharded factory's in1): `tiles` pages, back to
    # back from page `offset` of DRAM bank `bank`'s shard, in one read into the CB's write pointer
    _dataflow(K.READ_BANK_TILES, ("tensor", "cb", "bank", "offset", "tiles", "page_bytes"), NOC_READ,
              "noc_async_read", writes_back="cb", fills=FILLS_PAGES,
              work=lambda o: Work(noc_read_tiles=int(o["tiles"])), cost=Cost.BANK_READ, feeds=True),
    # A block of this core's L1 shard (CB `src_cb`, row-major `row_stride` tiles wide) into `cb`'s write
    # pointer: `rows` local NoC reads of `cols` tiles of `page_bytes` each
    _dataflow(K.COPY_SHARD, ("cb", "src_cb", "start", "rows", "cols", "row_stride", "page_bytes"), NOC_READ,
              "noc_async_read", writes_back="cb", bounds=SHARD_BLOCK, cost=Cost.SHARD_COPY, feeds=True,
              from_shard=True, hand_over=True),
    _dataflow(K.NOC_READ_BARRIER, (), BARRIER, "noc_async_read_barrier", cost=Cost.READ_BARRIER, hand_over=True),
    _dataflow(K.NOC_WRITE_BARRIER, (), BARRIER, "noc_async_write_barrier", cost=Cost.WRITE_BARRIER),
    # Blackhole: data multicast flushed before the flag multicast
    _dataflow(K.NOC_WRITES_FLUSHED, (), BARRIER, "noc_async_writes_flushed", cost=Cost.HANDSHAKE, hand_over=True),
    _dataflow(K.SEM_WAIT, ("sem", "value"), SEMAPHORE, "noc_semaphore_wait", sem=SEM_WAITS,
              work=lambda o: Work(semaphore_ops=1), cost=Cost.SEM_HANDSHAKE, feeds=True, hand_over=True),
    _dataflow(K.SEM_SET, ("sem", "value"), SEMAPHORE, "noc_semaphore_set", sem=SEM_SETS,
              work=lambda o: Work(semaphore_ops=1), cost=Cost.HANDSHAKE),
    # Remote cores are named by RuntimeArgs (NoC coordinates reach the kernel at run time).
    _dataflow(K.SEM_INC, ("sem", "noc_x", "noc_y", "value"), SEMAPHORE, "noc_semaphore_inc",   # remote increment
              sem=SEM_INCREMENTS, work=lambda o: Work(semaphore_ops=1), cost=Cost.SEM_HANDSHAKE, feeds=True),
    # Multicast rectangles in NoC order: on NOC 1 start is the far corner (TT-Metal swaps start and
    # end for NOC 1 in its mcast factories).
    _dataflow(K.MCAST_CB, ("cb", "tiles", "bytes", *_MCAST_RECT), MULTICAST, "noc_async_write_multicast",
              fills=FILLS_UNMODELLED, work=lambda o: Work(multicasts=1), cost=Cost.DATA_MCAST, feeds=True,
              hand_over=True),
    # copies this core's word of `sem` (set to `value` just before) to the same semaphore on the rectangle
    _dataflow(K.MCAST_SEM_SET, ("sem", "value", *_MCAST_RECT), MULTICAST, "noc_semaphore_set_multicast",
              sem=SEM_MULTICASTS, work=lambda o: Work(multicasts=1, semaphore_ops=1), cost=Cost.SEM_MCAST,
              hand_over=True),
    # Loopback multicasts (TT-Metal's MCAST_INCL_SRC): the rectangle's cores *including this one*, and
    # num_dests counts it. `mcast_shard` sends `tiles` tiles of this core's L1 shard (CB `src_cb` from
    # tile `start`, contiguous there) into `cb`'s reserved pages, its own included.
    _dataflow(K.MCAST_SHARD, ("cb", "src_cb", "start", "page_bytes", "tiles", "bytes", *_MCAST_RECT), MULTICAST,
              "noc_async_write_multicast_loopback_src", writes_back="cb", fills=FILLS_UNMODELLED, loopback=True,
              bounds=SHARD_MCAST, work=lambda o: Work(multicasts=1), cost=Cost.DATA_MCAST, feeds=True,
              from_shard=True, hand_over=True),
    _dataflow(K.MCAST_SEM_SET_LOOPBACK, ("sem", "value", *_MCAST_RECT), MULTICAST,
              "noc_semaphore_set_multicast_loopback_src", sem=SEM_MULTICASTS, loopback=True,
              work=lambda o: Work(multicasts=1, semaphore_ops=1), cost=Cost.SEM_MCAST, hand_over=True),
)

OPS: Mapping[str, OpSpec] = {row.kind: row for row in _ROWS}     # keyed by OpKind; a plain str finds its row too
assert tuple(OPS) == tuple(OpKind), "one row per op kind, in the enum's order"


def kinds_in(*categories: str) -> frozenset[str]:
    """The op kinds of these categories."""
    return frozenset(k for k, row in OPS.items() if row.category in categories)


def work_of(o: Any) -> Work:
    """What one execution of an op does."""
    return OPS[o.kind].work(o)
