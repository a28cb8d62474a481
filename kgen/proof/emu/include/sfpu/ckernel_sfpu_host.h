// kgen host model of the non-SFPU ckernel pieces TT-Metal 0.81.1's LLK SFPU headers touch
// (ckernel_defs.h, cmath_common.h, ckernel_addrmod.h, ckernel_instr_params.h, lltt.h) and the raw
// TTI_SFP* / TT_SFP* instruction macros they issue. Included before TT's ckernel_sfpu_*.h.
// Pieces that do not change results (address modes for the SFPU's own Dst walk, stalls, the SFPU
// lane configuration at its reset value) are no-ops; the Dst counter and the SFPU instructions are
// modelled (sfpu/kemu_sfpu.h).
#pragma once

#include <cstdint>
#include <limits>

#include "ckernel_defs.h"
#include "sfpi.h"

using uint = unsigned int;

namespace ckernel {
enum class ActivationType { Celu = 0, Elu = 1, Gelu = 2, Hardtanh = 3, Hardsigmoid = 4 };
enum class VectorMode : std::uint8_t { None = 0, R = 1, C = 2, RC = 4, RC_custom = 6, Invalid = 0xFF };

namespace p_setrwc {
constexpr uint32_t CLR_NONE = 0, CLR_A = 1, CLR_B = 2, CLR_AB = 3, CLR_D = 4, CLR_AD = 5, CLR_BD = 6, CLR_ABD = 7;
constexpr uint32_t SET_A = 1, SET_B = 2, SET_AB = 3, SET_D = 4, SET_AD = 5, SET_BD = 6, SET_ABD = 7, SET_F = 8,
                   SET_A_F = 9, SET_B_F = 10, SET_AB_F = 11, SET_D_F = 12, SET_AD_F = 13, SET_BD_F = 14, SET_ABD_F = 15;
constexpr uint32_t CR_A = 1, CR_B = 2, CR_AB = 3, CR_D = 4, CR_AD = 5, CR_BD = 6, CR_ABD = 7, C_TO_CR_MODE = 8;
}  // namespace p_setrwc
namespace p_sfpu {
constexpr uint32_t LREG0 = 0, LREG1 = 1, LREG2 = 2, LREG3 = 3, LREG4 = 4, LREG5 = 5, LREG6 = 6, LREG7 = 7,
                   LREG8 = 8, LREG9 = 9, LREG10 = 10, LREG11 = 11, LREG12 = 12, LREG13 = 13, LREG14 = 14, LREG15 = 15,
                   LCONST_0_8373 = 8, LCONST_0 = 9, LCONST_1 = 10, LCONST_neg1 = 11, LTILEID = 15;
constexpr uint32_t kCONST_1_FP16B = 0x3F80, kCONST_1_FP16A = 0x3C00, kCONST_0 = 0, kCONST_Exp_8Bit_Bias = 0x7F,
                   kCONST_Exp_5Bit_Bias = 0x1F;
}  // namespace p_sfpu
namespace p_stall {
constexpr uint32_t NONE = 0, STALL_TDMA = 1, STALL_SYNC = 2, STALL_PACK = 4, STALL_UNPACK = 8, STALL_MATH = 16,
                   STALL_CFG = 32, STALL_SFPU = 64, STALL_THCON = 128, STALL_ON_ZERO = 1, STALL_ON_MAX = 2,
                   WAIT_SFPU = 0x2000, MATH = 0x10, SRCA_VLD = 0x800, SRCB_VLD = 0x1000, PACK = 0x4;
}  // namespace p_stall
enum class InstrModLoadStore { DEFAULT = 0, FP16A = 1, FP16B = 2, FP32 = 3, INT32 = 4, INT8 = 5, LO16 = 6, HI16 = 7,
                               INT32_2S_COMP = 12, INT8_2S_COMP = 13, LO16_ONLY = 14, HI16_ONLY = 15 };
constexpr uint32_t ADDR_MOD_0 = 0, ADDR_MOD_1 = 1, ADDR_MOD_2 = 2, ADDR_MOD_3 = 3, ADDR_MOD_4 = 4, ADDR_MOD_5 = 5,
                   ADDR_MOD_6 = 6, ADDR_MOD_7 = 7;
constexpr uint32_t SFPLOAD_INSTR_MOD = 0;

// Address modes: the SFPU's Dst walk uses the Dst counter only (dst_reg++), so setting one changes nothing.
struct addr_mod_t {
    struct addr_mod_src_t { std::uint8_t incr = 0; std::uint8_t clr = 0; std::uint8_t cr = 0; };
    struct addr_mod_dest_t { std::int16_t incr = 0; std::uint8_t clr = 0; std::uint8_t cr = 0; std::uint8_t c_to_cr = 0; };
    struct addr_mod_fidelity_t { std::uint8_t incr = 0; std::uint8_t clr = 0; };
    addr_mod_src_t srca{};
    addr_mod_src_t srcb{};
    addr_mod_dest_t dest{};
    addr_mod_fidelity_t fidelity{};
    void set(uint32_t) const {}
};

namespace math {
// TTI_SETRWC with SET_D clears the Dst counter: the SFPU restarts at the tile's first row.
inline void reset_counters(uint32_t setrwc) {
    if (setrwc & p_setrwc::SET_D) kemu_sfpu::st().rwc_dst = 0;
}
template <uint32_t N>
inline void inc_dst_addr() { kemu_sfpu::st().rwc_dst += N; }
}  // namespace math
}  // namespace ckernel
using namespace ckernel;

// ---- raw instruction macros ---------------------------------------------------------------------
namespace kemu_sfpu {
// SFPLOADI.md: Mod0 FLOATB / FLOATA / USHORT / SHORT / UPPER / LOWER into LReg[0..7].
inline void sfploadi(uint32_t vd, uint32_t mod, uint32_t imm) {
    if (vd >= 8) return;   // the page: LReg[8..] cannot be written this way
    Vec &r = st().lreg[vd];
    imm &= 0xffff;
    for (int l = 0; l < LANES; ++l) {
        if (!lane_enabled(l)) continue;
        uint32_t &u = r.u[l];
        switch (mod) {
            case 0: u = imm << 16; break;
            case 1: u = fp16a_to_fp32(imm); break;
            case 2: u = imm; break;
            case 4: u = uint32_t(int32_t(int16_t(imm))); break;
            case 8: u = (imm << 16) | (u & 0xffff); break;
            case 10: u = (u & 0xffff0000u) | imm; break;
            default: not_modelled("SFPLOADI with this Mod0 (undefined behaviour)");
        }
    }
}
// SFPCONFIG.md: VD 11..14 take LReg[0]; VD 15 (the lane configuration) with Mod1 1 is its reset value.
inline void sfpconfig(uint32_t imm16, uint32_t vd, uint32_t mod1) {
    if (vd >= 11 && vd <= 14 && mod1 == 0) {
        for (int l = 0; l < LANES; ++l) st().lreg[vd].u[l] = st().lreg[0].u[l & 7];
        return;
    }
    if (vd == 15 && mod1 == 1 && imm16 == 0) return;
    not_modelled("SFPCONFIG of the load-macro or lane configuration");
}
}  // namespace kemu_sfpu
#define TT_SFPLOADI(vd, mod, imm) ::kemu_sfpu::sfploadi(vd, mod, imm)
#define TTI_SFPLOADI(vd, mod, imm) ::kemu_sfpu::sfploadi(vd, mod, imm)
#define TTI_SFPCONFIG(imm, vd, mod) ::kemu_sfpu::sfpconfig(imm, vd, mod)
#define TT_SFPCONFIG(imm, vd, mod) ::kemu_sfpu::sfpconfig(imm, vd, mod)
#define TTI_SFPNOP ((void)0)
#define TTI_STALLWAIT(a, b) ((void)0)
#define TTI_SETRWC(clr, cr, d, b, a, set) ::ckernel::math::reset_counters(set)
#define TTI_INCRWC(cr, d, b, a) (::kemu_sfpu::st().rwc_dst += (d))
// Instructions the activations' paths never reach: compiled, and a run that reaches one stops.
#define KEMU_SFPU_NOT_MODELLED(name) ::kemu_sfpu::not_modelled(name)
#define TTI_SFPLOADMACRO(...) KEMU_SFPU_NOT_MODELLED("SFPLOADMACRO")
#define TT_SFPLOADMACRO(...) KEMU_SFPU_NOT_MODELLED("SFPLOADMACRO")
#define TTI_SFPMAD(...) KEMU_SFPU_NOT_MODELLED("raw SFPMAD")
#define TTI_SFPSHFT2(...) KEMU_SFPU_NOT_MODELLED("SFPSHFT2")
#define TTI_SFPSHFT(...) KEMU_SFPU_NOT_MODELLED("raw SFPSHFT")
#define TTI_SFP_STOCH_RND(...) KEMU_SFPU_NOT_MODELLED("raw SFPSTOCHRND")
#define TTI_SFPSWAP(...) KEMU_SFPU_NOT_MODELLED("raw SFPSWAP")
#define TTI_SFPSTORE(...) KEMU_SFPU_NOT_MODELLED("raw SFPSTORE")
#define TTI_SFPLOAD(...) KEMU_SFPU_NOT_MODELLED("raw SFPLOAD")
#define TTI_SFPARECIP(...) KEMU_SFPU_NOT_MODELLED("SFPARECIP")
#define TTI_SFPSETSGN(...) KEMU_SFPU_NOT_MODELLED("raw SFPSETSGN")
#define TTI_SFPEXMAN(...) KEMU_SFPU_NOT_MODELLED("raw SFPEXMAN")
#define TTI_SFPEXEXP(...) KEMU_SFPU_NOT_MODELLED("raw SFPEXEXP")
#define TTI_SFPSETEXP(...) KEMU_SFPU_NOT_MODELLED("raw SFPSETEXP")
#define TTI_SFPMULI(...) KEMU_SFPU_NOT_MODELLED("SFPMULI")
#define TTI_SFPMOV(...) KEMU_SFPU_NOT_MODELLED("raw SFPMOV")
#define TTI_SFPIADD(...) KEMU_SFPU_NOT_MODELLED("raw SFPIADD")
#define TTI_SFPCAST(...) KEMU_SFPU_NOT_MODELLED("raw SFPCAST")
#define TTI_SFPOR(...) KEMU_SFPU_NOT_MODELLED("raw SFPOR")
#define TTI_SFPAND(...) KEMU_SFPU_NOT_MODELLED("raw SFPAND")
#define TTI_SFPGT(...) KEMU_SFPU_NOT_MODELLED("SFPGT")
#define TTI_SFP_SWAP(...) KEMU_SFPU_NOT_MODELLED("SFPSWAP")
#define TTI_REPLAY(...) KEMU_SFPU_NOT_MODELLED("REPLAY")
#define TT_SFPMAD(...) KEMU_SFPU_NOT_MODELLED("raw SFPMAD")
namespace lltt {
enum ExecBool : bool { NoExec, Exec };
template <ExecBool E = NoExec, class... A>
inline void record(A...) { KEMU_SFPU_NOT_MODELLED("REPLAY record"); }
template <class... A>
inline void replay(A...) { KEMU_SFPU_NOT_MODELLED("REPLAY"); }
}  // namespace lltt
namespace ckernel {
using lltt::ExecBool;
using lltt::Exec;
using lltt::NoExec;
template <ExecBool E = NoExec, class Callable, class... Args>
inline void load_replay_buf(std::uint32_t, std::uint32_t, Callable &&, Args &&...) {
    KEMU_SFPU_NOT_MODELLED("the replay buffer (load_replay_buf)");
}
}  // namespace ckernel
