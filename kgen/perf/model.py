"""Stage beside render and emulate: verified IR -> predicted device time (`Prediction`).

The model reads only the IR: every op a kernel executes, with its loop multiplicity (`ir.counted`),
its tile formats (the CB table) and its NoC transfers and multicast fan-outs. Each op
costs cycles on the processor that runs it (configs/perf/<arch>.toml). The five processors of a
core form a pipeline over K-blocks, linked by the double-buffered input CBs and the two DST halves:

    time = fill + (blocks - 1) x bottleneck + drain

where a stage's per-block time is its busy cycles over the blocks, the bottleneck is the slowest
stage, the fill is the first block through the readers and the compute, and the drain is the last
subblock's pack. A multicast receiver cannot run ahead of its sender, so its reader stage takes the
sender's pace. The program takes the slowest core, and never less than the card's DRAM floor
(every input byte read from DRAM once, every output byte written once).

The fan-out is the IR's: 2D multicast sends in0 along each row and in1 down each column; TT-Metal's
1D factory (mcast_1d_in0 / mcast_1d_in1) sends one operand from core (0,0) to every other core
(num_dests = num_cores - 1, priced per transaction by that count) while every core reads its own
block of the other operand from DRAM; its receivers on the rows below the first are kernels of the
same role, paced by the same sender.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Mapping

from kgen.gen import optable
from kgen.gen.ir import CoreBlocking, Kernel, Op, Program, counted
from kgen.gen.optable import OPS, Cost
from kgen.gen.plan import CB_BIAS, CB_IN0, CB_PARTIALS
from kgen.gen import dataflow as dataflows
from kgen.core.types import Placement
from kgen.core.costs import FIDELITY_PHASES, Costs, load_costs
from kgen.core.resources import config_table
from kgen.proof import read_share, write_share
from kgen.gen.activations import planned as planned_activation

# Processors of a Tensix core, in the order the report prints them.
UNPACK, MATH, PACK, BRISC, NCRISC = "TRISC0 unpack", "TRISC1 math", "TRISC2 pack", "BRISC", "NCRISC"
PROCESSORS = (UNPACK, MATH, PACK, BRISC, NCRISC)

# What a cycle is spent on, for the bottleneck in words.
WORK_KINDS = {"math": "math-bound", "unpack": "unpack-bound", "pack": "packer-bound", "dram": "DRAM-bound",
              "noc": "NoC/multicast-bound", "sync": "synchronisation-bound",
              "sfpu": "packer-bound (the fused SFPU activation)"}

# Where a tensor lives, as TT's GEMM benchmark rows place them: interleaved in DRAM (kgen's
# programs), interleaved in L1, or sharded so that each core's block already sits in its CB.
DRAM, L1, SHARDED = "dram", "l1", "sharded"
BANK = "bank"             # width-sharded over the DRAM banks, each reader reading its own bank
LOCAL = "local"           # the core's own L1 (a shard block copied into a CB): a read, never a placement

# A multicast receiver waits for its sender: it runs at the sender's pace (docs/reference/matmul.md §2.4).
PACED_BY = dataflows.PACED_BY

# the processor of the TRISC thread an op's row names
_THREAD = {optable.UNPACK: UNPACK, optable.MATH: MATH, optable.PACK: PACK}


@dataclass(frozen=True)
class ProcessorTime:
    processor: str
    kernel: str
    busy: float                   # cycles of work over the whole program
    stall: float                  # cycles waiting: the core's time minus the busy cycles
    work: Mapping[str, float]     # busy cycles by kind (math, unpack, pack, dram, noc, sync)


@dataclass(frozen=True)
class PolicyCost:
    """What the accumulation policy costs on the critical core."""
    reload_cycles: float          # unpack + datacopy of partials back into DST (spill/reload, the L1-acc reload)
    partials_pack_cycles: float   # packs into the partials CB (spills, L1-accumulated packs, the bias stage's input)
    l1_acc_surcharge: float       # the read-modify-write share of the packs done with L1 accumulation on


@dataclass(frozen=True)
class Prediction:
    arch: str
    clock_mhz: int
    cycles: float                 # device time of the program (the slowest core, or the DRAM floor)
    microseconds: float
    tflops: float
    ideal_cycles: float           # TT's ideal: M*K*N / 32^3 tile products x cycles per tile / full-grid cores
    utilization: float            # ideal / predicted, as GEMM_FLOPS.md defines device-based utilization
    critical_core: tuple[int, int]
    core_cycles: float            # the critical core's pipeline time
    math_cycles: float            # its TRISC1 span (what TT's device-based utilization divides by)
    dram_floor_cycles: float
    blocks: int                   # K-block steps on the critical core
    processors: tuple[ProcessorTime, ...]
    bottleneck: str               # in words
    bottleneck_share: float       # of the device time
    policy: str
    policy_cost: PolicyCost
    trace_us: float               # per-program overhead with trace (dispatch, op-to-op gap)
    host_us: float                # per-op host issue time without trace

    @property
    def wall_us(self) -> float:
        """Per-op wall time of back-to-back calls without trace, as a host-timed loop sees it: the device
        time plus the op-to-op gap, or the host's issue time where the host is the slower."""
        return wall_us(self)


# ----------------------------------------------------------------------------------------------
# per-op costs
# ----------------------------------------------------------------------------------------------

def sfpu_tile_cycles(spelling: str, fp32_dest: bool) -> float:
    """Predicted SFPU cycles of one fused activation over one 32 x 32 DST tile (configs/perf/sfpu.toml:
    instruction counts of the LLK function, a MAD-class instruction at 2 cycles)."""
    table = config_table("perf/sfpu.toml")
    rows = table["activation"][planned_activation(spelling).row.spelling]
    row = rows.get("fp32" if fp32_dest else "bf16", rows.get("any"))
    return 4 * (8 * (row["instructions"] + row["mad"]) + table["face_overhead"])


class _KernelCost:
    """Busy cycles of one kernel by processor and kind, summed over its ops with their trip counts."""

    def __init__(self, program: Program, kernel: Kernel, costs: Costs, placement: Mapping[str, str],
                 write_rate: float | None = None, read_rate: float | None = None):
        self.program, self.kernel, self.costs, self.placement = program, kernel, costs, placement
        # one core's DRAM write and interleaved read rates: the cores that write, and those that read,
        # share the card (Costs.dram_write_bytes_per_cycle, Costs.dram_read_bytes_per_cycle)
        self.write_rate = write_rate or costs.dram.write_bytes_per_cycle
        self.read_rate = read_rate or costs.dram.read_bytes_per_cycle
        self.last_read, self.last_write = DRAM, DRAM     # where the transfers a barrier waits for went
        self.formats = {cb.index: cb.data_format for cb in program.cbs}
        self.tensors = {t.name: t for t in kernel.tensors}
        self.busy: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.policy = defaultdict(float)
        self.sections = 0             # DST sections (tile_regs_acquire) executed
        self.dram_bytes = 0           # bytes this kernel moves to or from DRAM on one core
        self.dram_read_bytes = 0      # ... of which it reads
        self.dram_read_requests = 0   # ... in this many read requests (one per tile)
        self.blocks = 0               # K-block steps: in0 blocks the compute kernel waited for
        self.fill_latency = 0.0       # latency a pipeline fill waits for once: a multicast landing, a flag
        self.write_cycles = 0.0       # the share of the busy cycles spent writing the output
        self.tail_cycles = 0.0        # ... and feeding the bias, which the reader does after the K loop
        self.last_read_cb = -1
        self.writes = 0               # output write calls (one per subblock or row chunk)
        self.write_bytes = 0          # ... and the bytes they write
        self.write_cb = -1            # the CB they write from
        self._write_slack = 0.0       # the writes' time since the last barrier beyond one core's own rate
        self.feeds_inputs = False     # reads, multicasts or hands over an input CB's blocks
        self.rewound = 0              # partials subblocks popped unread: the L1-accumulation rewind
        # the stages each out block runs once after its K loop: the bias stage's unpack and math, and the
        # untilize stage's (reblock: copy into DST, pack_untilize) unpack, math and pack with its handshakes
        self.epilogue: dict[str, float] = defaultdict(float)
        self.epilogue_sections = 0    # DST sections of the untilize stage
        self.bias_stage = False       # between the bias stage's init and the next matmul init
        # A relay: a kernel that both hands K-blocks out of its own L1 shard (a copy, or a multicast
        # straight out of it) and receives the others' (kgen's in0_sharded_<i>, TT's block-sharded in0
        # reader). The line of cores hands each K-block over in turn and a core cannot send its next block
        # before the previous one arrived, so the hand-over's latencies (copy, semaphore round trip,
        # multicast landing) are paid per block by every core of the line, not once per fill. A hand-over
        # is the block (reserve to push) that takes from the shard.
        ops = list(counted(kernel.body))
        rows = [OPS[o.kind] for o, _ in ops]
        self.relay = any(r.from_shard for r in rows) and any(r.sem == optable.SEM_INCREMENTS for r in rows)
        self.relay_sends, self.relay_receives, self.relay_send_cycles = 0, 0, 0.0
        # A multicast sender's handshake chain: a receiver asks for block k (its semaphore increment) only
        # after block k - 1 has landed and been pushed, so the sender multicasts block k no sooner than
        # block k - 1's multicast, its landing and the increment's one-way latency after it: its K loop
        # takes at least the sum of those over its blocks, however fast it reads (TT's reader_bmm_tile_layout_
        # in0/in1 sender and receiver kernels at 0.81.1).
        self.chain_cycles = 0.0
        self._first_mcast = self._from_shard = False
        self._block_cycles = 0.0
        self._l1_acc = False          # the packer accumulates into L1 (pack_l1_acc)
        self._after_dest_reload = False   # between a reload straight into DST and the next matmul
        self._reconfigs_since_matmul = 0.0   # unpacker reconfiguration cycles since the last matmul
        if kernel.processor == "TRISC":
            self._compute_ops(ops)
        else:
            self._dataflow_ops(kernel.processor, ops)

    def _compute_ops(self, ops: list[tuple[Op, int]]) -> None:
        """Every op of the compute kernel (with its count) priced by its row's cost term, the stages it
        opens and closes kept."""
        previous: Op | None = None
        untilizing = False
        for o, n in ops:
            row = OPS[o.kind]
            if row.category == optable.L1_ACC_SWITCH:
                self._l1_acc = bool(o["enable"])
            if row.opens in (optable.STAGE_BIAS, optable.STAGE_MATMUL):
                self.bias_stage = row.opens == optable.STAGE_BIAS
            # The untilize stage runs once per out block after its K loop, a phase of its own: its math
            # hands each DST section to the packer and waits for it (half-sync DST), so the phase runs
            # at its slowest thread, the packer, while the FPU idles; it is no K-block's work.
            untilizing = untilizing or row.opens == optable.STAGE_UNTILIZE
            before = {p: self.total(p) for p in (UNPACK, MATH, PACK)} if untilizing else {}
            rule = _COMPUTE_RULES.get(row.cost)
            if rule is not None:
                rule(self, o, n)
            if untilizing:
                for p in before:
                    self.epilogue[p] += self.total(p) - before[p]
                if row.dst == optable.ACQUIRE:
                    self.epilogue_sections += n
            untilizing = untilizing and row.closes != optable.STAGE_UNTILIZE
            # TT's L1-accumulation flow pops a block's partials without reading them, to rewind the
            # FIFO: that wait needs the block's last subblock packed (docs/reference/matmul.md §1.6)
            if (row.cb == optable.CB_POP and o["cb"] == CB_PARTIALS and previous is not None
                    and OPS[previous.kind].cb == optable.CB_WAIT and previous["cb"] == CB_PARTIALS):
                self.rewound += n
            previous = o

    def _dataflow_ops(self, processor: str, ops: list[tuple[Op, int]]) -> None:
        """Every op of a data-movement kernel (with its count) priced by its row's cost term, a relay's
        hand-overs kept."""
        for o, n in ops:
            row = OPS[o.kind]
            before = self.total(processor) if self.relay and row.hand_over else 0.0
            if row.feeds:
                self.feeds_inputs = True
            if self.relay and row.cb == optable.CB_RESERVE:
                self._block_cycles, self._from_shard = 0.0, False       # a block starts: a hand-over or a receive
            if self.relay and row.cb == optable.CB_PUSH and self._from_shard:
                self.relay_send_cycles += self._block_cycles            # a relay's hand-over ends with its push
                self._from_shard = False
            if self.relay and row.from_shard:
                self._start_hand_over(n)      # a hand-over starts (the receivers' increments arrive meanwhile)
            rule = _DATAFLOW_RULES.get(row.cost)
            if rule is not None:
                rule(self, o, n, processor)
            if self.relay and row.hand_over:
                self._block_cycles += self.total(processor) - before
            if self.relay and row.sem == optable.SEM_INCREMENTS:
                self.relay_receives += n

    def add(self, processor: str, kind: str, cycles: float) -> None:
        self.busy[processor][kind] += cycles

    def _format(self, cb: int) -> str:
        return self.formats[cb]

    # -- the compute kernel's cost terms ---------------------------------------------------------

    def _matmul(self, o: Op, n: int) -> None:
        self._after_dest_reload, self._reconfigs_since_matmul = False, 0.0
        c, flags = self.costs, self.program.compute
        rt, ct = int(o["rt"]), int(o["ct"])
        per_tile = c.matmul_tile_cycles(flags.math_fidelity, flags.fp32_dest_acc)
        self.add(MATH, "math", n * (rt * ct * per_tile + c.math.overhead_per_call))
        (held, _), (streamed, _) = optable.matmul_unpacks(o)
        held_tiles, streamed_tiles, refills = c.matmul_unpack_counts(rt, ct)
        unpack = c.unpack_matmul(self._format(o[held]), held_tiles, self._format(o[streamed]), streamed_tiles)
        self.add(UNPACK, "unpack", n * unpack)
        # a pass that held two tiles refills its source register after its last product: the unpacker
        # and the FPU both wait for that held tile's unpack
        refill = n * refills * c.unpack_tile(self._format(o[held]))
        if refill:
            self.add(UNPACK, "sync", refill)
            self.add(MATH, "sync", refill)

    def _reload(self, o: Op, n: int) -> None:
        c = self.costs
        fmt = self._format(o["cb"])
        tiles = optable.work_of(o).unpack_tiles
        unpack = n * tiles * c.unpack_tile(fmt)
        self.add(UNPACK, "unpack", unpack)
        if fmt == "Float32" and self.program.compute.fp32_dest_acc:
            # Float32 partials go straight into DST (TT 0.81.1's partials CB is UnpackToDestFp32,
            # bmm_large_block_zm_fused_bias_activation.cpp): per tile the math thread drains, hands DST
            # to the unpacker and waits for the tile (tt-llk llk_math_eltwise_unary_datacopy.h:
            # math_unpack_to_dest_math_ready / math_unpack_to_dest_tile_ready), so the FPU idles for the
            # whole unpack and the unpacker cannot run ahead of the math: the reload is serial.
            self.add(MATH, "sync", unpack + self._reconfigs_since_matmul)
            self.policy["reload"] += unpack
            self._after_dest_reload, self._reconfigs_since_matmul = True, 0.0
            return
        copy = n * tiles * c.math.datacopy_cycles_per_tile
        self.add(MATH, "math", copy)
        self.policy["reload"] += unpack + copy

    def _bias_add(self, o: Op, n: int) -> None:
        c = self.costs
        unpack = n * (c.unpack_tile(self._format(o["a"])) + c.unpack_tile(self._format(o["b"])))
        self.add(UNPACK, "unpack", unpack)
        self.add(MATH, "math", n * c.math.eltwise_cycles_per_tile)
        # the bias stage runs once per out block after its K loop, not per K-block
        self.epilogue[UNPACK] += unpack
        self.epilogue[MATH] += n * c.math.eltwise_cycles_per_tile

    def _pack(self, o: Op, n: int) -> None:
        c, l1_acc = self.costs, self._l1_acc
        tiles = optable.work_of(o).pack_tiles
        fmt = self._format(o["cb"])
        plain = c.pack_tile(fmt, False)
        cycles = n * (tiles * c.pack_tile(fmt, l1_acc) + c.pack.overhead_per_call)
        self.add(PACK, "pack", cycles)
        if l1_acc:
            self.policy["l1_acc"] += n * tiles * (c.pack_tile(fmt, True) - plain)
        if o["cb"] == CB_PARTIALS:
            self.policy["partials_pack"] += cycles

    def _untilize(self, o: Op, n: int) -> None:
        c = self.costs
        ct = int(o["block_ct"])
        rows = int(o["rows"])
        self.add(PACK, "pack",
                 n * rows * (ct * c.pack.untilize_cycles_per_tile + c.pack.untilize_cycles_per_block / ct))

    def _reconfig(self, o: Op, n: int) -> None:
        thread = _THREAD[OPS[o.kind].thread]
        cycles = n * self.costs.sync.reconfig
        self.add(thread, "sync", cycles)
        if thread != UNPACK:
            return
        # An unpacker init or reconfiguration has a math half on TRISC1 (reconfig_data_format_srca,
        # copy_init, matmul_block_init: UNPACK((llk_unpack_..)) and MATH((llk_math_..)) in
        # api/compute/*.h at 0.81.1). Around a reload straight into DST the math runs them in series
        # with the reload it hands DST over for, so the FPU pays them (the ones before the reload
        # once the reload shows it goes to DST). Elsewhere they stay the unpacker's alone, as the
        # emulator prices them (its math thread charges no init).
        if self._after_dest_reload:
            self.add(MATH, "sync", cycles)
        else:
            self._reconfigs_since_matmul += cycles

    def _dst_acquire(self, o: Op, n: int) -> None:
        self.sections += n
        self.add(MATH, "sync", n * self.costs.sync.dst_section / 2)

    def _dst_wait(self, o: Op, n: int) -> None:
        self.add(PACK, "sync", n * self.costs.sync.dst_section / 2)

    def _sfpu(self, o: Op, n: int) -> None:
        # waits for the DST section as tile_regs_wait does, then runs the activation on the pack thread
        c, flags = self.costs, self.program.compute
        self.add(PACK, "sync", n * c.sync.dst_section / 2)
        sfpu = n * optable.work_of(o).sfpu_tiles * sfpu_tile_cycles(str(o["activation"]), flags.fp32_dest_acc)
        self.add(PACK, "sfpu", sfpu)
        if self.bias_stage:                   # applied in the bias stage: once per out block, after the K loop
            self.epilogue[PACK] += sfpu

    def _compute_handshake(self, o: Op, n: int) -> None:
        effect = OPS[o.kind].cb
        if effect == optable.CB_WAIT and o["cb"] == CB_IN0:
            self.blocks += n
        # the front's handshakes are the unpacker's, the back's and DST's remaining ones the packer's
        self.add(UNPACK if effect in (optable.CB_WAIT, optable.CB_POP) else PACK, "sync", n * self.costs.sync.cb_op)

    # -- the data-movement kernels' cost terms ----------------------------------------------------

    def _handshake(self, o: Op, n: int, processor: str) -> None:
        self.add(processor, "sync", n * self.costs.sync.cb_op)

    def _sem_handshake(self, o: Op, n: int, processor: str) -> None:
        # In steady state the double-buffered CBs let the handshake of block b+1 overlap block b:
        # a wait finds its value and an increment is posted; the one-way latency is paid per fill.
        c = self.costs
        self.add(processor, "noc", n * c.sync.cb_op)
        self.fill_latency = max(self.fill_latency, c.multicast.semaphore_latency)

    def _shard_copy(self, o: Op, n: int, processor: str) -> None:
        # a block of this core's L1 shard into the input CB: local L1 reads, no DRAM (a sharded in0)
        nbytes = int(o["rows"]) * int(o["cols"]) * int(o["page_bytes"])
        self.last_read = LOCAL
        self.add(processor, "noc", n * nbytes / self.costs.l1.read_bytes_per_cycle)
        self.last_read_cb = o["cb"]

    def _tile_read(self, o: Op, n: int, processor: str) -> None:
        c = self.costs
        tiles = optable.work_of(o).noc_read_tiles
        page = self.tensors[o["tensor"]].page_bytes
        where = self.last_read = self.placement.get(o["tensor"], DRAM)
        if where in (DRAM, BANK):
            # bandwidth-bound, or bound by the DRAM endpoint's request rate (one request per tile);
            # a bank-local read at its own bank's share of the card
            rate = self.read_rate if where == DRAM else c.dram_bank_read_bytes_per_cycle()
            per_tile = c.dram.read_tile_cycles(page, rate)
            self.dram_bytes += n * tiles * page
            self.dram_read_bytes += n * tiles * page
            self.dram_read_requests += n * tiles
        else:
            per_tile = page / c.l1.read_bytes_per_cycle if where == L1 else 0.0   # sharded: already in the CB
        self.add(processor, "dram" if where in (DRAM, BANK) else "noc", n * tiles * per_tile)
        self.last_read_cb = o["cb"]
        if o["cb"] == CB_BIAS:
            self.tail_cycles += n * tiles * per_tile

    def _bank_read(self, o: Op, n: int, processor: str) -> None:
        # one read of a bank's own shard at that bank's bandwidth, in NoC bursts of at most
        # noc_max_burst_bytes, each one request of the endpoint
        c = self.costs
        nbytes = int(o["tiles"]) * int(o["page_bytes"])
        requests = -(-nbytes // self.program.arch.noc_max_burst_bytes)
        self.last_read = BANK
        self.dram_bytes += n * nbytes
        self.dram_read_bytes += n * nbytes
        self.dram_read_requests += n * requests
        self.add(processor, "dram", n * max(nbytes / c.dram_bank_read_bytes_per_cycle(),
                                            requests * c.dram.cycles_per_read_request))
        self.last_read_cb = o["cb"]

    def _read_barrier(self, o: Op, n: int, processor: str) -> None:
        c = self.costs
        latency = {DRAM: c.dram.read_latency, BANK: c.dram.read_latency, L1: c.l1.read_latency,
                   LOCAL: c.l1.local_read_latency}.get(self.last_read, 0.0)
        self.add(processor, "dram" if self.last_read in (DRAM, BANK) else "noc", n * latency)
        if self.last_read_cb == CB_BIAS:
            self.tail_cycles += n * latency

    def _tile_write(self, o: Op, n: int, processor: str) -> None:
        self._write(o, n, processor, int(o["rows"]) * int(o["cols"]) * self.tensors[o["tensor"]].page_bytes)

    def _row_write(self, o: Op, n: int, processor: str) -> None:
        self._write(o, n, processor, int(o["rows"]) * int(o["row_bytes"]))

    def _write(self, o: Op, n: int, processor: str, nbytes: int) -> None:
        """A write of output pages or rows, `nbytes` a call."""
        c = self.costs
        where = self.last_write = self.placement.get(o["tensor"], DRAM)
        if where == DRAM:
            self.dram_bytes += n * nbytes
        rate = {DRAM: self.write_rate, L1: c.l1.write_bytes_per_cycle}.get(where)
        cycles = n * nbytes / rate if rate else 0.0
        if where == DRAM and rate:
            # the writes' time beyond this core's own rate: other cores' bytes on the shared links
            self._write_slack += cycles - n * nbytes / c.dram.write_bytes_per_cycle
        self.add(processor, "dram" if where == DRAM else "noc", cycles)
        self.write_cycles += cycles
        self.writes += n
        self.write_bytes += n * nbytes
        self.write_cb = o["cb"]

    def _write_barrier(self, o: Op, n: int, processor: str) -> None:
        c = self.costs
        latency = {DRAM: c.dram.write_latency, L1: c.l1.write_latency}.get(self.last_write, 0.0)
        if self.last_write == DRAM and n:
            # Where the writes share the card or the NoC links, a barrier's wait overlaps the other cores'
            # bytes on them: each write call takes the longer of its share of the shared path and its own
            # rate with the latency, not their sum.
            latency = write_share.barrier_wait(c, self._write_slack / n)
        self._write_slack = 0.0
        self.add(processor, "dram" if self.last_write == DRAM else "noc", n * latency)
        self.write_cycles += n * latency

    def _start_hand_over(self, n: int) -> None:
        self.relay_sends += n
        self._from_shard, self._first_mcast = True, True

    def _data_mcast(self, o: Op, n: int, processor: str) -> None:
        """A multicast of a CB's block (from the CB, or straight out of this core's shard with loopback)."""
        # the sender goes on once the data is issued; its landing (the flag follows the data on the
        # same path) delays the receivers once per fill (per block in a relay)
        c = self.costs
        dests = int(o["num_dests"])
        if self.relay and self._first_mcast:
            # the line waits for the landing only where the sender changes: a core that sends several
            # K-blocks in a row copies the next while the last one is in flight
            p = self.program.blocking
            in_a_row = max(1, p.in0_shard_w // p.in0_block_w)
            self._first_mcast = False
            self.add(processor, "noc", n * c.multicast_landing(dests) / in_a_row)
        self.add(processor, "noc", n * c.multicast_cycles(int(o["bytes"]), dests))
        if o["cb"] == CB_BIAS:
            self.tail_cycles += n * c.multicast_cycles(int(o["bytes"]), dests)
        elif not self.relay:
            self.chain_cycles += n * (c.multicast_cycles(int(o["bytes"]), dests) + c.multicast_landing(dests)
                                      + c.multicast.semaphore_latency)
        self.fill_latency = max(self.fill_latency, c.multicast_landing(dests))

    def _sem_mcast(self, o: Op, n: int, processor: str) -> None:
        self.add(processor, "noc", n * self.costs.multicast_issue(int(o["num_dests"])))
        if not self.relay:
            self.chain_cycles += n * self.costs.multicast_issue(int(o["num_dests"]))

    def total(self, processor: str) -> float:
        return sum(self.busy[processor].values())


# The op table's cost terms (its `cost` column) and the rule that prices each: a compute kernel's ops on
# the TRISC threads, a data-movement kernel's on its RISC-V. tests/perf/test_model.py checks every row's
# term has a rule for the processors it runs on.
_COMPUTE_RULES = {Cost.MATMUL: _KernelCost._matmul, Cost.RELOAD: _KernelCost._reload,
                  Cost.BIAS_ADD: _KernelCost._bias_add, Cost.PACK: _KernelCost._pack,
                  Cost.UNTILIZE: _KernelCost._untilize, Cost.RECONFIG: _KernelCost._reconfig,
                  Cost.DST_ACQUIRE: _KernelCost._dst_acquire, Cost.DST_WAIT: _KernelCost._dst_wait,
                  Cost.SFPU: _KernelCost._sfpu, Cost.HANDSHAKE: _KernelCost._compute_handshake}
_DATAFLOW_RULES = {Cost.HANDSHAKE: _KernelCost._handshake, Cost.SEM_HANDSHAKE: _KernelCost._sem_handshake,
                   Cost.SHARD_COPY: _KernelCost._shard_copy, Cost.TILE_READ: _KernelCost._tile_read,
                   Cost.BANK_READ: _KernelCost._bank_read, Cost.READ_BARRIER: _KernelCost._read_barrier,
                   Cost.TILE_WRITE: _KernelCost._tile_write, Cost.ROW_WRITE: _KernelCost._row_write,
                   Cost.WRITE_BARRIER: _KernelCost._write_barrier, Cost.DATA_MCAST: _KernelCost._data_mcast,
                   Cost.SEM_MCAST: _KernelCost._sem_mcast}


# ----------------------------------------------------------------------------------------------
# the pipeline of one core
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _CoreTime:
    core: tuple[int, int]
    cycles: float                 # until the last output byte is written
    math_cycles: float            # TRISC1's span: until the last DST section is handed to the packer
    blocks: int
    busy: Mapping[str, float]
    work: Mapping[str, Mapping[str, float]]
    kernels: Mapping[str, str]
    bottleneck: str
    policy: Mapping[str, float]
    write_backlog: float = 0.0    # the drain's writes beyond the last one: the writer's backlog at the last push


@dataclass
class _Gathered:
    """What one core's kernels add up to, read by _core_time (a working value, not a stage's output)."""
    busy: dict[str, float]
    work: dict[str, Mapping[str, float]]
    names: dict[str, str]
    paced: dict[str, float]
    feeding: dict[str, float]          # a reader's cycles inside the K loop (without output writes and the bias)
    blocks: int
    sections: int
    policy: dict
    rewound: int
    epilogue: dict
    epilogue_sections: int
    out_writes: int
    out_write_cycles: float
    buffered_writes: float
    fill_latency: float
    last_write: float
    restarts: bool
    refeed: float = 0.0                # the K-loop cycles of the reader that refills at every out block
    writer: str = ""                   # the processor that writes the output


def _gather(kernels: list[Kernel], cost_of: Mapping[str, _KernelCost]) -> _Gathered:
    busy: dict[str, float] = {}
    work: dict[str, Mapping[str, float]] = {}
    names: dict[str, str] = {}
    paced: dict[str, float] = {}
    feeding: dict[str, float] = {}     # a reader's cycles inside the K loop (without output writes and the bias)
    blocks, sections, policy, rewound, epilogue, epilogue_sections = 1, 1, {}, 0, {}, 0
    out_writes, out_write_cycles, buffered_writes = 0, 0.0, 1.0
    fill_latency, last_write, restarts, refeed, writer = 0.0, 0.0, False, 0.0, ""
    for k in kernels:
        kc = cost_of[k.name]
        if k.processor == "TRISC":
            blocks, sections, policy, rewound = max(kc.blocks, 1), max(kc.sections, 1), dict(kc.policy), kc.rewound
            epilogue, epilogue_sections = dict(kc.epilogue), kc.epilogue_sections
        for p in PROCESSORS:
            if kc.total(p):
                busy[p] = kc.total(p)
                work[p] = dict(kc.busy[p])
                names[p] = k.name
        latency = kc.fill_latency
        feed = max(kc.total(k.processor) - kc.write_cycles - kc.tail_cycles, kc.chain_cycles)
        sender = PACED_BY.get(k.role)
        if sender is not None and sender in cost_of:
            s = cost_of[sender]
            paced[k.processor] = s.total(k.processor)
            latency = max(latency, s.fill_latency)
            feed = max(feed, s.total(k.processor) - s.write_cycles - s.tail_cycles, s.chain_cycles)
        fill_latency = max(fill_latency, latency)
        if k.processor != "TRISC":
            feeding[k.processor] = feed
        if kc.writes:
            writer = k.processor
            last_write = kc.write_cycles / kc.writes
            out_writes, out_write_cycles = kc.writes, kc.write_cycles
            # the writes the output CB holds: the compute gets no further ahead of the writer
            cb = kc.program.cb(kc.write_cb)
            buffered_writes = max(1.0, cb.pages * cb.page_bytes / (kc.write_bytes / kc.writes))
            # TT's in1 sender/receiver writer feeds in1 and writes the output in one loop: it reads the
            # next out block's first K-block only after writing this block's last subblock, so the
            # pipeline refills at every out block (reader_bmm_tile_layout_in1_*_writer_padding.cpp).
            restarts = restarts or kc.feeds_inputs
            if kc.feeds_inputs and k.processor != "TRISC":
                refeed = max(refeed, feed)
    return _Gathered(busy, work, names, paced, feeding, blocks, sections, policy, rewound, epilogue,
                     epilogue_sections, out_writes, out_write_cycles, buffered_writes, fill_latency, last_write,
                     restarts, refeed, writer)


def _core_time(core: tuple[int, int], kernels: list[Kernel], cost_of: Mapping[str, _KernelCost],
               blocking: CoreBlocking) -> _CoreTime:
    g = _gather(kernels, cost_of)
    busy, work, names, paced, feeding = g.busy, g.work, g.names, g.paced, g.feeding
    blocks, sections, policy, rewound = g.blocks, g.sections, g.policy, g.rewound
    epilogue, epilogue_sections, fill_latency, restarts = g.epilogue, g.epilogue_sections, g.fill_latency, g.restarts
    out_writes, out_write_cycles, buffered_writes, last_write = (g.out_writes, g.out_write_cycles,
                                                                 g.buffered_writes, g.last_write)
    out_blocks_per_core = max(1, blocks // max(blocking.num_blocks, 1))
    out_blocks = out_blocks_per_core if restarts else 1          # pipeline fills
    per_block = {p: max(busy.get(p, 0.0), paced.get(p, 0.0)) / blocks for p in PROCESSORS}
    # The bias and untilize stages are no K-block's work: they run after each out block's K loop, at
    # the pace of their slowest thread, the last of them in the drain.
    for p in (UNPACK, MATH, PACK):
        per_block[p] -= epilogue.get(p, 0.0) / blocks
    bias_stage = max(epilogue.get(p, 0.0) for p in (UNPACK, MATH, PACK)) / out_blocks_per_core
    pack_section = per_block[PACK] * blocks / max(sections - epilogue_sections, 1)
    # unpack and math hand SrcA/SrcB tile by tile: one compute stage at the slower of the two; a block
    # whose partials are rewound waits for its last subblock's pack first (the FPU idles meanwhile)
    rewinds = rewound / max(blocking.in0_num_subblocks * blocking.in1_num_subblocks, 1)
    compute = max(per_block[UNPACK], per_block[MATH]) + pack_section * rewinds / blocks
    reading = max(feeding.get(p, 0.0) for p in (BRISC, NCRISC)) / blocks
    # Refilling at every out block, the writer writes while the FPU finishes the block: in steady state
    # the readers only feed. Otherwise their writes share the steady state with the feeding.
    readers = reading if restarts else max(per_block[BRISC], per_block[NCRISC])
    writes_per_block = out_writes / out_blocks_per_core
    if not restarts and g.writer in (BRISC, NCRISC) and writes_per_block and buffered_writes <= writes_per_block:
        # an output CB of one out block: the packer fills it again only after the writer popped it
        readers = max(readers, per_block[g.writer] + per_block[PACK])
    stages = {"read": readers, "compute": compute, "pack": per_block[PACK]}
    slowest = max(stages, key=stages.get)
    fill = reading + fill_latency + compute             # the first K-block through the readers and the FPU
    # The last out block's output is pushed over a window: its last K-block's compute, or the untilize
    # stage that packs it. The writer starts on the first push; where its writes of the block take
    # longer than the window, the backlog is written after the last push, as much as the output CB holds.
    untilizes = epilogue_sections > 0
    window = bias_stage if untilizes else compute
    tail = last_write
    if writes_per_block > 1:
        backlog = out_write_cycles / out_blocks_per_core - window * (writes_per_block - 1) / writes_per_block
        tail = max(last_write, min(backlog, buffered_writes * last_write))
    # the bias or untilize stage, the last DST section's pack (the untilize stage's own) and the writes
    drain = bias_stage + (0.0 if untilizes else pack_section) + tail
    # without a refill per out block, the other out blocks' bias stages are part of the steady state
    # At a refill only the reader that writes the output (TT's in1 sender/receiver writer) starts again:
    # the others (TT's in0 sender, reader_bmm_tile_layout_in0_sender_padding.cpp) do not write and ran on
    # into the next out block, their CBs' two K-blocks ahead, so its first K-block waits for that reader
    refill = min(fill, g.refeed / blocks + fill_latency + compute)
    cycles = (fill + drain + (out_blocks - 1) * (refill + drain) + (blocks - out_blocks) * stages[slowest]
              + (out_blocks_per_core - out_blocks) * bias_stage)
    # No processor is busy for longer than the core runs: a reader that also writes the output (TT's
    # in1 writer) does both in one loop, so where the writes outweigh the overlap above, the core waits
    # for them, and the compute with it (its output CB stays full).
    cycles = max(cycles, max(max(busy.get(p, 0.0), paced.get(p, 0.0)) for p in PROCESSORS))
    bottleneck_processor = {"read": BRISC if per_block[BRISC] >= per_block[NCRISC] else NCRISC,
                            "compute": UNPACK if per_block[UNPACK] > per_block[MATH] else MATH,
                            "pack": PACK}[slowest]
    # TRISC1 hands DST sections to the packer until the untilize stage's last one
    math_cycles = cycles - drain + (bias_stage if untilizes else 0.0)
    return _CoreTime(core, cycles, math_cycles, blocks, busy, work, names, bottleneck_processor, policy,
                     tail - last_write)


# ----------------------------------------------------------------------------------------------
# the program
# ----------------------------------------------------------------------------------------------

def _contended(t: _CoreTime, floor: float, moves_dram: bool) -> _CoreTime:
    if not moves_dram:
        return t
    # the writer's backlog is part of the card's bytes, which the floor already serves: TRISC1 waits for
    # the floor less the drain's own work, also where the core's shared-rate writes make it run longer
    drain = t.cycles - t.math_cycles - t.write_backlog
    if t.cycles >= floor:
        return replace(t, math_cycles=max(t.math_cycles, floor - drain))
    return replace(t, cycles=floor, math_cycles=floor - drain)


def _write_rate(program: Program, cost_of: Mapping[str, _KernelCost], costs: Costs) -> float:
    """One core's DRAM write rate with every writer writing its out block at once: the card's usable
    bandwidth over the writing cores, and no more than the busiest NoC link on the writers' routes into
    the DRAM columns serves (kgen.proof.write_share)."""
    writers = [(k.noc or 0, [c for c in k.cores.cores() if c[0] < program.grid[0] and c[1] < program.grid[1]],
                float(cost_of[k.name].dram_bytes - cost_of[k.name].dram_read_bytes))
               for k in program.kernels if cost_of[k.name].dram_bytes > cost_of[k.name].dram_read_bytes]
    return write_share.shared_rate(writers, costs)


def _read_rates(program: Program, costs: Costs, placement: Mapping[str, str]) -> dict[str, float]:
    """The interleaved DRAM read rate of each kernel that reads below one core's own rate, the readers
    sharing the card's bandwidth and its endpoints' request rate (kgen.proof.read_share)."""
    elsewhere = frozenset(t for t, where in placement.items() if where != DRAM)
    rates = read_share.read_rates(program, costs, elsewhere)
    return {name: rate for name, rate in rates.items() if rate < costs.dram.read_bytes_per_cycle}


def _cores(k: Kernel) -> int:
    return k.cores.size


def predict(program: Program, costs: Costs | None = None, placement: Mapping[str, str] | None = None) -> Prediction:
    """The predicted device time of a verified program, with its critical core and bottleneck.
    `placement` moves tensors out of DRAM ({"in0": "sharded", "out": "l1"}), as TT's benchmark rows
    do where kgen cannot yet generate that dataflow; the ops stay the program's."""
    costs = costs or load_costs(program.arch.name)
    # where the plan itself puts a tensor (`memory { in0 = l1 }`, in1, out): read and written at L1's rates;
    # a sharded in0 or output needs nothing here: its program reads no DRAM for it (copy_shard,
    # mcast_shard) and writes none
    placement = {**{t: L1 for t in ("in0", "in1", "out") if program.placement(t) == Placement.L1},
                 **({"in1": BANK} if program.placement("in1") == Placement.DRAM_WIDTH_SHARDED else {}), **(placement or {})}
    unknown = {v for v in placement.values()} - {DRAM, L1, SHARDED, BANK}
    if unknown:
        raise ValueError(f"placement must be {DRAM}, {L1} or {SHARDED}, not {', '.join(sorted(unknown))}")
    cost_of = {k.name: _KernelCost(program, k, costs, placement) for k in program.kernels}
    write_rate = _write_rate(program, cost_of, costs)
    read_rates = _read_rates(program, costs, placement)
    if write_rate < costs.dram.write_bytes_per_cycle or read_rates:
        cost_of = {k.name: _KernelCost(program, k, costs, placement, write_rate, read_rates.get(k.name))
                   for k in program.kernels}
    # A relay line (a block-sharded in0): every core of the line waits for every hand-over, its own and
    # the other positions' (the lines are alike, one relay kernel per position)
    relays = [kc for kc in cost_of.values() if kc.relay]
    line = sum(kc.relay_send_cycles for kc in relays)
    for kc in relays:
        kc.add(kc.kernel.processor, "noc", line - kc.relay_send_cycles)

    # Cores that run the same kernels take the same time: one analysis per distinct kernel set. The
    # kernels' core ranges are rectangles, so every cell of their arrangement has a corner on the
    # lattice of the ranges' edges: those cores are enough to meet every kernel set.
    xs = sorted({x for k in program.kernels for x in (k.cores.x0, k.cores.x1 + 1) if x < program.grid[0]})
    ys = sorted({y for k in program.kernels for y in (k.cores.y0, k.cores.y1 + 1) if y < program.grid[1]})
    by_set: dict[tuple[str, ...], tuple[int, int]] = {}
    for x in xs:
        for y in ys:
            names = tuple(k.name for k in program.kernels if k.runs_on((x, y)))
            if names:
                by_set.setdefault(names, (x, y))
    # every byte the kernels move to or from DRAM, on every core that runs them, and the read requests
    dram_bytes = sum(cost_of[k.name].dram_bytes * _cores(k) for k in program.kernels)
    requests = sum(cost_of[k.name].dram_read_requests * _cores(k) for k in program.kernels)
    floor = max(costs.dram_floor_cycles(dram_bytes), costs.dram_request_floor_cycles(requests))
    # DRAM contention: the cores that move DRAM bytes share the card's usable bandwidth (and its
    # endpoints' request rate), so none of them is done before the card has served them all: a core
    # that reads or writes DRAM runs at least the floor, and its compute waits with it (the reads
    # feed it; the output CB it packs into drains only as fast as the writes go).
    times = [_contended(_core_time(core, [program.kernel(n) for n in names], cost_of, program.blocking), floor,
                        any(cost_of[n].dram_bytes for n in names))
             for names, core in by_set.items()]
    critical = max(times, key=lambda t: t.cycles)
    cycles = max(critical.cycles, floor)

    spec = program.problem
    flops = 2.0 * spec.batch * spec.m * spec.n * spec.k
    gx, gy = program.arch.worker_grid
    ideal = (spec.batch * spec.m * spec.n * spec.k / 32 ** 3
             * costs.math.cycles_per_tile_phase * FIDELITY_PHASES[program.compute.math_fidelity] / (gx * gy))
    seconds = cycles / (costs.arch.clock_mhz * 1e6)

    processors = tuple(
        ProcessorTime(proc, critical.kernels.get(proc, "-"), critical.busy.get(proc, 0.0),
                      max(0.0, critical.cycles - critical.busy.get(proc, 0.0)), critical.work.get(proc, {}))
        for proc in PROCESSORS)
    if floor > 0 and floor >= critical.cycles:
        bottleneck, share = "DRAM-bound (the card's bandwidth)", 1.0
    else:
        work = critical.work.get(critical.bottleneck, {})
        kind = max(work, key=work.get) if work else "sync"
        bottleneck = f"{WORK_KINDS[kind]} ({critical.bottleneck})"
        share = critical.busy.get(critical.bottleneck, 0.0) / cycles
    policy_cost = PolicyCost(critical.policy.get("reload", 0.0), critical.policy.get("partials_pack", 0.0),
                             critical.policy.get("l1_acc", 0.0))
    return Prediction(
        arch=program.arch.name, clock_mhz=costs.arch.clock_mhz, cycles=cycles, microseconds=seconds * 1e6,
        tflops=flops / seconds / 1e12, ideal_cycles=ideal, utilization=ideal / cycles,
        critical_core=critical.core, core_cycles=critical.cycles, math_cycles=critical.math_cycles, dram_floor_cycles=floor, blocks=critical.blocks,
        processors=processors, bottleneck=bottleneck, bottleneck_share=min(1.0, share), policy=program.policy,
        policy_cost=policy_cost, trace_us=costs.dispatch.trace_us, host_us=costs.dispatch.host_us)


def wall_us(p: Prediction) -> float:
    """max(device time + op-to-op gap, host issue time) of one op in a back-to-back loop without trace:
    the host issues op n+1 while op n runs, so the slower of the two sets the pace (configs/perf
    [dispatch] names the sources of both figures)."""
    return max(p.microseconds + p.trace_us, p.host_us)


def lower_bound_cycles(arch_name: str, per_core: tuple[int, int], kt: int, fidelity: str,
                       fp32_dest_acc: bool, in0_format: str = "Float16_b", in1_format: str = "Float16_b") -> float:
    """Cycles `predict` gives no program with this per-core block less than: its compute stage (the
    slower of unpacker and matrix engine, tile by tile) over per_core_M x per_core_N x Kt tile
    products. The matrix engine costs each product cycles per phase x phases plus the per-tile issue
    overhead (times the fp32 dest factor), as `matmul_block` is priced above; the unpacker streams at
    least one operand tile per product over the held tiles per pass (LLK's passes: a Wormhole pass
    streams each tile against two held ones), at the cheaper operand's rate. The predicted core time,
    fills and drains included, is at least the compute stage's total over the K-blocks, which is at
    least this."""
    costs = load_costs(arch_name)
    m = costs.math
    per_tile = m.cycles_per_tile_phase * FIDELITY_PHASES[fidelity] + m.overhead_per_tile
    if fp32_dest_acc:
        per_tile *= m.fp32_dest_factor
    unpack = min(costs.unpack_tile(in0_format), costs.unpack_tile(in1_format)) / max(1, costs.unpack.held_tiles_per_pass)
    return per_core[0] * per_core[1] * kt * max(per_tile, unpack)
