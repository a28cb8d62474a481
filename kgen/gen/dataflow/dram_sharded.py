"""The DRAM-sharded dataflow, TT-Metal's MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig factory
(matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp, read at tenstorrent/tt-metal@01502698 and
in the file's later Metal 2.0 versions, whose kernel args (workers_per_bank, shards_per_block) the 0.81.1
wheel's readers take; kgen targets tenstorrent/tt-metal@001cea9a, whose index holds no copy of this file;
the lines on padding-only banks and div_up(N, num_workers) are the same in each; its semaphores, buffer
depths and L1-accumulation rule checked in the 0.81.1 wheel's create_program_dram_sharded_spec,
docs/reference/provenance.md F14, R19, R7):
the decode matmul. in1 is width-sharded over the DRAM banks, one worker per bank reading its own
bank's shard; in0 is width-sharded in L1 (each storage core holds a K slice of all of M) and gathered:
K-block k is multicast by the core holding it to every worker; the output is width-sharded in L1, one
per_core_N-wide shard per worker.

kgen's own program keeps TT's roles and its rules, on kgen's logical cores: worker i (row-major over
the rectangle the workers fill) reads bank i's shard, and the first `in0_shards` workers hold in0's
shards (TT lets in0's shard grid be any cores; kgen puts them on the workers). The bank each worker
pairs with on the chip, TT's optimal DRAM-bank-to-worker assignment, is the arch's (configs/arch,
[dram_banks]) and is what the plan reports and the model prices: every in1 read is bank-local."""

from __future__ import annotations

from random import Random
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.arch import load_arch
from kgen.core.types import Placement
from kgen.gen.dataflow.base import Dataflow, Layout, accepts
from kgen.gen.planned import FuzzLayout, FuzzLimits
from kgen.gen.dataflow.kernels import A, dm_kernel, out_block_loops, receiver_block, tensors_of
from kgen.gen.ir import INVALID, VALID, CoreRange, Kernel, Loop, Node, RuntimeArg, Semaphore, op
from kgen.gen.rules import (CB_IN0, CB_IN0_SHARD, CB_IN1, CB_OUT, CB_OUT_SHARD, PlanError, ceil_div, divisors,
                            matmul_subblock_params, nearest_offer, Offer, suggestion)

if TYPE_CHECKING:
    from kgen.gen.dataflow.tt_program import ExpectedDifference, TtProgram
    from kgen.gen.planned import Plan
    from kgen.gen.matmul_spec import MatmulSpec, MemorySpec

RULE = "TT-Metal's DRAM-sharded factory (matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp)"
# The factory's semaphores: in0 sender, in0 receiver, in0 sender-valid (ids 0, 1, 2, in that order).
SEMAPHORE_IDS: Mapping[str, int] = MappingProxyType({"in0_sender": 0, "in0_receiver": 1, "in0_sender_valid": 2})
# in1's CB holds three K-blocks when there are several ("triple buffer"), in0's two (the factory:
# `in1_CB_tiles = in1_block_tiles * 3`, `in0_CB_tiles = in0_block_tiles * 2` when B * num_blocks > 1).
IN0_DEPTH, IN1_DEPTH = 2, 3
# Where tune tries the factory on a spec of DRAM tensors: a decode-sized M, "where activations are
# small and DRAM-bandwidth to read weights is the limiting factor" (tech_reports/LLMs/llms.md,
# 4.3.2.2 DRAM-Sharded Matmul); kgen's bound of "small": a few tiles of M.
DECODE_MAX_MT = 4
# kgen fuzz's cases of this factory: a decode-sized M, and the shares drawn with a padded last shard
# (Nt not a multiple of per_core_N) and with a shard width the factory's subblock pads
FUZZ_MAX_MT = 4
FUZZ_PADDED_SHARE = 0.5
FUZZ_LANES_SHARE = 0.4


class DramSharded(Dataflow):
    name = "dram_sharded"
    factory = "matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp"
    label = "DRAM-sharded"
    placements: Mapping[str, frozenset[Placement]] = MappingProxyType({
        "in0": frozenset({Placement.L1_WIDTH_SHARDED}),
        "in1": frozenset({Placement.DRAM_WIDTH_SHARDED}),
        "out": frozenset({Placement.L1_WIDTH_SHARDED})})
    transpose_mcast = False
    # bound_matmul (matmul.cpp, 0.81.1) runs ttnn::transpose(x, -1, -2) as an op of its own before this factory
    transpose_refusal = ("ttnn.matmul 0.81.1 runs a separate ttnn::transpose op on the transposed input before the "
                         "DRAM-sharded factory (bound_matmul); kgen builds only the matmul")
    shared_axis: int | None = 0          # every worker holds all of M
    # a worker that does not hold the K-block waits for the one that does
    paced_by: Mapping[str, str] = MappingProxyType({"in0_gather_receiver": "in0_gather"})
    is_1d = False                        # no single multicast sender: each shard core sends its K-blocks
    places_own_cores = True              # one worker per DRAM bank (tune_memory, tune_per_core, tune_grid)
    subblock_bound_half_sync = False     # ttnn.matmul does not check its subblock; the factory picks it
    pads_last_n_shard = True             # in1's last DRAM shard and the output's last shard may be partial
    semaphore_ids = SEMAPHORE_IDS
    # the compute packs into an out CB of per_core_M x per_core_N_compute tiles and the writer copies the
    # real columns into the output tensor's shard (the factory's out DFB and its out_reshard / out_shard)
    separate_out_shard = True
    # the factory's compute define: TT's kernel then reads last_subblock_w_valid and is_worker_core
    compute_defines: tuple[tuple[str, str], ...] = (("MATMUL_DRAM_SHARDED", "1"),)

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        if spec.fuse_bias:
            raise PlanError("kgen: dram_sharded without a fused bias",
                            "fuse.bias = true with dataflow = dram_sharded: TT-Metal's factory reads the bias from "
                            "the DRAM banks beside in1 (FUSE_BIAS); kgen's DRAM-sharded program has no bias reader",
                            spec.span("fuse.bias"),
                            Offer((suggestion("fuse.bias = false", ("fuse.bias", False)),), "change of fuse.bias"))
        banks = len(load_arch(spec.arch).dram_bank_workers)
        per_core_m, per_core_n, workers = plan_workers(spec, mt, nt, banks, choices)
        widths = (w for w in shard_widths(nt, banks) if _rectangle(shard_workers(nt, w, banks), grid_req))
        grid = worker_rectangle(spec, workers, grid_req,
                                nearest_offer(widths, per_core_n, "in1 shard width whose workers fill a rectangle",
                                              lambda v: ("block.per_core", (mt, v)), prefix=f"per_core = {mt} x "))
        kt = ceil_div(spec.k, 32)
        shards = in0_shard_count(spec, kt, per_core_m, workers, choices)
        choices.append(f"dram_sharded: {workers} workers, worker i reading DRAM bank i's {per_core_n}-tile-wide "
                       f"shard of in1, on a {grid[0]} x {grid[1]} rectangle of cores; in0 in {shards} shards of "
                       f"{kt // shards} K tiles on the first {shards} workers")
        pairs = ", ".join(f"{i}->({x},{y})" for i, (x, y) in enumerate(bank_assignment(spec.arch)[:workers]))
        choices.append(f"dram_sharded: TT's bank -> worker (NoC 0 x,y, get_optimal_dram_bank_to_logical_worker_"
                       f"assignment, unharvested {spec.arch}): {pairs}")
        return Layout(per_core_m, per_core_n, grid, workers, in0_shards=shards)

    def core_m_terms(self, p: Plan) -> dict[str, int]:
        return {}                         # one M-block: every worker computes all of M

    def core_n_terms(self, p: Plan) -> dict[str, int]:
        return {"core_x": 1, "core_y": p.grid[0]}   # worker i (row-major) holds N-block i

    def in0_reader_cores(self, p: Plan) -> int:
        return 0                          # in0 lives in L1: nobody reads it from DRAM

    def padding_notes(self, p: Plan) -> tuple[str, ...]:
        notes = []
        if p.padded_n:
            notes.append(f"last DRAM shard: {p.last_per_core_n} of per_core_N = {p.per_core_n} columns of tiles "
                         f"(Nt = {p.nt} = {p.num_cores - 1} x {p.per_core_n} + {p.last_per_core_n}); ttnn pads "
                         f"in1's shard in bank {p.num_cores - 1} and the output's last L1 shard to {p.per_core_n} "
                         f"tiles, and worker {p.num_cores - 1} reads, computes and writes all {p.per_core_n}: the "
                         f"padded columns lie outside the tensor")
        banks = len(p.arch.dram_bank_workers)
        if p.num_cores < banks:
            notes.append(f"DRAM banks {p.num_cores}..{banks - 1} hold padding only (in1's {p.per_core_n}-tile "
                         f"shards x {banks} banks > Nt = {p.nt}): the factory gives them no worker")
        return tuple(notes)

    def factory_blocking(self, spec: MatmulSpec, per_core_m: int, per_core_n: int, fp32_dest_acc: bool,
                         choices: list[str]) -> tuple[tuple[int, int], tuple[int, int], int]:
        """(out_block, out_subblock, per_core_N_compute): the factory's own, which its program config has no
        field for; a spec's explicit out_block / out_subblock must be them (see factory_subblock)."""
        sbh, sbw, n_compute = factory_subblock(per_core_m, per_core_n, fp32_dest_acc)
        block = spec.block
        rule = (f"{RULE} chooses the subblock itself: get_matmul_subblock_params(per_core_M, per_core_N, false, "
                f"false, fp32_dest_acc_en), then on a one-tile-high subblock widens out_subblock_w up to "
                f"{4 if fp32_dest_acc else 8} while ceil(per_core_N / w) falls, padding per_core_N_compute")
        if block.out_subblock not in (None, (sbh, sbw)):
            raise PlanError(rule, f"out_subblock = {block.out_subblock[0]} x {block.out_subblock[1]} with dataflow = "
                            f"dram_sharded: the factory runs {sbh} x {sbw} for per_core = {per_core_m} x {per_core_n}"
                            + (f" (per_core_N_compute = {n_compute})" if n_compute != per_core_n else ""),
                            spec.span("block.out_subblock"),
                            Offer((suggestion(f"out_subblock = {sbh} x {sbw}", ("block.out_subblock", (sbh, sbw))),
                                   suggestion("leave it out", ("block.out_subblock", None))),
                                  "out_subblock", sep=", or "))
        if sbh > 1 and sbw != n_compute:
            # The compute kernel packs c_4 subblock by subblock; the factory's writer copies it into the
            # output shard one tile row at a time (out_tensor_stride_w_bytes), which is the same order only
            # for one-tile-high subblocks or one subblock per row.
            raise PlanError(f"{RULE}'s output copy: out_subblock_h == 1 || out_subblock_w == per_core_N_compute",
                            f"per_core = {per_core_m} x {per_core_n}: the factory takes subblock {sbh} x {sbw} "
                            f"(get_matmul_subblock_params), and its writer "
                            f"(reader_bmm_tile_layout_in1_sender_dram_sharded.cpp) copies the output block row by "
                            f"row while the compute kernel packs it subblock by subblock, so the output shard "
                            f"would be out of order", spec.span("block.per_core"),
                            "M = 32, a one-tile-row activation (per_core_M = 1), the decode shape")
        if block.out_block not in (None, (per_core_m, per_core_n), (per_core_m, n_compute)):
            raise PlanError(f"{RULE}: one output block per worker, out_block = per_core",
                            f"out_block = {block.out_block[0]} x {block.out_block[1]} with dataflow = dram_sharded and "
                            f"per_core = {per_core_m} x {per_core_n}", spec.span("block.out_block"),
                            Offer((suggestion(f"out_block = {per_core_m} x {per_core_n}",
                                              ("block.out_block", (per_core_m, per_core_n))),
                                   suggestion("leave it out", ("block.out_block", None))),
                                  "out_block", sep=", or "))
        choices.append(f"out_subblock -> {sbh} x {sbw}, out_block {per_core_m} x {n_compute}: {RULE}'s own "
                       f"(get_matmul_subblock_params({per_core_m}, {per_core_n}) widened on a one-tile-high "
                       f"subblock); per_core_N_compute = {n_compute}"
                       + (f", the last subblock's {sbw - (n_compute - per_core_n)} of {sbw} lanes real"
                          if n_compute != per_core_n else ""))
        return (per_core_m, n_compute), (sbh, sbw), n_compute

    def subblock(self, per_core_m: int, per_core_n: int, fp32_dest_acc: bool) -> tuple[int, int, int]:
        """(out_subblock_h, out_subblock_w, per_core_N_compute) the factory takes (factory_subblock)."""
        return factory_subblock(per_core_m, per_core_n, fp32_dest_acc)

    def shard_widths(self, nt: int, banks: int) -> list[int]:
        """in1 shard widths (per_core_N) the factory reads right for Nt tiles over `banks` DRAM banks."""
        return shard_widths(nt, banks)

    def shard_workers(self, nt: int, shard_w: int, banks: int) -> int:
        """The workers the factory keeps for in1 in `shard_w`-tile shards (padding-only banks dropped)."""
        return shard_workers(nt, shard_w, banks)

    def cb_depths(self, num_blocks: int, default: int) -> tuple[int, int]:
        """K-blocks c_0 and c_1 hold (the factory's double-buffered in0, triple-buffered in1)."""
        return (IN0_DEPTH, IN1_DEPTH) if num_blocks > 1 else (1, 1)

    def tune_memory(self, spec: MatmulSpec, mt: int) -> MemorySpec | None:
        """The placements tune gives this factory's candidates: the spec's own when it takes them, TT's
        decode placements for a decode-sized M of DRAM tensors, else None (not tried)."""
        from dataclasses import replace
        if accepts(self, spec.memory):
            return spec.memory
        if mt > DECODE_MAX_MT or spec.memory.sharded or spec.fuse_bias or spec.untilize_out:
            return None
        return replace(spec.memory, in0=Placement.L1_WIDTH_SHARDED, in1=Placement.DRAM_WIDTH_SHARDED,
                       out=Placement.L1_WIDTH_SHARDED)

    def tune_per_core(self, spec: MatmulSpec, mt: int, nt: int) -> tuple[int, int]:
        """The one per_core the factory takes: all of M, N over every DRAM bank."""
        return mt, ceil_div(nt, len(load_arch(spec.arch).dram_bank_workers))

    def tune_grid(self, spec: MatmulSpec) -> tuple[int, int]:
        """The grid a candidate names: the factory places its own workers (one per DRAM bank) within it."""
        return load_arch(spec.arch).worker_grid

    def fuzz_layout(self, rng: Random, arch: str, fp32_dest_acc: bool, limits: FuzzLimits) -> FuzzLayout:
        """A decode-sized M (all of it on every worker, per_core_M = Mt), N in in1 shards of per_core_N
        tiles over the DRAM banks, the trailing banks holding padding only dropped, the shard width one the
        factory reads right (div_up(Nt, workers)); some with a padded last shard (Nt not a multiple of the
        width), which ttnn pads and the last worker computes whole, some with a width the factory's
        subblock pads. in0's K over the most workers dividing Kt, in0 and the output width-sharded in L1.
        Its rules, restated: whole tiles, per_core_M > 1 takes one K-block per in0 shard; the workers fill
        a rectangle within the limits' grid, written as the grid. The subblock is the factory's own
        (get_matmul_subblock_params, widened on a one-tile-high subblock, which may pad per_core_N_compute);
        a per_core_M whose subblock would be taller than one tile and narrower than per_core_N is not
        drawn (the sharded-output rule)."""
        banks, max_grid = len(load_arch(arch).dram_bank_workers), limits.max_grid
        layouts = [(nt, w, self.shard_workers(nt, w, banks)) for nt in range(1, limits.max_nt + 1)
                   for w in self.shard_widths(nt, banks)]
        layouts = [(nt, w, k) for nt, w, k in layouts
                   if any(k % cols == 0 and k // cols <= max_grid for cols in range(1, max_grid + 1))]
        padded = [x for x in layouts if x[0] % x[1]]
        # shard widths whose one-tile-high subblock the factory widens past them (padded lanes)
        lanes = [x for x in layouts if self.subblock(1, x[1], fp32_dest_acc)[2] != x[1]]
        if lanes and rng.random() < FUZZ_LANES_SHARE:
            padded, layouts = [x for x in lanes if x[0] % x[1]], lanes
        nt, width, workers = rng.choice(padded if padded and rng.random() < FUZZ_PADDED_SHARE else layouts)
        cols = max(d for d in range(1, max_grid + 1) if workers % d == 0 and workers // d <= max_grid)
        # kgen's writer copies c_4 row by row, so a taller subblock must span per_core_N (TT's sharded-output rule)
        mts = [m for m in range(1, FUZZ_MAX_MT + 1)
               if self.subblock(m, width, fp32_dest_acc)[0] == 1 or self.subblock(m, width, fp32_dest_acc)[1] == width]
        mt = rng.choice(mts)
        kt = rng.randint(1, min(limits.max_kt, limits.max_tile_macs // (mt * nt)))
        if mt > 1:           # one K-block per shard: in0_block_w with Kt / in0_block_w <= workers
            w = rng.choice([d for d in divisors(kt) if kt // d <= workers])
        else:
            shards = max(d for d in divisors(kt) if d <= workers)
            w = rng.choice(divisors(kt // shards))
        sbh, sbw, n_compute = self.subblock(mt, width, fp32_dest_acc)
        return FuzzLayout(mt, nt, kt, (cols, workers // cols), (mt, width), (mt, n_compute), w, (sbh, sbw),
                          (Placement.L1_WIDTH_SHARDED, Placement.L1_WIDTH_SHARDED))

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        sems = tuple(Semaphore(name, i, VALID if name == "in0_sender_valid" else INVALID, all_cores)
                     for name, i in SEMAPHORE_IDS.items())
        return tuple(_in0_gather_kernels(p)) + (_in1_reader_writer(p, all_cores),), sems

    def tt_unsupported(self, p: Plan, manifest: Mapping[str, Any]) -> str | None:
        from kgen.gen.dataflow import tt_dram_sharded
        return tt_dram_sharded.unsupported_reason(p, manifest)

    def tt_program(self, p: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int]) -> TtProgram:
        from kgen.gen.dataflow import tt_dram_sharded
        return tt_dram_sharded.program(p, manifest, noc, f"{self.label} factory's Metal 2.0")

    def tt_expected_differences(self, p: Plan) -> tuple[ExpectedDifference, ...]:
        from kgen.gen.dataflow import tt_dram_sharded
        return tt_dram_sharded.expected_differences(p)


DRAM_SHARDED = DramSharded()


def bank_assignment(arch_name: str) -> tuple[tuple[int, int], ...]:
    """TT's optimal DRAM-bank-to-worker assignment: the NoC-0 worker that reads bank i, in bank order."""
    return load_arch(arch_name).dram_bank_workers


def factory_subblock(per_core_m: int, per_core_n: int, fp32_dest_acc: bool) -> tuple[int, int, int]:
    """(out_subblock_h, out_subblock_w, per_core_N_compute) as the factory takes them: per_core_N_compute
    starts as per_core_N_in1_sender = div_up(N, workers); the subblock is
    get_matmul_subblock_params(per_core_M, per_core_N_compute, false, false, fp32_dest_acc_en); when it is one
    tile high and narrower than max_subblock_w (4 with fp32 dest accumulation, else 8), w grows while
    ceil(per_core_N_compute / w) gets strictly smaller, and per_core_N_compute = w x that count (29 tiles:
    1 x 8 over 32)."""
    sbh, sbw = matmul_subblock_params(per_core_m, per_core_n, fp32_dest_acc)
    max_w = 4 if fp32_dest_acc else 8
    if sbh != 1 or sbw >= max_w:
        return sbh, sbw, per_core_n
    count, best = per_core_n // sbw, sbw
    for w in range(sbw + 1, max_w + 1):
        if ceil_div(per_core_n, w) < count:
            count, best = ceil_div(per_core_n, w), w
    return 1, best, best * count


def shard_workers(nt: int, shard_w: int, banks: int) -> int:
    """The factory's workers for in1 in `shard_w`-tile-wide shards over the DRAM banks: every bank, less
    the trailing banks that hold padding only ("Remove cores assigned to padding-only DRAM banks":
    `in1_tensor_padded_width_tiles = in1_shard_width_tiles * num_dram_banks`; when it exceeds N,
    `only_padding_banks = padding_width_tiles / in1_shard_width_tiles` banks are dropped)."""
    return banks - max(0, shard_w * banks - nt) // shard_w


def shard_widths(nt: int, banks: int) -> list[int]:
    """Every in1 shard width the factory reads right: ceil(Nt / workers) equal to the shard width."""
    return [w for w in range(ceil_div(nt, banks), nt + 1) if ceil_div(nt, shard_workers(nt, w, banks)) == w]


def plan_workers(spec: MatmulSpec, mt: int, nt: int, banks: int, choices: list[str]) -> tuple[int, int, int]:
    """per_core_M, per_core_N and the count of workers under the factory's rules. per_core_N is in1's
    shard width in tiles, which kgen also gives the output's shards (TT's per_core_N_storage):

    - the factory starts from every DRAM bank (`get_dram_bank_reader_assignments(device, ...)`, one
      reader per bank) and drops the trailing banks that hold padding only (shard_workers);
    - each worker reads `per_core_N_in1_sender = div_up(N, num_workers)` tiles of each K row of its
      bank's shard as one run, so that must be the shard's width (TT checks it only for several readers
      per bank: "requires weight shard width ... to equal ... workers times ... reader tiles"; with one it
      would read the wrong tiles);
    - the last worker's shard may hold fewer than per_core_N real columns: ttnn pads in1's last DRAM
      shard and the output's last L1 shard to the shard width, the worker reads, computes and writes its
      whole shard, and the padded columns lie outside the tensor;
    - every worker computes all of M: in0's shards are per_core_M x (its K slice), M rows each."""
    pc = spec.block.per_core
    auto_n = ceil_div(nt, banks)
    if pc and pc[0] != mt:
        raise PlanError(f"dram_sharded: per_core_M == Mt ({RULE}: every worker computes all of M from the "
                        f"gathered in0)", f"per_core_M = {pc[0]} with Mt = {mt}", spec.span("block.per_core"),
                        Offer((suggestion(f"per_core = {mt} x {pc[1]}", ("block.per_core", (mt, pc[1]))),
                               suggestion(f"per_core = {mt} x {auto_n}", ("block.per_core", (mt, auto_n))),
                               suggestion("leave per_core out", ("block.per_core", None))),
                              f"per_core with per_core_M = {mt}", count=1))
    per_core_n = pc[1] if pc else auto_n
    legal = shard_widths(nt, banks)
    if per_core_n not in legal:
        shards = ceil_div(nt, per_core_n)
        why = (f"{shards} shards of {per_core_n} tiles need {shards} DRAM banks, the chip has {banks}"
               if per_core_n < auto_n else
               f"{shard_workers(nt, per_core_n, banks)} workers each read div_up(Nt, workers) = "
               f"{ceil_div(nt, shard_workers(nt, per_core_n, banks))} tiles of a {per_core_n}-tile shard row")
        raise PlanError(f"dram_sharded: per_core_N (in1's shard width) == div_up(Nt, workers), workers = DRAM "
                        f"banks - padding-only banks ({RULE}: `per_core_N_in1_sender = div_up(N, num_workers)`, "
                        f"\"Remove cores assigned to padding-only DRAM banks\")",
                        f"per_core_N = {per_core_n} with Nt = {nt} over {banks} banks: {why}",
                        spec.span("block.per_core"),
                        nearest_offer(legal, per_core_n, "in1 shard width", lambda v: ("block.per_core", (mt, v)),
                                      prefix=f"per_core = {mt} x "))
    workers = shard_workers(nt, per_core_n, banks)
    if pc is None:
        choices.append(f"per_core auto -> {mt} x {per_core_n}: all of Mt = {mt} on each worker, "
                       f"Nt = {nt} over {workers} of {banks} DRAM banks")
    return mt, per_core_n, workers


def _rectangle(workers: int, grid_req: tuple[int, int]) -> int:
    """The widest rectangle's columns for `workers` cores in the grid, 0 when none holds exactly them."""
    return max((d for d in divisors(workers) if d <= grid_req[0] and workers // d <= grid_req[1]), default=0)


def worker_rectangle(spec: MatmulSpec, workers: int, grid_req: tuple[int, int], widths: Offer | None = None
                     ) -> tuple[int, int]:
    """kgen's logical cores for the workers: the widest rectangle of exactly `workers` cores in the grid.
    `widths`: the shard widths (per_core) a refusal offers."""
    cols = _rectangle(workers, grid_req)
    if not cols:
        raise PlanError("kgen: dram_sharded workers fill a rectangle of the grid",
                        f"{workers} workers fit no rectangle of the {grid_req[0]} x {grid_req[1]} grid",
                        spec.span("shape"), widths, also="or an N that needs fewer DRAM banks",
                        otherwise="an N that needs fewer DRAM banks")
    return cols, workers // cols


def in0_shard_count(spec: MatmulSpec, kt: int, per_core_m: int, workers: int, choices: list[str]) -> int:
    """Cores holding in0's width shards: the most that divide Kt, at most one per worker, each shard a
    whole number of K-blocks (the factory's `num_blocks_per_shard = num_blocks / storage cores`). TT's
    rule on a taller M: `per_core_M > 1` needs num_blocks_per_shard == 1 (one K-block per shard)."""
    w = spec.block.in0_block_w
    one_block = [d for d in divisors(kt) if kt // d <= workers]      # in0_block_w values of one block per shard
    if per_core_m > 1 and (w is None or kt % w or kt // w > workers):
        raise PlanError(f"dram_sharded: per_core_M > 1 needs one K-block per in0 shard ({RULE}: \"currently not "
                        f"support per_core_M larger than 1, while split one shard into multiple blocks\")",
                        f"per_core_M = {per_core_m} with in0_block_w = {w or 'auto'}: Kt = {kt} in shards of one "
                        f"K-block each needs in0_block_w dividing Kt with Kt / in0_block_w <= {workers} workers",
                        spec.span("block.in0_block_w"),
                        nearest_offer(one_block, w or one_block[0], "in0_block_w of one K-block per in0 shard",
                                      lambda v: ("block.in0_block_w", v), prefix="in0_block_w = "))
    if w is not None and per_core_m > 1:
        return kt // w
    fits = [d for d in divisors(kt) if d <= workers and (w is None or (kt // d) % w == 0)]
    if not fits:
        raise PlanError("Kt % in0_block_w == 0", f"in0_block_w = {w} does not divide Kt = {kt}",
                        spec.span("block.in0_block_w"),
                        nearest_offer(divisors(kt), w or 1, "in0_block_w dividing Kt", lambda v: ("block.in0_block_w", v)))
    return max(fits)


def _in0_gather_kernels(p: Plan) -> list[Kernel]:
    """in0's gather (the factory's in0 sender kernel, worker_core_type 2 on a storage core that computes,
    3 on a worker that only receives): K-block k comes from shard core k / blocks-per-shard, which copies
    it out of its shard (c_2, globally allocated on in0) into c_0 and multicasts it to every other worker
    once each has reserved the space. TT multicasts with loopback to the whole rectangle; kgen's sender
    copies its own block locally and multicasts to the rest in at most four rectangles."""
    nx, ny = p.grid
    shards, sw, ibw = p.in0_shards, p.in0_shard_w, p.in0_block_w
    per_shard, tiles, page = sw // ibw, p.in0_block_tiles, p.cb(CB_IN0).page_bytes
    others = p.num_cores - 1
    sems = (("in0_sender", SEMAPHORE_IDS["in0_sender"]), ("in0_receiver", SEMAPHORE_IDS["in0_receiver"]))
    senders = {j: (RuntimeArg(f"sender{j}_noc_x", "noc_x", A(j % nx)), RuntimeArg(f"sender{j}_noc_y", "noc_y", A(j // nx)))
               for j in range(shards)}

    def receive(j: int) -> Loop:
        return Loop("kb", 0, per_shard, tuple(receiver_block(CB_IN0, tiles, "in0_sender", "in0_receiver", senders[j])),
                    f"K-blocks {j * per_shard}..{(j + 1) * per_shard - 1}: from shard core {j}")

    def send(i: int) -> Loop:
        parts = _around(i % nx, i // nx, nx, ny)
        ops: list[Node] = [op("cb_reserve_back", CB_IN0, tiles),
                           op("copy_shard", CB_IN0, CB_IN0_SHARD, A(0, kb=ibw), p.per_core_m, ibw, sw, page,
                              note="this core's K slice: the block comes out of its own shard"),
                           op("noc_read_barrier")]
        if others:
            ops += [op("sem_wait", "in0_sender", others, note="every other worker has reserved space"),
                    op("sem_set", "in0_sender", 0)]
            ops += [op("mcast_cb", CB_IN0, tiles, tiles * page, *r, n) for r, n in parts]
            if p.arch.behaviour.flush_mcast_before_flag:
                ops.append(op("noc_writes_flushed"))
            ops.append(op("sem_set", "in0_receiver", VALID, note="the local word the flag multicast copies"))
            ops += [op("mcast_sem_set", "in0_receiver", VALID, *r, n) for r, n in parts]
            ops.append(op("noc_writes_flushed"))
        ops.append(op("cb_push_back", CB_IN0, tiles))
        return Loop("kb", 0, per_shard, tuple(ops), f"K-blocks {i * per_shard}..{(i + 1) * per_shard - 1}: this core's shard")

    kernels = []
    for i in range(shards):
        parts = _around(i % nx, i // nx, nx, ny)
        body = tuple(send(i) if j == i else receive(j) for j in range(shards))
        coords = tuple(a for r, _ in parts for a in r) + tuple(a for j in sorted(senders) if j != i for a in senders[j])
        kernels.append(dm_kernel(f"in0_gather_{i}", "NCRISC", 1, CoreRange(i % nx, i // nx, i % nx, i // nx),
                                 out_block_loops(p, lambda first: body), (),
                                 (("cb_in0", CB_IN0), ("cb_in0_sharded", CB_IN0_SHARD)), sems, coords))
        kernels[-1] = _with_role(kernels[-1], "in0_gather")
    if shards < p.num_cores:
        body = tuple(receive(j) for j in range(shards))
        coords = tuple(a for j in sorted(senders) for a in senders[j])
        for n, cores in enumerate(_rest(shards, nx, ny)):
            k = dm_kernel(f"in0_gather_receiver{'' if n == 0 else '_rows'}", "NCRISC", 1, cores,
                          out_block_loops(p, lambda first: body), (), (("cb_in0", CB_IN0),), sems, coords)
            kernels.append(_with_role(k, "in0_gather_receiver"))
    return kernels


def _with_role(k: Kernel, role: str) -> Kernel:
    from dataclasses import replace
    return replace(k, role=role)


def _rect(tag: str, x0: int, y0: int, x1: int, y1: int) -> tuple[RuntimeArg, ...]:
    # NOC 1 (in0's, as the factory's preferred_noc_for_dram_write) starts at the far corner
    return (RuntimeArg(f"{tag}_start_x", "noc_x", A(x1)), RuntimeArg(f"{tag}_start_y", "noc_y", A(y1)),
            RuntimeArg(f"{tag}_end_x", "noc_x", A(x0)), RuntimeArg(f"{tag}_end_y", "noc_y", A(y0)))


def _around(x: int, y: int, nx: int, ny: int) -> list[tuple[tuple[RuntimeArg, ...], int]]:
    """The nx x ny rectangle without core (x, y), as at most four rectangles: the rows above and below,
    and the rest of its own row to the left and to the right; with each its count of cores."""
    parts = []
    if y > 0:
        parts.append((_rect("above", 0, 0, nx - 1, y - 1), nx * y))
    if y < ny - 1:
        parts.append((_rect("below", 0, y + 1, nx - 1, ny - 1), nx * (ny - 1 - y)))
    if x > 0:
        parts.append((_rect("left", 0, y, x - 1, y), x))
    if x < nx - 1:
        parts.append((_rect("right", x + 1, y, nx - 1, y), nx - 1 - x))
    return parts


def _rest(first: int, nx: int, ny: int) -> tuple[CoreRange, ...]:
    """Cores first.. (row-major) of an nx x ny rectangle, as rectangles: the rest of a row, the rows below."""
    y, x = divmod(first, nx)
    ranges = [CoreRange(x, y, nx - 1, y)] if x else []
    if y + (1 if x else 0) <= ny - 1:
        ranges.append(CoreRange(0, y + (1 if x else 0), nx - 1, ny - 1))
    return tuple(ranges)


def _in1_reader_writer(p: Plan, all_cores: CoreRange) -> Kernel:
    """The factory's in1 sender/writer (reader_bmm_tile_layout_in1_sender_dram_sharded.cpp, BRISC on
    preferred_noc_for_dram_read): worker i reads its shard of in1 from DRAM bank i, K-block by K-block
    (in0_block_w rows of per_core_N tiles, back to back in the shard), then waits for its whole output
    shard (c_4 is the shard itself). A 32 x 32 tile is a whole number of DRAM alignments, so the shard's
    pages are the tiles themselves."""
    page = p.cb(CB_IN1).page_bytes
    assert page % p.arch.dram_alignment == 0, "a 32 x 32 tile is whole DRAM alignments"
    worker = A(0, core_x=1, core_y=p.grid[0])
    tiles = p.in1_block_tiles
    k_blocks = Loop("block", 0, p.num_blocks, (
        op("cb_reserve_back", CB_IN1, tiles),
        op("read_bank_tiles", "in1", CB_IN1, worker, A(0, block=tiles), tiles, page),
        op("noc_read_barrier"), op("cb_push_back", CB_IN1, tiles)),
        "bank-local: this worker's own DRAM bank's shard")
    tensors = tensors_of(p)
    return dm_kernel("in1_reader_writer", "BRISC", 0, all_cores,
                     out_block_loops(p, lambda first: (k_blocks,)) + _write_back(p),
                     (tensors["in1"],), (("cb_in1", CB_IN1), ("cb_out", CB_OUT), ("cb_out_shard", CB_OUT_SHARD)))


def _write_back(p: Plan) -> tuple[Node, ...]:
    """The factory's writer: once the whole output block is in c_4 (per_core_M rows of per_core_N_compute
    tiles), copy each row's real per_core_N tiles into the output tensor's shard (c_7) and free c_4; the
    padded columns are dropped (out_tensor_stride_w_bytes = per_core_N_compute tiles, the shard's row
    per_core_N tiles)."""
    tiles = p.per_core_m * p.per_core_n_compute
    return (op("cb_wait_front", CB_OUT, tiles, note="the whole output block is packed"),
            op("copy_shard", CB_OUT_SHARD, CB_OUT, A(0), p.per_core_m, p.per_core_n, p.per_core_n_compute,
               p.cb(CB_OUT).page_bytes, note="the real columns into the output shard, the padded ones dropped"),
            op("noc_read_barrier"), op("cb_pop_front", CB_OUT, tiles))
