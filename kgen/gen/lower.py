"""Stage 3, lower: `Plan` -> `Program` (the block-lifecycle IR of every kernel).

The compute kernel reproduces the lifecycle of TT-Metal 0.81.1's
`bmm_large_block_zm_fused_bias_activation.cpp` op by op (docs/reference/matmul.md §1.5-§1.11). Where
that kernel branches on the K-block index (block 0, block 1, the penultimate and the last block)
or on the output-block index (bias held resident), the IR is split into explicit loops over index
ranges whose bodies are identical, so that every op the hardware executes is visible in the tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from kgen.gen.dataflow.kernels import out_block_loops
from kgen.core.types import TILE_HW, Placement
from kgen.gen.ir import (Affine, ComputeFlags, CoreBlocking, IoTensor, Kernel, Loop, Node, Problem, Program,
                         RuntimeArg, ShardSpec, Sym, op)
from kgen.gen.plan import CB_BIAS, CB_IN0, CB_IN1, CB_OUT, CB_PARTIALS, Plan, round_up_tiles
from kgen.gen.rules import CB_IN0_TRANSPOSED

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
    (docs/reference/matmul.md §1.1), so kgen's compute kernel and TT-Metal's are interchangeable."""
    args = [
        ("in0_block_w", p.in0_block_w),
        ("in0_num_subblocks", p.in0_num_subblocks),
        ("in0_block_num_tiles", p.in0_block_tiles),
        ("in0_subblock_num_tiles", p.out_subblock_h * p.in0_block_w),
        ("in1_num_subblocks", p.in1_num_subblocks),
        ("in1_block_num_tiles", p.in1_block_tiles),
        ("in1_block_w", p.in1_block_w),  # the in1 row stride: fewer than the out block's columns when padded
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
        ("in0_transpose_tile", int(p.transpose_a)),   # transpose_a: each in0 tile transposed into c_10
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
    act = p.sfpu_activation
    if act is not None:
        named += act.named_args                         # activation_type, activation_param0..2
    if _dram_sharded_compute(p):
        named.append(("last_subblock_w_valid", p.last_subblock_w_valid))
    return tuple(named)


def _dram_sharded_compute(p: Plan) -> bool:
    """The kernel is built as the DRAM-sharded factory builds TT's (MATMUL_DRAM_SHARDED: the named arg
    last_subblock_w_valid and the is_worker_core runtime arg)."""
    return "MATMUL_DRAM_SHARDED" in dict(p.dataflow.compute_defines)


# Every define TT-Metal's matmul compute kernel reads that kgen plans for (§1.3); the rendered kernel
# refuses to build when the program's defines disagree with the plan it was generated for.
COMPUTE_DEFINE_NAMES = ("FUSE_BIAS", "PACK_RELU", "PACKER_L1_ACC", "FP32_DEST_ACC_EN", "MM_PARTIALS_RELOAD_ALIAS_CB")


def compute_defines(p: Plan) -> tuple[tuple[str, str], ...]:
    """The compute defines TT-Metal's factory sets (§2.6), exactly when the plan needs them."""
    defines = []
    if p.fuse_bias:
        defines.append(("FUSE_BIAS", "1"))
    if p.pack_relu:
        defines.append(("PACK_RELU", "1"))
    if p.sfpu_activation is not None:
        defines.append(("SFPU_ACTIVATION", "1"))
    if p.l1_acc_enabled:
        defines.append(("PACKER_L1_ACC", "1"))
    if p.compute.fp32_dest_acc:
        defines.append(("FP32_DEST_ACC_EN", "1"))
    if p.transpose_b:        # the factories' `if (in1_transpose_tile)` (0.81.1): matmul_block transposes in1's tiles
        defines.append(("IN1_TRANSPOSE_TILE", "1"))
    # the partials' UnpackToDestFp32 alias, by index, as 0.81.1's legacy builders hand it over
    defines += [(cb.index_define, str(cb.index)) for cb in p.cbs if cb.index_define]
    return tuple(defines) + p.dataflow.compute_defines


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
    def in0(self) -> int:                              # in0_dfb_id: c_10 when in0's tiles are transposed first
        return CB_IN0_TRANSPOSED if self.p.transpose_a else CB_IN0

    @property
    def init(self) -> Node:
        ct = self.ct
        return op("matmul_init", self.in0, CB_IN1, self.p.transpose_b, ct["out_subblock_w"], ct["out_subblock_h"],
                  ct["in0_block_w"])

    def transpose_stage(self) -> list[Node]:
        """transpose_a: TT's in0_transpose_tile stage at the head of every K-block (transpose_tile_block):
        the block's in0 tiles, four at a time (then the rest), unpacked transposed out of c_0, packed into
        c_10 in in0's format; L1 accumulation off for those packs."""
        p, n = self.p, self.p.in0_block_tiles
        t = CB_IN0_TRANSPOSED

        def chunk(tiles: int) -> tuple[Node, ...]:
            return (op("cb_wait_front", CB_IN0, tiles), op("tile_regs_acquire"),
                    Loop("tr", 0, tiles, (op("transpose_tile", CB_IN0, A(0, tr=1), A(0, tr=1)),)),
                    op("tile_regs_commit"), op("cb_pop_front", CB_IN0, tiles), op("cb_reserve_back", t, tiles),
                    op("tile_regs_wait"), Loop("tr", 0, tiles, (op("pack_tile", A(0, tr=1), t),)),
                    op("tile_regs_release"), op("cb_push_back", t, tiles))
        ops: list[Node] = [op("reconfig_srca", CB_IN1, CB_IN0, note="SrcA: in1 -> in0 format for the transpose"),
                           op("transpose_init", CB_IN0), op("pack_reconfig_format", t)]
        if p.l1_acc_enabled:
            ops.append(op("pack_l1_acc", False, note="the transposed tiles overwrite c_10"))
        if n // 4:
            ops.append(Loop("tb", 0, n // 4, chunk(4), "four tiles a DST section"))
        if n % 4:
            ops += chunk(n % 4)
        return ops + [op("reconfig_srca", CB_IN0, CB_IN1, note="SrcA back to in1"), self.init,
                      op("pack_reconfig_format", CB_PARTIALS)]

    def pack_wait(self) -> Node:
        """tile_regs_wait, or, where TT's kernel applies the SFPU activation, apply_activation_from_pack
        in its place (it waits for the same DST section, then runs the activation before the pack)."""
        act = self.p.sfpu_activation
        if act is None:
            return op("tile_regs_wait")
        return op("activation_apply", act.spelling, self.sb, note=f"{act.spelling} on the SFPU, then pack")

    @property
    def bias_ntiles(self) -> Sym:
        return Sym(self.p.out_block_w, "bias_ntiles")

    # --- the K-block loop ------------------------------------------------------------------------
    def reload_ops(self) -> list[Node]:
        """reload_from_cb_to_dst: through the partials CB, or through their UnpackToDestFp32 alias (the
        partials' read pointer copied into it first), per the plan (Plan.reload_cb)."""
        via = self.p.reload_cb
        alias = None if via == CB_PARTIALS else via
        into = "straight into DST (UnpackToDestFp32)" if self.p.reload_to_dest else "into DST through SrcA"
        return [
            op("reconfig_srca", CB_IN1, via, note="SrcA: in1 -> partials format"),
            op("copy_init", via),
            op("cb_wait_front", CB_PARTIALS, self.sb),
            op("copy_block", CB_PARTIALS, 0, 0, self.sb, alias,
               note=f"reload partials {into}" + (f", through their alias c_{via}" if alias is not None else "")),
            op("cb_pop_front", CB_PARTIALS, self.sb),
            op("reconfig_srca", via, CB_IN1, note="SrcA back to in1"),
            self.init,
        ]

    def enable_reload(self, block: int) -> bool:
        if self.p.l1_acc_enabled:
            return not self.p.fuse_bias and block == self.last     # armed at block n-2: one reload, last block
        return block >= 1                                          # spill: every later block reloads

    def subblock_ops(self, block: int, narrowed: bool = False) -> tuple[Node, ...]:
        """One subblock's K-block step. `narrowed`: the last in1 subblock of a padded block, whose
        matmul_block covers only the lanes in1 tiles back (TT's last_subblock_w_valid); the padded lanes
        keep whatever DST held, are packed with the rest, and the writer drops them."""
        ct, sb, l1acc, bias = self.ct, self.sb, self.p.l1_acc_enabled, self.p.fuse_bias
        sbw, kt = ct["out_subblock_w"], ct["in0_block_w"]
        mm_w = Sym(self.p.last_subblock_w_valid, "last_subblock_w_valid") if narrowed else sbw
        ops: list[Node] = [op("tile_regs_acquire")]
        if self.enable_reload(block):
            ops += self.reload_ops()
        ops.append(Loop("k", 0, kt, (
            op("matmul_block", self.in0, CB_IN1, A(0, in0_sb=ct["in0_subblock_num_tiles"], k=1),
               A(0, in1_sb=sbw, k=ct["in1_block_w"]), 0, self.p.transpose_b, mm_w, ct["out_subblock_h"], kt,
               note="the last subblock: only the lanes in1 backs" if narrowed else ""),)))
        if block == self.last:
            mm_out = self.mm_out
            wait = op("tile_regs_wait") if bias else self.pack_wait()     # with a bias, the bias stage applies it
            ops += [op("tile_regs_commit"), op("cb_reserve_back", mm_out, sb), wait]
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
            elif l1acc and (block == 1 or (block > 1 and self.p.transpose_a)):
                # with transpose_a every later block too: its transpose stage switched accumulation off
                ops.append(op("pack_l1_acc", True, note="from block 1 the packer adds into L1"))
            ops += [op("pack_block", CB_PARTIALS, 0, sb), op("tile_regs_release"), op("cb_push_back", CB_PARTIALS, sb)]
        return tuple(ops)

    def in1_subblock_loops(self, block: int) -> tuple[Node, ...]:
        """The in1 subblocks of one K-block; with padded lanes the last one is a loop of its own."""
        n = self.p.in1_num_subblocks
        if not self.p.padded_lanes:
            return (Loop("in1_sb", 0, self.ct["in1_num_subblocks"], self.subblock_ops(block)),)
        full = (Loop("in1_sb", 0, n - 1, self.subblock_ops(block)),) if n > 1 else ()
        return full + (Loop("in1_sb", n - 1, n, self.subblock_ops(block, narrowed=True),
                            f"{self.p.padded_lanes} padded lane(s): per_core_N_compute {self.p.per_core_n_compute} "
                            f"> per_core_N {self.p.per_core_n}"),)

    def k_block_body(self, block: int) -> tuple[Node, ...]:
        p, ct, sb, last = self.p, self.ct, self.sb, self.last
        in0_tiles, in1_tiles = ct["in0_block_num_tiles"], ct["in1_block_num_tiles"]
        ops: list[Node] = self.transpose_stage() if p.transpose_a else []
        if p.pack_relu and not p.fuse_bias and block == last:
            ops.append(op("pack_relu", "zero", note="ReLU on the final pack only"))
        ops += [op("cb_wait_front", self.in0, in0_tiles), op("cb_wait_front", CB_IN1, in1_tiles)]
        ops.append(Loop("in0_sb", 0, ct["in0_num_subblocks"], self.in1_subblock_loops(block)))
        drain = (p.fuse_bias and block < last) or (not p.fuse_bias and block < last - 1)
        if p.l1_acc_enabled and drain:
            # Popping the whole block rewinds the partials FIFO, so the next block packs onto the same
            # L1 addresses and the packer accumulates (the CB holds exactly one block).
            ops.append(Loop("s", 0, p.out_block_tiles // sb, (
                op("cb_wait_front", CB_PARTIALS, sb), op("cb_pop_front", CB_PARTIALS, sb)),
                "rewind the partials for L1 accumulation"))
        ops += [op("cb_pop_front", self.in0, in0_tiles), op("cb_pop_front", CB_IN1, in1_tiles)]
        return tuple(ops)

    def k_block_note(self, start: int, stop: int) -> str:
        last, bias = self.last, self.p.fuse_bias
        if self.p.num_blocks == 1:
            return "the only K-block: accumulate in DST, pack to the output"
        names = []
        if self.p.l1_acc_enabled:
            if start == 0:
                names.append("L1 acc off, overwrite partials")
            elif start == 1 and (bias or last > 1):      # two K-blocks without a bias: never on
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
        ops += [op("reconfig_srcab", CB_IN1, CB_PARTIALS, self.in0, CB_BIAS, note="SrcA -> partials, SrcB -> bias"),
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
            self.pack_wait(),
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
                ops.append(op("reconfig_srcab", CB_PARTIALS, CB_IN1, CB_BIAS, self.in0))
            else:
                ops.append(op("reconfig_srca", CB_PARTIALS, CB_IN1))
            ops.append(self.init)
        return tuple(ops)


def _compute_kernel(p: Plan) -> tuple[Node, ...]:
    lowering = _ComputeLowering.of(p)
    k_loops = lowering.k_loops()
    # The bias wait happens on the first output block only when num_blocks_w_dim == 1, so the
    # output-block loops split into (bh == 0, bw == 0) and the rest.
    out_loops = out_block_loops(p, lambda first: lowering.out_block_body(first, k_loops),
                                 first_note="first output block: wait for the bias",
                                 batch_note="batch: its own in1" if p.batched_in1 else "batch: one in1 for every batch"
                                 if p.batch_ct > 1 else "batch (fused into M)")
    act = p.sfpu_activation
    body: list[Node] = [op("activation_init", act.spelling)] if act is not None else []
    body += [
        op("hw_startup", lowering.in0, CB_IN1, CB_PARTIALS, note="SrcOrder::Reverse: in0 -> SrcB, in1 -> SrcA"),
        lowering.init,
        *out_loops,
    ]
    if p.fuse_bias and p.num_blocks_w_dim == 1:
        body.append(op("cb_pop_front", CB_BIAS, lowering.bias_ntiles, note="release the resident bias"))
    return tuple(body)


# ----------------------------------------------------------------------------------------------
# Data-movement kernels
# ----------------------------------------------------------------------------------------------

def lower(p: Plan) -> Program:
    """Build the IR of every kernel. The stage driver verifies it next (kgen/gen/pipeline.py)."""
    all_cores = p.all_cores
    compute = Kernel("compute", "compute", "TRISC", None, all_cores, _compute_kernel(p),
                     compile_time_args=compute_compile_time_args(p), named_compile_time_args=compute_named_args(p),
                     defines=compute_defines(p),
                     # TT's kernel under MATMUL_DRAM_SHARDED returns at once unless runtime arg 0 is 1
                     runtime_args=(RuntimeArg("is_worker_core", "value", A(1)),) if _dram_sharded_compute(p) else ())
    own = p.dataflow.compute_kernels(p, all_cores)     # a factory binding another compute kernel
    dm, sems = p.dataflow.kernels(p, all_cores)
    flags = ComputeFlags(math_fidelity=p.compute.math_fidelity, fp32_dest_acc=p.compute.fp32_dest_acc,
                         math_approx=p.compute.math_approx, dst_full_sync=p.compute.dst_full_sync,
                         dst_sync=p.dst_sync, l1_acc_enabled=p.l1_acc_enabled, dst_capacity=p.dst_capacity,
                         dst_accum_format=p.dst_accum_format)
    kernels = (own if own is not None else (compute,)) + dm
    s = p.spec
    return Program(kernels, sems, flags, p.cbs, p.regions, io_tensors=_io_tensors(p, kernels),
                   name=s.name, variant=s.variant, arch=p.arch, grid=p.grid,
                   problem=Problem(s.batch, s.m, s.n, s.k, p.mt, p.nt, p.kt, p.batch_ct),
                   blocking=CoreBlocking(p.per_core_m, p.per_core_n, p.out_block_h, p.out_block_w, p.in0_block_w,
                                         p.out_subblock_h, p.out_subblock_w, p.num_blocks, p.num_blocks_h_dim,
                                         p.num_blocks_w_dim, p.in0_shard_w, p.per_core_n_compute,
                                         p.last_subblock_w_valid),
                   policy=p.policy, policy_reason=p.policy_reason, partials_format=p.partials_format,
                   fuse_bias=p.fuse_bias, sfpu_activation=p.sfpu_activation)


# ----------------------------------------------------------------------------------------------
# The host interface
# ----------------------------------------------------------------------------------------------

def _io_tensors(p: Plan, kernels: tuple[Kernel, ...]) -> tuple[IoTensor, ...]:
    """The tensors the kernels read and write through a TensorAccessor, and the sharded ones they reach
    only through a CB on the shard, in ttnn.generic_op's order."""
    declared = {}
    for k in kernels:
        for t in k.tensors:
            declared[t.name] = (t.data_format, t.layout, t.page_bytes)
    shards = p.shard_specs
    for name in shards:     # a sharded input no kernel reads through a TensorAccessor is still a tensor
        fmt = p.in0_format if name == "in0" else p.out_format
        declared.setdefault(name, (fmt, "TILE", p.arch.tile_bytes[fmt]))
    s = p.spec
    # in0 and out keep the spec's leading dims (rank 4 and 5 too: ttnn folds them, the tensors keep them);
    # a batched in1 has in0's, as ttnn requires of a non-broadcast matmul (BCMK*BCKN=BCMN)
    lead = list(s.batch_shape)
    in1_batch = [] if s.broadcast_in1 or s.batch == 1 else lead     # one in1 per batch: [B, K, N]
    # as stored: transpose_a keeps A as K x M, transpose_b keeps B as N x K (ttnn.matmul's operands)
    in0_dims, in1_dims = ("k", "m") if s.transpose_a else ("m", "k"), ("n", "k") if s.transpose_b else ("k", "n")
    dims = {"m": s.m, "n": s.n, "k": s.k}
    shapes = {"in0": [*lead, *(dims[d] for d in in0_dims)], "in1": [*in1_batch, *(dims[d] for d in in1_dims)],
              "bias": [1, s.n], "out": [*lead, s.m, s.n]}
    # ttnn's padded_shape (each dimension but the batch padded to whole tiles)
    tiles = {d: round_up_tiles(v) * TILE_HW for d, v in (("m", s.m), ("n", s.n), ("k", s.k))}
    padded = {"in0": [*lead, *(tiles[d] for d in in0_dims)], "in1": [*in1_batch, *(tiles[d] for d in in1_dims)],
              "bias": [1, tiles["n"]], "out": [*lead, tiles["m"], tiles["n"]]}
    b, b1 = p.batch_ct, (p.batch_ct if p.batched_in1 else 1)     # mt is per batch when the kernels loop over it
    pages = {"in0": b * p.mt * p.kt, "in1": b1 * p.kt * p.nt, "bias": p.nt,
             "out": b * p.mt * TILE_HW if p.untilize_out else b * p.mt * p.nt}
    transposed = {"in0": s.transpose_a, "in1": s.transpose_b}
    return tuple(IoTensor(n, *declared[n], pages[n], tuple(shapes[n]), tuple(padded[n]),
                          getattr(p.memory, n, Placement.DRAM), _shard(shards.get(n)), transposed.get(n, False))
                 for n in ("in0", "in1", "bias", "out") if n in declared)


def _shard(spec: dict | None) -> ShardSpec | None:
    if spec is None:
        return None
    return ShardSpec(spec["memory_layout"], tuple(spec["grid"]), tuple(spec["shape"]), spec["orientation"],
                     spec.get("buffer_type", "L1"))
