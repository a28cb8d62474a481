"""How a program's output writes share the card and its NoC links, for kgen perf (kgen.perf.model) and
the emulator's cost table (kgen.proof.emulate) alike.

The cores of a matmul finish an out block together (its K-blocks reach them in lockstep) and write it
at once. Their writes share two things:

- the card's usable DRAM bandwidth (Costs.dram_write_bytes_per_cycle);
- the NoC links into the DRAM columns. A link carries one flit per cycle and direction (Wormhole 32 B,
  Blackhole 64 B; configs/perf [noc]). A write goes from the writing core to its bank's endpoint over
  the writer's NoC, routed in dimension order on the torus: NoC 0 east then south, NoC 1 north then
  west (tt-npe's `npeDeviceModel::route`); an interleaved tensor's pages spread evenly over the banks
  (configs/arch [dram_banks]). The busiest link on a writer's routes serves every byte routed over it,
  and the writers finish together no sooner than it does.

Where the writes share either, a write barrier's wait overlaps the other cores' bytes on the shared
path: a write call takes the longer of its share of that path and its own rate plus the barrier's
latency, not their sum.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import lru_cache
from typing import Iterable

from kgen.core.costs import Costs, NocCosts
from kgen.gen.ir import Program, counted
from kgen.gen.optable import OPS, Cost

Coord = tuple[int, int]               # NoC 0 x, y
Link = tuple[int, int, str]           # the link leaving (x, y) in a direction
Writer = tuple[int, list[Coord], float]   # a writing kernel: its NoC, its cores, the bytes each writes


def route(noc: int, src: Coord, dst: Coord, size: Coord) -> list[Link]:
    """The links a packet crosses from src to dst (dimension order, wrapping on the torus)."""
    (x, y), (ex, ey), (cols, rows) = src, dst, size
    links: list[Link] = []
    if noc == 0:
        while x != ex:
            links.append((x, y, "E"))
            x = (x + 1) % cols
        while y != ey:
            links.append((x, y, "S"))
            y = (y + 1) % rows
    else:
        while y != ey:
            links.append((x, y, "N"))
            y = (y - 1) % rows
        while x != ex:
            links.append((x, y, "W"))
            x = (x - 1) % cols
    return links


@lru_cache(maxsize=4096)
def _bank_links(noc_index: int, core: Coord, banks: tuple[Coord, ...], size: Coord) -> tuple[tuple[Link, int], ...]:
    """Each link on a core's routes to the banks, with how many of those routes cross it."""
    count: Counter[Link] = Counter()
    for bank in banks:
        count.update(route(noc_index, core, bank, size))
    return tuple(count.items())


def link_rate(writers: Iterable[Writer], noc: NocCosts, banks: tuple[Coord, ...]) -> float | None:
    """One core's write rate (B/cycle) with every writer writing at once and the busiest NoC link on the
    routes the limit: the slowest writer's bytes over the time its busiest link needs for every byte
    routed over it. None where nothing is written or no bank is known."""
    if not banks:
        return None
    # a link's load in bytes times banks: whole numbers while the bytes are, so exact in any order
    load: dict[Link, float] = defaultdict(float)
    used: list[tuple[float, tuple[tuple[Link, int], ...]]] = []
    for noc_index, cores, nbytes in writers:
        for core in cores:
            links = _bank_links(noc_index, noc.physical(core), banks, noc.size)
            for link, crossings in links:
                load[link] += nbytes * crossings
            used.append((nbytes, links))
    rates = [nbytes * len(banks) * noc.link_bytes_per_cycle / max(load[link] for link, _ in links)
             for nbytes, links in used if nbytes > 0 and links]
    return min(rates) if rates else None


def shared_rate(writers: list[Writer], costs: Costs) -> float:
    """One core's DRAM write rate: the card's usable bandwidth over the writing cores, never more than
    one core's own rate, nor than the busiest NoC link on the writers' routes serves."""
    rate = costs.dram_write_bytes_per_cycle(sum(len(cores) for _, cores, _ in writers))
    links = link_rate(writers, costs.noc, costs.arch.dram_bank_endpoints) if writers else None
    return rate if links is None else min(rate, links)


def barrier_wait(costs: Costs, slack: float) -> float:
    """What a barrier after DRAM writes waits beyond them, where those writes took `slack` cycles more
    than at one core's own rate (the other cores' bytes on the shared path): the latency less that."""
    return max(0.0, costs.dram.write_latency - slack)


def output_writers(program: Program) -> list[tuple[Writer, int]]:
    """Every kernel that writes the DRAM-interleaved output: (its NoC, its cores in the grid, the bytes
    one core writes) and the write barriers one core waits on."""
    out = []
    for k in program.kernels:
        pages = {t.name: t.page_bytes for t in k.tensors}
        nbytes, barriers = 0.0, 0
        for o, n in counted(k.body):
            cost = OPS[o.kind].cost
            if cost == Cost.TILE_WRITE:
                nbytes += n * int(o["rows"]) * int(o["cols"]) * pages[o["tensor"]]
            elif cost == Cost.ROW_WRITE:
                nbytes += n * int(o["rows"]) * int(o["row_bytes"])
            elif cost == Cost.WRITE_BARRIER and nbytes:
                barriers += n
        if nbytes:
            cores = [c for c in k.cores.cores() if c[0] < program.grid[0] and c[1] < program.grid[1]]
            out.append(((k.noc or 0, cores, nbytes), barriers))
    return out


def write_terms(program: Program, costs: Costs) -> tuple[float, float]:
    """The output's DRAM write rate and the mean wait of a write barrier beyond the writes, as kgen perf
    prices the program's writer (the emulator's `dram_write_bytes_per_cycle` and `dram_write_latency`)."""
    writers = output_writers(program)
    rate = shared_rate([w for w, _ in writers], costs)
    waited = [(nbytes / barriers, barriers) for (_, _, nbytes), barriers in writers if barriers]
    if not waited:
        return rate, costs.dram.write_latency
    per_barrier, _ = max(waited, key=lambda t: t[1])
    slack = per_barrier / rate - per_barrier / costs.dram.write_bytes_per_cycle
    return rate, barrier_wait(costs, slack)
