"""The emulator's C++ tile arithmetic (kgen/proof/emu/src/tensix_math.*) against the NumPy model
(kgen.proof.numerics, kgen.proof.golden): every function on random bit patterns, then whole matmuls driven tile by
tile through the C API reproducing golden_matmul's output bits, the silicon vectors of
docs/reference/numerics.md §11.1, and fast mode against golden's fast mode.

The library is built with the host g++ into a temporary folder (warnings are failures) and loaded
with ctypes through the extern "C" wrappers of tensix_math_capi.cpp. KEMU_CXXFLAGS adds g++ flags
(e.g. "-O3 -march=native": exact mode must not depend on them)."""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT, need_tool
from kgen.proof import numerics as nx
from kgen.proof import tiles as tl
from kgen.proof.golden import default_partials_format, golden_matmul

SRC = ROOT / "kgen" / "proof" / "emu" / "src"
SOURCES = ("tensix_math.cpp", "tensix_math_capi.cpp")
FMT = {"Float32": 0, "Float16_b": 5, "Bfp8_b": 6, "Bfp4_b": 7}
FIDELITY = {"LoFi": 0, "HiFi2": 2, "HiFi3": 3, "HiFi4": 4}
FIDELITIES = tuple(FIDELITY)
RNG = np.random.default_rng(20260)

U8 = np.ctypeslib.ndpointer(np.uint8, flags="C_CONTIGUOUS")
U32 = np.ctypeslib.ndpointer(np.uint32, flags="C_CONTIGUOUS")


class Config(ctypes.Structure):
    _fields_ = [("fp32_dest_acc", ctypes.c_int), ("fidelity", ctypes.c_int), ("wormhole_quirk", ctypes.c_int),
                ("fast", ctypes.c_int), ("bfp_pack_src", ctypes.c_int)]


def build(out_dir, extra=()) -> subprocess.CompletedProcess:
    gxx = shutil.which("g++")
    if gxx is None:
        need_tool("g++", "install a C++17 compiler (apt-get install g++)")
    cmd = [gxx, "-std=c++17", "-O2", "-Wall", "-Wextra", *extra, "-shared", "-fPIC",
           "-o", str(out_dir / "libtensix_math.so"), *(str(SRC / s) for s in SOURCES)]
    return subprocess.run(cmd, capture_output=True, text=True)


class Emu:
    """Thin NumPy wrapper over the C API; tiles are (1024,) arrays in face order."""

    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        cfg = ctypes.POINTER(Config)
        lib.kemu_tile_bytes.argtypes = [ctypes.c_int]
        lib.kemu_tile_bytes.restype = ctypes.c_uint
        lib.kemu_fidelity_phases.argtypes = [ctypes.c_int]
        lib.kemu_unpack_src.argtypes = [U8, ctypes.c_int, ctypes.c_int, U32]
        lib.kemu_matmul_tiles.argtypes = [U32, U32, U32, ctypes.c_int, cfg]
        lib.kemu_bench_matmul.argtypes = [U32, U32, ctypes.c_int, cfg, U32]
        lib.kemu_bench_matmul.restype = ctypes.c_double
        lib.kemu_add_tiles.argtypes = [U32, U32, ctypes.c_int, cfg, U32]
        lib.kemu_fpu_accumulate.argtypes = [ctypes.c_uint32, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                                            ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int, ctypes.c_int]
        lib.kemu_fpu_accumulate.restype = ctypes.c_uint32
        lib.kemu_copy_tile_to_dst.argtypes = [U8, ctypes.c_int, cfg, ctypes.c_int, U32]
        lib.kemu_pack_tile.argtypes = [U32, ctypes.c_int, cfg, ctypes.c_int, ctypes.c_int, U8]
        lib.kemu_pack_tile.restype = ctypes.c_int
        self.lib = lib

    @staticmethod
    def config(fidelity="HiFi4", fp32=False, wormhole=False, fast=False, bfp_pack_src="Float16_b"):
        return Config(int(fp32), FIDELITY[fidelity], int(wormhole), int(fast), FMT[bfp_pack_src])

    def tile_bytes(self, fmt):
        return self.lib.kemu_tile_bytes(FMT[fmt])

    def unpack(self, tile, fmt, fp32):
        out = np.empty(1024, np.uint32)
        self.lib.kemu_unpack_src(np.ascontiguousarray(tile, np.uint8), FMT[fmt], int(fp32), out)
        return out

    def matmul(self, dst, in0_src19, in1_src19, cfg):
        """Dst += in0 @ in1 over the K-tiles stacked on the first axis of in0_src19 / in1_src19."""
        a = np.ascontiguousarray(in0_src19, np.uint32).reshape(-1, 1024)
        b = np.ascontiguousarray(in1_src19, np.uint32).reshape(-1, 1024)
        assert a.shape == b.shape and dst.dtype == np.uint32 and dst.flags.c_contiguous
        self.lib.kemu_matmul_tiles(dst, a, b, a.shape[0], ctypes.byref(cfg))
        return dst

    def add(self, srca19, srcb19, bcast_rows, cfg):
        out = np.empty(1024, np.uint32)
        self.lib.kemu_add_tiles(np.ascontiguousarray(srca19, np.uint32), np.ascontiguousarray(srcb19, np.uint32),
                                int(bcast_rows), ctypes.byref(cfg), out)
        return out

    def copy(self, tile, fmt, cfg, unpack_to_dest=False):
        out = np.empty(1024, np.uint32)
        self.lib.kemu_copy_tile_to_dst(np.ascontiguousarray(tile, np.uint8), FMT[fmt], ctypes.byref(cfg),
                                       int(unpack_to_dest), out)
        return out

    def pack(self, dst, fmt, cfg, relu=False, l1_acc=False, into=None):
        """Pack into `into` (a tile byte array, accumulated into when l1_acc) or a fresh one."""
        tile = np.zeros(tl.TILE_BYTES[fmt], np.uint8) if into is None else into
        ok = self.lib.kemu_pack_tile(np.ascontiguousarray(dst, np.uint32), FMT[fmt], ctypes.byref(cfg), int(relu),
                                     int(l1_acc), tile)
        return tile if ok else None


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    out = tmp_path_factory.mktemp("tensix_math")
    r = build(out, tuple(shlex.split(os.environ.get("KEMU_CXXFLAGS", ""))))
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "", f"g++ -Wall -Wextra warnings:\n{r.stderr}"
    return Emu(out / "libtensix_math.so")


# ---------------------------------------------------------------------------------------------
# conversions between numerics.L1Data and tile bytes (face order, one tile)

def data_bytes(data: nx.L1Data) -> np.ndarray:
    if data.format == "Float32":
        return np.ascontiguousarray(data.bits.astype("<u4")).view(np.uint8)
    if data.format == "Float16_b":
        return np.ascontiguousarray(data.bits.astype("<u2")).view(np.uint8)
    return tl.bfp_tile_bytes(data.exps, data.bits, data.format)


def bytes_data(tile, fmt) -> nx.L1Data:
    tile = np.ascontiguousarray(tile, np.uint8)
    if fmt == "Float32":
        return nx.L1Data(fmt, tile.view("<u4").astype(np.uint32))
    if fmt == "Float16_b":
        return nx.L1Data(fmt, tile.view("<u2").astype(np.uint16))
    exps, codes = tl.bfp_tile_parts(tile, fmt)
    return nx.L1Data(fmt, codes, exps)


def random_tile_bytes(fmt, n=1):
    """Random L1 bytes: every bit pattern (denormals, Inf, NaN, -0, bfp -inf codes) occurs; block-float
    exponents also drawn from the tiny range where the hardware's exponent decrement wraps."""
    t = RNG.integers(0, 256, (n, tl.TILE_BYTES[fmt]), dtype=np.uint8)
    if fmt.startswith("Bfp"):
        t[:, :16] = RNG.integers(0, 8, (n, 16))
    return t


def fp32_patterns(shape, center=127, spread=12, special=0.1):
    """fp32 bit patterns around 2^(center-127): random mantissas and signs, exponents center +- spread,
    with a fraction of fully random patterns (denormals, Inf, NaN included) and zeros."""
    n = int(np.prod(shape))
    e = np.clip(RNG.integers(center - spread, center + spread + 1, n), 0, 255).astype(np.uint32)
    b = (RNG.integers(0, 2, n).astype(np.uint32) << 31) | (e << 23) | RNG.integers(0, 1 << 23, n).astype(np.uint32)
    r = RNG.random(n)
    b = np.where(r < special, RNG.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32), b)
    b = np.where(r > 1 - special / 2, 0, b)
    return b.astype(np.uint32).reshape(shape)


def src19_patterns(shape, center=127, spread=6, bf16_style=False, zeros=0.1):
    b = nx.src19_from_fp32_tf32(fp32_patterns(shape, center, spread, special=0.02))
    if bf16_style:
        b = b & ~np.uint32(7)
    return np.where(RNG.random(shape) < zeros, 0, b).astype(np.uint32)


def face_tile(matrix32):
    """(32, 32) row-major -> (1024,) face order."""
    return tl.tilize(np.asarray(matrix32)).reshape(1024)


def rows(tile1024):
    return tl.untilize(np.asarray(tile1024)).reshape(32, 32)


# ---------------------------------------------------------------------------------------------
# build, sizes

def test_tile_bytes_and_phases(emu):
    for fmt, size in tl.TILE_BYTES.items():
        assert emu.tile_bytes(fmt) == size
    assert [emu.lib.kemu_fidelity_phases(FIDELITY[f]) for f in FIDELITIES] == [len(nx.phases_of(f)) for f in FIDELITIES]


def test_builds_warning_free_with_pedantic_flags(tmp_path):
    r = build(tmp_path, ("-Wpedantic", "-Wshadow", "-Wconversion", "-Wno-sign-conversion"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "", r.stderr


# ---------------------------------------------------------------------------------------------
# §2 unpacker, §7.2 reload

@pytest.mark.parametrize("fmt", tl.FORMATS)
@pytest.mark.parametrize("fp32", [False, True])
def test_unpack_src_random_bytes(emu, fmt, fp32):
    for tile in random_tile_bytes(fmt, 6):
        want = nx.unpack_to_src(bytes_data(tile, fmt), fp32)
        assert np.array_equal(emu.unpack(tile, fmt, fp32), want)


@pytest.mark.parametrize("fmt", tl.FORMATS)
def test_unpack_src_of_host_encoded_values(emu, fmt):
    """Host-encoded matrices (tiles.encode_tiles) unpack like numerics.values_to_src19."""
    v = tl.quantize((RNG.standard_normal((32, 32)) * np.exp2(RNG.integers(-30, 30, (32, 32)))).astype(np.float32), fmt)
    v[RNG.random(v.shape) < 0.1] = 0
    tile = tl.encode_tiles(v, fmt)
    for fp32 in (False, True):
        assert np.array_equal(rows(emu.unpack(tile, fmt, fp32)), nx.values_to_src19(v, fmt, fp32))


@pytest.mark.parametrize("fmt", tl.FORMATS)
@pytest.mark.parametrize("fp32,u2d", [(False, False), (True, False), (True, True), (False, True)])
def test_copy_tile_to_dst(emu, fmt, fp32, u2d):
    for fast in (False, True):
        cfg = emu.config(fp32=fp32, fast=fast)
        for tile in random_tile_bytes(fmt, 3):
            want = nx.reload_to_dst(bytes_data(tile, fmt), fp32, u2d)
            assert np.array_equal(emu.copy(tile, fmt, cfg, u2d), want)


# ---------------------------------------------------------------------------------------------
# §4 FPU: fpu_accumulate, MVMUL through matmul_tile

def test_fpu_accumulate_random_and_edge_terms(emu):
    n = 3000
    dst = fp32_patterns(n, 127, 30, special=0.1)
    e0 = np.clip(RNG.integers(-2, 256, n), 0, None)
    e1 = np.where(RNG.random(n) < 0.5, e0 + RNG.integers(-30, 31, n), RNG.integers(0, 256, n)).clip(0, 300)
    m0 = np.where(e0 == 0, 0, RNG.integers(0, 1 << 28, n) >> RNG.integers(0, 28, n))
    m1 = np.where(e1 == 0, 0, RNG.integers(0, 1 << 28, n) >> RNG.integers(0, 28, n))
    s0 = RNG.integers(0, 2, n) * (m0 > 0)
    s1 = RNG.integers(0, 2, n) * (m1 > 0)
    # edges: a term of opposite sign to Dst leaving exactly -1 / +1 unit (the Wormhole quirk) or 0
    d = fp32_patterns(16, 127, 3, special=0)
    di = d.astype(np.int64)
    z = np.zeros(16, np.int64)
    for delta in (1, -1, 0):
        dst = np.concatenate([dst, d])
        e0 = np.concatenate([e0, (di >> 23) & 0xFF])
        m0 = np.concatenate([m0, ((di & 0x7FFFFF) | 0x800000) + delta])
        s0 = np.concatenate([s0, 1 - (di >> 31)])
        e1, m1, s1 = (np.concatenate([x, z]) for x in (e1, m1, s1))
    acc = emu.lib.kemu_fpu_accumulate
    for fp32 in (False, True):
        dd = dst if fp32 else dst & np.uint32(0xFFFF0000)
        for wh in (False, True):
            want = nx.fpu_accumulate(dd, s0, e0, m0, s1, e1, m1, fp32, wh)
            got = np.array([acc(int(dd[i]), int(s0[i]), int(e0[i]), int(m0[i]), int(s1[i]), int(e1[i]),
                                int(m1[i]), int(fp32), int(wh)) for i in range(len(dd))], np.uint32)
            assert np.array_equal(got, want), np.flatnonzero(got != want)[:10]


def replay(dst, in0_src19, in1_src19, fidelity, fp32, wh):
    """numerics.mvmul, one MVMUL at a time in the LLK order (§6) over the stacked K-tiles; face order."""
    d = rows(dst)
    for t0, t1 in zip(np.reshape(in0_src19, (-1, 1024)), np.reshape(in1_src19, (-1, 1024))):
        sb, sa = rows(t0), rows(t1)                   # in0 (M, K) on SrcB, in1 (K, N) on SrcA
        for p in nx.phases_of(fidelity):
            for face in (0, 1):
                ks = slice(16 * face, 16 * face + 16)
                d = nx.mvmul(d, sa[ks].T[None], sb[:, ks][:, None], p, fp32, wh)
    return face_tile(d)


OPERANDS = {
    "tf32_narrow": dict(center=127, spread=4),
    "bf16_wide": dict(center=127, spread=20, bf16_style=True),
    "extremes": dict(center=127, spread=140, zeros=0.3),
}


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("fp32", [False, True])
@pytest.mark.parametrize("wh", [False, True])
def test_matmul_tile_matches_mvmul_replay(emu, fidelity, fp32, wh):
    cfg = emu.config(fidelity, fp32, wh)
    for name, kw in OPERANDS.items():
        a = src19_patterns((2, 1024), **kw)
        b = src19_patterns((2, 1024), **kw)
        if name == "tf32_narrow":                      # some all-zero rows / columns of one operand
            a[0, :256] = 0
        dst = fp32_patterns(1024, 128, 6, special=0.05)
        if not fp32:
            dst &= np.uint32(0xFFFF0000)
        want = replay(dst, a, b, fidelity, fp32, wh)
        got = emu.matmul(dst.copy(), a, b, cfg)
        assert np.array_equal(got, want), (name, np.flatnonzero(got != want)[:8])


def test_matmul_tile_wormhole_quirk_shows(emu):
    """Dst = -(1 + 2^-23) plus one product 1 * 1: the signed sum is exactly -1 unit (§4 step 8)."""
    one = np.zeros((32, 32), np.float32)
    one[:, 0] = 1.0                                    # in0: column k = 0
    ones_row = np.zeros((32, 32), np.float32)
    ones_row[0, :] = 1.0                               # in1: row k = 0
    a = nx.values_to_src19(face_tile(one), "Float16_b", True)
    b = nx.values_to_src19(face_tile(ones_row), "Float16_b", True)
    dst = np.full(1024, 0xBF800001, np.uint32)
    out = {}
    for wh in (False, True):
        got = emu.matmul(dst.copy(), a, b, emu.config("LoFi", True, wh))
        assert np.array_equal(got, replay(dst, a, b, "LoFi", True, wh))
        out[wh] = got
    assert np.all(tl.bits_f32(out[False]) == np.float32(-(2.0 ** -23)))
    assert not np.array_equal(out[False], out[True])


# ---------------------------------------------------------------------------------------------
# §8 packer, §7.4 L1 accumulation

@pytest.mark.parametrize("fmt,bfp_pack_src", [(f, "Float16_b") for f in tl.FORMATS] +
                         [("Bfp8_b", "Bfp8_b"), ("Bfp4_b", "Bfp8_b")])   # the E8M6 intermediate: block floats only
@pytest.mark.parametrize("fp32", [False, True])
def test_pack_tile(emu, fmt, fp32, bfp_pack_src):
    for dst in (fp32_patterns(1024, 127, 8, special=0.15), fp32_patterns(1024, 3, 8), fp32_patterns(1024, 250, 8),
                RNG.integers(0, 1 << 32, 1024, dtype=np.uint64).astype(np.uint32)):
        if not fp32:
            dst = dst & np.uint32(0xFFFF0000)
        for relu in (False, True):
            for fast in (False, True):
                cfg = emu.config(fp32=fp32, fast=fast, bfp_pack_src=bfp_pack_src)
                want = data_bytes(nx.pack(dst, fmt, fp32, relu=relu, bfp_pack_src=bfp_pack_src))
                assert np.array_equal(emu.pack(dst, fmt, cfg, relu), want), (relu, fast)


def test_pack_tile_fast_mode_rounds_float_dst_to_bf16(emu):
    """Fast mode with bf16 Dst: Dst may hold float32 values; the packer rounds them as golden._round_dst."""
    dst = fp32_patterns(1024, 127, 8, special=0.1)
    cfg = emu.config(fp32=False, fast=True)
    rounded = nx.pack_early(dst, True, "Float16_b")
    for fmt in tl.FORMATS:
        assert np.array_equal(emu.pack(dst, fmt, cfg), data_bytes(nx.pack(rounded, fmt, False)))


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")   # numerics, NaN inputs
@pytest.mark.parametrize("fmt", ["Float32", "Float16_b"])
@pytest.mark.parametrize("fp32", [False, True])
def test_pack_l1_accumulate(emu, fmt, fp32):
    cfg = emu.config(fp32=fp32)
    olds = [random_tile_bytes(fmt)[0]]
    olds.append(data_bytes(nx.pack(fp32_patterns(1024, 127, 3, special=0.05), fmt, True)))
    for old in olds:
        for dst in (fp32_patterns(1024, 127, 3, special=0.1), fp32_patterns(1024, 127, 30, special=0.3)):
            if not fp32:
                dst = dst & np.uint32(0xFFFF0000)
            for relu in (False, True):
                want = nx.l1_accumulate(bytes_data(old, fmt), nx.pack(dst, fmt, fp32, relu=relu))
                got = emu.pack(dst, fmt, cfg, relu, l1_acc=True, into=old.copy())
                assert np.array_equal(got, data_bytes(want))


@pytest.mark.parametrize("fmt", ["Bfp8_b", "Bfp4_b"])
def test_pack_l1_accumulate_refuses_block_floats(emu, fmt):
    old = random_tile_bytes(fmt)[0]
    tile = old.copy()
    assert emu.pack(fp32_patterns(1024), fmt, emu.config(fp32=True), l1_acc=True, into=tile) is None
    assert np.array_equal(tile, old)


# ---------------------------------------------------------------------------------------------
# ELWADD (fused bias, §7.3)

@pytest.mark.parametrize("fp32", [False, True])
@pytest.mark.parametrize("bcast", [False, True])
def test_add_tiles(emu, fp32, bcast):
    for kw in (dict(center=127, spread=6), dict(center=127, spread=40, zeros=0.2), dict(center=5, spread=8)):
        a = src19_patterns(1024, **kw)
        b = src19_patterns(1024, **kw)
        b[RNG.random(1024) < 0.1] = 0
        a[:16] = b[:16] ^ (1 << 18)                    # exact cancellations
        bb = face_tile(np.broadcast_to(rows(b)[0], (32, 32))) if bcast else b
        for wh in (False, True):
            want = nx.elwadd(a, bb, fp32, wormhole_bug=wh)
            assert np.array_equal(emu.add(a, b, bcast, emu.config(fp32=fp32, wormhole=wh)), want)
        with np.errstate(invalid="ignore", over="ignore"):
            fast = tl.f32_bits(tl.bits_f32(nx.src19_to_fp32(a)) + tl.bits_f32(nx.src19_to_fp32(bb)))
        if not fp32:
            fast = nx.pack_early(fast, True, "Float16_b")
        assert np.array_equal(emu.add(a, b, bcast, emu.config(fp32=fp32, fast=True)), fast)


# ---------------------------------------------------------------------------------------------
# whole matmuls, tile by tile, against golden_matmul

def emu_matmul(emu, a, b, *, fidelity, fp32_dest_acc, packer_l1_acc, in0_format="Float16_b",
               in1_format="Float16_b", out_format="Float16_b", partials_format=None, in0_block_w=None,
               bias=None, bias_format=None, relu=False, untilize_out=False, arch="blackhole",
               reload_unpack_to_dest=True, bfp_pack_src="Float16_b", fast=False):
    """The TT-Metal flow of golden._flow (§7) as an emulator runs it: per output tile, per K-block,
    unpack -> matmul_tile per K-tile -> pack / L1 acc / reload, bias add, final pack. Returns the output
    tile bytes (Mt, Nt, TILE_BYTES). As golden_matmul, the reload is UnpackToDestFp32 by default (TT-Metal
    0.81.1's partials) and so is untilize_out's copy without a bias (with one only the reload's alias is)."""
    fp32 = fp32_dest_acc
    mt, kt, nt = a.shape[0] // 32, a.shape[1] // 32, b.shape[1] // 32
    w = in0_block_w or kt
    nb = kt // w
    last = nb - 1
    pf = tl.canonical_format(partials_format) if partials_format else \
        default_partials_format(out_format, fp32, packer_l1_acc)
    bias_format = bias_format or out_format
    cfg = emu.config(fidelity, fp32, arch == "wormhole_b0", fast, bfp_pack_src)
    in0 = tl.encode_tiles(tl.to_tiles(a), in0_format)              # (Mt, Kt, bytes)
    in1 = tl.encode_tiles(tl.to_tiles(b), in1_format)              # (Kt, Nt, bytes)
    src0 = np.array([[emu.unpack(t, in0_format, fp32) for t in r] for r in in0])
    src1 = np.array([[emu.unpack(t, in1_format, fp32) for t in r] for r in in1])
    bias_src = []
    if bias is not None:
        for j in range(nt):
            t = np.zeros((32, 32), np.float32)
            t[0] = bias[32 * j:32 * j + 32]
            bias_src.append(emu.unpack(tl.encode_tiles(t, bias_format), bias_format, fp32))
    out = np.zeros((mt, nt, tl.TILE_BYTES[out_format]), np.uint8)
    for i in range(mt):
        for j in range(nt):
            partials = np.zeros(tl.TILE_BYTES[pf], np.uint8)
            reload_next = False
            dst = None
            for blk in range(nb):
                if blk > 0 and reload_next:
                    dst = emu.copy(partials, pf, cfg, reload_unpack_to_dest)
                else:
                    dst = np.zeros(1024, np.uint32)
                ks = slice(blk * w, (blk + 1) * w)
                emu.matmul(dst, src0[i, ks], src1[ks, j], cfg)
                if packer_l1_acc:
                    if blk < last or bias is not None:
                        assert emu.pack(dst, pf, cfg, l1_acc=blk > 0, into=partials) is not None
                    reload_next = bias is None and blk + 1 == last
                else:
                    if blk < last:
                        emu.pack(dst, pf, cfg, into=partials)
                    reload_next = True
            if bias is not None:
                if not packer_l1_acc:
                    emu.pack(dst, pf, cfg, into=partials)
                dst = emu.add(emu.unpack(partials, pf, fp32), bias_src[j], True, cfg)
            if untilize_out:
                staged = emu.pack(dst, pf, cfg, relu)
                dst = emu.copy(staged, pf, cfg, reload_unpack_to_dest and bias is None)
                emu.pack(dst, out_format, cfg, into=out[i, j])
            else:
                emu.pack(dst, out_format, cfg, relu, into=out[i, j])
    return out


def operands(m, k, n, in0_format, in1_format, spread=6):
    a = (RNG.standard_normal((m, k)) * np.exp2(RNG.integers(-spread, spread + 1, (m, k)))).astype(np.float32)
    b = (RNG.standard_normal((k, n)) * np.exp2(RNG.integers(-spread, spread + 1, (k, n)))).astype(np.float32)
    a[RNG.random(a.shape) < 0.08] = 0
    b[RNG.random(b.shape) < 0.08] = 0
    return tl.quantize(a, in0_format), tl.quantize(b, in1_format)


F, B, P8, P4 = "Float32", "Float16_b", "Bfp8_b", "Bfp4_b"
# (m, k, n), fidelity, fp32, l1acc, in0_block_w, (in0, in1, out), arch, extras
CASES = [
    ((32, 64, 32), "LoFi", False, False, 1, (B, B, B), "wormhole_b0", {}),
    ((64, 128, 64), "HiFi2", False, False, 2, (B, P8, B), "wormhole_b0", {}),
    ((32, 256, 64), "HiFi2", False, True, 2, (B, P8, P8), "blackhole", {}),
    ((64, 128, 32), "HiFi3", True, False, 1, (F, F, F), "wormhole_b0", {}),
    ((64, 128, 32), "HiFi3", True, False, 1, (F, F, F), "wormhole_b0", dict(reload_unpack_to_dest=False)),
    ((32, 192, 32), "HiFi4", True, True, 1, (B, B, F), "wormhole_b0", {}),
    ((32, 128, 64), "HiFi4", True, True, 1, (F, P4, B), "blackhole", dict(relu=True)),
    ((64, 128, 64), "LoFi", False, False, 1, (P4, P4, P4), "blackhole", {}),
    ((32, 128, 32), "HiFi2", False, False, 1, (P8, P8, P8), "wormhole_b0", dict(partials_format=B)),
    ((32, 256, 32), "HiFi2", False, True, 1, (B, P8, B), "wormhole_b0", dict(bias=True, relu=True)),
    ((64, 128, 64), "HiFi4", True, False, 2, (B, B, P8), "blackhole", dict(bias=True, bias_format=B)),
    ((32, 128, 32), "HiFi3", False, False, 4, (F, B, F), "wormhole_b0", dict(bias=True, bias_format=P8)),
    ((32, 128, 32), "HiFi4", True, True, 2, (B, B, P8), "blackhole", dict(bias=True, relu=True)),
    ((32, 96, 64), "HiFi2", True, False, 1, (B, B, F), "blackhole", dict(untilize_out=True)),
    ((32, 64, 32), "HiFi2", False, False, 2, (B, B, P8), "wormhole_b0", dict(bfp_pack_src=P8)),
    ((32, 128, 32), "HiFi2", True, True, 1, (B, B, P4), "blackhole", dict(bfp_pack_src=P8, relu=True)),
    ((64, 64, 32), "LoFi", True, False, 1, (P8, F, F), "blackhole", dict(partials_format=F)),
    ((32, 256, 32), "HiFi4", False, True, 1, (F, F, B), "wormhole_b0", dict(spread=20)),
    ((32, 128, 32), "HiFi4", True, False, 1, (F, F, F), "wormhole_b0", dict(spread=60)),
]


def case_id(c):
    (m, k, n), fid, fp32, l1, w, fmts, arch, extra = c
    flags = "".join(f"-{key}" for key in extra)
    return f"{m}x{k}x{n}-{fid}-{'fp32' if fp32 else 'bf16'}dst-{'l1acc' if l1 else 'spill'}-w{w}-" \
           f"{'/'.join(fmts)}-{arch[:2]}{flags}"


def run_case(emu, case, mode):
    (m, k, n), fidelity, fp32, l1acc, w, (f0, f1, fo), arch, extra = case
    extra = dict(extra)
    a, b = operands(m, k, n, f0, f1, extra.pop("spread", 6))
    if extra.get("bias"):
        extra["bias"] = (RNG.standard_normal(n) * 4).astype(np.float32)
    kw = dict(fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=l1acc, in0_format=f0, in1_format=f1,
              out_format=fo, in0_block_w=w, arch=arch, **extra)
    want = golden_matmul(a, b, mode=mode, **kw)
    got = emu_matmul(emu, a, b, fast=mode == "fast", **kw)
    return a, b, want, got, kw


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_whole_matmul_reproduces_golden_bits(emu, case):
    _, _, want, got, _ = run_case(emu, case, "exact")
    assert np.array_equal(got, want.tile_bytes())


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("fp32", [False, True])
def test_whole_matmul_every_fidelity_and_dst(emu, fidelity, fp32):
    for arch in ("wormhole_b0", "blackhole"):
        for l1acc, w in ((False, 1), (True, 1)):
            a, b = operands(32, 128, 32, "Float16_b", "Bfp8_b")
            kw = dict(fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=l1acc, in1_format="Bfp8_b",
                      in0_block_w=w, arch=arch)
            assert np.array_equal(emu_matmul(emu, a, b, **kw), golden_matmul(a, b, **kw).tile_bytes())


# ---------------------------------------------------------------------------------------------
# §11.1 silicon vectors

@pytest.mark.parametrize("x,y,fidelity,expected", [
    (1.3125, 7.96875, "HiFi2", 10.4375),               # #12923
    (1.3125, 7.96875, "HiFi4", 10.5),                  # #12923
    (-3.640625, 0.298828125, "HiFi4", -1.09375),       # #16448
    (508.0, 748.0, "HiFi4", 378880.0),                 # PR #35077
    (508.0, 748.0, "HiFi3", 378880.0),
    (508.0, 748.0, "HiFi2", 376832.0),
    (508.0, 748.0, "LoFi", 368640.0),
])
def test_silicon_mul_vectors_as_one_lane_matmul(emu, x, y, fidelity, expected):
    """mul_tiles has in0 = x on SrcA and in1 = y on SrcB; ELWMUL is MVMUL with one product lane (§4),
    so a matmul with in1 = x (SrcA) and in0 = y (SrcB) at a single K lane gives the silicon result."""
    a = np.zeros((32, 32), np.float32)
    b = np.zeros((32, 32), np.float32)
    a[:, 5] = y                                        # in0 column k = 5 -> SrcB
    b[5, :] = x                                        # in1 row k = 5 -> SrcA
    kw = dict(fidelity=fidelity, fp32_dest_acc=False, packer_l1_acc=False)
    got = tl.decode_tiles(emu_matmul(emu, a, b, **kw)[0, 0], "Float16_b")
    assert np.all(got == expected)


@pytest.mark.parametrize("l1acc,w,expected", [(False, 192, 8192.0), (False, 24, 8192.0), (True, 64, 8192.0),
                                              (True, 32, 7168.0)])
def test_silicon_all_ones_k6144(emu, l1acc, w, expected):
    """#8449: all-ones K = 6144 with bf16 Dst gives 8192 (docs/reference/numerics.md §11.1; the L1-acc numbers
    as test_golden derives them); fp32 Dst gives 6144."""
    a = np.ones((32, 6144), np.float32)
    b = np.ones((6144, 32), np.float32)
    kw = dict(fidelity="LoFi", packer_l1_acc=l1acc, in0_block_w=w)
    assert np.all(tl.decode_tiles(emu_matmul(emu, a, b, fp32_dest_acc=False, **kw)[0, 0], "Float16_b") == expected)
    if not l1acc and w == 192:
        out = emu_matmul(emu, a, b, fp32_dest_acc=True, **kw)[0, 0]
        assert np.all(tl.decode_tiles(out, "Float16_b") == 6144.0)


# ---------------------------------------------------------------------------------------------
# fast mode

FAST_CASES = [c for c in CASES if c[5][2] in (F, B)] + [
    ((64, 256, 64), "HiFi3", True, True, 2, (B, B, F), "blackhole", {}),
    ((64, 256, 64), "LoFi", True, False, 8, (F, F, F), "blackhole", {}),
]


@pytest.mark.parametrize("case", FAST_CASES, ids=case_id)
def test_fast_mode_close_to_golden_fast(emu, case):
    """Summation order differs (per K-tile here, one float32 matmul per K-block in golden), so results
    agree to float32 rounding (the bound of a k-term float32 sum on each side); a last-bit difference
    may move a later truncation (TF32 reload, bf16 Dst / output) by one unit of that format."""
    a, b, want, got, kw = run_case(emu, case, "fast")
    fo = kw["out_format"]
    got_v = tl.from_tiles(tl.decode_tiles(got, fo))
    want_v = want.values
    scale = np.abs(a).astype(np.float64) @ np.abs(b) + (np.abs(kw["bias"])[None] if "bias" in kw else 0)
    coarse = fo == B or not kw["fp32_dest_acc"] or kw.get("untilize_out") or kw["in0_block_w"] < a.shape[1] // 32
    k = a.shape[1]                                    # float32 summation of k products, both sides
    tol = 2 * k * 2.0 ** -24 * scale + (2.0 ** -7 if coarse else 0) * np.abs(want_v)
    assert np.all(np.abs(got_v - want_v) <= tol)
    if fo == B:
        assert np.mean(got_v == want_v) > 0.9


def test_fast_mode_equals_exact_on_small_integers(emu):
    a = RNG.integers(-8, 9, (64, 256)).astype(np.float32)
    b = RNG.integers(-8, 9, (256, 32)).astype(np.float32)
    kw = dict(fidelity="HiFi4", fp32_dest_acc=True, packer_l1_acc=True, in0_block_w=2, out_format="Float32")
    exact = emu_matmul(emu, a, b, **kw)
    assert np.array_equal(emu_matmul(emu, a, b, fast=True, **kw), exact)
    assert np.array_equal(exact, golden_matmul(a, b, **kw).tile_bytes())
