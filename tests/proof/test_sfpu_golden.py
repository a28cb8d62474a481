"""kgen.proof.sfpu_golden: each SFPU instruction against its ISA page's statement, each activation
against float64 within what its LLK header comment claims, and the coefficient table against the
TT-Metal 0.81.1 headers.

ISA pages: tenstorrent/tt-isa-documentation, WormholeB0/TensixTile/TensixCoprocessor/<page>.md
(WH) and BlackholeA0/TensixTile/TensixCoprocessor/<page>.md (BH). LLK headers: TT-Metal v0.81.1,
tt_metal/hw/ckernels/<arch>/metal/llk_api/llk_sfpu/ckernel_sfpu_<name>.h.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgen.proof.numerics import ulp_distance
from kgen.proof.sfpu_golden import NotModelled, apply_activation, isa
from kgen.proof.sfpu_golden.coefficients import entries, literal_value
from kgen.proof.sfpu_golden.errors import activation_error, reference
from tests.conftest import need_tool

WH, BH = isa.WORMHOLE, isa.BLACKHOLE
ARCHS = (WH, BH)


def u(*values) -> np.ndarray:
    return np.array(values, dtype=np.uint32)


def fb(*floats) -> np.ndarray:
    return isa.bits(np.array(floats, dtype=np.float32))


def f32bits(value: float) -> int:
    return int(np.float32(value).view(np.uint32))


# ---- SFPMAD (SFPMAD.md) ------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_sfpmad_treats_denormal_inputs_as_zero(arch):
    # "Denormal inputs are treated as if they were zero."
    denormal = u(0x00000001, 0x80400000)
    assert isa.sfpmad(denormal, fb(2.0**100, 2.0**100), fb(0.0, 0.0), arch).tolist() == [0, 0]
    assert isa.sfpmad(fb(1.0), fb(3.0), u(0x00400000), arch).tolist() == [f32bits(3.0)]


@pytest.mark.parametrize("arch", ARCHS)
def test_sfpmad_rounds_once(arch):
    # "A single rounding step is performed": (1+2^-12)^2 - 1 = 2^-11 + 2^-24 exactly, which a
    # separately rounded product (1 + 2^-11 after the tie to even) would lose.
    a = fb(1.0 + 2.0**-12)
    assert isa.sfpmad(a, a, fb(-1.0), arch).tolist() == [f32bits(2.0**-11 + 2.0**-24)]


@pytest.mark.parametrize("arch", ARCHS)
def test_sfpmad_ties_to_even(arch):
    # "round to nearest with ties to even": 1 + 2^-24 is half an ULP above 1.0.
    assert isa.sfpmad(fb(1.0), fb(1.0), fb(2.0**-24), arch).tolist() == [f32bits(1.0)]
    odd = fb(1.0 + 2.0**-23)
    assert isa.sfpmad(odd, fb(1.0), fb(2.0**-24), arch).tolist() == [f32bits(1.0 + 2.0**-22)]


def test_sfpmad_output_zero_and_denormal_flush_differ_by_arch():
    # WH: "If the output is denormal or negative zero, it'll be flushed to positive zero."
    # BH: "If the output (after rounding) is denormal, it'll be flushed to sign-preserved zero";
    # -0 + -0 is -0 there (Miscellaneous/FMA/fma.c, fma_model_bh).
    tiny = fb(-(2.0**-100))
    assert isa.sfpmad(tiny, fb(2.0**-27), fb(0.0), WH).tolist() == [0]
    assert isa.sfpmad(tiny, fb(2.0**-27), fb(0.0), BH).tolist() == [0x80000000]
    # Miscellaneous/FMA/README.md: "If x * y on its own would underflow to zero, the result is as
    # if x * y was exactly zero" (here -0 + +0 = +0 on BH too).
    assert isa.sfpmad(fb(-(2.0**-70)), fb(2.0**-70), fb(0.0), BH).tolist() == [0]
    minus_zero = u(0x80000000)
    assert isa.sfpmad(fb(-1.0), fb(0.0), minus_zero, WH).tolist() == [0]
    assert isa.sfpmad(fb(-1.0), fb(0.0), minus_zero, BH).tolist() == [0x80000000]


def test_sfpmad_nan_and_infinity():
    # "If any input is NaN or ±Infinity, then the result will be NaN or ±Infinity, following the
    # usual IEEE754 rules." WH: a NaN has the mantissa's low bit set; BH: always 0x7fc00000.
    inf, ninf = fb(np.inf), fb(-np.inf)
    assert isa.sfpmad(inf, fb(2.0), fb(1.0), WH).tolist() == [0x7F800000]
    assert isa.sfpmad(ninf, fb(2.0), fb(1.0), BH).tolist() == [0xFF800000]
    wh_nan = int(isa.sfpmad(inf, fb(1.0), ninf, WH)[0])
    assert (wh_nan & 0x7F800000) == 0x7F800000 and (wh_nan & 1) == 1
    assert isa.sfpmad(inf, fb(1.0), ninf, BH).tolist() == [0x7FC00000]
    assert isa.sfpmad(u(0xFFC00000), fb(1.0), fb(1.0), BH).tolist() == [0x7FC00000]


def test_sfpmad_follows_the_bit_perfect_model_where_it_differs_from_ieee():
    # Miscellaneous/FMA/README.md: "If x * y on its own would overflow to infinity, the result is
    # infinity, even if the properly fused operation would have a finite result"; on WH, with an
    # opposite-sign infinite addend, "the result is NaN rather than infinity".
    big = fb(2.0**64)
    for arch in ARCHS:
        assert isa.sfpmad(big, big, fb(-(2.0**127)), arch).tolist() == [0x7F800000]
    assert isa.sfpmad(big, big, fb(-np.inf), BH).tolist() == [0xFF800000]
    wh = int(isa.sfpmad(big, big, fb(-np.inf), WH)[0])
    assert (wh & 0x7F800001) == 0x7F800001 and (wh & 0x7FFFFF) != 0
    # WH: "All zero outputs are always positive zero."
    assert isa.sfpmad(fb(-1.0), fb(1.0), fb(1.0), WH).tolist() == [0]
    assert isa.sfpmad(fb(-2.0), fb(3.0), fb(6.0), BH).tolist() == [0]


# x, y, z -> fma_model_wh, fma_model_bh of tenstorrent/tt-isa-documentation
# Miscellaneous/FMA/fma.c (the models the SFPMAD pages link), evaluated with that C file.
FMA_C_VECTORS = [
    (0xC00D0000, 0x3E2AAAAB, 0x3F000000, 0x3E080000, 0x3E080000),   # IEEE fma: 0x3e07ffff
    (0x7FC00000, 0x3F800000, 0x00000000, 0x7F800001, 0x7FC00000),
    (0xFFC00000, 0x3F800000, 0x3F800000, 0xFF800001, 0x7FC00000),
    (0x7F800000, 0x00000000, 0x3F800000, 0x7F800001, 0x7FC00000),
    (0x3F800001, 0x3F800001, 0xBF800000, 0x34880000, 0x34880000),
    (0x00800000, 0x3F000000, 0x00000000, 0x00000000, 0x00000000),
    (0x80800000, 0x3F000000, 0x00000000, 0x00000000, 0x80000000),
    (0x5F800000, 0x5F800000, 0xFF7FFFFF, 0x7F800000, 0x7F800000),
]


def test_sfpmad_matches_the_fma_c_models():
    x, y, z, wh, bh = (np.array(col, np.uint32) for col in zip(*FMA_C_VECTORS))
    assert isa.sfpmad(x, y, z, WH).tolist() == wh.tolist()
    assert isa.sfpmad(x, y, z, BH).tolist() == bh.tolist()


# ---- SFPLOAD / SFPSTORE (SFPLOAD.md, SFPSTORE.md) ----------------------------------------------

def test_sfpstore_to_16bit_dst_truncates_and_flushes_denormals_to_signed_zero():
    # ToBF16: "Flush denormals to signed zero, then truncate toward zero."
    stored = isa.sfpstore(u(0x3F80FFFF, 0xBF80FFFF, 0x80000001, 0x007FFFFF), fp32_dest=False)
    assert (stored >> 16).tolist() == [0x3F80, 0xBF80, 0x8000, 0x0000]
    assert isa.sfpstore(u(0x3F80FFFF), fp32_dest=True).tolist() == [0x3F80FFFF]


def test_sfpload_from_16bit_dst_places_the_bits_high_without_conversion():
    # MOD0_FMT_BF16: Datum = UnshuffleBF16(Dst16b) << 16 (denormals pass; SFPMAD flushes later).
    dst = np.array([0x00010000, 0x3F810000], np.uint32).view(np.float32)
    assert isa.sfpload(dst, fp32_dest=False).tolist() == [0x00010000, 0x3F810000]


# ---- conversions (SFPSTOCHRND_FloatFloat.md, SFPSTOCHRND_FloatInt.md, SFPCAST.md) ---------------

def test_stochrnd_fp16b_round_to_nearest_rounds_ties_up_in_magnitude():
    # PRNGBits = 0x400000 when not stochastic: DiscardedBits << 7 >= 0x400000 rounds up, so a tie
    # rounds away from zero (not to even); exponent 0 -> +0; Inf/NaN -> +-Inf.
    got = isa.stochrnd_fp16b(u(0x3F808000, 0xBF808000, 0x3F807FFF, 0x3F818000, 0x80000005,
                               0x7FC00001, 0xFF812345))
    assert got.tolist() == [0x3F810000, 0xBF810000, 0x3F800000, 0x3F820000, 0,
                            0x7F800000, 0xFF800000]


def test_stochrnd_float_to_int16_sign_magnitude():
    # FP32_TO_INT16: |x| < 0.5 -> 0 (sign cleared); ties round up; exponent >= 16 -> 32767.
    got = isa.stochrnd_int(fb(2.5, -2.5, 0.49, -0.3, 70000.0, 1.4999), keep_sign=True,
                           max_magnitude=32767)
    assert got.tolist() == [3, 0x80000003, 0, 0, 32767, 1]
    # FP32_TO_UINT8 drops the sign and saturates at 255
    assert isa.stochrnd_int(fb(-3.5, 300.0), keep_sign=False, max_magnitude=255).tolist() == [4, 255]


def test_sfpcast_sign_magnitude_to_fp32_rounds_to_nearest_even():
    got = isa.cast_sm32_to_fp32(u(2**24 + 1, 2**24 + 3, 0x80000005, 0, 0x80000000, 0x7FFFFFFF))
    assert isa.as_float(got).tolist() == [2.0**24, 2.0**24 + 4, -5.0, 0.0, -0.0, 2.0**31]


# ---- bit-field instructions (SFPEXEXP.md, SFPEXMAN.md, SFPSETEXP.md, SFPSETMAN.md, ...) -------

def test_exponent_and_mantissa_fields():
    x = fb(1.5, 0.25)
    assert isa.exexp(x).view(np.int32).tolist() == [0, -2]
    assert isa.exexp(x, biased=True).tolist() == [127, 125]
    assert isa.exman(x).tolist() == [0x400000, 0]
    assert isa.exman(x, unit_bit=True).tolist() == [0xC00000, 0x800000]
    assert isa.as_float(isa.setexp(fb(1.5), u(128 + 256))).tolist() == [3.0]     # low 8 bits
    assert isa.as_float(isa.setman(fb(-2.0), u(0x400000))).tolist() == [-3.0]
    assert isa.as_float(isa.setsgn(fb(2.0), fb(-0.0))).tolist() == [-2.0]
    assert isa.as_float(isa.setsgn_imm(fb(-2.0), 0)).tolist() == [2.0]


def test_sfpabs_float_keeps_negative_nan_and_int_negates():
    # SFPABS.md: "Value is -NaN; leave it as -NaN"; integer mode: -2147483648 stays.
    assert isa.abs_float(u(0xBF800000, 0xFFC00000, 0xFF800000)).tolist() == [
        0x3F800000, 0xFFC00000, 0x7F800000]
    assert isa.abs_int(u(0xFFFFFFFB, 5, 0x80000000)).tolist() == [5, 5, 0x80000000]


def test_sfpshft_left_and_logical_right():
    amounts = np.array([3, -3, -31], np.int32).view(np.uint32)
    assert isa.shft(u(0x80000001, 0x80000000, 0x80000000), amounts).tolist() == [8, 0x10000000, 1]


def test_sfpswap_min_max_use_the_sign_magnitude_total_order():
    # SignMagIsSmaller: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
    assert isa.vmin(fb(0.0), u(0x80000000)).tolist() == [0x80000000]
    assert isa.vmax(u(0xFFC00000), fb(-np.inf)).tolist() == [0xFF800000]
    assert isa.vmax(u(0x7FC00000), fb(np.inf)).tolist() == [0x7FC00000]


def test_setcc_sign_tests_read_the_integer_view():
    # SFPSETCC LREG_LT0 tests int32 < 0: -0 and -NaN count as negative.
    assert isa.lt0(u(0x80000000, 0xFFC00000, 0)).tolist() == [True, True, False]


def test_float_compares_subtract_on_wormhole_and_order_on_blackhole():
    # WH: the compiler compares by an SFPMAD subtraction, whose denormal difference is flushed
    # (SFPMAD.md), so two normals closer than 2^-126 compare equal. BH: SFPGT / SFPLE order the
    # sign-magnitude bits (SFPGT.md: "-NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN").
    a, b = fb(1.5 * 2.0**-126), fb(2.0**-126)
    assert isa.fcmp(a, b, "gt", WH).tolist() == [False]
    assert isa.fcmp(a, b, "gt", BH).tolist() == [True]
    assert isa.fcmp(a, b, "eq", WH).tolist() == [True]
    assert isa.fcmp(u(0x7FC00000), fb(np.inf), "gt", BH).tolist() == [True]
    assert isa.fcmp(u(0x80000000), fb(0.0), "lt", BH).tolist() == [True]
    assert isa.fcmp(fb(2.0, 3.0), fb(3.0, 3.0), "le", WH).tolist() == [True, True]
    assert isa.fcmp(fb(2.0, 3.0), fb(3.0, 3.0), "lt", WH).tolist() == [True, False]


# ---- LUTs (SFPLUT.md, SFPLUTFP32.md) and SFPI's coefficient codes ------------------------------

def test_lut_code_formats():
    # Lut8ToFp32: 0xff is zero; Lut16ToFp32: exponent 31 is zero, exponent 0 is 2^-15 (not 0).
    assert isa.lut8_to_fp32(0xFF) == 0
    assert isa.lut16_to_fp32(0x7C00) == 0 and isa.lut16_to_fp32(0xFC00) == 0x80000000
    assert isa.lut16_to_fp32(0x0000) == f32bits(2.0**-15)
    # SFPI encodes 0.0 as the code the instruction reads as zero, and halves exactly
    assert isa.lut16_to_fp32(isa.sfpi_lut_code(0.0, fp16=True)) == 0
    assert isa.lut8_to_fp32(isa.sfpi_lut_code(0.0, fp16=False)) == 0
    # sLut::convert rounds the mantissa to nearest (half up), it does not truncate: sigmoid_appx's
    # slope 0.22656 is 1.81248 * 2^-3, so its 4-bit mantissa is 13 (0.2265625), not 12 (0.21875)
    assert isa.sfpi_lut_code(0.22656, fp16=False) == 0x3D
    assert isa.as_float(u(isa.lut8_to_fp32(0x3D)))[0] == 0.2265625
    for value in (0.5, 0.9619140625, -0.1604, 1.0):
        code = isa.sfpi_lut_code(value, fp16=True)
        assert isa.as_float(u(isa.lut16_to_fp32(code)))[0] == np.float16(value)


@pytest.mark.parametrize("arch", ARCHS)
def test_sfplutfp32_table1_segments(arch):
    # FP16_6ENTRY_TABLE1: |x| < 0.5, 1, 1.5, 2, 3, above; d = a*|x| + c, sign of x if retained.
    slopes = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    intercepts = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625)
    x = fb(0.25, -0.75, 1.25, 1.75, 2.5, 3.0)
    got = isa.as_float(isa.sfplutfp32_6entry(x, slopes, intercepts, True, arch)).tolist()
    assert got == [0.25, -1.625, 4.0, 7.375, 13.0, 18.625]
    assert isa.as_float(isa.sfplutfp32_6entry(fb(-0.25), slopes, intercepts, False, arch))[0] == 0.25


def test_sfplut_three_segments():
    pairs = ((0.5, 0.0), (0.25, 0.25), (0.0, 0.5))
    got = isa.as_float(isa.sfplut(fb(0.5, -1.5, 7.0), pairs, True, WH)).tolist()
    assert got == [0.25, -0.625, 0.5]


def test_sfparecip_matches_its_page():
    # ApproxRecip(1.0) = 0.99609375; below 2^-126 -> Inf; from 2^126 -> 0; sign kept;
    # 0.9944/x < ApproxRecip(x) < 1.0054/x in between.
    assert isa.as_float(isa.arecip(fb(1.0, -1.0, 2.0**-127, 2.0**126))).tolist() == [
        0.99609375, -0.99609375, np.inf, 0.0]
    x = np.random.default_rng(0).uniform(1e-30, 1e30, 4096).astype(np.float32)
    r = isa.as_float(isa.arecip(isa.bits(x))).astype(np.float64) * x.astype(np.float64)
    assert r.min() > 0.9944 and r.max() < 1.0054


# ---- the coefficient table against the headers --------------------------------------------------

def test_coefficient_table_matches_the_tt_metal_headers():
    from kgen.toolchain.headers import find_headers
    tree, note = find_headers()
    if tree is None:
        need_tool("TT-Metal headers", note)
    checked = 0
    for name, entry in entries().items():
        archs = [a for a in entry["archs"] if a != "any"] or [WH]
        for arch in archs:
            path = tree.root / entry["header"].format(arch=arch)
            assert entry["literal"] in path.read_text(), f"{name}: {entry['literal']!r} not in {path}"
            checked += 1
    assert checked > 100


def test_literal_values():
    assert literal_value("2.0f * 1.442695f") == float(np.float32(2.0) * np.float32(1.442695))
    assert literal_value("0x40c00000u") == 6.0
    assert literal_value("vConstFloatPrgm0 = 5.876733921468257904052734375e-3") == float(
        np.float32(5.876733921468257904052734375e-3))


# ---- activations against float64 within the LLK comments' claims --------------------------------

def _bf16_sweep(lo: float, hi: float) -> np.ndarray:
    """Every bfloat16 value in [lo, hi] whose magnitude is at least 2^-120 (away from the range
    where an SFPMAD flushes a denormal product to zero), as whole tiles."""
    x = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    x = x[np.isfinite(x) & (x >= lo) & (x <= hi) & (np.abs(x) >= 2.0**-120)]
    return x[: len(x) // 1024 * 1024].reshape(-1, 32, 32)


def _max_ulp(kind, x, y, p0=0, p1=0, p2=0, grid="Float16_b") -> int:
    """Max ULP distance over the elements whose reference is a normal number (the SFPU flushes
    denormal results to zero, which the claims leave out)."""
    ref = reference(kind, x, p0, p1, p2)
    return int(ulp_distance(y, ref, grid)[np.abs(ref) >= 2.0**-126].max())


@pytest.mark.parametrize("arch", ARCHS)
def test_gelu_bf16_is_within_one_ulp(arch):
    # ckernel_sfpu_gelu.h: "BF16 accurate mode: piecewise CDF with Max ULP=1 vs true GELU." The
    # named difference: for x <= -5.54259443 the kernel returns 0 ("matches torch.gelu BF16
    # saturation", torch's float32 erf), where float64 GELU is a tiny negative number.
    x = _bf16_sweep(-5.54259443, 20)
    assert _max_ulp("gelu", x, apply_activation(x, "gelu", 0, 0, 0, arch=arch, fp32_dest=False,
                                                approx=False)) <= 1


@pytest.mark.parametrize("arch", ARCHS)
def test_gelu_tanh_fast_bf16_is_within_one_ulp(arch):
    # ckernel_sfpu_gelu.h (calculate_gelu_tanh_fast): "Max error vs torch gelu(approximate="tanh")
    # is ~1e-6 absolute, <= 1 BF16 ULP". The named difference: below x = -6.8 the result (under
    # 3e-14) is a few bf16 ULPs off, the 2**x bit trick's relative error at that tiny magnitude.
    x = _bf16_sweep(-6.75, 20)
    y = apply_activation(x, "gelu_tanh", 1, 0, 0, arch=arch, fp32_dest=False, approx=False)
    assert _max_ulp("gelu_tanh", x, y) <= 1
    x = _bf16_sweep(-20, 20)
    y = apply_activation(x, "gelu_tanh", 1, 0, 0, arch=arch, fp32_dest=True, approx=False)
    assert np.abs(y - reference("gelu_tanh", x)).max() < 2.5e-6


@pytest.mark.parametrize("arch", ARCHS)
def test_sigmoid_bf16_is_within_one_ulp(arch):
    # ckernel_sfpu_sigmoid.h: exp_21f "(~1 ULP on bfloat16)"; the sigmoid it feeds stays within 1.
    x = _bf16_sweep(-20, 20)
    y = apply_activation(x, "sigmoid", 0, 0, 0, arch=arch, fp32_dest=False, approx=False)
    assert _max_ulp("sigmoid", x, y) <= 1


@pytest.mark.parametrize("arch", ARCHS)
def test_softplus_bf16_polynomial_range_is_within_one_ulp(arch):
    # ckernel_sfpu_softplus.h: "degree-6 polynomial (bf16-accurate, <0.28 ULP)" for |beta x| <= 5,
    # plus the final bf16 rounding: at most 1 bf16 ULP there.
    x = _bf16_sweep(-5, 5)
    p = (f32bits(1.0), f32bits(20.0), f32bits(1.0))
    y = apply_activation(x, "softplus", *p, arch=arch, fp32_dest=False, approx=False)
    assert _max_ulp("softplus", x, y, *p) <= 1


@pytest.mark.parametrize("arch", ARCHS)
def test_tanh_lut_bf16_sweep_max_abs_error_is_the_headers_figure(arch):
    # ckernel_sfpu_tanh.h: "the bfloat16 sweep ... 0.018352 max absolute error".
    x = _bf16_sweep(-20, 20)
    y = apply_activation(x, "tanh", 1, 0, 0, arch=arch, fp32_dest=False, approx=True)
    assert np.max(np.abs(y - np.tanh(x.astype(np.float64)))) == pytest.approx(0.018352, abs=1e-6)


@pytest.mark.parametrize("arch", ARCHS)
def test_tanh_lut_of_infinity_is_nan(arch):
    # ckernel_sfpu_tanh.h: "the hardware evaluates A*|x| + B, so 0 * inf + 1 is NaN rather than 1.0".
    x = np.full((32, 32), np.inf, np.float32)
    assert np.isnan(apply_activation(x, "tanh", 1, 0, 0, arch=arch, fp32_dest=True, approx=True)).all()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kind", ["gelu", "gelu_tanh"])
def test_gelu_fp32_names_the_difference_from_the_erf_claim(arch, kind):
    # ckernel_sfpu_gelu.h claims "n16/d16 parity rational ... MaxULP=1 vs FP64" for erf alone.
    # GELU on FP32 DST adds the SFPU's FP32 evaluation (Horner steps, the Newton reciprocal, then
    # x * (0.5 + 0.5 erf)): within 4 FP32 ULPs for x >= -1. Below, 0.5 + 0.5 erf (or 1 + tanh)
    # cancels, so the error is absolute: under 8 ULPs of 1.0 down to the saturation at -5.54.
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 8, (4, 32, 32)).astype(np.float32)
    y = apply_activation(x, kind, 0, 0, 0, arch=arch, fp32_dest=True, approx=False)
    assert _max_ulp(kind, x, y, grid="Float32") <= 4
    x = rng.uniform(-5.5, -1, (4, 32, 32)).astype(np.float32)
    y = apply_activation(x, kind, 0, 0, 0, arch=arch, fp32_dest=True, approx=False)
    assert np.abs(y - reference(kind, x)).max() <= 8 * 2.0**-23


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fp32_dest", [True, False])
def test_clamps_are_exact(arch, fp32_dest):
    # relu6 and hardtanh only compare and select; a bf16 DST keeps bf16 values.
    x = _bf16_sweep(-20, 20)[:4]
    lo, hi = f32bits(-1.5), f32bits(2.25)
    got = apply_activation(x, "hardtanh", lo, hi, 0, arch=arch, fp32_dest=fp32_dest, approx=False)
    assert np.array_equal(got, np.clip(x, -1.5, 2.25))
    got = apply_activation(x, "relu6", 0, 0, 0, arch=arch, fp32_dest=fp32_dest, approx=False)
    assert np.array_equal(got, np.clip(x, 0.0, 6.0))
    got = apply_activation(x, "relu6", f32bits(3.0), 0, 0, arch=arch, fp32_dest=fp32_dest,
                           approx=False)
    assert np.array_equal(got, np.clip(x, 0.0, 3.0))


@pytest.mark.parametrize("arch", ARCHS)
def test_fp32_activations_are_close_to_float64(arch):
    # FP32 DST: the accurate paths stay within a few FP32 ULPs of float64 on normal inputs whose
    # result is not flushed (silu and sigmoid through the Cody-Waite exp and a Newton reciprocal).
    rng = np.random.default_rng(4)
    x = rng.uniform(-12, 12, (4, 32, 32)).astype(np.float32)
    for kind in ("sigmoid", "silu", "tanh"):
        y = apply_activation(x, kind, 0, 0, 0, arch=arch, fp32_dest=True, approx=False)
        assert _max_ulp(kind, x, y, grid="Float32") <= 4, kind
    # hardsigmoid is one SFPMAD with the FP32 1/6 (0.1666666716337204f): x/6 + 0.5 cancels near
    # x = -3, so its error is absolute, within one ULP of 1.0.
    y = apply_activation(x, "hardsigmoid", 0, 0, 0, arch=arch, fp32_dest=True, approx=False)
    assert np.abs(y - reference("hardsigmoid", x)).max() <= 2.0**-23


def test_blackhole_clamps_order_nan_and_negative_zero():
    # BH ckernel_sfpu_activations.h: "clamp(tmp, 0, 1) as two SFPSWAP folds ... (threshold first,
    # then the relu clamp, so a NaN lands on 1.0)"; relu6 is the same max(min(x, 6), 0.0) in BH's
    # tt-llk ckernel_sfpu_relu.h, ordering by SFPSWAP's total order (-NaN < ... < -0 < +0 < +NaN).
    x = np.zeros((32, 32), np.float32)
    x.view(np.uint32)[0, :4] = [0x7FC00000, 0xFFC00000, 0x80000000, 0x40E00000]
    y = apply_activation(x, "hardsigmoid", 0, 0, 0, arch=BH, fp32_dest=True, approx=False)
    assert y[0, 0] == 1.0
    y = apply_activation(x, "relu6", 0, 0, 0, arch=BH, fp32_dest=True, approx=False)
    assert y.view(np.uint32)[0, :4].tolist() == [0x40C00000, 0, 0, 0x40C00000]


def test_sigmoid_vector_mode_leaves_the_other_faces():
    # bmm_fused_activation.hpp: PARAM0 1 -> VectorMode::R (faces 0, 1), 2 -> C (faces 0, 2).
    x = np.random.default_rng(5).standard_normal((2, 32, 32)).astype(np.float32)
    faces = x.reshape(2, 4, 256)
    for p0, done in ((1, (0, 1)), (2, (0, 2))):
        y = apply_activation(x, "sigmoid", p0, 0, 0, arch=WH, fp32_dest=True, approx=False)
        y = y.reshape(2, 4, 256)
        for f in range(4):
            assert np.array_equal(y[:, f], faces[:, f]) == (f not in done)


def test_softplus_leaves_lanes_above_the_threshold_unstored():
    # calculate_softplus_body stores only under v_if(t <= threshold): other lanes keep DST's bits,
    # a bf16 denormal included (an SFPSTORE would have flushed it to zero).
    x = np.full((32, 32), 30.0, np.float32)
    x[0, 0] = np.uint32(0x00010000).view(np.float32)      # t = 1 * denormal -> flushed to 0
    p = (f32bits(1.0), f32bits(-1.0), f32bits(1.0))        # threshold -1: 0 and 30 both above
    y = apply_activation(x, "softplus", *p, arch=BH, fp32_dest=False, approx=False)
    assert np.array_equal(y.view(np.uint32), x.view(np.uint32))
    p = (f32bits(1.0), f32bits(20.0), f32bits(1.0))        # threshold 20: 30 is left as is
    y = apply_activation(x, "softplus", *p, arch=WH, fp32_dest=False, approx=False)
    assert (y.reshape(-1)[1:] == 30.0).all() and y[0, 0] != x[0, 0]


@pytest.mark.parametrize("arch", ARCHS)
def test_gelu_saturates_to_zero_and_propagates_negative_nan(arch):
    # calculate_gelu: result = x - x below GELU_SAT = -5.54259443 ("x - x is 0 for finite x and
    # NaN for NaN, so a negative NaN ... still propagates").
    x = np.full((32, 32), -6.0, np.float32)
    x[0, 0] = np.uint32(0xFFC00000).view(np.float32)
    y = apply_activation(x, "gelu", 0, 0, 0, arch=arch, fp32_dest=True, approx=False)
    assert np.isnan(y[0, 0]) and (y.reshape(-1)[1:] == 0).all()


def test_selu_uses_the_fp32_product_of_scale_and_alpha():
    # calculate_selu: scale_alpha = as_float(scale) * as_float(alpha), a float multiply on the core.
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    x = np.full((32, 32), -100.0, np.float32)              # expm1 clamps at -87: exactly -1
    y = apply_activation(x, "selu", f32bits(scale), f32bits(alpha), 0, arch=WH, fp32_dest=True,
                         approx=False)
    assert (y == -(np.float32(scale) * np.float32(alpha))).all()


def test_api_errors_and_purity():
    x = np.zeros((1, 32, 32), np.float32)
    with pytest.raises(ValueError, match="unknown activation"):
        apply_activation(x, "swish", 0, 0, 0, arch=WH, fp32_dest=True, approx=False)
    with pytest.raises(ValueError, match="arch"):
        apply_activation(x, "silu", 0, 0, 0, arch="grayskull", fp32_dest=True, approx=False)
    with pytest.raises(ValueError, match="32x32"):
        apply_activation(np.zeros((16, 16), np.float32), "silu", 0, 0, 0, arch=WH, fp32_dest=True,
                         approx=False)
    before = x.copy()
    y = apply_activation(x, "silu", 0, 0, 0, arch=WH, fp32_dest=True, approx=False)
    assert y.shape == x.shape and y.dtype == np.float32 and np.array_equal(x, before)
    assert issubclass(NotModelled, NotImplementedError)


def test_activation_error_report():
    x = np.linspace(-3, 3, 1024, dtype=np.float32).reshape(32, 32)
    exact = reference("tanh", x).astype(np.float32)
    report = activation_error(x, exact, "tanh", 0, 0, 0, fp32_dest=True)
    assert report.max_ulp == 0 and report.grid == "Float32" and report.elements == 1024
    y = apply_activation(x, "tanh", 0, 0, 0, arch=WH, fp32_dest=False, approx=False)
    report = activation_error(x, y, "tanh", 0, 0, 0, fp32_dest=False)
    assert report.grid == "Float16_b" and sum(n for _, n in report.histogram) == 1024
    assert report.summary().startswith("tanh vs float64: max ") and "(Float16_b)" in report.summary()


def test_wormhole_exp_keeps_the_sign_of_nan():
    # ckernel_sfpu_exp.h (_sfpu_exp_fp32_accurate_, WH): "subtract 1, which converts +-NaN to
    # +-inf ... multiply by 0 to obtain 0*+-inf = +-NaN ... handles -NaN correctly too".
    from kgen.proof.sfpu_golden import llk
    out = llk.exp_fp32_accurate(u(0xFFC00000, 0x7FC00000), WH)
    assert [(int(v) & 0x7F800000) == 0x7F800000 and (int(v) & 0x7FFFFF) != 0 for v in out] == [True, True]
    assert [int(v) >> 31 for v in out] == [1, 0]
    assert isa.as_float(llk.exp_fp32_accurate(fb(0.0, 1.0, -200.0, 200.0), WH)).tolist() == [
        1.0, pytest.approx(np.e, rel=2e-7), 0.0, np.inf]
