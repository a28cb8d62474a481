"""The golden model's speed, by hand: `python3 benchmarks/golden.py [--spec PATH] [--variant V]
[--mode fast|exact] [--repeat N]`.

Times `golden_from_plan` (the NumPy model `kgen emulate` compares against) on a spec's plan with
seeded inputs quantised as `kgen emulate` makes them. Default: examples/peak_bf16.kspec (4096^3
bf16 on 8 x 8, HiFi4, packer L1 accumulation over 32 K-blocks, bias, ReLU) in fast mode, the
case issue #12 measured (57 s of an 81 s emulation). Target: >= 3x faster than that. Prints the
seconds, the numpy float32 matmul of the same shape for scale, and a digest of the output bits
so that two versions can be compared bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "examples" / "peak_bf16.kspec")
    ap.add_argument("--variant", default=None)
    ap.add_argument("--mode", choices=("fast", "exact"), default="fast")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from kgen.proof.golden import golden_from_plan
    from kgen.gen.plan import plan as make_plan
    from kgen.gen.spec import load as load_spec
    from kgen.proof.tiles import quantize

    spec = load_spec(args.spec, variant=args.variant)
    p = make_plan(spec)
    m, n, k = p.mt * 32, p.nt * 32, p.kt * 32
    rng = np.random.default_rng(args.seed)
    in0 = quantize(rng.standard_normal((m, k), dtype=np.float32), spec.dtype_in0)
    in1 = quantize(rng.standard_normal((k, n), dtype=np.float32), spec.dtype_in1)
    bias = quantize(rng.standard_normal((1, n), dtype=np.float32), p.bias_format)[0] if p.fuse_bias else None

    times, digest = [], ""
    for _ in range(args.repeat):
        t = time.perf_counter()
        g = golden_from_plan(p, in0, in1, bias, mode=args.mode)
        times.append(time.perf_counter() - t)
        digest = hashlib.sha256(np.ascontiguousarray(g.bits).tobytes()).hexdigest()[:16]
    t = time.perf_counter()
    in0.astype(np.float32) @ in1.astype(np.float32)
    matmul = time.perf_counter() - t
    print(f"golden {args.mode} {spec.name}: {m} x {n} x {k}, {p.num_blocks} K-blocks, {p.policy}: "
          f"{statistics.median(times):.2f} s (median of {args.repeat}); numpy float32 matmul {matmul:.2f} s; "
          f"output bits sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
