// ckernel enums the JIT's chlkc_descriptors.h and the compute API use (values as TT-Metal 0.81.1).
#pragma once

#include <cstdint>

namespace ckernel {
enum class MathFidelity : uint8_t { LoFi = 0, HiFi2 = 2, HiFi3 = 3, HiFi4 = 4, Invalid = 0xff };
enum class DstSync : uint8_t { SyncHalf = 0, SyncFull = 1 };
enum class SrcOrder : uint8_t { Forward = 0, Reverse = 1 };
}  // namespace ckernel
using ckernel::DstSync;
using ckernel::MathFidelity;
using ckernel::SrcOrder;
