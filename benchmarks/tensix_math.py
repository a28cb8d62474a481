#!/usr/bin/env python3
"""Single-thread speed of the emulator's tile matmul (kgen/proof/emu/src/tensix_math.cpp, matmul_tile).

Builds the library with the host g++ (-O2 by default, no -march) into a temporary folder and times
matmul_tile on prepared random bf16 operands (in0 x in1, one 32x32x32 tile product = 32768
multiply-accumulates, counted once whatever the number of fidelity phases).

Targets: exact mode >= 80 M MAC/s at HiFi2 (LoFi faster); fast mode several GFLOP/s.
Run by hand: `python3 benchmarks/tensix_math.py [--seconds S] [--cxxflags "-O3"]`.
"""

from __future__ import annotations

import argparse
import ctypes
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_tensix_math import FIDELITY, Emu, build  # noqa: E402

from kgen.proof import numerics as nx  # noqa: E402

MACS_PER_TILE = 32 * 32 * 32


def rate(emu: Emu, cfg, a, b, seconds: float) -> float:
    """Multiply-accumulates per second of matmul_tile (best of three timed runs)."""
    dst = np.zeros(1024, np.uint32)
    reps = 16
    while emu.lib.kemu_bench_matmul(a, b, reps, ctypes.byref(cfg), dst) < seconds / 4:
        reps *= 2
    best = min(emu.lib.kemu_bench_matmul(a, b, reps, ctypes.byref(cfg), dst) for _ in range(3))
    return reps * MACS_PER_TILE / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="approximate time per measurement")
    parser.add_argument("--cxxflags", default="", help="extra g++ flags (e.g. -O3 or -march=native)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = nx.values_to_src19(rng.standard_normal(1024).astype(np.float32), "Float16_b", False)
    b = nx.values_to_src19(rng.standard_normal(1024).astype(np.float32), "Float16_b", False)
    with tempfile.TemporaryDirectory() as tmp:
        r = build(Path(tmp), tuple(shlex.split(args.cxxflags)))
        if r.returncode:
            print(r.stderr, file=sys.stderr)
            return 1
        emu = Emu(Path(tmp) / "libtensix_math.so")
        print(f"matmul_tile, g++ -O2 {args.cxxflags}".rstrip() + ", single thread, 32x32x32 MACs per tile")
        for fast in (False, True):
            for fid in FIDELITY:
                for fp32 in (False, True):
                    cfg = emu.config(fid, fp32, False, fast)
                    macs = rate(emu, cfg, a, b, args.seconds)
                    unit = f"{2 * macs / 1e9:6.2f} GFLOP/s" if fast else f"{macs / 1e6:7.1f} M MAC/s"
                    print(f"  {'fast ' if fast else 'exact'} {fid:<5} {'fp32' if fp32 else 'bf16'} Dst: {unit}"
                          f"  ({1e6 * MACS_PER_TILE / macs:6.2f} us/tile)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
