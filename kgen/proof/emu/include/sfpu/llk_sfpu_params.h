// kgen host model of tt-llk's _llk_math_eltwise_unary_sfpu_params_ (llk_math_eltwise_sfpu_common.h,
// TT-Metal 0.81.1): the SFPU function runs once per face the vector mode selects (RC: faces 0-3,
// R: faces 0 and 1, C: faces 0 and 2), each starting at the face's first Dst row, as TT's wrapper
// walks them (set_dst_write_addr to the tile, the Dst counter advanced a face per call).
#pragma once

#include "sfpu/ckernel_sfpu_host.h"

namespace kemu_sfpu {
// Where Dst is for the running kernel: the emulator's pack-thread section, or the harness's buffer.
struct DstView {
    uint32_t *base;
    uint32_t rows;
    bool fp32_dest;
};
DstView dst_for_sfpu(uint32_t tile_index);   // defined by the emulator's runtime glue or the harness

template <class F, class... A>
inline void run_faces(F &&fn, uint32_t tile, ckernel::VectorMode mode, A &&...args) {
    const DstView view = dst_for_sfpu(tile);
    State &s = st();
    s.dst = view.base;
    s.dst_rows = view.rows;
    s.fp32_dest = view.fp32_dest;
    reset_lanes();
    int faces[4] = {0, 1, 2, 3};
    int count = 4;
    if (mode == ckernel::VectorMode::R) { count = 2; }
    else if (mode == ckernel::VectorMode::C) { faces[1] = 2; count = 2; }
    else if (mode != ckernel::VectorMode::RC) { count = 1; }
    for (int i = 0; i < count; ++i) {
        s.base_row = uint32_t(faces[i]) * 16;
        s.rwc_dst = 0;
        fn(args...);
    }
    s.base_row = 0;
    s.rwc_dst = 0;
}
}  // namespace kemu_sfpu
