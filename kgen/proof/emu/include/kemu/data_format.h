// tt::DataFormat, with TT-Metal 0.81.1's hardware encodings (tensix_types.h): the numbers
// chlkc_descriptors.h holds per CB and get_dataformat() returns.
#pragma once

#include <cstdint>

enum class DataFormat : std::uint8_t {
    Float32 = 0,
    Float16 = 1,
    Bfp8 = 2,
    Bfp4 = 3,
    Tf32 = 4,
    Float16_b = 5,
    Bfp8_b = 6,
    Bfp4_b = 7,
    Int32 = 8,
    UInt16 = 9,
    Lf8 = 10,
    Bfp2 = 11,
    Int8 = 14,
    Bfp2_b = 15,
    UInt32 = 24,
    Fp8_e4m3 = 26,
    UInt8 = 30,
    Invalid = 0xff
};
