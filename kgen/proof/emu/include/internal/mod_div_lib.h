// kgen host model: TT-Metal 0.81.1 `internal/mod_div_lib.h` (the integer helpers kernels call).
#pragma once
#include <cstdint>

inline uint32_t mulsi3(uint32_t a, uint32_t b) { return a * b; }
template <uint32_t d>
inline uint32_t udivsi3_const_divisor(uint32_t n) { return n / d; }
template <uint32_t d>
inline uint32_t umodsi3_const_divisor(uint32_t n) { return n % d; }
