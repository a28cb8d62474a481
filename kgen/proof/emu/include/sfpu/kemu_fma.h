// SFPMAD's arithmetic, bit for bit: the "partially fused" multiply-add the ISA pages describe
// (tenstorrent/tt-isa-documentation WormholeB0/.../SFPMAD.md and BlackholeA0/.../SFPMAD.md, whose
// bit-perfect software model is Miscellaneous/FMA/README.md): denormal inputs are zero; the
// 48-bit product keeps 3 extra low bits plus a sticky bit after dropping 23 bits (4 more bits than
// FP32, not rounded); it is aligned with the addend by a shift whose sticky bit survives only if
// something is left; one round to nearest even. Wormhole flushes every zero / denormal result to
// +0 and lets NaNs carry mantissa bits (at least 0x7f800001); Blackhole keeps the sign of zero,
// flushes denormals after rounding to signed zero and emits the canonical NaN 0x7fc00000.
#pragma once

#include <cstdint>

namespace kemu_sfpu {

struct MadOperand {
    int32_t exp;      // biased exponent
    uint32_t man;     // with the hidden bit; 0 for zero and denormals (flushed)
    uint32_t sign;    // 0 or 0x80000000
};
inline MadOperand mad_operand(uint32_t v) {
    const int32_t e = int32_t((v >> 23) & 0xff);
    return {e, e == 0 ? 0u : ((v & 0x7fffffu) | 0x800000u), v & 0x80000000u};
}
// Shift right keeping a sticky LSB only when bits remain (nothing remains past 31 places).
inline uint32_t shift_keep_sticky(uint32_t v, int32_t places) {
    if (places >= 32) return 0;
    const uint32_t out = v >> places;
    return out ? (out | uint32_t((out << places) != v)) : 0;
}
inline bool is_nan_operand(const MadOperand &o) { return o.exp == 255 && o.man != 0x800000u; }
inline bool is_inf_operand(const MadOperand &o) { return o.exp == 255 && o.man == 0x800000u; }

// The product x * y with 26 fraction bits (23 + G, R, S), the low 23 bits of the exact
// product folded into the sticky bit; exponent biased as FP32's.
struct Product {
    uint32_t man;
    int32_t exp;
    uint32_t sign;
};
inline Product mad_product(const MadOperand &x, const MadOperand &y) {
    const uint64_t exact = (uint64_t(x.man) * uint64_t(y.man)) << 3;
    return {uint32_t(exact >> 23) | uint32_t((exact & 0x7fffffu) != 0), x.exp + y.exp - 127, x.sign ^ y.sign};
}

// Sum of the aligned product and addend: magnitude, sign and exponent before normalising.
struct Sum {
    uint32_t man;
    int32_t exp;
    uint32_t sign;
};
inline Sum mad_sum(Product p, uint32_t z_man3, int32_t z_exp, uint32_t z_sign) {
    const int32_t e = p.exp > z_exp ? p.exp : z_exp;
    uint32_t pm = p.exp < e ? shift_keep_sticky(p.man, e - p.exp) : p.man;
    uint32_t zm = z_exp < e ? shift_keep_sticky(z_man3, e - z_exp) : z_man3;
    const uint32_t sign = pm >= zm ? p.sign : z_sign;
    if (z_sign != sign) zm = ~zm;
    if (p.sign != sign) pm = ~pm;
    return {zm + pm + uint32_t(p.sign != z_sign), e, sign};
}

// Round the 26-fraction-bit mantissa to FP32 bits (sign not included), nearest even.
inline uint32_t mad_round(uint32_t man, int32_t exp) {
    uint32_t r = (uint32_t(exp) << 23) + ((man >> 3) & 0x7fffffu);
    if (((man & 7) + (r & 1)) > 4) r += 1;
    return r;
}

inline uint32_t mad_wormhole(uint32_t xa, uint32_t ya, uint32_t za) {
    const MadOperand x = mad_operand(xa), y = mad_operand(ya), z = mad_operand(za);
    Product p = mad_product(x, y);
    uint32_t nan = 0;   // a NaN result keeps collecting mantissa bits below
    if (x.exp == 255 || y.exp == 255 || p.exp >= 255 || z.exp == 255) {
        const bool big_product = x.exp == 255 || y.exp == 255 || p.exp >= 255;
        if ((x.exp == 255 && (x.man != 0x800000u || y.man == 0)) || (y.exp == 255 && (y.man != 0x800000u || x.man == 0))
            || (is_inf_operand(z) && big_product && z.sign != p.sign)) {
            nan = p.sign | 0x7f800001u;
        } else if (is_nan_operand(z)) {
            nan = z.sign | 0x7f800001u;
        } else if (z.exp == 255) {
            return za;
        } else {
            return p.sign | 0x7f800000u;
        }
        if (p.exp > 255) p.exp = 255;
    }
    if (p.man == 0 || p.exp < 0) {
        if (!nan) return z.man ? za : 0u;
        p.man = 0;
        p.exp = 0;
    }
    Sum s = mad_sum(p, z.man << 3, z.exp, z.sign);
    if (s.man == 0) return nan;
    int32_t shift = 5 - __builtin_clz(s.man);
    s.exp += shift;
    if (s.exp >= 255) return nan ? nan : (s.sign | 0x7f800000u);
    if (s.exp < 0) return nan;
    // Normalising right keeps only the lowest bit as sticky (a hardware quirk the page's model has).
    const uint32_t man = shift <= 0 ? s.man << -shift : (s.man >> shift) | (s.man & 1);
    const uint32_t r = mad_round(man, s.exp);
    if ((r >> 23) == 0) return nan;
    return (nan ? nan : s.sign) | r;
}

inline uint32_t mad_blackhole(uint32_t xa, uint32_t ya, uint32_t za) {
    const MadOperand x = mad_operand(xa), y = mad_operand(ya), z = mad_operand(za);
    const Product p = mad_product(x, y);
    if (x.exp == 255 || y.exp == 255 || p.exp >= 255 || z.exp == 255) {
        if ((x.exp == 255 && (x.man != 0x800000u || y.man == 0)) || (y.exp == 255 && (y.man != 0x800000u || x.man == 0))
            || is_nan_operand(z) || (is_inf_operand(z) && (x.exp == 255 || y.exp == 255) && z.sign != p.sign))
            return 0x7fc00000u;
        if (z.exp == 255) return za;
        return p.sign | 0x7f800000u;
    }
    if (p.man == 0 || p.exp < 0) return z.man ? za : (z.sign & p.sign);
    Sum s = mad_sum(p, z.man << 3, z.exp, z.sign);
    if (s.man == 0) return z.sign & p.sign;
    int32_t shift = 5 - __builtin_clz(s.man);
    s.exp += shift;
    if (s.exp >= 255) return s.sign | 0x7f800000u;
    if (s.exp <= 0) {
        shift += 1;
        s.exp = 0;
    }
    const uint32_t man = shift <= 0 ? s.man << -shift : (s.man >> shift) | uint32_t((s.man & uint32_t(shift | 1)) != 0);
    uint32_t r = mad_round(man, s.exp);
    if ((r >> 23) == 0) r = 0;
    return s.sign | r;
}

}  // namespace kemu_sfpu
