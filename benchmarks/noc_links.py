"""Diagnostic, not part of the model: does NoC link sharing bind the K loop's readers?

For every row pair TT published (its hand-tuned and its automatic program), this prints per reading
or multicasting kernel the cycles the busiest NoC link on its routes needs for every in-loop byte routed
over it, beside the cycles the model already gives that kernel for its reads and multicasts.

A NoC link carries one flit per cycle (Wormhole 32 B, Blackhole 64 B; configs/perf/<arch>.toml
[noc]). A read's data returns from the DRAM endpoint to the reader over the reader's NoC, routed in
dimension order on the torus: NoC 0 east then south, NoC 1 north then west (tt-npe's route()). A
multicast is the union of those routes to its destinations. Where the readers of one grid column
(TT's in0 senders) or row (the in1 senders) read at the same time, their returns converge on the
same links, and a sender can move its bytes no faster than the busiest link of its routes serves
every byte routed over it. The in-loop traffic is counted: DRAM reads and the input multicasts;
output writes come after each out block's K loop and are left out.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kgen.core.costs import NocCosts, load_costs  # noqa: E402
from kgen.gen.ir import Affine, Kernel, Program, RuntimeArg, counted  # noqa: E402

from kgen.proof.write_share import Coord, Link, route  # noqa: E402  (the one router: the model's too)


def _value(arg: object, core: Coord) -> int:
    if isinstance(arg, RuntimeArg) and isinstance(arg.coord, Affine):
        return arg.coord.eval({"core_x": core[0], "core_y": core[1]})
    return int(arg)  # type: ignore[arg-type]


def _mcast_routes(kernel: Kernel, core: Coord, noc: NocCosts) -> Iterable[tuple[set[Link], float]]:
    """Each multicast of the kernel on this core: the links of its tree and the bytes it sends."""
    src = noc.physical(core)
    for o, n in counted(kernel.body):
        if o.kind not in ("mcast_cb", "mcast_shard"):
            continue
        xs = sorted((_value(o["start_x"], core), _value(o["end_x"], core)))
        ys = sorted((_value(o["start_y"], core), _value(o["end_y"], core)))
        tree: set[Link] = set()
        for x in range(xs[0], xs[1] + 1):
            for y in range(ys[0], ys[1] + 1):
                if (x, y) != core:
                    tree.update(route(kernel.noc or 0, src, noc.physical((x, y)), noc.size))
        yield tree, n * float(o["bytes"])


def link_bound_cycles(program: Program, grid: Coord, read_bytes: Mapping[str, float], noc: NocCosts,
                      banks: tuple[Coord, ...]) -> dict[str, float]:
    """Per data-movement kernel: the cycles its busiest link needs for all the program's in-loop
    bytes routed over it (0 where the kernel reads nothing from DRAM and multicasts nothing).
    `read_bytes` is each kernel's DRAM read bytes on one core, interleaved evenly over `banks`."""
    load: dict[Link, float] = defaultdict(float)
    used: dict[tuple[str, Coord], set[Link]] = defaultdict(set)
    for k in program.kernels:
        if k.noc is None:
            continue
        for core in k.cores.cores():
            if core[0] >= grid[0] or core[1] >= grid[1]:
                continue
            reads = read_bytes.get(k.name, 0.0)
            if reads:
                for bank in banks:
                    links = route(k.noc, bank, noc.physical(core), noc.size)
                    for link in links:
                        load[link] += reads / len(banks)
                    used[(k.name, core)].update(links)
            for tree, nbytes in _mcast_routes(k, core, noc):
                for link in tree:
                    load[link] += nbytes
                used[(k.name, core)].update(tree)
    bound: dict[str, float] = defaultdict(float)
    for (name, _), links in used.items():
        busiest = max((load[link] for link in links), default=0.0)
        bound[name] = max(bound[name], busiest / noc.link_bytes_per_cycle)
    return dict(bound)


def main() -> int:
    import perf_model as pm
    from kgen.perf import model

    for card in ("n150", "p150", "p150_11x10"):
        worst = 0.0
        for _, artifacts in pm.programs(card) + pm.oob_programs(card)[0]:
            program = artifacts.verified
            costs = load_costs(artifacts.plan.arch.name)
            cost_of = {k.name: model._KernelCost(program, k, costs, {}) for k in program.kernels}
            reads = {name: float(kc.dram_read_bytes) for name, kc in cost_of.items()}
            bound = link_bound_cycles(program, artifacts.plan.grid, reads, costs.noc, costs.arch.dram_bank_endpoints)
            for name, cycles in bound.items():
                kc = cost_of[name]
                busy = kc.busy[kc.kernel.processor]
                moving = busy.get("dram", 0.0) + busy.get("noc", 0.0) - kc.write_cycles
                if moving and not kc.relay:
                    worst = max(worst, cycles / moving)
        print(f"{card:11s} busiest link / modelled read+multicast cycles, worst reader or sender: {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
