"""`kgen tune`: the fastest legal configuration of a spec's matmul under the performance model.

The search (issue #16):

- **Space.** A candidate fixes the grid, per_core M x N, out_block, in0_block_w, out_subblock, the
  accumulation request (compute.packer_l1_acc) and the dataflow; with `allow_precision` also the
  math fidelity and fp32 dest accumulation. Shape, dtypes, batch, fusion and untilize stay the
  spec's. `space="auto"` searches what the spec leaves open: the values written `auto` (grid and
  block fields), the dataflow when the spec has no `dataflow =` line, and the accumulation policy
  when packer_l1_acc comes from TTNN's defaults rather than the spec or its preset. `space="all"`
  searches every one of them whatever the spec says.
- **Legality.** Values are drawn from the divisor structure of the problem (a value that does not
  divide never plans), and the planner (`kgen.gen.plan.plan`) is the only filter: a candidate is
  legal when it plans. No rule is restated here. The tensors' placement is the spec's `memory { }`
  (a `placement` argument is written into it first), so with a sharded in0 or output every
  candidate carries it and must pass the planner's shard rules, is predicted as the sharded program
  kgen builds, and is written out (`spec_text`) with it: what `kgen check` accepts.
- **Cost.** `kgen.perf.model.predict` over the lowered IR (the IR is verified for the winners, by
  `--verify`, not for every candidate).
- **Pruning.** Candidates are grouped by (per_core, fidelity, fp32 dest); each group has a lower
  bound on the model's time: its compute stage (the slower of the matrix engine and the unpacker)
  over per_core_M x per_core_N x Kt tile products at the costs of configs/perf, which no pipeline
  in the model beats (`lower_bound_cycles`). Groups are taken in the order of their bound and a
  group whose bound is no better than the K-th best time found so far is skipped whole: the result
  is the exhaustive one. A prediction below its bound (a model whose structure changed) makes the
  search run again without pruning. A group whose per_core the planner rejects (too many cores
  along an axis) is rejected by one plan() call.
- **Padded per_core** (`padded=True`, the default): per_core values that do not divide the tiles,
  for each count of cores along an axis the smallest per_core that covers the tiles: the planner
  pads the last row/column of cores as TT-Metal's padding kernels do (issue #17), and kgen builds,
  emulates and port-checks them. `padded=False` keeps to the divisors of the tiles.
- **Sampling.** When the space holds more than `budget` candidates, `budget` of them are drawn
  with `random.Random(seed)`: the same seed gives the same winner.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from kgen.core.arch import load_arch
from kgen.core.costs import FIDELITY_PHASES, load_costs
from kgen.core.errors import KgenError
from kgen.core.resources import data_dir
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW, Placement
from kgen.gen.plan import Plan, PlanError, dst_capacity, plan as make_plan, round_up_tiles
from kgen.gen import dataflow as dataflows
from kgen.gen.spec import BlockSpec, MatmulSpec, MemorySpec

FIDELITIES = ("LoFi", "HiFi2", "HiFi3", "HiFi4")
DATAFLOWS = dataflows.NAMES
ONE_D = dataflows.ONE_D   # the 1D dataflows and the per_core axis that covers its tiles
SPACES = ("auto", "all")
DEFAULT_BUDGET = 1_000_000


class TuneError(KgenError):
    """Bad tune input (a flag value, a spec with nothing legal)."""


@dataclass(frozen=True, order=True)
class Candidate:
    """One point of the search space: every value the search may change."""

    grid: tuple[int, int]            # the grid written into the spec (x, y)
    per_core: tuple[int, int]        # M x N tiles
    out_block: tuple[int, int]       # h x w tiles
    in0_block_w: int
    out_subblock: tuple[int, int]    # h x w tiles
    packer_l1_acc: bool              # the request; the planner decides the policy
    dataflow: str
    math_fidelity: str
    fp32_dest_acc: bool
    memory: MemorySpec = MemorySpec()  # where the tensors live: not searched, but part of the program

    def key(self) -> str:
        """Canonical text of the config: the database's per-target key."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_key(text: str) -> "Candidate":
        d = json.loads(text)
        return Candidate(grid=tuple(d["grid"]), per_core=tuple(d["per_core"]), out_block=tuple(d["out_block"]),
                         in0_block_w=d["in0_block_w"], out_subblock=tuple(d["out_subblock"]),
                         packer_l1_acc=d["packer_l1_acc"], dataflow=d["dataflow"],
                         math_fidelity=d["math_fidelity"], fp32_dest_acc=d["fp32_dest_acc"],
                         memory=MemorySpec(**d["memory"]) if "memory" in d else MemorySpec())

    def padded(self, spec: MatmulSpec) -> bool:
        """per_core does not divide the tiles: the last row/column of cores gets TT's padded last block."""
        mt, nt, _ = tiles(spec)
        return mt % self.per_core[0] != 0 or nt % self.per_core[1] != 0

    def apply(self, spec: MatmulSpec) -> MatmulSpec:
        """The spec with this candidate's values (a padded per_core is the planner's to pad)."""
        compute = replace(spec.compute, packer_l1_acc=self.packer_l1_acc, math_fidelity=self.math_fidelity,
                          fp32_dest_acc=self.fp32_dest_acc)
        block = BlockSpec(in0_block_w=self.in0_block_w, out_subblock=self.out_subblock, per_core=self.per_core,
                          out_block=self.out_block)
        return replace(spec, grid=self.grid, dataflow=self.dataflow, block=block, compute=compute, variant=None,
                       memory=self.memory)

    def short(self, policy: str | None = None) -> str:
        """One line; `policy` is the planner's (spill_reload, packer_l1_acc, dst_only) where it is known,
        else the request is shown (l1acc on/off: with one K-block, neither spills)."""
        accumulation = policy or ("l1acc" if self.packer_l1_acc else "l1acc off")
        return (f"grid {self.grid[0]}x{self.grid[1]} per_core {self.per_core[0]}x{self.per_core[1]} "
                f"block {self.out_block[0]}x{self.out_block[1]} w {self.in0_block_w} "
                f"sb {self.out_subblock[0]}x{self.out_subblock[1]} {accumulation} "
                f"{self.dataflow} {self.math_fidelity}{' fp32' if self.fp32_dest_acc else ''}"
                + (f" memory in0={self.memory.in0} in1={self.memory.in1} out={self.memory.out}"
                   if self.memory.sharded else ""))


def candidate_of(p: Plan) -> Candidate:
    """The candidate a plan realises (TT's auto choice, the spec as written)."""
    return Candidate(grid=p.grid_requested, per_core=(p.per_core_m, p.per_core_n),
                     out_block=(p.out_block_h, p.out_block_w), in0_block_w=p.in0_block_w,
                     out_subblock=(p.out_subblock_h, p.out_subblock_w), packer_l1_acc=p.compute.packer_l1_acc,
                     dataflow=p.spec.dataflow, math_fidelity=p.compute.math_fidelity,
                     fp32_dest_acc=p.compute.fp32_dest_acc, memory=p.spec.memory)


@dataclass(frozen=True)
class Scored:
    """A legal candidate and its prediction."""

    candidate: Candidate
    microseconds: float
    cycles: float
    tflops: float
    utilization: float
    bottleneck: str
    policy: str
    reused: bool = False             # taken from the database, not predicted in this run


@dataclass(frozen=True)
class Space:
    """Which values the search varies, and the fixed ones."""

    mode: str
    searched: tuple[str, ...]        # names of the searched fields
    fixed_grid: tuple[int, int] | None
    fixed: Mapping[str, object]      # field -> the spec's value for fields not searched
    padded: bool                     # also per_core values that do not divide (TT's padded last block)


@dataclass
class SearchStats:
    candidates: int = 0              # in the (possibly sampled) space
    space_size: int = 0              # before sampling
    sampled: bool = False
    planned: int = 0                 # plan() calls on candidates
    illegal: int = 0                 # rejected by the planner
    duplicates: int = 0              # l1acc requested where the planner takes spill anyway
    predicted: int = 0               # lowered and predicted in this run
    reused: int = 0                  # predictions from the database
    pruned: int = 0                  # skipped by the lower bound
    groups: int = 0
    groups_pruned: int = 0
    groups_illegal: int = 0
    seconds: float = 0.0
    bound_violations: int = 0        # predictions below their group's bound (a model change; the search says so)

    @property
    def rate(self) -> float:
        """Candidates decided (planned, predicted or pruned) per second."""
        return (self.planned + self.pruned) / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class TuneResult:
    spec: MatmulSpec
    space: Space
    ranked: tuple[Scored, ...]       # best first (top K, or every legal candidate with keep_all)
    stats: SearchStats
    outcomes: tuple = field(default=(), repr=False)   # every candidate evaluated in this run (Outcome)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def tiles(spec: MatmulSpec) -> tuple[int, int, int]:
    """Mt, Nt, Kt as the planner counts them: a shape short of whole tiles is padded up (ttnn's tilize)."""
    return spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)


def search_space(spec: MatmulSpec, mode: str = "auto", allow_precision: bool = False,
                 padded: bool = True, keep: Iterable[str] = ()) -> Space:
    """The searched and fixed fields; `keep` names fields held at the spec's value whatever the mode
    (e.g. the dataflow where a placement only suits one)."""
    keep = set(keep)
    if mode not in SPACES:
        raise TuneError(f"--space {mode!r}: expected one of {', '.join(SPACES)}")
    b = spec.block
    searched: list[str] = []
    fixed: dict[str, object] = {}

    def decide(name: str, open_: bool, value: object) -> None:
        if name not in keep and (mode == "all" or open_):
            searched.append(name)
        else:
            fixed[name] = value

    decide("grid", spec.grid is None, spec.grid)
    decide("per_core", b.per_core is None, b.per_core)
    decide("out_block", b.out_block is None, b.out_block)
    decide("in0_block_w", b.in0_block_w is None, b.in0_block_w)
    decide("out_subblock", b.out_subblock is None, b.out_subblock)
    decide("dataflow", "dataflow" not in spec.spans, spec.dataflow)
    decide("packer_l1_acc", _from_ttnn_defaults(spec, "compute.packer_l1_acc"), spec.compute.packer_l1_acc)
    if allow_precision:
        searched += ["math_fidelity", "fp32_dest_acc"]
    else:
        fixed["math_fidelity"] = spec.compute.math_fidelity
        fixed["fp32_dest_acc"] = spec.compute.fp32_dest_acc
    return Space(mode, tuple(searched), None if "grid" in searched else spec.grid, fixed, padded)


def _from_ttnn_defaults(spec: MatmulSpec, key: str) -> bool:
    """Whether a compute value comes from TTNN's defaults (configs/compute/ttnn_default.kspec), not
    from the spec or a preset it names."""
    from kgen.gen.spec import DEFAULT_COMPUTE

    span = spec.spans.get(key)
    return span is None or Path(span.path).name == f"{DEFAULT_COMPUTE}.kspec"


# `placement` values (kgen.perf.model.predict's, as benchmarks/gemm_rows.placement writes them) and
# the memory {} value that builds each: TT's benchmark rows block-shard in0 and the output
_MEMORY_OF = {("in0", "dram"): Placement.DRAM, ("in0", "sharded"): Placement.L1_BLOCK_SHARDED,
              **{("in0", p.value): p for p in (Placement.L1_BLOCK_SHARDED, Placement.L1_HEIGHT_SHARDED)},
              ("in1", "dram"): Placement.DRAM, ("in1", "l1"): Placement.L1,
              ("out", "dram"): Placement.DRAM, ("out", "sharded"): Placement.L1_BLOCK_SHARDED,
              ("out", Placement.L1_BLOCK_SHARDED.value): Placement.L1_BLOCK_SHARDED}


def with_placement(spec: MatmulSpec, placement: Mapping[str, str] | None) -> MatmulSpec:
    """The spec with its tensors where `placement` puts them, as its `memory { }` (the planner's
    shard rules then apply to every candidate). None or {} leaves the spec's own memory."""
    if not placement:
        return spec
    values = {"in0": spec.memory.in0, "in1": spec.memory.in1, "out": spec.memory.out}
    for tensor, where in placement.items():
        memory = _MEMORY_OF.get((tensor, where))
        if memory is None:
            known = ", ".join(f"{t}={w}" for t, w in _MEMORY_OF)
            raise TuneError(f"placement {tensor}={where}: kgen builds no such program; placements: {known}")
        values[tensor] = memory
    return replace(spec, memory=replace(spec.memory, **values))


@dataclass(frozen=True)
class _Group:
    """Candidates sharing per_core, fidelity and fp32 dest: one lower bound. Members are made only
    when the group is searched (most groups are pruned whole)."""

    grid: tuple[int, int]
    per_core: tuple[int, int]
    math_fidelity: str
    fp32_dest_acc: bool
    bound_cycles: float
    blocks: tuple[tuple[tuple[int, int], tuple[tuple[int, int], ...]], ...]   # (out_block, its subblocks)
    widths: tuple[int, ...]
    policies: tuple[bool, ...]
    dataflows: tuple[str, ...]
    memory: MemorySpec = MemorySpec()
    keep: float = 1.0                # sampling: the share of members kept
    seed: int = 0

    @property
    def size(self) -> int:
        return sum(len(subs) for _, subs in self.blocks) * len(self.widths) * len(self.policies) * len(self.dataflows)

    def first(self) -> Candidate:
        ob, subs = self.blocks[0]
        return Candidate(self.grid, self.per_core, ob, self.widths[0], subs[0], self.policies[0], self.dataflows[0],
                         self.math_fidelity, self.fp32_dest_acc, self.memory)

    def members(self) -> Iterator[Candidate]:
        rng = random.Random(f"{self.seed}:{self.per_core}:{self.math_fidelity}:{self.fp32_dest_acc}") \
            if self.keep < 1.0 else None
        for ob, subs in self.blocks:
            for w in self.widths:
                for sb in subs:
                    for acc in self.policies:
                        for df in self.dataflows:
                            if rng is not None and rng.random() >= self.keep:
                                continue
                            yield Candidate(self.grid, self.per_core, ob, w, sb, acc, df, self.math_fidelity,
                                            self.fp32_dest_acc, self.memory)


def lower_bound_cycles(arch_name: str, per_core: tuple[int, int], kt: int, fidelity: str,
                       fp32_dest_acc: bool, in0_format: str = "Float16_b", in1_format: str = "Float16_b") -> float:
    """Cycles no plan with this per-core block can beat in the model: its compute stage (the slower
    of unpacker and matrix engine, tile by tile) over per_core_M x per_core_N x Kt tile products.
    The matrix engine costs each product cycles per phase x phases plus the per-tile issue overhead
    (times the fp32 dest factor); the unpacker streams at least one operand tile per product, at the
    cheaper operand's rate (configs/perf). The model's core time, fills and drains included, is at
    least the compute stage's total over the K-blocks, which is at least this."""
    costs = load_costs(arch_name)
    m = costs.math
    per_tile = m.cycles_per_tile_phase * FIDELITY_PHASES[fidelity] + m.overhead_per_tile
    if fp32_dest_acc:
        per_tile *= m.fp32_dest_factor
    unpack = min(costs.unpack_tile(in0_format), costs.unpack_tile(in1_format))
    return per_core[0] * per_core[1] * kt * max(per_tile, unpack)


def _values(space: Space, name: str, options: Iterable) -> list:
    return list(options) if name in space.searched else [space.fixed[name]]


def _groups(spec: MatmulSpec, space: Space) -> list[_Group]:
    """Every group of the space with its lower bound."""
    arch = load_arch(spec.arch)
    mt, nt, kt = tiles(spec)
    fidelities = _values(space, "math_fidelity", FIDELITIES)
    fp32s = _values(space, "fp32_dest_acc", (False, True))
    dataflows = tuple(_values(space, "dataflow", DATAFLOWS))
    policies = tuple(_values(space, "packer_l1_acc", (True, False)))
    if "per_core" in space.searched and space.padded:
        # for each count of cores along an axis, the smallest per_core covering the tiles: every
        # divisor is one of them, the rest pad the last row/column of cores as TT does
        gx, gy = space.fixed_grid or arch.worker_grid
        per_cores = [(m, n) for m in sorted({-(-mt // r) for r in range(1, min(gy, mt) + 1)})
                     for n in sorted({-(-nt // c) for c in range(1, min(gx, nt) + 1)})]
    elif "per_core" in space.searched:
        per_cores = [(m, n) for m in _divisors(mt) for n in _divisors(nt)]
    else:
        per_cores = [space.fixed["per_core"]]
    widths = tuple(_values(space, "in0_block_w", _divisors(kt)))
    groups: list[_Group] = []
    for fidelity in fidelities:
        for fp32 in fp32s:
            # an enumeration bound only (the planner's own function); the planner decides
            capacity = dst_capacity(arch, replace(spec.compute, fp32_dest_acc=fp32))
            for pc in per_cores:
                if space.fixed_grid is not None:
                    grid = space.fixed_grid
                else:
                    grid = (-(-nt // pc[1]), -(-mt // pc[0]))      # the cores with work
                    if spec.transpose_mcast:                      # M blocks along x (2D factory)
                        grid = grid[::-1]
                # the 2D and reuse dataflows share the grid of the cores with work; a 1D dataflow applies
                # when per_core covers its multicast operand's axis (TT's num_blocks_y or _x == 1) and
                # takes the compute grid whose first cores, row-major, hold the blocks (the planner's
                # _plan_1d), here the fewest whole rows of the arch's grid that hold them
                layouts = [(grid, tuple(d for d in dataflows if d not in ONE_D))]
                for df, axis in ONE_D.items():
                    if df in dataflows and not spec.transpose_mcast and pc[axis] >= (mt, nt)[axis]:
                        blocks_1d = -(-(nt, mt)[axis] // pc[1 - axis])
                        cols = min(blocks_1d, arch.worker_grid[0])
                        layouts.append((space.fixed_grid or (cols, -(-blocks_1d // cols)), (df,)))
                if "out_block" in space.searched:
                    obs = [(h, w) for h in _divisors(pc[0]) for w in _divisors(pc[1])]
                else:
                    obs = [space.fixed["out_block"]]
                blocks = []
                for ob in obs:
                    if "out_subblock" in space.searched:
                        subs = tuple((h, w) for h in _divisors(ob[0]) for w in _divisors(ob[1]) if h * w <= capacity)
                    else:
                        subs = (space.fixed["out_subblock"],)
                    if subs:
                        blocks.append((ob, subs))
                if not blocks:
                    continue
                bound = lower_bound_cycles(spec.arch, pc, kt, fidelity, fp32, DTYPE_TO_FORMAT[spec.dtype_in0],
                                           DTYPE_TO_FORMAT[spec.dtype_in1])
                groups.extend(_Group(g, pc, fidelity, fp32, bound, tuple(blocks), widths, policies, dfs, spec.memory)
                              for g, dfs in layouts if dfs)
    return groups


def _group_rejected(spec: MatmulSpec, g: _Group) -> str | None:
    """The planner's verdict on a group's per_core and grid, from one plan() of its first member
    with the block values below per_core left to the planner: a per_core or grid rule rejects the
    whole group. Any other error leaves the members to be planned one by one."""
    c = g.first()
    probe = replace(c.apply(spec), block=BlockSpec(per_core=c.per_core))
    try:
        make_plan(probe)
    except PlanError as exc:
        # rules of per_core and the grid alone (the shard rules among them: whole shards, in0's
        # shard width over the cores along N); the rest depend on the block values
        if exc.rule.startswith(("num_blocks_", "grid within", "Mt %", "Nt %", "kgen: sharded tensors in whole shards",
                                "kgen: in0's shard grid")):
            return exc.rule
    return None


@dataclass(frozen=True)
class Outcome:
    """What evaluating one candidate gave: a prediction, or the planner's rejection."""

    candidate: Candidate
    status: str                      # predicted | illegal | duplicate
    scored: Scored | None = None
    error: str = ""


_WORKER: dict[str, object] = {}


def _worker_init(spec: MatmulSpec) -> None:
    from kgen.core.interrupts import worker_signals

    worker_signals()          # Ctrl-C is the parent's: no "Process ForkPoolWorker" traceback per worker
    _WORKER["spec"] = spec


def _evaluate(spec: MatmulSpec, c: Candidate) -> Outcome:
    """Plan (the legality filter), lower and predict one candidate."""
    from kgen.gen.lower import lower
    from kgen.perf.model import predict

    try:
        p = make_plan(c.apply(spec))
    except PlanError as exc:
        return Outcome(c, "illegal", error=exc.rule)
    if c.packer_l1_acc and not p.l1_acc_enabled:
        # the planner takes the same policy as with the request off: the same kernel, kept once
        return Outcome(c, "duplicate", error=p.policy_reason)
    pr = predict(lower(p))
    return Outcome(c, "predicted",
                   Scored(c, pr.microseconds, pr.cycles, pr.tflops, pr.utilization, pr.bottleneck, p.policy))


def _evaluate_chunk(chunk: list[Candidate]) -> list[Outcome]:
    spec = _WORKER["spec"]
    return [_evaluate(spec, c) for c in chunk]


CHUNK = 128
POOL_MIN_CANDIDATES = 2000       # below this a process pool costs more than it saves


def tune(spec: MatmulSpec, *, space: str = "auto", allow_precision: bool = False, padded: bool = True,
         keep: tuple[str, ...] = (),
         placement: Mapping[str, str] | None = None, top: int = 1, budget: int = DEFAULT_BUDGET, seed: int = 0,
         known: Mapping[str, Outcome] | None = None, progress: Callable[[int, int, Scored | None], None] | None = None,
         prune: bool = True, keep_all: bool = False, jobs: int = 1) -> TuneResult:
    """Search `spec`'s space; return the `top` best legal candidates (best first).

    `known`: candidate key -> Outcome from the database, reused instead of planning again.
    `progress(done, total, best)` is called as candidates are decided (best: the best so far). `prune=False` evaluates every
    candidate (for tests of the bound). `keep_all` returns every legal candidate ranked. `jobs`
    processes evaluate a group's candidates in chunks (fork; the groups stay in bound order).
    `placement` ({"in0": "sharded", "out": "sharded"}, as benchmarks/gemm_rows.placement) is written
    into the spec's memory {} first (`with_placement`); the result's spec is that one."""
    if top < 1:
        raise TuneError(f"--top {top}: expected at least 1")
    # the placement becomes the spec's memory {}: every candidate is planned (the shard rules
    # checked) and predicted as the program kgen builds for it, and is written out with it
    spec = with_placement(spec, placement)
    sp = search_space(spec, space, allow_precision, padded, keep)
    start = time.perf_counter()
    stats = SearchStats()
    groups = _groups(spec, sp)
    stats.space_size = sum(g.size for g in groups)
    if stats.space_size > budget:
        # seeded, reproducible: each member kept with the same probability, from a generator seeded
        # by (seed, group), so a member's fate does not depend on the order of the search
        groups = [replace(g, keep=budget / stats.space_size, seed=seed) for g in groups]
        stats.sampled = True
    stats.candidates = min(stats.space_size, budget)
    stats.groups = len(groups)
    groups.sort(key=lambda g: (g.bound_cycles, g.per_core, FIDELITIES.index(g.math_fidelity), g.fp32_dest_acc,
                               g.dataflows))
    known = known or {}
    best: list[Scored] = []              # sorted, at most `top`
    outcomes: list[Outcome] = []         # evaluated in this run (for the database)
    legal: list[Scored] = []
    done = 0
    pool = None
    if jobs > 1 and stats.candidates >= POOL_MIN_CANDIDATES:
        import multiprocessing
        pool = multiprocessing.get_context("fork").Pool(jobs, _worker_init, (spec,))

    def kth_best() -> float:
        return best[top - 1].cycles if len(best) >= top else float("inf")

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, stats.candidates, best[0] if best else None)

    def take(o: Outcome, bound: float) -> None:
        if o.status == "illegal":
            stats.illegal += 1
        elif o.status == "duplicate":
            stats.duplicates += 1
        elif o.scored is not None:
            if o.scored.cycles < bound * (1 - 1e-9):
                stats.bound_violations += 1
            if keep_all:
                legal.append(o.scored)
            if len(best) < top or _rank_key(o.scored) < _rank_key(best[-1]):
                best.append(o.scored)
                best.sort(key=_rank_key)
                del best[top:]

    try:
        for g in groups:
            if prune and g.bound_cycles >= kth_best():
                stats.pruned += g.size
                stats.groups_pruned += 1
                tick(g.size)
                continue
            if _group_rejected(spec, g):
                stats.groups_illegal += 1
                stats.planned += 1
                stats.illegal += g.size
                tick(g.size)
                continue
            fresh: list[Candidate] = []
            for c in g.members():
                o = known.get(c.key())
                if o is not None:
                    stats.reused += 1
                    take(replace(o, scored=replace(o.scored, reused=True)) if o.scored else o, g.bound_cycles)
                    tick(1)
                else:
                    fresh.append(c)
            chunks = [fresh[i:i + CHUNK] for i in range(0, len(fresh), CHUNK)]
            results = pool.imap(_evaluate_chunk, chunks) if pool else \
                ([_evaluate(spec, c) for c in chunk] for chunk in chunks)
            for chunk_outcomes in results:
                for o in chunk_outcomes:
                    stats.planned += 1
                    stats.predicted += o.status == "predicted"
                    outcomes.append(o)
                    take(o, g.bound_cycles)
                tick(len(chunk_outcomes))
    except BaseException:
        if pool is not None:
            pool.terminate()            # an interrupt stops the workers now
            pool = None
        raise
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    if stats.bound_violations and prune:
        # the lower bound no longer holds for the model (its constants changed shape): search again
        # without it, so the answer stays exhaustive
        return tune(spec, space=space, allow_precision=allow_precision, padded=padded, keep=keep, top=top, budget=budget,
                    seed=seed, known=known, progress=progress, prune=False, keep_all=keep_all, jobs=jobs)
    stats.seconds = time.perf_counter() - start
    ranked = tuple(sorted(legal, key=_rank_key)) if keep_all else tuple(best)
    return TuneResult(spec, sp, ranked, stats, tuple(outcomes))


def _rank_key(s: Scored) -> tuple:
    """Fastest first; at equal time the more precise (higher fidelity, fp32 dest), then by the
    candidate itself, so equal times rank reproducibly."""
    c = s.candidate
    return (round(s.cycles, 6), -FIDELITY_PHASES[c.math_fidelity], -c.fp32_dest_acc, c)


# ----------------------------------------------------------------------------------------------
# the winner as a spec
# ----------------------------------------------------------------------------------------------

def tuned_spec(spec: MatmulSpec, c: Candidate) -> MatmulSpec:
    """`c` applied to `spec`, its compute config named `<spec>_tuned` where the search changed it."""
    tuned = c.apply(spec)
    if tuned.compute != spec.compute:
        tuned = replace(tuned, compute=replace(tuned.compute, preset=f"{spec.name}_tuned"))
    return tuned


def spec_text(spec: MatmulSpec, c: Candidate, note: str = "") -> str:
    """A .kspec that plans exactly as `c` applied to `spec` (kgen.gen.spec_print): every searched
    value written out, the placement as `memory { }`, the compute config in full. The spec's
    variants are not carried over."""
    from kgen.gen.spec_print import format_spec

    return format_spec(tuned_spec(spec, c), comment=f"written by kgen tune{': ' + note if note else ''}")


# ----------------------------------------------------------------------------------------------
# the target a result belongs to, for the database
# ----------------------------------------------------------------------------------------------

def model_digest(arch_name: str | None = None) -> str:
    """What the predictions of this run depend on besides the candidate: every kgen source the
    model path imports and every config file (tunedb.prediction_digest). A stored prediction is
    reused only under the same digest. (One digest for every arch: a change to either card's table
    retires both.)"""
    from kgen.perf.tunedb import prediction_digest

    return prediction_digest()


def target_of(spec: MatmulSpec, placement: Mapping[str, str] | None = None) -> dict[str, object]:
    """The target key fields: arch, shape, dtypes, fidelity and the fixed semantics (the placement
    of the tensors among them), versions, the prediction digest."""
    from kgen import TT_METAL_VERSION, __version__

    spec = with_placement(spec, placement)
    return {
        "arch": spec.arch, "m": spec.m, "n": spec.n, "k": spec.k, "batch": spec.batch,
        "dtype_in0": spec.dtype_in0, "dtype_in1": spec.dtype_in1, "dtype_out": spec.dtype_out,
        "dtype_bias": spec.dtype_bias if spec.fuse_bias else None,
        "fidelity": spec.compute.math_fidelity, "fp32_dest_acc": spec.compute.fp32_dest_acc,
        "fuse_bias": spec.fuse_bias, "activation": spec.activation, "untilize_out": spec.untilize_out,
        "math_approx": spec.compute.math_approx, "dst_full_sync": spec.compute.dst_full_sync,
        "transpose_mcast": spec.transpose_mcast,
        "placement": {"in0": spec.memory.in0, "in1": spec.memory.in1, "out": spec.memory.out,
                      "orientation": spec.memory.orientation},
        "kgen_version": __version__, "tt_metal_version": TT_METAL_VERSION,
        "model": model_digest(spec.arch),
    }


def target_key(target: Mapping[str, object]) -> str:
    return json.dumps(target, sort_keys=True, separators=(",", ":"))


# ----------------------------------------------------------------------------------------------
# verification of the winners: one job per candidate, a pure function of its spec text
# ----------------------------------------------------------------------------------------------

# Exact (bit-level) emulation up to this many multiply-accumulates, float32 (`--numerics fast`)
# beyond: the exact emulator runs ~600 M MAC/s here (README figures), fast ~9x numpy.
EXACT_MAX_MACS = 1 << 28


def verify_numerics(m: int, n: int, k: int, batch: int = 1) -> str:
    return "exact" if batch * m * n * k <= EXACT_MAX_MACS else "fast"


def verify_spec_text(text: str, numerics: str = "auto", seed: int = 0) -> dict:
    """The chain after rendering (kgen/proof/chain.py: build, type-check against the real TT-Metal
    headers, emulate, port-check) on the matmul of a spec text. Returns {"status": passed | failed |
    incomplete, "errors": [...], "kernel_id", "steps": {...}, "seconds"}: incomplete when a check
    could not run here (a missing tool; the errors say which), which is never a pass. Never raises
    for a failing candidate (an exception is an error). Pure in its inputs: Ray ships it to any
    worker."""
    from kgen.gen.pipeline import run
    from kgen.gen.spec import parse_text, resolve
    from kgen.proof.chain import ChainOptions, run_chain

    start = time.perf_counter()
    errors: list[str] = []
    steps: dict[str, object] = {}
    kernel_id = None
    status = "failed"
    try:
        spec = resolve(parse_text(text, "<tune candidate>"))
        artifacts = run(spec, "rendered")          # plan, lower, verify the IR, render
        kernel_id = artifacts.rendered.kernel_id
        mode = numerics if numerics != "auto" else verify_numerics(spec.m, spec.n, spec.k, spec.batch)
        chain = run_chain(artifacts, "portchecked", options=ChainOptions(seed=seed, numerics=mode, parallel=1))
        for step in chain.steps:
            if step.status != "ok":
                errors.append(f"{step.name} {'not run' if step.status == 'skipped' else 'failed'}: {step.detail}")
        steps.update(_step_summaries(chain, mode))
        status = chain.verdict
    except KgenError as exc:
        errors.append(f"{type(exc).__name__}: {getattr(exc, 'message', str(exc))}")
    except Exception as exc:  # noqa: BLE001 - a verification job reports, it does not crash the search
        errors.append(f"{type(exc).__name__}: {exc}")
    return {"status": status, "errors": errors, "kernel_id": kernel_id,
            "steps": steps, "seconds": round(time.perf_counter() - start, 3)}


def _step_summaries(chain, mode: str) -> dict[str, object]:
    """What each step of the chain did, in the form the database keeps (`verify_detail`)."""
    keys = {"built": "build", "typechecked": "typecheck", "emulated": "emulate", "portchecked": "port_check"}
    out: dict[str, object] = {}
    for step in chain.steps:
        if step.status == "skipped":
            out[keys[step.name]] = f"not run: {step.detail}"
        elif step.name == "built":
            out["build"] = "ok"
        elif step.name == "typechecked":
            report = step.value[2]
            out["typecheck"] = f"{len(report.results) - len(report.failures)}/{len(report.results)} kernel builds"
        elif step.name == "emulated":
            emu = step.value
            out["emulate"] = {"numerics": mode, "ok": emu.ok, "status": emu.status, "exact_match": emu.exact_match,
                              "max_abs_err": emu.errors.max_abs_err, "pcc": emu.errors.pcc,
                              "seconds": round(emu.seconds, 3)}
        else:
            out["port_check"] = {"passed": step.value.passed, "failures": list(step.value.failures)}
    return out


def require_ray():
    """The ray module, or exit 2 saying how to get it."""
    try:
        import ray
    except ImportError:
        raise TuneError("--engine ray needs Ray, which is not installed; install it with "
                        "pip install 'kgen[ray]' (or pip install ray), or use --engine local") from None
    return ray


def cluster_runtime_env() -> dict:
    """What a Ray cluster's workers need to import this kgen: an installed kgen ships its package
    (its configs/ and templates/ are inside, kgen/_data); a source checkout ships the checkout's
    kgen/, configs/ and templates/ as the job's working_dir (Ray puts it on the workers' path).
    The C++ toolchain and TT-Metal headers are each node's own (`bash .ci/setup`)."""
    from kgen.core.resources import data_dir

    package = Path(__file__).resolve().parent.parent
    if (package / "_data").is_dir():
        return {"py_modules": [str(package)]}
    root = data_dir("configs").parent
    return {"working_dir": str(root),
            "excludes": [".git", ".hypothesis", ".pytest_cache", "build", "benchmarks", "tests", "examples",
                         "**/__pycache__"]}


class Engine:
    """Runs verification jobs: `local` (in this process, one after another) or `ray`."""

    def __init__(self, name: str = "local", address: str | None = None, workers: int | None = None):
        self.name = name
        if name == "ray":
            ray = require_ray()
            import os
            address = address or os.environ.get("RAY_ADDRESS") or None
            try:
                if not ray.is_initialized():
                    if address:
                        ray.init(address=address, log_to_driver=False, runtime_env=cluster_runtime_env())
                    else:
                        # address="local": a new local Ray of its own, even when a cluster already
                        # runs on this machine (ray.init would join it, and refuse num_cpus)
                        ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                                 log_to_driver=False)
            except Exception as exc:  # noqa: BLE001 - Ray's own connection errors
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise TuneError(f"cannot start or reach {where}: {exc}") from None
            self._ray = ray
            self._remote = ray.remote(verify_spec_text)
        elif name != "local":
            raise TuneError(f"--engine {name!r}: expected local or ray")

    def run(self, texts: list[str], numerics: str = "auto") -> Iterator[tuple[int, dict]]:
        """(index, result) for every text, as results arrive."""
        if self.name == "local":
            for i, t in enumerate(texts):
                yield i, verify_spec_text(t, numerics)
            return
        ray = self._ray
        futures = {self._remote.remote(t, numerics): i for i, t in enumerate(texts)}
        pending = list(futures)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for f in ready:
                yield futures[f], ray.get(f)


# ----------------------------------------------------------------------------------------------
# predicted error (--allow-precision): the golden model on a K-faithful proxy
# ----------------------------------------------------------------------------------------------

PROXY_TILES = 1          # M and N of the proxy, in tiles: the error of one output tile over the full K


@cache
def _proxy_error(arch: str, kt: int, fidelity: str, fp32: bool, l1acc: bool, in0_fmt: str, in1_fmt: str,
                 out_fmt: str, partials_fmt: str, in0_block_w: int) -> float:
    """Max |error| / max |exact| of the golden model (kgen/proof/golden.py, bit-exact to the
    Tensix numerics of tensix-numerics.md) on a 32 x K x 32 proxy with seeded N(0, 1) inputs: the
    same K, formats, fidelity, accumulation path and K-blocking as the candidate, so the rounding of
    every partial sum along K is the candidate's."""
    import numpy as np

    from kgen.proof.golden import golden_matmul
    from kgen.proof.tiles import quantize

    rng = np.random.default_rng(0)
    m = n = PROXY_TILES * TILE_HW
    k = kt * TILE_HW
    a = quantize(rng.standard_normal((m, k)).astype(np.float32), in0_fmt)
    b = quantize(rng.standard_normal((k, n)).astype(np.float32), in1_fmt)
    out = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=l1acc, in0_format=in0_fmt,
                        in1_format=in1_fmt, out_format=out_fmt, partials_format=partials_fmt,
                        in0_block_w=in0_block_w, arch=arch).values
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(out - exact)) / max(np.max(np.abs(exact)), 1e-30))


def predicted_error(spec: MatmulSpec, c: Candidate) -> float:
    p = make_plan(c.apply(spec))
    return _proxy_error(p.arch.name, p.kt, p.compute.math_fidelity, p.compute.fp32_dest_acc, p.l1_acc_enabled,
                        p.in0_format, p.in1_format, p.out_format, p.partials_format, p.in0_block_w)
