"""TT-Metal 0.81.1's LLK SFPU activation functions, line by line, on the instructions of isa.py.

Each function names the header it follows (under tt_metal/hw/ckernels/<arch>/metal/llk_api/
llk_sfpu/ of TT-Metal v0.81.1 unless said otherwise) and works per lane on uint32 LReg bits.
Where the C++ writes `a * b + c` the SFPI compiler emits one SFPMAD, so the golden does too.
The coefficients come from configs/sfpu/llk_coefficients.toml (checked against the headers).
"""

from __future__ import annotations

import numpy as np

from kgen.proof.sfpu_golden import isa
from kgen.proof.sfpu_golden.coefficients import coefficient as K
from kgen.proof.sfpu_golden.coefficients import coefficient_int

WH = isa.WORMHOLE


# SFPI's combine pass turns an add whose operand is a single-use multiply into one SFPMAD
# (tenstorrent/sfpi-gcc, gimple-rvtt-combine.cc, try_combine_mul_add): the golden fuses every
# `a * b + c` of the LLK source and the single-use pairs that span two statements. Not modelled:
# the same pass first turns an add or multiply by a bf16-exact literal into SFPADDI / SFPMULI,
# which it then leaves unfused. FUSE_MUL_ADD = False models every multiply-add as two instructions
# (the choice a host model that maps each C++ operator to one instruction makes).
FUSE_MUL_ADD = True


def _mad(a, b, c, arch):
    if FUSE_MUL_ADD:
        return isa.sfpmad(a, b, c, arch)
    return isa.add(isa.mul(a, b, arch), c, arch)


def _c(name_or_value, like):
    value = K(name_or_value) if isinstance(name_or_value, str) else name_or_value
    return isa.const(value, like)


# ---- exp ---------------------------------------------------------------------------------------

def horner(x: np.ndarray, coefficients, arch: str) -> np.ndarray:
    """PolynomialEvaluator::eval(x, c0, c1, ..., cn) (tt-llk ckernel_sfpu_polyval.h):
    c0 + x * (c1 + x * (... + x * cn)), one SFPMAD per step; names or float values."""
    acc = _c(coefficients[-1], x)
    for coefficient in reversed(coefficients[:-1]):
        acc = _mad(x, acc, _c(coefficient, x), arch)
    return acc


def exp21f_core(xlog2: np.ndarray, coefficients, arch: str) -> np.ndarray:
    """The exp_21f bit trick after the clamp (ckernel_sfpu_exp.h): _float_to_int32_for_exp_21f_
    (exponent and mantissa-with-unit-bit shifted by the exponent), its exponent as 2**integer
    part, its mantissa cast to float as the fraction, a polynomial in the fraction, setexp."""
    exp = isa.exexp(xlog2)
    man = isa.exman(xlog2, unit_bit=True)
    z = isa.shft(man, exp)
    exponential_part = isa.exexp(z, biased=True)
    frac = isa.cast_sm32_to_fp32(isa.exman(z))
    frac = horner(frac, coefficients, arch)
    return isa.setexp(frac, exponential_part)


def exp_21f(val: np.ndarray, arch: str, round_bf16: bool) -> np.ndarray:
    """_sfpu_exp_21f_bf16_<is_fp32_dest_acc_en = not round_bf16> (ckernel_sfpu_exp.h), the
    exp_21f algorithm of Moroz et al. 2022; same code on both archs."""
    xlog2 = _mad(val, _c("EXP_21F_ONE_LN2", val), _c(127.0, val), arch)
    xlog2 = isa.vmin(isa.vmax(xlog2, _c(0.0, val)), _c(255.0, val))        # sfpi::clamp
    y = exp21f_core(xlog2, ("EXP_21F_BF16_C0", "EXP_21F_BF16_C1", "EXP_21F_BF16_C2"), arch)
    return isa.stochrnd_fp16b(y) if round_bf16 else y


def exp_fp32_accurate(a: np.ndarray, arch: str) -> np.ndarray:
    """_sfpu_exp_fp32_accurate_<false> (ckernel_sfpu_exp.h): Cody-Waite reduction and a degree-6
    polynomial; the overflow/underflow tail differs between WH and BH."""
    j = isa.mul(_c("EXP_ACC_LOG2E", a), a, arch)
    sm = isa.stochrnd_int(j, keep_sign=True, max_magnitude=32767)           # convert<vSMag16>
    j = isa.cast_sm32_to_fp32(sm)
    f = _mad(j, _c("EXP_ACC_LN2_HI", a), a, arch)
    f = _mad(j, _c("EXP_ACC_LN2_LO", a), f, arch)
    r = _c("EXP_ACC_P6", a)
    for name in ("EXP_ACC_P5", "EXP_ACC_P4", "EXP_ACC_P3", "EXP_ACC_P2"):
        r = _mad(r, f, _c(name, a), arch)
    i = isa.abs_int(sm)
    y = _mad(r, f, _c(1.0, a), arch)
    i = isa.setsgn(i, j)
    r = _mad(y, f, _c(1.0, a), arch)
    e = isa.iadd(isa.exexp(r, biased=True), i.view(np.int32))
    if arch == WH:
        y = isa.iadd(y, -1)
        y = isa.mul(y, _c(0.0, a), arch)
        big = isa.int_ge(e, 1)
        y = np.where(big, isa.add(y, _c(np.inf, a), arch), y)
        return np.where(big & isa.int_lt(e, 255), isa.setexp(r, e), y)
    y = isa.mul(y, _c(np.inf, a), arch)
    inside = isa.int_lt(e, 255)
    y = np.where(inside, isa.setexp(r, e), y)
    return np.where(inside & isa.int_lt(e, 1), _c(0.0, a), y)


# ---- reciprocal --------------------------------------------------------------------------------

def reciprocal_wh(x: np.ndarray, max_iter: int, arch: str) -> np.ndarray:
    """sfpu_reciprocal_iter<max_iter, round_to_bf16 = false, normalized = false>
    (wormhole_b0 ckernel_sfpu_recip.h), constants of sfpu_reciprocal_init<false, false>."""
    negative_x = isa.setman(_c(-1.0, x), x)                                 # copyman(-1.0f, in)
    y = _mad(_c("RECIP_WH_K0", x), negative_x, _c("RECIP_WH_K1", x), arch)
    scale_bits = isa.bit_not(x)
    y = _mad(y, negative_x, _c("RECIP_WH_K2", x), arch)
    scale = isa.setman(scale_bits, np.zeros_like(x))
    t = _mad(negative_x, y, _c(1.0, x), arch)
    scale = isa.mul(scale, _c(0.5, x), arch)
    y = _mad(y, t, y, arch)
    if max_iter > 1:
        t = _mad(negative_x, y, _c(1.0, x), arch)
        y = _mad(y, t, y, arch)
    y = isa.mul(y, scale, arch)
    return isa.setsgn(y, x)


def reciprocal_bh(x: np.ndarray, max_iter: int, arch: str) -> np.ndarray:
    """sfpu_reciprocal_iter<max_iter, normalized = false> (blackhole ckernel_sfpu_recip.h):
    SFPARECIP then Newton steps y * -t - 0.0 with t = x*y - 2 (vConstFloatPrgm0 = 2.0)."""
    two = _c(2.0, x)
    minus_zero = isa.const_bits(0x80000000, x)
    y = isa.arecip(x)
    t = _mad(x, y, isa.negate(two), arch)
    if max_iter > 1:
        y1 = _mad(y, isa.negate(t), minus_zero, arch)
        t2 = _mad(x, y1, isa.negate(two), arch)
        return np.where(isa.lt0(t), _mad(y1, isa.negate(t2), minus_zero, arch), y)
    return np.where(isa.lt0(t), _mad(y, isa.negate(t), minus_zero, arch), y)


def reciprocal(x: np.ndarray, max_iter: int, arch: str) -> np.ndarray:
    return reciprocal_wh(x, max_iter, arch) if arch == WH else reciprocal_bh(x, max_iter, arch)


# ---- sigmoid, silu -----------------------------------------------------------------------------

def sigmoid_core(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    """_sfpu_sigmoid_<is_fp32_dest_acc_en> (ckernel_sfpu_sigmoid.h): 1 / (1 + exp(-x))."""
    neg_x = isa.negate(x)
    exp_neg_x = exp_fp32_accurate(neg_x, arch) if fp32_dest else exp_21f(neg_x, arch, False)
    denominator = isa.add(_c(1.0, x), exp_neg_x, arch)
    return reciprocal(denominator, 2 if fp32_dest else 1, arch)


def sigmoid_accurate(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    """calculate_sigmoid<APPROXIMATION_MODE = false> (ckernel_sfpu_sigmoid.h)."""
    result = sigmoid_core(x, arch, fp32_dest)
    return result if fp32_dest else isa.stochrnd_fp16b(result)


def silu(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    """calculate_silu (ckernel_sfpu_silu.h): x * _sfpu_sigmoid_(x), bf16-rounded on 16-bit Dst."""
    result = isa.mul(x, sigmoid_core(x, arch, fp32_dest), arch)
    return result if fp32_dest else isa.stochrnd_fp16b(result)


# ---- clamps ------------------------------------------------------------------------------------

def relu_max(x: np.ndarray, threshold_bits: int, arch: str) -> np.ndarray:
    """_relu_max_ / _relu_max_body_ (tt-llk tt_llk_<arch>/common/inc/sfpu/ckernel_sfpu_relu.h).
    WH: v_if(x > threshold) x = threshold; v_if(x < 0) x = 0. BH: max(min(x, threshold), 0.0),
    two SFPSWAPs in the sign-magnitude total order (_relu_max_float_impl_ / _relu_max_body_)."""
    threshold = isa.const_bits(threshold_bits, x)
    if arch != WH:
        return isa.vmax(isa.vmin(x, threshold), _c(0.0, x))
    result = np.where(isa.float_gt(x, threshold, arch), threshold, x)
    return np.where(isa.lt0(result), np.uint32(0), result)


def hardsigmoid(x: np.ndarray, arch: str) -> np.ndarray:
    """ActivationImpl<Hardsigmoid> (ckernel_sfpu_activations.h): relu_max(x/6 + 0.5, 1.0)."""
    tmp = _mad(x, _c("HARDSIGMOID_SLOPE", x), _c("HARDSIGMOID_OFFSET", x), arch)
    return relu_max(tmp, int(np.float32(1.0).view(np.uint32)), arch)


def hardtanh(x: np.ndarray, min_bits: int, max_bits: int) -> np.ndarray:
    """calculate_hardtanh (ckernel_sfpu_hardtanh.h): sfpi::clamp(x, min, max)."""
    lo, hi = isa.const_bits(min_bits, x), isa.const_bits(max_bits, x)
    return isa.vmin(isa.vmax(x, lo), hi)


# ---- selu, softplus ----------------------------------------------------------------------------

def expm1_cw_clamped(x: np.ndarray, arch: str) -> np.ndarray:
    """expm1_cw_clamped (tt-llk tt_llk_<arch>/common/inc/sfpu/ckernel_sfpu_expm1_cw.h, the branch
    without INP_FLOAT32, which TT-Metal's JIT does not define): Cody-Waite reduction around the
    2**23 + 2**22 rounding constant, a degree-5 polynomial, (2**k - 1) + 2**k * h."""
    x = isa.vmax(x, _c("EXPM1_CW_CLAMP", x))
    c231 = _c("EXPM1_CW_C231", x)
    tmp = _mad(x, _c("EXPM1_CW_INV_LN2", x), c231, arch)
    k_f = isa.sub(tmp, c231, arch)
    r = _mad(k_f, _c("EXPM1_CW_NEG_LN2_HI", x), x, arch)
    r = _mad(k_f, _c("EXPM1_CW_NEG_LN2_LO", x), r, arch)
    h = horner(r, (1.0,) + tuple(f"EXPM1_CW_BF16_P{k}" for k in range(1, 5)), arch)
    h = isa.mul(r, h, arch)
    two_k = isa.setexp(_c(1.0, x), isa.iadd(tmp, -coefficient_int("EXPM1_CW_C231_BIAS")))
    return _mad(two_k, h, isa.sub(two_k, _c(1.0, x), arch), arch)


def selu(x: np.ndarray, scale_bits: int, alpha_bits: int, arch: str, fp32_dest: bool) -> np.ndarray:
    """calculate_selu (ckernel_sfpu_selu.h): scale * x for x >= 0, scale * alpha * expm1(x)
    otherwise; scale * alpha is one FP32 multiply on the RISC-V core."""
    scale = np.uint32(scale_bits).view(np.float32)
    scale_alpha = np.float32(scale * np.uint32(alpha_bits).view(np.float32))
    result = isa.mul(_c(scale_alpha, x), expm1_cw_clamped(x, arch), arch)
    result = np.where(isa.gte0(x), isa.mul(_c(scale, x), x, arch), result)
    return result if fp32_dest else isa.stochrnd_fp16b(result)


def softplus(x: np.ndarray, beta_bits: int, beta_recip_bits: int, threshold_bits: int, arch: str,
             fp32_dest: bool) -> tuple[np.ndarray, np.ndarray]:
    """calculate_softplus_body (ckernel_sfpu_softplus.h, the branch without INP_FLOAT32):
    for beta*x <= threshold, (max(t, 0) + P(|t|)) / beta with P a degree-6 polynomial (0 beyond
    |t| > 5); other lanes are not stored. Returns (values, stored lanes)."""
    beta = np.uint32(beta_bits).view(np.float32)
    t = isa.mul(_c(beta, x), x, arch)
    stored = isa.float_le(t, isa.const_bits(threshold_bits, x), arch)
    a = isa.setsgn_imm(t, 0)
    residual = horner(a, tuple(f"SOFTPLUS_BF16_POLY_C{k}" for k in range(7)), arch)
    residual = np.where(isa.float_gt(a, _c("SOFTPLUS_POLY_BOUNDARY", x), arch), np.uint32(0), residual)
    t = isa.vmax(t, _c(0.0, x))
    sp = isa.add(t, residual, arch)
    result = isa.mul(isa.const_bits(beta_recip_bits, x), sp, arch)
    return (result if fp32_dest else isa.stochrnd_fp16b(result)), stored
