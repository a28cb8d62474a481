// Host model of TT-Metal 0.81.1's pack-thread SFPU activation entry points (api/compute/
// compute_kernel_api.h and eltwise_unary/{gelu,relu,activations,hardtanh,selu,softplus}.h, the calls
// ttnn's bmm_fused_activation.hpp makes): each runs TT's own ckernel::sfpu init or calculate_*
// function, unchanged, on the host SFPU model over the tile's faces. Only the pack build (PACK)
// keeps them, as on the device.
#pragma once

#include <cstdint>

#include "kemu/common.h"
#include "sfpu/llk_sfpu_params.h"
#include "ckernel_sfpu_silu.h"
#include "ckernel_sfpu_tanh.h"
#include "ckernel_sfpu_sigmoid.h"
#include "ckernel_sfpu_gelu.h"
#include "ckernel_sfpu_relu.h"
#include "ckernel_sfpu_activations.h"
#include "ckernel_sfpu_hardtanh.h"
#include "ckernel_sfpu_selu.h"
#include "ckernel_sfpu_softplus.h"

namespace ckernel {
#define KEMU_SFPU_RUN(fn, idst, mode, ...) ::kemu_sfpu::run_faces([&](auto... a) { fn(a...); }, idst, mode, ##__VA_ARGS__)

ALWI void silu_tile_init_pack() { PACK((sfpu::silu_init<APPROX>())); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void silu_tile_pack(uint32_t idst) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_silu<is_fp32_dest_acc_en, 8>), idst, VectorMode::RC)));
    (void)idst;
}

template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tanh_tile_init_pack() { PACK((sfpu::tanh_init<fast_and_approx, is_fp32_dest_acc_en>())); }
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tanh_tile_pack(uint32_t idst) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_tanh<fast_and_approx, is_fp32_dest_acc_en, 8>), idst, VectorMode::RC)));
    (void)idst;
}

template <bool fast_and_approx = false>
ALWI void sigmoid_tile_init_pack() { PACK((sfpu::sigmoid_init<fast_and_approx>())); }
template <VectorMode vec_mode = VectorMode::RC, bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sigmoid_tile_pack(uint32_t idst) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_sigmoid<fast_and_approx, is_fp32_dest_acc_en, 8>), idst, vec_mode)));
    (void)idst;
}

template <bool fast_and_approx = true, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void gelu_tile_init_pack() { PACK((sfpu::gelu_init<fast_and_approx, is_fp32_dest_acc_en>())); }
template <bool fast_and_approx = true, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void gelu_tile_pack(uint32_t idst) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_gelu<fast_and_approx, is_fp32_dest_acc_en>), idst, VectorMode::RC)));
    (void)idst;
}

template <bool fast = false>
ALWI void gelu_tanh_tile_init_pack() {
    if constexpr (fast) {
        PACK((sfpu::gelu_tanh_fast_init()));
    } else {
        PACK((sfpu::gelu_tanh_init()));
    }
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE, bool fast = false>
ALWI void gelu_tanh_tile_pack(uint32_t idst) {
    if constexpr (fast) {
        PACK((KEMU_SFPU_RUN((sfpu::calculate_gelu_tanh_fast<is_fp32_dest_acc_en>), idst, VectorMode::RC)));
    } else {
        PACK((KEMU_SFPU_RUN((sfpu::calculate_gelu_tanh<is_fp32_dest_acc_en>), idst, VectorMode::RC)));
    }
    (void)idst;
}

ALWI void relu_max_tile_init_pack() { PACK((sfpu::relu_max_init())); }
ALWI void relu_max_tile_pack(uint32_t idst, uint32_t param0) {
    PACK((KEMU_SFPU_RUN((sfpu::_relu_max_<sfpi::vFloat, APPROX, 8, uint32_t>), idst, VectorMode::RC, param0)));
    (void)idst; (void)param0;
}

ALWI void hardsigmoid_tile_init_pack() { PACK((sfpu::hardsigmoid_init<APPROX>())); }
ALWI void hardsigmoid_tile_pack(uint32_t idst) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_activation<APPROX, ActivationType::Hardsigmoid, 8>), idst, VectorMode::RC)));
    (void)idst;
}

ALWI void hardtanh_tile_init_pack() { PACK((sfpu::hardtanh_init())); }
ALWI void hardtanh_tile_pack(uint32_t idst, uint32_t param0, uint32_t param1) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_hardtanh<APPROX, 8>), idst, VectorMode::RC, param0, param1)));
    (void)idst; (void)param0; (void)param1;
}

ALWI void selu_tile_init_pack() { PACK((sfpu::selu_init())); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void selu_tile_pack(uint32_t idst, uint32_t scale, uint32_t alpha) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_selu<APPROX, is_fp32_dest_acc_en, 8>), idst, VectorMode::RC, scale, alpha)));
    (void)idst; (void)scale; (void)alpha;
}

ALWI void softplus_tile_init_pack() { PACK((sfpu::softplus_init())); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void softplus_tile_pack(uint32_t idst, uint32_t beta, uint32_t beta_reciprocal, uint32_t threshold) {
    PACK((KEMU_SFPU_RUN((sfpu::calculate_softplus<APPROX, is_fp32_dest_acc_en>), idst, VectorMode::RC, beta,
                        beta_reciprocal, threshold)));
    (void)idst; (void)beta; (void)beta_reciprocal; (void)threshold;
}
#undef KEMU_SFPU_RUN
}  // namespace ckernel
using namespace ckernel;
