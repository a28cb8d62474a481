// kgen host model: TT-Metal 0.81.1 `api/dataflow/dataflow_buffer.h`: a CB index with member
// functions; each forwards to the CB call of the running processor.
#pragma once

#include "kemu/common.h"
// Metal 2.0's DFBBindingToken (`dfb::<name>`, kernel_bindings_generated.h): TT-Metal's own header, which
// has no hardware access, found when the fetched tree's tt_metal/hw/inc is on the include path; a token
// converts to its CB index, which is what a DataflowBuffer is on Wormhole and Blackhole.
#if __has_include("api/dataflow/dfb_binding_token.h")
#include "api/dataflow/dfb_binding_token.h"
#endif

class DataflowBuffer {
public:
    constexpr explicit DataflowBuffer(uint16_t id) : id_(id) {}
    constexpr uint32_t get_id() const { return id_; }
    void wait_front(uint32_t n, KEMU_WHERE) const { kemu::cb_wait_front(id_, n, KEMU_AT); }
    void pop_front(uint32_t n, KEMU_WHERE) const { kemu::cb_pop_front(id_, n, KEMU_AT); }
    void reserve_back(uint32_t n, KEMU_WHERE) const { kemu::cb_reserve_back(id_, n, KEMU_AT); }
    void push_back(uint32_t n, KEMU_WHERE) const { kemu::cb_push_back(id_, n, KEMU_AT); }
    uint32_t get_write_ptr(KEMU_WHERE) const { return kemu::cb_write_ptr(id_, KEMU_AT); }
    uint32_t get_read_ptr(KEMU_WHERE) const { return kemu::cb_read_ptr(id_, KEMU_AT); }
    // Metal 2.0's reload alias (bmm_large_block_zm_fused_bias_activation_metal2.cpp): its read pointer set to
    // the partials buffer's, on the unpacker
    void evil_set_read_ptr(uint32_t addr, KEMU_WHERE) const { kemu::local_cb(id_, KEMU_AT).fifo_rd_ptr = addr; }
    uint32_t get_tile_size(KEMU_WHERE) const { return kemu::local_cb(id_, KEMU_AT).fifo_page_size; }
    // one entry is one page (matmul's writer_unary_interleaved_start_id.cpp reads it as the page size)
    uint32_t get_entry_size(KEMU_WHERE) const { return kemu::local_cb(id_, KEMU_AT).fifo_page_size; }
    bool pages_reservable_at_back(int32_t n, KEMU_WHERE) const {
        return kemu::cb_pages_reservable_at_back(id_, static_cast<uint32_t>(n), KEMU_AT);
    }

private:
    uint32_t id_;
};
