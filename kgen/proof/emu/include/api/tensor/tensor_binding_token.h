// kgen host model: TT-Metal 0.81.1 `api/tensor/tensor_binding_token.h`. A Metal 2.0 kernel names a
// tensor binding as `tensor::<name>`, a TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET> the JIT emits
// into kernel_bindings_generated.h: its accessor args start at positional compile-time arg CTA_OFFSET
// and its L1/DRAM base address is the common runtime arg at byte offset ADDR_CRTA_OFFSET. TT-Metal's
// own header builds TensorAccessorArgs<CTA_OFFSET> from the device's tensor_accessor_args.h, which
// this model replaces (kemu/dataflow_api.h), so the token is modelled here: it reads the ArgConfig
// word and the aligned page size at CTA_OFFSET (this model's accessor layout) and no shard layout.
#pragma once

#include <cstdint>

#include "internal/llk_metadata.h"   // TT-Metal's own (no hardware access): the fetched tree's
#include "kemu/dataflow_api.h"


namespace tensor_accessor {

template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
struct TensorBindingToken {
    static constexpr uint32_t config = get_compile_time_arg_val(CTA_OFFSET);
    static constexpr bool is_dram = (config & IsDram) != 0;
    static constexpr bool is_sharded = (config & Sharded) != 0;
    static constexpr uint32_t aligned_page_size = get_compile_time_arg_val(CTA_OFFSET + 1);
    static constexpr uint32_t addr_crta_offset = ADDR_CRTA_OFFSET;   // in bytes
    static_assert(ADDR_CRTA_OFFSET % 4 == 0, "TensorBindingToken: ADDR_CRTA_OFFSET must be 4-byte aligned");

    constexpr TensorBindingToken() = default;
    explicit constexpr TensorBindingToken(binding_details::LLKMetadata) {}
};

}  // namespace tensor_accessor

// TensorAccessor(tensor::<name>): the bound tensor's base address from the common runtime args. An
// interleaved tensor addresses its pages as the positional-args accessor does; a sharded tensor's
// page addressing (the shard layout words) is not modelled: only its base address is, which is all
// TT-Metal's DRAM-sharded readers take from it (they address the bank themselves).
template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
struct TensorAccessor<tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>> {
    using Token = tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>;
    uint32_t bank_base_address;
    uint32_t page_size;
    explicit TensorAccessor(const Token &, KEMU_WHERE)
        : bank_base_address(kemu::common_rt_arg(ADDR_CRTA_OFFSET / 4, KEMU_AT)), page_size(Token::aligned_page_size) {}
    uint32_t get_aligned_page_size() const { return page_size; }
    uint32_t get_bank_base_address() const { return bank_base_address; }
    uint64_t get_noc_addr(uint32_t page_id, uint32_t offset = 0, uint8_t noc = noc_index, KEMU_WHERE) const {
        (void)noc;
        if (Token::is_sharded) kemu::unsupported("page addressing of a sharded tensor binding", KEMU_AT);
        return kemu::interleaved_page_addr(bank_base_address, page_id, page_size, offset, Token::is_dram, KEMU_AT);
    }
};
template <uint32_t CTA_OFFSET, uint32_t ADDR_CRTA_OFFSET>
TensorAccessor(const tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET> &)
    -> TensorAccessor<tensor_accessor::TensorBindingToken<CTA_OFFSET, ADDR_CRTA_OFFSET>>;
