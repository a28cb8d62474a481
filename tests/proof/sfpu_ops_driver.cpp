// Test driver for kgen's host SFPU model: one operation per input line, "<op> <hex operands>", the
// result as hex on one line. Operands and results are FP32 / integer bit patterns in every lane;
// the driver prints lane 0 (all lanes agree) unless the operation is lane-wise ("pred", "layout").
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sfpi.h"

using namespace sfpi;
namespace ks = kemu_sfpu;

namespace {
uint32_t g_dst[64 * 16];

void print(const Vec &v, bool all = false) {
    for (int l = 0; l < (all ? LANES : 1); ++l) std::printf("%s%08x", l ? " " : "", v.u[l]);
    std::printf("\n");
}

vFloat f(uint32_t x) { return vFloat(splat(x)); }
vInt i(uint32_t x) { return vInt(splat(x)); }

// v_if (x < 0) 1 / v_elseif (x < 1) { 2, v_if (x < 0.5) 3 } / v_elseif (x == 2) 4 / v_else 5,
// then lanes with x >= 10 get 6 added in a second, separate v_if.
Vec predicated(const Vec &x) {
    vFloat v(x), r = 0.0f;
    v_if (v < 0.0f) { r = 1.0f; }
    v_elseif (v < 1.0f) {
        r = 2.0f;
        v_if (v < 0.5f) { r = 3.0f; }
        v_endif;
    }
    v_elseif (v == 2.0f) { r = 4.0f; }
    v_else { r = 5.0f; }
    v_endif;
    v_if (v >= 10.0f) { r = r + 6.0f; }
    v_endif;
    return r.v;
}

// Dst layout: datum k holds k; dst_reg[0] += 1000 and dst_reg[1] += 2000 at the first rows.
void layout() {
    for (uint32_t k = 0; k < 64 * 16; ++k) g_dst[k] = ks::u32(float(k));
    ks::State &s = ks::st();
    s.dst = g_dst, s.dst_rows = 64, s.fp32_dest = true, s.base_row = 0, s.rwc_dst = 0;
    dst_reg[0] = dst_reg[0] + 1000.0f;
    dst_reg[1] = dst_reg[1] + 2000.0f;
    for (uint32_t k = 0; k < 64; ++k) std::printf("%s%08x", k ? " " : "", g_dst[k]);
    std::printf("\n");
}

Vec store_load(uint32_t x, bool fp32) {
    ks::State &s = ks::st();
    std::memset(g_dst, 0, sizeof g_dst);
    s.dst = g_dst, s.dst_rows = 64, s.fp32_dest = fp32, s.base_row = 0, s.rwc_dst = 0;
    dst_reg[0] = f(x);
    return splat(g_dst[0]);
}

Vec run(const std::string &op, const std::vector<uint32_t> &a) {
    if (op == "mad") return mad(splat(a[0]), splat(a[1]), splat(a[2]));
    if (op == "add") return (f(a[0]) + f(a[1])).v;
    if (op == "sub") return (f(a[0]) - f(a[1])).v;
    if (op == "mul") return vFloat(f(a[0]) * f(a[1])).v;
    if (op == "rnd_fp16b") return convert<vFloat16b>(f(a[0]), RoundMode::Nearest).v;
    if (op == "rnd_int16") return convert<vSMag16>(f(a[0]), RoundMode::Nearest).v;
    if (op == "rnd_uint8") return convert<vUInt8>(f(a[0]), RoundMode::Nearest).v;
    if (op == "cast") return convert<vFloat>(vMag(splat(a[0])), RoundMode::Nearest).v;
    if (op == "exexp") return exexp(f(a[0])).v;
    if (op == "exexp_biased") return exexp(f(a[0]), ExponentMode::Biased).v;
    if (op == "exman_hidden") return exman(f(a[0]), MantissaMode::ImplicitOne).v;
    if (op == "exman") return exman(f(a[0])).v;
    if (op == "setexp") return setexp(f(a[0]), i(a[1])).v;
    if (op == "setman") return setman(f(a[0]), i(a[1])).v;
    if (op == "setsgn") return setsgn(f(a[0]), int(a[1])).v;
    if (op == "abs_f") return abs(f(a[0])).v;
    if (op == "abs_i") return abs(i(a[0])).v;
    if (op == "min") return min(f(a[0]), f(a[1])).v;
    if (op == "max") return max(f(a[0]), f(a[1])).v;
    if (op == "shft") return shft(vMag(splat(a[0])), i(a[1])).v;
    if (op == "lut8") return lut(f(a[2]), vLut8si(splat(a[0])), vLut8si(splat(a[0])), vLut8si(splat(a[1])), a[3] ? LutSign::Retain : LutSign::Update).v;
    if (op == "lut8c") {   // slope from a float, intercept 0, in every range
        const vLut8si c(ks::f32(a[0]), 0.0f);
        return lut(f(a[1]), c, c, c, LutSign::Update).v;
    }
    if (op == "lut16") {
        const vLut16ss s(splat(a[0])), c(splat(a[1]));
        return lut(f(a[2]), s, c, s, c, s, c, LutSign::Update).v;
    }
    if (op == "store_bf16") return store_load(a[0], false);
    if (op == "store_fp32") return store_load(a[0], true);
    if (op == "lt") { vFloat r = 0.0f; v_if (f(a[0]) < f(a[1])) { r = 1.0f; } v_endif; return r.v; }
    if (op == "lt0") { vFloat r = 0.0f; v_if (f(a[0]) < 0.0f) { r = 1.0f; } v_endif; return r.v; }
    if (op == "eq0") { vFloat r = 0.0f; v_if (f(a[0]) == 0.0f) { r = 1.0f; } v_endif; return r.v; }
    if (op == "ilt") { vFloat r = 0.0f; v_if (i(a[0]) < i(a[1])) { r = 1.0f; } v_endif; return r.v; }
#if defined(ARCH_BLACKHOLE)
    if (op == "recip") return approx_recip(f(a[0])).v;
#endif
    std::fprintf(stderr, "unknown op %s\n", op.c_str());
    std::exit(2);
}
}  // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string op;
        in >> op;
        std::vector<uint32_t> args;
        std::string word;
        while (in >> word) args.push_back(uint32_t(std::stoul(word, nullptr, 16)));
        args.resize(4, 0);
        if (op == "layout") {
            layout();
        } else if (op == "pred") {
            Vec x;
            for (int l = 0; l < LANES; ++l) x.u[l] = ks::u32(float(l) * 0.25f - 1.0f + (l == 31 ? 11.0f : 0.0f));
            print(predicated(x), true);
        } else {
            print(run(op, args));
        }
        std::fflush(stdout);
    }
    return 0;
}
