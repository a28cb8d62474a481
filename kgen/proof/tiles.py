"""Tiles as bytes: 32x32 tile layout (four 16x16 faces) and the L1 byte image of every tile format
kgen uses (docs/reference/numerics.md §9), vectorised over any number of tiles.

Layout (§9): a tile is face0 (rows 0-15, cols 0-15), face1 (rows 0-15, cols 16-31), face2
(rows 16-31, cols 0-15), face3 (rows 16-31, cols 16-31), each face row-major. In that "face order"
datum ``i`` of a tile sits at face ``i // 256``, face row ``(i // 16) % 16``, face column ``i % 16``.

L1 byte images of one tile (§9, sizes as TT-Metal's tile_size / LLK format_tile_sizes):

* ``Float32``   4096 B: 1024 little-endian IEEE words in face order.
* ``Float16_b`` 2048 B: 1024 little-endian bfloat16 words in face order.
* ``Bfp8_b``    1088 B: 64 shared-exponent bytes (face 0 rows 0..15, then faces 1, 2, 3: one byte per
  16-datum face row), then 1024 sign-magnitude bytes in face order (sign bit 7, 7-bit magnitude,
  value ``mag / 2**6 * 2**(exp - 127)``, no implicit one).
* ``Bfp4_b``     576 B: the same 64 exponent bytes, then 512 bytes holding two sign-magnitude nibbles
  (sign bit 3, 3-bit magnitude, value ``mag / 2**2 * 2**(exp - 127)``); datum ``2i`` in the low nibble
  of byte ``i`` ("[0] in LSBs", TM-BFP).

Host conversion of float32 values to each format (what ``ttnn.from_torch`` produces, §9 and §13
step 1) is :func:`quantize` / :func:`encode_tiles`: bfloat16 by round-to-nearest-even, block floats by
TM-BFP's rule (face-row shared exponent = max fp32 exponent field, truncating alignment shift, then
round-to-nearest-even on the remaining bits, saturate, no sign on a zero magnitude). The *device*
packer's rules (half-away rounding from bf16) are in :mod:`kgen.proof.numerics`; both produce parts
(exponents + codes) that :func:`bfp_tile_bytes` lays out the same way.

Decoding (:func:`decode_tiles`) is the host's view of a tile (``ttnn.to_torch``): exact values; a
block-float datum with magnitude 0 decodes to +-0 here, while the hardware unpacker turns sign=1,
magnitude=0 into -inf (:func:`kgen.proof.numerics.bfp_to_bf16_hw`).
"""

from __future__ import annotations

import numpy as np

from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW

TILE = TILE_HW                     # the tile edge, types.TILE_HW, under this module's short name
FACE = 16
TILE_DATUMS = TILE * TILE
FACE_ROWS_PER_TILE = TILE_DATUMS // FACE          # 64 shared exponents per block-float tile
BFP_EXP_BYTES = FACE_ROWS_PER_TILE

FORMATS = ("Float32", "Float16_b", "Bfp8_b", "Bfp4_b")
# magnitude bits of a block-float datum (the sign is one more bit)
BFP_MAG_BITS: dict[str, int] = {"Bfp8_b": 7, "Bfp4_b": 3}
# bytes of one 32x32 tile in L1 (§9), from its layout: 4 or 2 bytes a datum, or a block-float
# datum of sign + magnitude bits plus one shared exponent byte per 16 datums. The arch configs'
# [tile_bytes] (TT-Metal's tile.cpp) must agree: tests/proof/test_tiles.py checks both archs.
TILE_BYTES: dict[str, int] = {
    "Float32": TILE_DATUMS * 4, "Float16_b": TILE_DATUMS * 2,
    **{f: TILE_DATUMS * (bits + 1) // 8 + BFP_EXP_BYTES for f, bits in BFP_MAG_BITS.items()},
}


def canonical_format(fmt: str) -> str:
    """TT-Metal DataFormat name for a format or ttnn dtype name ("bfloat16" -> "Float16_b")."""
    fmt = DTYPE_TO_FORMAT.get(fmt, fmt)
    if fmt not in TILE_BYTES:
        raise ValueError(f"unsupported tile format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return fmt


# ---------------------------------------------------------------------------------------------
# layout

def tilize(tiles: np.ndarray) -> np.ndarray:
    """(..., 32, 32) row-major tiles -> (..., 1024) datums in face order (§9)."""
    t = np.asarray(tiles)
    if t.shape[-2:] != (TILE, TILE):
        raise ValueError(f"tilize expects (..., 32, 32), got {t.shape}")
    lead = t.shape[:-2]
    # (.., fr, r, fc, c) -> (.., fr, fc, r, c): face index = 2*fr + fc
    f = t.reshape(lead + (2, FACE, 2, FACE)).swapaxes(-3, -2)
    return f.reshape(lead + (TILE_DATUMS,))


def untilize(faces: np.ndarray) -> np.ndarray:
    """(..., 1024) datums in face order -> (..., 32, 32) row-major tiles (inverse of :func:`tilize`)."""
    f = np.asarray(faces)
    if f.shape[-1] != TILE_DATUMS:
        raise ValueError(f"untilize expects (..., 1024), got {f.shape}")
    lead = f.shape[:-1]
    t = f.reshape(lead + (2, 2, FACE, FACE)).swapaxes(-3, -2)
    return t.reshape(lead + (TILE, TILE))


def to_tiles(matrix: np.ndarray) -> np.ndarray:
    """(..., R, C) row-major matrix -> (..., R/32, C/32, 32, 32) tiles in row-major tile order."""
    m = np.asarray(matrix)
    r, c = m.shape[-2:]
    if r % TILE or c % TILE:
        raise ValueError(f"matrix {r}x{c} is not a whole number of 32x32 tiles")
    lead = m.shape[:-2]
    return m.reshape(lead + (r // TILE, TILE, c // TILE, TILE)).swapaxes(-3, -2)


def from_tiles(tiles: np.ndarray) -> np.ndarray:
    """(..., Rt, Ct, 32, 32) tiles -> (..., Rt*32, Ct*32) row-major matrix."""
    t = np.asarray(tiles)
    lead = t.shape[:-4]
    rt, ct = t.shape[-4:-2]
    return t.swapaxes(-3, -2).reshape(lead + (rt * TILE, ct * TILE))


# ---------------------------------------------------------------------------------------------
# scalar formats

def f32_bits(values) -> np.ndarray:
    """float32 bit patterns (uint32) of values (converted to float32 first)."""
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def bits_f32(bits) -> np.ndarray:
    """float32 values of uint32 bit patterns."""
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bf16_bits_rne(values) -> np.ndarray:
    """Host float32 -> bfloat16 bits (uint16), round to nearest even (torch's ``.to(bfloat16)``);
    NaN stays a quiet NaN."""
    b = f32_bits(values)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = (b + np.uint32(0x7FFF) + ((b >> 16) & 1)) >> 16      # uint32: wraps only for NaNs, replaced below
    r = np.where(nan, (b >> 16) | 0x40, r)
    return r.astype(np.uint16)


def bf16_values(bits16) -> np.ndarray:
    """float32 values of bfloat16 bit patterns."""
    return bits_f32(np.asarray(bits16, dtype=np.uint32) << 16)


# ---------------------------------------------------------------------------------------------
# block floats: parts <-> values

def bfp_host_encode(values, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Host fp32 -> block float (TM-BFP ``convert_u32_to_bfp``, §9) over groups of 16 on the last axis.

    ``values`` (..., 16*g). Returns ``(exps, codes)``: exps uint8 (..., g) = max fp32 exponent field
    of each group; codes uint8 (..., 16*g) sign-magnitude (sign at bit ``mag_bits``). Each datum's
    24-bit significand is shifted right by (shared - own exponent), truncating, then rounded to
    ``mag_bits`` bits to nearest with ties to even on the bits that remain, saturated; an exact
    zero encodes as 0 and a zero magnitude never carries a sign.
    """
    mag_bits = BFP_MAG_BITS[canonical_format(fmt)]
    b = f32_bits(values)
    if b.shape[-1] % FACE:
        raise ValueError("block-float groups are 16 datums: last axis must be a multiple of 16")
    # int32 in place: a 24-bit significand shifted by 31 is already 0, so the shift is capped there
    g = b.reshape(b.shape[:-1] + (b.shape[-1] // FACE, FACE)).view(np.int32)
    exp = (g >> 23) & 0xFF
    shared = exp.max(axis=-1)
    shift = shared[..., None] - exp
    np.minimum(shift, 31, out=shift)
    man = (g & 0x7FFFFF) | 0x800000
    man >>= shift
    sh = 24 - mag_bits
    tie = 1 << (sh - 1)
    low = man & ((1 << sh) - 1)
    man >>= sh
    man += (low > tie) | ((low == tie) & ((man & 1) == 1))
    np.minimum(man, (1 << mag_bits) - 1, out=man)
    man[(g & 0x7FFFFFFF) == 0] = 0
    codes = man.astype(np.uint8)
    codes[(g < 0) & (man != 0)] |= np.uint8(1 << mag_bits)     # a zero magnitude never carries a sign
    return shared.astype(np.uint8), codes.reshape(b.shape)


def bfp_decode(exps, codes, fmt: str) -> np.ndarray:
    """Block float parts -> exact float32 values (host view, as TM-BFP ``convert_bfp_to_u32``).

    ``exps`` (..., g), ``codes`` (..., 16*g). Value = ``+-mag / 2**(mag_bits-1) * 2**(exp-127)``;
    a zero magnitude decodes to +-0.
    """
    mag_bits = BFP_MAG_BITS[canonical_format(fmt)]
    c = np.asarray(codes, dtype=np.uint8) & ((1 << (mag_bits + 1)) - 1)
    # +-mag per code, then one power of two per group: the product is exact, or rounds once into a
    # float32 denormal or infinity, as the float64 value converted to float32 would
    code = np.arange(1 << (mag_bits + 1))
    mag = (code & ((1 << mag_bits) - 1)).astype(np.float32)
    signed = np.where((code >> mag_bits) & 1 == 1, -mag, mag)         # -0.0 for a signed zero magnitude
    scale = np.ldexp(np.float32(1), np.asarray(exps, dtype=np.int32) - (127 + mag_bits - 1)).astype(np.float32)
    v = signed[c].reshape(c.shape[:-1] + (c.shape[-1] // FACE, FACE))
    v *= scale[..., None]
    return v.reshape(c.shape)


def quantize(values, fmt: str) -> np.ndarray:
    """Host conversion of float32 values to the values ``fmt`` can hold (§9, §13 step 1).

    Float32: identity. Float16_b: round to nearest even. Bfp8_b/Bfp4_b: TM-BFP rule over groups of
    16 consecutive datums of the last axis, which for a row-major matrix whose width is a multiple
    of 16 (tiles) are exactly the 16-datum face rows sharing one exponent.
    Idempotent: a value already representable is returned unchanged.
    """
    fmt = canonical_format(fmt)
    v = np.asarray(values, dtype=np.float32)
    if fmt == "Float32":
        return v.copy()
    if fmt == "Float16_b":
        return bf16_values(bf16_bits_rne(v))
    exps, codes = bfp_host_encode(v, fmt)
    return bfp_decode(exps, codes, fmt)


# ---------------------------------------------------------------------------------------------
# tile byte images

def bfp_tile_bytes(exps, codes, fmt: str) -> np.ndarray:
    """Lay out block-float parts as L1 tile images (§9).

    ``exps`` (..., 64) uint8 in face-row order, ``codes`` (..., 1024) sign-magnitude codes in face
    order. Returns uint8 (..., 1088) for Bfp8_b or (..., 576) for Bfp4_b.
    """
    fmt = canonical_format(fmt)
    e = np.asarray(exps, dtype=np.uint8)
    c = np.asarray(codes, dtype=np.uint8)
    if e.shape[-1] != BFP_EXP_BYTES or c.shape[-1] != TILE_DATUMS:
        raise ValueError("bfp_tile_bytes expects exps (..., 64) and codes (..., 1024)")
    if fmt == "Bfp4_b":
        c = (c[..., 0::2] & 0xF) | ((c[..., 1::2] & 0xF) << 4)
    return np.concatenate([e, c], axis=-1)


def bfp_tile_parts(buf, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Split block-float tile images (..., 1088 | 576) into exps (..., 64) and codes (..., 1024)."""
    fmt = canonical_format(fmt)
    b = np.asarray(buf, dtype=np.uint8)
    if b.shape[-1] != TILE_BYTES[fmt]:
        raise ValueError(f"{fmt} tiles are {TILE_BYTES[fmt]} bytes, got {b.shape[-1]}")
    exps = b[..., :BFP_EXP_BYTES]
    data = b[..., BFP_EXP_BYTES:]
    if fmt == "Bfp4_b":
        codes = np.empty(b.shape[:-1] + (TILE_DATUMS,), dtype=np.uint8)
        codes[..., 0::2] = data & 0xF
        codes[..., 1::2] = data >> 4
    else:
        codes = data.copy()
    return exps.copy(), codes


def encode_tiles(tiles, fmt: str) -> np.ndarray:
    """Host encode of (..., 32, 32) float32 tiles to their L1 byte images (..., TILE_BYTES[fmt]).

    Values not representable in ``fmt`` are converted by the host rule (:func:`quantize`)."""
    fmt = canonical_format(fmt)
    faces = tilize(np.asarray(tiles, dtype=np.float32))
    if fmt == "Float32":
        return np.ascontiguousarray(faces.astype("<f4")).view(np.uint8)
    if fmt == "Float16_b":
        return np.ascontiguousarray(bf16_bits_rne(faces).astype("<u2")).view(np.uint8)
    exps, codes = bfp_host_encode(faces, fmt)
    return bfp_tile_bytes(exps, codes, fmt)


def decode_tiles(buf, fmt: str) -> np.ndarray:
    """L1 byte images (..., TILE_BYTES[fmt]) -> (..., 32, 32) float32 tiles (host view)."""
    fmt = canonical_format(fmt)
    b = np.ascontiguousarray(buf, dtype=np.uint8)
    if b.shape[-1] != TILE_BYTES[fmt]:
        raise ValueError(f"{fmt} tiles are {TILE_BYTES[fmt]} bytes, got {b.shape[-1]}")
    if fmt == "Float32":
        faces = b.view("<f4").astype(np.float32)
    elif fmt == "Float16_b":
        faces = bf16_values(b.view("<u2"))
    else:
        exps, codes = bfp_tile_parts(b, fmt)
        faces = bfp_decode(exps, codes, fmt)
    return untilize(faces)


def encode_matrix(matrix, fmt: str) -> np.ndarray:
    """(R, C) row-major matrix -> (R/32 * C/32, TILE_BYTES) tile images in row-major tile order."""
    t = to_tiles(np.asarray(matrix, dtype=np.float32))
    return encode_tiles(t.reshape((-1, TILE, TILE)), fmt)


def decode_matrix(buf, fmt: str, rows: int, cols: int) -> np.ndarray:
    """Inverse of :func:`encode_matrix`."""
    t = decode_tiles(np.asarray(buf).reshape(-1, TILE_BYTES[canonical_format(fmt)]), fmt)
    return from_tiles(t.reshape(rows // TILE, cols // TILE, TILE, TILE))
