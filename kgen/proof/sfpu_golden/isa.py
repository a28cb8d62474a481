"""SFPU instructions as NumPy functions on uint32 bit patterns, one function per instruction.

Each value is a uint32 array holding one LReg per lane (FP32, sign-magnitude or two's-complement
integer, as the instruction reads it). Every function cites the page of
tenstorrent/tt-isa-documentation whose functional model it follows:
  WH = WormholeB0/TensixTile/TensixCoprocessor/<page>.md
  BH = BlackholeA0/TensixTile/TensixCoprocessor/<page>.md
SFPMAD (and the multiply-add inside SFPLUT / SFPLUTFP32) follows the bit-perfect models the
SFPMAD pages link, Miscellaneous/FMA/fma.c (fma.py). Where the SFPI library or compiler decides
what a C++ expression becomes (comparisons, LUT coefficient codes), the function names the
tenstorrent/sfpi or tenstorrent/sfpi-gcc source it follows.
"""

from __future__ import annotations

import numpy as np

from kgen.proof.sfpu_golden.fma import fma_hw

WORMHOLE = "wormhole_b0"
BLACKHOLE = "blackhole"

SIGN = np.uint32(0x80000000)
EXP_MASK = np.uint32(0x7F800000)
MAN_MASK = np.uint32(0x007FFFFF)


def bits(values) -> np.ndarray:
    """Float values -> their FP32 bit patterns (uint32)."""
    return np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).copy()


def const(value: float, like: np.ndarray) -> np.ndarray:
    """An SFPLOADI'd FP32 constant in every lane (the compiler loads the float's exact bits)."""
    return np.full(like.shape, np.float32(value).view(np.uint32), dtype=np.uint32)


def const_bits(pattern: int, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape, pattern, dtype=np.uint32)


def as_float(u: np.ndarray) -> np.ndarray:
    return np.asarray(u, dtype=np.uint32).view(np.float32)


def _exp_field(u: np.ndarray) -> np.ndarray:
    return (u >> np.uint32(23)) & np.uint32(0xFF)


# ---- Dst <-> LReg: SFPLOAD / SFPSTORE (WH/BH SFPLOAD.md, SFPSTORE.md) ----------------------------

def sfpload(dst: np.ndarray, fp32_dest: bool) -> np.ndarray:
    """SFPLOAD with MOD0_FMT_SRCB: FP32 Dst -> the 32 bits as stored; 16-bit Dst (Float16_b) ->
    MOD0_FMT_BF16, the 16 bits shifted to the top of the LReg (no conversion, denormals kept)."""
    u = bits(dst)
    if fp32_dest:
        return u
    return u & np.uint32(0xFFFF0000)


def sfpstore(u: np.ndarray, fp32_dest: bool) -> np.ndarray:
    """SFPSTORE with MOD0_FMT_SRCB: FP32 Dst takes the 32 bits; 16-bit Dst takes ToBF16: a
    denormal (exponent 0) keeps only its sign, then the low 16 bits are truncated."""
    if fp32_dest:
        return u.copy()
    man = np.where(_exp_field(u) == 0, np.uint32(0), u & MAN_MASK)
    return ((u & (SIGN | EXP_MASK)) | man) & np.uint32(0xFFFF0000)


# ---- SFPMAD (WH/BH SFPMAD.md); SFPMUL, SFPADD, SFPMULI, SFPADDI are SFPMAD with a constant -----

def sfpmad(a: np.ndarray, b: np.ndarray, c: np.ndarray, arch: str) -> np.ndarray:
    """VD = VA * VB + VC: the bit-perfect model the SFPMAD pages point to (fma.py). In short:
    denormal inputs are zero, the product is cut to the addend's precision with a sticky bit, one
    rounding to nearest even, a denormal result is flushed (WH: every zero is +0; BH: the sign is
    kept); WH NaNs are sign | 0x7f800001 plus leaked bits, BH NaNs 0x7fc00000."""
    return fma_hw(a, b, c, wormhole=arch == WORMHOLE)


def mul(a, b, arch: str) -> np.ndarray:
    """SFPMUL / SFPMULI: SFPMAD with VC = +0 (the LCONST_0 register) (SFPMUL.md)."""
    return sfpmad(a, b, np.zeros_like(a), arch)


def add(a, c, arch: str) -> np.ndarray:
    """SFPADD / SFPADDI: SFPMAD with VB = 1.0 (SFPADD.md)."""
    return sfpmad(a, const(1.0, a), c, arch)


def sub(a, c, arch: str) -> np.ndarray:
    """a - c: one SFPMAD, c * -1.0 + a."""
    return sfpmad(c, const(-1.0, c), a, arch)


# ---- bit-field instructions --------------------------------------------------------------------

def exexp(u: np.ndarray, biased: bool = False) -> np.ndarray:
    """SFPEXEXP (SFPEXEXP.md): the exponent field, minus 127 unless NODEBIAS; two's complement."""
    e = _exp_field(u).astype(np.int64)
    return (e if biased else e - 127).astype(np.int32).view(np.uint32)


def exman(u: np.ndarray, unit_bit: bool = False) -> np.ndarray:
    """SFPEXMAN (SFPEXMAN.md): the 23 mantissa bits, plus the hidden bit 1<<23 unless PAD9."""
    man = u & MAN_MASK
    return man | np.uint32(1 << 23) if unit_bit else man


def setexp(u: np.ndarray, e: np.ndarray) -> np.ndarray:
    """SFPSETEXP (SFPSETEXP.md): the exponent field becomes the low 8 bits of the integer e."""
    return (u & ~EXP_MASK) | ((np.asarray(e, np.uint32) & np.uint32(0xFF)) << np.uint32(23))


def setman(u: np.ndarray, man: np.ndarray) -> np.ndarray:
    """SFPSETMAN (SFPSETMAN.md): the mantissa field becomes the low 23 bits of man."""
    return (u & ~MAN_MASK) | (np.asarray(man, np.uint32) & MAN_MASK)


def setsgn(u: np.ndarray, sign_from: np.ndarray) -> np.ndarray:
    """SFPSETSGN (SFPSETSGN.md): the sign bit becomes bit 31 of sign_from (copysgn)."""
    return (u & ~SIGN) | (np.asarray(sign_from, np.uint32) & SIGN)


def setsgn_imm(u: np.ndarray, sign: int) -> np.ndarray:
    """SFPSETSGN with ARG_IMM (SFPSETSGN.md)."""
    return (u & ~SIGN) | (SIGN if sign else np.uint32(0))


def abs_float(u: np.ndarray) -> np.ndarray:
    """SFPABS with SFPABS_MOD1_FLOAT (SFPABS.md): clears the sign, except -NaN stays -NaN."""
    neg_nan = u >= np.uint32(0xFF800001)
    return np.where(neg_nan, u, u & ~SIGN)


def abs_int(u: np.ndarray) -> np.ndarray:
    """SFPABS integer mode (SFPABS.md): two's complement negation of negative values;
    -2147483648 stays."""
    neg = (u & SIGN) != 0
    return np.where(neg, (~u + np.uint32(1)) & np.uint32(0xFFFFFFFF), u).astype(np.uint32)


def iadd(u: np.ndarray, v) -> np.ndarray:
    """SFPIADD (SFPIADD.md): two's complement 32-bit addition, wrapping."""
    return (u.astype(np.uint64) + np.asarray(v, np.int64).astype(np.uint64)).astype(np.uint32)


def shft(u: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """SFPSHFT by a register (SFPSHFT.md): left by amount & 31 when amount >= 0, else logical
    right by (-amount) & 31."""
    amt = np.asarray(amount, np.uint32).view(np.int32).astype(np.int64)
    left = (u.astype(np.uint64) << (amt & 31).astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    right = u.astype(np.uint64) >> ((-amt) & 31).astype(np.uint64)
    return np.where(amt >= 0, left, right).astype(np.uint32)


def bit_not(u: np.ndarray) -> np.ndarray:
    """SFPNOT (SFPNOT.md)."""
    return ~u


def negate(u: np.ndarray) -> np.ndarray:
    """Unary minus on a vFloat: SFPMOV with the sign-complement modifier (SFPMOV.md), a bit flip."""
    return u ^ SIGN


# ---- conversions: SFPCAST, SFPSTOCHRND (round to nearest, i.e. PRNGBits = 0x400000) -------------

def cast_sm32_to_fp32(u: np.ndarray) -> np.ndarray:
    """SFPCAST sign-magnitude int32 -> FP32, round to nearest ties to even (SFPCAST.md)."""
    sign = u & SIGN
    mag = (u & np.uint32(0x7FFFFFFF)).astype(np.uint64)
    lz = np.where(mag > 0, 32 - np.floor(np.log2(np.maximum(mag, 1))).astype(np.int64) - 1, 157)
    # floor(log2) of a uint is exact below 2**31 in float64
    norm = (mag << (lz & 31).astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    d = sign.astype(np.uint64) + ((157 - lz).astype(np.uint64) << np.uint64(23)) + (norm >> np.uint64(8))
    up = ((norm & np.uint64(0x80)) != 0) & ((norm & np.uint64(0x17F)) != 0)
    return ((d + up.astype(np.uint64)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def stochrnd_fp16b(u: np.ndarray) -> np.ndarray:
    """SFPSTOCHRND FP32 -> FP16B, round to nearest (SFPSTOCHRND_FloatFloat.md): exponent 0
    becomes +0; Inf/NaN keep only sign and exponent (become +-Inf); otherwise the 16 discarded
    bits round up when they are >= 0x8000 (ties away from zero in magnitude)."""
    e = _exp_field(u)
    discarded = u & np.uint32(0xFFFF)
    kept = u - discarded
    rounded = (kept.astype(np.uint64) + np.where(discarded >= 0x8000, 0x10000, 0)).astype(np.uint32)
    return np.where(e == 0, np.uint32(0), np.where(e == 0xFF, u & np.uint32(0xFF800000), rounded))


def stochrnd_int(u: np.ndarray, keep_sign: bool, max_magnitude: int) -> np.ndarray:
    """SFPSTOCHRND FP32 -> (U)INT8/16, round to nearest (SFPSTOCHRND_FloatInt.md): a sign-
    magnitude integer; |x| < 0.5 -> 0; exponent >= 16 (and NaN) -> max magnitude; ties round up."""
    sign = (u & SIGN) if keep_sign else np.zeros_like(u)
    exp = _exp_field(u).astype(np.int64) - 127
    man = (np.uint64(0x800000) | (u & MAN_MASK).astype(np.uint64))
    shifted = np.where(exp >= 0, man << np.clip(exp, 0, 40).astype(np.uint64),
                       man >> np.clip(-exp, 0, 63).astype(np.uint64))
    mag = (shifted >> np.uint64(23)) + ((shifted & np.uint64(0x7FFFFF)) >= 0x400000)
    mag = np.minimum(mag, np.uint64(max_magnitude))
    mag = np.where(exp < -1, np.uint64(0), np.where(exp >= 16, np.uint64(max_magnitude), mag))
    sign = np.where((exp < -1) | (mag == 0), np.uint32(0), sign)
    return (sign.astype(np.uint64) + mag).astype(np.uint32)


# ---- comparisons, min/max ----------------------------------------------------------------------

def total_order_key(u: np.ndarray) -> np.ndarray:
    """SFPSWAP's SignMagIsSmaller (SFPSWAP.md): FP32 compared as sign-magnitude integers, the
    order -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN."""
    flip = np.where((u & SIGN) != 0, np.uint32(0x7FFFFFFF), np.uint32(0))
    return (u ^ flip).view(np.int32)


def vmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sfpi::min: SFPSWAP VEC_MIN_MAX; the operand kept when neither is smaller is a (same bits)."""
    return np.where(total_order_key(b) < total_order_key(a), b, a)


def vmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(total_order_key(b) > total_order_key(a), b, a)


def lt0(u: np.ndarray) -> np.ndarray:
    """SFPSETCC LREG_LT0 (SFPSETCC.md): the register as int32 is negative (sign bit set)."""
    return (u & SIGN) != 0


def gte0(u: np.ndarray) -> np.ndarray:
    """SFPSETCC LREG_GTE0."""
    return (u & SIGN) == 0


FLOAT_COMPARES = ("lt", "ge", "gt", "le", "eq", "ne")


def fcmp(a: np.ndarray, b: np.ndarray, op: str, arch: str) -> np.ndarray:
    """vFloat a <op> b as the SFPI compiler lowers it (tenstorrent/sfpi-gcc, gimple-rvtt-expand.cc
    expand_cmp): on BH, ordered compares are SFPGT / SFPLE (BH SFPGT.md, SFPLE.md: the sign-
    magnitude total order, no flushing), a < b and a >= b by swapping the operands; on WH, and
    for == / != on both, a subtraction by SFPMAD tested with SFPSETCC (SFPSETCC.md): a - b for
    <, >=, ==, != and b - a for > and <= (the compiler turns those into < and >= by swapping).
    A compare with the constant +0.0 tests the register itself (<, >=, ==, !=)."""
    if op not in FLOAT_COMPARES:
        raise ValueError(op)
    if arch == BLACKHOLE and op not in ("eq", "ne"):
        ka, kb = total_order_key(a), total_order_key(b)
        return {"lt": ka < kb, "ge": ka >= kb, "gt": ka > kb, "le": ka <= kb}[op]
    if op in ("gt", "le"):
        d = sub(b, a, arch)
        return lt0(d) if op == "gt" else gte0(d)
    d = a if bool(np.all(b == 0)) else sub(a, b, arch)
    return {"lt": lt0(d), "ge": gte0(d), "eq": d == 0, "ne": d != 0}[op]


def float_gt(a: np.ndarray, b: np.ndarray, arch: str) -> np.ndarray:
    return fcmp(a, b, "gt", arch)


def float_ge(a: np.ndarray, b: np.ndarray, arch: str) -> np.ndarray:
    return fcmp(a, b, "ge", arch)


def float_le(a: np.ndarray, b: np.ndarray, arch: str) -> np.ndarray:
    return fcmp(a, b, "le", arch)


def float_eq(a: np.ndarray, b: np.ndarray, arch: str) -> np.ndarray:
    return fcmp(a, b, "eq", arch)


def int_lt(u: np.ndarray, k: int) -> np.ndarray:
    """vInt < constant: two's complement compare (SFPIADD with CC, SFPIADD.md)."""
    return u.view(np.int32).astype(np.int64) < k


def int_ge(u: np.ndarray, k: int) -> np.ndarray:
    return u.view(np.int32).astype(np.int64) >= k


# ---- Blackhole only ----------------------------------------------------------------------------

_RECIP_LUT = np.array([
    127, 125, 123, 121, 119, 117, 116, 114, 112, 110, 109, 107, 105, 104, 102, 100, 99,
    97, 96, 94, 93, 91, 90, 88, 87, 85, 84, 83, 81, 80, 79, 77, 76, 75, 74, 72, 71, 70,
    69, 68, 66, 65, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48,
    47, 46, 45, 44, 43, 42, 41, 40, 40, 39, 38, 37, 36, 35, 35, 34, 33, 32, 31, 31, 30,
    29, 28, 28, 27, 26, 25, 25, 24, 23, 23, 22, 21, 21, 20, 19, 19, 18, 17, 17, 16, 15,
    15, 14, 14, 13, 12, 12, 11, 11, 10, 9, 9, 8, 8, 7, 7, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1,
    1, 0], dtype=np.uint32)


def arecip(u: np.ndarray) -> np.ndarray:
    """SFPARECIP with SFPARECIP_MOD1_RECIP (BH SFPARECIP.md): sign kept, ApproxRecip of the
    magnitude: below 2**-126 -> Inf, from 2**126 -> 0, else exponent 253-e and a 7-bit LUT
    mantissa indexed by the top 7 mantissa bits."""
    sign = u & SIGN
    x = u - sign
    lut = _RECIP_LUT[((x >> np.uint32(16)) & np.uint32(0x7F)).astype(np.intp)]
    exp = (np.uint32(253) - np.minimum(x >> np.uint32(23), np.uint32(253))) << np.uint32(23)
    mid = exp | (lut << np.uint32(16))
    r = np.where(x < 0x00800000, np.uint32(0x7F800000), np.where(x < 0x7E800000, mid, np.uint32(0)))
    return sign + r


# ---- LUT instructions and the coefficient encodings the SFPI library feeds them ---------------

def sfpi_lut_code(value: float, fp16: bool) -> int:
    """sfpi::impl_::sLut<FP16, .>::convert (tenstorrent/sfpi include/sfpi_lib.h): the 8-bit
    (SFPLUT) or 16-bit (SFPLUTFP32) code of a float coefficient; mantissa rounded half up, an
    underflow becomes the code the instruction reads as zero (0xff, or exponent 31), an overflow
    the largest code."""
    man_bits = 10 if fp16 else 4
    u = int(np.float32(value).view(np.uint32))
    sgn, exp, man = u >> 31, (u >> 23) & 0xFF, u & 0x7FFFFF
    man += 1 << (23 - man_bits - 1)
    if man >> 23:
        exp, man = exp + 1, 0
    man >>= 23 - man_bits
    if fp16:
        exp -= 128 - 16
        body = 0x7C00 if exp < 0 else 0x7BFF if exp >= 31 else (exp << 10) | man
        return (sgn << 15) | body
    exp -= 128
    body = 0xFF if exp + 7 < 0 else 0x0F if exp >= 0 else ((-1 - exp) << 4) | man
    return (sgn << 7) | body


def lut8_to_fp32(code: int) -> int:
    """Lut8ToFp32 (SFPLUT.md): 0xff is 0; else sign, exponent 127 - Exp(3b), 4 mantissa bits."""
    if code == 0xFF:
        return 0
    return ((code >> 7) << 31) | ((127 - ((code >> 4) & 7)) << 23) | ((code & 0xF) << 19)


def lut16_to_fp32(code: int) -> int:
    """Lut16ToFp32 (SFPLUTFP32.md): an exponent of 31 reads as zero, exponent 0 is not special."""
    exp = (code >> 10) & 0x1F
    return ((code >> 15) << 31) | ((0 if exp == 0x1F else 112 + exp) << 23) | ((code & 0x3FF) << 13)


def _lut_mad(slope: np.ndarray, b: np.ndarray, intercept: np.ndarray, l3: np.ndarray,
             retain_sign: bool, arch: str) -> np.ndarray:
    """d = a * b + c as per SFPMAD, then copysignf(d, LReg[3]) with SGN_RETAIN."""
    d = sfpmad(slope, b, intercept, arch)
    return setsgn(d, l3) if retain_sign else d


def sfplut(l3: np.ndarray, coefficients: tuple[tuple[float, float], ...], retain_sign: bool,
           arch: str) -> np.ndarray:
    """SFPLUT (SFPLUT.md) with LReg0..2 = vLut8si(slope, intercept) for |x| < 1, < 2, >= 2."""
    b = l3 & ~SIGN
    bf = as_float(b)
    segment = np.where(bf < 1.0, 0, np.where(bf < 2.0, 1, 2))
    slopes = np.array([lut8_to_fp32(sfpi_lut_code(s, False)) for s, _ in coefficients], np.uint32)
    icepts = np.array([lut8_to_fp32(sfpi_lut_code(i, False)) for _, i in coefficients], np.uint32)
    return _lut_mad(slopes[segment], b, icepts[segment], l3, retain_sign, arch)


LUT6_BREAKPOINTS_TABLE1 = (0.5, 1.0, 1.5, 2.0, 3.0)


def sfplutfp32_6entry(l3: np.ndarray, slopes: tuple[float, ...], intercepts: tuple[float, ...],
                      retain_sign: bool, arch: str) -> np.ndarray:
    """SFPLUTFP32 with FP16_6ENTRY_TABLE1 (SFPLUTFP32.md): six FP16 (slope, intercept) pairs for
    |x| split at 0.5, 1, 1.5, 2, 3, each pair packed low/high in LReg0..2 and LReg4..6 as
    vLut16ss / vLut16ii(segment 2k, segment 2k+1) pack them."""
    b = l3 & ~SIGN
    bf = as_float(b)
    segment = np.full(b.shape, 5, dtype=np.intp)
    for k, upper in reversed(list(enumerate(LUT6_BREAKPOINTS_TABLE1))):
        segment = np.where(bf < upper, k, segment)
    s = np.array([lut16_to_fp32(sfpi_lut_code(v, True)) for v in slopes], np.uint32)
    c = np.array([lut16_to_fp32(sfpi_lut_code(v, True)) for v in intercepts], np.uint32)
    return _lut_mad(s[segment], b, c[segment], l3, retain_sign, arch)
