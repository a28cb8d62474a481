// kgen host SFPI: the library functions, each the instruction named beside it, with the semantics of
// that instruction's page in tenstorrent/tt-isa-documentation (WormholeB0/.../TensixCoprocessor/).
#pragma once

namespace sfpi {

struct vFloat16b {};   // convert<vFloat16b>: FP32 rounded to BF16 precision, kept as FP32
struct vFloat16a {};
template <class T>
struct VecOf { using type = T; };

// as<T> / reinterpret<T>: the same bits viewed as another type (no instruction).
template <class T, class S>
inline T as(const S &x) { return T(Vec(static_cast<const vBase &>(x).v)); }
template <class T>
inline T as(const vMul &x) { return T(vFloat(x).v); }
template <class T, class S>
inline T reinterpret(const S &x) { return as<T>(x); }

// convert<T>(x, mode)
template <class T, class S>
inline auto convert(const S &x, RoundMode mode = RoundMode::Nearest) {
    if (mode != RoundMode::Nearest) ks::not_modelled("stochastic / toward-zero rounding in convert");
    const Vec v = static_cast<const vBase &>(x).v;
    if constexpr (std::is_same_v<T, vFloat16b>) {           // SFPSTOCHRND_FloatFloat.md, FP32 -> FP16B
        return vFloat(map1(v, ks::rnd_fp16b));
    } else if constexpr (std::is_same_v<T, vFloat16a>) {
        return vFloat(map1(v, ks::rnd_fp16a));
    } else if constexpr (std::is_same_v<T, vSMag16> || std::is_same_v<T, vInt16>) {   // SFPSTOCHRND_FloatInt.md
        return T(map1(v, [](uint32_t c) { return ks::rnd_int(c, true, 32767); }));
    } else if constexpr (std::is_same_v<T, vUInt16>) {
        return T(map1(v, [](uint32_t c) { return ks::rnd_int(c, false, 65535); }));
    } else if constexpr (std::is_same_v<T, vSMag8>) {
        return T(map1(v, [](uint32_t c) { return ks::rnd_int(c, true, 127); }));
    } else if constexpr (std::is_same_v<T, vUInt8>) {
        return T(map1(v, [](uint32_t c) { return ks::rnd_int(c, false, 255); }));
    } else if constexpr (std::is_same_v<T, vSMag> && !std::is_same_v<S, vFloat>) {   // two's complement -> sign-magnitude
        return T(map1(v, [](uint32_t c) { return int32_t(c) < 0 ? (0x80000000u | (0u - c)) : c; }));
    } else if constexpr (std::is_same_v<T, vFloat>) {
        if constexpr (std::is_same_v<S, vInt>) {             // two's complement -> sign-magnitude, then SFPCAST
            return vFloat(map1(v, [](uint32_t c) {
                const uint32_t sm = int32_t(c) < 0 ? (0x80000000u | (0u - c)) : c;
                return ks::cast_sm_to_fp32(c == 0x80000000u ? 0xffffffffu : sm);
            }));
        } else {                                             // SFPCAST.md: sign-magnitude -> FP32, RNE
            return vFloat(map1(v, ks::cast_sm_to_fp32));
        }
    } else {
        static_assert(sizeof(T) == 0, "convert<T>: target not modelled");
    }
}
inline vFloat int32_to_float(const vInt &x, int round_mode = 0) { (void)round_mode; return convert<vFloat>(x); }
inline vFloat float_to_fp16b(const vFloat &x, int round_mode = 0) { (void)round_mode; return convert<vFloat16b>(x); }
inline vFloat float_to_fp16a(const vFloat &x, int round_mode = 0) { (void)round_mode; return convert<vFloat16a>(x); }

// SFPABS.md: float mode clears the sign (not of -NaN); integer mode negates two's complement.
inline vFloat abs(const vFloat &x) {
    return vFloat(map1(x.v, [](uint32_t u) { return (u >= 0x80000000u && u < 0xff800000u) ? (u & 0x7fffffffu) : u; }));
}
template <int K>
inline vIntT<K> abs(const vIntT<K> &x) {
    return vIntT<K>(map1(x.v, [](uint32_t u) { return u >= 0x80000000u ? 0u - u : u; }));
}
inline vFloat abs(const vMul &x) { return abs(vFloat(x)); }

// SFPEXEXP.md: the exponent field, minus 127 unless Biased.
inline vInt exexp(const vFloat &x, ExponentMode m = ExponentMode::Debiased) {
    const uint32_t bias = m == ExponentMode::Biased ? 0 : 127;
    return vInt(map1(x.v, [bias](uint32_t u) { return ((u >> 23) & 0xff) - bias; }));
}
inline vInt exexp_nodebias(const vFloat &x) { return exexp(x, ExponentMode::Biased); }
// SFPEXMAN.md: the mantissa, with the hidden bit (PAD8) or without (PAD9).
inline vMag exman(const vFloat &x, MantissaMode m = MantissaMode::NoImplicitOne) {
    const uint32_t hidden = (m == MantissaMode::ImplicitOne || m == MantissaMode::Pad8) ? (1u << 23) : 0;
    return vMag(map1(x.v, [hidden](uint32_t u) { return hidden + (u & 0x7fffffu); }));
}
inline vMag exman8(const vFloat &x) { return exman(x, MantissaMode::ImplicitOne); }
inline vMag exman9(const vFloat &x) { return exman(x, MantissaMode::NoImplicitOne); }
// SFPSHFT.md: shift left by a signed amount (negative: logical right).
template <int K, int J>
inline vIntT<K> shft(const vIntT<K> &x, const vIntT<J> &n, ShiftMode m = ShiftMode::Logical) {
    if (m != ShiftMode::Logical) ks::not_modelled("arithmetic SFPSHFT");
    return vIntT<K>(map2(x.v, n.v, [](uint32_t b, uint32_t c) {
        const int32_t s = int32_t(c);
        return s >= 0 ? b << (s & 31) : b >> ((-s) & 31);
    }));
}
template <int K>
inline vIntT<K> shft(const vIntT<K> &x, int n, ShiftMode m = ShiftMode::Logical) { return shft(x, vInt(n), m); }
// SFPSETEXP.md: the exponent field from the low 8 bits of an integer.
template <int K>
inline vFloat setexp(const vFloat &x, const vIntT<K> &e) {
    return vFloat(map2(x.v, e.v, [](uint32_t c, uint32_t b) { return (c & 0x807fffffu) | ((b & 0xff) << 23); }));
}
inline vFloat setexp(const vFloat &x, int e) { return setexp(x, vInt(e)); }
inline vFloat setexp(const vFloat &x, unsigned e) { return setexp(x, vInt(e)); }
// SFPSETMAN.md: the mantissa from the low 23 bits of an integer.
template <int K>
inline vFloat setman(const vFloat &x, const vIntT<K> &m) {
    return vFloat(map2(x.v, m.v, [](uint32_t c, uint32_t b) { return (c & 0xff800000u) | (b & 0x7fffffu); }));
}
inline vFloat setman(const vFloat &x, int m) { return setman(x, vInt(m)); }
// SFPSETSGN.md: the sign from an immediate or from another register's bit 31.
inline vFloat setsgn(const vFloat &x, int s) {
    return vFloat(map1(x.v, [s](uint32_t c) { return (c & 0x7fffffffu) | (uint32_t(s & 1) << 31); }));
}
inline vFloat setsgn(const vFloat &x, const vFloat &s) {
    return vFloat(map2(x.v, s.v, [](uint32_t c, uint32_t b) { return (c & 0x7fffffffu) | (b & 0x80000000u); }));
}
template <int K>
inline vFloat setsgn(const vFloat &x, const vIntT<K> &s) { return setsgn(x, vFloat(s.v)); }
inline vFloat copysgn(const vFloat &x, const vFloat &s) { return setsgn(x, s); }
// copyman: SFPSETMAN with the mantissa of another float.
inline vFloat copyman(const vFloat &x, const vFloat &m) { return setman(x, vInt(m.v)); }
// SFPDIVP2: add to the exponent field (not for Inf/NaN).
inline vFloat addexp(const vFloat &x, int n) {
    return vFloat(map1(x.v, [n](uint32_t c) {
        const uint32_t e = (c >> 23) & 0xff;
        if (e == 255) return c;
        return (c & 0x807fffffu) | (((e + uint32_t(n)) & 0xff) << 23);
    }));
}

// SFPSWAP.md with VEC_MIN_MAX: min and max by sign-magnitude order.
inline Vec vmin(const Vec &a, const Vec &b) { return map2(a, b, [](uint32_t x, uint32_t y) { return ks::signmag_smaller(y, x) ? y : x; }); }
inline Vec vmax(const Vec &a, const Vec &b) { return map2(a, b, [](uint32_t x, uint32_t y) { return ks::signmag_smaller(y, x) ? x : y; }); }
inline vFloat min(const vFloat &a, const vFloat &b) { return vFloat(vmin(a.v, b.v)); }
inline vFloat max(const vFloat &a, const vFloat &b) { return vFloat(vmax(a.v, b.v)); }
template <int K>
inline vIntT<K> min(const vIntT<K> &a, const vIntT<K> &b) { return vIntT<K>(vmin(a.v, b.v)); }
template <int K>
inline vIntT<K> max(const vIntT<K> &a, const vIntT<K> &b) { return vIntT<K>(vmax(a.v, b.v)); }
// clamp(x, lo, hi) = min(max(x, lo), hi): two SFPSWAPs.
inline vFloat clamp(const vFloat &x, const vFloat &lo, const vFloat &hi) { return min(max(x, lo), hi); }
// symmetric_clamp(x, m) = copysgn(min(abs(x), m), x), as SFPI's library has it.
inline vFloat symmetric_clamp(const vFloat &x, const vFloat &m) { return copysgn(min(abs(x), m), x); }

// Lane tests on FP32 bits.
inline vBool is_nan(const vFloat &x) { vBool r; for (int l = 0; l < LANES; ++l) r.m[l] = (x.v.u[l] & 0x7fffffffu) > 0x7f800000u; return r; }
inline vBool is_inf(const vFloat &x) { vBool r; for (int l = 0; l < LANES; ++l) r.m[l] = (x.v.u[l] & 0x7fffffffu) == 0x7f800000u; return r; }
inline vBool is_finite(const vFloat &x) { vBool r; for (int l = 0; l < LANES; ++l) r.m[l] = (x.v.u[l] & 0x7f800000u) != 0x7f800000u; return r; }

// ---- LUTs: SFPLUT.md. vLut8si(slope, intercept) packs (slope << 8) | intercept. SFPI's library
// (tenstorrent/sfpi, sfpi_lib.h, sLut::convert) makes the 8-bit form: mantissa rounded half up
// to 4 bits, exponent field 127 - exp; below 2^-7 -> 0xff (zero), from 2.0 up -> 0x0f (1.9375).
inline uint32_t lut_mantissa_round(uint32_t u, int man_bits, int &exp) {
    uint32_t man = (u & 0x7fffffu) + (1u << (23 - man_bits - 1));
    exp = int((u >> 23) & 0xff);
    if (man >> 23) {
        ++exp;
        man = 0;
    }
    return man >> (23 - man_bits);
}
inline uint32_t to_lut8(float f) {
    const uint32_t u = ks::u32(f);
    int exp;
    const uint32_t man = lut_mantissa_round(u, 4, exp);
    exp -= 128;
    const uint32_t body = exp + 7 < 0 ? 0xffu : exp >= 0 ? 0x0fu : ((uint32_t(-1 - exp) << 4) | man);
    return ((u >> 31) << 7) | body;
}
struct vLut8si : vBase {
    vLut8si(const Vec &x) : vBase{x} {}
    vLut8si(float a, float c) : vBase{splat((to_lut8(a) << 8) | to_lut8(c))} {}
};
using vLut8 = vLut8si;
// vLut16ss / vLut16ii(e0, e1): two FP16 LUT entries, e0 in the low half. The float -> FP16 step
// is SFPI's (sfpi_lib.h, sLut::convert): mantissa rounded half up to 10 bits, exponent rebiased by
// 112; below 2^-15 -> 0x7c00 (which SFPLUTFP32 reads as zero), from 16.0 up -> 0x7bff.
inline uint32_t to_fp16(float f) {
    const uint32_t u = ks::u32(f);
    int exp;
    const uint32_t man = lut_mantissa_round(u, 10, exp);
    exp -= 112;
    const uint32_t body = exp < 0 ? 0x7c00u : exp >= 31 ? 0x7bffu : ((uint32_t(exp) << 10) | man);
    return ((u >> 31) << 15) | body;
}
// SFPLUTFP32.md Lut16ToFp32: exponent 31 reads as zero, exponent 0 as a normal number.
inline uint32_t lut16(uint32_t x) {
    x &= 0xffff;
    const uint32_t exp = (x >> 10) & 0x1f;
    return ((x >> 15) << 31) | ((exp == 0x1f ? 0 : 112 + exp) << 23) | ((x & 0x3ff) << 13);
}
struct vLut16ss : vBase {
    vLut16ss(const Vec &x) : vBase{x} {}
    vLut16ss(float e0, float e1) : vBase{splat((to_fp16(e1) << 16) | to_fp16(e0))} {}
};
using vLut16ii = vLut16ss;
using vLut16si = vLut16ss;
// SFPLUTFP32.md with FP16_6ENTRY_TABLE1: six FP16 (slope, intercept) pairs over |x| split at 0.5,
// 1, 1.5, 2 and 3; d = a * |x| + c as SFPMAD; LutSign::Retain copies x's sign onto d.
inline vFloat lut(const vFloat &x, const vLut16ss &a01, const vLut16ss &c01, const vLut16ss &a23, const vLut16ss &c23,
                  const vLut16ss &a45, const vLut16ss &c45, LutSign s = LutSign::Retain) {
    Vec r;
    for (int l = 0; l < LANES; ++l) {
        const uint32_t x3 = x.v.u[l], b = x3 & 0x7fffffffu;
        const float bf = ks::f32(b);
        const int i = bf < 1.0f ? 0 : bf < 2.0f ? 1 : 2;
        const int j = bf < 0.5f ? 0 : bf < 1.0f ? 16 : bf < 1.5f ? 0 : bf < 2.0f ? 16 : bf < 3.0f ? 0 : 16;
        const uint32_t as[3] = {a01.v.u[l], a23.v.u[l], a45.v.u[l]}, cs[3] = {c01.v.u[l], c23.v.u[l], c45.v.u[l]};
        uint32_t d = ks::mad1(lut16(as[i] >> j), b, lut16(cs[i] >> j));
        if (s == LutSign::Retain) d = (d & 0x7fffffffu) | (x3 & 0x80000000u);
        r.u[l] = d;
    }
    return vFloat(r);
}
// SFPLUT.md: three 8-bit (slope, intercept) pairs over |x| split at 1 and 2; d = a * |x| + c as
// SFPMAD; sfpi's lut() keeps x's sign (SGN_RETAIN), LutSign::Update leaves d's own.
inline vFloat lut(const vFloat &x, const vLut8si &l0, const vLut8si &l1, const vLut8si &l2, LutSign s = LutSign::Retain) {
    Vec r;
    for (int l = 0; l < LANES; ++l) {
        const uint32_t x3 = x.v.u[l], b = x3 & 0x7fffffffu;
        const float bf = ks::f32(b);
        const uint32_t coeffs = bf < 1.0f ? l0.v.u[l] : bf < 2.0f ? l1.v.u[l] : l2.v.u[l];
        uint32_t d = ks::mad1(ks::lut8(coeffs >> 8), b, ks::lut8(coeffs));
        if (s == LutSign::Retain) d = (d & 0x7fffffffu) | (x3 & 0x80000000u);
        r.u[l] = d;
    }
    return vFloat(r);
}
template <class... A>
inline vFloat lut2(A &&...) { ks::not_modelled("SFPLUTFP32 (lut2)"); }
template <class... A>
inline vFloat lut2_sign(A &&...) { ks::not_modelled("SFPLUTFP32 (lut2_sign)"); }
// SFPARECIP.md (Blackhole) with SFPARECIP_MOD1_RECIP: the sign kept, 1/|x| from the exponent and
// a 7-bit mantissa table (the page's ApproxRecip: below 2^-126 -> +Inf, from 2^126 on -> 0).
inline uint32_t approx_recip_magnitude(uint32_t x) {
    static constexpr uint8_t kTable[128] = {
        127, 125, 123, 121, 119, 117, 116, 114, 112, 110, 109, 107, 105, 104, 102, 100, 99, 97, 96, 94, 93, 91,
        90, 88, 87, 85, 84, 83, 81, 80, 79, 77, 76, 75, 74, 72, 71, 70, 69, 68, 66, 65, 64, 63, 62, 61, 60, 59,
        58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 40, 39, 38, 37, 36, 35, 35,
        34, 33, 32, 31, 31, 30, 29, 28, 28, 27, 26, 25, 25, 24, 23, 23, 22, 21, 21, 20, 19, 19, 18, 17, 17, 16,
        15, 15, 14, 14, 13, 12, 12, 11, 11, 10, 9, 9, 8, 8, 7, 7, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0};
    if (x < 0x00800000u) return 0x7f800000u;
    if (x >= 0x7e800000u) return 0;
    return ((253 - (x >> 23)) << 23) | (uint32_t(kTable[(x >> 16) & 0x7f]) << 16);
}
inline vFloat approx_recip(const vFloat &x) {
#if !defined(ARCH_BLACKHOLE)
    ks::not_modelled("SFPARECIP (a Blackhole instruction) on Wormhole");
#endif
    return vFloat(map1(x.v, [](uint32_t u) {
        const uint32_t sign = u & 0x80000000u;
        return sign + approx_recip_magnitude(u - sign);
    }));
}
template <class... A>
inline vFloat approx_exp(A &&...) { ks::not_modelled("SFPARECIP exp"); }
// nearby(cond): a scheduling hint on a condition; the condition itself.
inline vBool nearby(const vBool &c) { return c; }

// Scalars loaded by SFPLOADI: sFloat16b is a BF16 immediate (a float is truncated to its high 16
// bits; an integer is the BF16 bits), sFloat16a an FP16 immediate (bits only).
struct sFloat16b {
    uint32_t bits;
    sFloat16b(float f) : bits(ks::u32(f) >> 16) {}
    sFloat16b(double d) : sFloat16b(float(d)) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    sFloat16b(I i) : bits(uint32_t(i) & 0xffff) {}
    operator vFloat() const { return vFloat(splat(bits << 16)); }
};
struct sFloat16a {
    uint32_t bits;
    sFloat16a(float) : bits(0) { ks::not_modelled("an FP16A immediate from a float"); }
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    sFloat16a(I i) : bits(uint32_t(i) & 0xffff) {}
    operator vFloat() const { return vFloat(splat(ks::fp16a_to_fp32(bits))); }
};
inline vMul operator*(const vFloat &a, const sFloat16b &b) { return a * vFloat(b); }
inline vMul operator*(const vFloat &a, const sFloat16a &b) { return a * vFloat(b); }
inline vFloat operator+(const vMul &a, const sFloat16b &b) { return a + vFloat(b); }
inline vFloat operator+(const vFloat &a, const sFloat16b &b) { return a + vFloat(b); }

struct lreg_pressure {};
}  // namespace sfpi

// The raw builtin some LLK code calls: SFPMAD.md.
inline ::sfpi::Vec __builtin_rvtt_sfpmad(const ::sfpi::Vec &a, const ::sfpi::Vec &b, const ::sfpi::Vec &c, unsigned mod) {
    if (mod != 0) ::kemu_sfpu::not_modelled("SFPMAD with Mod1 flags");
    return ::sfpi::mad(a, b, c);
}
