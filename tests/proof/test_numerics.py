"""Bit-level numerics (docs/reference/numerics.md §2-§8, §10, §11.1) against the document's numbers and
rules. Expected values are the published silicon results or worked out by hand in comments; the
vectorised MVMUL is also checked against a per-lane pure-Python transcription of §4."""

from __future__ import annotations

import numpy as np
import pytest

from kgen.proof import numerics as nx
from kgen.proof import tiles as tl

RNG = np.random.default_rng(11)


def bits(x) -> int:
    return int(tl.f32_bits(np.float32(x)))


def val(b) -> float:
    return float(tl.bits_f32(np.uint32(b)))


def src(values, fmt="Float16_b", fp32=False):
    return nx.values_to_src19(np.asarray(values, np.float32), fmt, fp32)


# ---------------------------------------------------------------------------------------------
# §11.1 published silicon vectors

@pytest.mark.parametrize("a,b,fidelity,expected,source", [
    (1.3125, 7.96875, "HiFi2", 10.4375, "#12923"),
    (1.3125, 7.96875, "HiFi4", 10.5, "#12923"),
    (-3.640625, 0.298828125, "HiFi4", -1.09375, "#16448"),
    (508.0, 748.0, "HiFi4", 378880.0, "PR #35077"),
    (508.0, 748.0, "HiFi3", 378880.0, "PR #35077 (note's model)"),
    (508.0, 748.0, "HiFi2", 376832.0, "PR #35077 (note's model)"),
    (508.0, 748.0, "LoFi", 368640.0, "PR #35077 (note's model)"),
])
def test_silicon_scalar_vectors(a, b, fidelity, expected, source):
    """mul_tiles in bf16, fp32 dest acc off, in0 on SrcA (§1 item 2, §11.1)."""
    out = nx.mul_tiles(src([a]), src([b]), fidelity, fp32_dest_acc=False)
    assert val(out[0]) == expected, source


def test_silicon_vectors_are_not_ieee_rounding():
    """§11.1: the exact products would round (RNE) to 10.4375 and -1.0859375, and torch bf16 gives
    380928 for 508 x 748; silicon differs because every phase is added to a rounded Dst."""
    rne = lambda x: float(tl.quantize(np.array([x], np.float32), "Float16_b")[0])
    assert rne(1.3125 * 7.96875) == 10.4375
    assert rne(-3.640625 * 0.298828125) == -1.0859375
    assert rne(508.0 * 748.0) == 380928.0


def test_bf16_dst_stagnation_per_mvmul():
    """§11.1 #8449 explanation: once Dst >= 4096 the bf16 spacing is 32; a 16-lane MVMUL of ones adds
    16 = half a spacing and ties round away from zero, so it adds 32. Below 4096 it adds exactly 16."""
    ones = src(np.ones(16))
    for start, expected in ((2048.0, 2064.0), (4096.0, 4128.0), (8192.0 - 32, 8192.0)):
        assert val(nx.mvmul(np.uint32(bits(start)), ones, ones, 0, False)) == expected
    assert val(nx.mvmul(np.uint32(bits(4096.0)), ones, ones, 0, True)) == 4112.0   # fp32 Dst: exact


# ---------------------------------------------------------------------------------------------
# §2 unpacker

def test_fp32_to_tf32_truncates():
    """Float32 -> TF32 drops the low 13 mantissa bits, no rounding (§2.2)."""
    x = np.float32(1 + 2.0 ** -10 + 2.0 ** -11 + 2.0 ** -20)
    assert val(nx.src19_to_fp32(src([x], "Float32", fp32=True))[0]) == 1 + 2.0 ** -10
    assert val(nx.src19_to_fp32(src([-x], "Float32", fp32=True))[0]) == -(1 + 2.0 ** -10)


def test_fp32_to_bf16_truncates_and_flushes_denormals():
    """Float32 -> BF16 (no fp32 dest acc) truncates the low 16 bits; denormals read as zero (§2.2)."""
    x = np.float32(1 + 2.0 ** -7 + 2.0 ** -8 + 2.0 ** -9)          # RNE would give 1 + 2^-6
    assert val(nx.src19_to_fp32(src([x], "Float32", fp32=False))[0]) == 1 + 2.0 ** -7
    assert nx.unpack_src_format("Float32", False) == "Float16_b"
    assert nx.unpack_src_format("Float32", True) == "Tf32"
    assert nx.unpack_src_format("Bfp8_b", True) == "Float16_b"
    den = np.float32(2.0 ** -130)
    assert int(src([den], "Float32", fp32=True)[0]) == 0


def test_src19_layout():
    """§2.1: 19-bit datum = sign | 8-bit exponent | 10-bit mantissa; bf16 fills the top 7 mantissa bits."""
    assert int(src([-1.5])[0]) == (1 << 18) | (127 << 10) | (0b1 << 9)


@pytest.mark.parametrize("fmt", ["Bfp8_b", "Bfp4_b"])
def test_bfp_to_bf16_is_lossless(fmt):
    """Block floats reach SrcA/SrcB as exact BF16 (§2.2): every code at several shared exponents."""
    mag_bits = tl.BFP_MAG_BITS[fmt]
    codes = np.arange(1 << (mag_bits + 1), dtype=np.uint8)
    codes = codes[(codes & ((1 << mag_bits) - 1)) != 0]             # nonzero magnitudes
    for e in (10, 100, 127, 200):
        c = np.resize(codes, 16 * ((len(codes) + 15) // 16)).astype(np.uint8)
        exps = np.full(len(c) // 16, e, np.uint8)
        hw = tl.bf16_values(nx.bfp_to_bf16_hw(exps, c, fmt))
        assert np.array_equal(hw, tl.bfp_decode(exps, c, fmt))


def test_bfp_negative_zero_is_minus_inf_and_exponent_wraps():
    """§2.2 quirks: sign=1 with magnitude 0 decodes to -inf; the exponent decrement of the
    normalisation wraps for tiny shared exponents (8-bit arithmetic)."""
    c = np.zeros(16, np.uint8)
    c[0], c[1], c[2] = 0x80, 0x00, 0x01              # -0 code, +0, magnitude 1 (6 leading zeros)
    out = nx.bfp_to_bf16_hw(np.array([3], np.uint8), c, "Bfp8_b")
    assert out[0] == 0xFF80 and out[1] == 0
    assert (int(out[2]) >> 7) & 0xFF == (3 - 6) & 0xFF          # 253: wrapped, not clamped
    assert nx.bfp_to_bf16_hw(np.array([127], np.uint8), c, "Bfp8_b")[2] == ((127 - 6) << 7)


# ---------------------------------------------------------------------------------------------
# §3 fidelity

def test_fidelity_phases():
    """§3.2: LoFi = {0}, HiFi2 = {0,1}, HiFi3 = {0,1,2}, HiFi4 = {0,1,2,3}."""
    assert nx.phases_of("LoFi") == (0,)
    assert nx.phases_of("HiFi2") == (0, 1)
    assert nx.phases_of("HiFi3") == (0, 1, 2)
    assert nx.phases_of("HiFi4") == (0, 1, 2, 3)
    with pytest.raises(ValueError):
        nx.phases_of("HiFi1")


def test_fidelity_slices_cover_the_significand():
    """§3.1: SrcA = 5 bits (implicit one + 4) + next 5 (last TF32 bit never used);
    SrcB = 7 bits (implicit one + 6) + remaining 4."""
    man = np.arange(0x400, 0x800)
    a_hi, a_lo = nx.slice_srca(man, 0), nx.slice_srca(man, 1)
    b_hi, b_lo = nx.slice_srcb(man, 0), nx.slice_srcb(man, 2)
    assert a_hi.max() < 32 and a_lo.max() < 32 and b_hi.max() < 128 and b_lo.max() < 128
    assert np.array_equal((a_hi << 6) + (a_lo << 1), man & ~1)
    assert np.array_equal((b_hi << 4) + (b_lo >> 3), man)


def one_lane(a, b, fidelity, a_fmt="Float16_b", b_fmt="Float16_b"):
    """Single-lane MVMUL sequence (fp32 Dst): a on SrcA (in1), b on SrcB (in0), other lanes zero."""
    va = np.zeros(16, np.float32)
    vb = np.zeros(16, np.float32)
    va[0], vb[0] = a, b
    la, lb = src(va, a_fmt, True), src(vb, b_fmt, True)
    d = np.uint32(0)
    for p in nx.phases_of(fidelity):
        d = nx.mvmul(d, la, lb, p, True)
    return val(d)


def trunc(x, keep_mantissa_bits):
    b = bits(x)
    return val(b & ~((1 << (23 - keep_mantissa_bits)) - 1))


def test_lofi_hifi_operand_truncation():
    """§3.3 for a matmul (weights on SrcA, activations on SrcB): LoFi keeps 5 significant bits of
    the weight and 7 of the activation; HiFi2 keeps the weight whole and drops the activation's
    mantissa LSB; HiFi3 adds weight-top-5 x activation-LSB; HiFi4 is exact."""
    w = 1.9921875          # bf16 1.1111111b: all 8 significant bits set
    x = 1.9921875
    exact = w * x
    assert one_lane(w, x, "LoFi") == trunc(w, 4) * trunc(x, 6)
    assert one_lane(w, x, "HiFi2") == w * trunc(x, 6)
    assert one_lane(w, x, "HiFi3") == w * trunc(x, 6) + trunc(w, 4) * (x - trunc(x, 6))
    assert one_lane(w, x, "HiFi4") == exact
    assert len({one_lane(w, x, f) for f in ("LoFi", "HiFi2", "HiFi3", "HiFi4")}) == 4


def test_bfp_operands_exact_at_lower_fidelity():
    """§3.3: bfp8 x bfp8 is exact with HiFi2; a bfp4 weight (3 significant bits) is exact on the
    weight side with LoFi, the activation still truncated to 7 bits."""
    w8 = 1.984375          # 1.111111b: 7 significant bits (bfp8 at its row max)
    x8 = 1.984375
    assert one_lane(w8, x8, "HiFi2", "Bfp8_b", "Bfp8_b") == w8 * x8
    assert one_lane(w8, x8, "LoFi", "Bfp8_b", "Bfp8_b") != w8 * x8
    w4 = 1.75
    x = 1.9921875
    assert one_lane(w4, x, "LoFi", "Bfp4_b") == w4 * trunc(x, 6)


def test_tf32_last_srca_bit_never_used():
    """§3.1: for TF32 the last SrcA mantissa bit is never consumed, even with HiFi4."""
    a = np.float32(1 + 2.0 ** -10)       # only the TF32 LSB set
    assert one_lane(a, 1.0, "HiFi4", "Float32", "Float32") == 1.0
    assert one_lane(1.0, a, "HiFi4", "Float32", "Float32") == float(a)   # on SrcB it is used


# ---------------------------------------------------------------------------------------------
# §4 MVMUL arithmetic

def mvmul_scalar(dst, a19, b19, phase, fp32):
    """§4 steps 1-7 transcribed per lane with Python integers (no NumPy), Blackhole (no quirk)."""
    adj = (-5 if phase & 1 else 0) + (-7 if phase & 2 else 0)
    terms = []
    for g in (0, 1):
        lanes = []
        for k in range(8 * g, 8 * g + 8):
            a, b = int(a19[k]), int(b19[k])
            ea, eb = (a >> 10) & 255, (b >> 10) & 255
            if ea == 0 or eb == 0:
                lanes.append((0, 0, 0))
                continue
            ma, mb = (a & 1023) | 1024, (b & 1023) | 1024
            sa = ((ma >> 1) & 31) if phase & 1 else ma >> 6
            sb = ((mb & 15) << 3) if phase & 2 else mb >> 4
            lanes.append(((a >> 18) ^ (b >> 18), ea + eb - 127 + adj, sa * sb))
        emax = max(e for _, e, _ in lanes)
        if emax <= 0:
            terms.append((0, 0, 0))
            continue
        total = 0
        for s, e, m in lanes:
            d = emax - e
            r = (m + (1 << d) // 2) >> d if d else m          # round half up on the magnitude
            total += -r if s else r
        terms.append((int(total < 0), emax, abs(total) << 13))
    sd, ed = dst >> 31, (dst >> 23) & 255
    md = ((dst & 0x7FFFFF) | 0x800000) if ed else 0
    exp = max(terms[0][1], terms[1][1], ed)
    if exp <= 0:
        return 0
    aligned = []
    for s, e, m in terms:
        d = exp - e
        if d:
            m = (m + (1 << (d - 1)) - s) >> d if d < 31 else 0
        if not fp32:
            m = (m + (1 << 12) - s) & ~0x1FFF
        aligned.append(-m if s else m)
    d = exp - ed
    if d:
        md = (md + (1 << (d - 1))) >> d if d < 31 else 0
    if not fp32:
        md = (md + (1 << 12)) & ~0x1FFF
    total = (-md if sd else md) + aligned[0] + aligned[1]
    if total == 0:
        return 0
    sign, man = int(total < 0), abs(total)
    keep = 24 if fp32 else 8                                 # significant bits kept
    n = man.bit_length()
    exp += n - 24
    if n > keep:
        man = (man + (1 << (n - keep - 1))) >> (n - keep)    # half away from zero
        if man >> keep:
            exp += 1
            man >>= 1
    man <<= 24 - min(n, keep)
    if exp <= 0:
        return 0
    if exp >= 255:
        return (sign << 31) | 0x7F800000
    return (sign << 31) | (exp << 23) | (man & 0x7FFFFF)


def random_src_lanes(n, fp32):
    v = RNG.standard_normal((n, 16)) * np.exp2(RNG.integers(-14, 14, (n, 16)))
    v[RNG.random(v.shape) < 0.15] = 0
    return src(v.astype(np.float32), "Float32", fp32)


@pytest.mark.parametrize("fp32", [False, True])
def test_mvmul_matches_per_lane_transcription(fp32):
    n = 300
    a, b = random_src_lanes(n, fp32), random_src_lanes(n, fp32)
    dst0 = tl.f32_bits((RNG.standard_normal(n) * np.exp2(RNG.integers(-10, 10, n))).astype(np.float32))
    if not fp32:
        dst0 = dst0 & np.uint32(0xFFFF0000)
    dst0[:30] = 0
    for phase in range(4):
        got = nx.mvmul(dst0, a, b, phase, fp32)
        want = [mvmul_scalar(int(dst0[i]), a[i], b[i], phase, fp32) for i in range(n)]
        assert [int(x) for x in got] == want


def test_group_of_eight_alignment():
    """§4 step 3: products are aligned to the largest product of their 8-lane group (10 fractional
    bits for phase 0), so seven tiny products next to a 1.0 in the same group vanish, while in the
    other group they are summed exactly (fp32 Dst)."""
    big, tiny = 1.0, 2.0 ** -12
    one = src(np.ones(16), fp32=True)
    same = np.array([big] + [tiny] * 7 + [0] * 8, np.float32)
    other = np.array([big] + [0] * 7 + [tiny] * 7 + [0], np.float32)
    assert val(nx.mvmul(np.uint32(0), one, src(same, fp32=True), 0, True)) == 1.0
    assert val(nx.mvmul(np.uint32(0), one, src(other, fp32=True), 0, True)) == 1.0 + 7 * tiny


def test_group_alignment_rounds_half_up_on_magnitude():
    """§4 step 3: ``(2m + 2^d) >> (d+1)``: a product of exactly half the group LSB (2^-11 next to
    1.0) rounds to one LSB away from zero, for either sign."""
    one = src(np.ones(16), fp32=True)
    for s in (1.0, -1.0):
        lanes = np.zeros(16, np.float32)
        lanes[0], lanes[1] = 1.0, s * 2.0 ** -11
        assert val(nx.mvmul(np.uint32(0), one, src(lanes, fp32=True), 0, True)) == 1.0 + s * 2.0 ** -10


def test_bf16_dst_two_step_rounding_ties_away():
    """§4 step 5 (#46101): bf16 Dst rounds each aligned term to a TF32 grid then the sum to bf16,
    ties away from zero: 1.0 + 2^-8 -> 1 + 2^-7 and -(1.0 + 2^-8) -> -(1 + 2^-7) (RNE would give 1.0)."""
    one = src(np.ones(16))
    for s in (1.0, -1.0):
        lanes = np.zeros(16, np.float32)
        lanes[8] = s * 2.0 ** -8                       # alone in group 1: exact group sum
        got = val(nx.mvmul(np.uint32(bits(s)), one, src(lanes), 0, False))
        assert got == s * (1 + 2.0 ** -7)


def test_exact_cancellation_is_plus_zero():
    """§4 step 7: an exact cancellation returns +0."""
    one = src(np.ones(16), fp32=True)
    lanes = np.zeros(16, np.float32)
    lanes[0] = 1.5
    for fp32 in (False, True):
        out = nx.mvmul(np.uint32(bits(-1.5)), one, src(lanes, fp32=fp32), 0, fp32)
        assert int(out) == 0


def test_wormhole_renormalisation_quirk():
    """§4 step 8 / §10.1: on Wormhole a signed sum of exactly -1 unit is mis-normalised, giving a
    result off by a power of two; Blackhole gives the right value. Dst = 1.0, term = -(1 + 2^-23)."""
    one = np.uint32(bits(1.0))
    args = (1, 127, (1 << 23) + 1, 0, 0, 0)
    good = val(nx.fpu_accumulate(one, *args, fp32_dest_acc=True, wormhole_bug=False))
    bad = val(nx.fpu_accumulate(one, *args, fp32_dest_acc=True, wormhole_bug=True))
    assert good == -(2.0 ** -23)
    assert bad != good and bad < 0 and np.log2(-bad) == int(np.log2(-bad))


def test_elwadd_rounds_into_bf16_dst():
    """ELWADD (bias stage): the smaller operand is aligned to the larger's 11-bit significand (half
    up), then the sum is rounded into Dst like any FPU result (bf16: half away)."""
    a = src([1.0])
    assert val(nx.elwadd(a, src([2.0 ** -8]), False)[0]) == 1 + 2.0 ** -7      # tie -> away
    assert val(nx.elwadd(a, src([2.0 ** -8]), True)[0]) == 1 + 2.0 ** -8       # fp32: exact
    assert val(nx.elwadd(src([3.0]), src([-3.0]), True)[0]) == 0.0


# ---------------------------------------------------------------------------------------------
# §8 packer

def test_fp32_dst_to_bf16_rounds_half_away():
    """§8.2: add 0x8000 to the sign-magnitude pattern and keep the top half."""
    d = tl.f32_bits(np.array([1 + 2.0 ** -8, -(1 + 2.0 ** -8), 1 + 2.0 ** -8 - 2.0 ** -23,
                              1 + 3 * 2.0 ** -8], np.float32))
    out = nx.pack(d, "Float16_b", fp32_dest_acc=True)
    assert list(tl.bf16_values(out.bits)) == [1 + 2.0 ** -7, -(1 + 2.0 ** -7), 1.0, 1 + 2.0 ** -6]


def test_packer_flushes_denormals_and_nan():
    """§8.2: exponent 0 -> +0 (also -0 -> +0); NaN -> Inf when rounding to bf16."""
    d = np.array([0x00400000, 0x80000000, 0x7FC00000, 0xFFC00001], np.uint32)
    out = nx.pack(d, "Float16_b", fp32_dest_acc=True).bits
    assert list(out) == [0, 0, 0x7F80, 0xFF80]
    out16 = nx.pack(d & np.uint32(0xFFFF0000), "Float16_b", fp32_dest_acc=False).bits
    assert list(out16) == [0, 0, 0x7F80, 0xFF80]
    assert list(nx.pack(d[:2], "Float32", fp32_dest_acc=True).bits) == [0x00400000, 0x80000000]


def test_device_bfp8_pack_rounds_half_up_and_saturates():
    """§8.2 BF16 -> BFP8: shared exponent = max bf16 exponent of the 16-datum face row, magnitude
    shifted by (max - e) + 1 rounding half up on the magnitude, 128 saturates to 127.
    With a row max of 1.0 (unit 2^-6): 3/128 -> 2, 5/128 (2.5) -> 3 (host RNE would give 2),
    1/128 (0.5) -> 1, -1/128 -> sign|1; 1.9921875 -> 128 -> 127."""
    row = np.zeros(16, np.float32)
    row[:6] = [1.0, 3 / 128, 5 / 128, 1 / 128, -1 / 128, 1.9921875]
    exps, codes = nx.bfp_pack_device(tl.bf16_bits_rne(row), "Bfp8_b")
    assert exps[0] == 127
    assert list(codes[:6]) == [64, 2, 3, 1, 0x81, 127]
    assert list(codes[6:]) == [0] * 10


def test_device_bfp4_truncates_the_bfp8_magnitude():
    """§8.2: BFP4 = the BFP8 magnitude truncated (>> 4): 1.625 -> bfp8 104 -> 6 (1.5), not 7."""
    row = np.zeros(16, np.float32)
    row[:3] = [1.0, 1.625, -1.9921875]
    exps, codes = nx.bfp_pack_device(tl.bf16_bits_rne(row), "Bfp4_b")
    assert list(codes[:3]) == [4, 6, 0x8 | 7]
    assert list(tl.bfp_decode(exps, codes, "Bfp4_b")[:3]) == [1.0, 1.5, -1.75]


def test_fp32_dst_to_bfp8_double_rounds():
    """§8.2: with fp32 Dst and a bfp8 output the value is rounded twice (fp32 -> bf16 half away,
    then bf16 -> bfp8 half up). Row max 1.0; x = 2^-7 - 2^-17 rounds up to 2^-7 in bf16 and then
    to one unit (2^-6) in bfp8; rounded once it would be below half a unit -> 0."""
    d = np.zeros(16, np.float32)
    d[0], d[1] = 1.0, 2.0 ** -7 - 2.0 ** -17
    out = nx.pack(tl.f32_bits(d), "Bfp8_b", fp32_dest_acc=True)
    assert list(out.bits[:2]) == [64, 1]


def test_relu_in_packer_before_block_exponent():
    """PACK_RELU zeroes negatives on the packer's intermediate value, before the shared exponent is
    chosen: a large negative neighbour no longer sets the exponent."""
    d = np.zeros(16, np.float32)
    d[0], d[1] = -1024.0, 1.015625
    plain = nx.pack(tl.f32_bits(d), "Bfp8_b", True)
    relu = nx.pack(tl.f32_bits(d), "Bfp8_b", True, relu=True)
    assert list(plain.values()[:2]) == [-1024.0, 0.0]
    assert list(relu.values()[:2]) == [0.0, 1.015625]


def test_l1_acc_bf16_is_round_to_nearest_even():
    """§7.4: bf16 L1 accumulation forms the exact sum and rounds to nearest even (unlike Dst)."""
    a = tl.bf16_bits_rne(np.array([1.0, 1.0078125, -1.0, 2.0 ** -126], np.float32))
    b = tl.bf16_bits_rne(np.array([2.0 ** -8, 2.0 ** -8, -(2.0 ** -8), -(2.0 ** -126)], np.float32))
    out = tl.bf16_values(nx.l1_acc_bf16(a, b))
    assert list(out) == [1.0, 1.015625, -1.0, 0.0]


def _l1_acc_bf16_oracle(a16, b16):
    """An independent model of §7.4's bf16 L1 accumulation (a deliberate restatement, kept as an
    oracle): the sum in float64 (exact for exponent gaps up to 45, and the larger operand beyond),
    rounded to bf16 to nearest even with integer arithmetic on the float64 pattern."""
    a = np.asarray(a16, dtype=np.int64) & 0xFFFF
    b = np.asarray(b16, dtype=np.int64) & 0xFFFF
    a = np.where((a & 0x7FFF) < 0x80, a & 0x8000, a)
    b = np.where((b & 0x7FFF) < 0x80, b & 0x8000, b)
    with np.errstate(invalid="ignore"):
        fa = tl.bits_f32((a << 16).astype(np.uint32)).astype(np.float64)
        fb = tl.bits_f32((b << 16).astype(np.uint32)).astype(np.float64)
        r = (fa + fb).view(np.int64)
    s = (r >> 63) & 1
    e = ((r >> 52) & 0x7FF) - 1023 + 127
    m = r & ((1 << 52) - 1)
    rounded = (e << 7) + ((m + (1 << 44) - 1 + ((m >> 45) & 1)) >> 45)
    out = np.where(e <= 0, s << 15, np.where(e >= 255, (s << 15) | 0x7F80, (s << 15) | rounded))
    infnan = ((a == 0x7F80) & (b == 0xFF80)) | ((a == 0xFF80) & (b == 0x7F80))
    return np.where(infnan, 0x7FC0, out).astype(np.uint16)


def test_l1_acc_bf16_matches_an_exact_model_at_every_exponent_gap():
    """kgen sums in float32 (fast); every bf16 pattern against partners at each exponent gap -26..26
    (both orders, random sign and mantissa) and against the special values (zeros, denormals,
    extremes, Inf, NaN) gives the exact model's bits."""
    every = np.arange(1 << 16, dtype=np.uint32)
    rng = np.random.default_rng(5)
    for gap in range(-26, 27):
        exp = np.clip(((every >> 7) & 0xFF).astype(np.int64) + gap, 0, 255).astype(np.uint32)
        partner = (rng.integers(0, 2, every.size, dtype=np.uint32) << 15) | (exp << 7) | \
            rng.integers(0, 128, every.size, dtype=np.uint32)
        for x, y in ((every, partner), (partner, every)):
            assert np.array_equal(nx.l1_acc_bf16(x, y), _l1_acc_bf16_oracle(x, y)), gap
    specials = np.array([0, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80,
                         0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFF81], np.uint32)
    x, y = (g.ravel() for g in np.meshgrid(specials, every))
    for p, q in ((x, y), (y, x)):
        assert np.array_equal(nx.l1_acc_bf16(p, q), _l1_acc_bf16_oracle(p, q))


def _pack_early_oracle(dst, fp32_dest_acc, intermediate):
    """An independent restatement of §8.2's early packer conversion in int64 arithmetic (a
    deliberate oracle for kgen's uint32 version)."""
    d = np.asarray(dst, dtype=np.uint32).astype(np.int64)
    nan = (d & 0x7FFFFFFF) > 0x7F800000
    d = np.where(nan, (d & 0x80000000) | 0x7F800000, d)
    flush = lambda v: np.where((v & 0x7FFF) < 0x80, 0, v & 0xFFFF)
    if intermediate == "Float16_b":
        v = flush((d + 0x8000) >> 16) if fp32_dest_acc else flush(d >> 16)
    else:
        v = flush(((d >> 16) + 1) & ~1) if fp32_dest_acc else (flush(d >> 16) + 1) & ~1
    return (v << 16).astype(np.uint32)


@pytest.mark.parametrize("fp32,intermediate", [(True, "Float16_b"), (False, "Float16_b"), (True, "Bfp8_b"),
                                               (False, "Bfp8_b")])
def test_pack_early_matches_an_independent_model(fp32, intermediate):
    """Every low half of 256 random high halves (each rounding boundary), random patterns, and
    the specials (zeros, denormals, the largest finite values, Inf, NaN of either sign)."""
    rng = np.random.default_rng(6)
    high = np.concatenate([rng.integers(0, 1 << 16, 256, dtype=np.uint32),
                           np.array([0x0000, 0x8000, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFFF],
                                    np.uint32)])
    d = ((high[:, None] << 16) | np.arange(1 << 16, dtype=np.uint32)[None, :]).ravel()
    d = np.concatenate([d, rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])
    assert np.array_equal(nx.pack_early(d, fp32, intermediate), _pack_early_oracle(d, fp32, intermediate))
    assert np.array_equal(nx.pack_early(d, True, "Float32"), d)


def test_l1_acc_fp32_is_ieee_with_daz():
    """§7.4: fp32 L1 accumulation = IEEE single add, denormals as zero in and out."""
    a = tl.f32_bits(np.array([1.0, 1e-40, 3.0], np.float32))
    b = tl.f32_bits(np.array([2.0 ** -24, 1.0, -3.0], np.float32))
    out = tl.bits_f32(nx.l1_acc_fp32(a, b))
    assert list(out) == [1.0, 1.0, 0.0]                       # 1 + 2^-24 ties to even
    with pytest.raises(ValueError):
        nx.l1_accumulate(nx.L1Data("Bfp8_b", np.zeros(16, np.uint8), np.zeros(1, np.uint8)),
                         nx.L1Data("Bfp8_b", np.zeros(16, np.uint8), np.zeros(1, np.uint8)))


# ---------------------------------------------------------------------------------------------
# §7.2 reload

def test_reload_fp32_partials_truncate_to_tf32_unless_unpacked_to_dest():
    """§7.2: Float32 partials reload through SrcA (TF32, truncated) unless UnpackToDestFp32."""
    x = np.float32(1 + 2.0 ** -10 + 2.0 ** -20)
    part = nx.L1Data("Float32", tl.f32_bits(np.array([x, -x], np.float32)))
    assert list(tl.bits_f32(nx.reload_to_dst(part, True))) == [1 + 2.0 ** -10, -(1 + 2.0 ** -10)]
    assert list(tl.bits_f32(nx.reload_to_dst(part, True, unpack_to_dest_fp32=True))) == [x, -x]


@pytest.mark.parametrize("fmt", ["Float16_b", "Bfp8_b", "Bfp4_b"])
def test_reload_bf16_style_partials_is_lossless(fmt):
    """§7.2: bf16 (and block-float, via exact bf16) partials reload into Dst losslessly."""
    v = tl.quantize(RNG.standard_normal(64).astype(np.float32), fmt)
    part = nx.L1Data.from_values(v, fmt)
    for fp32 in (False, True):
        assert np.array_equal(tl.bits_f32(nx.reload_to_dst(part, fp32)), v)


# ---------------------------------------------------------------------------------------------
# comparing with a float64 reference: the one PCC / relative error / ULP implementation
# ---------------------------------------------------------------------------------------------

def test_pcc_is_pearsons_r_and_defined_for_constant_arrays():
    x = RNG.standard_normal(200)
    y = 0.5 * x + 0.1 * RNG.standard_normal(200)
    xm, ym = x - x.mean(), y - y.mean()
    r = float((xm * ym).sum() / np.sqrt((xm * xm).sum() * (ym * ym).sum()))   # Pearson's r by its definition
    assert nx.pcc(x, y) == pytest.approx(r, rel=1e-12)
    assert nx.pcc([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert nx.pcc(np.ones(4), np.ones(4)) == 1.0           # constant and equal: no correlation, but the same
    assert nx.pcc(np.ones(4), np.zeros(4)) == 0.0


def test_error_figures_max_rel_ignores_elements_near_zero():
    ref = np.array([1000.0, 20.0, 40.0, 5.0])
    out = ref + np.array([1.0, 0.0, 20.0, 5.0])            # 0.1% / 0 / 50% / 100% relative error
    max_abs, max_rel, r = nx.error_figures(out, ref)
    assert max_abs == pytest.approx(20.0)
    # 5 < 1 % of 1000 is left out; 40 is kept: kgen ab's definition (relative_error) too
    assert max_rel == pytest.approx(0.5)
    from kgen.perf.ab import relative_error
    assert relative_error(out, ref)[0] == pytest.approx(max_rel)
    assert r == pytest.approx(np.corrcoef(out, ref)[0, 1])
    assert nx.error_figures(np.array([0.5, 0.0]), np.zeros(2))[:2] == (0.5, 0.5)   # all-zero ref: absolute


def test_ulp_distance_against_numpy_nextafter():
    x = np.float32([1.0, -3.5, 1e-20, 65504.0, 0.1])
    up = np.nextafter(x, np.float32(np.inf))
    assert nx.ulp_distance(up, x.astype(np.float64), "Float32").tolist() == [1, 1, 1, 1, 1]
    # bfloat16 has 7 stored mantissa bits: 1 + 3 * 2^-7 is three bf16 steps above 1
    assert nx.ulp_distance(np.float32([1.0 + 2 ** -7 * 3]), np.float64([1.0]), "Float16_b").tolist() == [3]
    # below the floor the distance is counted in the ULPs at the floor (1.0: 2^-7), across zero too
    assert nx.ulp_distance(np.float32([-(2 ** -7)]), np.float64([2 ** -7]), "Float16_b", floor=1.0).tolist() == [2]


def test_ulp_histogram_bins_cover_every_distance_once():
    ulps = np.array([0, 1, 2, 3, 4, 5, 16, 17, 256, 257, 10 ** 6])
    hist = dict(nx.ulp_histogram(ulps))
    assert sum(hist.values()) == ulps.size
    assert hist == {"0": 1, "1": 1, "2": 1, "3-4": 2, "5-8": 1, "9-16": 1, "17-256": 2, ">256": 2}


@pytest.mark.parametrize("fmt", ["Bfp8_b", "Bfp4_b"])
def test_bfp_to_bf16_every_code_at_every_exponent(fmt):
    """ISA-FBP BFP8ToBF16, one datum at a time: the 7-bit magnitude (1.6 fixed point; BFP4's 3 bits
    moved up to its top) is shifted left until its leading one is the implicit bit 6, the shared
    exponent reduced by the same count in 8 bits (wrapping), the 6 bits below it are the top of the
    7-bit mantissa; a zero magnitude is +0, or -inf with the sign set. Every code at every one of
    the 256 shared exponents."""
    mag_bits = tl.BFP_MAG_BITS[fmt]
    codes = np.arange(1 << (mag_bits + 1))
    codes = np.resize(codes, 16 * -(-len(codes) // 16))
    exps = np.arange(256)

    def datum(e: int, code: int) -> int:
        sign, mag = code >> mag_bits & 1, (code & ((1 << mag_bits) - 1)) << (7 - mag_bits)
        if mag == 0:
            return 0xFF80 if sign else 0
        shifts = 7 - mag.bit_length()
        return sign << 15 | ((e - shifts) & 0xFF) << 7 | ((mag << shifts) & 0x3F) << 1

    got = nx.bfp_to_bf16_hw(np.repeat(exps[:, None], len(codes) // 16, axis=1).astype(np.uint8),
                            np.tile(codes, (256, 1)).astype(np.uint8), fmt)
    want = [[datum(int(e), int(c)) for c in codes] for e in exps]
    assert np.array_equal(got, np.array(want, np.uint16))
