"""The NumPy golden model of the ten activations TT-Metal 0.81.1's matmul fuses.

`apply_activation(dst, kind, p0, p1, p2, *, arch, fp32_dest, approx)` takes the DST values (already
in DST's format; shape (..., 32, 32) of whole tiles in TT's face order) and returns what DST holds
after the activation's SFPU code ran: SFPLOAD, the LLK function of `bmm_fused_activation.hpp`'s
ActivationApplyHelper<kind, p0, p1, p2> (llk.py, on the instructions of isa.py), SFPSTORE.
Independent of the C++ host SFPU model; the two agreeing bit for bit is the check.

`approx` (math_approx_mode, the kernel's APPROX) only reaches template parameters these ten LLK
bodies do not read (hardsigmoid, hardtanh, relu_max, selu, softplus, silu_init); the fast/accurate
choice is TT's PARAM0 (tanh, gelu, gelu_tanh) or PARAM1 (sigmoid), as bmm_fused_activation.hpp reads
them. Errors against float64 references: kgen.proof.sfpu_golden.errors.activation_error.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kgen.gen.activations import KERNEL_ACTIVATIONS
from kgen.proof.sfpu_golden import isa, llk, llk_gelu
from kgen.proof.sfpu_golden.coefficients import coefficient

KINDS = KERNEL_ACTIVATIONS[1:]          # every SFPU kind of the activation table (none is not one)
ARCHS = (isa.WORMHOLE, isa.BLACKHOLE)
FACE = 256
Lanes = np.ndarray | tuple[np.ndarray, np.ndarray]


class NotModelled(NotImplementedError):
    """The golden does not model this activation/mode yet."""


def _sigmoid(x, p0, p1, arch, fp32_dest):
    if p1 != 0:
        return llk_gelu.sigmoid_fast(x, arch)
    return llk.sigmoid_accurate(x, arch, fp32_dest)


def _relu6(x, p0, arch):
    threshold = p0 if p0 != 0 else int(np.float32(coefficient("RELU6_DEFAULT_MAX")).view(np.uint32))
    return llk.relu_max(x, threshold, arch)


def _kernel(kind: str, p0: int, p1: int, p2: int, arch: str, fp32_dest: bool, approx: bool
            ) -> Callable[[np.ndarray], Lanes]:
    """The LLK function ActivationApplyHelper reaches for (kind, p0, p1, p2), as lanes -> lanes
    (or lanes and the lanes it stores, when the LLK code stores under a condition)."""
    table: dict[str, Callable[[np.ndarray], Lanes]] = {
        "silu": lambda x: llk.silu(x, arch, fp32_dest),
        "tanh": lambda x: (llk_gelu.tanh_fast(x, arch) if p0 != 0
                           else llk_gelu.tanh_accurate(x, arch, fp32_dest)),
        "gelu": lambda x: (llk_gelu.gelu_fast(x, arch) if p0 != 0
                           else llk_gelu.gelu_accurate(x, arch, fp32_dest)),
        "gelu_tanh": lambda x: (llk_gelu.gelu_tanh_fast(x, arch, fp32_dest) if p0 != 0
                                else llk_gelu.gelu_tanh_accurate(x, arch, fp32_dest)),
        "selu": lambda x: llk.selu(x, p0, p1, arch, fp32_dest),
        "softplus": lambda x: llk.softplus(x, p0, p2, p1, arch, fp32_dest),
        "sigmoid": lambda x: _sigmoid(x, p0, p1, arch, fp32_dest),
        "relu6": lambda x: _relu6(x, p0, arch),
        "hardsigmoid": lambda x: llk.hardsigmoid(x, arch),
        "hardtanh": lambda x: llk.hardtanh(x, p0, p1),
    }
    if kind not in KINDS:
        raise ValueError(f"unknown activation kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind not in table:
        raise NotModelled(f"the golden SFPU model does not model {kind} yet")
    return table[kind]


def _faces(kind: str, p0: int) -> tuple[int, ...]:
    """The faces the SFPU call covers: sigmoid's PARAM0 picks VectorMode R (faces 0, 1) or C
    (faces 0, 2) (_llk_math_eltwise_sfpu_apply_vector_mode_); every other call is RC."""
    if kind == "sigmoid" and p0 == 1:
        return (0, 1)
    if kind == "sigmoid" and p0 == 2:
        return (0, 2)
    return (0, 1, 2, 3)


# Lanes per NumPy pass: small enough for the cache (about 1.5x faster than one pass per tile set).
CHUNK = 16384


def _run(kernel: Callable[[np.ndarray], Lanes], dst: np.ndarray, fp32_dest: bool) -> np.ndarray:
    """SFPLOAD, the kernel, SFPSTORE (only the lanes the kernel stores) for one chunk of lanes."""
    computed = kernel(isa.sfpload(dst, fp32_dest))
    values, stored = computed if isinstance(computed, tuple) else (computed, None)
    result = isa.as_float(isa.sfpstore(values, fp32_dest))
    return result if stored is None else np.where(stored, result, dst)


def apply_activation(dst, kind: str, p0: int, p1: int, p2: int, *, arch: str, fp32_dest: bool,
                     approx: bool) -> np.ndarray:
    """DST after TT-Metal 0.81.1's fused activation `kind` (see the module docstring)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; expected one of {', '.join(ARCHS)}")
    dst = np.asarray(dst, dtype=np.float32)
    if dst.ndim < 2 or dst.shape[-2:] != (32, 32):
        raise ValueError(f"dst must be whole 32x32 tiles, got shape {dst.shape}")
    kernel = _kernel(kind, int(p0), int(p1), int(p2), arch, fp32_dest, approx)
    flat = dst.reshape(-1, 4, FACE)
    faces = list(_faces(kind, int(p0)))
    before = flat[:, faces, :].reshape(-1)
    result = np.concatenate([_run(kernel, before[i:i + CHUNK], fp32_dest)
                             for i in range(0, before.size, CHUNK)] or [before[:0]])
    out = flat.copy()
    out[:, faces, :] = result.reshape(-1, len(faces), FACE)
    return out.reshape(dst.shape)
