// kgen's SFPU harness: TT-Metal 0.81.1's bmm_fused_activation.hpp, unchanged, on the host SFPU model.
// Built per activation and configuration (-DKEMU_ACT, -DKEMU_P0..2 as the kernel's named compile-time
// args activation_type / activation_param0..2; chlkc_descriptors.h beside it gives DST_ACCUM_MODE
// and APPROX). It loads the tiles into DST, runs the kernel's init and per-tile apply helpers, and
// writes DST back: `sfpu_harness IN OUT NTILES FP32_DEST` (IN / OUT: little-endian FP32 patterns).
#define KEMU_SFPU_HARNESS 1
#include <cstdio>
#include <vector>

#include "bmm_fused_activation.hpp"

namespace {
std::vector<uint32_t> g_dst;
bool g_fp32 = false;
}  // namespace

kemu_sfpu::DstView kemu_sfpu::dst_for_sfpu(uint32_t tile_index) {
    if (size_t(tile_index + 1) * 1024 > g_dst.size()) not_modelled("a tile beyond the harness's DST");
    return DstView{g_dst.data() + size_t(tile_index) * 1024, 64, g_fp32};
}

// The runtime entry points the compute API names; the harness's activation path reaches none.
namespace kemu {
[[noreturn]] void unsupported(const char *what, Where at) {
    std::fprintf(stderr, "%s:%d: %s is not supported by the SFPU harness\n", at.file, at.line, what);
    std::exit(3);
}
void dst_wait(Where at) { unsupported("dst_wait", at); }
void note_op(const char *, Where) {}
}  // namespace kemu

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: sfpu_harness IN OUT NTILES FP32_DEST\n");
        return 2;
    }
    const size_t tiles = std::strtoul(argv[3], nullptr, 10);
    g_fp32 = argv[4][0] == '1';
    g_dst.assign(tiles * 1024, 0);
    FILE *in = std::fopen(argv[1], "rb");
    if (!in || std::fread(g_dst.data(), 4, g_dst.size(), in) != g_dst.size()) return 2;
    std::fclose(in);
    constexpr auto act = static_cast<KernelActivation>(KEMU_ACT);
    ActivationInitHelper<act, KEMU_P0, KEMU_P1>::init();
    for (uint32_t t = 0; t < tiles; ++t) ActivationApplyHelper<act, KEMU_P0, KEMU_P1, KEMU_P2>::apply(t);
    FILE *out = std::fopen(argv[2], "wb");
    if (!out || std::fwrite(g_dst.data(), 4, g_dst.size(), out) != g_dst.size()) return 2;
    std::fclose(out);
    return 0;
}
