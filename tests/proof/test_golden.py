"""Golden model of a whole blocked matmul (docs/reference/numerics.md §6, §7, §11, §13), against the
document's published results, numpy, and an instruction-by-instruction replay of the MVMULs."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import example
from kgen.proof import numerics as nx
from kgen.proof import tiles as tl
from kgen.proof.golden import default_partials_format, golden_from_plan, golden_matmul
from kgen.gen.plan import plan
from kgen.gen.spec import load, parse_text, resolve

RNG = np.random.default_rng(2024)


def ints(shape, lo=-8, hi=9):
    return RNG.integers(lo, hi, shape).astype(np.float32)


def randn(shape, fmt="Float16_b", spread=0):
    v = RNG.standard_normal(shape)
    if spread:
        v = v * np.exp2(RNG.integers(-spread, spread + 1, shape))
    return tl.quantize(v.astype(np.float32), fmt)


def pcc(x, y):
    return float(np.corrcoef(np.ravel(x), np.ravel(y))[0, 1])


# ---------------------------------------------------------------------------------------------
# §11.1 all-ones K = 6144 (#8449)

@pytest.mark.parametrize("fidelity", ["LoFi", "HiFi4"])
@pytest.mark.parametrize("in0_block_w", [192, 24, 1])
def test_all_ones_k6144_bf16_dest_gives_8192(fidelity, in0_block_w):
    """#8449: all-ones inputs, K = 6144, bf16 Dst -> 8192 (bf16 partials reload losslessly, so the
    K blocking does not matter); with fp32 Dst -> the correct 6144."""
    a = np.ones((32, 6144), np.float32)
    b = np.ones((6144, 32), np.float32)
    r = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=False, packer_l1_acc=False,
                      in0_block_w=in0_block_w)
    assert np.all(r.values == 8192.0)
    r32 = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=True, packer_l1_acc=False,
                        in0_block_w=in0_block_w)
    assert np.all(r32.values == 6144.0)


def test_all_ones_with_packer_l1_acc():
    """§7.3 with §4/§7.4: blocks 0..n-2 are summed in L1 (exact here) and only the last block
    accumulates on top of the reloaded sum in Dst. 3 blocks of 2048: L1 holds 4096, the last 128
    MVMULs add 32 each -> 8192. 6 blocks of 1024: L1 holds 5120, the last 64 MVMULs add 32 each
    -> 7168 (spill/reload gives 8192)."""
    a = np.ones((32, 6144), np.float32)
    b = np.ones((6144, 32), np.float32)
    kw = dict(fidelity="HiFi2", fp32_dest_acc=False, packer_l1_acc=True)
    assert np.all(golden_matmul(a, b, in0_block_w=64, **kw).values == 8192.0)
    assert np.all(golden_matmul(a, b, in0_block_w=32, **kw).values == 7168.0)
    kw["packer_l1_acc"] = False
    assert np.all(golden_matmul(a, b, in0_block_w=32, **kw).values == 8192.0)


# ---------------------------------------------------------------------------------------------
# exactness on small integers

FLOWS = [
    dict(packer_l1_acc=False, in0_block_w=1),       # spill/reload every K-tile
    dict(packer_l1_acc=True, in0_block_w=1),        # L1 acc over 4 blocks
    dict(packer_l1_acc=False, in0_block_w=4),       # one block
]


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
def test_hifi4_fp32_small_integers_equal_numpy(flow, arch):
    """HiFi4 products are exact, group sums of products < 2^11 lose no bits, fp32 Dst holds integer
    sums < 2^24 exactly: the result equals numpy, through every accumulation flow. (|partial sums|
    <= 4*4*128 = 2048 here, so even the TF32 reload of spilled Float32 partials, §7.2, is exact.)"""
    a, b = ints((64, 128), -4, 5), ints((128, 96), -4, 5)
    bias = ints((96,))
    want = a.astype(np.float64) @ b
    r = golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=True, out_format="Float32", arch=arch, **flow)
    assert np.array_equal(r.values, want)
    rb = golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=True, out_format="Float32", arch=arch,
                       bias=bias, relu=True, **flow)
    assert np.array_equal(rb.values, np.maximum(want + bias, 0))


def test_hifi4_fp32_small_integers_bf16_output_rounds_half_away():
    """Same exact sums, packed to bf16 with the packer's half-away rounding (§8.2)."""
    a, b = ints((32, 256), -16, 17), ints((256, 64), -16, 17)
    exact = (a.astype(np.float64) @ b).astype(np.float32)
    r = golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=True, packer_l1_acc=False, in0_block_w=8)
    eb = tl.f32_bits(exact).astype(np.int64)
    want = tl.bf16_values(((eb + 0x8000) >> 16) & 0xFFFF)      # add half an ulp to |x|, truncate
    assert np.array_equal(r.values, want)
    assert not np.array_equal(r.values, tl.quantize(exact, "Float16_b"))   # ties: not RNE


def test_fast_mode_equals_exact_on_small_integers():
    a, b = ints((64, 256)), ints((256, 64))
    kw = dict(fidelity="HiFi4", fp32_dest_acc=True, packer_l1_acc=True, in0_block_w=2, out_format="Float32")
    assert np.array_equal(golden_matmul(a, b, mode="fast", **kw).values, golden_matmul(a, b, **kw).values)


# ---------------------------------------------------------------------------------------------
# the bulk model against an instruction-by-instruction replay

def replay(a, b, *, fidelity, fp32, in0_format, in1_format, arch):
    """One K-block, every MVMUL in the LLK order of §6 (phase loop outside the two K-faces), each
    computed by numerics.mvmul; Dst as fp32 patterns."""
    sb = nx.values_to_src19(a, in0_format, fp32)           # in0 -> SrcB
    sa = nx.values_to_src19(b, in1_format, fp32)           # in1 -> SrcA
    dst = np.zeros((a.shape[0], b.shape[1]), np.uint32)
    for kt in range(a.shape[1] // 32):
        for p in nx.phases_of(fidelity):
            for face in (0, 1):
                ks = slice(32 * kt + 16 * face, 32 * kt + 16 * face + 16)
                dst = nx.mvmul(dst, sa[ks].T[None], sb[:, ks][:, None], p, fp32, arch == "wormhole_b0")
    return dst


@pytest.mark.parametrize("fidelity", ["LoFi", "HiFi2", "HiFi3", "HiFi4"])
@pytest.mark.parametrize("fp32", [False, True])
@pytest.mark.parametrize("formats", [("Float16_b", "Float16_b"), ("Float32", "Bfp8_b"), ("Bfp4_b", "Float32")])
def test_bulk_matches_mvmul_replay(fidelity, fp32, formats):
    fa, fb = formats
    a = randn((32, 96), fa, spread=8)
    b = randn((96, 64), fb, spread=8)
    a[RNG.random(a.shape) < 0.1] = 0
    want = replay(a, b, fidelity=fidelity, fp32=fp32, in0_format=fa, in1_format=fb, arch="wormhole_b0")
    r = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=False, in0_format=fa,
                      in1_format=fb, out_format="Float32", arch="wormhole_b0")
    assert np.array_equal(r.bits, want)


# ---------------------------------------------------------------------------------------------
# fidelity at matmul level (§3.3: in1/weights on SrcA 5-bit, in0/activations on SrcB 7-bit)

def test_fidelity_ports_with_identity_operands():
    """in0 = I: the output is in1 as SrcA sees it (LoFi: 5 significant bits; HiFi2 and up: whole).
    in1 = I: the output is in0 as SrcB sees it (LoFi and HiFi2: 7 significant bits; HiFi3/4: whole)."""
    x = randn((32, 32))
    eye = np.eye(32, dtype=np.float32)
    top = lambda v, keep: tl.bits_f32(tl.f32_bits(v) & np.uint32(~((1 << (23 - keep)) - 1) & 0xFFFFFFFF))
    kw = dict(fp32_dest_acc=True, packer_l1_acc=False, out_format="Float32")
    out = {f: golden_matmul(eye, x, fidelity=f, **kw).values for f in ("LoFi", "HiFi2", "HiFi3", "HiFi4")}
    assert np.array_equal(out["LoFi"], top(x, 4))
    assert not np.array_equal(out["LoFi"], x)
    for f in ("HiFi2", "HiFi3", "HiFi4"):
        assert np.array_equal(out[f], x)
    out = {f: golden_matmul(x, eye, fidelity=f, **kw).values for f in ("LoFi", "HiFi2", "HiFi3", "HiFi4")}
    assert np.array_equal(out["LoFi"], top(x, 6))
    assert np.array_equal(out["HiFi2"], top(x, 6))
    assert not np.array_equal(out["HiFi2"], x)
    assert np.array_equal(out["HiFi3"], x)
    assert np.array_equal(out["HiFi4"], x)


def test_lofi_error_larger_than_hifi4():
    a, b = randn((64, 256)), randn((256, 64))
    ref = a.astype(np.float64) @ b
    kw = dict(fp32_dest_acc=True, packer_l1_acc=False, out_format="Float32", in0_block_w=4)
    e_lo = np.abs(golden_matmul(a, b, fidelity="LoFi", **kw).values - ref).max()
    e_hi = np.abs(golden_matmul(a, b, fidelity="HiFi4", **kw).values - ref).max()
    assert e_lo > 4 * e_hi


# ---------------------------------------------------------------------------------------------
# accumulation policies (§7)

@pytest.mark.parametrize("fp32", [False, True])
def test_l1_acc_with_two_blocks_is_spill_reload(fp32):
    """§7.3: with two K-blocks L1 accumulation is never exercised (block 0 overwrites, block 1
    reloads), so the output equals spill/reload bit for bit."""
    a, b = randn((32, 128), spread=4), randn((128, 64), spread=4)
    kw = dict(fidelity="HiFi2", fp32_dest_acc=fp32, in0_block_w=2,
              partials_format="Float32" if fp32 else "Float16_b")
    assert np.array_equal(golden_matmul(a, b, packer_l1_acc=True, **kw).bits,
                          golden_matmul(a, b, packer_l1_acc=False, **kw).bits)


def test_two_blocks_with_l1_acc_and_no_bias_run_as_tt_metals_kernel():
    """TT-Metal 0.81.1 defines PACKER_L1_ACC from two K-blocks, bias or not, and packs Float16_b partials
    (docs/reference/provenance.md R7). Its kernel (bmm_large_block_zm_fused_bias_activation.cpp) then
    packs block 0's partials with pack_reconfig_l1_acc(0), arms the reload at block == num_blocks - 2,
    and the last block reloads them and packs to out with accumulation off: a spill/reload through
    Float16_b partials. With a block-float output that differs from the spill/reload TT compiles
    without the request, whose partials are in the output format."""
    a, b = randn((64, 128), spread=4), randn((128, 64), spread=4)          # Kt = 4, in0_block_w 2: two blocks
    kw = dict(fidelity="HiFi2", fp32_dest_acc=False, in0_block_w=2, out_format="Bfp8_b")
    l1acc = golden_matmul(a, b, packer_l1_acc=True, **kw)
    assert default_partials_format("Bfp8_b", False, True) == "Float16_b"
    assert np.array_equal(l1acc.bits, golden_matmul(a, b, packer_l1_acc=False, partials_format="Float16_b",
                                                    **kw).bits)
    assert not np.array_equal(l1acc.bits, golden_matmul(a, b, packer_l1_acc=False, **kw).bits)
    # and the plan hands the golden model that flow: reuse, two K-blocks, no bias, a bfloat8_b output
    p = plan(resolve(parse_text("""matmul t {
    arch = wormhole_b0
    shape = 64 x 64 x 128
    dtype { in0 = bfloat16  in1 = bfloat8_b  out = bfloat8_b }
    grid = 1 x 1
    dataflow = reuse
    block { per_core = 2 x 2  in0_block_w = 2 }
    compute { math_fidelity = HiFi2  packer_l1_acc = true }
}""", "t.kspec")))
    assert p.l1_acc_enabled and p.partials_format == "Float16_b" and not p.fuse_bias
    a, b = randn((64, 128)), randn((128, 64), "Bfp8_b")
    assert np.array_equal(golden_from_plan(p, a, b).bits,
                          golden_matmul(a, b, fidelity="HiFi2", fp32_dest_acc=False, packer_l1_acc=False,
                                        in1_format="Bfp8_b", out_format="Bfp8_b", partials_format="Float16_b",
                                        in0_block_w=2).bits)


def test_fp32_spill_reload_loses_to_tf32_unless_unpacked_to_dest():
    """§7.2 / #46101 / PR #50250: with fp32 Dst and spill/reload, Float32 partials that came back
    through TF32 SrcA (truncated) would be worse than L1 accumulation; UnpackToDestFp32, which every
    TT-Metal 0.81.1 factory sets on them (provenance N8) and the golden model's default, reloads them whole."""
    a, b = randn((32, 2048)), randn((2048, 32))
    ref = a.astype(np.float64) @ b
    kw = dict(fidelity="HiFi4", fp32_dest_acc=True, in0_block_w=1, out_format="Float32")
    tf32 = golden_matmul(a, b, packer_l1_acc=False, reload_unpack_to_dest=False, **kw).values
    l1acc = golden_matmul(a, b, packer_l1_acc=True, **kw).values
    lossless = golden_matmul(a, b, packer_l1_acc=False, **kw).values
    assert np.array_equal(lossless, golden_matmul(a, b, packer_l1_acc=False, reload_unpack_to_dest=True, **kw).values)
    err = lambda v: np.abs(v - ref).mean()
    assert err(tf32) > 10 * err(l1acc)
    assert err(lossless) < 2 * err(l1acc)


FP32_SPILL = """matmul t {{
    arch = {arch}
    shape = 64 x 64 x 4096
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = float32  bias = bfloat16 }}
    grid = {grid}
    dataflow = {dataflow}
    block {{ per_core = {per_core}  in0_block_w = 1  out_subblock = 1 x 1 }}
    compute {{ math_fidelity = HiFi4  fp32_dest_acc = true  packer_l1_acc = false }}
    fuse {{ bias = {bias} }}
}}"""


@pytest.mark.parametrize("dataflow,bias,arch,grid,per_core", [
    ("mcast_2d", False, "blackhole", "2 x 2", "1 x 1"), ("mcast_2d", True, "blackhole", "2 x 2", "1 x 1"),
    ("reuse", False, "wormhole_b0", "2 x 2", "1 x 1"), ("mcast_1d_in1", True, "blackhole", "2 x 1", "1 x 2")])
def test_fp32_spill_with_many_k_blocks_tracks_float64_as_tt_reloads_it(dataflow, bias, arch, grid, per_core):
    """An fp32-accumulated spill/reload plan over 128 K-blocks, as kgen now plans it (TT-Metal 0.81.1's
    UnpackToDestFp32 partials, or their alias with a bias): the golden model the emulator and port-check are
    held to reloads every partial whole, so its output follows a float64-accumulated reference as closely
    as one K-block in DST (an fp32 sum) does, and far closer than the TF32 reload kgen used to plan."""
    p = plan(resolve(parse_text(FP32_SPILL.format(arch=arch, dataflow=dataflow, bias=str(bias).lower(), grid=grid,
                                                  per_core=per_core), "t.kspec")))
    assert p.num_blocks == 128 and p.policy == "spill_reload" and p.partials_format == "Float32"
    assert p.reload_to_dest and p.reload_cb == (7 if bias else 5)
    a, b = randn((64, 4096)), randn((4096, 64))
    row = randn((64,)) if bias else None
    ref = a.astype(np.float64) @ b.astype(np.float64) + (0 if row is None else row.astype(np.float64))
    err = lambda v: float(np.abs(v.astype(np.float64) - ref).mean())
    now = golden_from_plan(p, a, b, row).values
    tf32 = golden_from_plan(p, a, b, row, reload_unpack_to_dest=False).values
    whole = golden_from_plan(p, a, b, row, in0_block_w=128, num_k_blocks=1).values      # all of K in DST
    assert err(tf32) > 20 * err(now)
    assert err(now) < 1.5 * err(whole)


def test_spill_partials_in_output_format():
    """§7.1: without L1 acc and without fp32 dest the partials between K-blocks are stored in the
    output format (here bfp8_b) and reloaded: precision is lost at every spill. bf16 partials
    reload into bf16 Dst losslessly (§7.2), so spilling through bf16 equals a single K-block."""
    assert default_partials_format("Bfp8_b", False, False) == "Bfp8_b"
    assert default_partials_format("Bfp8_b", False, True) == "Float16_b"
    assert default_partials_format("Bfp8_b", True, True) == "Float32"
    a, b = randn((32, 256)), randn((256, 32))
    kw = dict(fidelity="HiFi2", fp32_dest_acc=False, packer_l1_acc=False, out_format="Bfp8_b")
    one = golden_matmul(a, b, in0_block_w=8, **kw)
    many = golden_matmul(a, b, in0_block_w=1, **kw)
    viabf16 = golden_matmul(a, b, in0_block_w=1, partials_format="Float16_b", **kw)
    assert np.array_equal(one.bits, viabf16.bits) and np.array_equal(one.exps, viabf16.exps)
    ref = a.astype(np.float64) @ b
    err = lambda r: np.abs(r.values - ref).mean()
    assert err(many) > err(viabf16)


# ---------------------------------------------------------------------------------------------
# outputs

@pytest.mark.parametrize("out_format", tl.FORMATS)
def test_output_tile_bytes_decode_to_values(out_format):
    a, b = randn((64, 64)), randn((64, 96))
    r = golden_matmul(a, b, fidelity="HiFi2", fp32_dest_acc=True, packer_l1_acc=False, out_format=out_format)
    t = r.tile_bytes()
    assert t.shape == (2, 3, tl.TILE_BYTES[out_format])
    back = tl.from_tiles(tl.decode_tiles(t, out_format))
    assert np.array_equal(back, r.values)
    if out_format.startswith("Bfp"):                         # one shared exponent per face row
        assert r.exps.shape == (64, 96 // 16)
        assert np.array_equal(tl.bfp_tile_parts(t, out_format)[0][0, 0, :16], r.exps[:16, 0])


def test_relu_and_bias():
    """Fused bias (ELWADD after the K loop) and packer ReLU; every partial and final value is an
    integer of magnitude <= 2*1*64 + 8 < 256, exact in bf16 Dst, partials and output."""
    a, b = ints((32, 64), -2, 3), ints((64, 64), -1, 2)
    bias = ints((64,))
    r = golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=False, packer_l1_acc=False, in0_block_w=1,
                      bias=bias, relu=True)
    want = np.maximum(a.astype(np.float64) @ b + bias, 0)
    assert np.array_equal(r.values, want)
    assert np.all(tl.f32_bits(r.values) >> 31 == 0)               # no -0


def test_untilize_out_copies_the_partials_whole_only_where_they_are_unpacked_to_dest():
    """ttmetal-matmul §1.11 with §7.2: untilize packs the result into the Float32 partials and copies
    it back into DST. The partials CB is UnpackToDestFp32 in TT-Metal 0.81.1 (provenance N8): the copy
    keeps every bit. With a fused bias only the reload's alias is, and the copy out of the partials goes
    through SrcA, so a Float32 output keeps only TF32 bits."""
    a, b = randn((32, 64)), randn((64, 32))
    kw = dict(fidelity="HiFi4", fp32_dest_acc=True, packer_l1_acc=False, out_format="Float32")
    assert np.array_equal(golden_matmul(a, b, untilize_out=True, **kw).bits, golden_matmul(a, b, **kw).bits)
    assert np.any(golden_matmul(a, b, **kw).bits & 0x1FFF != 0)
    assert np.all(golden_matmul(a, b, untilize_out=True, untilize_unpack_to_dest=False, **kw).bits & 0x1FFF == 0)
    bias = np.zeros(32, np.float32)
    assert np.all(golden_matmul(a, b, untilize_out=True, bias=bias, **kw).bits & 0x1FFF == 0)


# ---------------------------------------------------------------------------------------------
# fast mode and plans

@pytest.mark.parametrize("fidelity,fp32,l1acc", [("HiFi4", True, False), ("HiFi2", False, True), ("LoFi", False, False)])
def test_fast_mode_close_to_float64(fidelity, fp32, l1acc):
    a, b = randn((128, 512)), randn((512, 128))
    ref = a.astype(np.float64) @ b
    r = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=l1acc, in0_block_w=4,
                      mode="fast")
    assert pcc(r.values, ref) > 0.999
    exact = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=l1acc, in0_block_w=4)
    assert pcc(exact.values, ref) > 0.999


@pytest.mark.parametrize("untilize,bias,l1acc,out", [(False, True, True, "Float16_b"), (True, False, False, "Float32"),
                                                     (False, False, False, "Bfp8_b")])
def test_fast_mode_row_chunks_do_not_change_bits(monkeypatch, untilize, bias, l1acc, out):
    """Fast mode runs the conversions of each K-block chunk by chunk of output rows: any chunking
    (one row, several rows, one chunk) gives the same bits, and the fast model still agrees with
    numpy's float64 product."""
    import kgen.proof.golden as g
    a, b = randn((96, 256)), randn((256, 64))
    kw = dict(fidelity="HiFi2", fp32_dest_acc=out == "Float32", packer_l1_acc=l1acc, in0_block_w=2, out_format=out,
              untilize_out=untilize, bias=randn((64,)) if bias else None, relu=True, mode="fast")
    results = []
    for chunk in (64, 3 * 64, 1 << 30):
        monkeypatch.setattr(g, "FAST_CHUNK_ELEMENTS", chunk)
        results.append(golden_matmul(a, b, **kw))
    assert all(np.array_equal(r.bits, results[0].bits) for r in results)
    if out == "Bfp8_b":
        assert all(np.array_equal(r.data.exps, results[0].data.exps) for r in results)
    ref = np.maximum(a.astype(np.float64) @ b + (kw["bias"] if bias else 0), 0)
    assert pcc(results[0].values, ref) > 0.99


def test_golden_from_plan_matches_explicit_call():
    p = plan(load(example("l1acc_two_blocks_bias")))          # bf16 x bfp8_b, bias, relu, L1 acc
    m, k, n = p.mt * 32, p.kt * 32, p.nt * 32
    a = randn((m, k))
    b = randn((k, n), "Bfp8_b")
    bias = randn((n,))
    r = golden_from_plan(p, a, b, bias)
    again = golden_matmul(a, b, fidelity=p.compute.math_fidelity, fp32_dest_acc=p.compute.fp32_dest_acc,
                          packer_l1_acc=p.l1_acc_enabled, in0_format=p.in0_format, in1_format=p.in1_format,
                          out_format=p.out_format, in0_block_w=p.in0_block_w, num_k_blocks=p.num_blocks,
                          bias=bias, relu=True, arch=p.arch.name)
    assert np.array_equal(r.bits, again.bits)
    ref = np.maximum(a.astype(np.float64) @ b + bias, 0)
    assert np.all(r.values >= 0)
    assert pcc(r.values, ref) > 0.999


def test_bad_arguments():
    a, b = np.ones((32, 64), np.float32), np.ones((64, 32), np.float32)
    with pytest.raises(ValueError):
        golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=False, packer_l1_acc=False, in0_block_w=3)
    with pytest.raises(ValueError):
        golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=False, packer_l1_acc=False, in0_block_w=1,
                      num_k_blocks=3)
    with pytest.raises(ValueError):
        golden_matmul(a, b, fidelity="HiFi4", fp32_dest_acc=False, packer_l1_acc=True,
                      partials_format="Bfp8_b")
    with pytest.raises(ValueError):
        golden_matmul(a[:, :40], b[:40], fidelity="HiFi4", fp32_dest_acc=False, packer_l1_acc=False)


# ---------------------------------------------------------------------------------------------
# the fused SFPU activation: where the golden applies it, and what it hands the SFPU model

def _activation_plan(act: str, bias: bool, fp32: bool = False):
    from kgen.gen.spec import parse_text, resolve

    text = (f"matmul t {{ arch = blackhole  shape = 64 x 64 x 128  grid = 1 x 1  block {{ in0_block_w = 2 }} "
            f"dtype {{ in0 = bfloat16  in1 = bfloat16  out = float32 }}  compute {{ fp32_dest_acc = {str(fp32).lower()} }} "
            f"fuse {{ bias = {str(bias).lower()}  activation = {act} }} }}")
    return plan(resolve(parse_text(text, "t.kspec")))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("fp32", [False, True])
def test_the_activation_acts_on_dst_at_tts_point(monkeypatch, bias, fp32):
    """A stand-in SFPU model that doubles DST (exact in any format): the output must be twice the
    output without the activation. With a bias the activation follows the add (TT's bias stage), so
    doubling before it would give 2 * matmul + bias instead. The stand-in also checks what the
    contract hands it: whole 32 x 32 tiles of float32 DST values and TT's kernel ABI."""
    import sys
    import types

    seen = []

    def apply_activation(dst, kind, p0, p1, p2, *, arch, fp32_dest, approx):
        assert dst.dtype == np.float32 and dst.shape[-2:] == (32, 32)
        seen.append((kind, p0, p1, p2, arch, fp32_dest, approx))
        return dst * np.float32(2)

    monkeypatch.setitem(sys.modules, "kgen.proof.sfpu_golden",
                        types.SimpleNamespace(apply_activation=apply_activation))
    rng = np.random.default_rng(0)
    a = tl.quantize(rng.standard_normal((64, 128)).astype(np.float32), "Float16_b")
    b = tl.quantize(rng.standard_normal((128, 64)).astype(np.float32), "Float16_b")
    row = tl.quantize(rng.standard_normal(64).astype(np.float32), "Float16_b") if bias else None
    plain = golden_from_plan(_activation_plan("none", bias, fp32), a, b, row).values
    doubled = golden_from_plan(_activation_plan("softplus(2, 10)", bias, fp32), a, b, row).values
    assert np.array_equal(doubled, 2 * plain)
    assert seen and all(s == ("softplus", 0x40000000, 0x41200000, 0x3F000000, "blackhole", fp32, True)
                        for s in seen)
