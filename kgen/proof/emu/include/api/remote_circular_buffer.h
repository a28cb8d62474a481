// kgen host model: TT-Metal 0.81.1 `api/remote_circular_buffer.h`. Remote (global) circular
// buffers feed sharded-weight prefetching, which kgen's plans do not use: the calls compile and
// stop the run as unsupported if reached.
#pragma once

#include "kemu/noc_objects.h"

namespace experimental {
inline void remote_cb_wait_front(uint32_t, uint32_t, KEMU_WHERE) { kemu::unsupported("remote_cb_wait_front", KEMU_AT); }
inline void remote_cb_pop_front(uint32_t, uint32_t, KEMU_WHERE) { kemu::unsupported("remote_cb_pop_front", KEMU_AT); }
inline void remote_cb_reserve_back(uint32_t, uint32_t, KEMU_WHERE) { kemu::unsupported("remote_cb_reserve_back", KEMU_AT); }
inline void remote_cb_push_back_and_write_pages(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                                                KEMU_WHERE) {
    kemu::unsupported("remote_cb_push_back_and_write_pages", KEMU_AT);
}
inline void update_remote_cb_config_in_l1(uint32_t, KEMU_WHERE) { kemu::unsupported("update_remote_cb_config_in_l1", KEMU_AT); }
}  // namespace experimental
