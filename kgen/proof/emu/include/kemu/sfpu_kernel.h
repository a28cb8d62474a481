// What TT-Metal 0.81.1's bmm_fused_activation.hpp needs beyond the activation calls, on the host:
// the pack thread's wait for math's DST section (TTI_SEMWAIT on the MATH_PACK semaphore: in the
// emulator exactly tile_regs_wait, which the kernel replaces with it), the DST half the packer reads
// (TT_SETC16 of DEST_TARGET_REG_CFG_MATH_Offset: the SFPU then addresses the pack-held section), and
// the stalls (no effect: the host SFPU finishes each instruction before the next).
#pragma once

#include "kemu/compute_api.h"
#include "kemu/sfpu_activations.h"

namespace ckernel {
namespace semaphore {
constexpr uint32_t MATH_PACK = 1;
constexpr uint32_t t6_sem(uint32_t sem_index) { return 1u << sem_index; }
}  // namespace semaphore
namespace packer {
constexpr uint32_t KEMU_PACKER_DEST_OFFSET = 0x7e57;   // a token: "the packer's half", resolved by the emulator
inline uint32_t get_packer_dest_offset() { return KEMU_PACKER_DEST_OFFSET; }
}  // namespace packer
constexpr uint32_t DEST_TARGET_REG_CFG_MATH_Offset_ADDR32 = 0x7e58;
}  // namespace ckernel

namespace kemu_sfpu {
struct PackDest {
    bool selected = false;   // TT_SETC16 pointed the SFPU at the packer's DST half
};
inline PackDest &pack_dest() {
    static PackDest p;
    return p;
}
inline void semwait(uint32_t sem, kemu::Where at) {
    if (sem != ckernel::semaphore::t6_sem(ckernel::semaphore::MATH_PACK)) kemu::unsupported("TTI_SEMWAIT on another semaphore", at);
    kemu::dst_wait(at);
}
inline void setc16(uint32_t reg, uint32_t value, kemu::Where at) {
    if (reg != ckernel::DEST_TARGET_REG_CFG_MATH_Offset_ADDR32 || value != ckernel::packer::KEMU_PACKER_DEST_OFFSET)
        kemu::unsupported("TT_SETC16 of another register or value", at);
    pack_dest().selected = true;
}
#ifndef KEMU_SFPU_HARNESS
inline DstView dst_for_sfpu(uint32_t tile_index) {
    kemu::Where at{__builtin_FILE(), __builtin_LINE()};
    if (!pack_dest().selected) kemu::unsupported("the SFPU on the pack thread before TT_SETC16 selects the packer's DST half", at);
    bool fp32 = false;
    uint32_t *base = kemu::sfpu_dst_tile(tile_index, &fp32, at);
    return DstView{base, 64, fp32};
}
#endif
}  // namespace kemu_sfpu

#undef TTI_STALLWAIT
#define TTI_STALLWAIT(a, b) ((void)0)
#define TTI_SEMWAIT(stall, sem, cond) ::kemu_sfpu::semwait((sem), ::kemu::Where{__FILE__, __LINE__})
#define TT_SETC16(reg, value) ::kemu_sfpu::setc16((reg), (value), ::kemu::Where{__FILE__, __LINE__})
