// kgen host model: TT-Metal 0.81.1 `api/tensor/local_tensor_accessor.h`: this core's L1 region of a
// tensor (a sharded tensor's local shard), from a Metal 2.0 binding token (its base address is the
// common runtime arg at the token's ADDR_CRTA_OFFSET, as in TT-Metal) or from a raw L1 address.
// TT-Metal's header also notes the access for its op-to-op read/write inference (buf_rw_note.h),
// which has no modelled effect.
#pragma once

#include <cstdint>

#include "api/core_local_mem.h"
#include "api/tensor/tensor_binding_token.h"

template <typename T>
class LocalTensorAccessor {
public:
    template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
    explicit LocalTensorAccessor(tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>, KEMU_WHERE)
        : mem_(static_cast<uintptr_t>(kemu::common_rt_arg(ADDR_CRTA_OFFSET / 4, KEMU_AT))) {
        static_assert(!tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>::is_dram,
                      "LocalTensorAccessor requires an L1-resident tensor");
    }
    explicit LocalTensorAccessor(uint32_t bank_base_address) : mem_(static_cast<uintptr_t>(bank_base_address)) {}
    T &operator[](uint32_t index) const { return mem_[index]; }
    uint32_t get_bank_base_address() const { return static_cast<uint32_t>(mem_.get_address()); }
    CoreLocalMem<T> local_mem() const { return mem_; }

private:
    CoreLocalMem<T> mem_;
};

template <typename T>
struct noc_traits_t<LocalTensorAccessor<T>> {
    struct src_args_type {
        uint32_t offset_bytes = 0;
    };
    using dst_args_type = src_args_type;
    struct dst_args_mcast_type {};
    static uint32_t src_l1(const LocalTensorAccessor<T> &t, const src_args_type &a, kemu::Where) {
        return t.get_bank_base_address() + a.offset_bytes;
    }
    static uint32_t dst_l1(const LocalTensorAccessor<T> &t, const dst_args_type &a, kemu::Where at) {
        return src_l1(t, a, at);
    }
};
