// Pieces every kernel build sees: attributes, the CB interface, args, the TRISC role macros.
#pragma once

#include <cstdint>

#include "kemu/ct_args.h"
#include "kemu/runtime.h"

#ifndef FORCE_INLINE
#define FORCE_INLINE inline __attribute__((always_inline))
#endif
#define tt_l1_ptr
#define tt_reg_ptr
#define ALWI inline __attribute__((always_inline))

// The JIT compiles a compute kernel three times; chlkc_<role>.cpp defines TRISC_<ROLE> and the
// command line UCK_CHLKC_<ROLE>. UNPACK(( )) / MATH(( )) / PACK(( )) keep only their own thread's code.
#if defined(TRISC_UNPACK) || defined(UCK_CHLKC_UNPACK)
#define KEMU_TRISC_UNPACK 1
#endif
#if defined(TRISC_MATH) || defined(UCK_CHLKC_MATH)
#define KEMU_TRISC_MATH 1
#endif
#if defined(TRISC_PACK) || defined(UCK_CHLKC_PACK)
#define KEMU_TRISC_PACK 1
#endif

#ifdef KEMU_TRISC_UNPACK
#define UNPACK(x) x
#else
#define UNPACK(x)
#endif
#ifdef KEMU_TRISC_MATH
#define MATH(x) x
#else
#define MATH(x)
#endif
#ifdef KEMU_TRISC_PACK
#define PACK(x) x
#else
#define PACK(x)
#endif

// The entry point the emulator looks up in each kernel's shared object.
__attribute__((visibility("default"))) void kernel_main();

template <typename T>
FORCE_INLINE T get_arg_val(int arg_idx, KEMU_WHERE) {
    static_assert(sizeof(T) == 4, "get_arg_val reads 32-bit runtime args");
    uint32_t v = kemu::rt_arg(static_cast<uint32_t>(arg_idx), KEMU_AT);
    T out;
    __builtin_memcpy(&out, &v, 4);
    return out;
}

template <typename T>
FORCE_INLINE T get_common_arg_val(int arg_idx, KEMU_WHERE) {
    static_assert(sizeof(T) == 4, "get_common_arg_val reads 32-bit runtime args");
    uint32_t v = kemu::common_rt_arg(static_cast<uint32_t>(arg_idx), KEMU_AT);
    T out;
    __builtin_memcpy(&out, &v, 4);
    return out;
}

FORCE_INLINE uint32_t get_arg_addr(int arg_idx, KEMU_WHERE) { return kemu::rt_arg_addr(static_cast<uint32_t>(arg_idx), KEMU_AT); }
// The common runtime args sit in L1 too (TT-Metal's crta_l1_base); Metal 2.0's CrtaArg reads them so.
FORCE_INLINE uint32_t get_common_arg_addr(int arg_idx, KEMU_WHERE) {
    return kemu::common_rt_arg_addr(static_cast<uint32_t>(arg_idx), KEMU_AT);
}

// Circular buffers: one API on every processor; what a call does depends on the processor running
// it (TT-Metal: waits and pops act on TRISC0, reserves and pushes on TRISC2 of a compute kernel).
FORCE_INLINE void cb_wait_front(uint32_t cb, uint32_t n, KEMU_WHERE) { kemu::cb_wait_front(cb, n, KEMU_AT); }
FORCE_INLINE void cb_pop_front(uint32_t cb, uint32_t n, KEMU_WHERE) { kemu::cb_pop_front(cb, n, KEMU_AT); }
FORCE_INLINE void cb_reserve_back(uint32_t cb, uint32_t n, KEMU_WHERE) { kemu::cb_reserve_back(cb, n, KEMU_AT); }
FORCE_INLINE void cb_push_back(uint32_t cb, uint32_t n, KEMU_WHERE) { kemu::cb_push_back(cb, n, KEMU_AT); }
FORCE_INLINE bool cb_pages_available_at_front(uint32_t cb, uint32_t n, KEMU_WHERE) {
    return kemu::cb_pages_available_at_front(cb, n, KEMU_AT);
}
FORCE_INLINE bool cb_pages_reservable_at_back(uint32_t cb, uint32_t n, KEMU_WHERE) {
    return kemu::cb_pages_reservable_at_back(cb, n, KEMU_AT);
}
FORCE_INLINE kemu::LocalCBInterface &get_local_cb_interface(uint32_t cb, KEMU_WHERE) { return kemu::local_cb(cb, KEMU_AT); }

namespace ckernel {
enum class ThreadId : uint32_t { BriscThreadId = 0, NcriscThreadId = 1, UnpackThreadId = 2, MathThreadId = 3, PackThreadId = 4 };
inline uint32_t mailbox_read(ThreadId, KEMU_WHERE) { kemu::unsupported("mailbox_read", KEMU_AT); }
inline void mailbox_write(ThreadId, uint32_t, KEMU_WHERE) { kemu::unsupported("mailbox_write", KEMU_AT); }
}  // namespace ckernel
using ckernel::mailbox_read;
using ckernel::mailbox_write;

// DPRINT compiles to nothing, as on a device without the debug server.
struct KemuNullPrint {
    template <typename T>
    const KemuNullPrint &operator<<(const T &) const { return *this; }
};
#define DPRINT KemuNullPrint{}
#define DPRINT_UNPACK(x)
#define DPRINT_MATH(x)
#define DPRINT_PACK(x)
#define DPRINT_DATA0(x)
#define DPRINT_DATA1(x)
#define ENDL() '\n'
