// kgen host model of the Tensix Vector Unit (SFPU): 32 lanes, the LRegs, the lane flags and their
// stack, and the SFPU instructions the LLK SFPU code reaches, each as its ISA page's functional
// model states it (tenstorrent/tt-isa-documentation, WormholeB0/TensixTile/TensixCoprocessor/<INSTR>.md;
// the Blackhole pages state the same for these instructions). Where a page leaves a choice open, the
// choice is IEEE 754 and is said at the function.
//
// Dst as the SFPU sees it: rows of 16 datums (a tile is 64 rows: four 16x16 faces, face-major, the
// emulator's tile layout), each datum an FP32 bit pattern; with 16-bit Dst (fp32_dest off) the low
// 16 bits are zero (BF16 in the high half).
#pragma once

// GCC 12's loop induction-variable pass (-O1 and up) deletes the lane loops of a predicated
// register write in some inlined sequences (seen: three l_reg writes in a row vanish); the model's
// functions are compiled without that pass.
#pragma GCC optimize("no-tree-loop-optimize")

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sfpu/kemu_fma.h"

namespace kemu_sfpu {

constexpr int LANES = 32;
constexpr int STACK_DEPTH = 8;

struct Vec {
    uint32_t u[LANES];
};

inline float f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t u32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

struct State {
    uint32_t *dst = nullptr;     // the DST section the SFPU addresses (row r: dst + 16 * r)
    uint32_t dst_rows = 0;
    bool fp32_dest = false;      // ALU_ACC_CTRL_SFPU_Fp32_enabled
    uint32_t base_row = 0;       // the tile's first row (set_dst_write_addr)
    uint32_t rwc_dst = 0;        // the Dst read/write counter, in rows
    Vec lreg[16]{};              // LReg[0..7] general, LReg[11..14] programmable constants
    bool flags[LANES]{};         // LaneFlags
    bool use_flags[LANES]{};     // UseLaneFlagsForLaneEnable
    struct Entry { bool flags[LANES]; bool use_flags[LANES]; } stack[STACK_DEPTH]{};
    int depth = 0;
};

inline State g_state;   // one SFPU per kernel object (the pack thread's)
inline State &st() { return g_state; }

[[noreturn]] __attribute__((noinline)) inline void not_modelled(const char *what) {
    std::fprintf(stderr, "kgen SFPU model: %s is not modelled\n", what);
    std::abort();
}

// LaneEnabled: VectorUnit.md (lane flags, UseLaneFlagsForLaneEnable).
inline bool lane_enabled(int lane) { return !st().use_flags[lane] || st().flags[lane]; }

// Reset between kernels/harness runs: flags off, stack empty (SFPENCC at kernel start).
inline void reset_lanes() {
    State &s = st();
    for (int l = 0; l < LANES; ++l) s.flags[l] = s.use_flags[l] = false;
    s.depth = 0;
}

// ---- SFPMAD.md: VD = VA * VB + VC with the arch's partially fused arithmetic (sfpu/kemu_fma.h).
inline uint32_t mad1(uint32_t a, uint32_t b, uint32_t c) {
#if defined(ARCH_BLACKHOLE)
    return mad_blackhole(a, b, c);
#else
    return mad_wormhole(a, b, c);
#endif
}
constexpr uint32_t ONE = 0x3f800000u;

// ---- SFPSTOCHRND_FloatFloat.md with StochasticRounding off: FP32 -> BF16 keeps 7 mantissa bits,
// rounds the 16 discarded bits half up in magnitude (DiscardedBits << 7 >= 0x400000); Exp 0 -> 0,
// Exp 255 -> signed infinity.
inline uint32_t rnd_fp16b(uint32_t x) {
    const uint32_t exp = (x >> 23) & 0xff;
    if (exp == 0) return 0;
    if (exp == 255) return x & 0xff800000u;
    const uint32_t disc = x & 0xffff;
    x -= disc;
    if ((disc << 7) >= 0x400000u) x += 0x10000;
    return x;
}
// Same page, FP32 -> FP16A: 10 mantissa bits kept, the 13 discarded bits rounded half up.
inline uint32_t rnd_fp16a(uint32_t x) {
    const uint32_t exp = (x >> 23) & 0xff;
    if (exp == 0) return 0;
    if (exp == 255) return x & 0xff800000u;
    const uint32_t disc = x & 0x1fff;
    x -= disc;
    if ((disc << 10) >= 0x400000u) x += 0x2000;
    return x;
}
// SFPSTOCHRND_FloatInt.md, round to nearest (half up in magnitude): FP32 -> sign-magnitude integer
// saturating at max_mag; |x| < 0.5 -> 0; |x| >= 2^16 or NaN -> max_mag.
inline uint32_t rnd_int(uint32_t c, bool keep_sign, uint32_t max_mag) {
    uint32_t sign = keep_sign ? (c & 0x80000000u) : 0;
    const int32_t exp = int32_t((c >> 23) & 0xff) - 127;
    uint64_t mag;
    if (exp < -1) {
        mag = 0;
        sign = 0;
    } else if (exp >= 16) {
        mag = max_mag;
    } else {
        mag = 0x800000u | (c & 0x7fffffu);
        mag = exp >= 0 ? mag << exp : mag >> -exp;
        mag = (mag >> 23) + ((mag & 0x7fffff) >= 0x400000u);
        if (mag > max_mag) mag = max_mag;
        if (mag == 0) sign = 0;
    }
    return sign + uint32_t(mag);
}
// SFPCAST.md: sign-magnitude integer -> FP32, round to nearest even.
inline uint32_t cast_sm_to_fp32(uint32_t c) {
    const uint32_t sign = c & 0x80000000u, mag = c & 0x7fffffffu;
    const uint32_t lz = mag ? uint32_t(__builtin_clz(mag)) : 157;
    const uint32_t norm = mag << (lz & 31);
    uint32_t d = sign + ((157 - lz) << 23) + (norm >> 8);
    if ((norm & 0x80) && (norm & 0x17f)) d += 1;
    return d;
}
// SFPSWAP.md: order by sign-magnitude (FP32 total order -NaN < -Inf < ... < -0 < +0 < ... < +NaN).
inline bool signmag_smaller(uint32_t c, uint32_t d) {
    auto key = [](uint32_t x) { return int32_t(x ^ (uint32_t(int32_t(x) >> 30) >> 1)); };
    return key(c) < key(d);
}
// SFPLUT.md: an 8-bit LUT coefficient as FP32.
inline uint32_t lut8(uint32_t x) {
    x &= 0xff;
    if (x == 0xff) return 0;
    return ((x >> 7) << 31) | ((127 - ((x >> 4) & 7)) << 23) | ((x & 0xf) << 19);
}
// SFPLOADI.md FP16toFP32: widen the exponent, no special cases.
inline uint32_t fp16a_to_fp32(uint32_t x) {
    return ((x >> 15) << 31) | ((((x >> 10) & 0x1f) + 112) << 23) | ((x & 0x3ff) << 13);
}

// ---- Dst access: SFPLOAD.md / SFPSTORE.md (Mod0 DEFAULT resolves to FP32 with the SFPU's FP32
// mode on, else BF16). Lane l reaches row (Addr & ~3) + l / 8, column 2 * (l & 7) + (Addr >> 1 & 1).
inline uint32_t *dst_datum(uint32_t addr, int lane) {
    State &s = st();
    const uint32_t row = s.base_row + (addr & ~3u) + uint32_t(lane / 8);
    const uint32_t col = uint32_t(lane & 7) * 2 + ((addr >> 1) & 1);
    if (s.dst == nullptr || row >= s.dst_rows) not_modelled("an SFPU access outside the DST section");
    return s.dst + size_t(row) * 16 + col;
}
enum class Fmt { Default, Fp32, Bf16, Int32 };
inline Fmt resolve(Fmt f) { return f == Fmt::Default ? (st().fp32_dest ? Fmt::Fp32 : Fmt::Bf16) : f; }
// ToBF16 of SFPSTORE.md: denormals flush to signed zero, the mantissa truncates toward zero.
inline uint32_t store_bf16(uint32_t x) {
    if ((x & 0x7f800000u) == 0) x &= 0x80000000u;
    return x & 0xffff0000u;
}
inline void sfpload(Vec &d, uint32_t imm, Fmt f) {
    const uint32_t addr = imm + st().rwc_dst;
    f = resolve(f);
    for (int l = 0; l < LANES; ++l) {
        if (!lane_enabled(l)) continue;
        const uint32_t v = *dst_datum(addr, l);
        d.u[l] = f == Fmt::Bf16 ? (v & 0xffff0000u) : v;
    }
}
inline void sfpstore(const Vec &v, uint32_t imm, Fmt f) {
    const uint32_t addr = imm + st().rwc_dst;
    f = resolve(f);
    for (int l = 0; l < LANES; ++l) {
        if (!lane_enabled(l)) continue;
        *dst_datum(addr, l) = f == Fmt::Bf16 ? store_bf16(v.u[l]) : v.u[l];
    }
}

// ---- the condition-code stack: SFPENCC.md, SFPSETCC.md, SFPPUSHC.md, SFPPOPC.md, SFPCOMPC.md.
inline void encc(bool use, bool flag) {
    for (int l = 0; l < LANES; ++l) {
        st().use_flags[l] = use;
        st().flags[l] = flag;
    }
}
// SFPSETCC (and the CC result of SFPIADD / SFPEXEXP): enabled lanes take the condition.
inline void setcc(const bool cond[LANES]) {
    State &s = st();
    for (int l = 0; l < LANES; ++l) {
        if (!lane_enabled(l)) continue;
        s.flags[l] = s.use_flags[l] ? cond[l] : false;
    }
}
inline void pushc() {
    State &s = st();
    if (s.depth >= STACK_DEPTH) not_modelled("SFPPUSHC on a full condition stack (undefined behaviour)");
    std::memcpy(s.stack[s.depth].flags, s.flags, sizeof s.flags);
    std::memcpy(s.stack[s.depth].use_flags, s.use_flags, sizeof s.use_flags);
    ++s.depth;
}
inline void popc() {
    State &s = st();
    if (s.depth == 0) not_modelled("SFPPOPC on an empty condition stack (undefined behaviour)");
    --s.depth;
    std::memcpy(s.flags, s.stack[s.depth].flags, sizeof s.flags);
    std::memcpy(s.use_flags, s.stack[s.depth].use_flags, sizeof s.use_flags);
}
inline void compc() {
    State &s = st();
    for (int l = 0; l < LANES; ++l) {
        const bool top_use = s.depth ? s.stack[s.depth - 1].use_flags[l] : true;
        const bool top_flag = s.depth ? s.stack[s.depth - 1].flags[l] : true;
        s.flags[l] = (top_use && s.use_flags[l]) ? (top_flag && !s.flags[l]) : false;
    }
}

// Programmable constants (LReg[11..14]) written through SFPCONFIG.md: every lane takes lane
// (Lane & 7) of LReg[0]; the SFPLOADI before it loads one value into every lane.
inline void config_const(int reg, uint32_t value) {
    for (int l = 0; l < LANES; ++l) st().lreg[reg].u[l] = value;
}

}  // namespace kemu_sfpu
