"""kgen's performance model against a public Blackhole 12 x 10 sweep of Llama-shaped matmuls, by hand:

    python3 benchmarks/bh_sweep.py            # every config kgen plans: predicted vs measured, strata, spreads
    python3 benchmarks/bh_sweep.py --rows     # ... with one line per config
    python3 benchmarks/bh_sweep.py --tune     # ... and kgen tune's pick per shape against the sweep's configs

The sweep (benchmarks/data/bh_matmul_sweep_2d_12x10.log, SOURCES.md) timed, per shape, the fastest
config of a silicon search ("oracle") and the config of tt-mlir's rule ("our strategy"), each a
MatmulMultiCoreReuseMultiCastProgramConfig on a 12 x 10 Blackhole grid: bf16, HiFi4, fp32 DST
accumulation, no packer L1 accumulation, everything DRAM-interleaved, out_subblock as its script picks.
Its times are host wall time per op (20 back-to-back calls, no trace, synchronised): they are
compared with the model's per-op wall time, max(device time + op-to-op gap, host issue time).

VALIDATION ONLY: nothing is fitted on this table. Forward shapes ran with transpose_b (ttnn
transposes in1 first), which kgen cannot express; they are reported apart from the dgrad shapes
(no transpose), whose time is one matmul. Every figure printed beside the measured one is predicted.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.core.errors import KgenError  # noqa: E402
from kgen.gen.pipeline import run  # noqa: E402
from kgen.gen.spec import parse_text, resolve  # noqa: E402
from kgen.perf.model import Prediction, predict, wall_us  # noqa: E402

LOG = ROOT / "benchmarks" / "data" / "bh_matmul_sweep_2d_12x10.log"
GRID = (12, 10)                  # the sweep's compute grid (x columns, y rows)
MIN_MS = 0.1                     # configs faster than this are dominated by dispatch; left out of the error
TUNE_TARGET = 1.10               # no tune pick slower than this on silicon than the fastest timed config


@dataclass(frozen=True)
class Config:
    out_block: tuple[int, int]
    in0_block_w: int
    subblock: tuple[int, int]


@dataclass(frozen=True)
class Timed:
    name: str                    # the sweep's op names
    m: int
    k: int
    n: int
    transpose_b: bool
    per_core: tuple[int, int]
    kt: int
    origin: str                  # oracle | ours (the sweep's "our strategy")
    config: Config
    ms: float                    # measured host wall time per op

    @property
    def k_blocks(self) -> int:
        return self.kt // self.config.in0_block_w

    @property
    def label(self) -> str:
        c = self.config
        return (f"{self.m}x{self.k}x{self.n}{' B^T' if self.transpose_b else ''} blk {c.out_block[0]}x{c.out_block[1]} "
                f"bw {c.in0_block_w} sb {c.subblock[0]}x{c.subblock[1]}")


_HEADER = re.compile(r"=== (.+?)  \[(\d+)x(\d+), (\d+)x(\d+)\]( B\^T)?  per_core=(\d+)x(\d+)  Kt=(\d+)")
_TIMED = re.compile(r"(oracle|our strategy)\s+([\d.]+) ms\s+[\d.]+ TFLOP/s  blk (\d+)x(\d+) bw (\d+) sb (\d+)x(\d+)")


def sweep() -> list[Timed]:
    """Every (shape, config) the sweep timed, oracle and ours; a config both picked is listed once."""
    out: list[Timed] = []
    header = None
    for line in LOG.read_text().splitlines():
        if (h := _HEADER.match(line)):
            header = h
            continue
        if header is None or not (t := _TIMED.search(line)):
            continue
        name, m, k, _, n, bt, pm, pn, kt = header.groups()
        config = Config((int(t[3]), int(t[4])), int(t[5]), (int(t[6]), int(t[7])))
        timed = Timed(name, int(m), int(k), int(n), bool(bt), (int(pm), int(pn)), int(kt),
                      "oracle" if t[1] == "oracle" else "ours", config, float(t[2]))
        if any(o.name == timed.name and o.config == timed.config for o in out):
            continue
        out.append(timed)
    return out


def spec_text(t: Timed, tuned: bool = False) -> str:
    """The sweep's program as a kgen spec; `tuned` leaves out_block, in0_block_w and out_subblock `auto`
    (per_core, grid, dataflow and the compute config stay the sweep's) for kgen tune to choose."""
    c = t.config
    w, sb, ob = ((c.in0_block_w, f"{c.subblock[0]} x {c.subblock[1]}", f"{c.out_block[0]} x {c.out_block[1]}")
                 if not tuned else ("auto", "auto", "auto"))
    return f"""matmul sweep {{
    arch     = blackhole
    shape    = {t.m} x {t.n} x {t.k}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    memory {{ in0 = dram  in1 = dram  out = dram }}
    grid     = {GRID[0]} x {GRID[1]}
    dataflow = mcast_2d
    block {{
        in0_block_w  = {w}
        out_subblock = {sb}
        per_core     = {t.per_core[0]} x {t.per_core[1]}
        out_block    = {ob}
    }}
    compute {{
        math_fidelity = HiFi4
        fp32_dest_acc = true
        packer_l1_acc = false
        math_approx   = false
        dst_full_sync = false
    }}
}}
"""


@dataclass(frozen=True)
class Case:
    timed: Timed
    prediction: Prediction

    @property
    def predicted_ms(self) -> float:
        return wall_us(self.prediction) / 1e3

    @property
    def error(self) -> float:
        return self.predicted_ms / self.timed.ms - 1


def predicted(timed: list[Timed]) -> tuple[list[Case], list[tuple[Timed, str]]]:
    cases, refused = [], []
    for t in timed:
        try:
            program = run(resolve(parse_text(spec_text(t), "sweep.kspec")), "verified").verified
        except KgenError as exc:
            refused.append((t, str(exc).splitlines()[0]))
            continue
        cases.append(Case(t, predict(program)))
    return cases, refused


def _p90(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


def summary_line(label: str, cases: list[Case]) -> str:
    if not cases:
        return f"  {label:<34} {0:>4}"
    errors = [c.error for c in cases]
    worst = max(errors, key=abs)
    return (f"  {label:<34} {len(cases):>4}  median |error| {statistics.median(map(abs, errors)):6.1%}  "
            f"p90 {_p90([abs(e) for e in errors]):6.1%}  signed median {statistics.median(errors):+6.1%}  "
            f"worst {worst:+6.1%}")


W_STRATA = (("in0_block_w <= 4", lambda w: w <= 4), ("in0_block_w 5-15", lambda w: 5 <= w <= 15),
            ("in0_block_w >= 16", lambda w: w >= 16))
KB_STRATA = (("K-blocks <= 8", lambda b: b <= 8), ("K-blocks 9-32", lambda b: 9 <= b <= 32),
             ("K-blocks 33-128", lambda b: 33 <= b <= 128), ("K-blocks > 128", lambda b: b > 128))


def report(cases: list[Case]) -> None:
    timed = [c for c in cases if c.timed.ms >= MIN_MS]
    print(f"\npredicted per-op wall time against the sweep's measured one, configs of {MIN_MS} ms or more "
          f"(validation: nothing fitted here):")
    print(summary_line("all", timed))
    print(summary_line("dgrad (no transpose)", [c for c in timed if not c.timed.transpose_b]))
    print(summary_line("fwd (transpose_b: in1 transposed)", [c for c in timed if c.timed.transpose_b]))
    for label, keep in W_STRATA:
        print(summary_line(label, [c for c in timed if keep(c.timed.config.in0_block_w)]))
    for label, keep in KB_STRATA:
        print(summary_line(label, [c for c in timed if keep(c.timed.k_blocks)]))


def spreads(cases: list[Case]) -> None:
    """Shapes the sweep timed at two in0_block_w with the same out block and subblock: the silicon and
    predicted ratio of the narrower K-block's time over the wider one's."""
    by_shape: dict[str, list[Case]] = {}
    for c in cases:
        by_shape.setdefault(c.timed.name, []).append(c)
    print("\nin0_block_w pairs at the same out block and subblock (narrow / wide - 1; predicted vs measured):")
    for name, group in by_shape.items():
        for a in group:
            for b in group:
                ca, cb = a.timed.config, b.timed.config
                if (ca.out_block, ca.subblock) == (cb.out_block, cb.subblock) and ca.in0_block_w < cb.in0_block_w:
                    measured = a.timed.ms / b.timed.ms - 1
                    model = a.predicted_ms / b.predicted_ms - 1
                    print(f"  {a.timed.label} vs bw {cb.in0_block_w}: measured {measured:+6.1%}, predicted {model:+6.1%}")


def tune_picks(timed: list[Timed]) -> None:
    """kgen tune's pick per shape (blocking only: out_block, in0_block_w, out_subblock searched at the
    sweep's per_core, grid, dataflow and compute config, ranked by predicted device time) against the
    configs the sweep timed: is it silicon's fastest (the oracle), and if the sweep timed it, how much
    slower than the fastest did silicon run it?"""
    from kgen.perf.tune import tune

    by_shape: dict[str, list[Timed]] = {}
    for t in timed:
        by_shape.setdefault(t.name, []).append(t)
    hits, timed_picks, untimed, slow = 0, [], 0, []
    print("\nkgen tune's pick per shape against the sweep's timed configs (silicon time / fastest):")
    for name, group in by_shape.items():
        fastest = min(group, key=lambda t: t.ms)
        try:
            result = tune(resolve(parse_text(spec_text(group[0], tuned=True), "sweep.kspec")), space="auto")
        except KgenError as exc:
            print(f"  {name}: tune refused: {str(exc).splitlines()[0]}")
            continue
        if not result.ranked:
            print(f"  {name}: no legal candidate at the sweep's per_core")
            continue
        pick = result.ranked[0].candidate
        config = Config(pick.out_block, pick.in0_block_w, pick.out_subblock)
        match = next((t for t in group if t.config == config), None)
        if match is None:
            untimed += 1
            verdict = "not timed by the sweep"
        else:
            ratio = match.ms / fastest.ms
            timed_picks.append(ratio)
            hits += match is fastest
            verdict = f"{'fastest' if match is fastest else 'slower'} {ratio:.2f}x"
            if ratio > TUNE_TARGET:
                slow.append((name, ratio))
        print(f"  {name:<34} pick blk {config.out_block[0]}x{config.out_block[1]} bw {config.in0_block_w} "
              f"sb {config.subblock[0]}x{config.subblock[1]}; fastest blk {fastest.config.out_block[0]}x"
              f"{fastest.config.out_block[1]} bw {fastest.config.in0_block_w}: {verdict}")
    print(f"shapes {len(by_shape)}: the pick is silicon's fastest on {hits}; timed but slower on "
          f"{len(timed_picks) - hits}; not timed on {untimed}. Timed picks slower than {TUNE_TARGET:.2f}x the "
          f"fastest: {len(slow)}" + (f" (worst {max(r for _, r in slow):.2f}x)" if slow else ""))


def print_rows(cases: list[Case]) -> None:
    print(f"{'config':<62} {'origin':<6} {'K-blocks':>8} {'meas ms':>8} {'pred ms':>8} {'err':>7}  bottleneck")
    for c in cases:
        t = c.timed
        print(f"{t.label:<62} {t.origin:<6} {t.k_blocks:>8} {t.ms:8.3f} {c.predicted_ms:8.3f} {c.error:+7.1%}  "
              f"{c.prediction.bottleneck}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every config")
    ap.add_argument("--tune", action="store_true", help="kgen tune's pick per shape against the timed configs")
    args = ap.parse_args(argv)
    timed = sweep()
    cases, refused = predicted(timed)
    print(f"{len(timed)} configs timed over {len({t.name for t in timed})} shapes; kgen plans {len(cases)}, "
          f"refuses {len(refused)}")
    for t, why in refused:
        print(f"  refused: {t.label}: {why}")
    if args.rows:
        print_rows(cases)
    report(cases)
    spreads(cases)
    if args.tune:
        tune_picks(timed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
