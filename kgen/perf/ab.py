"""`kgen ab`: the spec's base and variants (or `--vary` cross products, over a `--sweep`) side by side.

Per variant: the plan's facts, the op counts of the verified IR (`ir.counted` over every kernel and
its cores), the performance model's prediction, and the numerics of the bit-level golden model
(kgen/proof/golden.py) on the spec's real K; with `--emulate` the emulator's run, with `--device`
the card's. Everything is a frozen value (`Comparison`); abreport.py prints it.

Why a K-faithful proxy for the numerics: each output element of the blocked matmul sees the same
sequence of K-block accumulations whatever M, N, the grid or the subblocks are (golden.py's
docstring), so the error depends on K, the formats, the fidelity and the K-blocking, not on the
output's size. The golden model runs once per distinct numerics on one 32 x 32 output tile that
holds every input distribution (PROXY_LAYOUT) at the spec's K, which keeps a 4096^3 comparison of
four variants within seconds; the report says when it does so.

Input distributions (rows of one 32 x 32 proxy, PROXY_LAYOUT):
  random       standard normal in0 and in1 (seeded), normal bias;
  mixed        in0 spans six decades of magnitude (normal x 10^U(-3, 3)), the same in1;
  all_ones     in0 = in1 = 1, bias 0: the exact sum is K (tt-metal #8449: 6144 -> 8192 with a bf16 Dst);
  positive     in0 uniform in [0, 1), in1 = 1, bias 0: a large-K positive sum (tt-metal #46101).
"""

from __future__ import annotations

import itertools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from kgen.core.errors import KgenError, SpecError
from kgen.core.types import TILE_HW
from kgen.gen.ir import Program, counted
from kgen.gen.plan import CB_PARTIALS, Plan
from kgen.gen.spec import SpecFile, numeric_keys, override_entry, resolve, with_variant
from kgen.perf.model import Prediction, predict
from kgen.proof.numerics import ULP_BINS, REL_ERR_FLOOR, error_figures, pcc, ulp_distance, ulp_histogram  # noqa: F401

DISTRIBUTIONS = ("random", "mixed", "all_ones", "positive")
PROXY_ROWS = PROXY_COLS = TILE_HW          # outputs per distribution of the K-faithful proxy
SWEEP_DIMS = {"M": 0, "N": 1, "K": 2}      # positions in `shape = M x N x K`
BASE = "base"

# Op kinds of the comparison, in print order.
OP_KINDS = ("unpack tiles", "matmul_block", "pack tiles", "partials pack tiles", "reload copies", "reload tiles",
            "L1-acc switches", "reconfigs", "DST sections", "NoC read tiles", "NoC write pages", "multicasts",
            "semaphore ops")
_RECONFIGS = ("matmul_init", "reconfig_srca", "reconfig_srcab", "pack_reconfig_format", "pack_relu", "copy_init",
              "add_bcast_rows_init", "pack_untilize_init", "pack_untilize_uninit")


# ----------------------------------------------------------------------------------------------
# values
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CbUse:
    index: int
    role: str
    data_format: str
    bytes: int
    region: str


@dataclass(frozen=True)
class RegionUse:
    name: str
    cb_indices: tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class PlanFacts:
    policy: str
    policy_reason: str
    partials_format: str
    partials_reason: str
    math_fidelity: str
    fp32_dest_acc: bool
    l1_acc_enabled: bool
    grid: tuple[int, int]
    blocking: str                     # per core, out block, in0_block_w, subblock
    num_blocks: int                   # K-blocks
    subblocks: int                    # in0_num_subblocks x in1_num_subblocks, per out block
    out_blocks: int                   # batch x num_blocks_h_dim x num_blocks_w_dim, per core
    dst_capacity: int
    dst_used: int                     # tiles of one subblock
    cbs: tuple[CbUse, ...]
    regions: tuple[RegionUse, ...]
    l1_bytes: int
    l1_usable: int
    l1_margin: int

    @property
    def dst_headroom(self) -> int:
        return self.dst_capacity - self.dst_used


@dataclass(frozen=True)
class Speed:
    microseconds: float
    cycles: float
    tflops: float
    utilization: float
    bottleneck: str
    processors: tuple[tuple[str, float], ...]          # busy cycles per processor of the critical core
    reload_cycles: float
    partials_pack_cycles: float
    l1_acc_surcharge: float


@dataclass(frozen=True)
class ErrorStats:
    """Error of one distribution's output against float64 of the same (quantised) inputs."""
    distribution: str
    max_abs: float
    max_rel: float
    pcc: float
    max_ulp: int
    ulp_histogram: tuple[tuple[str, int], ...]
    first_value: float                # output[0, 0]: all_ones shows the #8449 sum here


@dataclass(frozen=True)
class Numerics:
    mode: str                         # exact (bit-level golden model)
    rows: int                         # outputs computed per distribution
    cols: int
    k: int
    proxy: bool
    ulp_format: str                   # the grid ULPs are counted on
    note: str
    errors: tuple[ErrorStats, ...]

    def of(self, distribution: str) -> ErrorStats:
        return next(e for e in self.errors if e.distribution == distribution)


@dataclass(frozen=True)
class Emulated:
    numerics: str
    status: str
    ok: bool
    exact_match: bool
    mismatched: int
    max_abs: float
    pcc: float
    seconds: float


@dataclass(frozen=True)
class Measured:
    """On a card: the median device time over `runs` after `warmup`, and the output's PCC."""
    microseconds: float
    runs: int
    warmup: int
    timing: str                       # how the time was taken
    pcc: float


@dataclass(frozen=True)
class Row:
    variant: str                      # `base`, a spec variant, or `field=value,...` from --vary
    sweep: int | None                 # the swept field's value
    overrides: tuple[tuple[str, str], ...]
    kernel_id: str | None
    illegal: str | None = None        # why the variant does not plan (the rule and the message)
    rule: str | None = None
    plan: PlanFacts | None = None
    ops: tuple[tuple[str, int], ...] = ()
    speed: Speed | None = None
    numerics: Numerics | None = None
    emulated: Emulated | None = None
    measured: Measured | None = None

    @property
    def label(self) -> str:
        return self.variant if self.sweep is None else f"{self.variant} @ {self.sweep}"

    def op(self, kind: str) -> int:
        return dict(self.ops)[kind]


@dataclass(frozen=True)
class Difference:
    """Element-wise difference of two variants' outputs on the same inputs (the `random` proxy)."""
    a: str
    b: str
    sweep: int | None
    distribution: str
    elements: int
    differing: int
    max_ulp: int
    ulp_histogram: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Comparison:
    spec_path: str
    spec_name: str
    arch: str
    spec_text: str
    command: str
    vary: tuple[tuple[str, tuple[str, ...]], ...]
    sweep_field: str | None
    sweep_values: tuple[int, ...]
    seed: int
    rows: tuple[Row, ...]
    differences: tuple[Difference, ...]
    verdicts: tuple[str, ...]

    @property
    def legal(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.illegal is None)


# ----------------------------------------------------------------------------------------------
# flags -> variants
# ----------------------------------------------------------------------------------------------

def parse_vary(texts: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`FIELD=V1,V2` flags -> (field, values). Every value is checked against the spec schema now:
    an unknown field or an illegal value is an error (exit 2) that names it."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for text in texts:
        key, eq, values = text.partition("=")
        key = key.strip()
        items = tuple(v.strip() for v in values.split(","))
        if not eq or not key or not all(items):
            raise SpecError(f"--vary {text!r}: expected FIELD=V1,V2,... with no empty value",
                            hint="e.g. --vary compute.packer_l1_acc=false,true")
        if key in (k for k, _ in out):
            raise SpecError(f"--vary {key} is given twice", hint="list every value in one --vary")
        if len(set(items)) != len(items):
            raise SpecError(f"--vary {text!r} repeats a value")
        for v in items:
            try:
                override_entry(key, v, "--vary")
            except SpecError as exc:
                raise SpecError(f"variant `{key}={v}`: {exc.message}", exc.span, hint=exc.hint) from None
        out.append((key, items))
    return tuple(out)


def parse_sweep(texts: Sequence[str]) -> tuple[str | None, tuple[int, ...]]:
    """`DIM=v1,v2,...` (one flag): DIM is M, N, K or a numeric field; values are whole numbers."""
    if not texts:
        return None, ()
    if len(texts) > 1:
        raise SpecError("--sweep is given more than once", hint="sweep one field; use --vary for the others")
    text = texts[0]
    key, eq, values = text.partition("=")
    key = key.strip()
    numeric = numeric_keys()
    if not eq or not key:
        raise SpecError(f"--sweep {text!r}: expected DIM=v1,v2,...", hint="e.g. --sweep K=1024,4096,16384")
    if key not in SWEEP_DIMS and key not in numeric:
        raise SpecError(f"--sweep {key}: not a dimension or a numeric field",
                        hint=f"sweep one of: {', '.join([*SWEEP_DIMS, *numeric])}")
    parsed: list[int] = []
    for v in values.split(","):
        v = v.strip()
        if not v.isdigit() or int(v) <= 0 or len(v) > 9:
            raise SpecError(f"--sweep {key}={v or '(empty)'}: expected a positive whole number")
        n = int(v)
        if key in SWEEP_DIMS and n % TILE_HW:
            lo = n // TILE_HW * TILE_HW
            raise SpecError(f"--sweep {key}={n}: {key} must be a multiple of the {TILE_HW}-element tile [rule: tile]",
                            hint=f"nearest legal values: {f'{lo} or ' if lo else ''}{lo + TILE_HW}")
        if key not in SWEEP_DIMS:
            override_entry(key, v, "--sweep")
        if n in parsed:
            raise SpecError(f"--sweep {key} repeats {n}")
        parsed.append(n)
    return key, tuple(parsed)


@dataclass(frozen=True)
class Candidate:
    variant: str
    file_variant: str | None          # the spec's own variant it starts from
    overrides: tuple[tuple[str, str], ...]


def candidates(spec: SpecFile, vary: Sequence[tuple[str, Sequence[str]]]) -> tuple[Candidate, ...]:
    """Without --vary: the base and each of the spec's variants. With --vary: the cross product of
    the flags' values, each applied to the base (the spec's own variants are then not listed)."""
    if not vary:
        return (Candidate(BASE, None, ()),) + tuple(
            Candidate(name, name, tuple((k, e.value.text) for k, e in entries.items()))
            for name, entries in spec.variants.items())
    keys = [k for k, _ in vary]
    out = []
    for combo in itertools.product(*(values for _, values in vary)):
        name = ",".join(f"{k.rpartition('.')[2]}={v}" for k, v in zip(keys, combo))
        out.append(Candidate(name, None, tuple(zip(keys, combo))))
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# one variant
# ----------------------------------------------------------------------------------------------

def plan_facts(p: Plan) -> PlanFacts:
    return PlanFacts(
        policy=p.policy, policy_reason=p.policy_reason, partials_format=p.partials_format,
        partials_reason=p.partials_reason, math_fidelity=p.compute.math_fidelity,
        fp32_dest_acc=p.compute.fp32_dest_acc, l1_acc_enabled=p.l1_acc_enabled, grid=p.grid,
        blocking=(f"per core {p.per_core_m}x{p.per_core_n}, out block {p.out_block_h}x{p.out_block_w}, "
                  f"in0_block_w {p.in0_block_w}, subblock {p.out_subblock_h}x{p.out_subblock_w}"),
        num_blocks=p.num_blocks, subblocks=p.in0_num_subblocks * p.in1_num_subblocks,
        out_blocks=p.batch_ct * p.num_blocks_h_dim * p.num_blocks_w_dim,
        dst_capacity=p.dst_capacity, dst_used=p.out_subblock_tiles,
        cbs=tuple(CbUse(c.index, c.role, c.data_format, c.total_bytes, c.region) for c in p.cbs),
        regions=tuple(RegionUse(r.name, r.cb_indices, r.bytes) for r in p.regions),
        l1_bytes=p.cb_bytes, l1_usable=p.arch.usable_cb_bytes, l1_margin=p.l1_margin)


def op_counts(program: Program) -> tuple[tuple[str, int], ...]:
    """Every op of every kernel, times its loops (`ir.counted`) and the cores the kernel runs on."""
    n: dict[str, int] = dict.fromkeys(OP_KINDS, 0)
    for k in program.kernels:
        cores = (k.cores.x1 - k.cores.x0 + 1) * (k.cores.y1 - k.cores.y0 + 1)
        for o, times in counted(k.body):
            t = times * cores
            kind = o.kind
            if kind == "matmul_block":
                rt, ct = int(o["rt"]), int(o["ct"])
                n["matmul_block"] += t
                n["unpack tiles"] += t * (rt * ct + min(rt, ct))     # LLK's unpacks per call (costmodel.md §1.2)
            elif kind in ("copy_block", "copy_tile"):
                tiles = int(o["tiles"]) if kind == "copy_block" else 1
                n["unpack tiles"] += t * tiles
                if o["cb"] == CB_PARTIALS:
                    n["reload copies"] += t
                    n["reload tiles"] += t * tiles
            elif kind == "add_bcast_rows":
                n["unpack tiles"] += 2 * t
            elif kind in ("pack_block", "pack_tile", "pack_untilize_dest"):
                tiles = {"pack_block": lambda: int(o["tiles"]), "pack_tile": lambda: 1,
                         "pack_untilize_dest": lambda: int(o["block_ct"])}[kind]()
                n["pack tiles"] += t * tiles
                if o["cb"] == CB_PARTIALS:
                    n["partials pack tiles"] += t * tiles
            elif kind == "pack_l1_acc":
                n["L1-acc switches"] += t
            elif kind in _RECONFIGS:
                n["reconfigs"] += t
            elif kind == "tile_regs_acquire":
                n["DST sections"] += t
            elif kind == "read_tiles":
                n["NoC read tiles"] += t * int(o["rows"]) * int(o["cols"])
            elif kind == "write_tiles":
                n["NoC write pages"] += t * int(o["rows"]) * int(o["cols"])
            elif kind == "write_rows":
                n["NoC write pages"] += t * int(o["rows"])
            elif kind == "mcast_cb":
                n["multicasts"] += t
            elif kind == "mcast_sem_set":
                n["multicasts"] += t
                n["semaphore ops"] += t
            elif kind in ("sem_wait", "sem_set", "sem_inc"):
                n["semaphore ops"] += t
    return tuple(n.items())


def speed_of(pr: Prediction) -> Speed:
    c = pr.policy_cost
    return Speed(pr.microseconds, pr.cycles, pr.tflops, pr.utilization, pr.bottleneck,
                 tuple((q.processor, q.busy) for q in pr.processors),
                 c.reload_cycles, c.partials_pack_cycles, c.l1_acc_surcharge)


# ----------------------------------------------------------------------------------------------
# numerics: the golden model on the K-faithful proxy
# ----------------------------------------------------------------------------------------------

# The proxy: one 32 x 32 golden call per numerics key. in1's first 16 columns are standard normal,
# its last 16 all ones; each distribution takes its in0 rows and the columns of its in1.
PROXY_LAYOUT = {"random": (slice(0, 16), slice(0, 16)), "mixed": (slice(16, 24), slice(0, 16)),
                "all_ones": (slice(24, 28), slice(16, 32)), "positive": (slice(28, 32), slice(16, 32))}


def proxy_inputs(k: int, seed: int, formats: tuple[str, str, str],
                 padded_k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(in0 32 x K, in1 K x 32, bias 32) holding every distribution (PROXY_LAYOUT), quantised to the
    (in0, in1, bias) formats. A K short of whole tiles is padded to `padded_k` with zeros before
    quantising, as ttnn's tilize pads (the padding adds exact zeros to every sum)."""
    from kgen.proof import tiles as tl

    rng = np.random.default_rng(seed)
    f0, f1, fb = formats
    half = PROXY_COLS // 2
    in0 = np.empty((PROXY_ROWS, k), np.float32)
    in0[PROXY_LAYOUT["random"][0]] = rng.standard_normal((16, k), dtype=np.float32)
    in0[PROXY_LAYOUT["mixed"][0]] = (rng.standard_normal((8, k), dtype=np.float32)
                                     * np.float32(10.0) ** rng.uniform(-3, 3, (8, k)).astype(np.float32))
    in0[PROXY_LAYOUT["all_ones"][0]] = 1.0
    in0[PROXY_LAYOUT["positive"][0]] = rng.uniform(0, 1, (4, k)).astype(np.float32)
    in1 = np.ones((k, PROXY_COLS), np.float32)
    in1[:, :half] = rng.standard_normal((k, half), dtype=np.float32)
    bias = np.zeros(PROXY_COLS, np.float32)
    bias[:half] = rng.standard_normal(half, dtype=np.float32)
    pad = (padded_k or k) - k
    in0, in1 = np.pad(in0, ((0, 0), (0, pad))), np.pad(in1, ((0, pad), (0, 0)))
    q = lambda x, f: np.asarray(tl.quantize(x, f), np.float32)   # noqa: E731
    return q(in0, f0), q(in1, f1), q(bias[None, :], fb)[0]


def _error_stats(name: str, out: np.ndarray, ref: np.ndarray, grid: str) -> ErrorStats:
    """max abs, max rel (over |ref| >= 1e-3 max|ref|, as kgen emulate's), PCC, ULPs against float64
    rounded to the output's grid."""
    max_abs, rel, r = error_figures(out, ref)
    scale = float(np.abs(ref).max(initial=0.0))
    ulps = ulp_distance(out, ref, grid, REL_ERR_FLOOR * scale)
    return ErrorStats(name, max_abs, rel, r, int(ulps.max(initial=0)), ulp_histogram(ulps),
                      float(out.ravel()[0]))


def _numerics_key(p: Plan) -> tuple:
    s = p.spec
    return (p.compute.math_fidelity, p.compute.fp32_dest_acc, p.l1_acc_enabled, p.in0_format, p.in1_format,
            p.out_format, p.partials_format, p.bias_format, p.in0_block_w, p.num_blocks, p.fuse_bias, p.pack_relu,
            p.untilize_out, p.arch.name, s.k)


class _Golden:
    """The golden model's outputs per distribution, computed once per distinct numerics key (the
    variants that differ only in grid or blocking of M/N share them)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.cache: dict[tuple, tuple[Numerics, Mapping[str, np.ndarray]]] = {}

    def __call__(self, p: Plan) -> tuple[Numerics, Mapping[str, np.ndarray]]:
        key = _numerics_key(p)
        if key not in self.cache:
            self.cache[key] = self._run(p)
        return self.cache[key]

    def _run(self, p: Plan) -> tuple[Numerics, Mapping[str, np.ndarray]]:
        from kgen.proof.golden import golden_from_plan

        k = p.spec.k
        in0, in1, bias = proxy_inputs(k, self.seed, (p.in0_format, p.in1_format, p.bias_format or p.out_format),
                                      padded_k=p.kt * TILE_HW)
        values = golden_from_plan(p, in0, in1, bias if p.fuse_bias else None, mode="exact").values
        ref = in0.astype(np.float64) @ in1.astype(np.float64)
        if p.fuse_bias:
            ref = ref + bias.astype(np.float64)[None, :]
        if p.pack_relu:
            ref = np.maximum(ref, 0.0)
        grid = "Float32" if p.out_format == "Float32" else "Float16_b"
        outputs = {d: values[rows, cols] for d, (rows, cols) in PROXY_LAYOUT.items()}
        errors = tuple(_error_stats(d, outputs[d], ref[rows, cols], grid) for d, (rows, cols) in PROXY_LAYOUT.items())
        s = p.spec
        proxy = (s.m * s.batch, s.n) != (PROXY_ROWS, PROXY_COLS)
        note = (f"K-faithful proxy: {PROXY_ROWS} x {PROXY_COLS} outputs (16 x 16 random, 8 x 16 mixed, 4 x 16 "
                f"all-ones, 4 x 16 positive) at the spec's "
                f"K = {k}, with its formats, fidelity, Dst mode and K-blocking ({p.num_blocks} K-blocks of "
                f"{p.in0_block_w} tiles); the spec's output is {s.batch * s.m} x {s.n}, and M and N do not change "
                f"the sequence of accumulations an output element sees") if proxy else \
            f"the spec's full shape ({s.m} x {s.n} x {k})"
        ulp_name = "float32" if grid == "Float32" else "bfloat16"
        return Numerics("exact", PROXY_ROWS, PROXY_COLS, k, proxy, ulp_name, note, errors), outputs


# ----------------------------------------------------------------------------------------------
# the comparison
# ----------------------------------------------------------------------------------------------

EmulateFn = Callable[[Any, Plan], Emulated]
MeasureFn = Callable[[Any, Plan], Measured]


def compare(spec_file: SpecFile, spec_text: str, *, vary: Sequence[tuple[str, Sequence[str]]] = (),
            sweep: tuple[str | None, Sequence[int]] = (None, ()), seed: int = 0, command: str = "",
            emulate: EmulateFn | None = None, measure: MeasureFn | None = None,
            progress: Callable[[str], None] = lambda phase: None) -> Comparison:
    """Every candidate at every sweep value: planned, lowered, verified, rendered (for its kernel id),
    predicted and put through the golden model; `emulate`/`measure` run a rendered build further.
    A candidate that breaks a rule becomes an illegal row; if every one does, that is an error."""
    from kgen.gen.pipeline import run

    sweep_field, sweep_values = sweep
    golden = _Golden(seed)
    rows: list[Row] = []
    outputs: dict[tuple[str, int | None], np.ndarray] = {}
    cands = candidates(spec_file, vary)
    points: tuple[int | None, ...] = tuple(sweep_values) if sweep_field else (None,)
    for point in points:
        for cand in cands:
            progress(f"{cand.variant}" + (f" at {sweep_field} = {point}" if point is not None else ""))
            try:
                spec = _resolve_candidate(spec_file, cand, sweep_field, point)
                artifacts = run(spec, "rendered")
            except KgenError as exc:
                rule = getattr(exc, "rule", None) or "spec"
                rows.append(Row(cand.variant, point, cand.overrides, None,
                                illegal=getattr(exc, "message", str(exc)), rule=rule))
                continue
            program, p = artifacts.verified, artifacts.plan
            numerics, outs = golden(p)
            outputs[(cand.variant, point)] = outs["random"]
            rows.append(Row(cand.variant, point, cand.overrides, artifacts.rendered.kernel_id,
                            plan=plan_facts(p), ops=op_counts(program), speed=speed_of(predict(program)),
                            numerics=numerics,
                            emulated=emulate(artifacts, p) if emulate else None,
                            measured=measure(artifacts, p) if measure else None))
    legal = [r for r in rows if r.illegal is None]
    if not legal:
        lines = "; ".join(f"`{r.label}`: {r.illegal}" for r in rows)
        raise SpecError(f"no variant of {spec_file.path} plans, so there is nothing to compare: {lines}",
                        hint="change the --vary/--sweep values to ones the planner accepts")
    differences = _differences(legal, outputs)
    verdicts = tuple(verdict([r for r in legal if r.sweep == point], sweep_field, point) for point in points
                     if any(r.sweep == point for r in legal))
    return Comparison(spec_file.path, spec_file.matmul_name, _arch_of(spec_file), spec_text, command,
                      tuple((k, tuple(v)) for k, v in vary), sweep_field, tuple(sweep_values), seed,
                      tuple(rows), differences, verdicts)


def _arch_of(spec_file: SpecFile) -> str:
    entry = spec_file.entries.get("arch")
    return entry.value.text if entry else "?"


def _resolve_candidate(spec_file: SpecFile, cand: Candidate, sweep_field: str | None, point: int | None):
    entries = {k: override_entry(k, v, "--vary") for k, v in cand.overrides if cand.file_variant is None}
    if sweep_field is None and cand.file_variant is None and not entries:
        return resolve(spec_file, None)
    if sweep_field is None and cand.file_variant is not None:
        return resolve(spec_file, cand.file_variant)
    # the name the spec's `variant` field takes: printed into the kernels, so an identifier
    name = re.sub(r"\W+", "_", cand.variant if point is None else f"{cand.variant}_{sweep_field}_{point}").strip("_")
    sf = with_variant(spec_file, name, entries, base=cand.file_variant)
    if sweep_field is not None:
        if sweep_field in SWEEP_DIMS:
            current = resolve(sf, name)
            dims = [current.m, current.n, current.k]
            dims[SWEEP_DIMS[sweep_field]] = point
            value = " x ".join(str(d) for d in dims)
            sf = with_variant(sf, name, {"shape": override_entry("shape", value, "--sweep")}, base=name)
        else:
            sf = with_variant(sf, name, {sweep_field: override_entry(sweep_field, str(point), "--sweep")}, base=name)
    return resolve(sf, name)


def _differences(legal: list[Row], outputs: Mapping[tuple[str, int | None], np.ndarray]) -> tuple[Difference, ...]:
    """Each variant against the first legal one at the same sweep value, on the `random` inputs."""
    out = []
    for point in dict.fromkeys(r.sweep for r in legal):
        at = [r for r in legal if r.sweep == point]
        ref = at[0]
        for r in at[1:]:
            x, y = outputs[(ref.variant, point)], outputs[(r.variant, point)]
            grid = "Float32" if ref.numerics.ulp_format == r.numerics.ulp_format == "float32" else "Float16_b"
            ulps = ulp_distance(y, x, grid, 1e-3 * float(np.abs(x).max(initial=0.0)))
            differing = int(np.count_nonzero(~((x == y) | (np.isnan(x) & np.isnan(y)))))
            out.append(Difference(ref.variant, r.variant, point, "random", int(x.size), differing,
                                  int(ulps.max(initial=0)), ulp_histogram(ulps)))
    return tuple(out)


def _reason(fast: Row, slow: Row) -> str:
    """Why `fast` beats `slow`, in the model's and the IR's terms."""
    bits = []
    dr = slow.op("reload copies") - fast.op("reload copies")
    if fast.plan.policy != slow.plan.policy:
        bits.append(f"{slow.plan.policy} vs {fast.plan.policy}")
    if dr:
        bits.append(f"{abs(dr):,} {'more' if dr > 0 else 'fewer'} partials reload copies in {slow.variant}")
        dc = slow.speed.reload_cycles - fast.speed.reload_cycles
        if dc:
            bits.append(f"{dc:+,.0f} reload cycles on the critical core")
    if fast.plan.math_fidelity != slow.plan.math_fidelity:
        bits.append(f"{fast.plan.math_fidelity} vs {slow.plan.math_fidelity} fidelity phases")
    busy_fast, busy_slow = dict(fast.speed.processors), dict(slow.speed.processors)
    proc = max(busy_slow, key=lambda q: abs(busy_slow[q] - busy_fast.get(q, 0.0)))
    delta = busy_slow[proc] - busy_fast.get(proc, 0.0)
    if delta:
        bits.append(f"{proc} busy {delta:+,.0f} cycles in {slow.variant}")
    if fast.speed.bottleneck != slow.speed.bottleneck:
        bits.append(f"{slow.variant} is {slow.speed.bottleneck}, {fast.variant} {fast.speed.bottleneck}")
    elif not bits:
        bits.append(f"both {fast.speed.bottleneck}")
    return "; ".join(bits)


def verdict(rows: Sequence[Row], sweep_field: str | None = None, point: int | None = None) -> str:
    """One line: the fastest against the slowest (predicted), their error in ULPs, and emulation."""
    at = f" at {sweep_field} = {point}" if point is not None else ""
    if len(rows) == 1:
        r = rows[0]
        return (f"{r.variant}{at}: {r.speed.microseconds:,.1f} us predicted, max error "
                f"{r.numerics.of('random').max_ulp} ULP (the only legal variant)")
    fast = min(rows, key=lambda r: r.speed.cycles)
    slow = max(rows, key=lambda r: r.speed.cycles)
    if fast.speed.cycles == slow.speed.cycles:
        head = f"all variants{at} predict {fast.speed.microseconds:,.1f} us"
    else:
        head = (f"{fast.variant} is {slow.speed.cycles / fast.speed.cycles:.2f}x faster than {slow.variant}{at} "
                f"(predicted: {_reason(fast, slow)})")
    du = fast.numerics.of("random").max_ulp - slow.numerics.of("random").max_ulp
    err = (f"max error {abs(du)} ULP {'higher' if du > 0 else 'lower'}" if du else "the same max error") + \
        f" ({fast.numerics.of('random').max_ulp} vs {slow.numerics.of('random').max_ulp} {fast.numerics.ulp_format} ULP)"
    ones = {r.numerics.of("all_ones").first_value for r in (fast, slow)}
    if len(ones) > 1:
        err += (f"; all-ones K = {fast.numerics.k}: {fast.numerics.of('all_ones').first_value:g} vs "
                f"{slow.numerics.of('all_ones').first_value:g}")
    line = f"{head}, {err}"
    emulated = [r for r in (fast, slow) if r.emulated is not None]
    if emulated:
        word = "bit-exact" if emulated[0].emulated.numerics == "exact" else "within tolerance of the fast golden model"
        if all(r.emulated.ok for r in emulated):
            line += f"; {'both' if len(emulated) == 2 else emulated[0].variant} {word} in emulation"
        else:
            bad = ", ".join(r.variant for r in emulated if not r.emulated.ok)
            line += f"; NOT {word} in emulation: {bad}"
    return line


# ----------------------------------------------------------------------------------------------
# --emulate and --device
# ----------------------------------------------------------------------------------------------

def emulate_with(numerics: str, seed: int, parallel: int) -> EmulateFn:
    """Each variant's rendered build through the host emulator, against its golden model."""
    def run_one(artifacts, p: Plan) -> Emulated:
        from kgen.proof.chain import ChainOptions, run_chain

        chain = run_chain(artifacts, "emulated", skip={"typechecked"},
                          options=ChainOptions(seed=seed, numerics=numerics, parallel=parallel))
        e = chain.require_complete("kgen ab --emulate").value("emulated")
        return Emulated(numerics, e.status, e.ok, e.exact_match, e.mismatched, e.errors.max_abs_err,
                        e.errors.pcc, e.seconds)
    return run_one


@dataclass(frozen=True)
class DeviceProfiler:
    """TT-Metal's device profiler, read the way TT's GEMM benchmark reads it (test_benchmark.py,
    get_profiler_data): with TT_METAL_DEVICE_PROFILER set, `ttnn.ReadDeviceProfiler(device)` writes
    the device-side log, tracy's `import_log_run_stats` digests it, and the figure is the mean TRISC1
    (math) kernel duration in cycles (`device_trisc1_kernel_duration`, stats "Average") at the clock
    the log records (`deviceInfo.freq`, MHz)."""

    log_path: Path
    default_setup: Callable[[], Any]
    import_log_run_stats: Callable[[Any], Mapping[str, Any]]

    def clear(self, ttnn, device) -> None:
        """Flush what the warm-up runs left in the profiler and drop the log, so that only the
        timed runs are profiled."""
        ttnn.ReadDeviceProfiler(device)
        self.log_path.unlink(missing_ok=True)

    def trisc1_microseconds(self, ttnn, device) -> float:
        ttnn.ReadDeviceProfiler(device)
        setup = self.default_setup()
        setup.deviceInputLog = self.log_path
        data = self.import_log_run_stats(setup)
        cycles = data["devices"][0]["cores"]["DEVICE"]["analysis"]["device_trisc1_kernel_duration"]["stats"]["Average"]
        return float(cycles) / float(data["deviceInfo"]["freq"])


def device_profiler(environ: Mapping[str, str] | None = None) -> DeviceProfiler | None:
    """The device profiler when it is on (TT_METAL_DEVICE_PROFILER set, as TT's benchmark checks)
    and tracy, TT-Metal's profiler tools, imports; else None (host timing)."""
    environ = os.environ if environ is None else environ
    if environ.get("TT_METAL_DEVICE_PROFILER") is None:
        return None
    try:
        from tracy import device_post_proc_config  # noqa: PLC0415 - TT-Metal's tools, device-only
        from tracy.common import PROFILER_DEVICE_SIDE_LOG, PROFILER_LOGS_DIR  # noqa: PLC0415
        from tracy.process_device_log import import_log_run_stats  # noqa: PLC0415
    except ImportError:
        return None
    return DeviceProfiler(Path(PROFILER_LOGS_DIR) / PROFILER_DEVICE_SIDE_LOG, device_post_proc_config.default_setup,
                          import_log_run_stats)


def measure_on_device(folder, tensors: Mapping[str, Any], *, device, ttnn, reference: np.ndarray,
                      read_output: Callable[[Any], np.ndarray], runs: int = 10, warmup: int = 2,
                      clock: Callable[[], float] = time.perf_counter,
                      synchronize: Callable[[], None] | None = None, trace: bool = True,
                      profiler: DeviceProfiler | None = None) -> Measured:
    """Run a build folder with `ttnn.generic_op` (kgen.device.runtime.run) `warmup` times, then
    `runs` timed times, each timed on the host to the device's completion (`synchronize`): the
    median, and the output's PCC against the host reference. With `trace` (and a ttnn that has the
    trace API) the program is captured once into a trace and the timed runs replay it, which takes
    the host's dispatch out of the figure (TT's GEMM benchmark measures with trace too). With the
    device `profiler` on, the figure is instead its mean TRISC1 kernel duration over the timed runs,
    the device time TT's GEMM report's device-based utilization divides by."""
    from kgen.device.runtime import run as run_on_device

    if runs < 1 or warmup < 0:
        raise ValueError("runs >= 1 and warmup >= 0")
    sync = synchronize or (lambda: ttnn.synchronize_device(device))
    out = None
    for _ in range(warmup):
        out = run_on_device(folder, device, tensors, ttnn=ttnn)
    if profiler is not None:
        profiler.clear(ttnn, device)
    sync()
    traced = trace and all(hasattr(ttnn, f) for f in ("begin_trace_capture", "end_trace_capture", "execute_trace",
                                                      "release_trace"))
    if traced:
        trace_id = ttnn.begin_trace_capture(device, cq_id=0)
        out = run_on_device(folder, device, tensors, ttnn=ttnn)
        ttnn.end_trace_capture(device, trace_id, cq_id=0)
        sync()
    times = []
    try:
        for _ in range(runs):
            start = clock()
            if traced:
                ttnn.execute_trace(device, trace_id, cq_id=0, blocking=False)
            else:
                out = run_on_device(folder, device, tensors, ttnn=ttnn)
            sync()
            times.append(clock() - start)
    finally:
        if traced:
            ttnn.release_trace(device, trace_id)
    how = "host timing of a replayed trace to synchronize" if traced else "host timing of generic_op to synchronize"
    microseconds = float(np.median(times)) * 1e6
    if profiler is not None:
        microseconds = profiler.trisc1_microseconds(ttnn, device)
        how = "device profiler: mean TRISC1 kernel duration" + (" of a replayed trace" if traced else "")
    return Measured(microseconds, runs, warmup, how, pcc(read_output(out), reference))


# Trace buffer the device is opened with: one traced generic_op needs a few KiB of commands.
TRACE_REGION_BYTES = 1 << 20


class NoDevice(KgenError):
    """`kgen ab --device` on a machine without a Tenstorrent card (exit 2)."""

    def __init__(self, why: str):
        super().__init__(f"--device: no Tenstorrent card to run on here ({why}); kgen ab without --device "
                         "gives the predictions and the golden model's numerics")
        self.message = str(self)


def open_device():
    """(ttnn, device), or NoDevice: ttnn not importable or no card found."""
    try:
        import ttnn  # noqa: PLC0415 - optional, device-only dependency
    except ImportError as exc:
        raise NoDevice(f"ttnn is not importable: {exc}") from None
    try:
        device = ttnn.open_device(device_id=0, trace_region_size=TRACE_REGION_BYTES)
    except Exception as exc:  # noqa: BLE001 - whatever ttnn raises when no card answers
        raise NoDevice(f"ttnn.open_device(0) failed: {exc}") from None
    return ttnn, device


def device_measure_with(ttnn, device, *, runs: int, warmup: int, seed: int) -> MeasureFn:
    """Each variant's build on the card: seeded inputs (kgen emulate's), ttnn tensors in the
    manifest's formats, the timed runs of `measure_on_device`, PCC against numpy float64."""
    def run_one(artifacts, p: Plan) -> Measured:
        from kgen.core.manifest import load_manifest
        from kgen.core.resources import cache_root
        from kgen.device.runtime import DATA_FORMAT_TO_DTYPE
        from kgen.gen.build import write_artifacts
        from kgen.proof.emulate import make_inputs, tensors_of

        try:
            import torch  # noqa: PLC0415 - ttnn's own dependency, present wherever ttnn is
        except ImportError as exc:
            raise NoDevice(f"torch is not importable: {exc}") from None
        folder = write_artifacts(artifacts, cache_root() / "builds").path
        _, manifest = load_manifest(folder)
        inputs = make_inputs(manifest, seed)
        host = {"in0": inputs.in0, "in1": inputs.in1}
        if inputs.bias is not None:
            host["bias"] = np.zeros((TILE_HW, inputs.bias.shape[0]), np.float32)
            host["bias"][0] = inputs.bias
        tensors = {}
        for t in tensors_of(manifest):
            dtype = getattr(ttnn, DATA_FORMAT_TO_DTYPE[t.data_format])
            layout = ttnn.TILE_LAYOUT if t.layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
            data = host.get(t.name, np.zeros((int(np.prod(t.shape[:-1])), t.shape[-1]), np.float32))
            tensors[t.name] = ttnn.from_torch(torch.from_numpy(np.ascontiguousarray(data)), dtype=dtype,
                                              layout=layout, device=device)
        ref = inputs.in0.astype(np.float64) @ inputs.in1.astype(np.float64)
        if inputs.bias is not None:
            ref = ref + inputs.bias.astype(np.float64)[None, :]
        if p.pack_relu:
            ref = np.maximum(ref, 0.0)
        return measure_on_device(folder, tensors, device=device, ttnn=ttnn, reference=ref,
                                 read_output=lambda t: ttnn.to_torch(t).float().numpy().reshape(ref.shape),
                                 runs=runs, warmup=warmup, profiler=device_profiler())
    return run_one
