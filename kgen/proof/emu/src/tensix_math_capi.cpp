// extern "C" wrappers of tensix_math for tests and benchmarks (ctypes); not used by the emulator.
// Tiles are passed as flat arrays: L1 tile bytes, or 1024 uint32 (src19 datums / Dst fp32 patterns)
// in face order. The configuration is a KemuConfig (mirrored by a ctypes.Structure in the tests).

#include <chrono>
#include <memory>

#include "tensix_math.h"

extern "C" {

struct KemuConfig {
    int fp32_dest_acc;
    int fidelity;        // ckernel::MathFidelity: 0 LoFi, 2 HiFi2, 3 HiFi3, 4 HiFi4
    int wormhole_quirk;
    int fast;
    int bfp_pack_src;    // tt::DataFormat: 5 Float16_b (default), 6 Bfp8_b
};

}  // extern "C"

namespace {

kemu::MathConfig to_cfg(const KemuConfig* c) {
    kemu::MathConfig m;
    m.fp32_dest_acc = c->fp32_dest_acc != 0;
    m.fidelity = static_cast<kemu::Fidelity>(c->fidelity);
    m.wormhole_quirk = c->wormhole_quirk != 0;
    m.fast = c->fast != 0;
    m.bfp_pack_src = static_cast<kemu::DataFormat>(c->bfp_pack_src);
    return m;
}

kemu::DataFormat fmt_of(int f) { return static_cast<kemu::DataFormat>(f); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) unsigned kemu_tile_bytes(int fmt) { return kemu::tile_bytes(fmt_of(fmt)); }

__attribute__((visibility("default"))) int kemu_fidelity_phases(int fidelity) {
    return kemu::fidelity_phases(static_cast<kemu::Fidelity>(fidelity));
}

__attribute__((visibility("default"))) void kemu_unpack_src(const uint8_t* tile, int fmt, int fp32_dest_acc, uint32_t* out) {
    kemu::unpack_src(tile, fmt_of(fmt), fp32_dest_acc != 0, out);
}

// Dst += in0 @ in1 over `ntiles` K-tiles: in0_src19 / in1_src19 hold ntiles consecutive src19 tiles each.
__attribute__((visibility("default"))) void kemu_matmul_tiles(uint32_t* dst, const uint32_t* in0_src19,
                                                              const uint32_t* in1_src19, int ntiles,
                                                              const KemuConfig* c) {
    const kemu::MathConfig cfg = to_cfg(c);
    auto a = std::make_unique<kemu::SrcAOperand>();
    auto b = std::make_unique<kemu::SrcBOperand>();
    for (int t = 0; t < ntiles; ++t) {
        kemu::prepare_srcb(in0_src19 + t * kemu::TILE_DATUMS, cfg, *b);
        kemu::prepare_srca(in1_src19 + t * kemu::TILE_DATUMS, cfg, *a);
        kemu::matmul_tile(dst, *b, *a, cfg);
    }
}

// Seconds for `reps` matmul_tile calls on operands prepared once (Dst reset to zero first).
__attribute__((visibility("default"))) double kemu_bench_matmul(const uint32_t* in0_src19, const uint32_t* in1_src19,
                                                                int reps, const KemuConfig* c, uint32_t* dst) {
    const kemu::MathConfig cfg = to_cfg(c);
    auto a = std::make_unique<kemu::SrcAOperand>();
    auto b = std::make_unique<kemu::SrcBOperand>();
    kemu::prepare_srcb(in0_src19, cfg, *b);
    kemu::prepare_srca(in1_src19, cfg, *a);
    for (int i = 0; i < kemu::TILE_DATUMS; ++i) dst[i] = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) kemu::matmul_tile(dst, *b, *a, cfg);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count();
}

__attribute__((visibility("default"))) void kemu_add_tiles(const uint32_t* srca19, const uint32_t* srcb19, int bcast_rows,
                                                           const KemuConfig* c, uint32_t* dst) {
    kemu::add_tiles(srca19, srcb19, bcast_rows != 0, to_cfg(c), dst);
}

__attribute__((visibility("default"))) uint32_t kemu_fpu_accumulate(uint32_t dst, int s0, int e0, int64_t m0, int s1,
                                                                    int e1, int64_t m1, int fp32, int wh) {
    return kemu::fpu_accumulate(dst, s0, e0, m0, s1, e1, m1, fp32 != 0, wh != 0);
}

__attribute__((visibility("default"))) void kemu_copy_tile_to_dst(const uint8_t* tile, int fmt, const KemuConfig* c,
                                                                  int unpack_to_dest_fp32, uint32_t* dst) {
    kemu::copy_tile_to_dst(tile, fmt_of(fmt), to_cfg(c), unpack_to_dest_fp32 != 0, dst);
}

__attribute__((visibility("default"))) int kemu_pack_tile(const uint32_t* dst, int fmt, const KemuConfig* c, int relu,
                                                          int l1_acc, uint8_t* tile) {
    return kemu::pack_tile(dst, fmt_of(fmt), to_cfg(c), relu != 0, l1_acc != 0, tile) ? 1 : 0;
}

__attribute__((visibility("default"))) void kemu_round_dst_fast(uint32_t* dst, const KemuConfig* c) {
    kemu::round_dst_fast(dst, to_cfg(c));
}

}  // extern "C"
