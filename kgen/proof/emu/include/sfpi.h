// kgen host model of SFPI's sfpi.h: the vector types and functions TT's LLK SFPU code is written
// in, executed on the host SFPU model (sfpu/kemu_sfpu.h). Each operation is the SFPU instruction
// the SFPI compiler emits for it, with that instruction's ISA semantics (the page is named where
// the operation is defined). A product added to something in one expression (a * b + c,
// c + a * b, c - a * b, a * b - c) is one SFPMAD, as the compiler fuses it; a product stored into
// a variable first is an SFPMUL (SFPMAD with VC = 0).
#pragma once

#include <cstdint>
#include <type_traits>

#include "sfpu/kemu_sfpu.h"
#include "sfpu/sfpi_constants.h"

#ifndef sfpi_inline
#define sfpi_inline inline __attribute__((always_inline))
#endif

namespace sfpi {
using kemu_sfpu::LANES;
using kemu_sfpu::Vec;
namespace ks = kemu_sfpu;

enum class RoundMode { Nearest, NearestEven = Nearest, Stochastic, Zero };
enum class DataLayout { Default, F32, FSrcB, I32, M32, SM32, U16, U32, I16, U8, I8, FP16A, FP16B, Float16a, Float16b };
enum class ExponentMode { Debiased, Biased };
enum class MantissaMode { NoImplicitOne, ImplicitOne, Pad8, Pad9 };
enum class ShiftMode { Logical, Arithmetic };
enum class LutSign { Update, Retain };
enum class LRegs : unsigned { LReg0 = 0, LReg1, LReg2, LReg3, LReg4, LReg5, LReg6, LReg7, LRegCount };

inline Vec splat(uint32_t x) {
    Vec v;
    for (int l = 0; l < LANES; ++l) v.u[l] = x;
    return v;
}
template <class F>
inline Vec map1(const Vec &a, F f) {
    Vec r;
    for (int l = 0; l < LANES; ++l) r.u[l] = f(a.u[l]);
    return r;
}
template <class F>
inline Vec map2(const Vec &a, const Vec &b, F f) {
    Vec r;
    for (int l = 0; l < LANES; ++l) r.u[l] = f(a.u[l], b.u[l]);
    return r;
}
// An assignment writes the enabled lanes only (the SFPU's predicated register write).
inline void assign(Vec &d, const Vec &s) {
    for (int l = 0; l < LANES; ++l)
        if (ks::lane_enabled(l)) d.u[l] = s.u[l];
}

// A lane mask: the result of a comparison (what SFPSETCC / SFPIADD's CC result would set).
struct vBool {
    bool m[LANES];
    vBool operator&&(const vBool &o) const { vBool r; for (int l = 0; l < LANES; ++l) r.m[l] = m[l] && o.m[l]; return r; }
    vBool operator||(const vBool &o) const { vBool r; for (int l = 0; l < LANES; ++l) r.m[l] = m[l] || o.m[l]; return r; }
    vBool operator!() const { vBool r; for (int l = 0; l < LANES; ++l) r.m[l] = !m[l]; return r; }
};

struct vBase {
    Vec v;
    Vec get() const { return v; }
};

struct vFloat;
struct vMul;
template <int K>
struct vIntT;      // integer views of an LReg: same bits, different operators
using vInt = vIntT<0>;
using vUInt = vIntT<1>;
using vMag = vIntT<2>;
using vSMag = vIntT<3>;
using vSMag16 = vIntT<4>;
using vSMag8 = vIntT<5>;
using vUInt8 = vIntT<6>;
using vUInt16 = vIntT<7>;
using vInt16 = vIntT<8>;

struct vFloat : vBase {
    vFloat() : vBase{splat(0)} {}
    vFloat(const Vec &x) : vBase{x} {}
    vFloat(float f) : vBase{splat(ks::u32(f))} {}       // SFPLOADI (FP32 in two halves): exact
    vFloat(double d) : vFloat(float(d)) {}
    vFloat(int i) : vFloat(float(i)) {}
    vFloat(const vMul &m);
    vFloat &operator=(const vFloat &o) { assign(v, o.v); return *this; }
    vFloat(const vFloat &o) = default;
    vFloat &operator+=(const vFloat &o);
    vFloat &operator-=(const vFloat &o);
    vFloat &operator*=(const vFloat &o);
    vFloat operator-() const;
};
// SFPMAD.md (SFPMUL.md / SFPADD.md are SFPMAD with VC = 0 / VA = 1.0).
inline Vec mad(const Vec &a, const Vec &b, const Vec &c) {
    Vec r;
    for (int l = 0; l < LANES; ++l) r.u[l] = ks::mad1(a.u[l], b.u[l], c.u[l]);
    return r;
}
struct vMul {       // a product not yet rounded: becomes SFPMAD with what it is added to
    Vec a, b;
};
inline vFloat::vFloat(const vMul &m) : vBase{mad(m.a, m.b, splat(0))} {}
inline Vec neg(const Vec &x) { return map1(x, [](uint32_t u) { return u ^ 0x80000000u; }); }   // SFPMOV compsign: exact
inline vFloat vFloat::operator-() const { return vFloat(neg(v)); }
inline vMul operator*(const vFloat &a, const vFloat &b) { return {a.v, b.v}; }
inline vMul operator*(const vFloat &a, float b) { return {a.v, splat(ks::u32(b))}; }
inline vMul operator*(float a, const vFloat &b) { return {splat(ks::u32(a)), b.v}; }
inline vMul operator*(const vMul &a, const vFloat &b) { return {vFloat(a).v, b.v}; }
inline vMul operator*(const vFloat &a, const vMul &b) { return {a.v, vFloat(b).v}; }
inline vMul operator*(const vMul &a, const vMul &b) { return {vFloat(a).v, vFloat(b).v}; }
inline vMul operator*(const vMul &a, float b) { return {vFloat(a).v, splat(ks::u32(b))}; }
inline vMul operator*(float a, const vMul &b) { return {splat(ks::u32(a)), vFloat(b).v}; }
inline vFloat operator+(const vMul &m, const vFloat &c) { return vFloat(mad(m.a, m.b, c.v)); }
inline vFloat operator+(const vFloat &c, const vMul &m) { return vFloat(mad(m.a, m.b, c.v)); }
inline vFloat operator+(const vMul &m, float c) { return m + vFloat(c); }
inline vFloat operator+(float c, const vMul &m) { return m + vFloat(c); }
inline vFloat operator+(const vMul &m, const vMul &n) { return m + vFloat(n); }
inline vFloat operator-(const vMul &m, const vFloat &c) { return vFloat(mad(m.a, m.b, neg(c.v))); }
inline vFloat operator-(const vFloat &c, const vMul &m) { return vFloat(mad(neg(m.a), m.b, c.v)); }
inline vFloat operator-(const vMul &m, float c) { return m - vFloat(c); }
inline vFloat operator-(float c, const vMul &m) { return vFloat(c) - m; }
inline vFloat operator-(const vMul &m, const vMul &n) { return vFloat(m) - n; }
inline vFloat operator+(const vFloat &a, const vFloat &b) { return vFloat(mad(a.v, splat(ks::ONE), b.v)); }
inline vFloat operator-(const vFloat &a, const vFloat &b) { return vFloat(mad(b.v, splat(0xbf800000u), a.v)); }
inline vFloat operator+(const vFloat &a, float b) { return a + vFloat(b); }
inline vFloat operator+(float a, const vFloat &b) { return vFloat(a) + b; }
inline vFloat operator-(const vFloat &a, float b) { return a - vFloat(b); }
inline vFloat operator-(float a, const vFloat &b) { return vFloat(a) - b; }
inline vFloat operator-(const vMul &m) { return -vFloat(m); }
inline vFloat &vFloat::operator+=(const vFloat &o) { return *this = *this + o; }
inline vFloat &vFloat::operator-=(const vFloat &o) { return *this = *this - o; }
inline vFloat &vFloat::operator*=(const vFloat &o) { return *this = vFloat(*this * o); }

template <int K>
struct vIntT : vBase {
    vIntT() : vBase{splat(0)} {}
    vIntT(const Vec &x) : vBase{x} {}
    vIntT(int i) : vBase{splat(uint32_t(i))} {}        // SFPLOADI
    vIntT(unsigned i) : vBase{splat(i)} {}
    vIntT(long i) : vBase{splat(uint32_t(i))} {}
    vIntT(unsigned long i) : vBase{splat(uint32_t(i))} {}
    template <int J>
    vIntT(const vIntT<J> &o) : vBase{o.v} {}
    vIntT(const vIntT &o) = default;
    vIntT &operator=(const vIntT &o) { assign(this->v, o.v); return *this; }
    template <int J>
    vIntT &operator=(const vIntT<J> &o) { assign(this->v, o.v); return *this; }
    vIntT operator~() const { return vIntT(map1(v, [](uint32_t u) { return ~u; })); }     // SFPNOT
    vIntT operator-() const { return vIntT(map1(v, [](uint32_t u) { return 0u - u; })); }
    vIntT &operator+=(const vIntT &o) { return *this = *this + o; }
    vIntT &operator-=(const vIntT &o) { return *this = *this - o; }
    vIntT &operator&=(const vIntT &o) { return *this = *this & o; }
    vIntT &operator|=(const vIntT &o) { return *this = *this | o; }
    vIntT &operator^=(const vIntT &o) { return *this = *this ^ o; }
    vIntT &operator<<=(int n) { return *this = *this << n; }
    vIntT &operator>>=(int n) { return *this = *this >> n; }
    // SFPIADD.md: two's complement add / subtract.
    friend vIntT operator+(const vIntT &a, const vIntT &b) { return vIntT(map2(a.v, b.v, [](uint32_t x, uint32_t y) { return x + y; })); }
    friend vIntT operator-(const vIntT &a, const vIntT &b) { return vIntT(map2(a.v, b.v, [](uint32_t x, uint32_t y) { return x - y; })); }
    // SFPAND.md, SFPOR.md, SFPXOR.md
    friend vIntT operator&(const vIntT &a, const vIntT &b) { return vIntT(map2(a.v, b.v, [](uint32_t x, uint32_t y) { return x & y; })); }
    friend vIntT operator|(const vIntT &a, const vIntT &b) { return vIntT(map2(a.v, b.v, [](uint32_t x, uint32_t y) { return x | y; })); }
    friend vIntT operator^(const vIntT &a, const vIntT &b) { return vIntT(map2(a.v, b.v, [](uint32_t x, uint32_t y) { return x ^ y; })); }
    // SFPSHFT.md: logical shifts by an immediate.
    friend vIntT operator<<(const vIntT &a, int n) { return vIntT(map1(a.v, [n](uint32_t x) { return x << (n & 31); })); }
    friend vIntT operator>>(const vIntT &a, int n) { return vIntT(map1(a.v, [n](uint32_t x) { return x >> (n & 31); })); }
};

// ---- comparisons --------------------------------------------------------------------------
// Integers: SFPIADD.md with its CC result: the lane flag is the sign of a - b (two's complement,
// wrapping), or a - b == 0 for == / != (SFPSETCC.md EQ0 / NE0).
inline vBool icmp(const Vec &a, const Vec &b, int op) {
    vBool r;
    for (int l = 0; l < LANES; ++l) {
        const int32_t d = int32_t(a.u[l] - b.u[l]), e = int32_t(b.u[l] - a.u[l]);
        switch (op) {
            case 0: r.m[l] = d < 0; break;              // <
            case 1: r.m[l] = d >= 0; break;             // >=
            case 2: r.m[l] = e < 0; break;              // >
            case 3: r.m[l] = e >= 0; break;             // <=
            case 4: r.m[l] = d == 0; break;             // ==
            default: r.m[l] = d != 0; break;            // !=
        }
    }
    return r;
}
// Floats: against 0.0f, SFPSETCC.md on the register's bits as an int32 (so -0.0 is < 0 and != 0);
// otherwise the difference a - b (SFPMAD.md: flushed, rounded) tested the same way.
inline int32_t total_order_key(uint32_t u) { return int32_t(u ^ ((u & 0x80000000u) ? 0x7fffffffu : 0u)); }
inline vBool fcmp(const Vec &a, const Vec &b, int op) {
#if defined(ARCH_BLACKHOLE)
    // Blackhole: SFPI's compiler lowers the ordered compares to SFPGT / SFPLE (tenstorrent/sfpi-gcc,
    // expand_cmp), which order FP32 as sign-magnitude integers without flushing (BH SFPGT.md, SFPLE.md)
    if (op < 4) {
        vBool r;
        for (int l = 0; l < LANES; ++l) {
            const int32_t ka = total_order_key(a.u[l]), kb = total_order_key(b.u[l]);
            r.m[l] = op == 0 ? ka < kb : op == 1 ? ka >= kb : op == 2 ? ka > kb : ka <= kb;
        }
        return r;
    }
#endif
    bool zero = true;
    for (int l = 0; l < LANES; ++l) zero = zero && b.u[l] == 0;
    const Vec d = zero ? a : mad(b, splat(0xbf800000u), a);
    vBool r;
    for (int l = 0; l < LANES; ++l) {
        const int32_t x = int32_t(d.u[l]);
        switch (op) {
            case 0: r.m[l] = x < 0; break;
            case 1: r.m[l] = x >= 0; break;
            case 2: r.m[l] = x > 0; break;   // >: not negative and not zero
            case 3: r.m[l] = x <= 0; break;
            case 4: r.m[l] = x == 0; break;
            default: r.m[l] = x != 0; break;
        }
    }
    return r;
}
#define KEMU_SFPI_CMP(op, code)                                                                          \
    inline vBool operator op(const vFloat &a, const vFloat &b) { return fcmp(a.v, b.v, code); }          \
    inline vBool operator op(const vFloat &a, float b) { return fcmp(a.v, splat(ks::u32(b)), code); }    \
    inline vBool operator op(const vFloat &a, double b) { return a op float(b); }                        \
    inline vBool operator op(const vFloat &a, int b) { return a op float(b); }                           \
    inline vBool operator op(const vMul &a, float b) { return vFloat(a) op b; }                          \
    template <int K>                                                                                     \
    inline vBool operator op(const vIntT<K> &a, const vIntT<K> &b) { return icmp(a.v, b.v, code); }      \
    template <int K>                                                                                     \
    inline vBool operator op(const vIntT<K> &a, int b) { return icmp(a.v, splat(uint32_t(b)), code); }   \
    template <int K>                                                                                     \
    inline vBool operator op(const vIntT<K> &a, unsigned b) { return icmp(a.v, splat(b), code); }
KEMU_SFPI_CMP(<, 0)
KEMU_SFPI_CMP(>=, 1)
KEMU_SFPI_CMP(>, 2)
KEMU_SFPI_CMP(<=, 3)
KEMU_SFPI_CMP(==, 4)
KEMU_SFPI_CMP(!=, 5)
#undef KEMU_SFPI_CMP

// ---- v_if / v_elseif / v_else / v_endif over the condition-code stack -----------------------
// v_if pushes (SFPPUSHC) and sets the enabled lanes' flags to the condition; v_elseif
// complements against the stack top (SFPCOMPC), pushes and sets; v_else complements; v_endif pops
// every push. Outside any v_if the flags are off (SFPENCC); entering the first one turns them on.
class CCBlock {
    int pushes_ = 0;
    bool outermost_ = false;

public:
    CCBlock() {
        if (ks::st().depth == 0 && !ks::st().use_flags[0]) {
            outermost_ = true;
            ks::encc(true, true);
        }
    }
    ~CCBlock() {
        for (; pushes_ > 0; --pushes_) ks::popc();
        if (outermost_) ks::encc(false, true);
    }
    CCBlock(const CCBlock &) = delete;
    void open() { ks::pushc(); ++pushes_; }
    void cond_if(const vBool &c) { open(); ks::setcc(c.m); }
    void cond_elseif(const vBool &c) { ks::compc(); ks::pushc(); ++pushes_; ks::setcc(c.m); }
    void cond_else() { ks::compc(); }
    static void cond_and(const vBool &c) { ks::setcc(c.m); }
};
}  // namespace sfpi

#define v_if(x)                      \
    {                                \
        ::sfpi::CCBlock kemu_cc_;    \
        kemu_cc_.cond_if(x);         \
        {
#define v_elseif(x)             \
    }                           \
    kemu_cc_.cond_elseif(x);    \
    {
#define v_else         \
    }                  \
    kemu_cc_.cond_else(); \
    {
#define v_endif \
    }           \
    }
#define v_block      \
    {                \
        ::sfpi::CCBlock kemu_cc_;  \
        kemu_cc_.open();           \
        {
#define v_endblock \
    }              \
    }
#define v_and(x) ::sfpi::CCBlock::cond_and(x)

#include "sfpu/sfpi_regs.h"
#include "sfpu/sfpi_lib.h"
