#!/usr/bin/env python3
"""Time a kgen command on the peak example as a whole process against `python3 -c pass`.

Targets (median of 5 runs vs the median of `python3 -c pass`; issue 42):
- `kgen check examples/peak_bf16.kspec` <= 6x;
- `kgen build examples/peak_bf16.kspec` (render and write the whole folder) <= 8x.
Both are timed with bytecode cached, as a user has it: PYTHONDONTWRITEBYTECODE is dropped for the
timed processes and their .pyc files go to a temporary PYTHONPYCACHEPREFIX (a warm-up run writes
them; the work tree is not touched). On a shared machine take the median of several calls.
Run by hand: `python3 benchmarks/startup.py [check|build] [--runs N]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"check": 6, "build": 8}


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; CPU (user + system) is what a busy machine skews least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=TARGETS, default="check")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--spec", default="examples/peak_bf16.kspec")
    args = parser.parse_args()
    exe = [shutil.which("kgen")] if shutil.which("kgen") else [sys.executable, "-m", "kgen"]
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        kgen = exe + [args.command, args.spec] + (["-o", out] if args.command == "build" else [])
        pass_ = [sys.executable, "-c", "pass"]
        timed(pass_, env)               # warm the page cache and write the bytecode
        timed(kgen, env)
        base, ours = [], []
        for _ in range(args.runs):      # interleaved, so that a burst of load hits both
            base.append(timed(pass_, env))
            ours.append(timed(kgen, env))
    target = TARGETS[args.command]
    for what, i in (("wall", 0), ("CPU", 1)):
        b, o = statistics.median(t[i] for t in base), statistics.median(t[i] for t in ours)
        print(f"{what:<4} python3 -c pass {b * 1000:7.1f} ms, kgen {args.command} {o * 1000:7.1f} ms: "
              f"{o / b:5.2f}x (median of {args.runs}; target <= {target}x: {'met' if o / b <= target else 'MISSED'})")
    print(f"     [{args.spec}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
