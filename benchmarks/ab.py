#!/usr/bin/env python3
"""`kgen ab` on peak_bf16 with 4 variants, as a whole process (issue 15: at most 3 s without --emulate).

The 4 variants are the cross product `--vary compute.packer_l1_acc=false,true --vary
compute.math_fidelity=HiFi2,HiFi4`: four distinct numerics, so the golden model runs four times on
its K-faithful proxy (K = 4096). Each run is `python3 -m kgen ab ...` in a new process with this
checkout first on the path; the figure is the median of 5 (after one untimed run that warms the
OS file cache and kgen's template cache). Run by hand: `python3 benchmarks/ab.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 3.0
COMMAND = ["-m", "kgen", "ab", "examples/peak_bf16.kspec", "--vary", "compute.packer_l1_acc=false,true",
           "--vary", "compute.math_fidelity=HiFi2,HiFi4"]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole `kgen ab` process. The CPU time says what the run
    costs when the machine is shared (the wall time grows with the load, the CPU time hardly)."""
    start, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run([sys.executable, *COMMAND], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or proc.stdout.count("verdict:") != 1:
        sys.exit(f"kgen ab failed ({proc.returncode}):\n{proc.stderr}")
    return seconds, _cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    once(env)
    runs = [once(env) for _ in range(args.runs)]
    times = [w for w, _ in runs]
    median = statistics.median(times)
    print(f"kgen ab examples/peak_bf16.kspec, 4 variants (--vary packer_l1_acc x math_fidelity), whole process: "
          f"median {median:.2f} s of {args.runs} (min {min(times):.2f}, max {max(times):.2f}), "
          f"CPU {statistics.median(c for _, c in runs):.2f} s; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs; target <= {TARGET_SECONDS:.0f} s: {'met' if median <= TARGET_SECONDS else 'MISSED'}")
    return 0 if median <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
