// kgen host model: the values TT-Metal 0.81.1's `hostdevcommon/common_values.hpp` shares between
// host and kernels that matmul kernels use (the multicast receiver flag states).
#pragma once

#include <cstdint>

constexpr static std::uint32_t INVALID = 0;
constexpr static std::uint32_t VALID = 1;
