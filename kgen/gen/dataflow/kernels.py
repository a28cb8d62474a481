"""The building blocks of the data-movement kernels every factory assembles: tile-id expressions of a
core's blocks, block reads, the output writer, the multicast sender and receiver lifecycles, and a
kernel's host interface."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from kgen.core.types import TILE_HW, Placement, is_sharded
from kgen.gen.ir import INVALID, VALID, Affine, CoreRange, Extent, Kernel, Loop, Node, RuntimeArg, TensorArg, op
from kgen.gen.rules import CB_BIAS, CB_IN0, CB_IN0_SHARD, CB_IN1, CB_OUT

if TYPE_CHECKING:
    from kgen.gen.planned import Plan

A = Affine.of


class Tiles:
    """Tile-id expressions of one core's blocks (row-major interleaved tensors)."""

    def __init__(self, p: Plan):
        self.p = p

    def _a(self, **terms: int) -> Affine:
        """An affine expression whose core_y term is this core's M-block index and core_x its N-block
        index: core_y and core_x themselves on the 2D and reuse grids (swapped under transpose_mcast), the
        row-major core index core_y * grid_x + core_x for the 1D multicast factory's run of cores, or nothing for the block
        every core shares (Plan.core_m_terms, core_n_terms)."""
        index = {"core_y": self.p.core_m_terms, "core_x": self.p.core_n_terms}
        out = A(0)
        for v, c in terms.items():
            out = out + (A(0, **{w: k * c for w, k in index[v].items()}) if v in index else A(0, **{v: c}))
        return out

    def _batch(self, tiles_per_batch: int) -> dict[str, int]:
        """The batch loop's term: batch b's matrix starts b * (tiles of one matrix) in (the reader's MtKt,
        KtNt and the writer's MtNt); none while the batch is fused into M (batch_ct = 1)."""
        return {"b": tiles_per_batch} if self.p.batch_ct > 1 else {}

    def in0_block(self) -> Affine:
        p = self.p
        m_step, k_step = self.strides("in0")
        # row = core_y*per_core_M + bh*out_block_h; col = block*in0_block_w
        return self._a(core_y=p.per_core_m * m_step, bh=p.out_block_h * m_step, block=p.in0_block_w * k_step,
                       **self._batch(p.mt * p.kt))

    def strides(self, tensor: str) -> tuple[int, int]:
        """The page steps of one tile down and one tile across a block of `tensor` (in0: M, K; in1: K, N):
        a row-major tensor's (width, 1), or, stored transposed (transpose_a: in0 as K x M, transpose_b: in1
        as N x K), (1, the stored row's width): TT's `in0_tensor_stride_h = transpose_a ? 1 : Kt`,
        `in0_tensor_stride_w = transpose_a ? Mt : 1` and in1's likewise with Nt and Kt
        (matmul_multicore_reuse_mcast_2d_program_factory.cpp, 0.81.1)."""
        p = self.p
        if tensor == "in0":
            return (1, p.mt) if p.transpose_a else (p.kt, 1)
        if tensor == "in1":
            return (1, p.kt) if p.transpose_b else (p.nt, 1)
        return (p.nt, 1)

    def in1_block(self) -> Affine:
        p = self.p
        if p.transpose_b:
            # in1 stored N x K: row (K) = block*in0_block_w, one page a tile; column (N) Kt pages a tile
            return self._a(block=p.in0_block_w, core_x=p.per_core_n * p.kt, bw=p.out_block_w * p.kt,
                           **(self._batch(p.kt * p.nt) if p.batched_in1 else {}))
        # row = block*in0_block_w; col = core_x*per_core_N + bw*out_block_w; batch b's own in1 unless
        # in1 is broadcast (the reader's `if (bcast_B == 0) in1_tensor_start_tile_id += KtNt`)
        return self._a(block=p.in0_block_w * p.nt, core_x=p.per_core_n, bw=p.out_block_w,
                       **(self._batch(p.kt * p.nt) if p.batched_in1 else {}))

    def bias_block(self) -> Affine:
        p = self.p
        return self._a(core_x=p.per_core_n, bw=p.out_block_w)

    # Extents of the padded last blocks: only a plan whose last row (column) of cores holds fewer
    # tiles gets them, so evenly divided plans lower (and print) exactly as before.
    def in0_rows(self) -> Extent | None:
        p = self.p
        return Extent(self._a(core_y=p.per_core_m, bh=p.out_block_h), p.mt) if p.padded_m else None

    def in1_cols(self) -> Extent | None:
        p = self.p
        return Extent(self._a(core_x=p.per_core_n, bw=p.out_block_w), p.nt) if p.padded_n else None

    def out_rows(self) -> Extent | None:
        p = self.p
        return (Extent(self._a(core_y=p.per_core_m, bh=p.out_block_h, in0_sb=p.out_subblock_h), p.mt)
                if p.padded_m else None)

    def out_cols(self) -> Extent | None:
        p = self.p
        return (Extent(self._a(core_x=p.per_core_n, bw=p.out_block_w, in1_sb=p.out_subblock_w), p.nt)
                if p.padded_n else None)

    def out_subblock(self) -> Affine:
        p = self.p
        return self._a(core_y=p.per_core_m * p.nt, bh=p.out_block_h * p.nt, in0_sb=p.out_subblock_h * p.nt,
                 core_x=p.per_core_n, bw=p.out_block_w, in1_sb=p.out_subblock_w, **self._batch(p.mt * p.nt))


def read_block(cb: int, tensor: str, start: Affine, rows: int, cols: int, stride: int | tuple[int, int], tiles: int,
          row_extent: Extent | None, col_extent: Extent | None) -> list[Node]:
    """`stride`: the row stride, or (row, column) strides of a tensor stored transposed (Tiles.strides)."""
    row_stride, col_stride = stride if isinstance(stride, tuple) else (stride, 1)
    return [op("cb_reserve_back", cb, tiles),
            op("read_tiles", tensor, cb, start, rows, cols, row_stride, row_extent, col_extent,
               col_stride if col_stride != 1 else None),
            op("noc_read_barrier"), op("cb_push_back", cb, tiles)]


def writer_ops(p: Plan, t: Tiles) -> list[Node]:
    """The output writer of one output block: de-scatters subblock-major tiles (docs/reference/matmul.md §2.7).
    A sharded output needs nothing per block: c_4 is the core's shard (see sharded_out_tail)."""
    if is_sharded(p.memory.out):
        return []
    if p.untilize_out:
        tile_row_bytes = row_bytes_per_tile(p)
        return [Loop("in0_sb", 0, p.in0_num_subblocks, (Loop("h", 0, p.out_subblock_h, (
            op("cb_wait_front", CB_OUT, p.out_block_w),
            op("write_rows", "out", CB_OUT,
               t._a(core_y=TILE_HW * p.per_core_m, bh=TILE_HW * p.out_block_h, in0_sb=TILE_HW * p.out_subblock_h,
                    h=TILE_HW, **t._batch(TILE_HW * p.mt)),
               TILE_HW, p.out_block_w * tile_row_bytes,
               t._a(core_x=p.per_core_n * tile_row_bytes, bw=p.out_block_w * tile_row_bytes)),
            op("noc_write_barrier"),
            op("cb_pop_front", CB_OUT, p.out_block_w),
        )),))]
    sb = p.out_subblock_tiles
    return [Loop("in0_sb", 0, p.in0_num_subblocks, (Loop("in1_sb", 0, p.in1_num_subblocks, (
        op("cb_wait_front", CB_OUT, sb),
        op("write_tiles", "out", CB_OUT, t.out_subblock(), p.out_subblock_h, p.out_subblock_w, p.nt,
           t.out_rows(), t.out_cols()),
        op("noc_write_barrier"),
        op("cb_pop_front", CB_OUT, sb),
    )),))]


def sharded_out_tail(p: Plan) -> list[Node]:
    """A sharded output: c_4 is globally allocated on the core's output shard and holds every out block
    the compute kernel packs, row by row of the shard (TT's out_subblock_w == per_core_N ||
    out_subblock_h == 1 rule); the writer only waits for the whole shard and frees it, as TT's OUT_SHARDED
    writers do (reader_bmm_tile_layout_in1_*_writer_padding.cpp)."""
    if not is_sharded(p.memory.out):
        return []
    shard = p.batch_ct * p.per_core_m * p.per_core_n
    return [op("cb_wait_front", CB_OUT, shard, note="the whole output shard is in place"),
            op("cb_pop_front", CB_OUT, shard)]


def out_block_loops(p: Plan, body_of: Callable[[bool], tuple[Node, ...]], *,
                     first_note: str = "first output block: read the bias", batch_note: str = "") -> tuple[Node, ...]:
    """Loops over output blocks; the body may differ on the very first block (the bias is read and
    waited for once when it stays resident)."""
    first, rest = body_of(True), body_of(False)
    if first == rest:
        return (Loop("b", 0, p.batch_ct, (Loop("bh", 0, p.num_blocks_h_dim, (
            Loop("bw", 0, p.num_blocks_w_dim, first),)),), batch_note),)
    row0: list[Node] = [Loop("bw", 0, 1, first, first_note)]
    if p.num_blocks_w_dim > 1:
        row0.append(Loop("bw", 1, p.num_blocks_w_dim, rest))
    loops: list[Node] = [Loop("bh", 0, 1, tuple(row0))]
    if p.num_blocks_h_dim > 1:
        loops.append(Loop("bh", 1, p.num_blocks_h_dim, (Loop("bw", 0, p.num_blocks_w_dim, rest),)))
    if p.batch_ct == 1:
        return (Loop("b", 0, p.batch_ct, tuple(loops), batch_note),)
    # the very first block is batch 0's (TT's compute: `(b == 0 && bh == 0) || num_blocks_w_dim > 1`)
    later = Loop("bh", 0, p.num_blocks_h_dim, (Loop("bw", 0, p.num_blocks_w_dim, rest),))
    return (Loop("b", 0, 1, tuple(loops), batch_note), Loop("b", 1, p.batch_ct, (later,), batch_note))


def needs_bias_read(p: Plan, first: bool) -> bool:
    # The compute kernel holds the bias resident when num_blocks_w_dim == 1 (one push in total).
    return p.fuse_bias and (first or p.num_blocks_w_dim > 1)


# TensorAccessorArgs of an interleaved DRAM tensor: two CT words, the ArgsConfig flags
# (tensor_accessor::ArgConfig::IsDram = 1 << 1, hostdevcommon/tensor_accessor/arg_config.hpp) and the
# aligned page size (tensor_accessor_args.h: AlignedPageSize at CTA_OFFSET + 1).
ACCESSOR_INTERLEAVED_DRAM = 1 << 1

CORE_X, CORE_Y = RuntimeArg("core_x", "core_x"), RuntimeArg("core_y", "core_y")


def row_bytes_per_tile(p: Plan) -> int:
    """Bytes of one tile's width of one row of the (untilized) output."""
    return TILE_HW * (p.arch.tile_bytes[p.out_format] // (TILE_HW * TILE_HW))


def tensors_of(p: Plan) -> dict[str, TensorArg]:
    tile = p.arch.tile_bytes
    out = (TensorArg("out", p.out_format, p.nt * row_bytes_per_tile(p), "ROW_MAJOR")
           if p.untilize_out else TensorArg("out", p.out_format, tile[p.out_format], "TILE"))
    tensors = {"in0": TensorArg("in0", p.in0_format, tile[p.in0_format], "TILE", in_l1=p.memory.in0 == Placement.L1),
               "in1": TensorArg("in1", p.in1_format, tile[p.in1_format], "TILE", in_l1=p.memory.in1 == Placement.L1),
               "out": replace(out, in_l1=p.memory.out == Placement.L1)}
    if p.fuse_bias and p.bias_format:
        tensors["bias"] = TensorArg("bias", p.bias_format, tile[p.bias_format], "TILE")
    return tensors


def accessor_args(tensors: tuple[TensorArg, ...]) -> list[tuple[str, int]]:
    args: list[tuple[str, int]] = []
    for t in tensors:
        args += [(f"{t.name}_accessor_config", 0 if t.in_l1 else ACCESSOR_INTERLEAVED_DRAM),
                 (f"{t.name}_page_bytes", t.page_bytes)]
    return args


def dm_kernel(name: str, processor: str, noc: int, cores: CoreRange, body: tuple[Node, ...],
               tensors: tuple[TensorArg, ...], cbs: tuple[tuple[str, int], ...],
               semaphores: tuple[tuple[str, int], ...] = (), coords: tuple[RuntimeArg, ...] = ()) -> Kernel:
    """A data-movement kernel and its host interface: semaphore ids then one TensorAccessorArgs per
    tensor as positional CT args, CB indices as named CT args, this core's logical coordinate and
    the NoC coordinates it talks to as per-core runtime args, buffer addresses as common ones."""
    return Kernel(
        name, name, processor, noc, cores, body,
        compile_time_args=tuple((f"{sem}_semaphore_id", i) for sem, i in semaphores) + tuple(accessor_args(tensors)),
        named_compile_time_args=cbs,
        runtime_args=(CORE_X, CORE_Y) + coords,
        common_runtime_args=tuple(RuntimeArg(f"{t.name}_addr", "buffer_address", tensor=t.name) for t in tensors),
        tensors=tensors,
    )


def noc_rect(noc: int, x0: Affine, y0: Affine, x1: Affine, y1: Affine) -> tuple[RuntimeArg, ...]:
    """Multicast start and end as NoC-coordinate runtime args. NOC 1 runs the other way round the
    torus, so its rectangle starts at the far corner (TT-Metal swaps start/end for NOC 1)."""
    if noc == 1:
        x0, y0, x1, y1 = x1, y1, x0, y0
    return (RuntimeArg("mcast_start_x", "noc_x", x0), RuntimeArg("mcast_start_y", "noc_y", y0),
            RuntimeArg("mcast_end_x", "noc_x", x1), RuntimeArg("mcast_end_y", "noc_y", y1))


def sender_block(p: Plan, cb: int, tensor: str, start: Affine, rows: int, cols: int, stride: int, tiles: int,
                  extents: tuple[Extent | None, Extent | None],
                  sender_sem: str, receiver_sem: str, num_dests: int, rect: tuple[RuntimeArg, ...],
                  receivers: int | None = None) -> list[Node]:
    """Read one block into the CB and, with receivers, multicast it to them once each has reserved space
    (the 2D and 1D multicast factories' sender lifecycle). `num_dests`: the cores of the multicast
    rectangle; `receivers`: those of them that signal the sender, when fewer (a 1D run whose last row is
    partial: its bounding box's cores without work only receive)."""
    ops: list[Node] = [op("cb_reserve_back", cb, tiles)]
    if not (tensor == "in0" and p.memory.in0 == Placement.L1_HEIGHT_SHARDED):
        col_stride = None
        if (tensor == "in0" and p.transpose_a) or (tensor == "in1" and p.transpose_b):
            stride, col_stride = Tiles(p).strides(tensor)     # stored transposed
        ops += [op("read_tiles", tensor, cb, start, rows, cols, stride, *extents, col_stride), op("noc_read_barrier")]
    # (a height-sharded in0: c_0 is globally allocated on the core's shard, the block is already there)
    if num_dests:
        ops += [op("sem_wait", sender_sem, num_dests if receivers is None else receivers,
                   note="every receiver has reserved space"),
                op("sem_set", sender_sem, 0),
                op("mcast_cb", cb, tiles, tiles * p.cb(cb).page_bytes, *rect, num_dests)]
        if p.arch.behaviour.flush_mcast_before_flag:
            # flush the data multicast before the flag multicast that releases the receivers
            ops.append(op("noc_writes_flushed"))
        ops += [op("sem_set", receiver_sem, VALID, note="the local word the flag multicast copies"),
                op("mcast_sem_set", receiver_sem, VALID, *rect, num_dests)]
    ops.append(op("cb_push_back", cb, tiles))
    return ops


def in1_receiver_body_of(p: Plan, t: "Tiles",
                       sender: tuple[RuntimeArg, RuntimeArg]) -> Callable[[bool], tuple[Node, ...]]:
    """An in1 receiver/writer's out-block body (both factories): receive each K-block of in1 (and, when
    due, the bias) from the sender, then write the out block."""
    in1_recv = Loop("block", 0, p.num_blocks, tuple(receiver_block(
        CB_IN1, p.in1_block_tiles, "in1_sender", "in1_receiver", sender)))

    def body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [in1_recv]
        if needs_bias_read(p, first):
            ops += receiver_block(CB_BIAS, p.out_block_w, "in1_sender", "in1_receiver", sender)
        return tuple(ops + writer_ops(p, t))
    return body


def receiver_block(cb: int, tiles: int, sender_sem: str, receiver_sem: str,
                    sender: tuple[RuntimeArg, RuntimeArg]) -> list[Node]:
    return [op("cb_reserve_back", cb, tiles), op("sem_set", receiver_sem, INVALID),
            op("sem_inc", sender_sem, *sender, 1), op("sem_wait", receiver_sem, VALID),
            op("cb_push_back", cb, tiles)]


def all_but_first(nx: int, ny: int) -> tuple[CoreRange, ...]:
    """Every core of an nx x ny rectangle but (0, 0), as rectangles: the rest of row 0, then the rows below."""
    ranges = [CoreRange(1, 0, nx - 1, 0)] if nx > 1 else []
    if ny > 1:
        ranges.append(CoreRange(0, 1, nx - 1, ny - 1))
    return tuple(ranges)


# ----------------------------------------------------------------------------------------------
# A sharded in0's K-block handed over by the core that holds it (TT's block- and width-sharded in0
# readers, reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp and the 1D factory's
# sharded in0 reader at 0.81.1)
# ----------------------------------------------------------------------------------------------

def in0_shard_is_copied(p: Plan) -> bool:
    """TT's sharded in0 readers copy a K-block out of the shard first (`extract_shard_sub_blocks`) only
    when the shard is more than one tile high and holds several K-blocks: only then are the block's rows
    apart in the shard."""
    return p.per_core_m > 1 and p.in0_shard_w // p.in0_block_w > 1


def _in0_shard_block(p: Plan) -> Affine:
    """The K-block's first tile in this core's shard (c_2)."""
    return A(0, bh=p.out_block_h * p.in0_shard_w, kb=p.in0_block_w)


def in0_shard_copy(p: Plan, note: str) -> list[Node]:
    """This core's K-block copied out of its shard (c_2) into c_0."""
    return [op("copy_shard", CB_IN0, CB_IN0_SHARD, _in0_shard_block(p), p.out_block_h, p.in0_block_w, p.in0_shard_w,
               p.cb(CB_IN0).page_bytes, note=note), op("noc_read_barrier")]


def in0_shard_handover(p: Plan, dest: tuple[RuntimeArg, ...], cores: int, where: str) -> list[Node]:
    """One K-block of this core's shard multicast to the `cores` cores of `dest` (the `where`, this core
    included), as TT's sharded in0 readers hand it over: straight out of the shard with loopback where the
    block is contiguous there; else copied into c_0 first and multicast from there to the others (a
    multicast without loopback skips this core). The flag goes to every core with loopback, and the
    sender waits for its own VALID like any receiver."""
    tiles, page = p.in0_block_tiles, p.cb(CB_IN0).page_bytes
    copied = in0_shard_is_copied(p)
    send: list[Node] = [op("cb_reserve_back", CB_IN0, tiles), op("sem_set", "in0_receiver", INVALID)]
    if copied:
        send += in0_shard_copy(p, "this core's K slice: its rows lie apart in the shard")
    send += [op("sem_wait", "in0_sender", cores - 1, note=f"every other core of the {where} has reserved space"),
             op("sem_set", "in0_sender", 0)]
    if copied:
        send.append(op("mcast_cb", CB_IN0, tiles, tiles * page, *dest, cores - 1))
    else:
        send.append(op("mcast_shard", CB_IN0, CB_IN0_SHARD, _in0_shard_block(p), page, tiles, tiles * page, *dest,
                       cores, note="this core's K slice, straight out of its shard"))
    if p.arch.behaviour.flush_mcast_before_flag:
        send.append(op("noc_writes_flushed"))
    return send + [op("sem_set", "in0_receiver", VALID, note="the local word the flag multicast copies"),
                   op("mcast_sem_set_loopback", "in0_receiver", VALID, *dest, cores),
                   # the flag multicast reads this core's VALID word: flush before the word can turn INVALID
                   # again at the next K-block (TT-Metal's sharded readers flush here too)
                   op("noc_writes_flushed"), op("sem_wait", "in0_receiver", VALID), op("cb_push_back", CB_IN0, tiles)]
