#!/usr/bin/env python3
"""kgen tune against TT-Metal's own choices, on TT's published GEMM tables; every figure predicted.

Manual tables (n150 and p150, benchmarks/gemm_rows.py): for every shape, dtype, fidelity and tensor
placement TT ran, `kgen.perf.tune.tune` searches the whole space (`--space all`: grid up to the
card's, every block field, the policy, and the dataflow where the tensors are in DRAM; fidelity and
dtypes fixed) with the row's placement as the spec's `memory { }`, so every candidate is the program
kgen builds, checked by the planner's shard rules. The pick is written out (kgen.gen.spec_print) and
`python3 -m kgen check` must accept it; only picks it accepts are counted. TT's manual config is
predicted by the same model with the same placement.

TT's config is one of the candidates of this exhaustive search, so kgen's pick is never slower under
the model (by construction, not a finding). What the table shows is the distribution of the gain
TT manual / kgen over the buildable picks. A sample (`--verify N`, the smallest picks) is built,
type-checked against TT-Metal's headers, emulated and port-checked (kgen.perf.tune.verify_spec_text).

Out-of-box tables: for every shape whose measured device utilization is below 60 %, kgen's buildable
pick against TT's automatic choice (kgen/perf/ttchoice.py, on the card's grid) and against the
model's configuration-independent floor, both predicted; beside them, TT's own manual config over
its out-of-box one, measured on silicon.

Rows that differ only in use_trace share one device time and are tuned once. Run by hand:
`python3 benchmarks/tune_vs_tt.py [--cards n150 p150] [--tables manual oob] [--verify 4] [-j 2]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gemm_rows  # noqa: E402
from kgen.core.arch import load_arch  # noqa: E402
from kgen.core.costs import load_costs  # noqa: E402
from kgen.core.errors import KgenError  # noqa: E402
from kgen.core.types import DTYPE_TO_FORMAT  # noqa: E402
from kgen.gen import dataflow as dataflows  # noqa: E402
from kgen.gen.pipeline import run  # noqa: E402
from kgen.gen.spec import BlockSpec, parse_text, resolve  # noqa: E402
from kgen.perf.model import lower_bound_cycles, predict  # noqa: E402
from kgen.perf.ttchoice import tt_auto, tt_matmul_compute  # noqa: E402
from kgen.perf.tune import (spec_text, tiles, tune, verify_spec_text,  # noqa: E402
                            with_placement)

OOB_UTIL_BELOW = 60.0
GAIN_STEPS = (1.05, 1.2)


@dataclass
class Pick:
    card: str
    table: str
    label: str
    path: Path                  # the written .kspec
    macs: int
    sharded: bool
    kgen_us: float
    reference_us: float         # TT manual (manual table) or TT auto (out-of-box)
    check: str = ""             # "ok" or kgen check's message
    verify: dict | None = None


def _open_spec(spec):
    """The spec with everything the search may change left open."""
    return replace(spec, grid=None, block=BlockSpec())


def _tuned(spec, padded: bool, jobs: int):
    # under a sharded placement the dataflow is held at the 2D multicast factory's, the layout TT's
    # sharded rows ran (the planner rejects the others; holding it saves their plan() calls)
    keep = ("dataflow",) if spec.memory.sharded else ()
    if spec.memory.sharded:
        spec = replace(spec, dataflow=dataflows.MCAST_2D.name)
    r = tune(spec, space="all", top=1, padded=padded, keep=keep, jobs=jobs)
    return spec, r.ranked[0]


def _floor_us(spec) -> float:
    """A time no configuration of these tensors beats in the model, whatever its grid or blocking:
    every byte of in0, in1 and the output crossing the card's DRAM once at its usable bandwidth
    (Costs.dram_floor_cycles), or the card's whole grid sharing the tile products at the compute
    stage's per-tile cost (model.lower_bound_cycles), whichever is longer. The model never predicts
    a config below it; a pick at the floor is DRAM-bound in the model whatever its config."""
    arch, costs = load_arch(spec.arch), load_costs(spec.arch)
    mt, nt, kt = tiles(spec)
    size = {d: arch.tile_bytes[DTYPE_TO_FORMAT[d]] for d in (spec.dtype_in0, spec.dtype_in1, spec.dtype_out)}
    dram_bytes = mt * kt * size[spec.dtype_in0] + kt * nt * size[spec.dtype_in1] + mt * nt * size[spec.dtype_out]
    gx, gy = arch.worker_grid
    per_core = (1, -(-mt * nt // (gx * gy)))
    compute_cycles = lower_bound_cycles(spec.arch, per_core, kt, spec.compute.math_fidelity,
                                        spec.compute.fp32_dest_acc, DTYPE_TO_FORMAT[spec.dtype_in0],
                                        DTYPE_TO_FORMAT[spec.dtype_in1])
    return max(costs.dram_floor_cycles(dram_bytes), compute_cycles) / costs.arch.clock_mhz


def _tt_manual_on_silicon(card: str, row) -> float | None:
    """What TT's own hand tuning gained over its out-of-box choice on silicon for this shape, dtype and
    fidelity: the out-of-box row's measured TRISC1 time over the fastest manual row's (either trace
    setting, any placement), or None if the manual table has no such row. Published measurements only."""
    times = [r.device_cycles for r in gemm_rows.rows(card, "manual")
             if (r.m, r.k, r.n, r.dtype, r.math_fidelity) == (row.m, row.k, row.n, row.dtype, row.math_fidelity)]
    return row.device_cycles / min(times) if times else None


def _predict(spec) -> float:
    return predict(run(spec, "ir").ir).microseconds


def _kgen_check(path: Path) -> str:
    """`kgen check` of the written pick, this checkout's kgen: "ok" or its message."""
    proc = subprocess.run([sys.executable, "-m", "kgen", "check", str(path)], capture_output=True, text=True,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    if proc.returncode == 0:
        return "ok"
    return (proc.stderr.strip() or proc.stdout.strip()).splitlines()[0] if (proc.stderr or proc.stdout) else \
        f"exit {proc.returncode}"


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile, linear between order statistics (numpy's default)."""
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _distribution(gains: list[float]) -> str:
    if not gains:
        return "no buildable picks"
    steps = ", ".join(f">= {g:.2f}x on {sum(x >= g * (1 - 1e-9) for x in gains)}" for g in GAIN_STEPS)
    return (f"{len(gains)} picks: median {statistics.median(gains):.3f}x, p90 {_quantile(gains, 0.9):.3f}x, "
            f"max {max(gains):.3f}x; {steps}")


def _config(s) -> str:
    """The pick's config; the placement is the row's (its column)."""
    return s.candidate.short(s.policy).split(" memory ")[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", nargs="+", default=["n150", "p150"], choices=gemm_rows.CARDS)
    parser.add_argument("--padded", action=argparse.BooleanOptionalAction, default=True,
                        help="per_core values that do not divide are searched too (default); --no-padded: divisors only")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--tables", nargs="+", default=["manual", "oob"], choices=["manual", "oob"],
                        help="which of the published tables to run (both by default)")
    parser.add_argument("--verify", type=int, default=4, metavar="N",
                        help="verify the N smallest manual-table picks, half sharded, half DRAM (default 4; 0: none)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N rows of each table (a quick look)")
    parser.add_argument("--keep-specs", metavar="DIR", help="write the picks' .kspec files here (default: a temp dir)")
    args = parser.parse_args()
    start = time.perf_counter()
    tmp = None
    if args.keep_specs:
        out_dir = Path(args.keep_specs)
        out_dir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory()
        out_dir = Path(tmp.name)

    picks: list[Pick] = []
    rows_printed: list[tuple[Pick, str]] = []          # (pick, the rest of its table line)
    for card in args.cards:
        seen = set()
        for row in gemm_rows.rows(card, "manual")[:args.limit] if "manual" in args.tables else ():
            place = gemm_rows.placement(row)
            key = (row.m, row.k, row.n, row.dtype, row.math_fidelity, tuple(sorted(place.items())))
            if key in seen:
                continue
            seen.add(key)
            manual = with_placement(resolve(parse_text(gemm_rows.manual_spec(row), "<row>")), place)
            where = "sharded" if manual.memory.sharded else "dram"
            head = f"{card:<5} {row.m:>5}x{row.k:>5}x{row.n:>5} {row.dtype.lower():>9} {row.math_fidelity:>5} {where:>7}"
            try:
                manual_us = _predict(manual)
            except KgenError as exc:
                print(f"{head}  TT's manual config does not plan in kgen: {exc}")
                continue
            searched, best = _tuned(_open_spec(manual), args.padded, args.jobs)
            path = out_dir / f"{card}_manual_{len(picks):03d}.kspec"
            path.write_text(spec_text(searched, best.candidate, f"{best.microseconds:,.2f} us predicted; "
                                                                 f"TT manual {manual_us:,.2f} us predicted"))
            pick = Pick(card, "manual", head, path, row.m * row.k * row.n, manual.memory.sharded, best.microseconds,
                        manual_us)
            picks.append(pick)
            rows_printed.append((pick, f"{manual_us:>10,.2f} {best.microseconds:>10,.2f} "
                                       f"{manual_us / best.microseconds:>6.3f}  {_config(best)}"))

        for row in gemm_rows.rows(card, "oob")[:args.limit] if "oob" in args.tables else ():
            if row.device_util_pct >= OOB_UTIL_BELOW:
                continue
            key = ("oob", row.m, row.k, row.n, row.dtype, row.math_fidelity)
            if key in seen:
                continue
            seen.add(key)
            dt = gemm_rows.KGEN_DTYPE[row.dtype]
            spec = resolve(parse_text(f"matmul oob_{card}_{row.index} {{\n arch = {row.arch}\n shape = {row.m} x "
                                      f"{row.n} x {row.k}\n dtype {{ in0 = {dt} in1 = {dt} out = {dt} }}\n}}\n",
                                      "<oob row>"))
            # the out-of-box call passes no compute config: ttnn.matmul's own defaults (the row's label)
            spec = with_placement(replace(spec, compute=tt_matmul_compute(spec)), gemm_rows.placement(row))
            assert spec.compute.math_fidelity == row.math_fidelity, row.label
            head = (f"{card:<5} {row.m:>5}x{row.k:>5}x{row.n:>5} {dt:>9} {row.math_fidelity:>5} "
                    f"{row.device_util_pct:>6.1f}")
            auto = tt_auto(spec, device_grid=row.grid)      # no core grid: the card's whole grid
            if auto.spec is None:
                print(f"{head}  TT auto n/a ({auto.note})")
                continue
            try:
                auto_us = _predict(replace(auto.spec, memory=spec.memory))
            except KgenError as exc:
                print(f"{head}  TT's auto config does not plan in kgen: {exc}")
                continue
            searched, best = _tuned(spec, args.padded, args.jobs)
            floor = _floor_us(spec)
            hand = _tt_manual_on_silicon(card, row)
            path = out_dir / f"{card}_oob_{len(picks):03d}.kspec"
            path.write_text(spec_text(searched, best.candidate, f"{best.microseconds:,.2f} us predicted; "
                                                                 f"TT auto {auto_us:,.2f} us predicted"))
            pick = Pick(card, "oob", head, path, row.m * row.k * row.n, spec.memory.sharded, best.microseconds, auto_us)
            picks.append(pick)
            c = auto.config
            rows_printed.append((pick, f"{auto_us:>10,.2f} {best.microseconds:>10,.2f} "
                                       f"{auto_us / best.microseconds:>6.2f} {floor:>9,.2f} "
                                       f"{best.microseconds / floor:>6.2f} {auto_us / floor:>6.2f} "
                                       f"{'n/a' if hand is None else f'{hand:.2f}':>5}  TT auto: {c.dataflow} "
                                       f"grid {c.grid[0]}x{c.grid[1]} per_core {c.per_core[0]}x{c.per_core[1]} "
                                       f"block {c.out_block[0]}x{c.out_block[1]} w {c.in0_block_w} "
                                       f"sb {c.out_subblock[0]}x{c.out_subblock[1]}{' padded' if auto.padded else ''}"))

    # every pick through `kgen check`, with its placement as written
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for pick, verdict in zip(picks, pool.map(lambda p: _kgen_check(p.path), picks)):
            pick.check = verdict

    # a sample of the buildable manual picks, the smallest (what the emulator runs in minutes)
    buildable = [p for p in picks if p.table == "manual" and p.check == "ok"]
    sample = []
    for sharded in (True, False):
        group = sorted((p for p in buildable if p.sharded == sharded), key=lambda p: (p.macs, p.card, p.label))
        sample += group[:(args.verify + (1 if sharded else 0)) // 2]
    for p in sample:
        p.verify = verify_spec_text(p.path.read_text())

    for card in args.cards:
        mine = [(p, line) for p, line in rows_printed if p.card == card and p.table == "manual"]
        if mine:
            print(f"\n== {card}: manual table: kgen tune's buildable pick vs TT's manual config, both predicted, "
                  f"same placement")
            print(f"{'card':<5} {'shape MxKxN':>17} {'dtype':>9} {'fid':>5} {'place':>7} {'TT man us':>10} "
                  f"{'kgen us':>10} {'gain':>6}  kgen's pick [kgen check]")
            for p, line in mine:
                print(f"{p.label} {line}  [{p.check}]")
        mine = [(p, line) for p, line in rows_printed if p.card == card and p.table == "oob"]
        if mine:
            print(f"\n== {card}: out-of-box table, shapes with measured device utilization < {OOB_UTIL_BELOW:.0f} %: "
                  f"kgen's buildable pick vs TT's automatic choice and the model's floor, all predicted")
            print(f"{'card':<5} {'shape MxKxN':>17} {'dtype':>9} {'fid':>5} {'util%':>6} {'TT auto':>10} "
                  f"{'kgen us':>10} {'gain':>6} {'floor us':>9} {'kgen/fl':>6} {'auto/fl':>6} {'hand':>5}  "
                  f"TT auto's config [kgen check]")
            print("  (floor: no config of these tensors is faster in the model; hand: TT's manual config over its "
                  "out-of-box one, both measured on silicon)")
            for p, line in mine:
                print(f"{p.label} {line}  [{p.check}]")

    print("\nSummary (all times predicted by kgen's model)")
    manual = [p for p in picks if p.table == "manual"]
    failed = [p for p in picks if p.check != "ok"]
    print(f"  kgen check: {len(picks) - len(failed)} of {len(picks)} picks pass, written with their placement")
    for p in failed:
        print(f"    FAILS: {p.card} {p.table} {p.label.split(maxsplit=1)[1]}: {p.check}")
    print(f"  manual: kgen's pick <= TT's manual config on {sum(p.kgen_us <= p.reference_us * (1 + 1e-9) for p in manual)}"
          f" of {len(manual)}: by construction (TT's config is inside the exhaustively searched space, compared "
          f"under the one model), not a finding")
    for card in args.cards:
        for label, sel in (("all", None), ("sharded", True), ("dram", False)):
            gains = [p.reference_us / p.kgen_us for p in manual if p.card == card and p.check == "ok"
                     and (sel is None or p.sharded == sel)]
            if gains:
                print(f"  manual {card:<5} {label:<8} gain TT manual / kgen over {_distribution(gains)}")
    gains = [p.reference_us / p.kgen_us for p in manual if p.check == "ok"]
    if gains:
        print(f"  manual both    all      gain TT manual / kgen over {_distribution(gains)}")
    oob = [p for p in picks if p.table == "oob" and p.check == "ok"]
    if oob:
        g = [p.reference_us / p.kgen_us for p in oob]
        print(f"  out-of-box: {len(oob)} low-utilization shapes; gain TT auto / kgen: median {statistics.median(g):.2f}x, "
              f"min {min(g):.2f}x, max {max(g):.2f}x (per shape above, with the floor)")
    if sample:
        print(f"  verified (build, type-check against TT-Metal's headers, emulate, port-check for the multicast "
              f"dataflows) {sum(p.verify['status'] == 'passed' for p in sample)} of {len(sample)} sampled picks:")
        for p in sample:
            v = p.verify
            emu = v["steps"].get("emulate", {})
            pc = v["steps"].get("port_check")
            print(f"    {p.card} {p.label.split(maxsplit=1)[1]}: {v['status']} (build {v['steps'].get('build', '-')}, "
                  f"type-check {v['steps'].get('typecheck', '-')}, emulate "
                  f"{emu.get('numerics', '-') + (' ok' if emu.get('ok') else ' FAILED') if emu else '-'}, port-check "
                  f"{('passed' if pc.get('passed') else 'FAILED') if isinstance(pc, dict) else (pc or '-')}"
                  f"{'; ' + '; '.join(v['errors']) if v['errors'] else ''})")
    print(f"  not verified: the other {len(picks) - len(sample)} picks (kgen check only)")
    print(f"({'with' if args.padded else 'without'} padded per_core; {time.perf_counter() - start:.0f} s)")
    if tmp is not None:
        tmp.cleanup()
    return 0 if not failed and all(p.verify["status"] == "passed" for p in sample) else 1


if __name__ == "__main__":
    raise SystemExit(main())
