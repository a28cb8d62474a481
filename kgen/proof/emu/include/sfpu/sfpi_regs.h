// kgen host SFPI: the register files. dst_reg[i] is SFPLOAD / SFPSTORE at Dst address 2 * i plus
// the Dst counter (SFPLOAD.md, SFPSTORE.md); dst_reg++ advances the counter by SFP_DESTREG_STRIDE
// rows' worth of address (2: the next 32 datums); l_reg[] names LReg[0..7]; the programmable
// constants are LReg[12..14] (vConstFloatPrgm0..2, also read as integers), written through SFPCONFIG.
#pragma once

namespace sfpi {

struct DstRef {
    uint32_t imm;
    ks::Fmt fmt = ks::Fmt::Default;
    template <class T>
    operator T() const {
        Vec v = splat(0);
        ks::sfpload(v, imm, fmt);
        return T(v);
    }
    operator vFloat() const { return vFloat(load()); }
    Vec load() const { Vec v = splat(0); ks::sfpload(v, imm, fmt); return v; }
    const DstRef &operator=(const vFloat &x) const { ks::sfpstore(x.v, imm, fmt); return *this; }
    const DstRef &operator=(const vMul &x) const { return *this = vFloat(x); }
    template <int K>
    const DstRef &operator=(const vIntT<K> &x) const { ks::sfpstore(x.v, imm, fmt); return *this; }
    const DstRef &operator=(float x) const { return *this = vFloat(x); }
    const DstRef &operator=(const DstRef &o) const { return *this = vFloat(o.load()); }
    // dst_reg[i].mode<DataLayout::I32>(): the raw 32-bit view (SFPLOAD / SFPSTORE Mod0 INT32).
    template <DataLayout L>
    DstRef mode() const { return DstRef{imm, L == DataLayout::Default ? ks::Fmt::Default : ks::Fmt::Int32}; }
};
inline vFloat operator+(const DstRef &a, const vFloat &b) { return vFloat(a.load()) + b; }
inline vFloat operator-(const DstRef &a, const vFloat &b) { return vFloat(a.load()) - b; }
inline vMul operator*(const DstRef &a, const vFloat &b) { return vFloat(a.load()) * b; }
inline vMul operator*(const DstRef &a, float b) { return vFloat(a.load()) * b; }
inline vFloat operator+(const DstRef &a, float b) { return vFloat(a.load()) + b; }
inline vFloat operator-(const DstRef &a, float b) { return vFloat(a.load()) - b; }
inline vMul operator*(const DstRef &a, const DstRef &b) { return vFloat(a.load()) * vFloat(b.load()); }
inline vFloat operator+(const DstRef &a, const DstRef &b) { return vFloat(a.load()) + vFloat(b.load()); }

struct DstRegFile {
    DstRef operator[](int i) const { return DstRef{uint32_t(i) * SFP_DESTREG_STRIDE}; }
    // TTI_INCRWC: the Dst counter, as dst_reg++ issues it
    void operator++(int) const { ks::st().rwc_dst += SFP_DESTREG_STRIDE; }
    void operator++() const { ks::st().rwc_dst += SFP_DESTREG_STRIDE; }
    void operator+=(int n) const { ks::st().rwc_dst += uint32_t(n) * SFP_DESTREG_STRIDE; }
};
inline constexpr DstRegFile dst_reg{};

struct LRegRef {
    int r;
    template <class T>
    operator T() const { return T(ks::st().lreg[r]); }
    template <class T>
    const LRegRef &operator=(const T &x) const { assign(ks::st().lreg[r], x.v); return *this; }
};
struct LRegFile {
    LRegRef operator[](LRegs r) const { return LRegRef{int(r)}; }
    LRegRef operator[](int r) const { return LRegRef{r}; }
};
inline constexpr LRegFile l_reg{};

// A programmable constant: SFPLOADI into LReg[0], then SFPCONFIG into LReg[12 + k].
struct ConstPrgm {
    int reg;
    operator vFloat() const { return vFloat(ks::st().lreg[reg]); }
    template <int K>
    operator vIntT<K>() const { return vIntT<K>(ks::st().lreg[reg]); }
    const ConstPrgm &operator=(float f) const { ks::config_const(reg, ks::u32(f)); return *this; }
    const ConstPrgm &operator=(double d) const { return *this = float(d); }
    const ConstPrgm &operator=(int i) const { ks::config_const(reg, uint32_t(i)); return *this; }
    const ConstPrgm &operator=(unsigned i) const { ks::config_const(reg, i); return *this; }
    const ConstPrgm &operator=(const vFloat &v) const { ks::config_const(reg, v.v.u[0]); return *this; }
};
inline vMul operator*(const ConstPrgm &a, const vFloat &b) { return vFloat(a) * b; }
inline vMul operator*(const vFloat &a, const ConstPrgm &b) { return a * vFloat(b); }
inline vFloat operator+(const ConstPrgm &a, const vMul &b) { return vFloat(a) + b; }
inline vFloat operator+(const vMul &a, const ConstPrgm &b) { return a + vFloat(b); }
inline vFloat operator+(const ConstPrgm &a, const vFloat &b) { return vFloat(a) + b; }
inline vFloat operator+(const vFloat &a, const ConstPrgm &b) { return a + vFloat(b); }
inline constexpr ConstPrgm vConstFloatPrgm0{12}, vConstFloatPrgm1{13}, vConstFloatPrgm2{14};
inline constexpr ConstPrgm vConstIntPrgm0{12}, vConstIntPrgm1{13}, vConstIntPrgm2{14};
// The fixed constants (LReg.md): LReg[8] = 0.8373, LReg[9] = 0, LReg[10] = 1.0, LReg[11] = -1.0
// (programmable, reset value -1.0), LReg[15] = lane id * 2.
inline const vFloat vConst0p8373 = vFloat(0.8373f);
inline const vFloat vConst0 = vFloat(0.0f);
inline const vFloat vConst1 = vFloat(1.0f);
inline const vFloat vConstNeg1 = vFloat(-1.0f);
inline vInt lane_ids() { Vec v; for (int l = 0; l < LANES; ++l) v.u[l] = uint32_t(l) * 2; return vInt(v); }

}  // namespace sfpi
