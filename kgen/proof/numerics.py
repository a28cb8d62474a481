"""Bit-level arithmetic of the Tensix matrix engine, vectorised NumPy over arrays of bit patterns.

Every function cites the section of ``docs/reference/numerics.md`` it implements. The
data path of one matmul (§1): L1 tiles --unpacker--> SrcA (in1) / SrcB (in0) as 19-bit datums (§2)
--MVMUL, one instruction per fidelity phase (§3, §4)--> Dst in bf16 or fp32 (§4, §5) --packer
(§8), optionally accumulating into L1 (§7.4)--> L1 tiles; partials are reloaded into Dst (§7.2).

Representations used throughout:

* **fp32 pattern**: uint32 IEEE single bits. Dst values are kept as fp32 patterns in both Dst modes;
  in bf16-Dst mode the low 16 bits are always zero (the stored bf16 is the high half).
* **src19**: the 19-bit source-register datum ``sign << 18 | exp8 << 10 | man10`` (§2.1); BF16-style
  data has the 3 low ``man10`` bits zero, TF32 uses all 10. An exponent field of 0 is a zero.
* **L1 data** (:class:`L1Data`): a packed tile's data in its format — fp32 / bf16 patterns, or
  block-float exponents + sign-magnitude codes (groups of 16 along the last axis = face rows).

Rounding is half-away-from-zero or half-up (sign-dependent) everywhere in the FPU and the packer's
format conversion, and round-to-nearest-even only in the packer's L1 accumulator (§4, §7.4, §8.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from kgen.proof.tiles import BFP_MAG_BITS, FACE, bf16_bits_rne, bf16_values, bits_f32, canonical_format, f32_bits

# §3.2: MathFidelity -> fidelity phases run by the LLK matmul (phase loop 0..n-1).
FIDELITY_PHASES: dict[str, tuple[int, ...]] = {
    "LoFi": (0,), "HiFi2": (0, 1), "HiFi3": (0, 1, 2), "HiFi4": (0, 1, 2, 3),
}

_MASK23 = 0x7FFFFF


def phases_of(fidelity: str) -> tuple[int, ...]:
    """Fidelity name -> tuple of phases (§3.2): LoFi {0}, HiFi2 {0,1}, HiFi3 {0,1,2}, HiFi4 {0..3}."""
    try:
        return FIDELITY_PHASES[fidelity]
    except KeyError:
        raise ValueError(f"unknown math fidelity {fidelity!r}; expected one of {', '.join(FIDELITY_PHASES)}")


def phase_exp_adjust(phase: int) -> int:
    """Product exponent adjustment of a phase (§4 step 2): -5 when SrcA takes its low slice
    (phase bit 0), -7 when SrcB takes its low slice (phase bit 1)."""
    return (-5 if phase & 1 else 0) + (-7 if phase & 2 else 0)


def _u32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint32)


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)        # no copy when it is one already: callers never write to it


# =============================================================================================
# §2  unpacker: L1 -> SrcA / SrcB (19-bit) and L1 -> Dst (reload)

def src19_from_fp32_tf32(bits32) -> np.ndarray:
    """Float32 L1 -> TF32 source datum: drop the low 13 mantissa bits, no rounding (§2.2);
    a zero exponent field (denormal) reads as zero."""
    b = _u32(bits32)
    s = b >> 13
    return np.where((b & 0x7F800000) == 0, 0, s).astype(np.uint32)


def src19_from_fp32_bf16(bits32) -> np.ndarray:
    """Float32 L1 -> BF16 source datum: drop the low 16 bits, no rounding; denormals -> 0 (§2.2)."""
    return src19_from_fp32_tf32(_u32(bits32) & 0xFFFF0000)


def src19_from_bf16(bits16) -> np.ndarray:
    """Float16_b L1 -> BF16 source datum: a bit copy into the top 16 of the 19 bits (§2.2);
    a zero exponent field reads as zero (§2.1 denormals are zero)."""
    b = np.asarray(bits16, dtype=np.uint32) & 0xFFFF
    return np.where((b & 0x7F80) == 0, 0, b << 3).astype(np.uint32)


def src19_to_fp32(src19) -> np.ndarray:
    """19-bit source datum -> the fp32 pattern of the same value (low 13 bits zero)."""
    return (_u32(src19) << 13).astype(np.uint32)


def bfp_to_bf16_hw(exps, codes, fmt: str) -> np.ndarray:
    """Hardware block-float -> BF16 unpack (§2.2, ISA-FBP ``BFP8ToBF16``), bits as uint16.

    ``exps`` (..., g), ``codes`` (..., 16*g). BFP4 codes are first moved to BFP8 position
    (magnitude << 4). The 7-bit magnitude is normalised by its leading-zero count and the shared
    exponent reduced by the same count in 8-bit arithmetic (it wraps for tiny exponents, as the
    hardware does); sign=1 with magnitude 0 decodes to -inf (0xFF80), magnitude 0 otherwise to +0.
    """
    fmt = canonical_format(fmt)
    fixed, lz, nonzero = _bfp_unpack_tables(fmt)
    c = np.asarray(codes, dtype=np.uint8) & ((1 << (BFP_MAG_BITS[fmt] + 1)) - 1)
    e = np.repeat(np.asarray(exps, dtype=np.uint8), FACE, axis=-1)
    exp = (e - lz[c]).astype(np.uint16)          # uint8 arithmetic: wraps as the 8-bit exponent does
    exp <<= 7
    exp *= nonzero[c]
    return fixed[c] | exp


@cache
def _bfp_unpack_tables(fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per code (sign and magnitude): the BF16 bits that do not depend on the shared exponent (sign
    and normalised mantissa, or the whole result for a zero magnitude), the leading-zero count the
    exponent is reduced by, and whether the exponent field is used."""
    mag_bits = BFP_MAG_BITS[fmt]
    c = np.arange(1 << (mag_bits + 1), dtype=np.int64)
    sign = (c >> mag_bits) & 1
    mag8 = ((c & ((1 << mag_bits) - 1)) << (7 - mag_bits)) << 1    # 7-bit BFP8 magnitude, in bits 7..1
    lz = 8 - np.frexp(mag8.astype(np.float64))[1]
    norm = (mag8 << np.where(mag8 > 0, lz, 0)) & 0x7E
    fixed = np.where(mag8 == 0, np.where(sign == 1, 0xFF80, 0), (sign << 15) | norm)
    return fixed.astype(np.uint16), np.where(mag8 == 0, 0, lz).astype(np.uint8), (mag8 != 0).astype(np.uint16)


def unpack_src_format(l1_format: str, fp32_dest_acc: bool) -> str:
    """Source-register format TT-Metal selects for an L1 format (§2.2, TM-DF): bf16 stays BF16,
    block floats become BF16-style (``Bfp8_b``), Float32 becomes TF32 with fp32 dest accumulation
    and BF16 (truncated) without."""
    fmt = canonical_format(l1_format)
    if fmt == "Float32":
        return "Tf32" if fp32_dest_acc else "Float16_b"
    return "Float16_b"


def unpack_to_src(data: L1Data, fp32_dest_acc: bool) -> np.ndarray:
    """L1 data -> 19-bit source datums as the unpacker delivers them (§2.2, §2 table)."""
    fmt = data.format
    if fmt == "Float32":
        b = data.bits
        return src19_from_fp32_tf32(b) if fp32_dest_acc else src19_from_fp32_bf16(b)
    if fmt == "Float16_b":
        return src19_from_bf16(data.bits)
    return src19_from_bf16(bfp_to_bf16_hw(data.exps, data.bits, fmt))


def values_to_src19(values, l1_format: str, fp32_dest_acc: bool) -> np.ndarray:
    """Host float values (already quantised to ``l1_format``) -> 19-bit source datums.

    Block floats are host-encoded (exact for representable values) and then unpacked by the
    hardware rule, so the -inf and exponent-wrap quirks of :func:`bfp_to_bf16_hw` apply."""
    return unpack_to_src(L1Data.from_values(values, l1_format), fp32_dest_acc)


def reload_to_dst(data: L1Data, fp32_dest_acc: bool, unpack_to_dest_fp32: bool = False) -> np.ndarray:
    """Reload of partials into Dst (``copy_tile`` / ``copy_block_matmul_partials``, §7.2).

    The partials go through SrcA and a datacopy: Float32 partials are truncated to TF32 (fp32 Dst)
    unless the CB is unpacked straight to Dst (``UnpackToDestFp32``, lossless but for denormals, which
    become 0; TT-Metal 0.81.1's factories mark the partials so with fp32 accumulation), bf16 and
    block-float partials arrive exactly as bf16. Returns fp32 patterns (Dst values)."""
    if data.format == "Float32" and fp32_dest_acc and unpack_to_dest_fp32:
        return _flush_denormal32(data.bits)
    return src19_to_fp32(unpack_to_src(data, fp32_dest_acc))


def _flush_denormal32(bits32) -> np.ndarray:
    b = _u32(bits32)
    return np.where((b & 0x7F800000) == 0, 0, b).astype(np.uint32)


# =============================================================================================
# §3, §4  fidelity slices, MVMUL / ELWMUL / ELWADD, Dst accumulation

def src19_fields(src19):
    """(sign, exp8, man11) of 19-bit datums; man11 includes the implicit one (§4 step 1)."""
    x = _i64(src19)
    return (x >> 18) & 1, (x >> 10) & 0xFF, (x & 0x3FF) | 0x400


def slice_srca(man11, phase: int):
    """SrcA fidelity slice (§3.1, §4 step 2): 5 bits — top 5 (``man >> 6``) when phase bit 0 is
    clear, else bits [5:1] (``(man >> 1) & 31``; the last TF32 bit is never used)."""
    m = _i64(man11)
    return ((m >> 1) & 31) if phase & 1 else (m >> 6)


def slice_srcb(man11, phase: int):
    """SrcB fidelity slice (§3.1, §4 step 2): 7 bits — top 7 (``man >> 4``) when phase bit 1 is
    clear, else the low 4 bits placed as a 7-bit value (``(man & 15) << 3``)."""
    m = _i64(man11)
    return ((m & 15) << 3) if phase & 2 else (m >> 4)


def fpu_accumulate(dst, s0, e0, m0, s1, e1, m1, fp32_dest_acc: bool, wormhole_bug: bool = False) -> np.ndarray:
    """Add two sum-of-products terms to Dst with the FPU's alignment and rounding (§4 steps 4-8).

    ``dst``: fp32 patterns (bf16 Dst values have zero low halves). Each term: sign (0/1), exponent
    (biased, 8-bit style; <= 0 for an empty term) and a mantissa in units of 2**(exp-127-23)
    (a 1.23 fixed point, up to 28 bits for a group sum). All three are aligned to the largest
    exponent; the terms round ``(m + 2**(d-1) - sign) >> d`` (ties toward +inf), Dst rounds
    ``(m + 2**(d-1)) >> d`` (ties away). With bf16 Dst each aligned term is first rounded to a grid
    13 bits coarser, and the normalised sum to 7 mantissa bits half-away; with fp32 Dst the sum is
    normalised to 24 bits, rounding half-away only on overflow. Exact cancellation and underflow
    give +0, exponent >= 255 gives signed infinity. ``wormhole_bug`` reproduces Wormhole's
    renormalisation of a sum of exactly -1 unit (§4 step 8, §10.1).
    Returns fp32 patterns.
    """
    d32 = _i64(_u32(dst))
    sd = (d32 >> 31) & 1
    ed = (d32 >> 23) & 0xFF
    md = np.where(ed == 0, 0, (d32 & _MASK23) | 0x800000)
    s0, e0, m0, s1, e1, m1 = (_i64(x) for x in (s0, e0, m0, s1, e1, m1))
    exp = np.maximum(np.maximum(e0, e1), ed)

    def align(m, e, s):
        d = np.minimum(exp - e, 31)
        half = (np.int64(1) << d) >> 1
        return (m + half - s * (d > 0)) >> d

    m0 = align(m0, e0, s0)
    m1 = align(m1, e1, s1)
    md = align(md, ed, 0)
    if not fp32_dest_acc:
        m0 = (m0 + 4096 - s0) & ~0x1FFF
        m1 = (m1 + 4096 - s1) & ~0x1FFF
        md = (md + 4096) & ~0x1FFF
    val = md * (1 - 2 * sd) + m0 * (1 - 2 * s0) + m1 * (1 - 2 * s1)
    sign = (val < 0).astype(np.int64)
    man = np.abs(val)
    nbits = np.frexp(man.astype(np.float64))[1].astype(np.int64)
    shift = 24 - nbits                      # left shift that puts the leading one at bit 23
    if wormhole_bug:
        shift = np.where((sign == 1) & (man == 1), shift - 27, shift)
    exp = exp - shift
    if not fp32_dest_acc:
        shift = shift - 16                  # keep 8 significant bits
    right = np.maximum(-shift, 0)
    left = np.maximum(shift, 0)
    half = (np.int64(1) << right) >> 1
    man = np.where(shift < 0, (man + half) >> right, man << left)
    if not fp32_dest_acc:
        man = man << 16
    exp = exp + ((man >> 24) & 1)
    man = man & _MASK23
    out = (sign << 31) | (exp << 23) | man
    out = np.where(exp >= 255, (sign << 31) | 0x7F800000, out)
    out = np.where((exp <= 0) | (val == 0) | (np.maximum(np.maximum(e0, e1), ed) <= 0), 0, out)
    return out.astype(np.uint32)


def mvmul(dst, srca, srcb, phase: int, fp32_dest_acc: bool, wormhole_bug: bool = False) -> np.ndarray:
    """One MVMUL for one output datum per leading index (§4): ``Dst += SrcB_row . SrcA_col`` at one
    fidelity phase.

    ``srca``, ``srcb``: 19-bit datums (..., 16) — the 16 K-lanes (SrcA column, SrcB row); ``dst``
    fp32 patterns (...). Each lane's product of the phase's 5-bit SrcA and 7-bit SrcB slices is exact;
    lanes 0-7 and 8-15 form two groups, each aligned to its largest product exponent with
    round-half-up on the magnitude and summed (§4 step 3); then :func:`fpu_accumulate`.
    This is the reference, one instruction at a time; :func:`prepare_srca` /
    :func:`prepare_srcb` / :func:`matmul_group_sums` compute the same group sums in bulk.
    """
    sa, ea, ma = src19_fields(srca)
    sb, eb, mb = src19_fields(srcb)
    zero = (ea == 0) | (eb == 0)
    e = ea + eb - 127 + phase_exp_adjust(phase)
    m = slice_srca(ma, phase) * slice_srcb(mb, phase)
    s = sa ^ sb
    e = np.where(zero, 0, e)                # zero lanes carry exponent max(adj, 0) = 0
    m = np.where(zero, 0, m)
    shape = np.broadcast_shapes(e.shape, m.shape)
    e = np.broadcast_to(e, shape).reshape(shape[:-1] + (2, 8))
    m = np.broadcast_to(m, shape).reshape(shape[:-1] + (2, 8))
    s = np.broadcast_to(s, shape).reshape(shape[:-1] + (2, 8))
    emax = e.max(axis=-1)
    d = np.minimum(emax[..., None] - e, 30)
    r = ((m << 1) + (np.int64(1) << d)) >> (d + 1)
    tot = np.where(s == 1, -r, r).sum(axis=-1)
    live = emax > 0
    gs = np.where(live, (tot < 0).astype(np.int64), 0)
    gm = np.where(live, np.abs(tot) << 13, 0)
    ge = np.where(live, emax, 0)
    return fpu_accumulate(dst, gs[..., 0], ge[..., 0], gm[..., 0], gs[..., 1], ge[..., 1], gm[..., 1],
                          fp32_dest_acc, wormhole_bug)


def elwmul(dst, srca, srcb, phase: int, fp32_dest_acc: bool, wormhole_bug: bool = False) -> np.ndarray:
    """One ELWMUL (``mul_tiles``) at one fidelity phase (§4 "ELWMUL is the same pipeline with a single
    product lane"): ``Dst += slice(SrcA) * slice(SrcB)``; a zero operand or an exponent <= 0 gives an
    empty term. For eltwise ops in0 is on SrcA, in1 on SrcB (§1 item 2)."""
    sa, ea, ma = src19_fields(srca)
    sb, eb, mb = src19_fields(srcb)
    e = ea + eb - 127 + phase_exp_adjust(phase)
    m = (slice_srca(ma, phase) * slice_srcb(mb, phase)) << 13
    empty = (ea == 0) | (eb == 0) | (e <= 0)
    s = np.where(empty, 0, sa ^ sb)
    e = np.where(empty, 0, e)
    m = np.where(empty, 0, m)
    z = np.zeros_like(e)
    return fpu_accumulate(dst, s, e, m, z, z, z, fp32_dest_acc, wormhole_bug)


def mul_tiles(in0_src19, in1_src19, fidelity: str, fp32_dest_acc: bool, wormhole_bug: bool = False) -> np.ndarray:
    """``mul_tiles``: Dst = 0, then one ELWMUL per fidelity phase (§3.2, §3.4), in0 on SrcA."""
    dst = np.zeros(np.broadcast_shapes(np.shape(in0_src19), np.shape(in1_src19)), dtype=np.uint32)
    for p in phases_of(fidelity):
        dst = elwmul(dst, in0_src19, in1_src19, p, fp32_dest_acc, wormhole_bug)
    return dst


def elwadd(srca, srcb, fp32_dest_acc: bool, dst=None, wormhole_bug: bool = False) -> np.ndarray:
    """ELWADD (``add_tiles`` / ``add_tiles_bcast_rows``, as in the fused-bias stage, §7.3): the operand of
    smaller magnitude is aligned to the larger's 11-bit significand with round-half-up on the
    magnitude, the 12-bit sum goes through :func:`fpu_accumulate` against Dst (zero unless
    accumulating). Returns fp32 patterns."""
    a = _i64(srca) & 0x7FFFF
    b = _i64(srcb) & 0x7FFFF
    a = np.where((a & 0x3FFFF) < 0x400, 0, a)
    b = np.where((b & 0x3FFFF) < 0x400, 0, b)
    swap = (a & 0x3FFFF) < (b & 0x3FFFF)
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    sa, ea = (a >> 18) & 1, (a >> 10) & 0xFF
    sb, eb = (b >> 18) & 1, (b >> 10) & 0xFF
    ma = np.where(a != 0, (a & 0x3FF) | 0x400, 0)
    mb = np.where(b != 0, (b & 0x3FF) | 0x400, 0)
    diff = ea - eb
    dd = np.clip(diff, 1, 11)
    mb = np.where(diff <= 0, mb, np.where(diff < 12, (mb + (np.int64(1) << (dd - 1))) >> dd, 0))
    m = np.where(sa == sb, ma + mb, ma - mb) << 13
    z = np.zeros_like(m)
    d = np.zeros(m.shape, dtype=np.uint32) if dst is None else dst
    return fpu_accumulate(d, sa, ea, m, z, z, z, fp32_dest_acc, wormhole_bug)


# ---- bulk matmul group sums ------------------------------------------------------------------
#
# For a matmul the two group sums of every MVMUL depend only on the inputs, not on Dst, so they are
# computed for all K at once (int16 arithmetic; every intermediate fits: a signed 5x7-bit product
# doubled is < 2**13, a group of 8 rounded products < 2**15). Lane k of the K axis is lane k % 8 of
# group k // 8; arrays are laid out (8 lanes, groups, ...) so the 8-way max / sum are contiguous.

_ZERO_EXP = -4096      # exponent of a zero operand: its lanes never set a group's maximum
_DMAX = 13             # alignment shifts >= 13 lose a whole 12-bit product; clamp there


@dataclass(frozen=True)
class LaneOperand:
    """One matmul operand split for :func:`matmul_group_sums` (lane layout (8, K/8, rows, cols)).

    ``exp``: biased exponent, ``_ZERO_EXP`` for zero datums; ``hi``/``lo``: signed fidelity slices
    (SrcA: 5-bit; SrcB: 7-bit doubled, so a product is twice the hardware product)."""

    exp: np.ndarray
    hi: np.ndarray
    lo: np.ndarray

    def take(self, groups: slice = slice(None), rows: slice = slice(None)) -> LaneOperand:
        """A view of some K-groups (axis 1) and rows (axis 2)."""
        return LaneOperand(self.exp[:, groups, rows], self.hi[:, groups, rows], self.lo[:, groups, rows])


def _lane_layout(x: np.ndarray, k_axis: int) -> np.ndarray:
    """(K, N) with k_axis=0 -> (8, K/8, 1, N); (M, K) with k_axis=1 -> (8, K/8, M, 1)."""
    if k_axis == 0:
        k, n = x.shape
        return x.reshape(k // 8, 8, 1, n).transpose(1, 0, 2, 3)
    m, k = x.shape
    return x.T.reshape(k // 8, 8, m, 1).transpose(1, 0, 2, 3)


def prepare_srca(src19_kn) -> LaneOperand:
    """in1 (K, N) as SrcA datums (§1: in1 -> SrcA, the 5-bit port) in lane layout."""
    s, e, m = src19_fields(src19_kn)
    zero = e == 0
    sign = 1 - 2 * s
    hi = np.where(zero, 0, sign * slice_srca(m, 0))
    lo = np.where(zero, 0, sign * slice_srca(m, 1))
    exp = np.where(zero, _ZERO_EXP, e)
    f = lambda x: np.ascontiguousarray(_lane_layout(x.astype(np.int16), 0))
    return LaneOperand(f(exp), f(hi), f(lo))


def prepare_srcb(src19_mk) -> LaneOperand:
    """in0 (M, K) as SrcB datums (§1: in0 -> SrcB, the 7-bit port) in lane layout."""
    s, e, m = src19_fields(src19_mk)
    zero = e == 0
    sign = 1 - 2 * s
    hi = np.where(zero, 0, 2 * sign * slice_srcb(m, 0))
    lo = np.where(zero, 0, 2 * sign * slice_srcb(m, 2))
    exp = np.where(zero, _ZERO_EXP, e)
    f = lambda x: np.ascontiguousarray(_lane_layout(x.astype(np.int16), 1))
    return LaneOperand(f(exp), f(hi), f(lo))


def matmul_group_sums(srca: LaneOperand, srcb: LaneOperand, phases, lanes_per_chunk: int = 1 << 19):
    """Group sums of every MVMUL of ``srcb @ srca`` (§4 step 3), for all K groups at once.

    ``srca`` from :func:`prepare_srca` (in1 (K, N)), ``srcb`` from :func:`prepare_srcb` (rows of
    in0 (M, K)). Returns ``(sums, emax)``: ``sums`` int16 (len(phases), K/8, M, N) — the signed,
    aligned integer sum of each 8-lane group in units of the group's largest product LSB;
    ``emax`` int16 (K/8, M, N) — the largest lane exponent ``eA + eB`` (before the phase's
    ``-127 + adjust``; very negative when every lane has a zero operand). Use :func:`group_term`.
    """
    g_total = srca.exp.shape[1]
    m_rows = srcb.exp.shape[2]
    n_cols = srca.exp.shape[3]
    per_group = 8 * m_rows * n_cols
    step = max(1, min(g_total, lanes_per_chunk // max(per_group, 1)))
    sums = np.empty((len(phases), g_total, m_rows, n_cols), dtype=np.int16)
    emax = np.empty((g_total, m_rows, n_cols), dtype=np.int16)
    for g0 in range(0, g_total, step):
        g1 = min(g_total, g0 + step)
        sl = slice(g0, g1)
        e = srca.exp[:, sl] + srcb.exp[:, sl]                      # (8, g, M, N)
        em = e[0].copy()
        for lane in range(1, 8):
            np.maximum(em, e[lane], out=em)
        emax[sl] = em
        d = np.subtract(em[None], e, out=e)
        np.minimum(d, _DMAX, out=d)
        t = np.left_shift(np.int16(1), d)
        d += 1
        prod = np.empty_like(d)
        tmp = np.empty_like(d)
        for pi, p in enumerate(phases):
            a = srca.lo if p & 1 else srca.hi
            b = srcb.lo if p & 2 else srcb.hi
            np.multiply(a[:, sl], b[:, sl], out=prod)              # 2 * signed product
            np.right_shift(prod, 15, out=tmp)                      # -1 for a negative product
            prod += t
            prod += tmp
            np.right_shift(prod, d, out=prod)                      # round half up on |product|
            acc = sums[pi, sl]
            np.add(prod[0], prod[1], out=acc)
            for lane in range(2, 8):
                acc += prod[lane]
    return sums, emax


def group_term(sums_g, emax_g, phase: int):
    """(sign, exp, man) of group sums for :func:`fpu_accumulate` (§4 step 3 -> step 4): exponent
    ``emax - 127 + adjust``, mantissa ``|sum| << 13``; a group whose exponent is <= 0 is empty."""
    e = emax_g.astype(np.int64) + (phase_exp_adjust(phase) - 127)
    live = e > 0
    s = sums_g.astype(np.int64)
    return (np.where(live, s < 0, 0).astype(np.int64), np.where(live, e, 0),
            np.where(live, np.abs(s) << 13, 0))


# =============================================================================================
# §7.4, §8  packer: Dst -> L1 format, L1 accumulation

@dataclass(frozen=True)
class L1Data:
    """Data of packed tiles in one L1 format.

    ``bits``: uint32 fp32 patterns (Float32), uint16 bf16 patterns (Float16_b) or uint8
    sign-magnitude codes (Bfp8_b / Bfp4_b, sign at bit 7 / bit 3). ``exps``: uint8 shared exponents,
    one per 16 consecutive datums of the last axis (block floats only)."""

    format: str
    bits: np.ndarray
    exps: np.ndarray | None = None

    def values(self) -> np.ndarray:
        """float32 values (block floats decoded exactly; a zero magnitude is +-0)."""
        from kgen.proof.tiles import bf16_values, bfp_decode
        if self.format == "Float32":
            return bits_f32(self.bits)
        if self.format == "Float16_b":
            return bf16_values(self.bits)
        return bfp_decode(self.exps, self.bits, self.format)

    @classmethod
    def from_values(cls, values, fmt: str) -> L1Data:
        """Host conversion (tiles.quantize rules) of float values into ``fmt``."""
        from kgen.proof.tiles import bf16_bits_rne, bfp_host_encode
        fmt = canonical_format(fmt)
        v = np.asarray(values, dtype=np.float32)
        if fmt == "Float32":
            return cls(fmt, f32_bits(v).copy())
        if fmt == "Float16_b":
            return cls(fmt, bf16_bits_rne(v))
        exps, codes = bfp_host_encode(v, fmt)
        return cls(fmt, codes, exps)


def pack_src_format(out_format: str, fp32_dest_acc: bool, bfp_pack_src: str = "Float16_b") -> str:
    """Packer intermediate ("pack src") format (§8.1): Float32 out -> Float32 (fp32 Dst) / Float16_b
    read as bf16 (bf16 Dst); Float16_b -> Float16_b; block floats -> ``bfp_pack_src`` (Float16_b per
    §8.1; ``Bfp8_b`` selects the E8M6 intermediate newer TT-Metal uses)."""
    fmt = canonical_format(out_format)
    if fmt == "Float32":
        return "Float32" if fp32_dest_acc else "Float16_b"
    if fmt == "Float16_b":
        return "Float16_b"
    return bfp_pack_src


def pack_early(dst, fp32_dest_acc: bool, intermediate: str) -> np.ndarray:
    """Early packer conversion of Dst to the intermediate format (§8.2), fp32 patterns out.

    fp32 Dst -> Float32: identity. fp32 Dst -> Float16_b: NaN -> Inf, add 0x8000 to the
    sign-magnitude pattern and keep the top half (round half away), exponent 0 -> +0.
    bf16 Dst -> Float16_b: NaN -> Inf, exponent 0 -> +0. ``Bfp8_b`` (E8M6): fp32 Dst truncated to
    bf16, or bf16 Dst, then the 7-bit mantissa rounded to 6 bits half-away (``(v + 1) & ~1``).
    All in uint32: after NaN -> Inf the magnitude is at most 0x7F800000, so adding 0x8000 never
    carries into the sign."""
    d = np.array(dst, dtype=np.uint32)                                # a copy, worked in place
    if intermediate == "Float32":
        if not fp32_dest_acc:
            raise ValueError("a Float32 pack intermediate needs fp32 Dst")
        return d
    if intermediate not in ("Float16_b", "Bfp8_b"):
        raise ValueError(f"unsupported pack intermediate {intermediate!r}")
    nan = (d & 0x7FFFFFFF) > 0x7F800000
    np.bitwise_and(d, 0xFF800000, out=d, where=nan)                     # NaN -> Inf of its sign
    if intermediate == "Float16_b" and fp32_dest_acc:
        d += 0x8000                                                     # round half away
    elif intermediate == "Bfp8_b" and fp32_dest_acc:
        d += 0x10000                                                    # truncate to bf16, then (v + 1)
    d &= 0xFFFF0000
    d[(d & 0x7F800000) == 0] = 0                                        # exponent 0 -> +0
    if intermediate == "Bfp8_b":
        if not fp32_dest_acc:
            d += 0x10000                                                # (v + 1) after the flush
        d &= 0xFFFE0000                                                 # & ~1
    return d


def relu_bits(bits32) -> np.ndarray:
    """Packer ReLU (``PACK_RELU``, ZERO_RELU) on intermediate values: a set sign bit -> +0."""
    b = _u32(bits32)
    return np.where(b >> 31, 0, b).astype(np.uint32)


def bfp_pack_device(bf16_bits, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Device packer BF16 -> block float (§8.2) over groups of 16 on the last axis.

    Shared exponent = max of the 16 bf16 exponent fields. Each 8-bit significand (implicit one +
    7 bits) is shifted right by ``(max - e) + 1`` rounding half up on the magnitude, giving the
    7-bit BFP8 magnitude; 128 saturates to 127; a shift >= 8 gives 0. BFP4 truncates that magnitude
    (``>> 4``). The sign is written only for a nonzero magnitude. Returns (exps uint8, codes uint8)."""
    fmt = canonical_format(fmt)
    mag_bits = BFP_MAG_BITS[fmt]
    v = np.asarray(bf16_bits, dtype=np.int64) & 0xFFFF
    if v.shape[-1] % FACE:
        raise ValueError("block-float groups are 16 datums: last axis must be a multiple of 16")
    g = v.reshape(v.shape[:-1] + (v.shape[-1] // FACE, FACE))
    e = (g >> 7) & 0xFF
    emax = e.max(axis=-1)
    m = (g & 0x7F) | np.where(e != 0, 0x80, 0)
    shift = emax[..., None] - e
    sh = np.minimum(shift, 7)
    m = np.where(shift >= 8, 0, (m + (np.int64(1) << sh)) >> (sh + 1))
    m = np.minimum(m, 127)
    m = m >> (7 - mag_bits)
    codes = np.where(m != 0, m | (((g >> 15) & 1) << mag_bits), 0)
    return emax.astype(np.uint8), codes.reshape(v.shape).astype(np.uint8)


def pack(dst, out_format: str, fp32_dest_acc: bool, relu: bool = False, bfp_pack_src: str = "Float16_b") -> L1Data:
    """Pack Dst values into an L1 format (§8): early conversion, optional ReLU on the intermediate
    (as the packer applies it), late conversion (to Float32: widen; to bf16: identity; to block
    float: :func:`bfp_pack_device` with groups of 16 along the last axis)."""
    fmt = canonical_format(out_format)
    inter = pack_src_format(fmt, fp32_dest_acc, bfp_pack_src)
    v = pack_early(dst, fp32_dest_acc, inter)
    if relu:
        v = relu_bits(v)
    if fmt == "Float32":
        return L1Data(fmt, v)
    if fmt == "Float16_b":
        return L1Data(fmt, (v >> 16).astype(np.uint16))
    exps, codes = bfp_pack_device((v >> 16).astype(np.uint16), fmt)
    return L1Data(fmt, codes, exps)


def l1_acc_bf16(old_bits16, new_bits16) -> np.ndarray:
    """Packer L1 accumulation in bf16 (§7.4): denormal inputs -> signed zero, exact sum, rounded to
    bf16 to nearest even; underflow -> signed zero, overflow -> signed Inf, +Inf + -Inf -> NaN.

    The sum is formed in float32. It is exact when the exponents differ by at most 16 (two 8-bit
    significands); otherwise the smaller operand is below 2^-16 of the larger, far from a bf16
    rounding tie, so float32's rounding cannot change the bf16 result. A float32 sum below 2^-126
    is exact (subnormal sums are) and flushes to a signed zero; NaN and Inf keep their sign as Inf.
    tests/proof/test_numerics.py checks it against an exact float64 model over every exponent gap."""
    a = np.asarray(old_bits16, dtype=np.uint16).astype(np.uint32) << 16
    b = np.asarray(new_bits16, dtype=np.uint16).astype(np.uint32) << 16
    for x in (a, b):                                                    # denormal in -> signed zero
        np.bitwise_and(x, 0x80000000, out=x, where=(x & 0x7F800000) == 0)
    infnan = ((a == 0x7F800000) & (b == 0xFF800000)) | ((a == 0xFF800000) & (b == 0x7F800000))
    with np.errstate(over="ignore", invalid="ignore"):
        r = (a.view(np.float32) + b.view(np.float32)).view(np.uint32)
    e = r & 0x7F800000
    sign = (r >> 16) & 0x8000
    mag = r & 0x7FFFFFFF
    mag += 0x7FFF + ((mag >> 16) & 1)                                   # round to nearest even
    out = sign | (mag >> 16)
    out[e == 0] = sign[e == 0]                                          # underflow -> signed zero
    full = e == 0x7F800000                                              # overflow, Inf, NaN -> Inf
    out[full] = sign[full] | 0x7F80
    out[infnan] = 0x7FC0
    return out.astype(np.uint16)


def l1_acc_fp32(old_bits32, new_bits32) -> np.ndarray:
    """Packer L1 accumulation in fp32 (§7.4): IEEE single add (round to nearest even) with denormals
    as zero on inputs and output; NaN -> canonical 0x7FC00000."""
    a = _flush_signed32(old_bits32)
    b = _flush_signed32(new_bits32)
    with np.errstate(over="ignore", invalid="ignore"):
        r = f32_bits(bits_f32(a) + bits_f32(b))
    r = np.where((r & 0x7FFFFFFF) > 0x7F800000, 0x7FC00000, r)
    return _flush_signed32(r)


def _flush_signed32(bits32) -> np.ndarray:
    b = _u32(bits32)
    return np.where((b & 0x7FFFFFFF) < 0x800000, b & 0x80000000, b).astype(np.uint32)


def l1_accumulate(old: L1Data, new: L1Data) -> L1Data:
    """``L1 += packed datum`` for the formats the L1 accumulator supports (§7.4: Float32, Float16_b;
    no block floats)."""
    if old.format != new.format:
        raise ValueError("L1 accumulation needs one format")
    if old.format == "Float32":
        return L1Data("Float32", l1_acc_fp32(old.bits, new.bits))
    if old.format == "Float16_b":
        return L1Data("Float16_b", l1_acc_bf16(old.bits, new.bits))
    raise ValueError(f"the packer cannot L1-accumulate {old.format} (§7.4)")


# ----------------------------------------------------------------------------------------------
# Comparing a result with a float64 reference: PCC, relative error and ULPs, written once for
# kgen emulate, port-check, tune --verify and ab (its golden-model numerics and --device).
# ----------------------------------------------------------------------------------------------

def pcc(out, ref) -> float:
    """Pearson correlation of two arrays (TT's tests' "PCC"). A constant array has none: then 1.0
    when the two are allclose, else 0.0."""
    o, r = np.asarray(out, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        if np.std(o) == 0 or np.std(r) == 0:
            return 1.0 if np.allclose(o, r) else 0.0
        return float(np.corrcoef(o, r)[0, 1])


# Relative error near zero measures cancellation, not the kernel: it is taken only where |ref| is at
# least this fraction of max|ref|. The one definition of kgen's max_rel_err (emulate, port-check, ab)
REL_ERR_FLOOR = 1e-2


def relative_error(out, ref) -> tuple[float | None, float, int]:
    """(max |out - ref| / |ref| over the outputs with |ref| >= REL_ERR_FLOOR x the largest |ref|, that
    floor, how many outputs it covers); max is None when none does (an all-zero reference)."""
    ref = np.asarray(ref, np.float64)
    floor = REL_ERR_FLOOR * float(np.abs(ref).max(initial=0.0))
    mask = (np.abs(ref) >= floor) & (np.abs(ref) > 0)
    if not mask.any():
        return None, floor, 0
    with np.errstate(invalid="ignore", over="ignore"):
        rel = np.abs(np.asarray(out, np.float64)[mask] - ref[mask]) / np.abs(ref[mask])
    return float(rel.max()), floor, int(mask.sum())


def error_figures(out, ref) -> tuple[float, float, float]:
    """(max_abs_err, max_rel_err, pcc) of `out` against `ref`: max_rel_err as relative_error takes
    it; with an all-zero ref it is max_abs_err."""
    ref = np.asarray(ref, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        o = np.asarray(out).astype(np.float64)
        max_abs = float(np.abs(o - ref).max(initial=0.0))
    rel = relative_error(o, ref)[0]
    return max_abs, max_abs if rel is None else rel, pcc(o, ref)


def _ordered(bits: np.ndarray, width: int) -> np.ndarray:
    """Sign-magnitude float bits -> integers in value order (adjacent floats differ by 1)."""
    b = bits.astype(np.int64)
    sign = 1 << (width - 1)
    return np.where(b & sign, -(b & (sign - 1)), b)


GRID_MANTISSA_BITS = {"Float32": 23, "Float16_b": 7}
ULP_BINS = ((0, 0, "0"), (1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 8, "5-8"), (9, 16, "9-16"),
            (17, 256, "17-256"), (257, None, ">256"))


def ulp_distance(x: np.ndarray, ref: np.ndarray, grid: str, floor: float = 0.0) -> np.ndarray:
    """How many `grid` values (Float32, or bfloat16 for every other format) lie between x and ref
    rounded to the grid: 0 means x is the correctly rounded result. Where |ref| is below `floor`,
    the distance is counted in the ULPs at `floor` instead, so that a result that cancels to near
    zero is not measured in the ULPs of a tiny number (max_rel's REL_ERR_FLOOR rule)."""
    r32 = np.asarray(ref, np.float64).astype(np.float32)
    x32 = np.asarray(x, np.float32)
    if grid == "Float32":
        width, xb, rb = 32, f32_bits(x32), f32_bits(r32)
        rounded = r32.astype(np.float64)
    else:
        width, xb, rb = 16, bf16_bits_rne(x32), bf16_bits_rne(r32)
        rounded = bf16_values(rb).astype(np.float64)
    steps = np.abs(_ordered(xb, width) - _ordered(rb, width))
    x64 = x32.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # both on one side of zero and not below the floor: count the grid values between them;
        # else the difference in ULPs at max(|ref|, floor) (crossing zero passes no meaningful values)
        mag = np.maximum(np.abs(rounded), floor)
        ulp = np.exp2(np.floor(np.log2(np.where(mag > 0, mag, 1.0))) - GRID_MANTISSA_BITS[grid])
        scaled = np.round(np.abs(x64 - rounded) / ulp)
        counted = (np.signbit(x64) == np.signbit(rounded)) & (np.minimum(np.abs(x64), np.abs(rounded)) >= floor)
        units = np.where(counted | (mag == 0), steps, scaled)
    finite = np.isfinite(x32) & np.isfinite(r32) & np.isfinite(units)
    return np.where(finite, units, 0).astype(np.int64)


def ulp_histogram(ulps: np.ndarray) -> tuple[tuple[str, int], ...]:
    """How many elements fall in each of ULP_BINS, as (label, count)."""
    out = []
    for lo, hi, label in ULP_BINS:
        sel = ulps >= lo if hi is None else (ulps >= lo) & (ulps <= hi)
        out.append((label, int(np.count_nonzero(sel))))
    return tuple(out)
