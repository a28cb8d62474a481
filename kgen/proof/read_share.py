"""How the kernels that read interleaved DRAM tensors share the card, for kgen perf (kgen.perf.model)
and the emulator's cost table (kgen.proof.emulate) alike.

TT's multicast senders read their K-blocks in lockstep (each block waits for the whole line's
handshake), so the card serves the readers at once, max-min fair:

- its usable bandwidth (Costs.dram_read_bytes_per_cycle): a core reading B bytes gets
  B x card / sum over the reading kernels j of cores_j x min(B_j, B);
- its endpoints' request rate: each of the card's banks accepts one read request per
  `cycles_per_read_request` whatever the number of issuers (tt-metal #55898; Wormhole 6.8, Blackhole
  16.4 cycles), and an interleaved tensor's pages (one request each) spread over every bank, so a core
  issuing R requests waits for sum_j cores_j x min(R_j, R) requests over the banks. On Blackhole's
  8 banks, 23 readers of 16 bfloat4_b tiles a K-block (TT's automatic 1280 x 1664 x 1664 program on a
  p150) need 47 cycles a request, where one core alone issues one per 36.6.

A reader's rate is the lower of the two, as bytes per cycle (its pages are of one size).
"""

from __future__ import annotations

from kgen.core.costs import Costs
from kgen.core.types import Placement
from kgen.gen.ir import Kernel, Program, counted
from kgen.gen.optable import OPS, Cost


def dram_readers(program: Program, elsewhere: frozenset[str] = frozenset()) -> list[tuple[Kernel, int, int]]:
    """Each kernel that reads tensors interleaved in DRAM (its read_tiles ops), with the bytes and the
    pages (requests) one of its cores reads (Program.dram_readers, with the pages counted)."""
    readers = []
    for k in program.kernels:
        pages = {t.name: t.page_bytes for t in k.tensors}
        nbytes = requests = 0
        for o, n in counted(k.body):
            if (OPS[o.kind].cost == Cost.TILE_READ and o["tensor"] not in elsewhere
                    and program.placement(o["tensor"]) == Placement.DRAM):
                tiles = n * OPS[o.kind].work(o).noc_read_tiles
                nbytes += tiles * pages[o["tensor"]]
                requests += tiles
        if nbytes:
            readers.append((k, nbytes, requests))
    return readers


def read_rates(program: Program, costs: Costs, elsewhere: frozenset[str] = frozenset()) -> dict[str, float]:
    """The interleaved DRAM read rate (B/cycle) of every reading kernel, the readers sharing the card's
    bandwidth and its endpoints' request rate max-min fair."""
    readers = dram_readers(program, elsewhere)
    loads = [(nbytes, k.cores.size) for k, nbytes, _ in readers]
    banks = max(1, costs.arch.toolchain.num_dram_banks)
    rates = {}
    for k, nbytes, requests in readers:
        rate = costs.dram_read_bytes_per_cycle(nbytes, loads)
        shared = sum(j.cores.size * min(r, requests) for j, _, r in readers)
        per_request = costs.dram.cycles_per_read_request * shared / (banks * requests)
        rates[k.name] = min(rate, nbytes / requests / per_request)
    return rates
