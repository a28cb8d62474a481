#!/usr/bin/env python3
"""Time `kgen check` on the peak example as a whole process against `python3 -c pass`.

Issue 2 target: median of 5 runs of `kgen check examples/peak_bf16.kspec` <= 8x the median of
`python3 -c pass`. Run by hand: `python3 benchmarks/check_startup.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--spec", default="examples/peak_bf16.kspec")
    args = parser.parse_args()
    kgen = [shutil.which("kgen") or sys.executable, "check", args.spec]
    if kgen[0] == sys.executable:
        kgen = [sys.executable, "-m", "kgen", "check", args.spec]
    median_seconds(kgen, 1)  # warm the page cache and __pycache__
    base = median_seconds([sys.executable, "-c", "pass"], args.runs)
    ours = median_seconds(kgen, args.runs)
    ratio = ours / base
    print(f"python3 -c pass : {base * 1000:7.1f} ms (median of {args.runs})")
    print(f"kgen check      : {ours * 1000:7.1f} ms (median of {args.runs})  [{' '.join(kgen[-2:])}]")
    print(f"ratio           : {ratio:7.2f}x  (target <= 8x: {'met' if ratio <= 8 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
