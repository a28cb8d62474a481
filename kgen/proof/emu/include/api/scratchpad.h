// kgen host model: TT-Metal 0.81.1 `api/scratchpad.h`. A program-scope scratchpad (a Metal 2.0
// `scratch::<name>` binding) is used by TT-Metal's DRAM-sharded in0 sender only for a block wider than
// an in0 shard (IN0_MULTISHARD), which kgen's plans do not make: it compiles and stops the run as
// unsupported if constructed.
#pragma once

#include <cstdint>

#include "kemu/common.h"

template <typename T>
class Scratchpad {
public:
    template <typename Token>
    explicit Scratchpad(const Token &, KEMU_WHERE) {
        kemu::unsupported("Scratchpad (a program-scope scratchpad binding)", KEMU_AT);
    }
    uint32_t get_base_address() const { return 0; }
};
