#!/usr/bin/env python3
"""kgen tune's speed (issue #16): plan + legality + cost per second (target >= 2,000 on this 2-core
machine), the 4096^3 Blackhole search (target < 30 s), how close seeded sampling comes to the
exhaustive answer, and (`--ray`) verification throughput on a local Ray with 1 and 2 workers.

Run by hand: `python3 benchmarks/tune_speed.py [--ray] [--verify-jobs N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.gen.spec import load, parse_text, resolve  # noqa: E402
from kgen.perf.tune import Engine, spec_text, tune  # noqa: E402

RATE_TARGET = 2000
SEARCH_TARGET_S = 30


def _spec(arch: str, m: int, n: int, k: int, dtype: str = "bfloat16", fidelity: str = "HiFi2"):
    return resolve(parse_text(f"matmul s {{\n arch = {arch}\n shape = {m} x {n} x {k}\n"
                              f" dtype {{ in0 = {dtype} in1 = {dtype} out = {dtype} }}\n"
                              f" compute {{ math_fidelity = {fidelity} }}\n}}\n", "s.kspec"))


def rates() -> None:
    print("plan + legality + cost, every candidate of the space (no pruning):")
    spec = _spec("blackhole", 2048, 2048, 2048)
    for jobs in (1, 2):
        r = tune(spec, space="all", prune=False, jobs=jobs)
        st = r.stats
        rate = st.planned / st.seconds
        print(f"  BH 2048^3 --space all, -j {jobs}: {st.planned:,} candidates planned ({st.predicted:,} lowered and "
              f"predicted, {st.illegal:,} rejected) in {st.seconds:.1f} s = {rate:,.0f} candidates/s "
              f"(target >= {RATE_TARGET:,}: {'met' if rate >= RATE_TARGET else 'NOT met'})")


def big_search() -> None:
    print("the 4096^3 Blackhole search (examples/peak_bf16.kspec, --space all, pruned, exhaustive):")
    spec = load(ROOT / "examples" / "peak_bf16.kspec")
    for jobs in (1, 2):
        r = tune(spec, space="all", top=5, jobs=jobs)
        st = r.stats
        print(f"  -j {jobs}: {st.space_size:,} candidates, {st.predicted:,} predicted, {st.pruned:,} pruned, "
              f"{st.illegal:,} rejected; {st.seconds:.2f} s (target < {SEARCH_TARGET_S} s: "
              f"{'met' if st.seconds < SEARCH_TARGET_S else 'NOT met'}); best {r.ranked[0].microseconds:,.1f} us "
              f"{r.ranked[0].candidate.short(r.ranked[0].policy)}")


def sampling() -> None:
    print("seeded sampling against the exhaustive answer (5 seeds per budget; gap = sampled best / exhaustive best - 1):")
    cases = [("WH 1024^3", _spec("wormhole_b0", 1024, 1024, 1024)),
             ("BH 2048^3", _spec("blackhole", 2048, 2048, 2048)),
             ("peak_small", load(ROOT / "examples" / "peak_small.kspec"))]
    for name, spec in cases:
        exact = tune(spec, space="all", top=1, jobs=2)
        best = exact.ranked[0].cycles
        size = exact.stats.space_size
        parts = []
        for share in (0.01, 0.05, 0.25):
            budget = max(1, int(size * share))
            gaps, hits = [], 0
            for seed in range(5):
                r = tune(spec, space="all", top=1, budget=budget, seed=seed, jobs=2)
                gaps.append(r.ranked[0].cycles / best - 1)
                hits += r.ranked[0].candidate == exact.ranked[0].candidate
            parts.append(f"{share:.0%}: gap mean {statistics.mean(gaps):.1%} max {max(gaps):.1%}, winner {hits}/5")
        print(f"  {name} ({size:,} candidates): " + "; ".join(parts))


def ray_throughput(count: int) -> None:
    import ray

    spec = load(ROOT / "examples" / "peak_small.kspec")
    ranked = tune(spec, space="all", top=count).ranked
    texts = [spec_text(spec, s.candidate) for s in ranked]
    # warm the compile and emulator caches once, so both runs measure the same work
    for t in texts:
        Engine("local").run([t]).__next__()
    print(f"verification throughput, {len(texts)} jobs of peak_small (build, type-check, exact emulation, port-check):")
    t0 = time.perf_counter()
    list(Engine("local").run(texts))
    local = time.perf_counter() - t0
    print(f"  local engine: {local:.1f} s = {len(texts) / local:.2f} jobs/s")
    for workers in (1, 2):
        engine = Engine("ray", workers=workers)
        list(engine.run(texts[:1]))                  # start the workers before timing
        t0 = time.perf_counter()
        results = list(engine.run(texts))
        took = time.perf_counter() - t0
        ok = sum(r["status"] == "passed" for _, r in results)
        print(f"  local Ray, {workers} worker(s): {took:.1f} s = {len(texts) / took:.2f} jobs/s ({ok} passed)")
        ray.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ray", action="store_true", help="also measure verification on a local Ray, 1 vs 2 workers")
    parser.add_argument("--verify-jobs", type=int, default=6)
    parser.add_argument("--only", choices=("rates", "search", "sampling", "ray"))
    args = parser.parse_args()
    steps = {"rates": rates, "search": big_search, "sampling": sampling}
    for name, step in steps.items():
        if args.only in (None, name):
            step()
    if args.ray or args.only == "ray":
        ray_throughput(args.verify_jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
