"""Stage 3, lower: `Plan` -> `Program` (the block-lifecycle IR of every kernel).

The compute kernel reproduces the lifecycle of TT-Metal 0.81.1's
`bmm_large_block_zm_fused_bias_activation.cpp` op by op (ttmetal-matmul.md §1.5-§1.11). Where
that kernel branches on the K-block index (block 0, block 1, the penultimate and the last block)
or on the output-block index (bias held resident), the IR is split into explicit loops over index
ranges whose bodies are identical, so that every op the hardware executes is visible in the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable, Mapping

from kgen.gen.ir import (INVALID, VALID, Affine, ComputeFlags, Extent, CoreRange, Kernel, Loop, Node, Program, RuntimeArg, Semaphore, Sym,
                     TensorArg, op)
from kgen.gen.plan import CB_BIAS, CB_IN0, CB_IN0_SHARD, CB_IN1, CB_OUT, CB_PARTIALS, Plan
from kgen.core.types import TILE_HW, Placement

A = Affine.of


def _ranges_by_body(count: int, special: set[int], body_of: Callable[[int], tuple[Node, ...]],
                    var: str, note_of: Callable[[int, int], str]) -> tuple[Node, ...]:
    """Loops over [0, count) grouped into maximal runs of identical bodies. Indices outside
    `special` between two special indices share one body, so only a few bodies are built."""
    cuts = sorted({i for i in special if 0 <= i < count} | {0, count})
    runs: list[tuple[int, int, tuple[Node, ...]]] = []
    for lo, hi in zip(cuts, cuts[1:]):
        pieces = [(lo, lo + 1, body_of(lo))]
        if hi > lo + 1:
            pieces.append((lo + 1, hi, body_of(lo + 1)))
        for start, stop, body in pieces:
            if runs and runs[-1][2] == body and runs[-1][1] == start:
                runs[-1] = (runs[-1][0], stop, body)
            else:
                runs.append((start, stop, body))
    return tuple(Loop(var, s, e, b, note_of(s, e)) for s, e, b in runs)


# ----------------------------------------------------------------------------------------------
# Compute kernel
# ----------------------------------------------------------------------------------------------

def compute_compile_time_args(p: Plan) -> tuple[tuple[str, int], ...]:
    """The positional CT args of TT-Metal's matmul compute kernel, in its order and with its names
    (ttmetal-matmul.md §1.1), so kgen's compute kernel and TT-Metal's are interchangeable."""
    args = [
        ("in0_block_w", p.in0_block_w),
        ("in0_num_subblocks", p.in0_num_subblocks),
        ("in0_block_num_tiles", p.in0_block_tiles),
        ("in0_subblock_num_tiles", p.out_subblock_h * p.in0_block_w),
        ("in1_num_subblocks", p.in1_num_subblocks),
        ("in1_block_num_tiles", p.in1_block_tiles),
        ("in1_block_w", p.out_block_w),
        ("num_blocks_inner_dim", p.num_blocks),
        ("num_blocks_w_dim", p.num_blocks_w_dim),
        ("num_blocks_h_dim", p.num_blocks_h_dim),
        ("out_subblock_h", p.out_subblock_h),
        ("out_subblock_w", p.out_subblock_w),
        ("out_subblock_num_tiles", p.out_subblock_tiles),
        ("batch", p.batch_ct),
        ("out_block_num_tiles", p.out_block_tiles),
        ("untilize_out", int(p.untilize_out)),
        ("get_batch_from_reader", 0),     # sparsity path: not used
        ("in0_transpose_tile", 0),        # in0 tiles are never transposed by kgen
    ]
    if p.fuse_bias:
        args.append(("row_broadcast_bias", 1))   # read only under FUSE_BIAS: one bias row, broadcast
    return tuple(args)


# Named CT args of the compute kernel: the CB indices TT-Metal's 2D factory passes (§1.2, §2.6),
# including the ones only its reader paths use, so TT-Metal's kernel drops into kgen's manifest.
TT_COMPUTE_NAMED_CBS = (("cb_in0", 0), ("cb_in1", 1), ("cb_bias", 3), ("cb_out", 4), ("cb_intermed0", 5),
                        ("cb_in0_intermediate", 8), ("cb_in1_intermediate", 9), ("cb_in0_transposed", 10))


def compute_named_args(p: Plan) -> tuple[tuple[str, int], ...]:
    named = list(TT_COMPUTE_NAMED_CBS)
    if p.fuse_bias:
        named.append(("bias_ntiles", p.out_block_w))   # one bias row of the output block
    return tuple(named)


# Every define TT-Metal's matmul compute kernel reads that kgen plans for (§1.3); the rendered kernel
# refuses to build when the program's defines disagree with the plan it was generated for.
COMPUTE_DEFINE_NAMES = ("FUSE_BIAS", "PACK_RELU", "PACKER_L1_ACC", "FP32_DEST_ACC_EN")


def compute_defines(p: Plan) -> tuple[tuple[str, str], ...]:
    """The compute defines TT-Metal's factory sets (§2.6), exactly when the plan needs them."""
    defines = []
    if p.fuse_bias:
        defines.append(("FUSE_BIAS", "1"))
    if p.pack_relu:
        defines.append(("PACK_RELU", "1"))
    if p.l1_acc_enabled:
        defines.append(("PACKER_L1_ACC", "1"))
    if p.compute.fp32_dest_acc:
        defines.append(("FP32_DEST_ACC_EN", "1"))
    return tuple(defines)


@dataclass(frozen=True)
class _ComputeLowering:
    """The compute kernel's lifecycle, piece by piece, for one plan (bmm_large_block_zm_fused_bias_activation.cpp):
    the K-block loop with its spill/reload or L1-accumulation packs, then the bias and untilize stages,
    inside the output-block loops. `ct` are the kernel's compile-time args as named symbols."""
    p: Plan
    ct: Mapping[str, Sym]

    @classmethod
    def of(cls, p: Plan) -> "_ComputeLowering":
        return cls(p, MappingProxyType({name: Sym(value, name) for name, value in compute_compile_time_args(p)}))

    # --- facts of the plan, named as the TT-Metal kernel names them ------------------------------
    @property
    def last(self) -> int:
        return self.p.num_blocks - 1

    @property
    def sb(self) -> Sym:
        return self.ct["out_subblock_num_tiles"]

    @property
    def untilize_out_cb(self) -> int:                  # untilize_mode_out_cb_id
        return CB_PARTIALS if self.p.untilize_out else CB_OUT

    @property
    def mm_out(self) -> int:                           # where the last K-block packs
        return CB_PARTIALS if self.p.fuse_bias else self.untilize_out_cb

    @property
    def multi(self) -> bool:                           # more than one output block per core
        p = self.p
        return p.batch_ct > 1 or p.num_blocks_w_dim > 1 or p.num_blocks_h_dim > 1

    @property
    def repacks_format(self) -> bool:                  # the packer is reconfigured before the final pack
        return self.p.compute.fp32_dest_acc or self.p.l1_acc_enabled

    @property
    def init(self) -> Node:
        ct = self.ct
        return op("matmul_init", CB_IN0, CB_IN1, False, ct["out_subblock_w"], ct["out_subblock_h"], ct["in0_block_w"])

    @property
    def bias_ntiles(self) -> Sym:
        return Sym(self.p.out_block_w, "bias_ntiles")

    # --- the K-block loop ------------------------------------------------------------------------
    def reload_ops(self) -> list[Node]:
        return [
            op("reconfig_srca", CB_IN1, CB_PARTIALS, note="SrcA: in1 -> partials format"),
            op("copy_init", CB_PARTIALS),
            op("cb_wait_front", CB_PARTIALS, self.sb),
            op("copy_block", CB_PARTIALS, 0, 0, self.sb, note="reload partials into DST"),
            op("cb_pop_front", CB_PARTIALS, self.sb),
            op("reconfig_srca", CB_PARTIALS, CB_IN1, note="SrcA back to in1"),
            self.init,
        ]

    def enable_reload(self, block: int) -> bool:
        if self.p.l1_acc_enabled:
            return not self.p.fuse_bias and block == self.last     # armed at block n-2: one reload, last block
        return block >= 1                                          # spill: every later block reloads

    def subblock_ops(self, block: int) -> tuple[Node, ...]:
        ct, sb, l1acc, bias = self.ct, self.sb, self.p.l1_acc_enabled, self.p.fuse_bias
        sbw, kt = ct["out_subblock_w"], ct["in0_block_w"]
        ops: list[Node] = [op("tile_regs_acquire")]
        if self.enable_reload(block):
            ops += self.reload_ops()
        ops.append(Loop("k", 0, kt, (
            op("matmul_block", CB_IN0, CB_IN1, A(0, in0_sb=ct["in0_subblock_num_tiles"], k=1),
               A(0, in1_sb=sbw, k=ct["in1_block_w"]), 0, False, sbw, ct["out_subblock_h"], kt),)))
        if block == self.last:
            mm_out = self.mm_out
            ops += [op("tile_regs_commit"), op("cb_reserve_back", mm_out, sb), op("tile_regs_wait")]
            if self.repacks_format:
                ops.append(op("pack_reconfig_format", mm_out, note="partials format -> final pack format"))
            if l1acc:
                if bias:
                    ops.append(op("pack_l1_acc", block != 0, note="bias: last block accumulates into partials"))
                else:
                    ops.append(op("pack_l1_acc", False, note="final pack to out overwrites"))
            ops += [op("pack_block", mm_out, 0, sb), op("tile_regs_release"), op("cb_push_back", mm_out, sb)]
        else:
            ops += [op("tile_regs_commit"), op("cb_reserve_back", CB_PARTIALS, sb), op("tile_regs_wait")]
            if l1acc and block == 0:
                ops.append(op("pack_l1_acc", False, note="block 0 overwrites the partials"))
            elif l1acc and block == 1:
                ops.append(op("pack_l1_acc", True, note="from block 1 the packer adds into L1"))
            ops += [op("pack_block", CB_PARTIALS, 0, sb), op("tile_regs_release"), op("cb_push_back", CB_PARTIALS, sb)]
        return tuple(ops)

    def k_block_body(self, block: int) -> tuple[Node, ...]:
        p, ct, sb, last = self.p, self.ct, self.sb, self.last
        in0_tiles, in1_tiles = ct["in0_block_num_tiles"], ct["in1_block_num_tiles"]
        ops: list[Node] = []
        if p.pack_relu and not p.fuse_bias and block == last:
            ops.append(op("pack_relu", "zero", note="ReLU on the final pack only"))
        ops += [op("cb_wait_front", CB_IN0, in0_tiles), op("cb_wait_front", CB_IN1, in1_tiles)]
        ops.append(Loop("in0_sb", 0, ct["in0_num_subblocks"], (
            Loop("in1_sb", 0, ct["in1_num_subblocks"], self.subblock_ops(block)),)))
        drain = (p.fuse_bias and block < last) or (not p.fuse_bias and block < last - 1)
        if p.l1_acc_enabled and drain:
            # Popping the whole block rewinds the partials FIFO, so the next block packs onto the same
            # L1 addresses and the packer accumulates (the CB holds exactly one block).
            ops.append(Loop("s", 0, p.out_block_tiles // sb, (
                op("cb_wait_front", CB_PARTIALS, sb), op("cb_pop_front", CB_PARTIALS, sb)),
                "rewind the partials for L1 accumulation"))
        ops += [op("cb_pop_front", CB_IN0, in0_tiles), op("cb_pop_front", CB_IN1, in1_tiles)]
        return tuple(ops)

    def k_block_note(self, start: int, stop: int) -> str:
        last, bias = self.last, self.p.fuse_bias
        if self.p.num_blocks == 1:
            return "the only K-block: accumulate in DST, pack to the output"
        names = []
        if self.p.l1_acc_enabled:
            if start == 0:
                names.append("L1 acc off, overwrite partials")
            elif start == 1:
                names.append("L1 acc on")
            if not bias and start == last - 1 and stop == last:
                names.append("partials left for the one reload")
            if start == last:
                names.append("last: " + ("pack into partials, bias stage follows" if bias else
                                         "reload once, pack to out with L1 acc off"))
        else:
            names.append("first: pack partials" if start == 0 else
                         ("last: reload, pack the result" if start == last else "reload, accumulate, spill"))
        return "; ".join(names)

    def k_loops(self) -> tuple[Node, ...]:
        last = self.last
        return _ranges_by_body(self.p.num_blocks, {0, 1, last - 1, last}, self.k_block_body, "block",
                               self.k_block_note)

    # --- after the K-blocks ----------------------------------------------------------------------
    def bias_stage(self, first_out_block: bool) -> list[Node]:
        p, ct, sb = self.p, self.ct, self.sb
        sbh, sbw = ct["out_subblock_h"], ct["out_subblock_w"]
        out_cb = self.untilize_out_cb
        ops: list[Node] = []
        if p.pack_relu:
            ops.append(op("pack_relu", "zero"))
        if self.repacks_format:
            ops.append(op("pack_reconfig_format", CB_OUT))
        if p.l1_acc_enabled:
            ops.append(op("pack_l1_acc", False))
        ops += [op("reconfig_srcab", CB_IN1, CB_PARTIALS, CB_IN0, CB_BIAS, note="SrcA -> partials, SrcB -> bias"),
                op("add_bcast_rows_init", CB_PARTIALS, CB_BIAS)]
        if first_out_block or p.num_blocks_w_dim > 1:
            ops.append(op("cb_wait_front", CB_BIAS, self.bias_ntiles,
                          note="bias stays resident" if p.num_blocks_w_dim == 1 else ""))
        ops.append(Loop("in0_sb", 0, ct["in0_num_subblocks"], (Loop("in1_sb", 0, ct["in1_num_subblocks"], (
            op("cb_wait_front", CB_PARTIALS, sb),
            op("tile_regs_acquire"),
            Loop("r", 0, sbh, (Loop("c", 0, sbw, (
                op("add_bcast_rows", CB_PARTIALS, CB_BIAS, A(0, r=sbw, c=1), A(0, in1_sb=sbw, c=1), A(0, r=sbw, c=1)),)),)),
            op("tile_regs_commit"),
            op("cb_pop_front", CB_PARTIALS, sb),
            op("cb_reserve_back", out_cb, sb),
            op("tile_regs_wait"),
            Loop("i", 0, sb, (op("pack_tile", A(0, i=1), out_cb),)),
            op("tile_regs_release"),
            op("cb_push_back", out_cb, sb),
        )),)))
        if p.num_blocks_w_dim > 1:
            ops.append(op("cb_pop_front", CB_BIAS, self.bias_ntiles))
        return ops

    def untilize_stage(self) -> list[Node]:
        p, ct, sb = self.p, self.ct, self.sb
        sbh, sbw, out_block_w, in1_sbs = ct["out_subblock_h"], ct["out_subblock_w"], ct["in1_block_w"], ct["in1_num_subblocks"]
        ops: list[Node] = []
        if p.pack_relu:
            ops.append(op("pack_relu", "none"))
        if not p.fuse_bias:
            ops.append(op("reconfig_srca", CB_IN1, CB_PARTIALS))
            if self.repacks_format:
                ops.append(op("pack_reconfig_format", CB_OUT))
            if p.l1_acc_enabled:
                ops.append(op("pack_l1_acc", False))
        row_tiles = p.in1_num_subblocks * sb
        ops += [op("pack_untilize_init", CB_OUT, sbw, out_block_w), op("copy_init", CB_PARTIALS)]
        ops.append(Loop("in0_sb", 0, ct["in0_num_subblocks"], (
            op("cb_wait_front", CB_PARTIALS, row_tiles, note="reblock: one row of subblocks"),
            Loop("h", 0, sbh, (
                op("cb_reserve_back", CB_OUT, out_block_w),
                Loop("n", 0, in1_sbs, (
                    op("tile_regs_acquire"),
                    Loop("w", 0, sbw, (op("copy_tile", CB_PARTIALS, A(0, n=sb, h=sbw, w=1), A(0, w=1)),)),
                    op("tile_regs_commit"),
                    op("tile_regs_wait"),
                    op("pack_untilize_dest", CB_OUT, sbw, out_block_w, 1, A(0, n=1)),
                    op("tile_regs_release"),
                )),
                op("cb_push_back", CB_OUT, out_block_w),
            )),
            op("cb_pop_front", CB_PARTIALS, row_tiles),
        )))
        ops.append(op("pack_untilize_uninit", CB_PARTIALS))
        return ops

    def out_block_body(self, first: bool, k_loops: tuple[Node, ...]) -> tuple[Node, ...]:
        p, multi = self.p, self.multi
        ops: list[Node] = []
        if p.pack_relu and multi:
            ops.append(op("pack_relu", "none", note="intermediate packs without ReLU"))
        if multi:
            ops.append(op("pack_reconfig_format", CB_PARTIALS))
        ops += list(k_loops)
        if p.fuse_bias:
            ops += self.bias_stage(first)
        if p.untilize_out:
            ops += self.untilize_stage()
        if multi:
            if p.fuse_bias:
                ops.append(op("reconfig_srcab", CB_PARTIALS, CB_IN1, CB_BIAS, CB_IN0))
            else:
                ops.append(op("reconfig_srca", CB_PARTIALS, CB_IN1))
            ops.append(self.init)
        return tuple(ops)


def _compute_kernel(p: Plan) -> tuple[Node, ...]:
    lowering = _ComputeLowering.of(p)
    k_loops = lowering.k_loops()
    # The bias wait happens on the first output block only when num_blocks_w_dim == 1, so the
    # output-block loops split into (bh == 0, bw == 0) and the rest.
    out_loops = _out_block_loops(p, lambda first: lowering.out_block_body(first, k_loops),
                                 first_note="first output block: wait for the bias", batch_note="batch (fused into M)")
    body: list[Node] = [
        op("hw_startup", CB_IN0, CB_IN1, CB_PARTIALS, note="SrcOrder::Reverse: in0 -> SrcB, in1 -> SrcA"),
        lowering.init,
        *out_loops,
    ]
    if p.fuse_bias and p.num_blocks_w_dim == 1:
        body.append(op("cb_pop_front", CB_BIAS, lowering.bias_ntiles, note="release the resident bias"))
    return tuple(body)


# ----------------------------------------------------------------------------------------------
# Data-movement kernels
# ----------------------------------------------------------------------------------------------

class _Tiles:
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

    def in0_block(self) -> Affine:
        p = self.p
        # row = core_y*per_core_M + bh*out_block_h; col = block*in0_block_w
        return self._a(core_y=p.per_core_m * p.kt, bh=p.out_block_h * p.kt, block=p.in0_block_w)

    def in1_block(self) -> Affine:
        p = self.p
        # row = block*in0_block_w; col = core_x*per_core_N + bw*out_block_w
        return self._a(block=p.in0_block_w * p.nt, core_x=p.per_core_n, bw=p.out_block_w)

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
                 core_x=p.per_core_n, bw=p.out_block_w, in1_sb=p.out_subblock_w)


def _read(cb: int, tensor: str, start: Affine, rows: int, cols: int, stride: int, tiles: int,
          row_extent: Extent | None, col_extent: Extent | None) -> list[Node]:
    return [op("cb_reserve_back", cb, tiles),
            op("read_tiles", tensor, cb, start, rows, cols, stride, row_extent, col_extent),
            op("noc_read_barrier"), op("cb_push_back", cb, tiles)]


def _writer_ops(p: Plan, t: _Tiles) -> list[Node]:
    """The output writer of one output block: de-scatters subblock-major tiles (ttmetal-matmul.md §2.7).
    A sharded output needs nothing per block: c_4 is the core's shard (see _sharded_out_tail)."""
    if p.memory.out != Placement.DRAM:
        return []
    if p.untilize_out:
        tile_row_bytes = _row_bytes_per_tile(p)
        return [Loop("in0_sb", 0, p.in0_num_subblocks, (Loop("h", 0, p.out_subblock_h, (
            op("cb_wait_front", CB_OUT, p.out_block_w),
            op("write_rows", "out", CB_OUT,
               t._a(core_y=TILE_HW * p.per_core_m, bh=TILE_HW * p.out_block_h, in0_sb=TILE_HW * p.out_subblock_h,
                    h=TILE_HW),
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


def _sharded_out_tail(p: Plan) -> list[Node]:
    """A sharded output: c_4 is globally allocated on the core's output shard and holds every out block
    the compute kernel packs, row by row of the shard (TT's out_subblock_w == per_core_N ||
    out_subblock_h == 1 rule); the writer only waits for the whole shard and frees it, as TT's OUT_SHARDED
    writers do (reader_bmm_tile_layout_in1_*_writer_padding.cpp)."""
    if p.memory.out == Placement.DRAM:
        return []
    shard = p.batch_ct * p.per_core_m * p.per_core_n
    return [op("cb_wait_front", CB_OUT, shard, note="the whole output shard is in place"),
            op("cb_pop_front", CB_OUT, shard)]


def _out_block_loops(p: Plan, body_of: Callable[[bool], tuple[Node, ...]], *,
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
    return (Loop("b", 0, p.batch_ct, tuple(loops), batch_note),)


def _needs_bias_read(p: Plan, first: bool) -> bool:
    # The compute kernel holds the bias resident when num_blocks_w_dim == 1 (one push in total).
    return p.fuse_bias and (first or p.num_blocks_w_dim > 1)


# TensorAccessorArgs of an interleaved DRAM tensor: two CT words, the ArgsConfig flags
# (tensor_accessor::ArgConfig::IsDram = 1 << 1, hostdevcommon/tensor_accessor/arg_config.hpp) and the
# aligned page size (tensor_accessor_args.h: AlignedPageSize at CTA_OFFSET + 1).
ACCESSOR_INTERLEAVED_DRAM = 1 << 1

CORE_X, CORE_Y = RuntimeArg("core_x", "core_x"), RuntimeArg("core_y", "core_y")


def _row_bytes_per_tile(p: Plan) -> int:
    """Bytes of one tile's width of one row of the (untilized) output."""
    return TILE_HW * (p.arch.tile_bytes[p.out_format] // (TILE_HW * TILE_HW))


def _tensors(p: Plan) -> dict[str, TensorArg]:
    tile = p.arch.tile_bytes
    out = (TensorArg("out", p.out_format, p.nt * _row_bytes_per_tile(p), "ROW_MAJOR")
           if p.untilize_out else TensorArg("out", p.out_format, tile[p.out_format], "TILE"))
    tensors = {"in0": TensorArg("in0", p.in0_format, tile[p.in0_format], "TILE"),
               "in1": TensorArg("in1", p.in1_format, tile[p.in1_format], "TILE", in_l1=p.memory.in1 == Placement.L1),
               "out": out}
    if p.fuse_bias and p.bias_format:
        tensors["bias"] = TensorArg("bias", p.bias_format, tile[p.bias_format], "TILE")
    return tensors


def _accessor_args(tensors: tuple[TensorArg, ...]) -> list[tuple[str, int]]:
    args: list[tuple[str, int]] = []
    for t in tensors:
        args += [(f"{t.name}_accessor_config", 0 if t.in_l1 else ACCESSOR_INTERLEAVED_DRAM),
                 (f"{t.name}_page_bytes", t.page_bytes)]
    return args


def _dm_kernel(name: str, processor: str, noc: int, cores: CoreRange, body: tuple[Node, ...],
               tensors: tuple[TensorArg, ...], cbs: tuple[tuple[str, int], ...],
               semaphores: tuple[tuple[str, int], ...] = (), coords: tuple[RuntimeArg, ...] = ()) -> Kernel:
    """A data-movement kernel and its host interface: semaphore ids then one TensorAccessorArgs per
    tensor as positional CT args, CB indices as named CT args, this core's logical coordinate and
    the NoC coordinates it talks to as per-core runtime args, buffer addresses as common ones."""
    return Kernel(
        name, name, processor, noc, cores, body,
        compile_time_args=tuple((f"{sem}_semaphore_id", i) for sem, i in semaphores) + tuple(_accessor_args(tensors)),
        named_compile_time_args=cbs,
        runtime_args=(CORE_X, CORE_Y) + coords,
        common_runtime_args=tuple(RuntimeArg(f"{t.name}_addr", "buffer_address", tensor=t.name) for t in tensors),
        tensors=tensors,
    )


def _reuse_kernels(p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...]:
    t = _Tiles(p)
    tensors = _tensors(p)
    k_block = Loop("block", 0, p.num_blocks, tuple(
        _read(CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, p.kt, p.in0_block_tiles, t.in0_rows(), None)
        + _read(CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, p.nt, p.in1_block_tiles,
                None, t.in1_cols())))

    def reader_body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [k_block]
        if _needs_bias_read(p, first):
            ops += _read(CB_BIAS, "bias", t.bias_block(), 1, p.out_block_w, p.nt, p.out_block_w, None, t.in1_cols())
        return tuple(ops)

    read_tensors = tuple(tensors[n] for n in ("in0", "in1", "bias") if n in tensors)
    read_cbs = (("cb_in0", CB_IN0), ("cb_in1", CB_IN1)) + ((("cb_bias", CB_BIAS),) if p.fuse_bias else ())
    reader = _dm_kernel("reader", "NCRISC", 1, all_cores, _out_block_loops(p, reader_body), read_tensors, read_cbs)
    writer = _dm_kernel("writer", "BRISC", 0, all_cores, _out_block_loops(p, lambda first: tuple(_writer_ops(p, t))),
                        (tensors["out"],), (("cb_out", CB_OUT),))
    return reader, writer


SEMAPHORE_IDS = {"in0_sender": 0, "in0_receiver": 1, "in1_sender": 2, "in1_receiver": 3}


def _noc_rect(noc: int, x0: Affine, y0: Affine, x1: Affine, y1: Affine) -> tuple[RuntimeArg, ...]:
    """Multicast start and end as NoC-coordinate runtime args. NOC 1 runs the other way round the
    torus, so its rectangle starts at the far corner (TT-Metal swaps start/end for NOC 1)."""
    if noc == 1:
        x0, y0, x1, y1 = x1, y1, x0, y0
    return (RuntimeArg("mcast_start_x", "noc_x", x0), RuntimeArg("mcast_start_y", "noc_y", y0),
            RuntimeArg("mcast_end_x", "noc_x", x1), RuntimeArg("mcast_end_y", "noc_y", y1))


def _mcast_kernels(p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...]:
    t = _Tiles(p)
    tensors = _tensors(p)
    nx, ny = p.grid
    in0_noc, in1_noc = 1, 0     # in0 on NCRISC/NOC 1, in1 + writer on BRISC/NOC 0 (ttmetal-matmul.md §2.4)
    kernels: list[Kernel] = []

    # in0 travels along its row; in1 and the bias down their column. transpose_mcast swaps the two
    # (the factory swaps the sender ranges and the multicast rectangles): in0 from the top row down its
    # column, in1 from the left column along its row. Each keeps its NoC.
    def row_rect(noc: int) -> tuple[RuntimeArg, ...]:      # the rest of this core's row
        return _noc_rect(noc, A(1), A(0, core_y=1), A(nx - 1), A(0, core_y=1))

    def col_rect(noc: int) -> tuple[RuntimeArg, ...]:      # the rest of this core's column
        return _noc_rect(noc, A(0, core_x=1), A(1), A(0, core_x=1), A(ny - 1))

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
    in0_send = Loop("block", 0, p.num_blocks, tuple(_sender_block(
        p, CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, p.kt, p.in0_block_tiles, (t.in0_rows(), None),
        "in0_sender", "in0_receiver", in0_dests, in0_rect)))
    if p.memory.in0 != Placement.L1_BLOCK_SHARDED:
        kernels.append(_dm_kernel("in0_sender", "NCRISC", in0_noc, in0_senders,
                                  _out_block_loops(p, lambda first: (in0_send,)),
                                  (tensors["in0"],) if p.memory.in0 == Placement.DRAM else (),
                                  (("cb_in0", CB_IN0),), in0_sems, in0_rect if in0_dests else ()))
    if in0_dests and p.memory.in0 != Placement.L1_BLOCK_SHARDED:
        in0_sender_core = (RuntimeArg("in0_sender_noc_x", "noc_x", in0_from[0]),
                           RuntimeArg("in0_sender_noc_y", "noc_y", in0_from[1]))
        in0_recv = Loop("block", 0, p.num_blocks, tuple(_receiver_block(
            CB_IN0, p.in0_block_tiles, "in0_sender", "in0_receiver", in0_sender_core)))
        kernels.append(_dm_kernel("in0_receiver", "NCRISC", in0_noc, in0_receivers,
                                  _out_block_loops(p, lambda first: (in0_recv,)), (), (("cb_in0", CB_IN0),),
                                  in0_sems, in0_sender_core))

    in1_send = Loop("block", 0, p.num_blocks, tuple(_sender_block(
        p, CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, p.nt, p.in1_block_tiles, (None, t.in1_cols()),
        "in1_sender", "in1_receiver", in1_dests, in1_rect)))

    def in1_sender_body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [in1_send]
        if _needs_bias_read(p, first):
            ops += _sender_block(p, CB_BIAS, "bias", t.bias_block(), 1, p.out_block_w, p.nt, p.out_block_w,
                                (None, t.in1_cols()), "in1_sender", "in1_receiver", in1_dests, in1_rect)
        return tuple(ops + _writer_ops(p, t))

    writer_cbs = (("cb_in1", CB_IN1),) + ((("cb_bias", CB_BIAS),) if p.fuse_bias else ()) + (("cb_out", CB_OUT),)
    written = ("out",) if p.memory.out == Placement.DRAM else ()
    send_tensors = tuple(tensors[n] for n in ("in1", "bias", *written) if n in tensors)
    kernels.append(_dm_kernel("in1_sender_writer", "BRISC", in1_noc, in1_senders,
                              _out_block_loops(p, in1_sender_body) + tuple(_sharded_out_tail(p)), send_tensors,
                              writer_cbs, in1_sems, in1_rect if in1_dests else ()))
    if in1_dests:
        in1_sender_core = (RuntimeArg("in1_sender_noc_x", "noc_x", in1_from[0]),
                           RuntimeArg("in1_sender_noc_y", "noc_y", in1_from[1]))
        in1_receiver_body = _in1_receiver_body(p, t, in1_sender_core)
        kernels.append(_dm_kernel("in1_receiver_writer", "BRISC", in1_noc, in1_receivers,
                                  _out_block_loops(p, in1_receiver_body) + tuple(_sharded_out_tail(p)),
                                  tuple(tensors[n] for n in written), writer_cbs, in1_sems, in1_sender_core))
    return tuple(kernels)


def _sender_block(p: Plan, cb: int, tensor: str, start: Affine, rows: int, cols: int, stride: int, tiles: int,
                  extents: tuple[Extent | None, Extent | None],
                  sender_sem: str, receiver_sem: str, num_dests: int, rect: tuple[RuntimeArg, ...]) -> list[Node]:
    """Read one block into the CB and, with receivers, multicast it to them once each has reserved space
    (the 2D and 1D multicast factories' sender lifecycle)."""
    ops: list[Node] = [op("cb_reserve_back", cb, tiles)]
    if not (tensor == "in0" and p.memory.in0 == Placement.L1_HEIGHT_SHARDED):
        ops += [op("read_tiles", tensor, cb, start, rows, cols, stride, *extents), op("noc_read_barrier")]
    # (a height-sharded in0: c_0 is globally allocated on the core's shard, the block is already there)
    if num_dests:
        ops += [op("sem_wait", sender_sem, num_dests, note="every receiver has reserved space"),
                op("sem_set", sender_sem, 0),
                op("mcast_cb", cb, tiles, tiles * p.cb(cb).page_bytes, *rect, num_dests)]
        if p.arch.behaviour.flush_mcast_before_flag:
            # flush the data multicast before the flag multicast that releases the receivers
            ops.append(op("noc_writes_flushed"))
        ops += [op("sem_set", receiver_sem, VALID, note="the local word the flag multicast copies"),
                op("mcast_sem_set", receiver_sem, VALID, *rect, num_dests)]
    ops.append(op("cb_push_back", cb, tiles))
    return ops


def _in1_receiver_body(p: Plan, t: "_Tiles",
                       sender: tuple[RuntimeArg, RuntimeArg]) -> Callable[[bool], tuple[Node, ...]]:
    """An in1 receiver/writer's out-block body (both factories): receive each K-block of in1 (and, when
    due, the bias) from the sender, then write the out block."""
    in1_recv = Loop("block", 0, p.num_blocks, tuple(_receiver_block(
        CB_IN1, p.in1_block_tiles, "in1_sender", "in1_receiver", sender)))

    def body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [in1_recv]
        if _needs_bias_read(p, first):
            ops += _receiver_block(CB_BIAS, p.out_block_w, "in1_sender", "in1_receiver", sender)
        return tuple(ops + _writer_ops(p, t))
    return body


def _receiver_block(cb: int, tiles: int, sender_sem: str, receiver_sem: str,
                    sender: tuple[RuntimeArg, RuntimeArg]) -> list[Node]:
    return [op("cb_reserve_back", cb, tiles), op("sem_set", receiver_sem, INVALID),
            op("sem_inc", sender_sem, *sender, 1), op("sem_wait", receiver_sem, VALID),
            op("cb_push_back", cb, tiles)]


# TT-Metal's 1D factory creates two semaphores, sender then receiver, for the operand it multicasts.
SEMAPHORE_IDS_1D = {"mcast_1d_in0": {"in0_sender": 0, "in0_receiver": 1},
                    "mcast_1d_in1": {"in1_sender": 0, "in1_receiver": 1}}


def _all_but_first(nx: int, ny: int) -> tuple[CoreRange, ...]:
    """Every core of an nx x ny rectangle but (0, 0), as rectangles: the rest of row 0, then the rows below."""
    ranges = [CoreRange(1, 0, nx - 1, 0)] if nx > 1 else []
    if ny > 1:
        ranges.append(CoreRange(0, 1, nx - 1, ny - 1))
    return tuple(ranges)


def _mcast_1d_kernels(p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...]:
    """The kernels of TT-Metal's 1D multicast factory (matmul_multicore_reuse_mcast_1d_program_factory.cpp).
    Core (0, 0) reads the shared operand and multicasts it to the bounding box of all cores (itself
    excluded: a multicast without loopback); every core reads its own block of the other operand.

    - mcast_1d_in0: in0_sender on (0, 0), in0_receiver on the rest; in1_sender_writer on every core
      reads its in1 (and bias) columns without multicast and writes its output.
    - mcast_1d_in1: in1_sender_writer on (0, 0) multicasts in1 (and the bias), in1_receiver_writer on the
      rest; in0_sender on every core reads its in0 rows without multicast.

    The receivers of a grid taller than one row run on two rectangles (the rest of row 0, the rows below),
    one kernel each with the same body (role in0_receiver / in1_receiver_writer)."""
    t = _Tiles(p)
    tensors = _tensors(p)
    nx, ny = p.grid
    dests = nx * ny - 1
    in0_noc, in1_noc = 1, 0     # in0 on NCRISC/NOC 1, in1 + writer on BRISC/NOC 0, as the factory places them
    in0_mcast = p.spec.dataflow == "mcast_1d_in0"
    sem_ids = SEMAPHORE_IDS_1D[p.spec.dataflow]
    sems = tuple(sem_ids.items())
    origin = CoreRange(0, 0, 0, 0)
    sender_core = (RuntimeArg("mcast_sender_noc_x", "noc_x", A(0)), RuntimeArg("mcast_sender_noc_y", "noc_y", A(0)))
    kernels: list[Kernel] = []

    def rect(noc: int) -> tuple[RuntimeArg, ...]:
        # the bounding box of every core with work, from (0, 0): the factory's in0/in1 mcast rectangle
        return _noc_rect(noc, A(0), A(0), A(nx - 1), A(ny - 1))

    def receivers(name: str, processor: str, noc: int, body: tuple[Node, ...], kernel_tensors: tuple[TensorArg, ...],
                  cbs: tuple[tuple[str, int], ...]) -> list[Kernel]:
        out = []
        for i, cores in enumerate(_all_but_first(nx, ny)):
            k = _dm_kernel(name if i == 0 else f"{name}_rows", processor, noc, cores, body, kernel_tensors, cbs,
                           sems, sender_core)
            out.append(replace(k, role=name))
        return out

    in0_dests = dests if in0_mcast else 0
    in0_read = Loop("block", 0, p.num_blocks, tuple(_sender_block(
        p, CB_IN0, "in0", t.in0_block(), p.out_block_h, p.in0_block_w, p.kt, p.in0_block_tiles,
        (t.in0_rows(), None), "in0_sender", "in0_receiver", in0_dests, rect(in0_noc))))
    kernels.append(_dm_kernel("in0_sender", "NCRISC", in0_noc, origin if in0_mcast else all_cores,
                              _out_block_loops(p, lambda first: (in0_read,)), (tensors["in0"],),
                              (("cb_in0", CB_IN0),), sems if in0_mcast else (),
                              rect(in0_noc) if in0_dests else ()))
    if in0_mcast and dests:
        in0_recv = Loop("block", 0, p.num_blocks, tuple(_receiver_block(
            CB_IN0, p.in0_block_tiles, "in0_sender", "in0_receiver", sender_core)))
        kernels += receivers("in0_receiver", "NCRISC", in0_noc, _out_block_loops(p, lambda first: (in0_recv,)),
                             (), (("cb_in0", CB_IN0),))

    in1_dests = 0 if in0_mcast else dests
    in1_read = Loop("block", 0, p.num_blocks, tuple(_sender_block(
        p, CB_IN1, "in1", t.in1_block(), p.in0_block_w, p.out_block_w, p.nt, p.in1_block_tiles,
        (None, t.in1_cols()), "in1_sender", "in1_receiver", in1_dests, rect(in1_noc))))

    def in1_sender_body(first: bool) -> tuple[Node, ...]:
        ops: list[Node] = [in1_read]
        if _needs_bias_read(p, first):
            ops += _sender_block(p, CB_BIAS, "bias", t.bias_block(), 1, p.out_block_w, p.nt, p.out_block_w,
                                 (None, t.in1_cols()), "in1_sender", "in1_receiver", in1_dests, rect(in1_noc))
        return tuple(ops + _writer_ops(p, t))

    writer_cbs = (("cb_in1", CB_IN1),) + ((("cb_bias", CB_BIAS),) if p.fuse_bias else ()) + (("cb_out", CB_OUT),)
    send_tensors = tuple(tensors[n] for n in ("in1", "bias", "out") if n in tensors)
    kernels.append(_dm_kernel("in1_sender_writer", "BRISC", in1_noc, all_cores if in0_mcast else origin,
                              _out_block_loops(p, in1_sender_body), send_tensors, writer_cbs,
                              () if in0_mcast else sems, rect(in1_noc) if in1_dests else ()))
    if not in0_mcast and dests:
        in1_receiver_body = _in1_receiver_body(p, t, sender_core)
        kernels += receivers("in1_receiver_writer", "BRISC", in1_noc, _out_block_loops(p, in1_receiver_body),
                             (tensors["out"],), writer_cbs)
    return tuple(kernels)


def _in0_block_sharded_kernels(p: Plan, noc: int, sems: tuple[tuple[str, int], ...]) -> list[Kernel]:
    """A block-sharded in0 (ttmetal-matmul.md §2.4; TT-Metal's
    reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp): every core holds per_core_M x
    (Kt / n) tiles of in0, its K slice of its M block, for the n cores along its in0 multicast. K-block k
    comes from the core at position k / (blocks per shard) along that line: it copies the block out of
    its shard (c_2) into c_0 and multicasts it to the others, which receive it as from any in0 sender.
    TT-Metal runs one kernel everywhere and branches on its sender id; kgen emits one kernel per
    position, so that whose turn it is is a loop bound, not a runtime branch."""
    n, sw, obh, ibw = p.n_blocks, p.in0_shard_w, p.out_block_h, p.in0_block_w
    per_shard = sw // ibw
    tiles, page = p.in0_block_tiles, p.cb(CB_IN0).page_bytes

    # the line of cores an in0 block travels: this core's row, or its column under transpose_mcast
    def at(pos: int) -> tuple[Affine, Affine]:          # (x, y) of position `pos` on this core's line
        return (A(0, core_x=1), A(pos)) if p.transpose_mcast else (A(pos), A(0, core_y=1))

    def rect(tag: str, lo: int, hi: int) -> tuple[RuntimeArg, ...]:
        (x0, y0), (x1, y1) = at(lo), at(hi)
        if noc == 1:
            x0, y0, x1, y1 = x1, y1, x0, y0
        return (RuntimeArg(f"{tag}_start_x", "noc_x", x0), RuntimeArg(f"{tag}_start_y", "noc_y", y0),
                RuntimeArg(f"{tag}_end_x", "noc_x", x1), RuntimeArg(f"{tag}_end_y", "noc_y", y1))

    kernels = []
    for i in range(n):
        # the cores before and after this one on its line: two multicasts that never include the sender
        parts = ([(rect("before", 0, i - 1), i)] if i > 0 else []) + \
                ([(rect("after", i + 1, n - 1), n - 1 - i)] if i < n - 1 else [])
        senders = {j: (RuntimeArg(f"sender{j}_noc_x", "noc_x", at(j)[0]),
                       RuntimeArg(f"sender{j}_noc_y", "noc_y", at(j)[1])) for j in range(n) if j != i}
        copy = op("copy_shard", CB_IN0, CB_IN0_SHARD, A(0, bh=obh * sw, kb=ibw), obh, ibw, sw, page,
                  note="this core's K slice: the block comes out of its own shard")
        send: list[Node] = [op("cb_reserve_back", CB_IN0, tiles), copy, op("noc_read_barrier")]
        if n > 1:
            send += [op("sem_wait", "in0_sender", n - 1, note="every other core of the line has reserved space"),
                     op("sem_set", "in0_sender", 0)]
            send += [op("mcast_cb", CB_IN0, tiles, tiles * page, *r, count) for r, count in parts]
            if p.arch.behaviour.flush_mcast_before_flag:
                send.append(op("noc_writes_flushed"))
            send.append(op("sem_set", "in0_receiver", VALID, note="the local word the flag multicast copies"))
            send += [op("mcast_sem_set", "in0_receiver", VALID, *r, count) for r, count in parts]
            # the flag multicast reads this core's VALID word: flush before the word can turn INVALID again
            # when this core receives the next K-block (TT-Metal's block-sharded reader flushes here too)
            send.append(op("noc_writes_flushed"))
        send.append(op("cb_push_back", CB_IN0, tiles))
        k_loops = tuple(
            Loop("kb", 0, per_shard, tuple(send) if j == i else
                 tuple(_receiver_block(CB_IN0, tiles, "in0_sender", "in0_receiver", senders[j])),
                 f"K-blocks {j * per_shard}..{(j + 1) * per_shard - 1}: " + ("this core's shard" if j == i
                                                                          else f"from position {j}"))
            for j in range(n))
        cores = CoreRange(0, i, p.grid[0] - 1, i) if p.transpose_mcast else CoreRange(i, 0, i, p.grid[1] - 1)
        coords = tuple(a for r, _ in parts for a in r) + tuple(a for j in sorted(senders) for a in senders[j])
        kernels.append(_dm_kernel(f"in0_sharded_{i}", "NCRISC", noc, cores,
                                  _out_block_loops(p, lambda first: k_loops), (),
                                  (("cb_in0", CB_IN0), ("cb_in0_sharded", CB_IN0_SHARD)), sems, coords))
    return kernels


def lower(p: Plan) -> Program:
    """Build the IR of every kernel. The stage driver verifies it next (kgen/gen/pipeline.py)."""
    nx, ny = p.grid
    all_cores = CoreRange(0, 0, nx - 1, ny - 1)
    compute = Kernel("compute", "compute", "TRISC", None, all_cores, _compute_kernel(p),
                     compile_time_args=compute_compile_time_args(p), named_compile_time_args=compute_named_args(p),
                     defines=compute_defines(p))
    if p.spec.dataflow == "reuse":
        dm = _reuse_kernels(p, all_cores)
        sems: tuple[Semaphore, ...] = ()
    elif p.spec.dataflow in SEMAPHORE_IDS_1D:
        dm = _mcast_1d_kernels(p, all_cores)
        sems = tuple(Semaphore(name, i, INVALID, all_cores) for name, i in SEMAPHORE_IDS_1D[p.spec.dataflow].items())
    else:
        dm = _mcast_kernels(p, all_cores)
        sems = tuple(Semaphore(name, i, INVALID, all_cores) for name, i in SEMAPHORE_IDS.items())
    flags = ComputeFlags(math_fidelity=p.compute.math_fidelity, fp32_dest_acc=p.compute.fp32_dest_acc,
                         math_approx=p.compute.math_approx, dst_full_sync=p.compute.dst_full_sync,
                         dst_sync=p.dst_sync, l1_acc_enabled=p.l1_acc_enabled)
    return Program(p, (compute,) + dm, sems, flags, p.cbs, p.regions)
