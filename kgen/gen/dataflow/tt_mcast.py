"""TT-Metal's 2D and 1D multicast programs for a kgen plan: TT-Metal's own data-movement kernels in the
places of kgen's, with the compile-time args, named args, defines and per-core runtime args the factory
computes for the same blocking (docs/reference/matmul.md §2.5; the index layout is the kernels' own, the
values the legacy 2D builder's, `create_program_mcast_in0_in1`). The 2D and 1D factories (mcast_2d.py,
mcast_1d.py) answer port-check with :func:`unsupported_reason`, :func:`program` and, for the 2D one's
block-sharded in0 reader, :func:`block_sharded_differences`.

For an `mcast_2d` plan, kgen's four readers/writers correspond one to one to the kernels of
TT-Metal's 2D multicast matmul factory (docs/reference/matmul.md §2.4):

    in0_sender           reader_bmm_tile_layout_in0_sender_padding.cpp        left column, NCRISC
    in0_receiver         reader_bmm_tile_layout_in0_receiver.cpp              other columns, NCRISC
    in1_sender_writer    reader_bmm_tile_layout_in1_sender_writer_padding.cpp top row, BRISC
    in1_receiver_writer  reader_bmm_tile_layout_in1_receiver_writer_padding.cpp other rows, BRISC

For an `mcast_1d_in0` / `mcast_1d_in1` plan the same four TT-Metal kernels run in the places TT-Metal's
1D multicast factory gives them (matmul_multicore_reuse_mcast_1d_program_factory.cpp, the legacy
`process_mcast_in0_program_and_create_override_variables` / `process_mcast_in1_...` builders; README,
"The 1D multicast factory"):

    mcast_1d_in0   in0_sender on core (0,0) multicasting to the bounding box of all cores;
                   in0_receiver on the others; in1_sender_writer on every core, SKIP_MCAST
    mcast_1d_in1   in1_sender_writer on core (0,0) multicasting; in1_receiver_writer on the others;
                   in0_sender on every core, SKIP_MCAST

kgen's receivers of a grid taller than one row are two kernels (`*_rows` for the rows below the
first); both get TT-Metal's receiver kernel, as the factory's one kernel on a CoreRangeSet.

Only what kgen's plans use is reproduced: tensors in tile layout, interleaved in DRAM or L1 (the same
kernels, TensorAccessorArgs with or without IsDram), in0 block- or height-sharded and the output block-sharded in L1 (the factory's
reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp on every core for a block-sharded
in0, IN0_SHARDED and OUT_SHARDED otherwise; on the 1D in0 multicast a width-sharded in0 and output,
tt_width_sharded.py), no sparsity and no fused collectives. transpose_mcast is the factory's: in0_idx and in1_idx swap (M
blocks along x), the in0 sender is the top row multicasting down its column and the in1
sender/writer the left column multicasting along its row, each on its own NoC (the factory swaps the
sender ranges and `std::swap(in0_mcast_start, in1_mcast_end)`, tt-metal @0000d49e
matmul_multicore_reuse_mcast_2d_program_factory.cpp). The "split half" second NOC of the right
half's receivers is not reproduced: the emulator's NoC has no per-NOC effect on the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kgen.core.manifest import cores_of
from kgen.core.types import Placement, is_sharded
from kgen.gen.dataflow import tt_transpose
from kgen.gen.dataflow.tt_width_sharded import in0_width_sharded_1d, width_sharded_differences  # noqa: F401
from kgen.gen.dataflow.tt_program import (INTERLEAVED_DRAM, INTERLEAVED_L1, DataflowSwapError, ExpectedDifference,
                                         accessor_config,
                                         TtKernelArgs, TtProgram, aligned_pages, noc_index, untiled_tensor)

# kgen kernel name -> TT-Metal 0.81.1 kernel file (in the headers' dataflow kernel folder).
TT_KERNELS = {
    "in0_sender": "reader_bmm_tile_layout_in0_sender_padding.cpp",
    "in0_receiver": "reader_bmm_tile_layout_in0_receiver.cpp",
    "in1_sender_writer": "reader_bmm_tile_layout_in1_sender_writer_padding.cpp",
    "in1_receiver_writer": "reader_bmm_tile_layout_in1_receiver_writer_padding.cpp",
    # 1D multicast: the receivers on the rows below the first (kgen/gen/dataflow/mcast_1d.py)
    "in0_receiver_rows": "reader_bmm_tile_layout_in0_receiver.cpp",
    "in1_receiver_writer_rows": "reader_bmm_tile_layout_in1_receiver_writer_padding.cpp",
}
# kgen's in0_sharded_<i> kernels (a block-sharded in0) all stand for this one kernel of the factory.
TT_BLOCK_SHARDED_IN0 = "reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp"

# CB indices the 2D factory names for TT-Metal's readers whether or not the plan has them: the
# height-sharded in0 CB (c_2), the bias CB (c_3) and the sparsity CBs of the in0 and in1 senders
# (c_6, c_7). The kernels bind them even when unused.
TT_FIXED_CBS = {"cb_in0_sharded": 2, "cb_bias": 3, "in0_sender cb_sparsity": 6, "in1_sender cb_sparsity": 7}


def _noc(x: int, y: int) -> tuple[dict, dict]:
    return {"noc_x": x}, {"noc_y": y}


def _rectangle(start: tuple[int, int], end: tuple[int, int], noc: int) -> list[dict]:
    """A multicast rectangle as runtime args: given low-to-high (NOC 0 order), swapped on NOC 1
    (the factory: `if (in0_noc == NOC_1) std::swap(in0_mcast_start, in0_mcast_end)`)."""
    if noc == 1:
        start, end = end, start
    return [*_noc(*start), *_noc(*end)]


@dataclass(frozen=True)
class FactoryValues:
    """The 2D factory's shared values for one plan and build folder: blocking, semaphores, pages, and
    the padding of the last row/column of cores: the factory's last_* values, stated here from its
    formulas ("Parameters for last row, col, or block"); where per_core divides Mt and Nt they equal
    the full values and every skip is 0."""
    plan: Any
    page: Mapping[str, int]                 # DRAM-aligned page size per tensor
    sems: Mapping[str, int]
    named: Mapping[str, Mapping[str, int]]  # kgen kernel -> its named compile-time args
    bias: bool
    out_tile: int

    @classmethod
    def of(cls, plan, manifest: dict) -> "FactoryValues":
        tensors = {t["name"]: t for t in manifest["io_tensors"]}
        return cls(plan,
                   aligned_pages(manifest, plan.arch.dram_alignment),
                   {s["name"]: s["id"] for s in manifest["semaphores"]},
                   {k["name"]: k["named_compile_time_args"] for k in manifest["kernels"]},
                   "bias" in tensors, tensors["out"]["page_size"])

    @property
    def batch(self) -> int:
        """The factory's B: 1 with the batch fused into Mt, else the batch (fuse_batch = false, Mt of one
        batch; the readers step in0 by MtKt and the writers the output by MtNt per batch)."""
        return self.plan.batch_ct

    @property
    def bcast_b(self) -> int:
        """The factory's bcast_B (`bcast_batch`): 0 when in1 holds one matrix per batch (the in1 reader
        steps it by KtNt per batch), else 1."""
        return 0 if self.plan.batched_in1 else 1

    @property
    def in0_shard_tiles(self) -> tuple[int, int]:
        """The factory's in0_shard_width_in_tiles, in0_shard_height_in_tiles (0, 0 unless in0 is sharded)."""
        p = self.plan
        return (p.in0_shard_w, p.per_core_m) if is_sharded(p.memory.in0) else (0, 0)

    @property
    def out_sharded(self) -> bool:
        return is_sharded(self.plan.memory.out)

    @property
    def out_accessor(self) -> int:
        return accessor_config(self.plan.memory.out)       # L1 when sharded or interleaved in L1

    @property
    def cols(self) -> int:
        return self.plan.n_blocks            # num_blocks_x: cores along N (the grid's rows with transpose_mcast)

    @property
    def rows(self) -> int:
        return self.plan.m_blocks            # num_blocks_y: cores along M

    def idx(self, core: tuple[int, int]) -> tuple[int, int]:
        """(in0_idx, in1_idx) of a core: its M block and its N block; the factory swaps them under
        transpose_mcast (`std::swap(in0_idx, in1_idx)`)."""
        x, y = core
        return (x, y) if self.plan.transpose_mcast else (y, x)

    def in0_rect(self, core: tuple[int, int], noc: int) -> list[dict]:
        """The in0 multicast rectangle: the rest of the sender's row, or of its column under
        transpose_mcast (where the factory takes in1's rectangle: `std::swap(in0_mcast_start, in1_mcast_end)`)."""
        x, y = core
        if self.plan.transpose_mcast:
            return _rectangle((x, min(1, self.cols - 1)), (x, self.cols - 1), noc)
        return _rectangle((min(1, self.cols - 1), y), (self.cols - 1, y), noc)

    def in1_rect(self, core: tuple[int, int], noc: int) -> list[dict]:
        """The in1 multicast rectangle: the rest of the sender's column, or of its row under transpose_mcast."""
        x, y = core
        if self.plan.transpose_mcast:
            return _rectangle((min(1, self.rows - 1), y), (self.rows - 1, y), noc)
        return _rectangle((x, min(1, self.rows - 1)), (x, self.rows - 1), noc)

    def in0_sender_of(self, core: tuple[int, int]) -> tuple[dict, dict]:
        """The NoC coordinates of a core's in0 sender: the left end of its row (top of its column)."""
        x, y = core
        return _noc(x, 0) if self.plan.transpose_mcast else _noc(0, y)

    def in1_sender_of(self, core: tuple[int, int]) -> tuple[dict, dict]:
        x, y = core
        return _noc(0, y) if self.plan.transpose_mcast else _noc(x, 0)

    @property
    def last_obh(self) -> int:
        p = self.plan
        return (p.mt % p.per_core_m or p.per_core_m) % p.out_block_h or p.out_block_h

    @property
    def last_obw(self) -> int:
        p = self.plan
        return (p.nt % p.per_core_n or p.per_core_n) % p.out_block_w or p.out_block_w

    @property
    def last_nbh(self) -> int:
        p = self.plan
        return ((p.mt % p.per_core_m or p.per_core_m) - 1) // p.out_block_h + 1

    @property
    def last_nbw(self) -> int:
        p = self.plan
        return ((p.nt % p.per_core_n or p.per_core_n) - 1) // p.out_block_w + 1

    @property
    def last_nsbh(self) -> int:
        return (self.last_obh - 1) // self.plan.out_subblock_h + 1

    @property
    def last_nsbw(self) -> int:
        return (self.last_obw - 1) // self.plan.out_subblock_w + 1

    @property
    def last_sbh(self) -> int:
        return self.last_obh % self.plan.out_subblock_h or self.plan.out_subblock_h

    @property
    def last_sbw(self) -> int:
        return self.last_obw % self.plan.out_subblock_w or self.plan.out_subblock_w

    @property
    def addr_skip(self) -> int:
        return self.out_tile * (self.plan.out_subblock_w - self.last_sbw)

    @property
    def w_skip(self) -> int:
        p = self.plan
        return p.out_subblock_w * p.out_subblock_h * (p.out_block_w // p.out_subblock_w - self.last_nsbw)

    @property
    def h_skip(self) -> int:
        p = self.plan
        return (p.out_block_h // p.out_subblock_h - self.last_nsbh) * (p.out_block_w * p.out_subblock_h)

    def out_subblocks_w(self, right: bool) -> tuple[int, ...]:
        """The writer's column-of-subblocks args: count, last count, last width, address and tile skips."""
        p, sbw = self.plan, self.plan.out_subblock_w
        return (p.out_block_w // sbw, self.last_nsbw if right else p.out_block_w // sbw,
                self.last_sbw if right else sbw, self.addr_skip if right else 0, self.w_skip if right else 0)

    def cb_fixed(self, kernel: str) -> dict[str, int]:
        cb = self.named[kernel]
        return {"cb_in1": cb["cb_in1"], "cb_bias": cb.get("cb_bias", TT_FIXED_CBS["cb_bias"]), "cb_out": cb["cb_out"]}

    def writer_ct(self) -> tuple[int, ...]:
        """The output-writer compile-time args both in1 kernels share: strides, subblock shape, tiles."""
        p = self.plan
        sbh, sbw = p.out_subblock_h, p.out_subblock_w
        return (1, p.nt, sbw, sbh * p.nt, p.out_block_w, p.out_block_h * p.nt, sbw, sbh, sbw * sbh, p.mt * p.nt)


def _in0_sender(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    kt, ibw, obh, cols, rows = p.kt, p.in0_block_w, p.out_block_h, f.cols, f.rows
    sw, sh = tt_transpose.in0_strides(p)                           # (1, Kt), or (Mt, 1) with transpose_a
    sharded = p.memory.in0 == Placement.L1_HEIGHT_SHARDED          # IN0_SHARDED: c_0 is the shard
    rt = tuple((core, (
        {"buffer_address": "in0"}, p.per_core_m * sh * f.idx(core)[0],
        *f.in0_rect(core, noc_index(k)),
        f.last_obh if f.idx(core)[0] == rows - 1 else obh,
        0)) for core in cores_of(k["core_ranges"]))                  # sparsity_addr
    return TtKernelArgs(
        "in0_sender", TT_KERNELS["in0_sender"],
        # in0_last_ktile_w = logical K % tile width (the reader zeroes the rest of the last K tile),
        # in0_last_ktile_h = 0 (no transpose_a), then extract_shard_sub_blocks (always false here), and the
        # shard's width and height in tiles (0 unless in0 is sharded)
        (sw, sh, ibw * sw, obh * sh, ibw, obh, obh * ibw, *tt_transpose.in0_last_ktile(p), 0, *f.in0_shard_tiles,
         p.num_blocks,
         p.num_blocks_w_dim,
         p.num_blocks_h_dim, f.sems["in0_sender"], f.sems["in0_receiver"], cols - 1, cols - 1, p.mt * kt,
         f.batch, f.batch,
         0, 0, 0, 1, 0, 0,                    # reuse_in0, batchB, sparsity page, bcast_A, batch from reader, fuse_op
         accessor_config(p.memory.in0), f.page["in0"], 0, 0,  # TensorAccessorArgs(in0), sparsity's
         0),                                  # num_batch_compute (sparsity off)
        {"cb_in0": f.named["in0_sender"]["cb_in0"], "cb_in0_sharded": TT_FIXED_CBS["cb_in0_sharded"],
         "cb_sparsity": TT_FIXED_CBS["in0_sender cb_sparsity"], "num_active": 0},
        {**({"SKIP_MCAST": "1"} if cols == 1 else {}), **({"IN0_SHARDED": "1"} if sharded else {})},
        rt)


def _in0_receiver(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    return TtKernelArgs(
        "in0_receiver", TT_KERNELS["in0_receiver"],
        (p.out_block_h * p.in0_block_w, p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim,
         f.sems["in0_sender"], f.sems["in0_receiver"], f.batch, 0),
        {"cb_in0": f.named["in0_receiver"]["cb_in0"]}, {},
        tuple((core, f.in0_sender_of(core)) for core in cores_of(k["core_ranges"])))


def _in1_sender_writer(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    pcm, pcn, nt, obw, obh, ibw = p.per_core_m, p.per_core_n, p.nt, p.out_block_w, p.out_block_h, p.in0_block_w
    cols, rows, bias = f.cols, f.rows, f.bias
    sw, sh = tt_transpose.in1_strides(p)                           # (1, Nt), or (Kt, 1) with transpose_b
    rt = []
    for core in cores_of(k["core_ranges"]):
        m, x = f.idx(core)                                               # in0_idx, in1_idx
        right = x == cols - 1
        rt.append((core, (
            {"buffer_address": "in1"}, pcn * sw * x,
            *f.in1_rect(core, noc_index(k)),
            0,                                                           # sparsity_addr
            {"buffer_address": "out"}, x * pcn + m * pcm * nt,
            f.last_obw if right else obw,
            obh // p.out_subblock_h, p.out_subblock_h, 0,
            *f.out_subblocks_w(right),
            {"buffer_address": "bias"} if bias else 0, pcn * x if bias else 0,
            # the factory: `if (!output_is_sharded)` push last_out_num_blocks_w / out_num_blocks_x
            *(() if f.out_sharded else (f.last_nbw if right else p.num_blocks_w_dim,)))))
    return TtKernelArgs(
        "in1_sender_writer", TT_KERNELS["in1_sender_writer"],
        (sw, sh, ibw * sh, obw * sw, obw, ibw, obw * ibw, p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim,
         f.sems["in1_sender"], f.sems["in1_receiver"], rows - 1, rows - 1, p.kt * nt, f.batch, f.bcast_b, 0, 0,
         *f.writer_ct(),
         1 if bias else 0, 0, 0, 0,            # bias stride, all-gather, reduce-scatter, compact_output
         accessor_config(p.memory.in1), f.page["in1"], 0, 0, f.out_accessor, f.page["out"],
         *((INTERLEAVED_DRAM, f.page["bias"]) if bias else ())),
        {**f.cb_fixed("in1_sender_writer"), "cb_sparsity": TT_FIXED_CBS["in1_sender cb_sparsity"], "num_active": 0},
        {**({"FUSE_BIAS": "1"} if bias else {}), **({"SKIP_MCAST": "1"} if rows == 1 else {}),
         **({"OUT_SHARDED": "1"} if f.out_sharded else {})},
        tuple(rt))


def _in1_receiver_writer(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    sbh, obh = p.out_subblock_h, p.out_block_h
    rt = []
    for core in cores_of(k["core_ranges"]):
        y, x = f.idx(core)                                               # in0_idx, in1_idx
        right, bottom = x == f.cols - 1, y == f.rows - 1
        rt.append((core, (
            *f.in1_sender_of(core), {"buffer_address": "out"}, x * p.per_core_n + y * p.per_core_m * p.nt,
            obh // sbh, f.last_nsbh if bottom else obh // sbh, f.last_sbh if bottom else sbh,
            f.h_skip if bottom else 0,
            *f.out_subblocks_w(right),
            *(() if f.out_sharded else (f.last_nbh if bottom else p.num_blocks_h_dim,
                                        f.last_nbw if right else p.num_blocks_w_dim)))))
    return TtKernelArgs(
        "in1_receiver_writer", TT_KERNELS["in1_receiver_writer"],
        (p.out_block_w * p.in0_block_w, p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim,
         f.sems["in1_sender"], f.sems["in1_receiver"], f.batch,
         *f.writer_ct(),
         p.out_block_w if f.bias else 0, 0, f.out_accessor, f.page["out"]),
        f.cb_fixed("in1_receiver_writer"),
        {**({"FUSE_BIAS": "1"} if f.bias else {}), **({"OUT_SHARDED": "1"} if f.out_sharded else {})},
        tuple(rt))


# ---- the 1D multicast factory ------------------------------------------------------------------
# process_mcast_in0_program_and_create_override_variables / process_mcast_in1_... of
# matmul_multicore_reuse_mcast_1d_program_factory.cpp (tt-metal @00629f0f, its legacy builders), in
# the argument layout of the 0.81.1 kernels. Core (x, y) of the grid is the factory's core i = y * grid_x + x.

def _core_index(f: FactoryValues, x: int, y: int) -> int:
    return y * f.cols + x


def _mcast_1d_counts(f: FactoryValues) -> tuple[int, int]:
    """(num_dests, num_cores) of the 1D multicast: every core with work but the sender, and the bounding
    box of all cores less the sender (the factory's `num_cores - 1` and `in0/in1_mcast_receiver_num_cores
    - 1`, `all_cores_with_work.bounding_box().size()`); they differ when the run's last row is partial."""
    return f.plan.num_cores - 1, f.cols * f.rows - 1


def _writer_h_args(f: FactoryValues, last: bool) -> tuple[int, int, int]:
    """The writer's M padding args: nonzero subblocks, last subblock height and h skip of the last out block."""
    p = f.plan
    return ((f.last_nsbh, f.last_sbh, f.h_skip) if last else (p.out_block_h // p.out_subblock_h, p.out_subblock_h, 0))


def _in0_sender_ct_1d(f: FactoryValues, dests: int, cores: int, sems: tuple[int, int]) -> tuple[int, ...]:
    p = f.plan
    kt, ibw, obh = p.kt, p.in0_block_w, p.out_block_h
    sw, sh = tt_transpose.in0_strides(p)                           # (1, Kt), or (Mt, 1) with transpose_a
    # extract_shard_sub_blocks (a sharded in0 read in several K-blocks: shard width / in0_block_w > 1), the
    # shard's width and height
    extract = int(is_sharded(p.memory.in0) and p.in0_shard_w // ibw > 1)
    return (sw, sh, ibw * sw, obh * sh, ibw, obh, obh * ibw, *tt_transpose.in0_last_ktile(p), extract, *f.in0_shard_tiles,
            p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim, *sems, dests, cores, p.mt * kt,
            f.batch, f.batch, 0, 0, 0, 1, 0,       # B, B, reuse_in0_in_CB, batchB, sparsity page, bcast_A, from reader
            0,                                     # fuse_op (all-gather)
            accessor_config(p.memory.in0), f.page["in0"], 0, 0,  # TensorAccessorArgs(in0), TensorAccessorArgs() for sparsity
            0)                                     # num_batch_compute


def _in1_sender_writer_ct_1d(f: FactoryValues, dests: int, cores: int, sems: tuple[int, int]) -> tuple[int, ...]:
    p = f.plan
    nt, ibw, obw = p.nt, p.in0_block_w, p.out_block_w
    sw, sh = tt_transpose.in1_strides(p)                           # (1, Nt), or (Kt, 1) with transpose_b
    return (sw, sh, ibw * sh, obw * sw, obw, ibw, obw * ibw, p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim,
            *sems, dests, cores, p.kt * nt, f.batch, f.bcast_b, 0, 0,   # KtNt, batch, bcast_B, sparsity
            *f.writer_ct(),
            1 if f.bias else 0, 0, 0, 0,              # bias stride, all-gather, reduce-scatter, compact_output
            accessor_config(p.memory.in1), f.page["in1"], 0, 0, f.out_accessor, f.page["out"],
            *((INTERLEAVED_DRAM, f.page["bias"]) if f.bias else ()))


_IN0_NAMED_1D = {"cb_in0_sharded": TT_FIXED_CBS["cb_in0_sharded"], "cb_sparsity": TT_FIXED_CBS["in0_sender cb_sparsity"],
                 "num_active": 0}


def _in0_sender_1d(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    named = {"cb_in0": f.named["in0_sender"]["cb_in0"], **_IN0_NAMED_1D}
    if p.dataflow.mcast_in0:
        dests, cores = _mcast_1d_counts(f)
        rt = tuple(((x, y), ({"buffer_address": "in0"}, 0,                 # output_idx_y = 0: one M-block
                             *_rectangle((0, 0), (f.cols - 1, f.rows - 1), noc_index(k)),
                             f.last_obh,                                   # in0_last_out_block_h
                             0)) for (x, y) in cores_of(k["core_ranges"]))
        return TtKernelArgs("in0_sender", TT_KERNELS["in0_sender"],
                            _in0_sender_ct_1d(f, dests, cores, (f.sems["in0_sender"], f.sems["in0_receiver"])),
                            {**named, "cb_l1_array": TT_FIXED_CBS["in0_sender cb_sparsity"]},
                            {"SKIP_MCAST": "1"} if cores == 0 else {}, rt)
    # mcast_1d_in1: every core reads its own per_core_M rows, without multicast; last_block_h = per_core_M
    rt = tuple(((x, y), ({"buffer_address": "in0"}, p.per_core_m * tt_transpose.in0_strides(p)[1] * _core_index(f, x, y), 0, 0, 0, 0,
                         p.per_core_m, 0)) for (x, y) in cores_of(k["core_ranges"]))
    # a height-sharded in0: IN0_SHARDED, c_0 globally allocated on the core's shard (the 1D factory's
    # `if (in0_is_sharded) mm_kernel_in0_sender_defines["IN0_SHARDED"] = "1"`)
    sharded = {"IN0_SHARDED": "1"} if p.memory.in0 == Placement.L1_HEIGHT_SHARDED else {}
    return TtKernelArgs("in0_sender", TT_KERNELS["in0_sender"], _in0_sender_ct_1d(f, 0, 0, (0, 0)), named,
                        {"SKIP_MCAST": "1", **sharded}, rt)


def _in0_receiver_1d(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    return TtKernelArgs(
        k["name"], TT_KERNELS[k["name"]],
        (p.out_block_h * p.in0_block_w, p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim,
         f.sems["in0_sender"], f.sems["in0_receiver"], f.batch, 0),
        {"cb_in0": f.named[k["name"]]["cb_in0"]}, {},
        tuple(((x, y), (*_noc(0, 0),)) for (x, y) in cores_of(k["core_ranges"])))   # the sender: top-left core


def _in1_sender_writer_1d(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    pcn, obw = p.per_core_n, p.out_block_w
    bias = f.bias
    named = {**f.cb_fixed("in1_sender_writer"), "cb_sparsity": TT_FIXED_CBS["in1_sender cb_sparsity"], "num_active": 0}
    rt = []
    if p.dataflow.mcast_in0:
        # every core reads in1 column block i (output_idx_x = i) and writes it; M padding on every core
        cores = p.num_cores
        for (x, y) in cores_of(k["core_ranges"]):
            i = _core_index(f, x, y)
            last = i == cores - 1
            rt.append(((x, y), (
                {"buffer_address": "in1"}, pcn * tt_transpose.in1_strides(p)[0] * i, 0, 0, 0, 0, 0,
                {"buffer_address": "out"}, pcn * i,
                f.last_obw if last else obw, *_writer_h_args(f, True), *f.out_subblocks_w(last),
                {"buffer_address": "bias"} if bias else 0, pcn * i if bias else 0,
                # the factory: `if (!output_is_sharded)` push last_out_num_blocks_w / out_num_blocks_x
                *(() if f.out_sharded else (f.last_nbw if last else p.num_blocks_w_dim,)))))
        return TtKernelArgs("in1_sender_writer", TT_KERNELS["in1_sender_writer"],
                            _in1_sender_writer_ct_1d(f, 0, 0, (0, 0)), named,
                            {**({"FUSE_BIAS": "1"} if bias else {}), "SKIP_MCAST": "1",
                             **({"OUT_SHARDED": "1"} if f.out_sharded else {})}, tuple(rt))
    # mcast_1d_in1: core (0,0) reads the one in1 column block and multicasts it; it writes M-block 0
    dests, cores = _mcast_1d_counts(f)
    for (x, y) in cores_of(k["core_ranges"]):
        last_y = p.num_cores == 1
        rt.append(((x, y), (
            {"buffer_address": "in1"}, 0,
            *_rectangle((0, 0), (f.cols - 1, f.rows - 1), noc_index(k)), 0,
            {"buffer_address": "out"}, 0,
            f.last_obw, *_writer_h_args(f, last_y), *f.out_subblocks_w(True),   # last_x: num_blocks_x == 1
            {"buffer_address": "bias"} if bias else 0, 0,
            # the factory: `if (!output_is_sharded)` push last_out_num_blocks_w / out_num_blocks_x
            *(() if f.out_sharded else (f.last_nbw,)))))
    return TtKernelArgs("in1_sender_writer", TT_KERNELS["in1_sender_writer"],
                        _in1_sender_writer_ct_1d(f, dests, cores, (f.sems["in1_sender"], f.sems["in1_receiver"])),
                        named, {**({"FUSE_BIAS": "1"} if bias else {}), **({"SKIP_MCAST": "1"} if cores == 0 else {}),
                                **({"OUT_SHARDED": "1"} if f.out_sharded else {})},
                        tuple(rt))


def _in1_receiver_writer_1d(f: FactoryValues, k: dict) -> TtKernelArgs:
    p = f.plan
    cores = p.num_cores
    rt = []
    for (x, y) in cores_of(k["core_ranges"]):
        i = _core_index(f, x, y)                     # output_idx_y = i, output_idx_x = 0
        last_y = i == cores - 1
        rt.append(((x, y), (
            *_noc(0, 0), {"buffer_address": "out"}, i * p.per_core_m * p.nt,
            p.out_block_h // p.out_subblock_h, *_writer_h_args(f, last_y),
            *f.out_subblocks_w(True),
            *(() if f.out_sharded else (f.last_nbh if last_y else p.num_blocks_h_dim, f.last_nbw)))))
    return TtKernelArgs(
        k["name"], TT_KERNELS[k["name"]],
        (p.out_block_w * p.in0_block_w, p.num_blocks, p.num_blocks_w_dim, p.num_blocks_h_dim,
         f.sems["in1_sender"], f.sems["in1_receiver"], f.batch,
         *f.writer_ct(),
         p.out_block_w if f.bias else 0, 0, f.out_accessor, f.page["out"]),
        f.cb_fixed(k["name"]),
        {**({"FUSE_BIAS": "1"} if f.bias else {}), **({"OUT_SHARDED": "1"} if f.out_sharded else {})},
        tuple(rt))


def _in0_block_sharded(f: FactoryValues, k: dict) -> TtKernelArgs:
    """reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp with the factory's args
    (@0000d49e, "IN0 SHARDED SENDER/RECEIVER"): every core with work is in the receiver grid and has
    output work; in0_mcast_num_dests = in0_mcast_num_cores = num_blocks_x; num_x (num_y under
    transpose_mcast) = the cores along the shard grid's width, here the grid with work. Runtime args:
    sender_id (core.x, core.y under transpose_mcast), the line's multicast rectangle (its far ends
    swapped on NOC 1), then the NoC x list then the NoC y list of the line's cores. Named args: cb_in0 and
    cb_in0_sharded, the two the kernel reads; not @0000d49e's cb_l1_array = c_6, which no kernel reads and
    whose 64-byte CB ttnn.matmul 0.81.1's 2D builder no longer allocates (provenance R3)."""
    p = f.plan
    n, tile = p.n_blocks, p.cb(0).page_bytes
    num_x, num_y = (1, n) if p.transpose_mcast else (n, 1)
    rt = []
    for (x, y) in cores_of(k["core_ranges"]):
        lo, hi = 0, n - 1
        if noc_index(k) == 1:
            lo, hi = hi, lo
        if p.transpose_mcast:
            args = (y, {"noc_x": x}, {"noc_y": lo}, {"noc_x": x}, {"noc_y": hi}, {"noc_x": x},
                    *({"noc_y": j} for j in range(n)))
        else:
            args = (x, {"noc_x": lo}, {"noc_y": y}, {"noc_x": hi}, {"noc_y": y}, *({"noc_x": j} for j in range(n)),
                    {"noc_y": y})
        rt.append(((x, y), args))
    return TtKernelArgs(
        k["name"], TT_BLOCK_SHARDED_IN0,
        (1, 1, p.in0_block_tiles, p.in0_block_tiles * tile, 0, 0, p.num_blocks, p.num_blocks_w_dim,
         p.num_blocks_h_dim, f.sems["in0_sender"], f.sems["in0_receiver"], n, n, num_x, num_y,
         int(p.transpose_mcast), p.in0_shard_w, p.per_core_m, p.in0_block_w, p.out_block_h, f.batch,
         0,                                     # fuse_op
         INTERLEAVED_L1, f.page["in0"], 0, 0),  # TensorAccessorArgs(in0) (see INTERLEAVED_L1), placeholder
        {"cb_in0": 0, "cb_in0_sharded": 2}, {}, tuple(rt))


# kgen kernel -> the factory's args for TT-Metal's kernel in its place, for the 2D and the 1D factory.
ARGS_2D = {"in0_sender": _in0_sender, "in0_receiver": _in0_receiver,
           "in1_sender_writer": _in1_sender_writer, "in1_receiver_writer": _in1_receiver_writer}
ARGS_1D = {"in0_sender": _in0_sender_1d, "in0_receiver": _in0_receiver_1d, "in0_receiver_rows": _in0_receiver_1d,
           "in1_sender_writer": _in1_sender_writer_1d, "in1_receiver_writer": _in1_receiver_writer_1d,
           "in1_receiver_writer_rows": _in1_receiver_writer_1d}


def unsupported_reason(plan, manifest: Mapping[str, Any]) -> str | None:
    """Why TT-Metal's multicast readers/writers cannot run this plan, or None when they can."""
    untiled = untiled_tensor(manifest)
    if untiled:
        return untiled
    names = {k["name"] for k in manifest["kernels"]}
    in0_sender = "in0_sharded_0" if plan.memory.in0 in (Placement.L1_BLOCK_SHARDED, Placement.L1_WIDTH_SHARDED) \
        else "in0_sender"
    senders = {"in1_sender_writer", in0_sender}
    missing = sorted(senders - names)
    if missing:
        return f"the build folder lacks kgen kernels {', '.join(missing)}"
    return None


def program(plan, manifest: Mapping[str, Any], args_of: Mapping[str, Callable[[FactoryValues, dict], TtKernelArgs]],
            readers_writers: str) -> TtProgram:
    """The factory's kernel for each of kgen's data-movement kernels present in the manifest: `args_of`
    (ARGS_2D or ARGS_1D) gives each one's args; the block-sharded in0 reader stands for every in0_sharded_<i>."""
    reason = unsupported_reason(plan, manifest)
    if reason:
        raise DataflowSwapError(reason)
    values = FactoryValues.of(plan, manifest)
    kernels = {k["name"]: k for k in manifest["kernels"]}
    args = {name: of(values, kernels[name]) for name, of in args_of.items() if name in kernels}
    sharded = in0_width_sharded_1d if plan.is_1d else _in0_block_sharded
    args.update({name: sharded(values, k) for name, k in kernels.items() if name.startswith("in0_sharded_")})
    return TtProgram(readers_writers, args)


def block_sharded_differences(plan) -> tuple[ExpectedDifference, ...]:
    """Where TT-Metal's block-sharded in0 reader (reader_bmm_tile_layout_in0_sender_receiver_padding_block_
    sharded.cpp) and kgen's in0_sharded_<i> kernels count differently by design, with the counts the
    kernels' structure gives: S K-blocks sent in all (one per K-block per line of cores per out block).
    With several cores on the line both hand a block over alike (one multicast to the whole line, from
    the shard with loopback or from a copy in c_0, the flag with loopback, the sender waiting for its own
    VALID); with one core kgen's kernel keeps only the copy into c_0."""
    if plan.memory.in0 != Placement.L1_BLOCK_SHARDED:
        return ()
    n, cores = plan.n_blocks, plan.num_cores
    sends = plan.m_blocks * plan.batch_ct * plan.num_blocks_h_dim * plan.num_blocks_w_dim * plan.num_blocks
    out = [("cb_reserve_back", cores, "TT-Metal's block-sharded reader reserves and pushes its shard CB c_2 once, "
                                      "to take the shard's address; kgen reads c_2's read pointer"),
           ("cb_push_back", cores, "TT-Metal's block-sharded reader reserves and pushes its shard CB c_2 once, "
                                   "to take the shard's address; kgen reads c_2's read pointer")]
    if n > 1:
        if plan.arch.behaviour.flush_mcast_before_flag:
            out.append(("noc_async_writes_flushed", -sends, "kgen also flushes the data multicast before the flag "
                                                            "multicast on Blackhole, as its other senders do"))
        return tuple(out)
    out += [("noc_semaphore_wait", 2 * sends,
             "with one core on the line TT-Metal's reader still waits for 0 receivers' increments and for its own "
             "VALID flag per K-block; kgen's kernel has no handshake"),
            ("noc_semaphore_set", 3 * sends + cores,
             "with one core on the line TT-Metal's reader still sets its flags (INVALID, 0, VALID) per K-block and "
             "VALID once at the start; kgen's kernel has no handshake")]
    if not (plan.per_core_m > 1 and plan.in0_shard_w // plan.in0_block_w > 1):
        # TT's reader copies a block out of the shard (extract_shard_sub_blocks) only when the shard is
        # more than one tile high and holds several K-blocks; otherwise, alone on its line, it copies the
        # block into c_0 with one NoC write to itself
        why = ("with one core on the line TT-Metal's reader copies a K-block that is contiguous in the shard into "
               "c_0 with one NoC write to itself; kgen copies it with one local read per tile row and a barrier")
        out += [("noc_async_read", -sends * plan.out_block_h, why), ("noc_async_read_barrier", -sends, why),
                ("noc_async_write", sends, why)]
    return tuple(out)


def _whole_block_extra(tiles: int, per_core: int, block: int, blocks: int) -> int:
    """Tile rows (columns) TT-Metal's _padding reader reads past the tensor beyond kgen's on the last core
    along one axis, summed over that core's out blocks along it: TT reads every block but the last whole
    (`bh < num_blocks_h_dim - 1 || h < last_block_h`, in1 `bw < num_blocks_w_dim - 1 || w < last_block_w`)
    and the last one's last_block_h / last_block_w rows, kgen only those inside the tensor. Zero unless
    the core has whole out blocks past the tensor (Dataflow.skips_padded_out_blocks)."""
    last = tiles % per_core or per_core
    last_block = last % block or block              # the factory's last_out_block_h / _w
    tt = (blocks - 1) * block + last_block
    return tt - last


def padded_block_reads(plan) -> tuple[ExpectedDifference, ...]:
    """The reads TT-Metal's readers make of whole out blocks past the tensor on the last core along M
    (its one in0 sender) and N (its one in1 sender/writer: in1 per K-block, the bias per out block where
    the bias is read per block), which kgen's readers skip, tile by tile, as they skip a padded block's."""
    p = plan
    # (mcast_1d_in0: one M-block, its padding inside the block every core shares, never whole blocks;
    # mcast_1d_in1: every in0 reader gets last_block_h = per_core_M, so the last core reads all its rows)
    if p.is_1d:
        rows = 0 if p.dataflow.mcast_in0 else p.per_core_m - p.last_per_core_m
    else:
        rows = _whole_block_extra(p.mt, p.per_core_m, p.out_block_h, p.num_blocks_h_dim)
    cols = _whole_block_extra(p.nt, p.per_core_n, p.out_block_w, p.num_blocks_w_dim)
    in0 = rows * p.batch_ct * p.num_blocks_w_dim * p.num_blocks * p.in0_block_w
    in1 = cols * p.batch_ct * p.num_blocks_h_dim * p.num_blocks * p.in0_block_w
    bias = cols * p.batch_ct * p.num_blocks_h_dim if p.fuse_bias and p.num_blocks_w_dim > 1 else 0
    extra = in0 + in1 + bias
    if not extra:
        return ()
    return (("noc_async_read", extra,
             f"the last core's whole out blocks past the tensor: TT-Metal's readers read them whole ({in0} in0, "
             f"{in1} in1, {bias} bias tiles more; only their writers stop at last_num_blocks_h/w_dim), kgen's skip "
             f"every tile past the tensor"),)


def merged_differences(*groups: tuple[ExpectedDifference, ...]) -> tuple[ExpectedDifference, ...]:
    """Expected differences of several causes, one entry per op (the counts added, the reasons joined)."""
    out: dict[str, tuple[int, str]] = {}
    for name, diff, why in (d for g in groups for d in g):
        if name in out:
            out[name] = (out[name][0] + diff, f"{out[name][1]}; and {why}")
        else:
            out[name] = (diff, why)
    return tuple((name, diff, why) for name, (diff, why) in out.items())
