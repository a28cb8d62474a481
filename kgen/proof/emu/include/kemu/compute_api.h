// Host model of TT-Metal 0.81.1's compute kernel API (api/compute/*.h): one header behind all of
// their include names. A compute kernel is built three times (TRISC unpack, math, pack); each
// build keeps only what its thread does on the device, through the same UNPACK/MATH/PACK split the
// real headers use, and calls the emulator for it. The data formats come from the kernel's
// chlkc_descriptors.h, as the real unpacker and packer configuration does.
#pragma once

#include <cstdint>

#include "kemu/common.h"
#include "llk_defs.h"
#include "chlkc_descriptors.h"

#ifdef ARCH_WORMHOLE
#define KEMU_WORMHOLE true
#else
#define KEMU_WORMHOLE false
#endif

namespace kemu_compute {
#if defined(KEMU_TRISC_UNPACK) || defined(KEMU_TRISC_MATH)
inline int unpack_format(uint32_t cb) { return static_cast<int>(unpack_src_format[cb]); }
// the unpacker's destination format: Float32 for a Float32 CB the compute config marks UnpackToDestFp32
// (the JIT's get_unpack_dst_formats), which the unpacker then writes straight into DST
inline int unpack_dst(uint32_t cb) { return static_cast<int>(unpack_dst_format[cb]); }
#endif
#ifdef KEMU_TRISC_PACK
inline int pack_format(uint32_t cb) { return static_cast<int>(pack_dst_format[cb]); }
#endif
inline bool full_sync() {
#ifdef DST_SYNC_MODE
    return DST_SYNC_MODE == DstSync::SyncFull;
#else
    return false;
#endif
}
inline void configure_srca(uint32_t cb, kemu::Where at) {
    UNPACK((kemu::cfg_unpack(0, cb, unpack_format(cb), unpack_dst(cb), at)));
    (void)cb; (void)at;
}
inline void configure_srcb(uint32_t cb, kemu::Where at) {
    UNPACK((kemu::cfg_unpack(1, cb, unpack_format(cb), unpack_dst(cb), at)));
    (void)cb; (void)at;
}
inline void configure_pack(uint32_t cb, kemu::Where at) { PACK((kemu::cfg_pack(cb, pack_format(cb), at))); (void)cb; (void)at; }
inline void configure_threads(kemu::Where at) {
    MATH((kemu::cfg_math(static_cast<int>(MATH_FIDELITY), DST_ACCUM_MODE, full_sync(), KEMU_WORMHOLE, at)));
    UNPACK((kemu::cfg_fp32(DST_ACCUM_MODE, full_sync(), at)));
    PACK((kemu::cfg_fp32(DST_ACCUM_MODE, full_sync(), at)));
    (void)at;
}
}  // namespace kemu_compute

// ---- start-up and reconfiguration ------------------------------------------------------------
// SrcOrder::Reverse puts icb1 on SrcA and icb0 on SrcB (the matmul order: in1 -> SrcA, in0 -> SrcB).
template <SrcOrder order = SrcOrder::Forward>
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb, KEMU_WHERE) {
    kemu_compute::configure_threads(KEMU_AT);
    kemu_compute::configure_srca(order == SrcOrder::Reverse ? icb1 : icb0, KEMU_AT);
    kemu_compute::configure_srcb(order == SrcOrder::Reverse ? icb0 : icb1, KEMU_AT);
    kemu_compute::configure_pack(ocb, KEMU_AT);
}
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t ocb, KEMU_WHERE) {
    compute_kernel_hw_startup<SrcOrder::Forward>(icb0, icb0, ocb, kemu_file, kemu_line);
}

ALWI void reconfig_data_format_srca(uint32_t srca_new_operand, KEMU_WHERE) {
    kemu_compute::configure_srca(srca_new_operand, KEMU_AT);
}
ALWI void reconfig_data_format_srca(uint32_t srca_old_operand, uint32_t srca_new_operand, KEMU_WHERE) {
    (void)srca_old_operand;
    kemu_compute::configure_srca(srca_new_operand, KEMU_AT);
}
ALWI void reconfig_data_format_srcb(uint32_t srcb_new_operand, KEMU_WHERE) {
    kemu_compute::configure_srcb(srcb_new_operand, KEMU_AT);
}
ALWI void reconfig_data_format_srcb(uint32_t srcb_old_operand, uint32_t srcb_new_operand, KEMU_WHERE) {
    (void)srcb_old_operand;
    kemu_compute::configure_srcb(srcb_new_operand, KEMU_AT);
}
ALWI void reconfig_data_format(uint32_t srca_new_operand, uint32_t srcb_new_operand, KEMU_WHERE) {
    kemu_compute::configure_srca(srca_new_operand, KEMU_AT);
    kemu_compute::configure_srcb(srcb_new_operand, KEMU_AT);
}
ALWI void reconfig_data_format(uint32_t srca_old_operand, uint32_t srca_new_operand, uint32_t srcb_old_operand,
                               uint32_t srcb_new_operand, KEMU_WHERE) {
    (void)srca_old_operand;
    (void)srcb_old_operand;
    kemu_compute::configure_srca(srca_new_operand, KEMU_AT);
    kemu_compute::configure_srcb(srcb_new_operand, KEMU_AT);
}
ALWI void pack_reconfig_data_format(uint32_t new_operand, KEMU_WHERE) { kemu_compute::configure_pack(new_operand, KEMU_AT); }
ALWI void pack_reconfig_data_format(uint32_t old_operand, uint32_t new_operand, KEMU_WHERE) {
    (void)old_operand;
    kemu_compute::configure_pack(new_operand, KEMU_AT);
}
ALWI void pack_reconfig_l1_acc(uint32_t l1_acc_en, KEMU_WHERE) { PACK((kemu::pack_l1_acc(l1_acc_en != 0, KEMU_AT))); (void)l1_acc_en; (void)kemu_file; (void)kemu_line; }

struct ReluConfig {
    bool enabled;
    static constexpr ReluConfig zero() { return ReluConfig{true}; }
    static constexpr ReluConfig none() { return ReluConfig{false}; }
};
ALWI void pack_relu_config(ReluConfig config, KEMU_WHERE) { PACK((kemu::pack_relu(config.enabled, KEMU_AT))); (void)config; (void)kemu_file; (void)kemu_line; }
ALWI void pack_relu_config(uint32_t config, KEMU_WHERE) { PACK((kemu::pack_relu(config != 0, KEMU_AT))); (void)config; (void)kemu_file; (void)kemu_line; }
// The LLK calls TT-Metal's Metal 2.0 compute kernels make directly, inside PACK(( )).
ALWI void llk_pack_reconfig_l1_acc(uint32_t l1_acc_en, KEMU_WHERE) { kemu::pack_l1_acc(l1_acc_en != 0, KEMU_AT); }
ALWI void llk_pack_relu_config(ReluConfig config, KEMU_WHERE) { kemu::pack_relu(config.enabled, KEMU_AT); }

// ---- DST ownership: math acquires and commits, pack waits and releases -----------------------
ALWI void tile_regs_acquire(KEMU_WHERE) { MATH((kemu::dst_acquire(KEMU_AT))); (void)kemu_file; (void)kemu_line; }
ALWI void tile_regs_commit(KEMU_WHERE) { MATH((kemu::dst_commit(KEMU_AT))); (void)kemu_file; (void)kemu_line; }
ALWI void tile_regs_wait(KEMU_WHERE) { PACK((kemu::dst_wait(KEMU_AT))); (void)kemu_file; (void)kemu_line; }
ALWI void tile_regs_release(KEMU_WHERE) { PACK((kemu::dst_release(KEMU_AT))); (void)kemu_file; (void)kemu_line; }
ALWI void acquire_dst(KEMU_WHERE) {
    MATH((kemu::dst_acquire(KEMU_AT)));
    PACK((kemu::dst_wait(KEMU_AT)));
    (void)kemu_file; (void)kemu_line;
}
ALWI void release_dst(KEMU_WHERE) {
    MATH((kemu::dst_commit(KEMU_AT)));
    PACK((kemu::dst_release(KEMU_AT)));
    (void)kemu_file; (void)kemu_line;
}

// ---- matmul ----------------------------------------------------------------------------------
ALWI void mm_init(uint32_t in0_cb, uint32_t in1_cb, uint32_t out_cb, uint32_t transpose = 0, KEMU_WHERE) {
    if (transpose) kemu::unsupported("mm_init with transpose", KEMU_AT);
    compute_kernel_hw_startup<SrcOrder::Reverse>(in0_cb, in1_cb, out_cb, kemu_file, kemu_line);
}
ALWI void mm_init_short(uint32_t in0_cb, uint32_t in1_cb, uint32_t transpose = 0, KEMU_WHERE) {
    (void)in0_cb; (void)in1_cb; (void)transpose;   // the transpose itself is matmul_block's argument
    kemu::note_op("mm_init_short", KEMU_AT);
}
ALWI void matmul_tiles(uint32_t in0_cb, uint32_t in1_cb, uint32_t in0_tile_index, uint32_t in1_tile_index,
                       uint32_t idst, uint32_t transpose = 0, KEMU_WHERE) {
    if (transpose) kemu::unsupported("matmul_tiles with transpose", KEMU_AT);
    UNPACK((kemu::unpack_matmul(in0_cb, in1_cb, in0_tile_index, in1_tile_index, 1, 1, 1, KEMU_AT)));
    MATH((kemu::math_matmul(idst, 1, 1, KEMU_AT)));
    (void)in0_cb; (void)in1_cb; (void)in0_tile_index; (void)in1_tile_index; (void)idst;
}
ALWI void matmul_block_init(uint32_t in0_cb, uint32_t in1_cb, uint32_t transpose = 0, uint32_t ct_dim = 1,
                            uint32_t rt_dim = 1, uint32_t kt_dim = 1, KEMU_WHERE) {
    (void)transpose;   // the transpose itself is matmul_block's argument (TT passes both the same flag)
    (void)in0_cb; (void)in1_cb; (void)ct_dim; (void)rt_dim; (void)kt_dim;
    kemu::note_op("matmul_block_init", KEMU_AT);
}
// matmul.h's matmul_init: the block init with unit dimensions (the same LLK inits, ct = rt = kt = 1)
ALWI void matmul_init(uint32_t in0_cb, uint32_t in1_cb, uint32_t transpose = 0, KEMU_WHERE) {
    matmul_block_init(in0_cb, in1_cb, transpose, 1, 1, 1, kemu_file, kemu_line);
}
// Dst[idst + r * ct_dim + c] += in0[in0_tile_index + r * kt_dim] @ in1[in1_tile_index + c] (each in1 tile
// transposed within itself with `transpose`: TT's IN1_TRANSPOSE_TILE, in1 unpacked into SrcA transposed).
ALWI void matmul_block(uint32_t in0_cb, uint32_t in1_cb, uint32_t in0_tile_index, uint32_t in1_tile_index,
                       uint32_t idst, uint32_t transpose, uint32_t ct_dim, uint32_t rt_dim, uint32_t kt_dim,
                       KEMU_WHERE) {
    UNPACK((kemu::unpack_matmul(in0_cb, in1_cb, in0_tile_index, in1_tile_index, ct_dim, rt_dim, kt_dim, KEMU_AT,
                                transpose != 0)));
    (void)transpose;
    MATH((kemu::math_matmul(idst, ct_dim, rt_dim, KEMU_AT)));
    (void)in0_cb; (void)in1_cb; (void)in0_tile_index; (void)in1_tile_index; (void)idst; (void)kt_dim;
}

// ---- copies into DST (reload of partials, untilize) ------------------------------------------
ALWI void copy_tile_to_dst_init_short(uint32_t cbid, uint32_t transpose = 0, KEMU_WHERE) {
    if (transpose) kemu::unsupported("copy_tile init with transpose", KEMU_AT);
    (void)cbid;
    kemu::note_op("copy_tile_init", KEMU_AT);
}
ALWI void copy_tile_init(uint32_t cbid, KEMU_WHERE) { copy_tile_to_dst_init_short(cbid, 0, kemu_file, kemu_line); }
ALWI void copy_init(uint32_t cbid, KEMU_WHERE) { copy_tile_to_dst_init_short(cbid, 0, kemu_file, kemu_line); }
ALWI void copy_tile(uint32_t in_cb_id, uint32_t in_tile_index, uint32_t dst_tile_index, KEMU_WHERE) {
    UNPACK((kemu::unpack_copy(in_cb_id, in_tile_index, 1, KEMU_AT)));
    MATH((kemu::math_copy(dst_tile_index, 1, KEMU_AT)));
    (void)in_cb_id; (void)in_tile_index; (void)dst_tile_index; (void)kemu_file; (void)kemu_line;
}
ALWI void copy_block(uint32_t in_cb_id, uint32_t start_in_tile_index, uint32_t start_dst_tile_index, uint32_t ntiles,
                     KEMU_WHERE) {
    UNPACK((kemu::unpack_copy(in_cb_id, start_in_tile_index, ntiles, KEMU_AT)));
    MATH((kemu::math_copy(start_dst_tile_index, ntiles, KEMU_AT)));
    (void)in_cb_id; (void)start_in_tile_index; (void)start_dst_tile_index; (void)ntiles; (void)kemu_file; (void)kemu_line;
}
ALWI void copy_block_matmul_partials(uint32_t in_cb_id, uint32_t start_in_tile_index, uint32_t start_dst_tile_index,
                                     uint32_t ntiles, KEMU_WHERE) {
    copy_block(in_cb_id, start_in_tile_index, start_dst_tile_index, ntiles, kemu_file, kemu_line);
}

// ---- packing ---------------------------------------------------------------------------------
template <bool out_of_order_output = false>
ALWI void pack_tile(uint32_t ifrom_dst, uint32_t icb, uint32_t output_tile_index = 0, KEMU_WHERE) {
    PACK((kemu::pack_tiles(ifrom_dst, icb, 1, out_of_order_output ? static_cast<int>(output_tile_index) : -1, KEMU_AT)));
    (void)ifrom_dst; (void)icb; (void)output_tile_index; (void)kemu_file; (void)kemu_line;
}
ALWI void pack_block(uint32_t ifrom_dst, uint32_t icb, uint32_t ntiles, KEMU_WHERE) {
    PACK((kemu::pack_tiles(ifrom_dst, icb, ntiles, -1, KEMU_AT)));
    (void)ifrom_dst; (void)icb; (void)ntiles; (void)kemu_file; (void)kemu_line;
}
ALWI void pack_tile_block(uint32_t ifrom_dst, uint32_t icb, uint32_t ntiles, KEMU_WHERE) {
    pack_block(ifrom_dst, icb, ntiles, kemu_file, kemu_line);
}

template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool diagonal = false, bool narrow_row = false,
          uint32_t row_num_datums = 16>
ALWI void pack_untilize_dest_init(uint32_t ocb, uint32_t face_r_dim = 16, uint32_t num_faces = 4, KEMU_WHERE) {
    if (face_r_dim != 16 || num_faces != 4) kemu::unsupported("pack_untilize_dest_init with partial faces", KEMU_AT);
    kemu_compute::configure_pack(ocb, KEMU_AT);
}
template <uint32_t block_ct_dim = 8, uint32_t full_ct_dim = block_ct_dim, bool diagonal = false, bool narrow_row = false,
          uint32_t row_num_datums = 16>
ALWI void pack_untilize_dest(uint32_t ocb, uint32_t block_rt_dim = 1, uint32_t block_c_index = 0,
                             uint32_t face_r_dim = 16, uint32_t num_faces = 4, KEMU_WHERE) {
    if (face_r_dim != 16 || num_faces != 4 || diagonal || narrow_row)
        kemu::unsupported("pack_untilize_dest with partial faces", KEMU_AT);
    PACK((kemu::pack_untilize(ocb, block_ct_dim, full_ct_dim, block_rt_dim, block_c_index, KEMU_AT)));
    (void)ocb; (void)block_rt_dim; (void)block_c_index;
}
ALWI void pack_untilize_uninit(uint32_t ocb, KEMU_WHERE) {
    (void)ocb;
    kemu::note_op("pack_untilize_uninit", KEMU_AT);
}

// ---- element-wise (the fused bias stage) -----------------------------------------------------
ALWI void add_bcast_rows_init_short(uint32_t icb0, uint32_t icb1, KEMU_WHERE) {
    (void)icb0; (void)icb1;
    kemu::note_op("add_bcast_rows_init", KEMU_AT);
}
ALWI void add_bcast_rows_init(uint32_t icb0, uint32_t icb1, KEMU_WHERE) { add_bcast_rows_init_short(icb0, icb1, kemu_file, kemu_line); }
ALWI void add_tiles_bcast_rows(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, KEMU_WHERE) {
    UNPACK((kemu::unpack_binary(icb0, icb1, itile0, itile1, true, KEMU_AT)));
    MATH((kemu::math_binary(idst, KEMU_AT)));
    (void)icb0; (void)icb1; (void)itile0; (void)itile1; (void)idst; (void)kemu_file; (void)kemu_line;
}
ALWI void add_tiles_init(uint32_t icb0, uint32_t icb1, bool acc_to_dest = false, KEMU_WHERE) {
    if (acc_to_dest) kemu::unsupported("add_tiles_init with acc_to_dest", KEMU_AT);
    (void)icb0; (void)icb1;
    kemu::note_op("add_tiles_init", KEMU_AT);
}
ALWI void add_init(uint32_t icb0, uint32_t icb1, KEMU_WHERE) { add_tiles_init(icb0, icb1, false, kemu_file, kemu_line); }
ALWI void add_tiles(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, KEMU_WHERE) {
    UNPACK((kemu::unpack_binary(icb0, icb1, itile0, itile1, false, KEMU_AT)));
    MATH((kemu::math_binary(idst, KEMU_AT)));
    (void)icb0; (void)icb1; (void)itile0; (void)itile1; (void)idst; (void)kemu_file; (void)kemu_line;
}

// ---- transposes (transpose_a: TT's in0_transpose_tile stage) -----------------------------------
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_init(uint32_t icb, KEMU_WHERE) { (void)icb; kemu::note_op("transpose_init", KEMU_AT); }
ALWI void transpose_wh_init(uint32_t icb, uint32_t ocb, KEMU_WHERE) { (void)icb; (void)ocb; kemu::note_op("transpose_wh_init", KEMU_AT); }
ALWI void transpose_wh_init_short(uint32_t icb, KEMU_WHERE) { (void)icb; kemu::note_op("transpose_wh_init_short", KEMU_AT); }
// TT's transpose_tile: unpack into SrcA with transpose_of_faces and the within-face transpose, datacopy A2D
// (api/compute/transpose.h; a Float32-unpacked CB takes TT's unpack-to-dest path, the same permutation).
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_tile(uint32_t icb, uint32_t itile, uint32_t idst, KEMU_WHERE) {
    UNPACK((kemu::unpack_transpose(icb, itile, KEMU_AT)));
    MATH((kemu::math_copy(idst, 1, KEMU_AT)));
    (void)icb; (void)itile; (void)idst; (void)kemu_file; (void)kemu_line;
}
ALWI void transpose_wh_tile(uint32_t icb, uint32_t itile, uint32_t idst, KEMU_WHERE) {
    transpose_tile(icb, itile, idst, kemu_file, kemu_line);
}
