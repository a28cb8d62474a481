#!/usr/bin/env python3
"""kgen tune's winners are correct kernels (issue #16, by hand): random shapes of a few tiles on both
archs, each tuned over the whole space (padded per_core included) with `--verify --top 2`, must have
every pick pass build, type-check, exact emulation and port-check against TT-Metal's kernels.

Run from the repository root: `python3 benchmarks/tune_verify_sweep.py [--cases 12] [--seed 7]`.
Prints one line per pick and the failure count (exit 1 on any failure).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    failures = picks = padded = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            arch = rng.choice(["blackhole", "wormhole_b0"])
            mt, nt, kt = rng.randint(3, 23), rng.randint(3, 23), rng.choice([2, 4, 6, 8])
            dt = rng.choice(["bfloat16", "bfloat8_b"])
            spec = Path(tmp) / f"sweep{i}.kspec"
            spec.write_text(f"matmul sweep{i} {{\n arch = {arch}\n shape = {mt * 32} x {nt * 32} x {kt * 32}\n"
                            f" dtype {{ in0 = {dt} in1 = {dt} out = {dt} }}\n}}\n")
            proc = subprocess.run([sys.executable, "-m", "kgen", "tune", str(spec), "--space", "all", "--top", "2",
                                   "--verify", "--no-db", "--json"], capture_output=True, text=True, timeout=1800)
            label = f"{arch:<12} {mt}x{nt}x{kt} tiles {dt:<9}"
            if proc.returncode != 0:
                failures += 1
                print(f"{label} kgen tune exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
                continue
            for r in json.loads(proc.stdout)["ranked"]:
                c, v = r["candidate"], r["verify"]
                picks += 1
                padded += r["padded"]
                failures += v["status"] != "passed"
                print(f"{label} {c['dataflow']:<12} grid {c['grid'][0]}x{c['grid'][1]} per_core "
                      f"{c['per_core'][0]}x{c['per_core'][1]}{' padded' if r['padded'] else '':<7} {v['status']}"
                      f"{'' if v['status'] == 'passed' else ': ' + '; '.join(v.get('errors', []))}")
    print(f"{picks} picks verified ({padded} padded), {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
