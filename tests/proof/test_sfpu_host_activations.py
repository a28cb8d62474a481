"""kgen.proof.sfpu_host.run_activation: TT's ten fused matmul activations (LLK SFPU code on the host
SFPU model) against float64 math. A sanity bound only: bit-exactness is the golden model's check
(kgen.proof.sfpu_golden); the bounds are loose multiples of each mode's output precision."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from scipy.special import erf

from kgen.proof import sfpu_host


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772
# kind, p0, p1, p2 (TT's activation_param0..2), float64 reference, absolute bound (fp32 DST, accurate modes)
CASES = [
    ("silu", 0, 0, 0, lambda x: x * _sigmoid(x), 1e-5),
    ("tanh", 0, 0, 0, np.tanh, 1e-6),
    ("gelu", 0, 0, 0, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), 1e-5),
    ("gelu_tanh", 0, 0, 0, _gelu_tanh, 1e-5),
    ("relu6", 0, 0, 0, lambda x: np.clip(x, 0, 6), 0.0),
    ("sigmoid", 0, 0, 0, _sigmoid, 1e-6),
    ("hardsigmoid", 0, 0, 0, lambda x: np.clip(x / 6 + 0.5, 0, 1), 1e-6),
    ("hardtanh", _bits(-1.0), _bits(2.0), 0, lambda x: np.clip(x, -1, 2), 0.0),
    ("selu", _bits(SELU_SCALE), _bits(SELU_ALPHA), 0,
     lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), 1e-5),
    # softplus(beta = 1, threshold = 20): TT's BF16-grade polynomial without INP_FLOAT32
    ("softplus", _bits(1.0), _bits(20.0), _bits(1.0), lambda x: np.logaddexp(0, x), 2e-2),
]
# the fast / approximate forms: looser
FAST = [
    ("tanh", 1, 0, 0, np.tanh, 3e-2),
    ("gelu", 1, 0, 0, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), 3e-2),
    ("gelu_tanh", 1, 0, 0, _gelu_tanh, 1e-2),
    ("sigmoid", 0, 1, 0, _sigmoid, 0.15),
]


def _inputs(bf16: bool) -> np.ndarray:
    x = np.linspace(-6.0, 6.0, 2048, dtype=np.float32).reshape(2, 32, 32)
    return (x.view(np.uint32) & 0xFFFF0000).view(np.float32) if bf16 else x


@pytest.mark.slow
@pytest.mark.parametrize("kind,p0,p1,p2,ref,bound", CASES + FAST, ids=lambda v: v if isinstance(v, str) else None)
def test_activation_close_to_float64(host_cxx, host_toolchain, kind, p0, p1, p2, ref, bound):
    x = _inputs(False)
    y = sfpu_host.run_activation(x, kind, p0, p1, p2, arch="wormhole_b0", fp32_dest=True, approx=False)
    assert y.shape == x.shape and y.dtype == np.float32
    err = np.abs(y.astype(np.float64) - ref(x.astype(np.float64)))
    assert err.max() <= bound + 1e-7 * np.abs(ref(x.astype(np.float64))).max()


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
def test_bf16_dst_results_are_bf16(host_cxx, host_toolchain, arch):
    # With 16-bit DST the SFPU stores BF16 (SFPSTORE.md): every result has zero low 16 bits.
    x = _inputs(True)
    y = sfpu_host.run_activation(x, "silu", 0, 0, 0, arch=arch, fp32_dest=False, approx=True)
    assert not np.any(y.view(np.uint32) & 0xFFFF)
    assert np.abs(y - x * _sigmoid(x)).max() < 2e-2


def test_missing_header_tree_is_incomplete(monkeypatch):
    from kgen.proof.chain import EXIT_INCOMPLETE, Incomplete
    import kgen.toolchain.headers as headers

    monkeypatch.setattr(headers, "find_headers", lambda explicit=None: (None, "nowhere: not found"))
    with pytest.raises(Incomplete) as info:
        sfpu_host.run_activation(np.zeros((1, 32, 32), np.float32), "silu", 0, 0, 0, arch="wormhole_b0",
                                 fp32_dest=True, approx=False)
    assert info.value.exit_code == EXIT_INCOMPLETE and "nowhere" in str(info.value)


def test_bad_arguments_are_clear_errors():
    from kgen.core.errors import KgenError

    with pytest.raises(KgenError, match="unknown activation"):
        sfpu_host.run_activation(np.zeros((1, 32, 32), np.float32), "swish", 0, 0, 0, arch="wormhole_b0",
                                 fp32_dest=True, approx=False)
    with pytest.raises(KgenError, match="whole 32x32 tiles"):
        sfpu_host.run_activation(np.zeros((16, 16), np.float32), "silu", 0, 0, 0, arch="wormhole_b0",
                                 fp32_dest=True, approx=False)
