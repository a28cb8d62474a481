"""kgen's host SFPU model (kgen/proof/emu/include/sfpi.h, sfpu/*.h) against the SFPU instructions'
semantics as tenstorrent/tt-isa-documentation states them. Each test names its page
(WormholeB0/TensixTile/TensixCoprocessor/<page>, and the BlackholeA0 page where the two differ).
The operations run through tests/proof/sfpu_ops_driver.cpp, compiled per arch with the host g++.
"""

from __future__ import annotations

import math
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

EMU_INCLUDE = Path(__file__).resolve().parents[2] / "kgen" / "proof" / "emu" / "include"
DRIVER = Path(__file__).resolve().parent / "sfpu_ops_driver.cpp"
ARCHS = ("wormhole_b0", "blackhole")


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def value(u: int) -> float:
    return struct.unpack("<f", struct.pack("<I", u))[0]


@pytest.fixture(scope="module")
def driver(tmp_path_factory, host_cxx):
    from kgen.proof.emulate import require_host_compiler

    cxx = require_host_compiler().cxx
    built = {}
    for arch in ARCHS:
        exe = tmp_path_factory.mktemp("sfpu") / f"driver_{arch}"
        define = "-DARCH_WORMHOLE" if arch == "wormhole_b0" else "-DARCH_BLACKHOLE"
        subprocess.run([cxx, "-std=c++17", "-O1", define, "-I", str(EMU_INCLUDE), str(DRIVER), "-o", str(exe)],
                       check=True)
        built[arch] = exe

    def run(arch: str, *lines: str) -> list[list[int]]:
        out = subprocess.run([str(built[arch])], input="\n".join(lines) + "\n", capture_output=True, text=True,
                             check=True).stdout
        return [[int(w, 16) for w in line.split()] for line in out.splitlines()]

    def one(arch: str, op: str, *operands: int) -> int:
        return run(arch, " ".join([op, *(f"{o:x}" for o in operands)]))[0][0]

    run.one = one
    return run


ONE, INF, NEG_INF = bits(1.0), 0x7F800000, 0xFF800000


# ---- SFPMAD.md (both archs) and Miscellaneous/FMA/README.md (the bit-perfect model it points to) ----

@pytest.mark.parametrize("arch", ARCHS)
def test_sfpmad_treats_denormal_inputs_as_zero(driver, arch):
    # SFPMAD.md: "Denormal inputs are treated as if they were zero."
    assert driver.one(arch, "mad", 0x00000001, bits(2.0 ** 100), 0) == 0
    assert driver.one(arch, "mad", ONE, ONE, 0x007FFFFF) == ONE


def test_sfpmad_zero_and_denormal_results_wormhole_vs_blackhole(driver):
    # WormholeB0 SFPMAD.md: a denormal or negative-zero result is flushed to positive zero.
    # BlackholeA0 SFPMAD.md: a denormal result is flushed to sign-preserved zero; -0 is kept (IEEE).
    assert driver.one("wormhole_b0", "mad", bits(-1.0), 0, 0x80000000) == 0
    assert driver.one("blackhole", "mad", bits(-1.0), 0, 0x80000000) == 0x80000000
    tiny = bits(-(2.0 ** -126))
    assert driver.one("wormhole_b0", "mad", tiny, bits(0.5), 0) == 0
    assert driver.one("blackhole", "mad", tiny, bits(0.5), 0) == 0x80000000


def test_sfpmad_nan_results(driver):
    # WormholeB0 SFPMAD.md: a NaN result has its mantissa LSB set (the FMA model: at least 0x7f800001).
    # BlackholeA0 SFPMAD.md: always the canonical NaN 0x7fc00000.
    for x, y, z in ((INF, 0, ONE), (INF, ONE, NEG_INF), (0x7FC00000, ONE, ONE)):
        assert driver.one("wormhole_b0", "mad", x, y, z) & 0x7F800001 == 0x7F800001
        assert driver.one("blackhole", "mad", x, y, z) == 0x7FC00000


def test_sfpmad_product_overflow_meets_infinity(driver):
    # FMA/README.md: on Wormhole, a finite product that overflows FP32, added to the opposite
    # infinity, gives NaN; Blackhole gives that infinity (as IEEE does).
    big = bits(2.0 ** 100)
    assert driver.one("wormhole_b0", "mad", big, big, NEG_INF) & 0x7F800001 == 0x7F800001
    assert driver.one("blackhole", "mad", big, big, NEG_INF) == NEG_INF
    # and the product alone overflowing gives infinity even where z would bring it back (partial fusion)
    assert driver.one("blackhole", "mad", big, big, bits(-3.0e38)) == INF


@pytest.mark.parametrize("arch", ARCHS)
def test_sfpadd_and_sfpmul_are_ieee_single_roundings(driver, arch):
    # SFPMAD.md: "If multiplying by one or adding zero, then the partially fused operation is equivalent
    # to a standalone add or standalone multiply" (round to nearest even), away from denormals.
    rng = np.random.default_rng(5)
    a = (rng.uniform(1e-3, 1e3, 200) * rng.choice([-1, 1], 200)).astype(np.float32)
    b = (rng.uniform(1e-3, 1e3, 200) * rng.choice([-1, 1], 200)).astype(np.float32)
    lines = [f"add {bits(x):x} {bits(y):x}" for x, y in zip(a, b)] + [f"mul {bits(x):x} {bits(y):x}" for x, y in zip(a, b)]
    got = [r[0] for r in driver(arch, *lines)]
    want = [bits(v) for v in (a + b)] + [bits(v) for v in (a * b)]
    assert got == want


# ---- SFPSTOCHRND_FloatFloat.md / SFPSTOCHRND_FloatInt.md (round to nearest, no stochastic bits) ----

@pytest.mark.parametrize("arch", ARCHS)
def test_fp32_to_bf16_rounding(driver, arch):
    # Half of a BF16 ulp rounds up in magnitude ((DiscardedBits << 7) >= 0x400000), not to even.
    assert driver.one(arch, "rnd_fp16b", 0x3F808000) == 0x3F810000
    assert driver.one(arch, "rnd_fp16b", 0xBF808000) == 0xBF810000
    assert driver.one(arch, "rnd_fp16b", 0x3F807FFF) == 0x3F800000
    # Exp == 0 (zero or denormal) becomes 0; Exp == 255 (Inf or NaN) becomes the signed infinity.
    assert driver.one(arch, "rnd_fp16b", 0x80001234) == 0
    assert driver.one(arch, "rnd_fp16b", 0x7FC00001) == INF
    assert driver.one(arch, "rnd_fp16b", 0xFFC00001) == NEG_INF


@pytest.mark.parametrize("arch", ARCHS)
def test_fp32_to_integer_rounding(driver, arch):
    assert driver.one(arch, "rnd_int16", bits(2.5)) == 3                     # half away from zero
    assert driver.one(arch, "rnd_int16", bits(-2.5)) == 0x80000003           # sign-magnitude result
    assert driver.one(arch, "rnd_int16", bits(0.4)) == 0                     # |x| < 0.5 -> 0
    assert driver.one(arch, "rnd_int16", bits(70000.0)) == 32767             # saturates
    assert driver.one(arch, "rnd_int16", 0x7FC00000) == 32767                # NaN -> max magnitude
    assert driver.one(arch, "rnd_uint8", bits(-3.0)) == 3                    # unsigned: sign dropped


# ---- SFPCAST.md, SFPEXEXP.md, SFPEXMAN.md, SFPSETEXP.md, SFPSETMAN.md, SFPSETSGN.md, SFPABS.md ----

@pytest.mark.parametrize("arch", ARCHS)
def test_cast_sign_magnitude_to_fp32(driver, arch):
    assert driver.one(arch, "cast", 0x80000003) == bits(-3.0)
    assert driver.one(arch, "cast", (1 << 24) + 1) == bits(2.0 ** 24)        # tie -> even
    assert driver.one(arch, "cast", (1 << 24) + 3) == bits(2.0 ** 24 + 4)
    assert driver.one(arch, "cast", 0) == 0


@pytest.mark.parametrize("arch", ARCHS)
def test_exponent_and_mantissa_fields(driver, arch):
    assert driver.one(arch, "exexp", ONE) == 0
    assert driver.one(arch, "exexp", bits(0.25)) == 0xFFFFFFFE               # -2, two's complement
    assert driver.one(arch, "exexp_biased", ONE) == 127
    assert driver.one(arch, "exman_hidden", bits(1.5)) == 0x00C00000
    assert driver.one(arch, "exman", bits(1.5)) == 0x00400000
    assert driver.one(arch, "setexp", bits(1.5), 130) == bits(12.0)
    assert driver.one(arch, "setexp", bits(1.5), 0x1FF) == 0x7FC00000        # the low 8 bits only
    assert driver.one(arch, "setman", ONE, 0x400000) == bits(1.5)
    assert driver.one(arch, "setsgn", ONE, 1) == bits(-1.0)


@pytest.mark.parametrize("arch", ARCHS)
def test_abs(driver, arch):
    assert driver.one(arch, "abs_f", bits(-2.0)) == bits(2.0)
    assert driver.one(arch, "abs_f", 0xFFC00000) == 0xFFC00000               # -NaN stays -NaN
    assert driver.one(arch, "abs_i", 0xFFFFFFFB) == 5
    assert driver.one(arch, "abs_i", 0x80000000) == 0x80000000               # -2^31 stays


@pytest.mark.parametrize("arch", ARCHS)
def test_shift_by_signed_amount(driver, arch):
    # SFPSHFT.md: a negative amount shifts right (logically).
    assert driver.one(arch, "shft", 0x10, 2) == 0x40
    assert driver.one(arch, "shft", 0x80000010, 0xFFFFFFFE) == 0x20000004


# ---- SFPSWAP.md (VEC_MIN_MAX): sign-magnitude order -NaN < -Inf < ... < -0 < +0 < ... < +NaN ----

@pytest.mark.parametrize("arch", ARCHS)
def test_min_max_order(driver, arch):
    assert driver.one(arch, "min", 0, 0x80000000) == 0x80000000
    assert driver.one(arch, "max", 0x80000000, 0) == 0
    assert driver.one(arch, "max", 0x7FC00000, INF) == 0x7FC00000
    assert driver.one(arch, "min", 0xFFC00000, NEG_INF) == 0xFFC00000
    assert driver.one(arch, "min", bits(-1.0), bits(2.0)) == bits(-1.0)


# ---- SFPLUT.md and SFPLUTFP32.md ----

@pytest.mark.parametrize("arch", ARCHS)
def test_lut8(driver, arch):
    # Lut8ToFp32: 0x10 = 0.5, 0x9a = -(1 + 10/16) / 2; |x| < 1 picks LReg[0]: 0.5 * 0.5 - 0.8125.
    assert driver.one(arch, "lut8", 0x109A, 0x109A, bits(0.5), 0) == bits(-0.5625)
    # 0x00 = 1.0 and 0xff = 0: d = |x|; the sign of x is kept only with SGN_RETAIN
    assert driver.one(arch, "lut8", 0x00FF, 0x00FF, bits(-3.0), 0) == bits(3.0)
    assert driver.one(arch, "lut8", 0x00FF, 0x00FF, bits(-3.0), 1) == bits(-3.0)


@pytest.mark.parametrize("arch", ARCHS)
def test_lut16_decodes_exponent_31_as_zero_and_exponent_0_as_normal(driver, arch):
    # Lut16ToFp32: slope 0x7c00 reads as 0, intercept 0x3c00 as 1.0; slope 0x0000 reads as 2^-15.
    assert driver.one(arch, "lut16", 0x7C007C00, 0x3C003C00, bits(2.0)) == ONE
    assert driver.one(arch, "lut16", 0, 0x3C003C00, bits(2.0)) == bits(1.0 + 2.0 ** -14)


def test_lut_coefficients_from_floats_as_sfpi_makes_them(driver):
    # SFPLUT.md is silent on how a float becomes an 8-bit coefficient; SFPI's library (tenstorrent/sfpi
    # sfpi_lib.h, sLut::convert) rounds the mantissa half up: 0.22656 -> 0x3d = 1.8125 * 2^-3 = 0.2265625
    # (truncation would give 0x3c = 0.21875), so a slope of 0.22656 on |x| = 1.5 gives 1.5 * 0.2265625.
    assert driver.one("wormhole_b0", "lut8c", bits(0.22656), bits(1.5)) == bits(1.5 * 0.2265625)


def test_arecip_blackhole(driver):
    # BlackholeA0 SFPARECIP.md: ApproxRecip(1.0) is 0.99609375; below 2^-126 -> Inf; sign kept.
    assert driver.one("blackhole", "recip", ONE) == bits(0.99609375)
    assert driver.one("blackhole", "recip", bits(-1.0)) == bits(-0.99609375)
    assert driver.one("blackhole", "recip", 0x00000001) == INF
    assert driver.one("blackhole", "recip", bits(2.0 ** 127)) == 0


# ---- SFPLOAD.md / SFPSTORE.md ----

@pytest.mark.parametrize("arch", ARCHS)
def test_store_to_bf16_dst_truncates_and_flushes(driver, arch):
    # SFPSTORE.md ToBF16: denormals flush to signed zero, the mantissa truncates toward zero.
    assert driver.one(arch, "store_bf16", 0x3F80FFFF) == 0x3F800000
    assert driver.one(arch, "store_bf16", 0x80001234) == 0x80000000
    assert driver.one(arch, "store_fp32", 0x3F80FFFF) == 0x3F80FFFF


@pytest.mark.parametrize("arch", ARCHS)
def test_dst_lanes_map_to_four_rows_of_even_or_odd_columns(driver, arch):
    # SFPLOAD.md: lane l reaches row (Addr & ~3) + l / 8, column 2 * (l & 7) + (Addr >> 1 & 1);
    # dst_reg[0] is Addr 0 (even columns of rows 0-3), dst_reg[1] Addr 2 (odd columns).
    (row,) = driver(arch, "layout")
    for k, u in enumerate(row):
        assert value(u) == k + (1000.0 if k % 2 == 0 else 2000.0)


# ---- the condition-code stack: SFPSETCC.md, SFPPUSHC.md, SFPCOMPC.md, SFPPOPC.md, SFPENCC.md ----

@pytest.mark.parametrize("arch", ARCHS)
def test_predication_nesting_and_elseif_chains(driver, arch):
    (lanes,) = driver(arch, "pred")
    for lane, u in enumerate(lanes):
        x = lane * 0.25 - 1.0 + (11.0 if lane == 31 else 0.0)
        want = 1.0 if x < 0 else (3.0 if x < 0.5 else 2.0) if x < 1 else 4.0 if x == 2 else 5.0
        want += 6.0 if x >= 10 else 0.0
        assert value(u) == want, (lane, x)


@pytest.mark.parametrize("arch", ARCHS)
def test_comparisons(driver, arch):
    # SFPSETCC.md tests the register as an int32: -0.0 is < 0 and is not == 0.
    assert driver.one(arch, "lt0", 0x80000000) == ONE
    assert driver.one(arch, "eq0", 0x80000000) == 0
    assert driver.one(arch, "eq0", 0) == ONE
    # a < b against a non-zero value: the sign of a - b (SFPMAD), then SFPSETCC
    assert driver.one(arch, "lt", ONE, bits(1.0 + 2.0 ** -23)) == ONE
    assert driver.one(arch, "lt", ONE, ONE) == 0
    # integers: SFPIADD.md's CC result, the sign of the two's complement difference
    assert driver.one(arch, "ilt", 5, 7) == ONE
    assert driver.one(arch, "ilt", 0xFFFFFFFE, 1) == ONE
    assert driver.one(arch, "ilt", 7, 5) == 0
