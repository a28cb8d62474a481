"""TT-Metal 0.81.1's LLK tanh, gelu and gelu_tanh (ckernel_sfpu_tanh.h, ckernel_sfpu_gelu.h and
ckernel_sfpu_piecewise_rational.h under tt_metal/hw/ckernels/<arch>/metal/llk_api/llk_sfpu/),
line by line on the instructions of isa.py. Conventions as in llk.py."""

from __future__ import annotations

import numpy as np

from kgen.proof.sfpu_golden import isa
from kgen.proof.sfpu_golden.coefficients import coefficient as K
from kgen.proof.sfpu_golden.coefficients import coefficient_pair
from kgen.proof.sfpu_golden.llk import _c, _mad, exp21f_core, horner, reciprocal

WH = isa.WORMHOLE


# ---- tanh --------------------------------------------------------------------------------------

def tanh_fp32_accurate(x: np.ndarray, arch: str) -> np.ndarray:
    """_sfpu_tanh_fp32_accurate_, constants of tanh_init<false, true>: tanh(|x|) from
    exp(2|x|) = 2**j * (1 + expm1 polynomial), then (e - 1) / (e + 1) by a reciprocal refined
    with Newton steps (WH: a magic-number seed; BH: SFPARECIP)."""
    j = isa.mul(x, _c("TANH_ACC_TWO_LOG2E", x), arch)
    a = isa.add(x, x, arch)
    m = isa.stochrnd_int(j, keep_sign=False, max_magnitude=255)            # convert<vUInt8>
    i = m
    j = isa.cast_sm32_to_fp32(m)
    a = isa.setsgn_imm(a, 0)
    f = _mad(j, _c("TANH_ACC_NEG_LN2", x), a, arch)
    r = _c("TANH_ACC_P5", x)
    for name in ("TANH_ACC_P4", "TANH_ACC_P3", "TANH_ACC_P2"):
        r = _mad(r, f, _c(name, x), arch)
    s = isa.mul(f, f, arch)
    r = _mad(r, f, _c("TANH_ACC_C1", x), arch)
    w = _c(0.5, x)
    r = _mad(r, f, w, arch)
    e = isa.iadd(i, 126)
    r = _mad(r, s, f, arch)
    scale = isa.setexp(_c(0.0, x), e)
    bias0 = isa.sub(scale, w, arch)
    a = isa.iadd(a, -1)
    x0 = _mad(r, scale, bias0, arch)
    y = _mad(a, _c(0.0, x), _c(1.0, x), arch)
    x1 = isa.add(x0, _c(1.0, x), arch)
    one = _c(1.0, x)
    if arch == WH:
        rcp = isa.iadd(isa.const_bits(0xFEF30000, x), -x1.view(np.int32).astype(np.int64))
        t = _mad(x1, rcp, one, arch)
        t = _mad(t, t, t, arch)
        rcp = _mad(rcp, t, rcp, arch)
        y0 = isa.mul(x0, rcp, arch)
        t = _mad(x1, y0, x0, arch)
    else:
        rcp = isa.arecip(x1)
        t = _mad(isa.negate(x1), rcp, one, arch)
        rcp = _mad(rcp, t, rcp, arch)
        y0 = isa.mul(x0, rcp, arch)
        t = _mad(isa.negate(x1), y0, x0, arch)
    small = isa.int_lt(i, 61)
    x_exp = isa.exexp(x, biased=True)
    inner = np.where(isa.int_ge(x_exp, 115), _mad(t, rcp, y0, arch), x)
    y = np.where(small, inner, y)
    return isa.setsgn(y, x)


def tanh_polynomial_bf16(x: np.ndarray, arch: str) -> np.ndarray:
    """_sfpu_tanh_polynomial_x2_ (one lane of the pair), constants of tanh_init<false, false>:
    a degree-6 odd-free polynomial in |x|, min(., 1), the sign of x; then bf16 rounding."""
    a = isa.abs_float(x)
    r = _c("TANH_POLY_K0", x)
    for name in ("TANH_POLY_K1", "TANH_POLY_K2", "TANH_POLY_C3", "TANH_POLY_C2", "TANH_POLY_C1"):
        r = _mad(r, a, _c(name, x), arch)
    r = isa.mul(r, a, arch)
    return isa.stochrnd_fp16b(isa.setsgn(isa.vmin(r, _c(1.0, x)), x))


def tanh_accurate(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    """calculate_tanh<APPROXIMATION_MODE = false, is_fp32_dest_acc_en>."""
    return tanh_fp32_accurate(x, arch) if fp32_dest else tanh_polynomial_bf16(x, arch)


# ---- gelu --------------------------------------------------------------------------------------

_ERF_NUM = tuple(f"GELU_ERF_NUM_{k}" for k in (15, 13, 11, 9, 7, 5, 3, 1))
_ERF_DEN = tuple(f"GELU_ERF_DEN_{k}" for k in (16, 14, 12, 10, 8, 6, 4, 2, 0))


def _erf_rational(scaled: np.ndarray, x2: np.ndarray, arch: str) -> tuple[np.ndarray, np.ndarray]:
    """piecewise_rational_eval_parity_numer_denom<16, 16>: odd numerator (x * Horner in x**2 from
    the x**15 term), even denominator (Horner in x**2 from the x**16 term; its first step runs
    alone, the rest interleaved with the numerator's)."""
    numer = _c(_ERF_NUM[0], scaled)
    denom = _mad(_c(_ERF_DEN[0], scaled), x2, _c(_ERF_DEN[1], scaled), arch)
    for num_name, den_name in zip(_ERF_NUM[1:], _ERF_DEN[2:]):
        numer = _mad(numer, x2, _c(num_name, scaled), arch)
        denom = _mad(denom, x2, _c(den_name, scaled), arch)
    return isa.mul(numer, scaled, arch), denom


def gelu_fp32(x: np.ndarray, arch: str) -> np.ndarray:
    """calculate_gelu<false, true>: x * (0.5 + 0.5 * erf(x / sqrt 2)), erf a rational function."""
    result = isa.sub(x, x, arch)
    scaled = isa.mul(x, _c("GELU_INV_SQRT2", x), arch)
    scaled = isa.vmin(scaled, _c(10.0, x))
    x2 = isa.mul(scaled, scaled, arch)
    erf_n, erf_d = _erf_rational(scaled, x2, arch)
    erf_val = isa.mul(erf_n, reciprocal(erf_d, 2, arch), arch)
    erf_val = isa.vmin(isa.vmax(erf_val, _c(-1.0, x)), _c(1.0, x))
    inside = isa.mul(x, _mad(_c(0.5, x), erf_val, _c(0.5, x), arch), arch)
    saturated = isa.float_eq(erf_val, _c(-1.0, x), arch)
    inside = np.where(saturated, isa.mul(x, _c("GELU_HALF_ULP_AT_1", x), arch), inside)
    return np.where(isa.float_gt(x, _c("GELU_SAT", x), arch), inside, result)


def gelu_piecewise_bf16(x: np.ndarray, arch: str) -> np.ndarray:
    """calculate_gelu_piecewise then bf16 rounding (calculate_gelu<false, false>): 0 below
    -5.54; x * H(x) * exp(-x**2/2) on the tail; x * Phi(x) by an odd polynomial on
    [-3.125, 2.78125); x from 2.78125."""
    x2 = isa.mul(x, x, arch)
    xlog2 = _mad(x2, _c("GELU_NEG_HALF_ONE_LN2", x), _c(127.0, x), arch)
    exp_val = exp21f_core(xlog2, ("EXP_21F_BF16_C0", "EXP_21F_BF16_C1", "EXP_21F_BF16_C2"), arch)
    correction = horner(x, ("GELU_HCORR_C0", "GELU_HCORR_C1", "GELU_HCORR_C2", "GELU_HCORR_C3"), arch)
    # H = exp_val * correction is used once, by H + 0.375: one SFPMAD (llk._mad)
    grid = _c("GELU_ROUND_TO_GRID", x)
    hs = isa.sub(_mad(exp_val, correction, grid, arch), grid, arch)
    tail = isa.mul(x, hs, arch)
    odd_poly = horner(x2, tuple(f"GELU_CDF_CORE_C{k}" for k in (1, 3, 5, 7, 9, 11, 13)), arch)
    phi = _mad(x, odd_poly, _c("GELU_CDF_CORE_C0", x), arch)
    core = isa.mul(x, phi, arch)
    above_sat = isa.float_gt(x, _c("GELU_PIECEWISE_SAT", x), arch)
    in_core = above_sat & isa.float_ge(x, _c("GELU_CORE_LO", x), arch)
    linear = in_core & isa.float_ge(x, _c("GELU_CORE_HI", x), arch)
    result = np.where(above_sat, tail, _c(0.0, x))
    result = np.where(in_core, core, result)
    result = np.where(linear, x, result)
    return isa.stochrnd_fp16b(result)


def gelu_accurate(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    return gelu_fp32(x, arch) if fp32_dest else gelu_piecewise_bf16(x, arch)


# ---- gelu_tanh ---------------------------------------------------------------------------------

def gelu_tanh_accurate(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    """calculate_gelu_tanh<is_fp32_dest_acc_en>: 0.5x * (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))
    with the FP32 tanh (gelu_tanh_init loads tanh_init<false, true>'s constants)."""
    x2 = isa.mul(x, x, arch)
    p = _mad(_c("GELU_TANH_K", x), x2, _c(1.0, x), arch)
    q = isa.mul(x, p, arch)
    u = isa.mul(_c("GELU_TANH_SQRT_2_OVER_PI", x), q, arch)
    t = tanh_fp32_accurate(u, arch)
    half_x = isa.mul(_c(0.5, x), x, arch)
    result = _mad(half_x, t, half_x, arch)
    return result if fp32_dest else isa.stochrnd_fp16b(result)


def gelu_tanh_fast(x: np.ndarray, arch: str, fp32_dest: bool) -> np.ndarray:
    """calculate_gelu_tanh_fast<is_fp32_dest_acc_en>: x / (1 + 2**(q * -2 sqrt(2/pi) log2 e)),
    the power of two by the exp_21f bit trick with a degree-4 correction; WH divides with
    sfpu_reciprocal_iter<2>, BH with SFPARECIP and two Newton steps."""
    x2 = isa.mul(x, x, arch)
    if arch == WH:
        p = _mad(_c("GELU_TANH_K", x), x2, _c(1.0, x), arch)
        q = isa.mul(x, p, arch)
        xlog2 = _mad(q, _c("GELU_TANH_FAST_WH_NEG_2_SQRT_2_OVER_PI_LOG2E", x), _c(127.0, x), arch)
        coeffs = tuple(f"GELU_TANH_FAST_WH_EXP2_C{k}" for k in range(5))
    else:
        t = _mad(x2, _c("GELU_TANH_FAST_BH_B", x), _c("GELU_TANH_FAST_BH_A", x), arch)
        xlog2 = _mad(x, t, _c(127.0, x), arch)
        coeffs = (1.0,) + tuple(f"GELU_TANH_FAST_BH_EXP2_C{k}" for k in range(1, 5))
    xlog2 = isa.vmin(isa.vmax(xlog2, _c(0.0, x)), _c(254.0, x))
    e = exp21f_core(xlog2, coeffs, arch)
    den = isa.add(e, _c(1.0, x), arch)
    if arch == WH:
        r = reciprocal(den, 2, arch)
    else:
        r = isa.arecip(den)
        for _ in range(2):
            r = isa.mul(r, _mad(isa.negate(den), r, _c(2.0, x), arch), arch)
    result = isa.mul(x, r, arch)
    return result if fp32_dest else isa.stochrnd_fp16b(result)


# ---- the LUT ("fast") paths --------------------------------------------------------------------

def _lut6(prefix: str, arch: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Six (slope, intercept) pairs of a vLut16ss/vLut16ii init, in segment order."""
    i23 = f"{prefix}_I23" + ("" if prefix != "GELU_LUT" else ("_WH" if arch == WH else "_BH"))
    slopes = sum((coefficient_pair(f"{prefix}_S{k}") for k in ("01", "23", "45")), ())
    intercepts = coefficient_pair(f"{prefix}_I01") + coefficient_pair(i23) + \
        coefficient_pair(f"{prefix}_I45")
    return slopes, intercepts


def tanh_fast(x: np.ndarray, arch: str) -> np.ndarray:
    """calculate_tanh<APPROXIMATION_MODE = true>: one SFPLUTFP32 6-entry FP16 table (TABLE1),
    sign retained, stored as is (tanh_init<true, .>'s table)."""
    slopes, intercepts = _lut6("TANH_LUT", arch)
    return isa.sfplutfp32_6entry(x, slopes, intercepts, retain_sign=True, arch=arch)


def gelu_fast(x: np.ndarray, arch: str) -> np.ndarray:
    """calculate_gelu_appx: x * 0.5 + lut(x) with the sign not retained (LutSign::Update)."""
    slopes, intercepts = _lut6("GELU_LUT", arch)
    result = isa.sfplutfp32_6entry(x, slopes, intercepts, retain_sign=False, arch=arch)
    # half_in = x * 0.5 is used once, by half_in + result: one SFPMAD (llk._mad)
    return _mad(x, _c("GELU_APPX_HALF", x), result, arch)


def sigmoid_fast(x: np.ndarray, arch: str) -> np.ndarray:
    """calculate_sigmoid_appx (ckernel_sfpu_sigmoid_appx.h): SFPLUT with sigmoid_appx_init's
    three vLut8si pairs, sign retained, plus 0.5."""
    pairs = tuple(coefficient_pair(f"SIGMOID_LUT_{k}") for k in range(3))
    return isa.add(isa.sfplut(x, pairs, retain_sign=True, arch=arch), _c(0.5, x), arch)
