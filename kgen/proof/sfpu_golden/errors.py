"""Each activation's error against its float64 reference (the oracle's definition, as PyTorch
defines the function), in ULPs of DST's format (Float32 or Float16_b), for `kgen emulate` and
`kgen ab` to print."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kgen.proof.numerics import ulp_distance, ulp_histogram


def _f32(bits: int) -> float:
    return float(np.uint32(bits).view(np.float32))


def reference(kind: str, x, p0: int = 0, p1: int = 0, p2: int = 0) -> np.ndarray:
    """The float64 value of activation `kind` at x (the DST input values): the float64 oracle's
    definition (kgen.proof.oracle), its parameters read from (p0, p1) as bmm_fused_activation.hpp
    reads them (gelu's p0 is the approximation flag, sigmoid's the vector mode: neither changes the
    function of one element)."""
    from kgen.proof.oracle import FUNCTIONS

    function = FUNCTIONS[kind]
    params = tuple(_f32(p) for p in (p0, p1)[:len(function.defaults)])
    if kind == "sigmoid":
        params = (float(p0),)
    if kind == "relu6" and not p0:
        params = (6.0,)                       # relu_max_tile_pack's `PARAM0 ? PARAM0 : 6.0f`
    with np.errstate(over="ignore", invalid="ignore"):
        return function.formula(np.asarray(x, np.float64), *params)


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
