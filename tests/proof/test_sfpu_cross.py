"""The two SFPU models agree bit for bit: TT-Metal 0.81.1's LLK activation code compiled unchanged
on kgen's host SFPU model (kgen.proof.sfpu_host) and the independent NumPy golden written from the
ISA pages and the LLK source (kgen.proof.sfpu_golden). Each activation, each mode TT has, both
archs, both DST modes, on every BF16 bit pattern (16-bit DST) or on random, edge and breakpoint
FP32 values (FP32 DST), NaNs and infinities included."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from kgen.proof import sfpu_golden, sfpu_host


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


# kind, p0, p1, p2 as bmm_fused_activation.hpp reads TT's activation_param0..2 (0.81.1)
CASES = [
    ("silu", 0, 0, 0),
    ("tanh", 0, 0, 0), ("tanh", 1, 0, 0),                    # PARAM0: 0 accurate, else fast
    ("gelu", 0, 0, 0), ("gelu", 1, 0, 0),
    ("gelu_tanh", 0, 0, 0), ("gelu_tanh", 1, 0, 0),
    ("relu6", 0, 0, 0), ("relu6", _bits(3.5), 0, 0),         # PARAM0: the max's bits, 0 = 6.0
    ("sigmoid", 0, 0, 0), ("sigmoid", 0, 1, 0),              # PARAM1: the fast flag
    ("sigmoid", 1, 0, 0), ("sigmoid", 2, 1, 0),              # PARAM0: vector mode R, C
    ("hardsigmoid", 0, 0, 0),
    ("hardtanh", _bits(-1.0), _bits(2.0), 0),
    ("selu", _bits(1.0507009873554805), _bits(1.6732632423543772), 0),
    ("softplus", _bits(1.0), _bits(20.0), _bits(1.0)),       # beta, threshold, 1 / beta
    ("softplus", _bits(-2.0), _bits(5.0), _bits(-0.5)),
]
QUICK = [("silu", 0, 0, 0), ("gelu", 0, 0, 0), ("sigmoid", 0, 1, 0)]
ARCHS = ("wormhole_b0", "blackhole")

EDGES = [0.0, -0.0, 1e-40, -1e-40, 1.17e-38, -1.17e-38, float("inf"), float("-inf"), float("nan"), 3e38,
         -3e38, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0, 20.0, -5.54259443, -6.75, 88.0, -88.0]
NAN_PATTERNS = [0x7FC00000, 0xFFC00000, 0x7F810000, 0xFF810000, 0x7F800001, 0xFFFFFFFF]


def _inputs(fp32_dest: bool) -> np.ndarray:
    if not fp32_dest:
        # every BF16 bit pattern: 65,536 values, 64 tiles
        return (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32).reshape(-1, 32, 32)
    rng = np.random.default_rng(28)
    values = np.concatenate([
        np.array(EDGES, dtype=np.float32),
        np.array(NAN_PATTERNS, dtype=np.uint32).view(np.float32),
        rng.uniform(-8, 8, 12000).astype(np.float32),
        (rng.standard_normal(4000) * 40).astype(np.float32),
        rng.integers(0, 1 << 32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32),
    ])
    tiles = -(-values.size // 1024)
    return np.resize(values, tiles * 1024).reshape(tiles, 32, 32)


# The one known difference, on NaN inputs only: Wormhole's fast GELU computes `half_in = in * half;
# result = half_in + lut(...)` (ckernel_sfpu_gelu.h). SFPI's compiler fuses a single-use product into
# the add that consumes it (one SFPMAD; tenstorrent/sfpi-gcc, gimple-rvtt-combine.cc), which the golden
# models; the host model runs the C++ as written and rounds the product first. On finite inputs the two
# agree on every value (x * 0.5 is exact); a NaN input leaves the SFPMAD with a different NaN
# (WH SFPMAD.md: NaNs are not propagated as IEEE does).
NAN_ONLY = {("gelu", 1, "wormhole_b0")}


def _check(kind, p0, p1, p2, arch, fp32_dest):
    x = _inputs(fp32_dest)
    host = sfpu_host.run_activation(x, kind, p0, p1, p2, arch=arch, fp32_dest=fp32_dest, approx=False)
    gold = sfpu_golden.apply_activation(x, kind, p0, p1, p2, arch=arch, fp32_dest=fp32_dest, approx=False)
    hb, gb = host.view(np.uint32).ravel(), gold.view(np.uint32).ravel()
    if (kind, p0, arch) in NAN_ONLY:
        nan_in = np.isnan(x.ravel())
        assert nan_in.any() and (hb != gb)[~nan_in].sum() == 0
        hb, gb = hb[~nan_in], gb[~nan_in]
    bad = np.flatnonzero(hb != gb)
    sample = [(hex(x.view(np.uint32).ravel()[i]), hex(hb[i]), hex(gb[i])) for i in bad[:5]]
    assert bad.size == 0, f"{bad.size} lanes differ (input, host, golden): {sample}"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fp32_dest", [False, True], ids=["bf16_dst", "fp32_dst"])
@pytest.mark.parametrize("kind,p0,p1,p2", QUICK, ids=lambda v: v if isinstance(v, str) else None)
def test_host_model_equals_golden_quick(host_cxx, host_toolchain, kind, p0, p1, p2, arch, fp32_dest):
    _check(kind, p0, p1, p2, arch, fp32_dest)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fp32_dest", [False, True], ids=["bf16_dst", "fp32_dst"])
@pytest.mark.parametrize("kind,p0,p1,p2", [c for c in CASES if c not in QUICK],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_host_model_equals_golden(host_cxx, host_toolchain, kind, p0, p1, p2, arch, fp32_dest):
    _check(kind, p0, p1, p2, arch, fp32_dest)


def test_approx_mode_reaches_neither_model(host_cxx, host_toolchain):
    """math_approx_mode (APPROX) selects nothing in these ten LLK bodies: fast/accurate is PARAM0
    (PARAM1 for sigmoid), so both models give the same bits with it on."""
    x = _inputs(True)[:2]
    for model in (sfpu_host.run_activation, sfpu_golden.apply_activation):
        on = model(x, "gelu", 0, 0, 0, arch="blackhole", fp32_dest=True, approx=True)
        off = model(x, "gelu", 0, 0, 0, arch="blackhole", fp32_dest=True, approx=False)
        assert np.array_equal(on.view(np.uint32), off.view(np.uint32))
