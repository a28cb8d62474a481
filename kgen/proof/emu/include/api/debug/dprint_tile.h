// kgen host model: TT-Metal 0.81.1 `api/debug/dprint_tile.h` (tile printing compiles to nothing).
#pragma once
#include "kemu/common.h"

struct KemuNullTileSlice {
    template <class... T>
    KemuNullTileSlice(T &&...) {}
};
using TileSlice = KemuNullTileSlice;
