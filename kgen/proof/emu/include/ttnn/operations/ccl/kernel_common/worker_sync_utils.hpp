// kgen host model: ttnn 0.81.1 `ttnn/operations/ccl/kernel_common/worker_sync_utils.hpp`. The op
// signalling of matmuls fused with all-gather / reduce-scatter is not modelled (kgen's plans do
// not fuse collectives): a default-constructed receiver or signaler compiles and does nothing;
// constructing a live one or calling it stops the run as unsupported.
#pragma once

#include <cstdint>

#include "kemu/noc_objects.h"

// Advances a runtime-arg cursor, returning where it was (the ttnn helper of the same name).
inline uint32_t increment_arg_idx(uint32_t &arg_idx, uint32_t num_args = 1) {
    uint32_t old = arg_idx;
    arg_idx += num_args;
    return old;
}

struct MatmulOpReceiver {
    MatmulOpReceiver() = default;
    MatmulOpReceiver(bool, uint32_t &, uint32_t, uint32_t, KEMU_WHERE) {
        kemu::unsupported("MatmulOpReceiver (matmul fused with all-gather)", KEMU_AT);
    }
    void update_current_block_start_tile_id(const uint32_t &, uint32_t &, const uint32_t &, KEMU_WHERE) {
        kemu::unsupported("MatmulOpReceiver::update_current_block_start_tile_id", KEMU_AT);
    }
    uint32_t align_to_slice_and_sync(uint32_t, uint32_t, KEMU_WHERE) {
        kemu::unsupported("MatmulOpReceiver::align_to_slice_and_sync", KEMU_AT);
    }
};

struct OpSignaler {
    OpSignaler() = default;
    explicit OpSignaler(uint32_t &, KEMU_WHERE) { kemu::unsupported("OpSignaler (matmul fused with reduce-scatter)", KEMU_AT); }
    void synchronize_workers_and_signal_op(uint32_t, KEMU_WHERE) {
        kemu::unsupported("OpSignaler::synchronize_workers_and_signal_op", KEMU_AT);
    }
};
