// kgen host model: the parts of TT-Metal 0.81.1's `ckernel.h` data-movement kernels reach
// (the mailboxes are in kemu/common.h).
#pragma once

#include <cstdint>

#include "kemu/common.h"

namespace ckernel {
// A load the core waits for; on the host every load is complete when it returns.
template <class T>
inline T load_blocking(volatile T *ptr) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "load_blocking: operand must be 16-bit or 32-bit");
    return *ptr;
}
}  // namespace ckernel
