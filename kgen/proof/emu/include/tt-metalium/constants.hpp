// kgen host model: the tile geometry of TT-Metal 0.81.1's `tt-metalium/constants.hpp` that kernel
// helpers (e.g. ttnn's pad_tile.hpp) use.
#pragma once

#include <cstdint>

namespace tt::constants {
constexpr uint32_t TILE_HEIGHT = 32;
constexpr uint32_t TILE_WIDTH = 32;
constexpr uint32_t TILE_HW = TILE_WIDTH * TILE_HEIGHT;
constexpr uint32_t FACE_HEIGHT = 16;
constexpr uint32_t FACE_WIDTH = 16;
constexpr uint32_t FACE_HW = FACE_WIDTH * FACE_HEIGHT;
}  // namespace tt::constants
