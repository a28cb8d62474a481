"""`kgen tune --min-pcc P` / `--max-rel-error E`: the fastest configuration whose predicted error
meets an accuracy target, and the speed-accuracy front that leads to it.

- **Space.** Blocking as `kgen tune` searches it (space.py), with the precision: math fidelity,
  fp32 dest accumulation, the accumulation request (packer L1 accumulation or spill/reload) and,
  with `allow_dtype`, the format of in0 and/or in1 (bfloat16, bfloat8_b, bfloat4_b). The partials
  format is no knob of its own: TT's factories derive it from fp32 dest, L1 accumulation and the
  output (Float32, Float16_b, or the output format), and the planner does the same.
- **Error.** `precision.predict_accuracy`: the golden model on a proxy block of the output over
  the full K, against float64 of the inputs before conversion, extrapolated to M x N.
- **Target.** One number per candidate, the share of the allowance its predicted error uses:
  (1 - PCC) / (1 - P) and error / E (the larger, with both targets). A candidate meets the target
  when it uses at most all of it.
- **Search.** Per dtype choice, `kgen tune`'s exhaustive pruned search (search.py) twice: for the
  fastest configuration, then with an `admit` filter for the fastest that meets the target (the
  pick), its predictions reused. Errors are predicted only for candidates fast enough to enter the
  ranking, once per numerics path; a path, or all the paths of formats and a fidelity whose error
  floor (precision.floor_accuracy, with FLOOR_MARGIN) already misses the target, is skipped
  unplanned.
- **Front.** The speed-accuracy Pareto front of every candidate whose error was predicted, up to
  the pick: the candidates faster than the pick that the search predicted on its way (each was
  faster than the best admitted one when it was met, so each was judged), each row more accurate
  than every faster one. Candidates of a path already known to miss the target, or of formats and a
  fidelity skipped by their floor, are not predicted again: a row's time is that of the first
  configuration of its path the search met, and a skipped setting shows in `floors`.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Callable, Iterable, Mapping

from kgen.core.errors import KgenBug
from kgen.gen.plan import Plan, plan as make_plan
from kgen.gen.spec import MatmulSpec
from kgen.perf.tune.candidate import Outcome, Scored, TuneConfig, tiles
from kgen.perf.tune.precision import (RANDOM_INPUTS, ErrorPrediction, InputSource, NumericsPath, floor_accuracy,
                                      predict_accuracy, proxy_tiles)
from kgen.perf.tune.search import tune
from kgen.perf.tune.space import DEFAULT_BUDGET, TuneError

DTYPE_CHOICES = ("bfloat16", "bfloat8_b", "bfloat4_b")
# A path's (1 - PCC) and relative error sit at least at their floor's (precision.floor_accuracy)
# divided by these: over 288 paths (both archs, K 1k and 4k, every format, three fidelities, both
# policies, fp32 dest on and off) the exact numerics' 1 - PCC was >= 0.995x its fast numerics'
# (which hold more of the error than the floor) and the relative error >= 0.94x
FLOOR_MARGIN = (1.05, 1.25)
OPERANDS = ("in0", "in1")


def _number(value: float) -> str:
    return f"{value:.6g}"


@dataclass(frozen=True)
class AccuracyTarget:
    """`--min-pcc` and/or `--max-rel-error` (relative to the output's max magnitude)."""

    min_pcc: float | None = None
    max_rel_error: float | None = None

    def __post_init__(self) -> None:
        if self.min_pcc is None and self.max_rel_error is None:
            raise TuneError("an accuracy target needs --min-pcc P or --max-rel-error E")
        p, e = self.min_pcc, self.max_rel_error
        if p is not None and not (math.isfinite(p) and 0 < p <= 1):
            raise TuneError(f"--min-pcc {p:g}: a PCC target lies in (0, 1], the correlation of the output with "
                            f"float64 it must reach (TT's tests use 0.99 to 0.9999)")
        if e is not None and not (math.isfinite(e) and e > 0):
            raise TuneError(f"--max-rel-error {e:g}: the largest error allowed, relative to the output's max "
                            f"magnitude, must be a number above 0 (such as 0.01)")

    def used(self, pcc: float, rel_error: float) -> float:
        """The share of the allowance an output with this PCC and relative error uses: (1 - PCC) over
        (1 - P), error over E, the larger of the two given. At most 1 meets the target."""
        shares = []
        if self.min_pcc is not None:
            short = max(1.0 - pcc, 0.0) if math.isfinite(pcc) else math.inf
            room = 1.0 - self.min_pcc
            shares.append(short / room if room > 0 else (0.0 if short == 0 else math.inf))
        if self.max_rel_error is not None:
            shares.append(rel_error / self.max_rel_error if math.isfinite(rel_error) else math.inf)
        return max(shares)

    def used_by_floor(self, floor: ErrorPrediction) -> float:
        """The share of the allowance a path whose error floor is `floor` uses at least, the floor
        discounted by FLOOR_MARGIN (a floor on the proxy's inputs is statistical)."""
        return max(AccuracyTarget(min_pcc=self.min_pcc).used(floor.pcc, 0.0) / FLOOR_MARGIN[0]
                   if self.min_pcc is not None else 0.0,
                   floor.rel_error / self.max_rel_error / FLOOR_MARGIN[1] if self.max_rel_error is not None else 0.0)

    def meets(self, pcc: float, rel_error: float) -> bool:
        return self.used(pcc, rel_error) <= 1.0

    def text(self) -> str:
        parts = []
        if self.min_pcc is not None:
            parts.append(f"PCC >= {_number(self.min_pcc)}")
        if self.max_rel_error is not None:
            parts.append(f"relative error <= {self.max_rel_error:.3g}")
        return " and ".join(parts)

    def margin(self, pcc: float, rel_error: float) -> str:
        """How far a result is from the target, in words: each figure against its bound and the
        share of the allowance used."""
        parts = []
        if self.min_pcc is not None:
            used = AccuracyTarget(min_pcc=self.min_pcc).used(pcc, 0.0)
            parts.append(f"PCC {pcc:.6f} {'>=' if used <= 1 else '<'} {_number(self.min_pcc)} "
                         f"(1 - PCC at {_share(used)} of the allowance)")
        if self.max_rel_error is not None:
            used = rel_error / self.max_rel_error
            parts.append(f"relative error {rel_error:.3g} {'<=' if used <= 1 else '>'} {self.max_rel_error:.3g} "
                         f"({_share(used)} of the allowance)")
        return "; ".join(parts)


def _share(used: float) -> str:
    if not math.isfinite(used):
        return "infinitely more than all"
    return f"{100 * used:.0f} %" if used < 10 else f"{used:.0f}x"


def parse_allow_dtype(values: Iterable[str]) -> tuple[str, ...]:
    """`--allow-dtype in1`, repeated or comma-separated: the operands whose format the search may
    choose. An unknown operand is bad input."""
    operands: list[str] = []
    for value in values:
        for name in (v.strip() for v in value.split(",")):
            if name not in OPERANDS:
                raise TuneError(f"--allow-dtype {name or repr(value)}: the operands whose format the search may "
                                f"choose are in0 (the activations) and in1 (the weights); the formats tried are "
                                f"{', '.join(DTYPE_CHOICES)}")
            if name not in operands:
                operands.append(name)
    return tuple(sorted(operands))


def dtype_choices(spec: MatmulSpec, allow_dtype: tuple[str, ...]) -> list[tuple[str, str]]:
    """(in0, in1) dtype pairs to search: the spec's, and for each allowed operand every format of
    DTYPE_CHOICES (the spec's own first, where it is none of them: float32)."""
    def options(operand: str, own: str) -> list[str]:
        if operand not in allow_dtype:
            return [own]
        return [own] + [d for d in DTYPE_CHOICES if d != own]
    return list(itertools.product(options("in0", spec.dtype_in0), options("in1", spec.dtype_in1)))


def with_dtypes(spec: MatmulSpec, dtypes: tuple[str, str]) -> MatmulSpec:
    return spec if dtypes == (spec.dtype_in0, spec.dtype_in1) else \
        replace(spec, dtype_in0=dtypes[0], dtype_in1=dtypes[1])


@dataclass(frozen=True)
class Judged:
    """A ranked candidate with its formats and its predicted accuracy."""

    scored: Scored
    dtypes: tuple[str, str]          # in0, in1
    path: NumericsPath
    prediction: ErrorPrediction
    used: float                      # the share of the target's allowance it uses (<= 1 meets)

    @property
    def meets(self) -> bool:
        return self.used <= 1.0

    @property
    def microseconds(self) -> float:
        return self.scored.microseconds

    def key(self) -> tuple[tuple[str, str], TuneConfig]:
        return self.dtypes, self.scored.candidate


@dataclass(frozen=True)
class Floor:
    """The error floor of formats and a fidelity (precision.floor_accuracy) and the share of the
    allowance it uses at least (discounted by FLOOR_MARGIN)."""

    dtypes: tuple[str, str]
    fidelity: str
    prediction: ErrorPrediction
    used: float


@dataclass(frozen=True)
class AccuracyResult:
    spec: MatmulSpec
    target: AccuracyTarget
    source: InputSource
    dtype_options: tuple[tuple[str, str], ...]
    front: tuple[Judged, ...]        # fastest first, each more accurate than the one before; the pick last
    pick: Judged | None
    judged: tuple[Judged, ...]       # every candidate whose accuracy was predicted (the chart's points)
    baseline: Judged | None          # the fastest meeting the target at HiFi4 + fp32 dest (same dtype choices)
    searches: int
    predicted: int                   # candidates predicted by the performance model over all searches
    paths: int                       # numerics paths whose accuracy was predicted (golden-model proxies)
    seconds: float
    proxy: tuple[int, int]           # the proxy's output, elements, over the full K
    outcomes: Mapping[tuple[str, str], tuple[Outcome, ...]] = field(default_factory=dict, repr=False)
    judge: "AccuracyJudge | None" = field(default=None, repr=False, compare=False)   # its predictions, reusable
    floors: tuple[Floor, ...] = ()   # formats and fidelities whose error floor alone misses the target

    def spec_of(self, j: Judged) -> MatmulSpec:
        return with_dtypes(self.spec, j.dtypes)


class AccuracyJudge:
    """Predicted accuracy per candidate: the planner's numerics path once per (formats, fidelity,
    fp32 dest, in0_block_w, policy), the golden-model proxy once per path."""

    def __init__(self, spec: MatmulSpec, target: AccuracyTarget, source: InputSource):
        self.spec, self.target, self.source = spec, target, source
        self.m = spec.batch * spec.m          # every batch's rows: elements of the whole output
        self.n = spec.n
        self.seen: dict[tuple, Judged] = {}
        self._plans: dict[tuple, Plan] = {}          # one plan per (dtypes, fidelity, fp32, w, policy)
        self._floors: dict[tuple, Floor] = {}
        self._predictions: dict[NumericsPath, tuple[ErrorPrediction, float]] = {}

    @property
    def paths(self) -> int:
        return len(self._predictions)

    def prediction(self, plan: Plan) -> tuple[NumericsPath, ErrorPrediction, float]:
        """The plan's numerics path, its predicted accuracy and the share of the target's allowance
        it uses (once per path)."""
        path = NumericsPath.of_plan(plan)
        if path not in self._predictions:
            pred = predict_accuracy(plan, self.m, self.n, self.source)
            self._predictions[path] = pred, self.target.used(pred.pcc, pred.rel_error)
        return (path, *self._predictions[path])

    def __call__(self, spec_d: MatmulSpec, dtypes: tuple[str, str], s: Scored) -> Judged:
        c = s.candidate
        j = self.seen.get((dtypes, c))
        if j is None:
            values = (dtypes, c.math_fidelity, c.fp32_dest_acc, c.in0_block_w, s.policy)
            p = self._plans.get(values)
            if p is None:
                p = self._plans[values] = make_plan(c.apply(spec_d))
            path, pred, used = self.prediction(p)
            if path not in possible_paths(spec_d, c.math_fidelity, c.fp32_dest_acc, c.in0_block_w, c.packer_l1_acc):
                raise KgenBug(f"the planner gave {c.short(s.policy)} the numerics path {path}, which "
                              f"possible_paths does not list: the accuracy search would prune it wrongly")
            j = self.seen[(dtypes, c)] = Judged(s, dtypes, path, pred, used)
        return j

    def may_admit(self, spec_d: MatmulSpec, accept: Callable[[float], bool]) -> Callable[[str, bool, int, bool], bool]:
        """search.tune's `may_admit`: False when the floor of the formats and the fidelity is not
        accepted (`accept(share of the allowance)`), or every path candidates with these values can
        have is predicted already and none is. It predicts no path itself: a proxy costs more than
        planning and predicting a group, so paths are predicted only for candidates fast enough to
        enter the ranking (`admit`); a floor costs a float32 matmul of the proxy."""
        def may(fidelity: str, fp32: bool, w: int, l1_request: bool) -> bool:
            if not accept(self.floor(spec_d, fidelity)):
                return False
            return any(p not in self._predictions or accept(self._predictions[p][1])
                       for p in possible_paths(spec_d, fidelity, fp32, w, l1_request))
        return may

    def floor(self, spec_d: MatmulSpec, fidelity: str) -> float:
        """The least share of the allowance any path of these formats and this fidelity uses."""
        from kgen.core.arch import load_arch
        from kgen.core.types import DTYPE_TO_FORMAT

        key = (spec_d.dtype_in0, spec_d.dtype_in1, fidelity)
        if key not in self._floors:
            floor = floor_accuracy(load_arch(spec_d.arch).name, tiles(spec_d)[2], DTYPE_TO_FORMAT[spec_d.dtype_in0],
                                   DTYPE_TO_FORMAT[spec_d.dtype_in1], fidelity, self.m, self.n, self.source)
            self._floors[key] = Floor(key[:2], fidelity, floor, self.target.used_by_floor(floor))
        return self._floors[key].used

    def floors_missing(self) -> tuple[Floor, ...]:
        """The formats and fidelities whose floor alone misses the target (none of their paths
        was predicted)."""
        return tuple(f for f in self._floors.values() if f.used > 1.0)


@cache
def possible_paths(spec: MatmulSpec, fidelity: str, fp32: bool, in0_block_w: int,
                   l1_request: bool) -> tuple[NumericsPath, ...]:
    """Every numerics path the planner can give a candidate with these values: the spec's formats
    and K, the partials format by the planner's own rule (gen/blocking.partials_format), and L1
    accumulation on or off where it is requested (the planner may decline it)."""
    from kgen.core.arch import load_arch
    from kgen.core.types import DTYPE_TO_FORMAT
    from kgen.gen.blocking import partials_format

    kt = tiles(spec)[2]
    in0, in1, out = (DTYPE_TO_FORMAT[d] for d in (spec.dtype_in0, spec.dtype_in1, spec.dtype_out))
    compute = replace(spec.compute, math_fidelity=fidelity, fp32_dest_acc=fp32)
    return tuple(NumericsPath(load_arch(spec.arch).name, kt, fidelity, fp32, l1, in0, in1, out,
                              partials_format(compute, l1, out)[0], in0_block_w)
                 for l1 in ((True, False) if l1_request else (False,)))


def pareto_front(judged: Iterable[Judged], pick: Judged | None) -> list[Judged]:
    """The speed-accuracy front of `judged` up to the pick: fastest first, each more accurate than
    every faster one, the pick last (with no pick, up to the most accurate)."""
    front: list[Judged] = []
    for j in sorted(judged, key=lambda j: (round(j.scored.cycles, 6), j.used)):
        if pick is not None and (round(j.scored.cycles, 6), j.used) >= (round(pick.scored.cycles, 6), pick.used):
            break
        if not front or j.used < front[-1].used:
            front.append(j)
    return front + ([pick] if pick is not None else [])


def _faster(a: Judged, b: Judged | None) -> bool:
    return b is None or (round(a.scored.cycles, 6), a.used) < (round(b.scored.cycles, 6), b.used)


def tune_for_accuracy(spec: MatmulSpec, target: AccuracyTarget, *, allow_dtype: tuple[str, ...] = (),
                      source: InputSource = RANDOM_INPUTS, space: str = "auto", padded: bool = True,
                      budget: int = DEFAULT_BUDGET, seed: int = 0, jobs: int = 1,
                      known: Mapping[tuple[str, str], Mapping[str, Outcome]] | None = None,
                      exclude: frozenset = frozenset(), say: Callable[[str], None] = lambda text: None,
                      judge: AccuracyJudge | None = None) -> AccuracyResult:
    """The front from the fastest configuration to the fastest that meets `target` (the pick), over
    blocking, precision and the formats of the operands in `allow_dtype`. `known`: per dtype pair,
    the database's outcomes (reused, as `tune` reuses them). `exclude`: Judged.key()s refused (by
    verification). `judge`: the predictions of an earlier call on the same spec and target."""
    start = time.perf_counter()
    choices = dtype_choices(spec, allow_dtype)
    judge = judge or AccuracyJudge(spec, target, source)
    outcomes: dict[tuple[str, str], dict[str, Outcome]] = {d: dict((known or {}).get(d, {})) for d in choices}
    fresh: dict[tuple[str, str], list[Outcome]] = {d: [] for d in choices}
    searches = predicted = 0

    def fastest(ceiling: float | None, compute: MatmulSpec | None = None,
                options: list[tuple[str, str]] = choices) -> Judged | None:
        """The fastest candidate using less than `ceiling` of the allowance, or meeting the target
        (using at most all of it) when `ceiling` is None. `compute`: a spec whose precision is held
        (not searched)."""
        nonlocal searches, predicted
        best = None
        accept = (lambda used: used <= 1.0) if ceiling is None else (lambda used: used < ceiling)
        for dtypes in options:
            spec_d = with_dtypes(spec if compute is None else compute, dtypes)

            def admit(s: Scored, spec_d=spec_d, dtypes=dtypes) -> bool:
                return (dtypes, s.candidate) not in exclude and accept(judge(spec_d, dtypes, s).used)

            r = tune(spec_d, space=space, allow_precision=compute is None, padded=padded, top=1, budget=budget,
                     seed=seed, known=outcomes[dtypes] if compute is None else None, jobs=jobs, admit=admit,
                     may_admit=judge.may_admit(spec_d, accept))
            searches += 1
            predicted += r.stats.predicted
            if compute is None:
                for o in r.outcomes:
                    outcomes[dtypes][o.candidate.key()] = o
                fresh[dtypes].extend(r.outcomes)
            if r.ranked:
                j = judge(spec_d, dtypes, r.ranked[0])
                if _faster(j, best):
                    best = j
        return best

    say(f"searching the fastest configuration of each of {len(choices)} dtype choice(s)")
    fastest(math.inf)
    say(f"searching the fastest configuration that meets {target.text()} ({judge.paths} numerics paths "
        f"predicted so far)")
    pick = fastest(None)
    front = pareto_front(judge.seen.values(), pick)
    say("searching the fastest configuration meeting the target at HiFi4 + fp32 dest (the comparison)")
    hifi4 = replace(spec, compute=replace(spec.compute, math_fidelity="HiFi4", fp32_dest_acc=True))
    baseline = fastest(None, hifi4)
    mt, nt, kt = tiles(spec)
    rows, cols = proxy_tiles(mt, nt, kt)
    return AccuracyResult(spec, target, source, tuple(choices), tuple(front), pick,
                          tuple(sorted(judge.seen.values(), key=lambda j: (j.scored.cycles, j.used))), baseline,
                          searches, predicted, judge.paths, time.perf_counter() - start, (rows * 32, cols * 32),
                          {d: tuple(v) for d, v in fresh.items()}, judge, judge.floors_missing())
