"""`kgen tune`'s search: the space's candidates in groups, each group's lower bound, the groups in
the order of their bound, and the ranking.

- **Cost.** `kgen.perf.model.predict` over the lowered IR (the IR is verified for the winners, by
  `--verify`, not for every candidate).
- **Pruning.** Candidates are grouped by (per_core, fidelity, fp32 dest); each group has a lower
  bound on the model's time: its compute stage (the slower of the matrix engine and the unpacker)
  over per_core_M x per_core_N x Kt tile products at the costs of configs/perf, which no pipeline
  in the model beats (`kgen.perf.model.lower_bound_cycles`, beside the formula it bounds).
  The estimator is a parameter (`Estimator`): the prediction and its bound. Groups are taken in the order of their bound and a
  group whose bound is no better than the K-th best time found so far is skipped whole: the result
  is the exhaustive one. A prediction below its bound (a model whose structure changed) makes the
  search run again without pruning. A group whose per_core the planner rejects (too many cores
  along an axis) is rejected by one plan() call.
- **Padded per_core** (`padded=True`, the default): per_core values that do not divide the tiles,
  for each count of cores along an axis the smallest per_core that covers the tiles: the planner
  pads the last row/column of cores as TT-Metal's padding kernels do, and kgen builds,
  emulates and port-checks them. `padded=False` keeps to the divisors of the tiles.
- **Sampling.** When the space holds more than `budget` candidates, `budget` of them are drawn
  with `random.Random(seed)`: the same seed gives the same winner.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Iterable, Iterator, Mapping

from kgen.core.arch import load_arch
from kgen.core.costs import FIDELITY_PHASES
from kgen.core.types import DTYPE_TO_FORMAT
from kgen.gen import dataflow as dataflows_registry
from kgen.gen.ir import Program
from kgen.gen.plan import PlanError, dst_capacity, plan as make_plan
from kgen.gen.spec import BlockSpec, MatmulSpec, MemorySpec
from kgen.perf.tune.candidate import Outcome, Scored, TuneConfig, tiles
from kgen.perf.tune.engines import CandidatePool
from kgen.perf.tune.space import (DEFAULT_BUDGET, FIDELITIES, ONE_D, Space, TuneError, _divisors, dataflow_options,
                                  search_space, with_placement)

@dataclass(frozen=True)
class Estimator:
    """What the search ranks candidates by. `predict(program)` prices a candidate's lowered IR (a
    `kgen.perf.model.Prediction`: cycles, microseconds, tflops, utilization, bottleneck);
    `lower_bound(arch, per_core, kt, fidelity, fp32_dest_acc, in0_format, in1_format)` gives cycles
    `predict` never goes below for a group's per-core block, which lets the search skip a group
    whole. Without a lower bound nothing is pruned."""

    predict: Callable[[Program], object]
    lower_bound: Callable[..., float] | None = None


def model_estimator() -> Estimator:
    """The performance model (kgen/perf/model.py) and its lower bound, the search's default."""
    from kgen.perf.model import lower_bound_cycles, predict

    return Estimator(predict, lower_bound_cycles)


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
    inadmissible: int = 0            # fast enough to rank, refused by `admit` (an accuracy target)

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

    def first(self) -> TuneConfig:
        ob, subs = self.blocks[0]
        return TuneConfig(self.grid, self.per_core, ob, self.widths[0], subs[0], self.policies[0], self.dataflows[0],
                         self.math_fidelity, self.fp32_dest_acc, self.memory)

    def members(self) -> Iterator[TuneConfig]:
        rng = random.Random(f"{self.seed}:{self.per_core}:{self.math_fidelity}:{self.fp32_dest_acc}") \
            if self.keep < 1.0 else None
        for ob, subs in self.blocks:
            for w in self.widths:
                for sb in subs:
                    for acc in self.policies:
                        for df in self.dataflows:
                            if rng is not None and rng.random() >= self.keep:
                                continue
                            yield TuneConfig(self.grid, self.per_core, ob, w, sb, acc, df, self.math_fidelity,
                                            self.fp32_dest_acc, self.memory)


def _values(space: Space, name: str, options: Iterable) -> list:
    return list(options) if name in space.searched else [space.fixed[name]]


def _groups(spec: MatmulSpec, space: Space, lower_bound: Callable[..., float] | None) -> list[_Group]:
    """Every group of the space with its lower bound (0 without one)."""
    arch = load_arch(spec.arch)
    mt, nt, kt = tiles(spec)
    fidelities = _values(space, "math_fidelity", FIDELITIES)
    fp32s = _values(space, "fp32_dest_acc", (False, True))
    dataflows = tuple(_values(space, "dataflow", dataflow_options(spec)))
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
    own = _own_layouts(spec, space, dataflows, mt, nt)
    if "per_core" in space.searched:
        per_cores += [pc for _, _, pc in own.values() if pc not in per_cores]
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
                layouts = [(grid, tuple(d for d in dataflows if d not in ONE_D and d not in own))]
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
                bound = 0.0 if lower_bound is None else \
                    lower_bound(spec.arch, pc, kt, fidelity, fp32, DTYPE_TO_FORMAT[spec.dtype_in0],
                                DTYPE_TO_FORMAT[spec.dtype_in1])
                groups.extend(_Group(g, pc, fidelity, fp32, bound, tuple(blocks), widths, policies, dfs, spec.memory)
                              for g, dfs in layouts if dfs)
                groups.extend(_Group(g, pc, fidelity, fp32, bound, tuple(blocks), widths, policies, (df,), memory)
                              for df, (g, memory, own_pc) in own.items() if memory is not None and pc == own_pc)
    return groups


def _own_layouts(spec: MatmulSpec, space: Space, names: tuple[str, ...], mt: int,
                 nt: int) -> dict[str, tuple[tuple[int, int], MemorySpec | None, tuple[int, int]]]:
    """The dataflows that place their own cores and tensors (`places_own_cores`: the DRAM-sharded factory,
    through its `tune_grid`, `tune_memory` and `tune_per_core`): name -> (the grid a candidate names, the placements it
    runs with or None where the factory is not tried on this spec, the one per_core it takes)."""
    own = {}
    for name in names:
        df = dataflows_registry.get(name)
        if df.places_own_cores:
            grid = space.fixed_grid or df.tune_grid(spec)
            own[name] = (grid, df.tune_memory(spec, mt), df.tune_per_core(spec, mt, nt))
    return own


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


def _evaluate(spec: MatmulSpec, c: TuneConfig, estimator: Estimator) -> Outcome:
    """Plan (the legality filter), lower and predict one candidate."""
    from kgen.gen.lower import lower

    try:
        p = make_plan(c.apply(spec))
    except PlanError as exc:
        return Outcome(c, "illegal", error=exc.rule)
    if c.packer_l1_acc and not p.l1_acc_enabled:
        # the planner takes the same policy as with the request off: the same kernel, kept once
        return Outcome(c, "duplicate", error=p.policy_reason)
    pr = estimator.predict(lower(p))
    return Outcome(c, "predicted",
                   Scored(c, pr.microseconds, pr.cycles, pr.tflops, pr.utilization, pr.bottleneck, p.policy))


CHUNK = 128
POOL_MIN_CANDIDATES = 2000       # below this a process pool costs more than it saves


def tune(spec: MatmulSpec, *, space: str = "auto", allow_precision: bool = False, padded: bool = True,
         keep: tuple[str, ...] = (),
         placement: Mapping[str, str] | None = None, top: int = 1, budget: int = DEFAULT_BUDGET, seed: int = 0,
         known: Mapping[str, Outcome] | None = None, progress: Callable[[int, int, Scored | None], None] | None = None,
         prune: bool = True, keep_all: bool = False, jobs: int = 1, estimator: Estimator | None = None,
         admit: Callable[[Scored], bool] | None = None,
         may_admit: Callable[[str, bool, int, bool], bool] | None = None) -> TuneResult:
    """Search `spec`'s space; return the `top` best legal candidates (best first).

    `known`: candidate key -> Outcome from the database, reused instead of planning again.
    `progress(done, total, best)` is called as candidates are decided (best: the best so far). `prune=False` evaluates every
    candidate (for tests of the bound). `keep_all` returns every legal candidate ranked. `jobs`
    processes evaluate a group's candidates in chunks (fork; the groups stay in bound order).
    `placement` ({"in0": "sharded", "out": "sharded"}, as benchmarks/gemm_rows.placement) is written
    into the spec's memory {} first (`with_placement`); the result's spec is that one. `estimator`
    prices the candidates (default: the performance model and its lower bound). `admit(scored)`,
    asked only of a candidate fast enough to enter the `top`, refuses it (an accuracy target): the
    result is then the `top` fastest admitted candidates, still exhaustive, as a group's bound
    holds for its admitted members too. `may_admit(fidelity, fp32_dest_acc, in0_block_w,
    packer_l1_acc)` False says `admit` refuses every candidate with these values: they are neither
    planned nor predicted (nor a group with no other)."""
    estimator = estimator or model_estimator()
    if top < 1:
        raise TuneError(f"--top {top}: expected at least 1")
    # the placement becomes the spec's memory {}: every candidate is planned (the shard rules
    # checked) and predicted as the program kgen builds for it, and is written out with it
    spec = with_placement(spec, placement)
    sp = search_space(spec, space, allow_precision, padded, keep)
    start = time.perf_counter()
    stats = SearchStats()
    groups = _search_order(spec, sp, estimator, budget, seed, stats)
    known = known or {}
    tally = _Tally(top, keep_all, stats, admit)
    kth_best = tally.kth_best
    outcomes: list[Outcome] = []         # evaluated in this run (for the database)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, stats.candidates, tally.best[0] if tally.best else None)

    with CandidatePool(spec, partial(_evaluate, estimator=estimator), jobs if stats.candidates >= POOL_MIN_CANDIDATES else 1) as pool:
        for g in groups:
            if _skipped(spec, g, prune and g.bound_cycles >= kth_best(), may_admit, stats):
                tick(g.size)
                continue
            fresh, reused = _split_known(g, known, may_admit)
            stats.inadmissible += g.size - len(fresh) - len(reused)
            stats.reused += len(reused)
            tally.take_all(reused, g.bound_cycles)
            tick(len(reused))
            chunks = [fresh[i:i + CHUNK] for i in range(0, len(fresh), CHUNK)]
            for chunk_outcomes in pool.map(chunks):
                for o in chunk_outcomes:
                    stats.planned += 1
                    stats.predicted += o.status == "predicted"
                    outcomes.append(o)
                tally.take_all(chunk_outcomes, g.bound_cycles)
                tick(len(chunk_outcomes))
    if stats.bound_violations and prune:
        # the lower bound no longer holds for the model (its constants changed shape): search again
        # without it, so the answer stays exhaustive
        return tune(spec, space=space, allow_precision=allow_precision, padded=padded, keep=keep, top=top, budget=budget,
                    seed=seed, known=known, progress=progress, prune=False, keep_all=keep_all, jobs=jobs,
                    estimator=estimator, admit=admit, may_admit=may_admit)
    stats.seconds = time.perf_counter() - start
    ranked = tuple(sorted(tally.legal, key=_rank_key)) if keep_all else tuple(tally.best)
    return TuneResult(spec, sp, ranked, stats, tuple(outcomes))


def _skipped(spec: MatmulSpec, g: _Group, pruned: bool, may_admit: Callable[[str, bool, int, bool], bool] | None,
             stats: SearchStats) -> bool:
    """Whether a group is decided whole, counted in `stats`: pruned by its bound, refused by
    `may_admit` for every member, or rejected by the planner for its per_core or grid."""
    if pruned:
        stats.pruned += g.size
        stats.groups_pruned += 1
    elif may_admit is not None and not any(may_admit(g.math_fidelity, g.fp32_dest_acc, w, acc)
                                           for w in g.widths for acc in g.policies):
        stats.inadmissible += g.size
    elif _group_rejected(spec, g):
        stats.groups_illegal += 1
        stats.planned += 1
        stats.illegal += g.size
    else:
        return False
    return True


def _split_known(g: _Group, known: Mapping[str, Outcome],
                 may_admit: Callable[[str, bool, int, bool], bool] | None) -> tuple[list[TuneConfig], list[Outcome]]:
    """A group's members to evaluate, and the outcomes the database already holds for others;
    members `may_admit` refuses are in neither."""
    fresh: list[TuneConfig] = []
    reused: list[Outcome] = []
    for c in g.members():
        if may_admit is not None and not may_admit(c.math_fidelity, c.fp32_dest_acc, c.in0_block_w, c.packer_l1_acc):
            continue
        o = known.get(c.key()) if known else None
        if o is not None:
            reused.append(replace(o, scored=replace(o.scored, reused=True)) if o.scored else o)
        else:
            fresh.append(c)
    return fresh, reused


def _search_order(spec: MatmulSpec, sp, estimator: Estimator, budget: int, seed: int,
                  stats: SearchStats) -> list[_Group]:
    """The space's groups, sampled down to `budget` candidates where it is larger, in the order the
    search takes them: lowest bound first."""
    groups = _groups(spec, sp, estimator.lower_bound)
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
    return groups


@dataclass
class _Tally:
    """The search's running answer (a working value): the `top` best so far, every legal candidate
    when asked for, and the counts of what was decided."""
    top: int
    keep_all: bool
    stats: SearchStats
    admit: Callable[[Scored], bool] | None = None
    best: list[Scored] = field(default_factory=list)      # sorted, at most `top`
    legal: list[Scored] = field(default_factory=list)

    def kth_best(self) -> float:
        return self.best[self.top - 1].cycles if len(self.best) >= self.top else float("inf")

    def take_all(self, outcomes: list[Outcome], bound: float) -> None:
        # fastest first, so that `admit` (which may run the golden model) is asked of as few as can enter the top
        for o in sorted(outcomes, key=_outcome_order) if self.admit is not None else outcomes:
            self.take(o, bound)

    def take(self, o: Outcome, bound: float) -> None:
        if o.status == "illegal":
            self.stats.illegal += 1
        elif o.status == "duplicate":
            self.stats.duplicates += 1
        elif o.scored is not None:
            if o.scored.cycles < bound * (1 - 1e-9):
                self.stats.bound_violations += 1
            if self.keep_all:
                self.legal.append(o.scored)
            if len(self.best) < self.top or _rank_key(o.scored) < _rank_key(self.best[-1]):
                if self.admit is not None and not self.admit(o.scored):
                    self.stats.inadmissible += 1
                    return
                self.best.append(o.scored)
                self.best.sort(key=_rank_key)
                del self.best[self.top:]


def _outcome_order(o: Outcome) -> tuple:
    return (0, _rank_key(o.scored)) if o.scored is not None else (1,)


def _rank_key(s: Scored) -> tuple:
    """Fastest first; at equal time the more precise (higher fidelity, fp32 dest), then by the
    candidate itself, so equal times rank reproducibly."""
    c = s.candidate
    return (round(s.cycles, 6), -FIDELITY_PHASES[c.math_fidelity], -c.fp32_dest_acc, c)
