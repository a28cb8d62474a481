#!/usr/bin/env python3
"""Time a kgen command on the peak example as a whole process against `python3 -c pass`.

Targets (median of 5 runs vs the median of `python3 -c pass`):
- issue 2: `kgen check examples/peak_bf16.kspec` <= 8x;
- issue 3: `kgen build examples/peak_bf16.kspec` (render and write the whole folder) <= 10x.
Run by hand: `python3 benchmarks/startup.py [check|build] [--runs N]`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"check": 8, "build": 10}


def median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=TARGETS, default="check")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--spec", default="examples/peak_bf16.kspec")
    args = parser.parse_args()
    exe = [shutil.which("kgen")] if shutil.which("kgen") else [sys.executable, "-m", "kgen"]
    with tempfile.TemporaryDirectory() as out:
        kgen = exe + [args.command, args.spec] + (["-o", out] if args.command == "build" else [])
        median_seconds(kgen, 1)  # warm the page cache and __pycache__
        base = median_seconds([sys.executable, "-c", "pass"], args.runs)
        ours = median_seconds(kgen, args.runs)
    ratio = ours / base
    target = TARGETS[args.command]
    print(f"python3 -c pass : {base * 1000:7.1f} ms (median of {args.runs})")
    print(f"kgen {args.command:<10} : {ours * 1000:7.1f} ms (median of {args.runs})  [{args.spec}]")
    print(f"ratio           : {ratio:7.2f}x  (target <= {target}x: {'met' if ratio <= target else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
