"""The accuracy of TT-Metal 0.81.1's fused SFPU activations against the float64 oracle, by hand:
`python3 benchmarks/activation_accuracy.py [SPELLING...]` (default: every SFPU spelling).

Runs TT's own LLK code unchanged (bmm_fused_activation.hpp and hw/ckernels/<arch>/metal/llk_api/
llk_sfpu/ckernel_sfpu_*.h from the 0.81.1 wheel, on kgen's host SFPU model: kgen.proof.sfpu_host) on every finite bfloat16 input with
2^-120 <= |x| <= 2^16 (and zero), plus, with an FP32 DST, 2^16 log-uniform float32 inputs, on both
archs and both DST modes. The parameters are the oracle's own (kgen.proof.oracle: the published
constants, TT's defaults), encoded here as TT 0.81.1's get_activation_params encodes them, not
read from kgen's activation table. Against the oracle's float64 formula it prints, per spelling and
DST mode, the larger over both archs: the largest error in ULPs of DST's format where
|f(x)| >= 0.5 (or 1 where that exceeds RELATIVE_LIMIT: an absolute error), and the largest absolute
excess over those ULPs anywhere: the figures configs/oracle/activation_accuracy.toml holds.
"""

from __future__ import annotations

import math
import struct
import sys

import numpy as np

ARCHS = ("wormhole_b0", "blackhole")
SPELLINGS = ("silu", "gelu", "gelu_fast", "gelu_tanh", "gelu_tanh_fast", "tanh", "tanh_fast", "sigmoid",
             "sigmoid_fast", "relu6", "hardsigmoid", "hardtanh", "selu", "softplus")


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def kernel_args(spelling: str, params: tuple[float, ...]) -> tuple[str, int, int, int]:
    """(KernelActivation kind, param0..2) as TT 0.81.1's get_activation_params sets them."""
    base, fast = (spelling[:-5], 1) if spelling.endswith("_fast") else (spelling, 0)
    if base == "sigmoid":
        return base, 0, fast, 0                          # param0 vector mode (RC), param1 fast
    if base in ("gelu", "gelu_tanh", "tanh"):
        return base, fast, 0, 0
    if base == "relu6":
        return base, f32(params[0]), 0, 0
    if base == "hardtanh":
        return base, f32(params[0]), f32(params[1]), 0
    if base == "selu":
        return base, f32(params[0]), f32(params[1]), 0   # scale, alpha
    if base == "softplus":
        beta, threshold = params
        return base, f32(beta), f32(threshold), f32(float(np.float32(1.0) / np.float32(beta)))
    return base, 0, 0, 0


def inputs(fp32_dest: bool) -> np.ndarray:
    x = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    x = x[np.isfinite(x) & (((np.abs(x) >= 2.0 ** -120) & (np.abs(x) <= 2.0 ** 16)) | (x == 0))]
    if fp32_dest:
        rng = np.random.default_rng(0)
        extra = (rng.choice([-1.0, 1.0], 1 << 16) * np.exp2(rng.uniform(-20, 8, 1 << 16))).astype(np.float32)
        x = np.concatenate([x, extra])
    pad = (-x.size) % 1024
    return np.concatenate([x, np.zeros(pad, np.float32)]).reshape(-1, 32, 32)


def measure(spelling: str, arch: str, fp32_dest: bool):
    """(ULPs where |f| >= 0.5, |error| and ULP per input, inputs whose output is not finite where f is)."""
    from kgen.proof import oracle
    from kgen.proof.sfpu_host import run_activation

    fn = oracle.fused(spelling)
    kind, p0, p1, p2 = kernel_args(spelling, fn.params)
    x = inputs(fp32_dest)
    y = run_activation(x, kind, p0, p1, p2, arch=arch, fp32_dest=fp32_dest, approx=False).astype(np.float64)
    ref = fn(x.astype(np.float64))
    grid = "Float32" if fp32_dest else "Float16_b"
    u = oracle.ulp(ref.reshape(-1, 32), grid).reshape(ref.shape)
    ok = np.isfinite(ref) & np.isfinite(y)
    err = np.where(ok, np.abs(y - ref), 0.0)
    big = ok & (np.abs(ref) >= 0.5)
    ulps = float(np.ceil((err[big] / u[big]).max(initial=0.0)))
    return ulps, err, u, int((np.isfinite(ref) & ~np.isfinite(y)).sum())


# Above this many ULPs where |f| >= 0.5 the function's error is absolute (a lookup table or a
# piecewise fit): the row then takes one ULP (the store to DST) and an absolute term.
RELATIVE_LIMIT = 64


def row(spelling: str, fp32_dest: bool) -> tuple[float, float]:
    """(ulps, abs) for the table, the larger over both archs."""
    ulps_of, results = 0.0, []
    for arch in ARCHS:
        ulps, err, u, nonfinite = measure(spelling, arch, fp32_dest)
        if nonfinite:
            raise SystemExit(f"{spelling} on {arch}: {nonfinite} non-finite outputs where f is finite")
        results.append((err, u))
        ulps_of = max(ulps_of, ulps)
    if ulps_of > RELATIVE_LIMIT:
        ulps_of = 1.0
    excess = max(float(np.max(err - ulps_of * u, initial=0.0)) for err, u in results)
    return ulps_of, excess


def main(names: list[str]) -> int:
    names = names or list(SPELLINGS)
    print(f"{'spelling':<16} {'DST':<10} {'ULPs':>6} {'abs':>11}   (the larger over Wormhole B0 and Blackhole)")
    for spelling in names:
        for fp32_dest in (False, True):
            ulps, excess = row(spelling, fp32_dest)
            print(f"{spelling:<16} {'Float32' if fp32_dest else 'Float16_b':<10} {ulps:>6.0f} {excess:>11.3e}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
