// Tensix matrix-engine tile arithmetic; see tensix_math.h. Written from docs/reference/numerics.md §2-§8 and
// the semantics of kgen/proof/numerics.py / kgen/proof/golden.py (the reference the tests compare against).

#include "tensix_math.h"

#include <cmath>
#include <cstring>

namespace kemu {

namespace {

constexpr uint32_t MASK23 = 0x7FFFFF;

// Face-order index of row r, column c of a 32x32 tile (§9).
inline int face_index(int r, int c) { return (((r >> 4) << 1) | (c >> 4)) * 256 + (r & 15) * 16 + (c & 15); }

inline uint32_t load_le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint32_t load_le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
inline void store_le32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
    p[2] = uint8_t(v >> 16);
    p[3] = uint8_t(v >> 24);
}
inline void store_le16(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
}

inline float f32_of(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
inline uint32_t bits_of(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

inline int bit_length32(uint32_t x) { return x ? 32 - __builtin_clz(x) : 0; }
inline int bit_length64(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

inline bool is_bfp(DataFormat f) { return f == DataFormat::Bfp8_b || f == DataFormat::Bfp4_b; }
inline int bfp_mag_bits(DataFormat f) { return f == DataFormat::Bfp8_b ? 7 : 3; }

// ---- §2 unpacker --------------------------------------------------------------------------------

// Float32 -> TF32 source datum: drop the low 13 bits, no rounding; zero exponent field -> 0 (§2.2).
inline uint32_t src19_from_fp32_tf32(uint32_t b) { return (b & 0x7F800000) ? b >> 13 : 0; }
// Float32 -> BF16 source datum: drop the low 16 bits (§2.2).
inline uint32_t src19_from_fp32_bf16(uint32_t b) { return src19_from_fp32_tf32(b & 0xFFFF0000u); }
// bf16 -> source datum: bit copy into the top 16 of 19 bits; zero exponent field -> 0.
inline uint32_t src19_from_bf16(uint32_t h) {
    h &= 0xFFFF;
    return (h & 0x7F80) ? h << 3 : 0;
}

// Hardware BFP -> BF16 (§2.2, ISA-FBP BFP8ToBF16): the magnitude (moved to BFP8 position) is
// normalised by its leading-zero count, the shared exponent reduced by it modulo 256; a zero magnitude
// is +0, or -inf with the sign set.
inline uint32_t bfp_to_bf16(uint32_t shared_exp, uint32_t code, int mag_bits) {
    const uint32_t sign = (code >> mag_bits) & 1;
    const uint32_t mag8 = ((code & ((1u << mag_bits) - 1)) << (7 - mag_bits)) << 1;  // bits 7..1
    if (mag8 == 0) return sign ? 0xFF80u : 0u;
    const int lz = 8 - bit_length32(mag8);
    const uint32_t norm = (mag8 << lz) & 0xFF;
    const uint32_t exp = (shared_exp - uint32_t(lz)) & 0xFF;
    return sign << 15 | exp << 7 | (norm & 0x7E);
}

inline uint32_t bfp_code(const uint8_t* tile, DataFormat fmt, int i) {
    if (fmt == DataFormat::Bfp8_b) return tile[64 + i];
    const uint8_t byte = tile[64 + (i >> 1)];
    return (i & 1) ? byte >> 4 : byte & 0xF;
}

// ---- §4 group sums, Dst accumulation -----------------------------------------------------------

inline int phase_exp_adjust(int phase) { return ((phase & 1) ? -5 : 0) + ((phase & 2) ? -7 : 0); }

// ---- §8 packer -----------------------------------------------------------------------------------

inline uint32_t flush16(uint32_t v) { return (v & 0x7FFF) < 0x80 ? 0 : (v & 0xFFFF); }

// numerics.pack_early for one datum: fp32 pattern of the intermediate value.
inline uint32_t pack_early(uint32_t d, bool fp32_dest_acc, DataFormat inter) {
    if (inter == DataFormat::Float32 && fp32_dest_acc) return d;
    if ((d & 0x7FFFFFFF) > 0x7F800000) d = (d & 0x80000000u) | 0x7F800000u;  // NaN -> Inf
    uint64_t v;
    const uint64_t d64 = d;
    if (inter == DataFormat::Bfp8_b) {  // E8M6: bf16, then 7 -> 6 mantissa bits half away
        v = fp32_dest_acc ? flush16(uint32_t((((d64 >> 16) + 1) & ~uint64_t(1)))) : (flush16(d >> 16) + 1) & ~1u;
    } else {  // Float16_b
        v = fp32_dest_acc ? flush16(uint32_t((d64 + 0x8000) >> 16)) : flush16(d >> 16);
    }
    return uint32_t(v << 16);
}

inline DataFormat pack_src_format(DataFormat out, bool fp32_dest_acc, DataFormat bfp_pack_src) {
    if (out == DataFormat::Float32) return fp32_dest_acc ? DataFormat::Float32 : DataFormat::Float16_b;
    if (out == DataFormat::Float16_b) return DataFormat::Float16_b;
    return bfp_pack_src == DataFormat::Bfp8_b ? DataFormat::Bfp8_b : DataFormat::Float16_b;
}

// numerics.l1_acc_bf16 (§7.4): denormal inputs -> signed zero, the sum formed in double, rounded to
// bf16 to nearest even; underflow -> signed zero, overflow -> signed Inf, +Inf + -Inf -> NaN.
inline uint32_t l1_acc_bf16(uint32_t a, uint32_t b) {
    a &= 0xFFFF;
    b &= 0xFFFF;
    if ((a & 0x7FFF) < 0x80) a &= 0x8000;
    if ((b & 0x7FFF) < 0x80) b &= 0x8000;
    if ((a == 0x7F80 && b == 0xFF80) || (a == 0xFF80 && b == 0x7F80)) return 0x7FC0;
    const double sum = double(f32_of(a << 16)) + double(f32_of(b << 16));
    uint64_t r;
    std::memcpy(&r, &sum, 8);
    const uint64_t s = r >> 63;
    const int64_t e = int64_t((r >> 52) & 0x7FF) - 1023 + 127;
    const uint64_t m = r & ((uint64_t(1) << 52) - 1);
    if (e <= 0) return uint32_t(s << 15);
    if (e >= 255) return uint32_t(s << 15) | 0x7F80;
    const uint64_t rounded = (uint64_t(e) << 7) + ((m + (uint64_t(1) << 44) - 1 + ((m >> 45) & 1)) >> 45);
    return uint32_t((s << 15) | rounded) & 0xFFFF;
}

inline uint32_t flush_signed32(uint32_t b) { return (b & 0x7FFFFFFF) < 0x800000 ? (b & 0x80000000u) : b; }

// numerics.l1_acc_fp32 (§7.4): IEEE single add, denormals as zero on inputs and output, NaN canonical.
inline uint32_t l1_acc_fp32(uint32_t a, uint32_t b) {
    const float sum = f32_of(flush_signed32(a)) + f32_of(flush_signed32(b));
    uint32_t r = bits_of(sum);
    if ((r & 0x7FFFFFFF) > 0x7F800000) r = 0x7FC00000;
    return flush_signed32(r);
}

// numerics.bfp_pack_device on one 16-datum group of bf16 patterns (§8.2).
inline void bfp_pack_group(const uint32_t* bf16, int mag_bits, uint8_t& shared, uint8_t* codes) {
    uint32_t emax = 0;
    for (int i = 0; i < 16; ++i) {
        const uint32_t e = (bf16[i] >> 7) & 0xFF;
        emax = e > emax ? e : emax;
    }
    shared = uint8_t(emax);
    for (int i = 0; i < 16; ++i) {
        const uint32_t g = bf16[i] & 0xFFFF;
        const uint32_t e = (g >> 7) & 0xFF;
        uint32_t m = (g & 0x7F) | (e ? 0x80 : 0);
        const uint32_t shift = emax - e;
        if (shift >= 8) {
            m = 0;
        } else {
            m = (m + (1u << shift)) >> (shift + 1);
            if (m > 127) m = 127;
        }
        m >>= 7 - mag_bits;
        codes[i] = uint8_t(m ? (m | ((g >> 15) & 1) << mag_bits) : 0);
    }
}

// numerics.fpu_accumulate (§4 steps 4-8): two group terms (sign, biased exponent <= 0 when empty,
// mantissa in units of 2^(exp-127-23)) and Dst aligned to the largest exponent and summed.
__attribute__((always_inline)) inline uint32_t accumulate(uint32_t dst, int s0, int e0, int64_t m0, int s1, int e1,
                                                          int64_t m1, bool fp32, bool wh) {
    const int sd = int(dst >> 31);
    const int ed = int(dst >> 23) & 0xFF;
    int64_t md = ed ? int64_t((dst & MASK23) | 0x800000) : 0;
    int emax = e0 > e1 ? e0 : e1;
    emax = ed > emax ? ed : emax;
    // align to the largest exponent: terms round ties toward +inf, Dst ties away (§4 step 4)
    auto align = [emax](int64_t m, int e, int s) {
        int d = emax - e;
        d = d < 31 ? d : 31;
        const int64_t half = (int64_t(1) << d) >> 1;
        return (m + half - (d > 0 ? s : 0)) >> d;
    };
    m0 = align(m0, e0, s0);
    m1 = align(m1, e1, s1);
    md = align(md, ed, 0);
    if (!fp32) {  // bf16 Dst: each aligned term to a grid 13 bits coarser (§4 step 5)
        m0 = (m0 + 4096 - s0) & ~int64_t(0x1FFF);
        m1 = (m1 + 4096 - s1) & ~int64_t(0x1FFF);
        md = (md + 4096) & ~int64_t(0x1FFF);
    }
    const int64_t val = (sd ? -md : md) + (s0 ? -m0 : m0) + (s1 ? -m1 : m1);
    if (val == 0 || emax <= 0) return 0;  // exact cancellation, empty: +0 (§4 step 7)
    const uint32_t sign = val < 0;
    uint64_t man = uint64_t(val < 0 ? -val : val);
    int shift = 24 - bit_length64(man);   // left shift putting the leading one at bit 23
    if (wh && sign && man == 1) shift -= 27;  // Wormhole renormalisation of -1 unit (§4 step 8)
    int exp = emax - shift;
    if (!fp32) shift -= 16;                // keep 8 significant bits
    if (shift < 0) {
        const int right = -shift;
        man = (man + ((uint64_t(1) << right) >> 1)) >> right;  // half away from zero
    } else {
        man <<= shift;
    }
    if (!fp32) man <<= 16;
    exp += int((man >> 24) & 1);
    man &= MASK23;
    if (exp <= 0) return 0;
    if (exp >= 255) return sign << 31 | 0x7F800000u;
    return sign << 31 | uint32_t(exp) << 23 | uint32_t(man);
}

// ---- matmul, exact -------------------------------------------------------------------------------
//
// Per output row i and 8-lane K-group g the lane exponents eA + eB and their group maximum E do not
// depend on the fidelity phase (§4 step 3), so one pass over the lanes computes the aligned, rounded
// group sums of every phase; then each output datum replays its MVMULs through fpu_accumulate in the
// LLK order (phase outer, K-face inner, §6).
//
// Alignment of a lane to its group maximum: a 5x7-bit product m < 2^12 shifted right by d = E - e with
// round-half-up on the magnitude, i.e. round-half-away-from-zero of the signed m * 2^-d. That is
// computed in float: m * 2^-d is exact (12 significant bits, d clamped to 30: every d >= 13 rounds
// to 0 anyway), m * 2^-d +- 0.5 is exact (at most 13 significant bits for d <= 12, and |x| < 2^-1 for
// d >= 13), and the truncating conversion to int finishes the rounding. Every value is exact, so the
// result does not depend on the compiler contracting multiplies and adds.

// round half away from zero of an exactly representable x with |x| < 2^12 (see above)
inline int32_t round_away(float x) { return int32_t(x + std::copysign(0.5f, x)); }

constexpr int32_t EMAX_NONE = -(1 << 29);  // group maximum before any lane: the group stays empty

template <int NP>
struct GroupSums {
    alignas(64) int32_t emax[4][32];       // per K-group, per output column: max lane eA + eB
    alignas(64) int32_t sum[NP][4][32];    // per phase, K-group, column: signed aligned sum
};

template <int NP>
void group_sums_row(const SrcBOperand& B, const SrcAOperand& A, int row, GroupSums<NP>& out) {
    const int32_t* be = B.exp + row * 32;
    const float* bh = B.hi + row * 32;
    const float* bl = B.lo + row * 32;
    for (int g = 0; g < 4; ++g) {
        int lanes[8];
        int nl = 0;
        for (int kk = 0; kk < 8; ++kk)
            if (be[8 * g + kk] != ZERO_EXP) lanes[nl++] = 8 * g + kk;   // a zero in0 datum adds nothing
        int32_t* __restrict em = out.emax[g];
        for (int j = 0; j < 32; ++j) em[j] = EMAX_NONE;
        int32_t acc[NP][32];
        for (int p = 0; p < NP; ++p)
            for (int j = 0; j < 32; ++j) acc[p][j] = 0;
        for (int l = 0; l < nl; ++l) {
            const int k = lanes[l];
            const int32_t eb = be[k];
            const int32_t* __restrict ae = A.exp + k * 32;
            for (int j = 0; j < 32; ++j) {
                const int32_t e = ae[j] + eb;
                em[j] = e > em[j] ? e : em[j];
            }
        }
        for (int l = 0; l < nl; ++l) {
            const int k = lanes[l];
            const int32_t eb = be[k];
            const float fbh = bh[k], fbl = bl[k];
            const int32_t* __restrict ae = A.exp + k * 32;
            const float* __restrict ah = A.hi + k * 32;
            const float* __restrict al = A.lo + k * 32;
            alignas(64) uint32_t scale_bits[32];
            for (int j = 0; j < 32; ++j) {
                int32_t t = ae[j] + eb - em[j];          // -d <= 0
                t = t < -30 ? -30 : t;
                scale_bits[j] = uint32_t(t + 127) << 23;  // 2^-d as a float
            }
            alignas(64) float scale[32];
            std::memcpy(scale, scale_bits, sizeof scale);
            // phase p uses the SrcA slice of phase bit 0 and the SrcB slice of phase bit 1 (§3.1)
            for (int j = 0; j < 32; ++j) {
                const float xh = ah[j] * scale[j];
                acc[0][j] += round_away(xh * fbh);
                if constexpr (NP > 1) acc[NP > 1 ? 1 : 0][j] += round_away(al[j] * scale[j] * fbh);
                if constexpr (NP > 2) acc[NP > 2 ? 2 : 0][j] += round_away(xh * fbl);
                if constexpr (NP > 3) acc[NP > 3 ? 3 : 0][j] += round_away(al[j] * scale[j] * fbl);
            }
        }
        for (int p = 0; p < NP; ++p)
            for (int j = 0; j < 32; ++j) out.sum[p][g][j] = acc[p][j];
    }
}

template <int NP>
void matmul_exact(uint32_t* dst, const SrcBOperand& B, const SrcAOperand& A, bool fp32, bool wh) {
    GroupSums<NP> gs;
    for (int i = 0; i < 32; ++i) {
        group_sums_row<NP>(B, A, i, gs);
        for (int j = 0; j < 32; ++j) {
            uint32_t* d = dst + face_index(i, j);
            uint32_t v = *d;
            for (int p = 0; p < NP; ++p) {
                const int adj = phase_exp_adjust(p) - 127;
                for (int kf = 0; kf < 2; ++kf) {
                    int s[2], e[2];
                    int64_t m[2];
                    for (int h = 0; h < 2; ++h) {        // numerics.group_term
                        const int g = 2 * kf + h;
                        const int32_t ex = gs.emax[g][j] + adj;
                        const int32_t sm = gs.sum[p][g][j];
                        const bool live = ex > 0;
                        s[h] = live && sm < 0;
                        e[h] = live ? ex : 0;
                        m[h] = live ? int64_t(sm < 0 ? -sm : sm) << 13 : 0;
                    }
                    v = accumulate(v, s[0], e[0], m[0], s[1], e[1], m[1], fp32, wh);
                }
            }
            *d = v;
        }
    }
}

// ---- matmul, fast ----------------------------------------------------------------------------------

// C (row-major 32x32) += X (32x32, [i][k]) @ Y ([k][j]) [+ X2 @ Y2].
template <bool TWO>
void gemm32(float* __restrict C, const float* __restrict X, const float* __restrict Y,
            const float* __restrict X2, const float* __restrict Y2) {
    for (int i = 0; i < 32; ++i) {
        alignas(64) float c[32];
        for (int j = 0; j < 32; ++j) c[j] = C[i * 32 + j];
        for (int k = 0; k < 32; ++k) {
            const float x = X[i * 32 + k];
            const float* __restrict y = Y + k * 32;
            if (TWO) {
                const float x2 = X2[i * 32 + k];
                const float* __restrict y2 = Y2 + k * 32;
                for (int j = 0; j < 32; ++j) c[j] += x * y[j] + x2 * y2[j];
            } else {
                for (int j = 0; j < 32; ++j) c[j] += x * y[j];
            }
        }
        for (int j = 0; j < 32; ++j) C[i * 32 + j] = c[j];
    }
}

void matmul_fast(uint32_t* dst, const SrcBOperand& B, const SrcAOperand& A, Fidelity fid) {
    alignas(64) float C[TILE_DATUMS];
    for (int i = 0; i < 32; ++i)
        for (int h = 0; h < 2; ++h) std::memcpy(C + i * 32 + 16 * h, dst + face_index(i, 16 * h), 64);
    // golden._fidelity_operands: (in0 operand, in1 operand) per term
    switch (fid) {
        case Fidelity::LoFi: gemm32<false>(C, B.f_hi, A.f_hi, nullptr, nullptr); break;
        case Fidelity::HiFi2: gemm32<false>(C, B.f_hi, A.f_full, nullptr, nullptr); break;
        case Fidelity::HiFi3: gemm32<true>(C, B.f_hi, A.f_full, B.f_lo, A.f_hi); break;
        default: gemm32<false>(C, B.f_full, A.f_full, nullptr, nullptr); break;
    }
    for (int i = 0; i < 32; ++i)
        for (int h = 0; h < 2; ++h) std::memcpy(dst + face_index(i, 16 * h), C + i * 32 + 16 * h, 64);
}

// numerics.elwadd with a zero Dst, one datum.
inline uint32_t elwadd_one(uint32_t a, uint32_t b, bool fp32, bool wh) {
    a &= 0x7FFFF;
    b &= 0x7FFFF;
    if ((a & 0x3FFFF) < 0x400) a = 0;
    if ((b & 0x3FFFF) < 0x400) b = 0;
    if ((a & 0x3FFFF) < (b & 0x3FFFF)) {
        const uint32_t t = a;
        a = b;
        b = t;
    }
    const int sa = int(a >> 18) & 1, ea = int(a >> 10) & 0xFF;
    const int sb = int(b >> 18) & 1, eb = int(b >> 10) & 0xFF;
    const int64_t ma = a ? int64_t((a & 0x3FF) | 0x400) : 0;
    int64_t mb = b ? int64_t((b & 0x3FF) | 0x400) : 0;
    const int diff = ea - eb;
    if (diff >= 12)
        mb = 0;
    else if (diff > 0)
        mb = (mb + (int64_t(1) << (diff - 1))) >> diff;
    const int64_t m = (sa == sb ? ma + mb : ma - mb) << 13;
    return accumulate(0, sa, ea, m, 0, 0, 0, fp32, wh);
}

}  // namespace

// =================================================================================================

uint32_t tile_bytes(DataFormat f) {
    switch (f) {
        case DataFormat::Float32: return 4096;
        case DataFormat::Float16_b: return 2048;
        case DataFormat::Bfp8_b: return 1088;
        case DataFormat::Bfp4_b: return 576;
        default: return 0;
    }
}

int fidelity_phases(Fidelity f) {
    switch (f) {
        case Fidelity::HiFi2: return 2;
        case Fidelity::HiFi3: return 3;
        case Fidelity::HiFi4: return 4;
        default: return 1;
    }
}

void transpose_datums(uint32_t* d) {
    uint32_t t[TILE_DATUMS];
    auto at = [](uint32_t r, uint32_t c) { return ((r / 16) * 2 + c / 16) * 256 + (r % 16) * 16 + c % 16; };
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = 0; c < 32; ++c) t[at(c, r)] = d[at(r, c)];
    std::memcpy(d, t, sizeof t);
}

void unpack_src(const uint8_t* t, DataFormat fmt, bool fp32_dest_acc, uint32_t* out) {
    switch (fmt) {
        case DataFormat::Float32:
            if (fp32_dest_acc)
                for (int i = 0; i < TILE_DATUMS; ++i) out[i] = src19_from_fp32_tf32(load_le32(t + 4 * i));
            else
                for (int i = 0; i < TILE_DATUMS; ++i) out[i] = src19_from_fp32_bf16(load_le32(t + 4 * i));
            break;
        case DataFormat::Float16_b:
            for (int i = 0; i < TILE_DATUMS; ++i) out[i] = src19_from_bf16(load_le16(t + 2 * i));
            break;
        case DataFormat::Bfp8_b:
        case DataFormat::Bfp4_b: {
            const int mb = bfp_mag_bits(fmt);
            for (int i = 0; i < TILE_DATUMS; ++i)
                out[i] = src19_from_bf16(bfp_to_bf16(t[i >> 4], bfp_code(t, fmt, i), mb));
            break;
        }
        default:
            for (int i = 0; i < TILE_DATUMS; ++i) out[i] = 0;
            break;
    }
}

void prepare_srca(const uint32_t* src19, const MathConfig& cfg, SrcAOperand& out) {
    out.fast = cfg.fast;
    for (int k = 0; k < 32; ++k) {
        for (int n = 0; n < 32; ++n) {
            const uint32_t v = src19[face_index(k, n)] & 0x7FFFF;
            const int idx = k * 32 + n;
            if (cfg.fast) {  // golden._fidelity_operands, in1 side
                const uint32_t b = v << 13;
                out.f_full[idx] = f32_of(b & 0xFFFFC000u);
                out.f_hi[idx] = f32_of(b & 0xFFF80000u);
                continue;
            }
            const uint32_t e = (v >> 10) & 0xFF;
            const uint32_t man = (v & 0x3FF) | 0x400;
            const float sign = (v >> 18) ? -1.0f : 1.0f;
            out.exp[idx] = e ? int32_t(e) : ZERO_EXP;
            out.hi[idx] = e ? sign * float(man >> 6) : 0.0f;
            out.lo[idx] = e ? sign * float((man >> 1) & 31) : 0.0f;
        }
    }
}

void prepare_srcb(const uint32_t* src19, const MathConfig& cfg, SrcBOperand& out) {
    out.fast = cfg.fast;
    for (int m = 0; m < 32; ++m) {
        for (int k = 0; k < 32; ++k) {
            const uint32_t v = src19[face_index(m, k)] & 0x7FFFF;
            const int idx = m * 32 + k;
            if (cfg.fast) {  // golden._fidelity_operands, in0 side
                const uint32_t b = v << 13;
                out.f_full[idx] = f32_of(b);
                out.f_hi[idx] = f32_of(b & 0xFFFE0000u);
                out.f_lo[idx] = out.f_full[idx] - out.f_hi[idx];
                continue;
            }
            const uint32_t e = (v >> 10) & 0xFF;
            const uint32_t man = (v & 0x3FF) | 0x400;
            const float sign = (v >> 18) ? -1.0f : 1.0f;
            out.exp[idx] = e ? int32_t(e) : ZERO_EXP;
            out.hi[idx] = e ? sign * float(man >> 4) : 0.0f;
            out.lo[idx] = e ? sign * float((man & 15) << 3) : 0.0f;
        }
    }
}

uint32_t fpu_accumulate(uint32_t dst, int s0, int e0, int64_t m0, int s1, int e1, int64_t m1, bool fp32, bool wh) {
    return accumulate(dst, s0, e0, m0, s1, e1, m1, fp32, wh);
}

void matmul_tile(uint32_t* dst, const SrcBOperand& in0, const SrcAOperand& in1, const MathConfig& cfg) {
    if (cfg.fast) {
        matmul_fast(dst, in0, in1, cfg.fidelity);
        return;
    }
    const bool fp32 = cfg.fp32_dest_acc, wh = cfg.wormhole_quirk;
    switch (fidelity_phases(cfg.fidelity)) {
        case 1: matmul_exact<1>(dst, in0, in1, fp32, wh); break;
        case 2: matmul_exact<2>(dst, in0, in1, fp32, wh); break;
        case 3: matmul_exact<3>(dst, in0, in1, fp32, wh); break;
        default: matmul_exact<4>(dst, in0, in1, fp32, wh); break;
    }
}

void round_dst_fast(uint32_t* dst, const MathConfig& cfg) {
    if (cfg.fp32_dest_acc) return;
    for (int i = 0; i < TILE_DATUMS; ++i) dst[i] = pack_early(dst[i], true, DataFormat::Float16_b);
}

void add_tiles(const uint32_t* srca19, const uint32_t* srcb19, bool bcast_rows, const MathConfig& cfg, uint32_t* dst) {
    for (int i = 0; i < TILE_DATUMS; ++i) {
        int bi = i;
        if (bcast_rows) {  // row 0 of the same column: face 0 / face 1, face row 0
            bi = ((i >> 8) & 1) * 256 + (i & 15);
        }
        const uint32_t a = srca19[i], b = srcb19[bi];
        if (cfg.fast) {  // golden fast: float32 add, then the Dst rounding
            const uint32_t v = bits_of(f32_of(uint32_t(a << 13)) + f32_of(uint32_t(b << 13)));
            dst[i] = cfg.fp32_dest_acc ? v : pack_early(v, true, DataFormat::Float16_b);
        } else {
            dst[i] = elwadd_one(a, b, cfg.fp32_dest_acc, cfg.wormhole_quirk);
        }
    }
}

void copy_tile_to_dst(const uint8_t* l1_tile, DataFormat fmt, const MathConfig& cfg, bool unpack_to_dest_fp32,
                      uint32_t* dst) {
    if (fmt == DataFormat::Float32 && cfg.fp32_dest_acc && unpack_to_dest_fp32) {
        for (int i = 0; i < TILE_DATUMS; ++i) {
            const uint32_t b = load_le32(l1_tile + 4 * i);
            dst[i] = (b & 0x7F800000) ? b : 0;
        }
        return;
    }
    unpack_src(l1_tile, fmt, cfg.fp32_dest_acc, dst);
    for (int i = 0; i < TILE_DATUMS; ++i) dst[i] <<= 13;
}

bool pack_tile(const uint32_t* dst, DataFormat out, const MathConfig& cfg, bool relu, bool l1_acc, uint8_t* l1_tile) {
    if (tile_bytes(out) == 0) return false;
    if (l1_acc && out != DataFormat::Float32 && out != DataFormat::Float16_b) return false;
    const bool fp32 = cfg.fp32_dest_acc;
    const DataFormat inter = pack_src_format(out, fp32, cfg.bfp_pack_src);
    alignas(64) uint32_t v[TILE_DATUMS];
    for (int i = 0; i < TILE_DATUMS; ++i) {
        uint32_t d = dst[i];
        if (cfg.fast && !fp32) d = pack_early(d, true, DataFormat::Float16_b);  // golden._round_dst
        d = pack_early(d, fp32, inter);
        if (relu && (d >> 31)) d = 0;
        v[i] = d;
    }
    switch (out) {
        case DataFormat::Float32:
            for (int i = 0; i < TILE_DATUMS; ++i) {
                uint8_t* p = l1_tile + 4 * i;
                store_le32(p, l1_acc ? l1_acc_fp32(load_le32(p), v[i]) : v[i]);
            }
            break;
        case DataFormat::Float16_b:
            for (int i = 0; i < TILE_DATUMS; ++i) {
                uint8_t* p = l1_tile + 2 * i;
                store_le16(p, l1_acc ? l1_acc_bf16(load_le16(p), v[i] >> 16) : v[i] >> 16);
            }
            break;
        default: {  // block floats: one shared exponent per 16-datum face row
            const int mb = bfp_mag_bits(out);
            alignas(64) uint32_t bf[16];
            uint8_t codes[16];
            for (int g = 0; g < 64; ++g) {
                for (int i = 0; i < 16; ++i) bf[i] = v[16 * g + i] >> 16;
                bfp_pack_group(bf, mb, l1_tile[g], codes);
                if (out == DataFormat::Bfp8_b) {
                    std::memcpy(l1_tile + 64 + 16 * g, codes, 16);
                } else {
                    for (int i = 0; i < 8; ++i)
                        l1_tile[64 + 8 * g + i] = uint8_t((codes[2 * i] & 0xF) | (codes[2 * i + 1] & 0xF) << 4);
                }
            }
            break;
        }
    }
    return true;
}

}  // namespace kemu
