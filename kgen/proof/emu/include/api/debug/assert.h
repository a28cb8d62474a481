// kgen host model: TT-Metal 0.81.1 `api/debug/assert.h`. On a device ASSERT checks only under the
// watcher; the emulator always checks, and a failed ASSERT stops the run naming the kernel line.
#pragma once

#include "kemu/runtime.h"

#define ASSERT(condition, ...) \
    ((condition) ? static_cast<void>(0) : kemu::assert_failed(#condition, kemu::Where{__FILE__, __LINE__}))
