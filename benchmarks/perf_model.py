"""kgen's performance model against TT's published silicon measurements (issue #14), by hand:

    python3 benchmarks/perf_model.py            # every manual row of n150 and p150 (13x10, 11x10): predicted vs measured
    python3 benchmarks/perf_model.py --rows     # ... with the table of every row
    python3 benchmarks/perf_model.py --fit      # refit the calibrated constants on the n150 rows (scipy)
    python3 benchmarks/perf_model.py --oob      # the out-of-box rows: TT's automatic config, as kgen
                                                # reproduces it (kgen/perf/ttchoice.py), against them

Every manually tuned row of tech_reports/GEMM_FLOPS/GEMM_FLOPS.md (benchmarks/data/) is planned with
TT's own program config (gemm_rows.manual_spec), lowered, verified and predicted by
kgen.perf.model.predict with the row's tensor placement (in0 and out block-sharded in L1 where the row
says so). Device time is compared with the measured mean TRISC1 kernel duration (the row's
device-based utilization: ideal cycles / utilization); inference time with the host-measured time per
op (device time + the per-op dispatch gap with trace; at least the host issue time without).

Calibration: the constants tagged FIT in configs/perf/*.toml are fitted on the n150 rows only (the
calibration set); the p150 rows are the validation set and fit nothing. `--fit` prints the fitted
values; they are copied into the TOML by hand, with the set named.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gemm_rows import CARD_MHZ, Row, manual_spec, placement, rows  # noqa: E402

from kgen.core.costs import Costs, load_costs  # noqa: E402
from kgen.core.errors import KgenError  # noqa: E402
from kgen.gen.pipeline import run  # noqa: E402
from kgen.gen.spec import parse_text, resolve  # noqa: E402
from kgen.perf.model import Prediction, predict  # noqa: E402

CALIBRATION, VALIDATION = "n150", ("p150", "p150_11x10")
TARGET_MEDIAN, TARGET_P90, TARGET_RANKING = 0.10, 0.25, 0.90
# The report's headline findings (GEMM_FLOPS.md): peak TFLOPS per card and the speed-ups of the
# lower-precision configurations over bfloat16 HiFi4, without trace.
HEADLINE_PEAK = {"n150": 190, "p150": 580, "p150_11x10": 580}
HEADLINE_BF8 = (1.5, 1.8)
HEADLINE_BF4 = (2.0, 3.5)


@dataclass(frozen=True)
class Case:
    row: Row
    program: object               # the verified ir.Program of TT's manual config
    prediction: Prediction
    timed_clock_mhz: float        # the card's clock in TT's timed runs (configs/perf [dispatch])

    @property
    def device_error(self) -> float:
        return self.prediction.math_cycles / self.row.device_cycles - 1

    @property
    def inference_ns(self) -> float:
        return inference_ns(self.row, self.prediction, self.timed_clock_mhz)

    @property
    def inference_error(self) -> float:
        return self.inference_ns / self.row.inference_time_ns - 1


def inference_ns(row: Row, p: Prediction, clock_mhz: float) -> float:
    """Host-measured time per op: the whole program at the clock of the timed runs plus the per-op
    gap; without trace the host issues every op and the time is at least its issue time."""
    device_ns = p.cycles / clock_mhz * 1e3 + p.trace_us * 1e3
    return device_ns if row.use_trace else max(device_ns, p.host_us * 1e3)


def programs(card: str) -> list[tuple[Row, object]]:
    out = []
    for r in rows(card, "manual"):
        spec = resolve(parse_text(manual_spec(r), f"{card}_{r.index}.kspec"))
        out.append((r, run(spec, "verified").verified))
    return out


def evaluate(pairs, costs: Costs | None = None) -> list[Case]:
    """Every row's program predicted as written: its placement is its spec's `memory {}` line."""
    out = []
    for r, prog in pairs:
        c = costs or load_costs(r.arch)
        out.append(Case(r, prog, predict(prog, c), c.dispatch.timed_clock_mhz))
    return out


def summary(cases: list[Case]) -> dict[str, float]:
    dev = sorted(abs(c.device_error) for c in cases)
    inf = sorted(abs(c.inference_error) for c in cases)
    p90 = lambda xs: xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]  # noqa: E731
    return {"rows": len(cases), "device_median": statistics.median(dev), "device_p90": p90(dev),
            "inference_median": statistics.median(inf), "inference_p90": p90(inf)}


def ranking(cases: list[Case]) -> tuple[int, int]:
    """Shapes (with trace on and off apart) whose dtype/fidelity configurations the model puts in the
    measured order of device time."""
    key = lambda c: (c.row.m, c.row.k, c.row.n, c.row.use_trace)  # noqa: E731
    good = total = 0
    for _, group in groupby(sorted(cases, key=key), key=key):
        group = list(group)
        if len(group) < 2:
            continue
        measured = [c.row.label for c in sorted(group, key=lambda c: c.row.device_cycles)]
        predicted = [c.row.label for c in sorted(group, key=lambda c: c.prediction.math_cycles)]
        total += 1
        good += measured == predicted
    return good, total


def speedups(cases: list[Case], dtype: str, fidelity: str, measured: bool) -> list[float]:
    """Per shape, without trace: inference time of bfloat16 HiFi4 over that of (dtype, fidelity)."""
    by = {(c.row.m, c.row.k, c.row.n, c.row.dtype, c.row.math_fidelity): c for c in cases if not c.row.use_trace}
    out = []
    for (m, k, n, dt, fid), base in by.items():
        if (dt, fid) != ("BFLOAT16", "HiFi4") or (m, k, n, dtype, fidelity) not in by:
            continue
        other = by[(m, k, n, dtype, fidelity)]
        t = (lambda c: c.row.inference_time_ns) if measured else (lambda c: c.inference_ns)
        out.append(t(base) / t(other))
    return out


def peak_tflops(cases: list[Case], measured: bool) -> float:
    return max((c.row.tflops if measured else 2 * c.row.m * c.row.k * c.row.n / c.inference_ns / 1e3)
               for c in cases)


def print_rows(cases: list[Case]) -> None:
    print(f"{'card':<5} {'shape':<18} {'dtype':<10} {'fid':<5} {'tr':<2} {'sh':<2} "
          f"{'dev us meas':>12} {'pred':>10} {'err':>6}   {'inf us meas':>12} {'pred':>10} {'err':>6}  bottleneck")
    for c in cases:
        r, p = c.row, c.prediction
        meas_us = r.device_cycles / CARD_MHZ[r.card]
        print(f"{r.card:<5} {f'{r.m}x{r.k}x{r.n}':<18} {r.dtype.lower():<10} {r.math_fidelity:<5} "
              f"{'T' if r.use_trace else '-':<2} {'S' if r.in0_sharded else '-':<2} "
              f"{meas_us:12.1f} {p.math_cycles / p.clock_mhz:10.1f} {c.device_error:+6.1%}   "
              f"{r.inference_time_ns / 1e3:12.1f} {c.inference_ns / 1e3:10.1f} {c.inference_error:+6.1%}  {p.bottleneck}")


def report(by_card: dict[str, list[Case]]) -> bool:
    ok = True
    print(f"\n{'card':<10} {'set':<12} {'rows':>4}  {'device median':>13} {'p90':>6}   {'inference median':>16} {'p90':>6}"
          f"   {'ranking':>9}")
    for card, cases in by_card.items():
        s = summary(cases)
        good, total = ranking(cases)
        role = "calibration" if card == CALIBRATION else "validation"
        print(f"{card:<10} {role:<12} {s['rows']:>4}  {s['device_median']:>13.1%} {s['device_p90']:>6.1%}   "
              f"{s['inference_median']:>16.1%} {s['inference_p90']:>6.1%}   {good:>3}/{total:<3} ")
        ok &= s["device_median"] <= TARGET_MEDIAN and s["device_p90"] <= TARGET_P90 and good >= TARGET_RANKING * total
    print(f"targets: device median <= {TARGET_MEDIAN:.0%}, p90 <= {TARGET_P90:.0%}, ranking >= {TARGET_RANKING:.0%} "
          f"of shapes: {'met' if ok else 'NOT met'}")
    print("\nheadline findings (GEMM_FLOPS.md), measured vs predicted:")
    for card, cases in by_card.items():
        print(f"  {card} peak TFLOPS: measured {peak_tflops(cases, True):.0f}, predicted {peak_tflops(cases, False):.0f} "
              f"(report: ~{HEADLINE_PEAK[card]})")
        for dtype, fid, band in (("BFLOAT8_B", "HiFi2", HEADLINE_BF8), ("BFLOAT4_B", "LoFi", HEADLINE_BF4)):
            m, p = speedups(cases, dtype, fid, True), speedups(cases, dtype, fid, False)
            print(f"  {card} {dtype.lower()} {fid} over bfloat16 HiFi4, no trace: measured {min(m):.2f}-{max(m):.2f}x "
                  f"(median {statistics.median(m):.2f}), predicted {min(p):.2f}-{max(p):.2f}x "
                  f"(median {statistics.median(p):.2f}); report: {band[0]}-{band[1]}x")
    return ok


# ----------------------------------------------------------------------------------------------
# calibration (n150 only)
# ----------------------------------------------------------------------------------------------

# The fitted constants: (table, field). Unpack rate and overhead are Wormhole's own; the math issue
# overheads follow LLK's matmul MOP, the same on both archs (costmodel.md §1.2), so blackhole.toml
# takes the values fitted here too. The host issue time without trace is fitted for the n150's host;
# the per-op gap with trace stays the published op-to-op golden; the clock of the timed runs is the
# n150's own.
FITTED = (("unpack", "both_bytes_per_cycle"), ("unpack", "overhead_per_tile"),
          ("math", "overhead_per_tile"), ("math", "overhead_per_call"))
DISPATCH = (("dispatch", "host_us"), ("dispatch", "timed_clock_mhz"))


def with_values(costs: Costs, fields, values) -> Costs:
    for (table, field), value in zip(fields, values):
        costs = replace(costs, **{table: replace(getattr(costs, table), **{field: float(value)})})
    return costs


def _fit_step(pairs, base: Costs, fields, error, what: str, maxfev: int) -> Costs:
    """Fit `fields` of `base` by Nelder-Mead on the mean |relative error| `error(case)` over `pairs`."""
    from scipy.optimize import minimize

    def loss(x):
        return 1e9 if min(x) < 0 else statistics.fmean(abs(error(c)) for c in evaluate(pairs, with_values(base, fields, x)))

    x0 = [getattr(getattr(base, t), f) for t, f in fields]
    res = minimize(loss, x0, method="Nelder-Mead", options={"xatol": 0.05, "fatol": 1e-4, "maxfev": maxfev})
    print(f"{what} fitted on the n150 rows (mean |relative error| {loss(x0):.4f} -> {res.fun:.4f}):")
    for (t, f), v0, v in zip(fields, x0, res.x):
        print(f"  [{t}] {f}: {v0:g} -> {v:.2f}")
    return with_values(base, fields, res.x)


def fit(pairs) -> None:
    try:
        import scipy  # noqa: F401
    except ImportError:
        sys.exit("perf_model.py --fit needs scipy: pip install scipy")
    fitted = _fit_step(pairs, load_costs("wormhole_b0"), FITTED, lambda c: c.device_error, "device-time constants", 400)
    _fit_step(pairs, fitted, DISPATCH, lambda c: c.inference_error, "dispatch constants", 200)


def out_of_box(card: str) -> None:
    """TT's automatic config of every out-of-box row (ttchoice.tt_auto: ttnn's
    create_simple_matmul_program_config on the card's grid, with ttnn.matmul's default compute config,
    whose fidelities are the rows' labels) predicted against the row's measured TRISC1 time.
    Diagnostic only: not a calibration or validation set, since which config TT's library picked at
    the document's commit is itself reconstructed."""
    from gemm_rows import KGEN_DTYPE
    from kgen.perf.ttchoice import tt_auto, tt_matmul_compute

    errors = []
    for r in rows(card, "oob"):
        if r.use_trace:
            continue
        dt = KGEN_DTYPE[r.dtype]
        spec = resolve(parse_text(f"matmul oob {{ arch = {r.arch}  shape = {r.m} x {r.n} x {r.k}  "
                                  f"dtype {{ in0 = {dt}  in1 = {dt}  out = {dt} }} }}", "oob.kspec"))
        spec = replace(spec, compute=tt_matmul_compute(spec))
        assert spec.compute.math_fidelity == r.math_fidelity, (r.label, spec.compute.math_fidelity)
        choice = tt_auto(spec, device_grid=r.grid)
        if choice.spec is None:
            print(f"{r.label:<44} {choice.note}")
            continue
        try:
            p = predict(run(choice.spec, "verified").verified)
        except KgenError as exc:
            print(f"{r.label:<44} kgen cannot plan TT's {choice.config.dataflow} choice: {exc}")
            continue
        errors.append(abs(p.math_cycles / r.device_cycles - 1))
        c = choice.config
        print(f"{r.label:<44} util {r.device_util_pct:5.1f}%  measured {r.device_cycles:>10,.0f}  predicted "
              f"{p.math_cycles:>10,.0f} cycles  {p.math_cycles / r.device_cycles - 1:+6.1%}  {c.dataflow} "
              f"per_core {c.per_core} w {c.in0_block_w} out_block {c.out_block} subblock {c.out_subblock}"
              f"{' padded' if choice.padded else ''}")
    print(f"{card} out-of-box: median |error| {statistics.median(errors):.1%} over {len(errors)} rows")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--fit", action="store_true", help="refit the FIT constants on the n150 rows")
    ap.add_argument("--oob", action="store_true", help="TT's automatic config against the out-of-box rows")
    args = ap.parse_args(argv)
    if args.oob:
        for card in (CALIBRATION, *VALIDATION):
            out_of_box(card)
        return 0
    if args.fit:
        fit(programs(CALIBRATION))
        return 0
    by_card = {card: evaluate(programs(card)) for card in (CALIBRATION, *VALIDATION)}
    if args.rows:
        for cases in by_card.values():
            print_rows(cases)
    print("\nconstants tagged FIT in configs/perf/*.toml were fitted on the n150 rows (calibration); "
          "the p150 tables are validation only")
    return 0 if report(by_card) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
