"""The cost tables (configs/perf/<arch>.toml) as frozen values: what the performance model
(kgen.perf) prices every op with, and where the emulator takes the facts it shares with it.

Every constant lives in the TOML with its source; this module only gives them types and the few
derived rates (cycles per tile of a format) that follow from them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Mapping

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.resources import config_table

# Fidelity phases per tile product (docs/reference/numerics.md; GEMM_FLOPS.md's 16/32/48/64 cycles per tile).
FIDELITY_PHASES = {"LoFi": 1, "HiFi2": 2, "HiFi3": 3, "HiFi4": 4}


@dataclass(frozen=True)
class Curve:
    """A measured quantity against a count, interpolated linearly and held flat past the ends."""

    points: tuple[tuple[float, float], ...]

    def at(self, x: float) -> float:
        xs = [p[0] for p in self.points]
        i = bisect.bisect_left(xs, x)
        if i == 0:
            return self.points[0][1]
        if i == len(xs):
            return self.points[-1][1]
        (x0, y0), (x1, y1) = self.points[i - 1], self.points[i]
        return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@dataclass(frozen=True)
class MathCosts:
    cycles_per_tile_phase: float
    overhead_per_tile: float
    overhead_per_call: float
    fp32_dest_factor: float
    datacopy_cycles_per_tile: float
    eltwise_cycles_per_tile: float


@dataclass(frozen=True)
class UnpackCosts:
    bytes_per_cycle: float               # one unpacker alone (x4 speed)
    both_bytes_per_cycle: float          # both unpackers together: the L1 read ports they share
    overhead_per_tile: float
    exponent_bytes: Mapping[str, int]    # a BFP tile's shared exponents, read beside the mantissas
    held_tiles_per_pass: int = 1         # matmul_block: held tiles LLK loads per pass (one per source bank)


@dataclass(frozen=True)
class PackCosts:
    bytes_per_cycle: float
    overhead_per_call: float
    l1_acc_factor: float
    untilize_cycles_per_tile: float
    untilize_cycles_per_block: float


@dataclass(frozen=True)
class DramCosts:
    read_bytes_per_cycle: float
    write_bytes_per_cycle: float
    cycles_per_read_request: float
    read_latency: float
    write_latency: float
    card_bytes_per_second: float
    card_efficiency: float
    # one core's own request issue: at most one read request per this many cycles, whatever its size
    # (the DRAM Interleaved Packet Sizes plots' small pages); 0: no such floor
    issuer_cycles_per_read_request: float = 0.0
    def read_tile_cycles(self, page_bytes: float, rate: float) -> float:
        """One page read by one core at `rate` B/cycle: the bytes, or the card's endpoint request rate,
        or the core's own request issue, whichever is the slowest."""
        return max(page_bytes / rate, self.cycles_per_read_request, self.issuer_cycles_per_read_request)


@dataclass(frozen=True)
class L1Costs:
    read_bytes_per_cycle: float
    write_bytes_per_cycle: float
    read_latency: float
    write_latency: float
    local_read_latency: float     # a read of the core's own L1 over the NoC (a shard block into a CB)


@dataclass(frozen=True)
class MulticastCosts:
    issue_cycles: float
    issue_cycles_per_destination: float
    bandwidth: Curve                 # B/cycle against destinations
    latency: Curve                   # cycles against destinations: one transaction of latency_bytes, issue to landing
    latency_bytes: int
    semaphore_latency: float


@dataclass(frozen=True)
class NocCosts:
    link_bytes_per_cycle: float      # one link, one direction
    size: tuple[int, int]            # the NoC torus, columns x rows (NoC 0 coordinates)
    worker_columns: tuple[int, ...]  # the NoC 0 x of each logical worker column, in order
    worker_rows: tuple[int, ...]     # ... and the NoC 0 y of each logical worker row

    def physical(self, core: tuple[int, int]) -> tuple[int, int]:
        """The NoC 0 coordinate of a logical worker core (the unharvested chip)."""
        return self.worker_columns[core[0]], self.worker_rows[core[1]]


@dataclass(frozen=True)
class SyncCosts:
    cb_op: float
    reconfig: float
    dst_section: float


@dataclass(frozen=True)
class DispatchCosts:
    trace_us: float
    host_us: float
    timed_clock_mhz: float        # the AICLK the card ran at in TT's timed runs (host-measured op times)


@dataclass(frozen=True)
class Costs:
    arch: ArchFacts
    math: MathCosts
    unpack: UnpackCosts
    pack: PackCosts
    dram: DramCosts
    l1: L1Costs
    multicast: MulticastCosts
    sync: SyncCosts
    dispatch: DispatchCosts
    noc: NocCosts

    def _unpack_data_bytes(self, data_format: str) -> int:
        # a BFP tile's exponents come over the unpacker's own extra read, in parallel with the mantissas
        return self.arch.tile_bytes[data_format] - self.unpack.exponent_bytes.get(data_format, 0)

    def unpack_tile(self, data_format: str) -> float:
        """Cycles for one unpacker to unpack one tile of a format on its own: its data bytes at the
        unpacker's L1 rate (never above what both share), plus the per-tile overhead."""
        rate = min(self.unpack.bytes_per_cycle, self.unpack.both_bytes_per_cycle)
        return self._unpack_data_bytes(data_format) / rate + self.unpack.overhead_per_tile

    def unpack_shared_tile(self, data_format: str) -> float:
        """One tile's share of the L1 read ports both unpackers use: its data bytes at their joint rate,
        plus the per-tile overhead (UNPACR address setup, during which no other UNPACR can start)."""
        return self._unpack_data_bytes(data_format) / self.unpack.both_bytes_per_cycle + self.unpack.overhead_per_tile

    def unpack_matmul(self, held_format: str, held: int, streamed_format: str, streamed: int) -> float:
        """Cycles to unpack one matmul_block call: `held` tiles on one unpacker (the operand LLK holds,
        into SrcB or SrcA) and `streamed` on the other, which run in parallel; each unpacker is bounded
        by its own rate and both together by the L1 ports they share (UNPACR_Regular.md: one unpacker
        64 B/cycle, both at most 80)."""
        return max(held * self.unpack_tile(held_format), streamed * self.unpack_tile(streamed_format),
                   held * self.unpack_shared_tile(held_format) + streamed * self.unpack_shared_tile(streamed_format))

    def matmul_unpack_counts(self, rt: int, ct: int) -> tuple[int, int, int]:
        """One matmul_block call's unpacks as LLK runs it: (held tiles, streamed tiles, refills). LLK
        holds min(rt, ct) tiles of one operand, `held_tiles_per_pass` per pass (one in each bank of its
        source register), and streams max(rt, ct) tiles of the other per pass. A pass that holds two
        tiles fills both banks, so the next pass's unpacks wait for its last product: a refill, one
        held tile's unpack during which neither unpacker nor FPU has work (tt-llk
        llk_unpack_AB_matmul.h, llk_math_matmul.h)."""
        held, rut = min(rt, ct), max(rt, ct)
        per_pass = max(1, self.unpack.held_tiles_per_pass)
        passes = -(-held // per_pass)
        refills = held // per_pass if per_pass > 1 else 0
        return held, passes * rut, refills

    def matmul_tile_cycles(self, math_fidelity: str, fp32_dest_acc: bool) -> float:
        """Math cycles per output tile of a matmul_block call: one pass per fidelity phase plus the
        per-tile overhead, slower with a 32-bit DST."""
        per_tile = self.math.cycles_per_tile_phase * FIDELITY_PHASES[math_fidelity] + self.math.overhead_per_tile
        return per_tile * self.math.fp32_dest_factor if fp32_dest_acc else per_tile

    def pack_tile(self, data_format: str, l1_acc: bool) -> float:
        """Cycles to pack one tile of a format from DST to L1 (L1 accumulation makes each write a read-modify-write)."""
        cycles = self.arch.tile_bytes[data_format] / self.pack.bytes_per_cycle
        return cycles * (self.pack.l1_acc_factor if l1_acc else 1.0)

    def dram_floor_cycles(self, dram_bytes: float) -> float:
        """Cycles the card's DRAM needs for these bytes at its usable bandwidth (no program beats it)."""
        return dram_bytes / (self.dram.card_bytes_per_second * self.dram.card_efficiency) * self.arch.clock_mhz * 1e6

    def dram_bank_read_bytes_per_cycle(self) -> float:
        """What one reader gets from its own DRAM bank (the DRAM-sharded matmul: one reader per bank,
        next to it): the bank's share of the card's usable bandwidth, no more than one core's NoC read
        rate (Saturating_DRAM_bandwidth.md: one reader per bank, placed beside it, reaches the card's
        92 % with no route shared)."""
        share = (self.dram.card_bytes_per_second * self.dram.card_efficiency / self.arch.toolchain.num_dram_banks
                 / (self.arch.clock_mhz * 1e6))
        return min(share, self.dram.read_bytes_per_cycle)

    def dram_write_bytes_per_cycle(self, writers: int) -> float:
        """One core's DRAM write rate when `writers` cores write at once: the cores of a matmul finish an
        out block together (its K-blocks reach them in lockstep) and write it before the next one's
        first K-block, so they share the card's usable bandwidth, never more than one core's own rate."""
        card = self.dram.card_bytes_per_second * self.dram.card_efficiency / (self.arch.clock_mhz * 1e6)
        return min(self.dram.write_bytes_per_cycle, card / max(writers, 1))

    def dram_read_bytes_per_cycle(self, own_bytes: float, readers: list[tuple[float, int]]) -> float:
        """One core's interleaved DRAM read rate while the other readers read too. TT's multicast
        senders read their K-blocks in lockstep (each block waits for the whole line's handshake), so
        the card's DRAM serves them at once: max-min fair, a core reading B bytes gets
        B x card / sum over the readers j of cores_j x min(B_j, B), never more than one core's own rate.
        `readers` is (bytes each core reads, cores) per reading kernel, this core's among them."""
        card = self.dram.card_bytes_per_second * self.dram.card_efficiency / (self.arch.clock_mhz * 1e6)
        shared = sum(cores * min(nbytes, own_bytes) for nbytes, cores in readers)
        if own_bytes <= 0 or shared <= 0:
            return self.dram.read_bytes_per_cycle
        return min(self.dram.read_bytes_per_cycle, own_bytes * card / shared)

    def dram_request_floor_cycles(self, read_requests: float) -> float:
        """Cycles the card's DRAM endpoints need to accept these read requests: one per
        cycles_per_read_request per endpoint whatever the number of issuers (tt-metal #55898), an
        interleaved tensor's requests spread over every bank."""
        return read_requests * self.dram.cycles_per_read_request / self.arch.toolchain.num_dram_banks

    def multicast_cycles(self, nbytes: int, destinations: int) -> float:
        """How long one multicast of nbytes to `destinations` cores occupies its sender: the issue cost of
        one transaction and the payload at the multicast bandwidth. A transaction longer than the NoC's
        burst goes out as several packets, but their issue is not paid again: the bandwidth was measured
        on 64 KB transactions, packets and all, and the issue cost on 64 B ones (docs/reference/costs.md §3.4; the
        One to All Multicast perf plots). The landing latency (`multicast.latency`) is not the
        sender's: it delays the receivers once per pipeline fill, since the sender goes on to its next
        block without waiting for it."""
        return self.multicast_issue(destinations) + nbytes / self.multicast.bandwidth.at(destinations)

    def multicast_issue(self, destinations: int) -> float:
        """Cycles the sender spends issuing one multicast transaction to `destinations` cores, before
        its payload (a semaphore multicast is this alone)."""
        mc = self.multicast
        return mc.issue_cycles + mc.issue_cycles_per_destination * destinations


    def multicast_landing(self, destinations: int) -> float:
        """Cycles from the sender's last issue of a multicast to its landing at the destinations: the
        measured latency of one `latency_bytes` transaction less what the sender already spent on it
        (its issue and its payload at the multicast bandwidth), which `multicast_cycles` charges."""
        mc = self.multicast
        spent = self.multicast_issue(destinations) + mc.latency_bytes / mc.bandwidth.at(destinations)
        return max(0.0, mc.latency.at(destinations) - spent)


def _curve(rows: list[list[float]]) -> Curve:
    return Curve(tuple((float(x), float(y)) for x, y in sorted(rows)))


@cache
def load_costs(arch_name: str) -> Costs:
    """The cost tables of an arch (configs/perf/<arch>.toml), read once per process."""
    raw = config_table(f"perf/{arch_name}.toml")
    mc = dict(raw["multicast"])
    multicast = MulticastCosts(mc["issue_cycles"], mc["issue_cycles_per_destination"], _curve(mc["bandwidth"]),
                               _curve(mc["latency"]), int(mc["latency_bytes"]), mc["semaphore_latency"])
    return Costs(
        arch=load_arch(arch_name),
        math=MathCosts(**raw["math"]),
        unpack=UnpackCosts(raw["unpack"]["bytes_per_cycle"], raw["unpack"]["both_bytes_per_cycle"],
                           raw["unpack"]["overhead_per_tile"],
                           MappingProxyType(dict(raw["unpack"]["exponent_bytes"])),
                           int(raw["unpack"].get("held_tiles_per_pass", 1))),
        pack=PackCosts(**raw["pack"]),
        dram=DramCosts(**raw["dram"]),
        l1=L1Costs(**raw["l1"]),
        multicast=multicast,
        sync=SyncCosts(**raw["sync"]),
        dispatch=DispatchCosts(**raw["dispatch"]),
        noc=NocCosts(raw["noc"]["link_bytes_per_cycle"], tuple(raw["noc"]["size"]),
                     tuple(raw["noc"]["worker_columns"]), tuple(raw["noc"]["worker_rows"])),
    )
