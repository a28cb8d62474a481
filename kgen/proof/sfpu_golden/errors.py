"""Each activation's error against a float64 reference written as PyTorch defines the function,
in ULPs of DST's format (Float32 or Float16_b), for `kgen emulate` and `kgen ab` to print.

The references (torch.nn.functional's definitions): GELU with erf, GELU with tanh, tanh, sigmoid,
SiLU = x * sigmoid(x), ReLU6 = clip(x, 0, max), hardsigmoid = clip(x/6 + 0.5, 0, 1), hardtanh =
clip(x, min, max), SELU = scale * (x if x > 0 else alpha * expm1(x)), softplus = log1p(exp(beta x))
/ beta where beta x <= threshold, else x. The parameters are read from (p0, p1, p2) as
bmm_fused_activation.hpp reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kgen.proof.numerics import ulp_distance, ulp_histogram


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf
    except ImportError:                       # scipy is optional: math.erf, element by element
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    return erf(x)


def _f32(bits: int) -> float:
    return float(np.uint32(bits).view(np.float32))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1.0 / (1.0 + np.exp(-x)), np.exp(x) / (1.0 + np.exp(x)))


def reference(kind: str, x, p0: int = 0, p1: int = 0, p2: int = 0) -> np.ndarray:
    """The float64 value of activation `kind` at x (the DST input values)."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if kind == "gelu":
            return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
        if kind == "gelu_tanh":
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
        if kind == "tanh":
            return np.tanh(x)
        if kind == "sigmoid":
            return _sigmoid(x)
        if kind == "silu":
            return x * _sigmoid(x)
        if kind == "relu6":
            return np.clip(x, 0.0, _f32(p0) if p0 else 6.0)
        if kind == "hardsigmoid":
            return np.clip(x / 6.0 + 0.5, 0.0, 1.0)
        if kind == "hardtanh":
            return np.clip(x, _f32(p0), _f32(p1))
        if kind == "selu":
            return _f32(p0) * np.where(x > 0, x, _f32(p1) * np.expm1(np.minimum(x, 0.0)))
        if kind == "softplus":
            beta, threshold = _f32(p0), _f32(p1)
            bx = beta * x
            return np.where(bx <= threshold, np.logaddexp(0.0, bx) / beta, x)
    raise ValueError(f"unknown activation kind {kind!r}")


@dataclass(frozen=True)
class ActivationError:
    """An activation's output against its float64 reference, over the finite elements."""
    kind: str
    grid: str                                  # "Float32" or "Float16_b": DST's format
    max_ulp: int
    max_abs: float
    histogram: tuple[tuple[str, int], ...]     # numerics.ULP_BINS labels -> counts
    elements: int

    def summary(self) -> str:
        """One line for a report, e.g. `gelu vs float64: max 1 ULP (Float16_b), max |err| 7.8e-03,
        ULPs 0:32507 1:5 (32512 finite)`."""
        bins = " ".join(f"{label}:{n}" for label, n in self.histogram if n)
        return (f"{self.kind} vs float64: max {self.max_ulp} ULP ({self.grid}), "
                f"max |err| {self.max_abs:.1e}, ULPs {bins} ({self.elements} finite)")


def activation_error(dst_in, dst_out, kind: str, p0: int, p1: int, p2: int, *,
                     fp32_dest: bool, floor: float = 0.0) -> ActivationError:
    """The error of `dst_out` (what DST holds after the activation) against the reference at
    `dst_in`, in ULPs of DST's format; `floor` as numerics.ulp_distance's."""
    x = np.asarray(dst_in, np.float32)
    out = np.asarray(dst_out, np.float32)
    ref = reference(kind, x, p0, p1, p2)
    grid = "Float32" if fp32_dest else "Float16_b"
    ulps = ulp_distance(out, ref, grid, floor)
    finite = np.isfinite(ref) & np.isfinite(out)
    with np.errstate(invalid="ignore"):
        diff = np.abs(out.astype(np.float64) - ref)
    return ActivationError(kind, grid, int(ulps.max(initial=0)),
                           float(diff[finite].max(initial=0.0)), ulp_histogram(ulps[finite]),
                           int(finite.sum()))
