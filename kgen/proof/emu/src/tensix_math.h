// Tile arithmetic of the Tensix matrix engine (unpacker, FPU MVMUL / ELWADD, Dst, packer, packer
// L1 accumulation) for the host emulator, bit for bit as kgen/proof/numerics.py and kgen/proof/golden.py model it
// (the NumPy model stays the independent reference; tests/proof/test_tensix_math.py compares the two).
// Section numbers refer to docs/reference/numerics.md.
//
// Representations (as numerics.py):
//  * a tile is 1024 datums in face order (four 16x16 faces, each row-major; datum i is at face i/256,
//    face row (i/16)%16, face column i%16), L1 byte images as kgen/proof/tiles.py (§9);
//  * src19: the 19-bit source-register datum sign<<18 | exp8<<10 | man10 (§2.1), held in a uint32;
//  * Dst: 1024 uint32 fp32 bit patterns; in bf16-Dst mode (fp32_dest_acc off) the low 16 bits are zero
//    (exception: fast mode, see MathConfig::fast).
//
// Standard C++17 only; no exceptions, no global state, every function is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kemu {

// tt::DataFormat numbers.
enum class DataFormat : uint8_t { Float32 = 0, Float16_b = 5, Bfp8_b = 6, Bfp4_b = 7, Invalid = 255 };

constexpr int TILE_DIM = 32;
constexpr int FACE_DIM = 16;
constexpr int TILE_DATUMS = 1024;

// L1 bytes of one tile: 4096 (Float32), 2048 (Float16_b), 1088 (Bfp8_b), 576 (Bfp4_b); 0 otherwise.
uint32_t tile_bytes(DataFormat f);

// ckernel::MathFidelity values. Phases run by the LLK matmul: LoFi {0}, HiFiN {0..N-1} (§3.2).
enum class Fidelity : uint8_t { LoFi = 0, HiFi2 = 2, HiFi3 = 3, HiFi4 = 4 };
int fidelity_phases(Fidelity f);  // 1, 2, 3, 4

struct MathConfig {
    bool fp32_dest_acc = false;     // Dst in fp32 (else bf16)
    Fidelity fidelity = Fidelity::LoFi;
    bool wormhole_quirk = false;    // numerics.fpu_accumulate(wormhole_bug=True): arch wormhole_b0 (§4 step 8)
    // Fast mode: matmul_tile in float32 on the fidelity-sliced operands (golden mode="fast"), add_tiles
    // as a float32 add; unpack / pack / L1 acc / reload conversions as in exact mode. Dst then holds
    // float32 values between matmul_tile calls even in bf16-Dst mode; pack_tile rounds them to bf16
    // (half away from zero), as golden's fast mode does at the end of every K-block.
    bool fast = false;
    // Packer intermediate for block-float outputs (numerics.pack_src_format bfp_pack_src):
    // Float16_b (§8.1, TT-Metal's choice) or Bfp8_b (the E8M6 intermediate).
    DataFormat bfp_pack_src = DataFormat::Float16_b;
};

// ---- unpacker (§2) ------------------------------------------------------------------------------

// An L1 tile (bytes in `fmt`) -> 1024 src19 datums in face order (numerics.unpack_to_src): Float32 ->
// TF32 (fp32_dest_acc) or BF16 by truncation, Float16_b bit copy, block floats by the hardware BFP->BF16
// rule; a zero exponent field reads as zero.
void unpack_src(const uint8_t* l1_tile, DataFormat fmt, bool fp32_dest_acc, uint32_t* src19_out);
// A tile's 1024 datums in face order transposed (row r, column c -> row c, column r): TT's unpack with
// transpose_of_faces and the within-face transpose (transpose_tile, matmul_block's in1 transpose flag).
void transpose_datums(uint32_t* datums);

// ---- matmul operands ---------------------------------------------------------------------------
//
// Prepared once per unpacked tile, row-major (no face order): SrcA holds in1 (K x N, [k][n]),
// SrcB holds in0 (M x K, [m][k]). Exact mode: the biased exponent (ZERO_EXP for a zero datum) and the
// signed fidelity slices as small integers in float (§3.1, §4 step 2). Fast mode: float32 values with
// golden._fidelity_operands' masks.

constexpr int32_t ZERO_EXP = -(1 << 20);

struct alignas(64) SrcAOperand {
    int32_t exp[TILE_DATUMS];       // exact: exponent field, ZERO_EXP for zero
    float hi[TILE_DATUMS];          // exact: +-(man11 >> 6)          (phase bit 0 clear)
    float lo[TILE_DATUMS];          // exact: +-((man11 >> 1) & 31)   (phase bit 0 set)
    float f_full[TILE_DATUMS];      // fast: value with the last TF32 bit dropped (& 0xFFFFC000)
    float f_hi[TILE_DATUMS];        // fast: value with 5 significant bits (& 0xFFF80000)
    bool fast;                      // which half was prepared
};

struct alignas(64) SrcBOperand {
    int32_t exp[TILE_DATUMS];       // exact: exponent field, ZERO_EXP for zero
    float hi[TILE_DATUMS];          // exact: +-(man11 >> 4)          (phase bit 1 clear)
    float lo[TILE_DATUMS];          // exact: +-((man11 & 15) << 3)   (phase bit 1 set)
    float f_full[TILE_DATUMS];      // fast: the whole value
    float f_hi[TILE_DATUMS];        // fast: value with 7 significant bits (& 0xFFFE0000)
    float f_lo[TILE_DATUMS];        // fast: f_full - f_hi
    bool fast;
};

void prepare_srca(const uint32_t* src19, const MathConfig& cfg, SrcAOperand& out);
void prepare_srcb(const uint32_t* src19, const MathConfig& cfg, SrcBOperand& out);

// ---- FPU ---------------------------------------------------------------------------------------

// Dst += in0 (SrcB, M x K tile) @ in1 (SrcA, K x N tile): the LLK sequence of one tile (§6): for each
// fidelity phase, for K-face 0 then 1, one MVMUL per output datum (two 8-lane groups, then
// numerics.fpu_accumulate; §4). Exact mode is bit-exact to numerics.mvmul. `dst`: face order.
// The operands must have been prepared in the same mode (exact / fast) as cfg.
void matmul_tile(uint32_t* dst, const SrcBOperand& in0, const SrcAOperand& in1, const MathConfig& cfg);

// FPU ELWADD of the fused-bias stage (numerics.elwadd, golden._bias_add): dst = srca + srcb, both src19
// tiles in face order; with bcast_rows the SrcB operand is row 0 of srcb broadcast down all 32 rows
// (add_tiles_bcast_rows), else elementwise. Fast mode: float32 add, Dst rounding as golden fast.
void add_tiles(const uint32_t* srca19, const uint32_t* srcb19, bool bcast_rows, const MathConfig& cfg,
               uint32_t* dst);

// One fpu_accumulate step (numerics.fpu_accumulate) on a single datum; exposed for tests / other ops.
uint32_t fpu_accumulate(uint32_t dst, int s0, int e0, int64_t m0, int s1, int e1, int64_t m1,
                        bool fp32_dest_acc, bool wormhole_bug);

// ---- Dst <- L1 (§7.2) ------------------------------------------------------------------------------

// copy_tile / reload of partials (numerics.reload_to_dst): through SrcA (Float32 -> TF32 / BF16 by
// truncation), or, for Float32 with fp32 Dst and unpack_to_dest_fp32, losslessly (denormals -> 0).
void copy_tile_to_dst(const uint8_t* l1_tile, DataFormat fmt, const MathConfig& cfg, bool unpack_to_dest_fp32,
                      uint32_t* dst);

// ---- packer (§8, §7.4) ---------------------------------------------------------------------------

// Dst -> L1 tile in `out` (numerics.pack with cfg.bfp_pack_src): early conversion, ReLU (PACK_RELU) on the
// intermediate, late conversion. With l1_acc the packed tile is added to the tile already in `l1_tile`
// (numerics.l1_accumulate; Float32 / Float16_b only): returns false, writing nothing, for another format.
bool pack_tile(const uint32_t* dst, DataFormat out, const MathConfig& cfg, bool relu, bool l1_acc,
               uint8_t* l1_tile);

// Fast mode's Dst rounding (golden._round_dst): bf16 Dst -> round half away to bf16 (NaN -> Inf,
// denormals -> 0); fp32 Dst: unchanged. pack_tile applies it itself in fast mode.
void round_dst_fast(uint32_t* dst, const MathConfig& cfg);

}  // namespace kemu
