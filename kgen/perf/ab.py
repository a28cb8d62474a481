"""`kgen ab`: the spec's base and variants (or `--vary` cross products, over a `--sweep`) side by side.

Per variant: the plan's facts, the op counts of the verified IR (`ir.counted` over every kernel and
its cores), the performance model's prediction, and the numerics of the bit-level golden model
(kgen/proof/golden.py) on the spec's real K; with `--emulate` the emulator's run, with `--device`
the card's. Everything is a frozen value (`Comparison`, abvalues.py); abreport.py prints it.

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
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from kgen.core.errors import KgenError, SpecError
from kgen.core.types import TILE_HW
from kgen.device.measure import (TRACE_REGION_BYTES, DeviceProfiler, Measured, NoDevice,  # noqa: F401
                                 device_profiler, device_tensors, measure_on_device as _measure_on_device,
                                 open_device)
from kgen.gen.ir import Program, counted
from kgen.gen.optable import DATACOPY, L1_ACC_SWITCH, MATMUL, OPS, PACK_OP, RECONFIG, work_of
from kgen.gen.plan import CB_PARTIALS, Plan
from kgen.gen.spec import SpecFile, numeric_keys, override_entry, resolve, with_variant
from kgen.perf.abbase import BASE, SpecBase, spec_base
from kgen.perf.abvalues import (PCC_MIN_SPREAD, REL_FLOOR, ULP_FLOOR, CbUse, Comparison, Difference,  # noqa: F401
                                Effect, Emulated, ErrorStats, Numerics, PlanFacts, RegionUse, Row, Speed, Verdict)
from kgen.perf.model import Prediction, predict
from kgen.perf.abverdict import RESOLUTION, effects, pairwise_differences, verdict  # noqa: F401
from kgen.proof.numerics import (ULP_BINS, REL_ERR_FLOOR, error_figures, pcc, relative_error,  # noqa: F401
                                 ulp_distance, ulp_histogram)
from kgen.proof.oracle import Float64Check

DISTRIBUTIONS = ("random", "mixed", "all_ones", "positive")
PROXY_ROWS = PROXY_COLS = TILE_HW          # outputs per distribution of the K-faithful proxy
SWEEP_DIMS = {"M": 0, "N": 1, "K": 2}      # positions in `shape = M x N x K`

# Op kinds of the comparison, in print order.
OP_KINDS = ("unpack tiles", "matmul_block", "pack tiles", "partials pack tiles", "reload copies", "reload tiles",
            "L1-acc switches", "reconfigs", "DST sections", "NoC read tiles", "NoC write pages", "multicasts",
            "semaphore ops")


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
        # commas inside a call's parentheses belong to the value: hardtanh(-2, 2),relu
        items = tuple(v.strip() for v in re.split(r",(?![^()]*\))", values))
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
class AbVariant:
    """One column of `kgen ab`: a variant name, the spec variant it starts from and its overrides."""

    variant: str
    file_variant: str | None          # the spec's own variant it starts from
    overrides: tuple[tuple[str, str], ...]
    as_written: bool = False          # the spec as written, added to --vary's rows: `overrides` only name its values


def candidates(spec: SpecFile, vary: Sequence[tuple[str, Sequence[str]]]) -> tuple[AbVariant, ...]:
    """Without --vary: the base and each of the spec's variants. With --vary: the cross product of
    the flags' values, each applied to the base (the spec's own variants are then not listed), then
    the spec as written when it is none of them (abbase.spec_base)."""
    return candidates_and_base(spec, vary)[0]


def candidates_and_base(spec: SpecFile, vary: Sequence[tuple[str, Sequence[str]]]) -> tuple[tuple[AbVariant, ...],
                                                                                              SpecBase]:
    if not vary:
        return (AbVariant(BASE, None, ()),) + tuple(
            AbVariant(name, name, tuple((k, e.value.text) for k, e in entries.items()))
            for name, entries in spec.variants.items()), spec_base(spec, (), ())
    keys = [k for k, _ in vary]
    out = []
    for combo in itertools.product(*(values for _, values in vary)):
        name = ",".join(f"{k.rpartition('.')[2]}={v}" for k, v in zip(keys, combo))
        out.append(AbVariant(name, None, tuple(zip(keys, combo))))
    base = spec_base(spec, vary, [(c.variant, c.overrides) for c in out])
    if base.added:            # after the cross product, whose rows keep their places (bhpy_ab zips them)
        out.append(AbVariant(BASE, None, base.values, as_written=True))
    return tuple(out), base


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
    """Every op of every kernel, times its loops (`ir.counted`) and the cores the kernel runs on; what
    one execution does is the op table's."""
    n: dict[str, int] = dict.fromkeys(OP_KINDS, 0)
    for k in program.kernels:
        cores = k.cores.size
        for o, times in counted(k.body):
            t = times * cores
            row, work = OPS[o.kind], work_of(o)
            n["unpack tiles"] += t * work.unpack_tiles
            n["pack tiles"] += t * work.pack_tiles
            n["DST sections"] += t * work.dst_sections
            n["NoC read tiles"] += t * work.noc_read_tiles
            n["NoC write pages"] += t * work.noc_write_pages
            n["multicasts"] += t * work.multicasts
            n["semaphore ops"] += t * work.semaphore_ops
            if row.category == MATMUL:
                n["matmul_block"] += t
            elif row.category == RECONFIG:
                n["reconfigs"] += t
            elif row.category == L1_ACC_SWITCH:
                n["L1-acc switches"] += t
            if row.category == PACK_OP and o[row.writes_back] == CB_PARTIALS:
                n["partials pack tiles"] += t * work.pack_tiles
            if row.category == DATACOPY and o["cb"] == CB_PARTIALS:     # partials copied back into DST
                n["reload copies"] += t
                n["reload tiles"] += t * work.unpack_tiles
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


def signed_ulps(out: np.ndarray, ref: np.ndarray, grid: str) -> np.ndarray:
    """Per output: its ULP distance from the float64 result rounded to the grid (ulp_distance at
    ULP_FLOOR of the largest |ref|), signed as out - ref. The one error scale of `kgen ab`."""
    floor = ULP_FLOOR * float(np.abs(ref).max(initial=0.0))
    with np.errstate(invalid="ignore"):
        sign = np.sign(np.asarray(out, np.float64) - np.asarray(ref, np.float64))
    return (np.nan_to_num(sign) * ulp_distance(out, ref, grid, floor)).astype(np.int64)


def defined_pcc(out: np.ndarray, ref: np.ndarray) -> float | None:
    """Pearson correlation, or None where it is undefined (a constant output or reference) or says
    nothing about the kernel: a reference whose spread is under PCC_MIN_SPREAD of its magnitude
    (all-positive sums of similar size), where a 1 % error swamps the variation being correlated."""
    o, r = np.asarray(out, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    if o.size < 2 or np.ptp(o) == 0 or np.ptp(r) == 0:
        return None
    if np.std(r) < PCC_MIN_SPREAD * np.sqrt(np.mean(r * r)):
        return None
    return float(np.corrcoef(o, r)[0, 1])


def _error_stats(name: str, out: np.ndarray, ref: np.ndarray, grid: str) -> ErrorStats:
    """max abs; max rel above REL_FLOOR; PCC where defined; ULPs against float64 rounded to the grid."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(out.astype(np.float64) - ref)
    rel, floor, counted = relative_error(out, ref)
    ulps = np.abs(signed_ulps(out, ref, grid))
    return ErrorStats(name, float(diff.max(initial=0.0)), rel, floor, counted, defined_pcc(out, ref),
                      int(ulps.max(initial=0)), ulp_histogram(ulps), float(out.ravel()[0]))


def _numerics_key(p: Plan) -> tuple:
    s = p.spec
    return (p.compute.math_fidelity, p.compute.fp32_dest_acc, p.l1_acc_enabled, p.in0_format, p.in1_format,
            p.out_format, p.partials_format, p.bias_format, p.in0_block_w, p.num_blocks, p.fuse_bias, p.pack_relu,
            p.untilize_out, p.arch.name, s.k, p.activation, p.compute.math_approx,
            s.activation)                     # the text the float64 oracle reads its parameters from


class _Golden:
    """The golden model's outputs per distribution, computed once per distinct numerics key (the
    variants that differ only in grid or blocking of M/N share them)."""

    def __init__(self, seed: int):
        self.seed = seed
        # per numerics key: the figures, and the signed ULPs of each distribution's outputs
        self.cache: dict[tuple, tuple[Numerics, Mapping[str, np.ndarray]]] = {}

    def __call__(self, p: Plan) -> tuple[Numerics, Mapping[str, np.ndarray]]:
        key = _numerics_key(p)
        if key not in self.cache:
            self.cache[key] = self._run(p)
        return self.cache[key]

    def _run(self, p: Plan) -> tuple[Numerics, Mapping[str, np.ndarray]]:
        from dataclasses import replace

        from kgen.proof.golden import golden_from_plan
        from kgen.proof.oracle import Datapath, check, fused

        k = p.spec.k
        in0, in1, bias = proxy_inputs(k, self.seed, (p.in0_format, p.in1_format, p.bias_format or p.out_format),
                                      padded_k=p.kt * TILE_HW)
        values = golden_from_plan(p, in0, in1, bias if p.fuse_bias else None, mode="exact").values
        product = in0.astype(np.float64) @ in1.astype(np.float64)
        pre = product + bias.astype(np.float64)[None, :] if p.fuse_bias else product
        # the float64 oracle: the spec's activation text as its own definition gives it, never kgen's
        # activation table (the packer's ReLU too). The proxy is one 32 x 32 tile, so an output's
        # place in its tile is its place in the proxy (sigmoid's vector modes cover part of a tile)
        ref = fused(p.spec.activation)(pre, *np.indices(pre.shape))
        datapath = replace(Datapath.of_plan(p), rows_per_batch=PROXY_ROWS)
        plain = values
        if datapath.fused_bias or datapath.activation != "none":     # the plan's matmul alone, same flow
            plain = golden_from_plan(p, in0, in1, mode="exact", plain=True).values
        f64 = check(values, product, plain, bias if p.fuse_bias else None, datapath)
        grid = "Float32" if p.out_format == "Float32" else "Float16_b"
        outputs = {d: values[rows, cols] for d, (rows, cols) in PROXY_LAYOUT.items()}
        errors = tuple(_error_stats(d, outputs[d], ref[rows, cols], grid) for d, (rows, cols) in PROXY_LAYOUT.items())
        ulps = {d: signed_ulps(outputs[d], ref[rows, cols], grid) for d, (rows, cols) in PROXY_LAYOUT.items()}
        s = p.spec
        proxy = (s.m * s.batch, s.n) != (PROXY_ROWS, PROXY_COLS)
        note = (f"K-faithful proxy: {PROXY_ROWS} x {PROXY_COLS} outputs (16 x 16 random, 8 x 16 mixed, 4 x 16 "
                f"all-ones, 4 x 16 positive) at the spec's "
                f"K = {k}, with its formats, fidelity, Dst mode and K-blocking ({p.num_blocks} K-blocks of "
                f"{p.in0_block_w} tiles); the spec's output is {s.batch * s.m} x {s.n}, and M and N do not change "
                f"the sequence of accumulations an output element sees") if proxy else \
            f"the spec's full shape ({s.m} x {s.n} x {k})"
        ulp_name = "float32" if grid == "Float32" else "bfloat16"
        return Numerics("exact", PROXY_ROWS, PROXY_COLS, k, proxy, ulp_name, note, errors, f64,
                        proxy_place(*f64.worst)), ulps


def proxy_place(row: int, col: int) -> str:
    """Where an output of the proxy sits: its input distribution and the position in it, e.g.
    `random [3, 5]`; a cell outside PROXY_LAYOUT by its in0 rows and in1 columns, e.g. `positive
    in0 x normal in1 [1, 3]` (in1's first 16 columns are normal, its last 16 all ones)."""
    for name, (rows, cols) in PROXY_LAYOUT.items():
        if rows.start <= row < rows.stop and cols.start <= col < cols.stop:
            return f"{name} [{row - rows.start}, {col - cols.start}]"
    rows_of = next((name, rows) for name, (rows, _) in PROXY_LAYOUT.items() if rows.start <= row < rows.stop)
    half = PROXY_COLS // 2
    in1 = "normal" if col < half else "ones"
    return f"{rows_of[0]} in0 x {in1} in1 [{row - rows_of[1].start}, {col % half}]"


# ----------------------------------------------------------------------------------------------
# the comparison
# ----------------------------------------------------------------------------------------------

EmulateFn = Callable[[Any, Plan], Emulated]
MeasureFn = Callable[[Any, Plan], Measured]

# The emulator's CPU time per tile product (M x N x K / 32^3), measured with `kgen emulate` of
# peak_bf16 on a 2-core x86 host: at 4096 x 4096 x 512 (262,144 tile products) 220 s of CPU exact
# and 6.2 s fast; at K = 4096 (2.1 M) 33 s fast. Plus a start per build (its kernels compiled for
# the host). An estimate of CPU time: a busy machine takes longer in wall time.
EXACT_TILE_PRODUCTS_PER_SECOND = 1_200.0
FAST_TILE_PRODUCTS_PER_SECOND = 69_000.0
EMULATION_START_SECONDS = 2.5
SUGGEST_FAST_SECONDS = 20.0           # above this estimate, exact emulation suggests --numerics fast


def emulation_estimate(p: Plan, numerics: str) -> float:
    """CPU seconds the host emulator is expected to take for one build (the rates above)."""
    tile_products = p.spec.batch * p.mt * p.nt * p.kt
    rate = EXACT_TILE_PRODUCTS_PER_SECOND if numerics == "exact" else FAST_TILE_PRODUCTS_PER_SECOND
    return EMULATION_START_SECONDS + tile_products / rate


def compare(spec_file: SpecFile, spec_text: str, *, vary: Sequence[tuple[str, Sequence[str]]] = (),
            sweep: tuple[str | None, Sequence[int]] = (None, ()), seed: int = 0, command: str = "",
            emulate: EmulateFn | None = None, measure: MeasureFn | None = None, numerics: str = "exact",
            progress: Callable[[str], None] = lambda phase: None,
            log: Callable[[str], None] = lambda line: None) -> Comparison:
    """Every candidate at every sweep value: planned, lowered, verified, rendered (for its kernel id),
    predicted and put through the golden model; `emulate`/`measure` run a rendered build further,
    once per distinct kernel. A candidate that breaks a rule becomes an illegal row; if every one
    does, that is an error. `progress` names the phase (a spinner); `log` gets one line as each
    emulation or device job starts and ends."""
    from kgen.gen.pipeline import run

    sweep_field, sweep_values = sweep
    golden = _Golden(seed)
    rows: list[Row] = []
    jobs: list[tuple[int, Any, Plan]] = []         # rows whose build runs further, once per kernel id
    ulps: dict[tuple[str, int | None], np.ndarray] = {}
    cands, base = candidates_and_base(spec_file, vary)
    points: tuple[int | None, ...] = tuple(sweep_values) if sweep_field else (None,)
    for point in points:
        first_of: dict[str, Row] = {}
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
            kid = artifacts.rendered.kernel_id
            if kid in first_of:         # the same kernel: its figures, not a second run
                twin = first_of[kid]
                rows.append(Row(cand.variant, point, cand.overrides, kid, plan=twin.plan, ops=twin.ops,
                                speed=twin.speed, numerics=twin.numerics, same_as=twin.variant))
                ulps[(cand.variant, point)] = ulps[(twin.variant, point)]
                continue
            program, p = artifacts.verified, artifacts.plan
            numerics_facts, signed = golden(p)
            ulps[(cand.variant, point)] = signed["random"]
            row = Row(cand.variant, point, cand.overrides, kid, plan=plan_facts(p), ops=op_counts(program),
                      speed=speed_of(predict(program)), numerics=numerics_facts)
            first_of[kid] = row
            jobs.append((len(rows), artifacts, p))
            rows.append(row)
    legal = [r for r in rows if r.illegal is None]
    varied = [r for r in rows if not (base.added and r.variant == base.name)]     # the added base is no variant
    if not any(r.illegal is None for r in varied):
        lines = "; ".join(f"`{r.label}`: {r.illegal}" for r in varied)
        raise SpecError(f"no variant of {spec_file.path} plans, so there is nothing to compare: {lines}",
                        hint="change the --vary/--sweep values to ones the planner accepts")
    if emulate is not None or measure is not None:
        rows = _run_jobs(rows, jobs, emulate, measure, numerics, progress, log)
        legal = [r for r in rows if r.illegal is None]
    differences = pairwise_differences(legal, ulps, base.name)
    keys = [k for k, _ in vary]
    facts = tuple(verdict([r for r in legal if r.sweep == point], sweep_field, point, keys, base.name)
                  for point in points if any(r.sweep == point for r in legal))
    return Comparison(spec_file.path, spec_file.matmul_name, _arch_of(spec_file), spec_text, command,
                      tuple((k, tuple(v)) for k, v in vary), sweep_field, tuple(sweep_values), seed,
                      tuple(rows), differences, facts, base.name, base.note)


def _run_jobs(rows: list[Row], jobs, emulate: EmulateFn | None, measure: MeasureFn | None, numerics: str,
              progress: Callable[[str], None], log: Callable[[str], None]) -> list[Row]:
    """Each distinct kernel through the emulator and/or onto the card, with a line as each job
    starts and ends; a variant with the same kernel as an earlier one takes its results."""
    rows = list(rows)
    if emulate is not None:
        estimates = [emulation_estimate(p, numerics) for _, _, p in jobs]
        total = sum(estimates)
        log(f"emulating {len(jobs)} kernel(s) with {numerics} numerics: about {_duration(total)} of CPU "
            "(estimated; a busy machine takes longer)")
        if numerics == "exact" and total > SUGGEST_FAST_SECONDS:
            fast = sum(emulation_estimate(p, "fast") for _, _, p in jobs)
            log(f"  --numerics fast would take about {_duration(fast)}: it checks against the fast golden "
                "model within tolerance, not bit for bit")
    done_cpu = 0.0
    started = time.perf_counter()
    for n, (i, artifacts, p) in enumerate(jobs):
        r = rows[i]
        if emulate is not None:
            left = sum(estimates[n:]) * _pace(done_cpu, sum(estimates[:n]))
            progress(f"emulating {r.label} ({n + 1} of {len(jobs)}, about {_duration(left)} left)")
            log(f"emulate {r.label}: started ({n + 1} of {len(jobs)}, about {_duration(left)} left)")
            t0 = time.perf_counter()
            em = emulate(artifacts, p)
            done_cpu += time.perf_counter() - t0
            word = "bit-exact" if em.exact_match else "within tolerance" if em.ok else "FAILED"
            log(f"emulate {r.label}: {em.status}, {word} "
                f"in {time.perf_counter() - t0:.1f} s" + _float64_words(em.float64))
            r = rows[i] = _with(r, emulated=em)
        if measure is not None:
            progress(f"on the card: {r.label} ({n + 1} of {len(jobs)})")
            log(f"device {r.label}: started ({n + 1} of {len(jobs)})")
            t0 = time.perf_counter()
            me = measure(artifacts, p)
            log(f"device {r.label}: {me.microseconds:,.1f} us measured, in {time.perf_counter() - t0:.1f} s")
            rows[i] = _with(r, measured=me)
    if jobs:
        log(f"done in {time.perf_counter() - started:.1f} s")
    by_kernel = {(r.sweep, r.kernel_id): r for r in rows if r.illegal is None and r.same_as is None}
    return [_with(r, emulated=by_kernel[(r.sweep, r.kernel_id)].emulated,
                  measured=by_kernel[(r.sweep, r.kernel_id)].measured) if r.same_as is not None else r for r in rows]


def _float64_words(check: Float64Check | None) -> str:
    """`; float64 within 0.41` or `; float64 BEYOND x3.2 (selu)` for an emulation's log line."""
    from kgen.perf.abfloat64 import float64_short

    return "" if check is None else f"; float64 {float64_short(check)}"


def _pace(taken: float, estimated: float) -> float:
    """How much slower than estimated the emulations so far ran (1 before the first): the time left
    is the estimate scaled by it."""
    return taken / estimated if taken > 0 and estimated > 0 else 1.0


def _with(r: Row, **changes) -> Row:
    from dataclasses import replace
    return replace(r, **changes)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _arch_of(spec_file: SpecFile) -> str:
    entry = spec_file.entries.get("arch")
    return entry.value.text if entry else "?"


def _resolve_candidate(spec_file: SpecFile, cand: AbVariant, sweep_field: str | None, point: int | None):
    entries = {k: override_entry(k, v, "--vary") for k, v in cand.overrides
               if cand.file_variant is None and not cand.as_written}
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
                        e.errors.pcc, e.seconds, e.float64)
    return run_one


pcc = defined_pcc


def measure_on_device(folder, tensors: Mapping[str, Any], **options) -> Measured:
    """kgen.device.measure.measure_on_device with ab's PCC rule (`defined_pcc`)."""
    return _measure_on_device(folder, tensors, pcc_of=defined_pcc, **options)


def device_measure_with(ttnn, device, *, runs: int, warmup: int, seed: int) -> MeasureFn:
    """Each variant's build on the card: seeded inputs (kgen emulate's), ttnn tensors in the
    manifest's formats, the timed runs of `measure_on_device`, PCC against numpy float64."""
    def run_one(artifacts, p: Plan) -> Measured:
        from kgen.core.manifest import load_manifest
        from kgen.core.resources import cache_root
        from kgen.gen.build import write_artifacts
        from kgen.proof.emulate import make_inputs, reference_product, tensors_of

        folder = write_artifacts(artifacts, cache_root() / "builds").path
        _, manifest = load_manifest(folder)
        inputs = make_inputs(manifest, seed)
        host = {"in0": inputs.in0, "in1": inputs.in1}
        if inputs.bias is not None:
            host["bias"] = np.zeros((TILE_HW, inputs.bias.shape[0]), np.float32)
            host["bias"][0] = inputs.bias
        tensors = device_tensors(ttnn, device, tensors_of(manifest), host)
        ref = reference_product(inputs)
        if inputs.bias is not None:
            ref = ref + inputs.bias.astype(np.float64)[None, :]
        if p.pack_relu:
            ref = np.maximum(ref, 0.0)
        return measure_on_device(folder, tensors, device=device, ttnn=ttnn, reference=ref,
                                 read_output=lambda t: ttnn.to_torch(t).float().numpy().reshape(ref.shape),
                                 runs=runs, warmup=warmup, profiler=device_profiler())
    return run_one
