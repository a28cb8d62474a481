"""Tile layout and L1 byte images (docs/reference/numerics.md §9), against the document's layout rules and
hand-worked host conversions (TM-BFP ``convert_u32_to_bfp``: truncating alignment shift, then
round to nearest even, saturate, no sign on a zero magnitude)."""

from __future__ import annotations

import numpy as np
import pytest

from kgen.proof import tiles as tl

RNG = np.random.default_rng(5)


def random_tiles(n=3, spread=6):
    v = RNG.standard_normal((n, 32, 32)) * np.exp2(RNG.integers(-spread, spread, (n, 32, 32)))
    v[RNG.random(v.shape) < 0.05] = 0.0
    return v.astype(np.float32)


# ---------------------------------------------------------------------------------------------
# layout

def test_face_order():
    """§9: face0 = rows 0-15 x cols 0-15, face1 = rows 0-15 x cols 16-31, face2, face3; row-major
    inside a face."""
    t = np.arange(1024).reshape(32, 32)               # value = 32*row + col
    f = tl.tilize(t)
    for i in (0, 15, 16, 255, 256, 300, 511, 512, 777, 1023):
        face, r, c = i // 256, (i // 16) % 16, i % 16
        row = r + 16 * (face // 2)
        col = c + 16 * (face % 2)
        assert f[i] == 32 * row + col
    assert f[256] == 16                                # face 1 starts at row 0, col 16
    assert f[512] == 16 * 32                           # face 2 starts at row 16, col 0


def test_tilize_untilize_roundtrip_many_tiles():
    t = random_tiles(7).reshape(7, 1, 32, 32)
    assert tl.tilize(t).shape == (7, 1, 1024)
    assert np.array_equal(tl.untilize(tl.tilize(t)), t)


def test_to_tiles_from_tiles():
    m = np.arange(64 * 96).reshape(64, 96)
    t = tl.to_tiles(m)
    assert t.shape == (2, 3, 32, 32)
    assert np.array_equal(t[1, 2], m[32:64, 64:96])
    assert np.array_equal(tl.from_tiles(t), m)
    with pytest.raises(ValueError):
        tl.to_tiles(np.zeros((33, 32)))


# ---------------------------------------------------------------------------------------------
# sizes and round trips

@pytest.mark.parametrize("fmt,size", [("Float32", 4096), ("Float16_b", 2048), ("Bfp8_b", 1088), ("Bfp4_b", 576)])
def test_tile_sizes(fmt, size):
    """§9 sizes: Float32 4096, Float16_b 2048, Bfp8_b 1088 (64 + 1024), Bfp4_b 576 (64 + 512)."""
    b = tl.encode_tiles(np.zeros((4, 32, 32), np.float32), fmt)
    assert b.shape == (4, size) and b.dtype == np.uint8
    assert tl.TILE_BYTES[fmt] == size
    from kgen.core.arch import load_arch
    for arch in ("wormhole_b0", "blackhole"):                 # configs/arch, from TT-Metal's tile.cpp
        assert load_arch(arch).tile_bytes[fmt] == size


@pytest.mark.parametrize("fmt", tl.FORMATS)
def test_roundtrip_representable_values(fmt):
    """decode(encode(v)) == v for values already representable in the format; quantize is idempotent."""
    v = tl.quantize(random_tiles(5), fmt)
    assert np.array_equal(tl.quantize(v, fmt), v)
    back = tl.decode_tiles(tl.encode_tiles(v, fmt), fmt)
    assert np.array_equal(back, v)
    if fmt in ("Float32", "Float16_b"):                 # bit-exact, signed zeros included
        assert np.array_equal(tl.f32_bits(back), tl.f32_bits(v))


@pytest.mark.parametrize("fmt", tl.FORMATS)
def test_encode_is_a_bijection_on_bytes(fmt):
    """encode(decode(bytes)) == bytes for canonical byte images (what the host encoder writes)."""
    b = tl.encode_tiles(random_tiles(3), fmt)
    assert np.array_equal(tl.encode_tiles(tl.decode_tiles(b, fmt), fmt), b)


def test_matrix_roundtrip():
    m = tl.quantize(RNG.standard_normal((64, 96)).astype(np.float32), "Bfp8_b")
    b = tl.encode_matrix(m, "Bfp8_b")
    assert b.shape == (6, 1088)
    assert np.array_equal(tl.decode_matrix(b, "Bfp8_b", 64, 96), m)


# ---------------------------------------------------------------------------------------------
# byte layouts

def test_float32_and_bf16_bytes_little_endian_face_order():
    t = np.zeros((32, 32), np.float32)
    t[0, 0] = 1.0
    t[0, 16] = -2.0                                    # face 1, datum 256
    b32 = tl.encode_tiles(t, "Float32")
    assert list(b32[0:4]) == [0x00, 0x00, 0x80, 0x3F]  # 0x3F800000 little-endian
    assert list(b32[1024:1028]) == [0x00, 0x00, 0x00, 0xC0]
    b16 = tl.encode_tiles(t, "Float16_b")
    assert list(b16[0:2]) == [0x80, 0x3F]              # bf16 0x3F80
    assert list(b16[512:514]) == [0x00, 0xC0]


def test_bfp8_exponent_section_then_face_order_data():
    """§9: 16 exponent bytes per face (one per face row) x 4 faces first, then the sign-magnitude
    datums face by face, row-major."""
    t = np.zeros((32, 32), np.float32)
    t[3, 5] = 1.0          # face 0 row 3: exponent 127, datum 3*16+5
    t[20, 17] = -4.0       # face 3 row 4: exponent 129, datum 768 + 4*16 + 1
    t[18, 2] = 0.5         # face 2 row 2: exponent 126
    b = tl.encode_tiles(t, "Bfp8_b")
    exps = b[:64]
    assert exps[3] == 127 and exps[48 + 4] == 129 and exps[32 + 2] == 126
    assert np.count_nonzero(exps) == 3
    data = b[64:]
    assert data[3 * 16 + 5] == 64                      # 1.0 = 64/64 * 2^0, sign 0
    assert data[768 + 4 * 16 + 1] == 0x80 | 64         # -4.0: sign bit 7
    assert data[512 + 2 * 16 + 2] == 64


def test_bfp4_two_datums_per_byte_low_nibble_first():
    """§9: BFP4 = sign + 3-bit magnitude, two per byte, element 0 in the low bits."""
    t = np.zeros((32, 32), np.float32)
    t[0, 0] = 1.0           # shared exp 127: magnitude 4 (4/4 = 1.0)
    t[0, 1] = -0.5          # magnitude 2, sign -> nibble 0b1010
    b = tl.encode_tiles(t, "Bfp4_b")
    assert b.shape == (576,)
    assert b[0] == 127
    assert b[64] == (0xA << 4) | 0x4
    _, codes = tl.bfp_tile_parts(b, "Bfp4_b")
    assert codes[0] == 4 and codes[1] == 0xA


# ---------------------------------------------------------------------------------------------
# host block-float rule (TM-BFP)

def bfp8_row(values):
    row = np.zeros(16, np.float32)
    row[: len(values)] = values
    e, c = tl.bfp_host_encode(row, "Bfp8_b")
    return int(e[0]), [int(x) for x in c[: len(values)]]


def test_host_bfp8_shared_exponent_is_row_max():
    e, c = bfp8_row([0.25, 3.0, -1.0])
    assert e == 128                                    # 3.0 = 1.5 * 2^1
    assert c == [8, 96, 0x80 | 32]                     # 0.25 = 8/64*2, 3 = 96/64*2, -1 = 32/64*2


def test_host_bfp8_round_to_nearest_even():
    """After aligning to the row exponent the 7-bit magnitude is rounded to nearest, ties to even:
    with a row max of 1.0 the unit is 2^-6; 3/128 = 1.5 units -> 2, 5/128 = 2.5 units -> 2,
    +-1/128 = 0.5 unit -> 0 (a zero magnitude carries no sign)."""
    e, c = bfp8_row([1.0, 3 / 128, 5 / 128, 1 / 128, -1 / 128, 7 / 256])
    assert e == 127
    assert c[:5] == [64, 2, 2, 0, 0]
    assert c[5] == 2                                   # 7/256 = 1.75 units: above the tie -> 2


def test_host_bfp8_alignment_shift_truncates_before_rounding():
    """The significand is shifted right by the exponent difference *truncating* before the
    rounding step, so bits below the 24-bit window cannot break a tie: (1 + 2^-23) * 2^-7 is
    half a unit plus a bit that the shift drops -> ties to even -> 0."""
    x = np.float32((1 + 2.0 ** -23) * 2.0 ** -7)
    assert bfp8_row([1.0, x])[1] == [64, 0]
    assert bfp8_row([1.0, np.float32(2.0 ** -7 * 1.5)])[1] == [64, 1]   # 0.75 unit -> 1


def test_host_bfp8_saturates_at_127():
    e, c = bfp8_row([np.float32(1.9999999)])
    assert e == 127 and c == [127]


def test_host_bfp4_rounds_then_saturates():
    """BFP4: 3-bit magnitude, value mag/4 * 2^(exp-127)."""
    row = np.zeros(16, np.float32)
    row[:4] = [1.0, 1.375, 1.625, 1.9]
    e, c = tl.bfp_host_encode(row, "Bfp4_b")
    # units of 2^-2: 1.0 -> 4, 1.375 -> 5.5 -> 6 (even), 1.625 -> 6.5 -> 6 (even), 1.9 -> 7.6 -> 8 -> sat 7
    assert list(c[:4]) == [4, 6, 6, 7]
    assert np.array_equal(tl.bfp_decode(e, c, "Bfp4_b")[:4], [1.0, 1.5, 1.5, 1.75])


def test_bf16_host_rounding_is_rne():
    """Host bf16 conversion (torch) rounds to nearest even: 1 + 2^-8 is a tie -> 1.0; 1 + 3*2^-8 -> 1 + 2^-6."""
    v = tl.quantize(np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20], np.float32), "Float16_b")
    assert list(v) == [1.0, 1 + 2.0 ** -6, 1 + 2.0 ** -7]


def test_format_names():
    assert tl.canonical_format("bfloat8_b") == "Bfp8_b"
    with pytest.raises(ValueError):
        tl.canonical_format("Bfp2_b")


def test_bf16_bits_rne_matches_an_independent_model():
    """Host float32 -> bfloat16, round to nearest even, NaN stays a quiet NaN: kgen's uint32 version
    against a restatement in Python integers (a deliberate oracle) on every low half of 128 random
    high halves and the special high halves (zeros, denormals, the largest finite, Inf, NaN)."""
    rng = np.random.default_rng(8)
    high = np.concatenate([rng.integers(0, 1 << 16, 128, dtype=np.uint32),
                           np.array([0x0000, 0x8000, 0x007F, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFFF], np.uint32)])
    bits = ((high[:, None] << 16) | np.arange(1 << 16, dtype=np.uint32)[None, :]).ravel()

    def oracle(b: int) -> int:
        if b & 0x7FFFFFFF > 0x7F800000:
            return (b >> 16) | 0x40
        half, low = b >> 16, b & 0xFFFF
        return half + (low > 0x8000 or (low == 0x8000 and half & 1))

    sample = np.concatenate([bits[:: 97], bits[-(1 << 16) * 9:][:: 7]])    # ~100k + every 7th special
    want = np.array([oracle(int(b)) for b in sample], dtype=np.uint16)
    got = tl.bf16_bits_rne(sample.view(np.float32))
    assert got.dtype == np.uint16 and np.array_equal(got, want)


@pytest.mark.parametrize("fmt", ["Bfp8_b", "Bfp4_b"])
def test_bfp_decode_every_code_at_every_exponent(fmt):
    """TM-BFP convert_bfp_to_u32 in float64: +-mag / 2**(mag_bits - 1) * 2**(exp - 127), then one
    rounding to float32 (denormals, and infinity above float32's range), for every code at every
    one of the 256 shared exponents."""
    mag_bits = tl.BFP_MAG_BITS[fmt]
    codes = np.resize(np.arange(1 << (mag_bits + 1)), 16 * -(-(1 << (mag_bits + 1)) // 16))
    want = np.empty((256, len(codes)), np.float32)
    for e in range(256):
        for i, c in enumerate(codes):
            v = float(c & ((1 << mag_bits) - 1)) / 2.0 ** (mag_bits - 1) * 2.0 ** (e - 127)
            with np.errstate(over="ignore"):
                want[e, i] = np.float32(-v if c >> mag_bits & 1 else v)
    with np.errstate(over="ignore"):
        got = tl.bfp_decode(np.repeat(np.arange(256)[:, None], len(codes) // 16, axis=1).astype(np.uint8),
                            np.tile(codes, (256, 1)).astype(np.uint8), fmt)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("fmt", ["Bfp8_b", "Bfp4_b"])
def test_bfp_host_encode_against_a_datum_by_datum_reference(fmt):
    """TM-BFP convert_u32_to_bfp one datum at a time, in Python integers: the shared exponent is the
    group's largest exponent field; each 24-bit significand (implicit one included) shifted right
    by the difference, truncating, then rounded to mag_bits bits, ties to even, saturated; an exact
    zero (either sign) is code 0. Random groups spanning many exponents, zeros, denormals, infinities."""
    mag_bits = tl.BFP_MAG_BITS[fmt]
    rng = np.random.default_rng(11)
    v = (rng.standard_normal((64, 64)) * np.exp2(rng.integers(-40, 40, (64, 64)))).astype(np.float32)
    v[rng.random(v.shape) < 0.05] = 0.0
    v[rng.random(v.shape) < 0.02] = -0.0
    v[rng.random(v.shape) < 0.02] = np.float32(1e-40)
    v[rng.random(v.shape) < 0.01] = np.inf
    exps, codes = tl.bfp_host_encode(v, fmt)
    bits = v.view(np.uint32).reshape(64, 4, 16)
    for r in range(64):
        for g in range(4):
            group = [int(x) for x in bits[r, g]]
            shared = max(x >> 23 & 0xFF for x in group)
            assert exps[r, g] == shared
            for j, x in enumerate(group):
                if x & 0x7FFFFFFF == 0:
                    assert codes[r, 16 * g + j] == 0
                    continue
                man = ((x & 0x7FFFFF) | 0x800000) >> min(shared - (x >> 23 & 0xFF), 63)
                drop = 24 - mag_bits
                m, low = man >> drop, man & ((1 << drop) - 1)
                half = 1 << (drop - 1)
                m = min(m + (low > half or (low == half and m & 1)), (1 << mag_bits) - 1)
                want = (x >> 31 << mag_bits if m else 0) | m
                assert codes[r, 16 * g + j] == want, (r, g, j, hex(x))
