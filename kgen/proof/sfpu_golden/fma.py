"""SFPMAD's multiply-add, bit for bit: the Wormhole and Blackhole models that the SFPMAD pages
point to (tenstorrent/tt-isa-documentation, Miscellaneous/FMA/README.md and fma.c:
fma_model_wh, fma_model_bh), vectorised over uint32 FP32 bit patterns.

How the hardware differs from an IEEE fused multiply-add (README.md): denormal inputs are zero;
the 48-bit product keeps 3 guard bits and is cut to the addend's precision with a sticky bit
before the add (so it is neither fully fused nor two roundings); a product that alone overflows
is infinite and one that alone underflows is zero; the result rounds to nearest even and a
denormal result is flushed (BH: to a zero of its sign; WH: to +0, and every zero is +0).
Wormhole NaNs start as sign | 0x7f800001 (the product's sign, or the NaN addend's) and can gain
mantissa bits from the rest of the computation; Blackhole NaNs are 0x7fc00000.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
MASK32 = U64(0xFFFFFFFF)


def _clz32(v: np.ndarray) -> np.ndarray:
    """Leading zeros of nonzero 32-bit values (floor(log2) is exact in float64 below 2**32)."""
    return 31 - np.floor(np.log2(np.maximum(v, 1).astype(np.float64))).astype(np.int64)


def _semi_sticky_shift(var: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """var >> amount, with the lowest kept bit set when a set bit was shifted out, unless the
    shifted value is zero (fma.c's semi_sticky_shift; amounts past the width give 0)."""
    s = np.clip(amount, 0, 63).astype(U64)
    shifted = var >> s
    lost = (shifted << s) != var
    out = shifted | ((shifted != 0) & lost).astype(U64)
    return np.where(amount >= 64, U64(0), out)


def fma_hw(x, y, z, wormhole: bool) -> np.ndarray:
    """x * y + z as the SFPU's SFPMAD computes it (fma_model_wh / fma_model_bh)."""
    x, y, z = (np.asarray(v, np.uint32).astype(U64) for v in (x, y, z))
    xe, ye, ze = ((v >> U64(23)) & U64(255) for v in (x, y, z))
    xm, ym, zm = (np.where(e == 0, U64(0), (v & U64(0x7FFFFF)) ^ U64(0x800000))
                  for v, e in ((x, xe), (y, ye), (z, ze)))
    xe, ye, ze = (e.astype(np.int64) for e in (xe, ye, ze))
    z_sign = z & U64(0x80000000)
    p_sign = (x ^ y) & U64(0x80000000)
    p_m = (xm * ym) << U64(3)
    z_m = zm << U64(3)
    p_m = (p_m >> U64(23)) | ((p_m & U64(0x7FFFFF)) != 0).astype(U64)
    p_e = xe + ye - 150 + 23

    result = np.zeros_like(x)
    done = np.zeros(x.shape, bool)
    nan_result = np.zeros_like(x)
    special = (xe == 255) | (ye == 255) | (p_e >= 255) | (ze == 255)
    if special.any():   # most calls have no Inf/NaN lane: skip the special-case work
        result, done, nan_result, p_e = _specials(special, x, y, z, xe, ye, ze, xm, ym, z_m, p_e,
                                                  p_sign, z_sign, wormhole)
    is_nan = nan_result != 0

    underflow = ~done & ((p_m == 0) | (p_e < 0))
    if wormhole:
        quiet = underflow & ~is_nan
        result = np.where(quiet, np.where(z_m != 0, z, U64(0)), result)
        done |= quiet
        p_m = np.where(underflow & is_nan, U64(0), p_m)
        p_e = np.where(underflow & is_nan, 0, p_e)
    else:
        result = np.where(underflow, np.where(z_m != 0, z, z_sign & p_sign), result)
        done |= underflow
    return _add_and_round(result, done, p_m, p_e, p_sign, z_m, ze, z_sign, nan_result, wormhole)


def _specials(special, x, y, z, xe, ye, ze, xm, ym, z_m, p_e, p_sign, z_sign, wormhole):
    """fma.c's "Handle NaN or Inf input or (x * y) Inf": (result, done, nan_result, p_e)."""
    result = np.zeros_like(x)
    nan_result = np.zeros_like(x)
    x_inf_or_nan, y_inf_or_nan, z_inf_or_nan = xe == 255, ye == 255, ze == 255
    z_is_nan = z_inf_or_nan & (z_m != U64(0x4000000))
    xy_invalid = (x_inf_or_nan & ((xm != U64(0x800000)) | (ym == 0))) | \
        (y_inf_or_nan & ((ym != U64(0x800000)) | (xm == 0)))
    if wormhole:
        inf_minus_inf = z_inf_or_nan & ~z_is_nan & (x_inf_or_nan | y_inf_or_nan | (p_e >= 255)) & \
            (z_sign != p_sign)
        nan_a = special & (xy_invalid | inf_minus_inf)
        nan_z = special & ~nan_a & z_is_nan
        nan_result = np.where(nan_a, p_sign | U64(0x7F800001),
                              np.where(nan_z, z_sign | U64(0x7F800001), U64(0)))
        done = special & ~nan_a & ~nan_z
        result = np.where(done, np.where(z_inf_or_nan, z, p_sign | U64(0x7F800000)), result)
        return result, done, nan_result, np.where(nan_a | nan_z, np.minimum(p_e, 255), p_e)
    inf_minus_inf = z_inf_or_nan & (x_inf_or_nan | y_inf_or_nan) & (z_sign != p_sign)
    nan = special & (xy_invalid | z_is_nan | inf_minus_inf)
    value = np.where(nan, U64(0x7FC00000), np.where(z_inf_or_nan, z, p_sign | U64(0x7F800000)))
    return np.where(special, value, result), special, nan_result, p_e


def _add_and_round(result, done, p_m, p_e, p_sign, z_m, z_e, z_sign, nan_result, wormhole):
    """fma.c's `r = z + p`, normalisation and round to nearest even, for the lanes not done."""
    is_nan = nan_result != 0
    r_e = np.maximum(p_e, z_e)
    p_m = np.where(p_e < r_e, _semi_sticky_shift(p_m, r_e - p_e), p_m)
    z_m = np.where(z_e < r_e, _semi_sticky_shift(z_m, r_e - z_e), z_m)
    r_sign = np.where(p_m >= z_m, p_sign, z_sign)
    zz = np.where(z_sign != r_sign, ~z_m, z_m)
    pp = np.where(p_sign != r_sign, ~p_m, p_m)
    r_m = (zz + pp + (p_sign != z_sign).astype(U64)) & MASK32

    zero = ~done & (r_m == 0)
    result = np.where(zero, nan_result if wormhole else z_sign & p_sign, result)
    done = done | zero
    n = 5 - _clz32(r_m)
    r_e = r_e + n
    overflow = ~done & (r_e >= 255)
    inf = r_sign | U64(0x7F800000)
    result = np.where(overflow, np.where(is_nan, nan_result, inf) if wormhole else inf, result)
    done = done | overflow
    if wormhole:
        blatant = ~done & (r_e < 0)
        result = np.where(blatant, nan_result, result)
        done = done | blatant
        shifted = (r_m >> np.clip(n, 0, 31).astype(U64)) | (r_m & U64(1))
    else:
        tiny = r_e <= 0
        n = np.where(tiny, n + 1, n)
        r_e = np.where(tiny, 0, r_e)
        sticky_mask = (np.clip(n, 0, 31) | 1).astype(U64)
        shifted = (r_m >> np.clip(n, 0, 31).astype(U64)) | ((r_m & sticky_mask) != 0).astype(U64)
    r_m = np.where(n <= 0, (r_m << np.clip(-n, 0, 31).astype(U64)) & MASK32, shifted)
    r = ((np.maximum(r_e, 0).astype(U64) << U64(23)) + ((r_m >> U64(3)) & U64(0x7FFFFF))) & MASK32
    r = r + (((r_m & U64(7)) + (r & U64(1))) > 4).astype(U64)
    flushed = (r >> U64(23)) == 0
    if wormhole:
        value = np.where(flushed, nan_result, np.where(is_nan, nan_result, r_sign) | r)
    else:
        value = r_sign | np.where(flushed, U64(0), r)
    return np.where(done, result, value).astype(np.uint32)
