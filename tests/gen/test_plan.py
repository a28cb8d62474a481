"""Plan values against numbers computed by hand from TT-Metal's rules (docs/reference/matmul.md §2-§3).

Each expected value is worked out in the comment beside it; none is read back from kgen's output.
"""

from __future__ import annotations

import re

import pytest

from conftest import example
from kgen.core.arch import load_arch
from kgen.gen.plan import PlanError, plan
from kgen.gen.spec import MatmulSpec, load, parse_text, resolve

BF16, BFP8, FP32 = 2048, 1088, 4096   # 32x32 tile bytes (tile.cpp)
WH_USABLE = 1499136 - 105824           # MEM_L1_SIZE - round_up(MEM_MAP_END 35168 + 69 KiB, 32)
BH_USABLE = 1572864 - 111744           # MEM_L1_SIZE - round_up(MEM_MAP_END 41088 + 69 KiB, 64)


def cb_table(p):
    return {c.index: (c.data_format, c.page_bytes, c.pages, c.total_bytes, c.region) for c in p.cbs}


def test_arch_facts():
    wh, bh = load_arch("wormhole_b0"), load_arch("blackhole")
    assert wh.usable_cb_bytes == WH_USABLE == 1393312
    assert bh.usable_cb_bytes == BH_USABLE == 1461120
    assert wh.worker_grid == (8, 8) and bh.worker_grid == (13, 10)
    # get_dest_reg_count: 1024 rows x 16 datums / (32*32) = 16 tiles; half-sync /2; fp32 /2.
    for arch in (wh, bh):
        assert arch.dst_tiles(full_sync=True, fp32_dest_acc=False) == 16
        assert arch.dst_tiles(full_sync=True, fp32_dest_acc=True) == 8
        assert arch.dst_tiles(full_sync=False, fp32_dest_acc=False) == 8
        assert arch.dst_tiles(full_sync=False, fp32_dest_acc=True) == 4
        assert arch.tile_bytes["Bfp8_b"] == 1088 and arch.tile_bytes["Bfp4_b"] == 576


def test_peak_bf16_blackhole():
    p = plan(load(example("peak_bf16")))
    assert (p.mt, p.nt, p.kt) == (128, 128, 128)                    # 4096 / 32
    assert p.grid == (8, 8) and (p.per_core_m, p.per_core_n) == (16, 16)
    assert (p.out_block_h, p.out_block_w, p.in0_block_w) == (16, 16, 4)
    assert (p.out_subblock_h, p.out_subblock_w) == (4, 2)
    assert p.num_blocks == 32                                        # Kt / in0_block_w
    # bias and num_blocks = 32 > 1 -> PACKER_L1_ACC; partials Float16_b (no fp32 dest)
    assert p.policy == "packer_l1_acc" and p.l1_acc_enabled
    assert p.partials_format == "Float16_b"
    cbs = cb_table(p)
    # in0: out_block_h * in0_block_w * 2 (B*num_blocks > 1) = 16*4*2 = 128 pages
    assert cbs[0] == ("Float16_b", BF16, 128, 128 * BF16, "in0")
    assert cbs[1] == ("Float16_b", BF16, 128, 128 * BF16, "in1")
    # bias: out_block_w pages, no double buffer
    assert cbs[3] == ("Float16_b", BF16, 16, 16 * BF16, "bias")
    # out and partials: one out block (256 tiles) each, same format -> one shared region
    assert cbs[4][:4] == ("Float16_b", BF16, 256, 256 * BF16) and cbs[4][4] == cbs[5][4]
    assert cbs[5][:4] == ("Float16_b", BF16, 256, 256 * BF16)
    assert p.cb_bytes == 2 * 128 * BF16 + 16 * BF16 + 256 * BF16 == 1081344
    assert p.l1_margin == BH_USABLE - 1081344
    assert p.dst_capacity == 8 and p.dst_sync == "SyncHalf"


def test_peak_small_variants():
    p = plan(load(example("peak_small")))
    # 256 x 256 x 1024 -> 8 x 8 x 32 tiles on a 2 x 2 grid -> per_core 4 x 4 (auto)
    assert (p.per_core_m, p.per_core_n, p.num_blocks) == (4, 4, 8)
    # first SUBBLOCK_HW_CHOICES entry (4,2) divides the 4 x 4 block and fits 8 tiles
    assert (p.out_subblock_h, p.out_subblock_w) == (4, 2)
    assert p.policy == "packer_l1_acc"                               # 8 > 2, no bias
    assert p.cb_bytes == 4 * 4 * 2 * BF16 * 2 + 16 * BF16          # in0 + in1 + shared out/partials

    fp32 = plan(load(example("peak_small"), "fp32"))
    # fp32 dest: partials Float32 != out Float16_b -> two regions; DST 4 tiles -> (2,2) is the
    # first table entry that divides 4 x 4 with h*w <= 4
    assert fp32.partials_format == "Float32"
    assert (fp32.out_subblock_h, fp32.out_subblock_w) == (2, 2)
    assert cb_table(fp32)[5] == ("Float32", FP32, 16, 16 * FP32, "partials")
    assert cb_table(fp32)[4][4] == "out"
    assert fp32.dst_capacity == 4

    spill = plan(load(example("peak_small"), "spill"))
    assert spill.policy == "spill_reload" and spill.partials_format == "Float16_b"
    assert any("spill/reload without fp32 dest" in w for w in spill.warnings)


def test_bfp8_spill_partials_take_output_format():
    p = plan(load(example("wh_bfp8_spill")))
    assert p.policy == "spill_reload" and p.partials_format == "Bfp8_b"
    cbs = cb_table(p)
    assert cbs[0] == ("Bfp8_b", BFP8, 8 * 8 * 2, 128 * BFP8, "in0")
    assert cbs[4][4] == cbs[5][4] == "out+partials"
    assert p.cb_bytes == 2 * 128 * BFP8 + 64 * BFP8 == 348160
    l1 = plan(load(example("wh_bfp8_spill"), "l1acc"))
    # L1 acc cannot add into block-float: partials Float16_b, split from the Bfp8_b output
    assert l1.partials_format == "Float16_b" and cb_table(l1)[5] == ("Float16_b", BF16, 64, 64 * BF16, "partials")
    assert cb_table(l1)[4] == ("Bfp8_b", BFP8, 64, 64 * BFP8, "out")


@pytest.mark.parametrize("name, variant, policy, reason_part", [
    ("l1acc_one_block", None, "dst_only", "num_blocks = 1"),
    ("l1acc_two_blocks", None, "packer_l1_acc", "num_blocks = 2 > 1"),
    ("l1acc_two_blocks", "bias", "packer_l1_acc", "num_blocks = 2 > 1"),
    ("l1acc_two_blocks_bias", None, "packer_l1_acc", "num_blocks = 2 > 1"),
    ("peak_small", None, "packer_l1_acc", "num_blocks = 8 > 1"),
])
def test_policy_follows_tt_metal(name, variant, policy, reason_part):
    p = plan(load(example(name), variant))
    assert p.policy == policy
    assert reason_part in p.policy_reason


def test_policy_reason_names_the_rule():
    # TT-Metal 0.81.1: packer_l1_acc && num_blocks > 1, bias or not (docs/reference/provenance.md R7); with
    # two K-blocks and no bias its kernel defines PACKER_L1_ACC but never turns accumulation on
    p = plan(load(example("l1acc_two_blocks")))
    assert p.policy_reason.startswith("packer_l1_acc requested and num_blocks = 2 > 1")
    assert "never accumulates" in p.policy_reason
    one = plan(load(example("l1acc_one_block")))
    assert "num_blocks > 1, bias or not" in one.policy_reason and "num_blocks > 2" not in one.policy_reason


def test_single_k_block_is_not_double_buffered():
    p = plan(load(example("l1acc_one_block")))
    # B * num_blocks == 1 -> no double buffering of in0/in1
    assert cb_table(p)[0][2] == 4 * 4 and cb_table(p)[1][2] == 4 * 4
    assert p.cb_bytes == 16 * BF16 * 2 + 16 * BF16 == 98304


def test_two_blocks_with_bias_and_bfp8_in1():
    p = plan(load(example("l1acc_two_blocks_bias")))
    # 256 x 512 x 256 -> 8 x 16 x 8 tiles, grid 4 x 2 -> per_core 4 x 4, out_block 2 x 4 given
    assert (p.per_core_m, p.per_core_n, p.num_blocks_h_dim, p.num_blocks_w_dim) == (4, 4, 2, 1)
    assert (p.out_subblock_h, p.out_subblock_w) == (2, 4)           # (4,2) does not divide h=2
    cbs = cb_table(p)
    assert cbs[1] == ("Bfp8_b", BFP8, 4 * 4 * 2, 32 * BFP8, "in1")
    assert cbs[3] == ("Float16_b", BF16, 4, 4 * BF16, "bias")
    # Two output blocks per core, each packed to partials before its result (bias stage): out and
    # partials get a region each, or block 2's partials would land on block 1's undrained output
    # (issue #12). TT-Metal's factory would share them here (92160 B) and rely on the writer's timing.
    assert p.out_partials_sharing.startswith("separate: 2 output blocks per core")
    assert p.cb_bytes == 16 * BF16 + 32 * BFP8 + 4 * BF16 + 8 * BF16 + 8 * BF16 == 92160 + 8 * BF16


def test_untilize_with_several_subblock_columns_splits_out_and_partials():
    p = plan(load(example("untilize_relu_reuse")))
    assert p.mt == 2 * 512 // 32                                       # batch fused into M
    assert p.in1_num_subblocks == 2
    cbs = cb_table(p)
    assert cbs[4][4] == "out" and cbs[5][4] == "partials"            # same format, still split
    assert p.cb_bytes == 4 * 16 * BF16


def test_fp32_with_l1acc_warns_about_28800():
    p = plan(load(example("bh_fp32_bias")))
    assert p.policy == "packer_l1_acc" and p.partials_format == "Float32"
    assert cb_table(p)[4][4] == "out+partials"                         # Float32 out matches
    assert any("28800" in w for w in p.warnings)


def test_wormhole_hifi4_fp32_warns():
    p = plan(load(example("wh_fp32_hifi4")))
    assert any("38306" in w and "HiFi3" in w for w in p.warnings)
    assert not any("38306" in w for w in plan(load(example("wh_fp32_hifi4"), "hifi3")).warnings)
    full = plan(load(example("wh_fp32_hifi4"), "full_sync"))
    assert full.dst_capacity == 8 and full.dst_sync == "SyncFull"     # full sync, fp32
    # its auto 4 x 2 subblock fills the 8-tile SyncFull DST, which TT's 2D factory compiles, but ttnn.matmul's
    # validation bounds it by the half-sync fp32 DST, 4 tiles
    assert [d for d in full.factory_departures if "cleared, 4 tiles with Float32" in d and "refuse" in d]


BASE = """
matmul t {{
    arch = {arch}
    shape = {shape}
    dtype {{ in0 = bfloat16 in1 = bfloat16 out = {out} }}
    grid = {grid}
    dataflow = mcast_2d
    block {{ in0_block_w = {w} out_subblock = {sb} per_core = {pc} out_block = {ob} }}
    compute {{ fp32_dest_acc = {fp32} packer_l1_acc = {l1} dst_full_sync = {full} }}
}}
"""


def make(**kw):
    values = dict(arch="wormhole_b0", shape="256 x 256 x 256", out="bfloat16", grid="2 x 2", w="auto",
                  sb="auto", pc="auto", ob="auto", fp32="false", l1="false", full="false")
    values.update(kw)
    return resolve(parse_text(BASE.format(**values), "t.kspec"))


@pytest.mark.parametrize("out_block, fp32, full, expected", [
    ("8 x 8", "false", "false", (4, 2)),     # first entry fits 8 tiles
    ("6 x 4", "false", "false", (2, 4)),     # (4,2) does not divide h = 6
    ("6 x 4", "true", "false", (2, 2)),      # 4-tile DST: (3,2) is 6 tiles, (2,2) is next
    ("8 x 8", "false", "true", (4, 2)),      # 16-tile DST, table order still starts at (4,2)
    ("7 x 3", "false", "false", (7, 1)),     # (7,1) precedes (1,3)... in table order
    ("5 x 5", "true", "false", (1, 1)),      # nothing but (1,1) divides 5 x 5 within 4 tiles
])
def test_auto_subblock_in_table_order(out_block, fp32, full, expected):
    h, w = (int(v) for v in out_block.split("x"))
    spec = make(shape=f"{32 * h * 2} x {32 * w * 2} x 256", pc=f"{h} x {w}", ob=out_block, fp32=fp32, full=full)
    p = plan(spec)
    assert (p.out_subblock_h, p.out_subblock_w) == expected


@pytest.mark.parametrize("kw, rule, nearest", [
    (dict(w="3"), "Kt % in0_block_w == 0", "2, 4"),                                 # Kt = 8
    (dict(sb="3 x 2"), "out_block_h % out_subblock_h == 0", "2, 4"),               # out_block 4 x 4
    (dict(sb="4 x 4"), "out_subblock_h * out_subblock_w <= get_dest_reg_count", "4 x 2"),
    (dict(sb="4 x 2", fp32="true"), "get_dest_reg_count", "2 x 2"),
    # Mt = 8 over at most 2 rows of cores: TT-Metal's grid is ceil(Mt / per_core_M) rows, so per_core_M
    # need not divide Mt (the last row is padded), but it must be at least ceil(8 / 2) = 4
    (dict(pc="3 x 4"), "num_blocks_y <= grid.y", "4, 5"),     # ceil(8 / 3) = 3 rows > 2
    (dict(pc="2 x 4"), "num_blocks_y <= grid.y", "4, 5"),     # 4 rows > 2
    (dict(grid="9 x 8"), "grid within compute_with_storage_grid_size", "8 x 8"),
    (dict(ob="3 x 4"), "per_core_M % out_block_h == 0", "2, 4"),
])
def test_rule_violations_name_rule_and_nearest(kw, rule, nearest):
    with pytest.raises(PlanError) as exc:
        plan(make(**kw))
    assert rule in exc.value.message
    assert nearest in (exc.value.hint or "")


def test_l1_overflow_names_bytes_and_suggests():
    # per core 32 x 32 tiles of bf16 out alone is 2 MiB > L1
    with pytest.raises(PlanError) as exc:
        plan(make(shape="1024 x 1024 x 1024", grid="1 x 1", pc="32 x 32", ob="32 x 32", w="8"))
    assert "usable L1" in exc.value.message and "over by" in exc.value.message
    auto = plan(make(shape="1024 x 1024 x 1024", grid="1 x 1", pc="32 x 32", w="8"))
    assert auto.cb_bytes <= auto.arch.usable_cb_bytes            # auto out_block shrinks to fit
    assert auto.out_block_h * auto.out_block_w < 32 * 32


# TT-Metal 0.81.1 and dst_full_sync_en (docs/reference/matmul.md §3.3, docs/reference/provenance.md R10,
# read in the wheel's machine code): to_compute_hardware_config sets double_buffer_dest = !dst_full_sync_en
# (_ttnncpp.so 0xc9fc39); the 2D, reuse and DRAM-sharded builders hand that hardware config to the compute
# kernel as it is (2D: 0x1244172), libtt_metal.so's LowerKernel turns it back (0xb2a7be) and the JIT writes
# DST_SYNC_MODE SyncFull from it (0xd6a77f): those factories compile SyncFull when asked. The 1D builders set
# double_buffer_dest after the conversion (0x1211ef8, 0x1226628): SyncHalf whatever is asked. ttnn.matmul's
# validation bounds the subblock by get_dest_reg_count with dst_full_sync_en cleared (2D 0x11d2ffb, reuse
# 0x11d2d1c, 1D 0x11d2f6b): the half-sync DST.
def _full_sync(name: str) -> MatmulSpec:
    text = example(name).read_text()
    at = re.search(r"^( *)compute *=.*$", text, re.M) or re.search(r"^( *)arch *=.*$", text, re.M)
    return resolve(parse_text(f"{text[:at.end()]}\n{at.group(1)}compute {{ dst_full_sync = true }}"
                              f"{text[at.end():]}", f"{name}.kspec"))


@pytest.mark.parametrize("name, departs", [
    ("peak_small", ()),                   # 2D, 4 x 2 subblock: TT compiles SyncFull and accepts the subblock
    ("transpose_mcast_small", ()),
    ("untilize_relu_reuse", ()),          # reuse: the same
    ("attention_qk_batched", ()),         # reuse with a batched in1
    ("wh_decode_dram_sharded", ()),       # DRAM-sharded: SyncFull, no subblock validation
    ("mcast_1d_in0_small", ("1D multicast factory compiles SyncHalf",)),
    ("mcast_1d_in1_small", ("1D multicast factory compiles SyncHalf",)),
])
def test_full_sync_departs_only_where_tt_metal_would_not_run_it(name, departs):
    p = plan(_full_sync(name))
    assert p.dst_sync == "SyncFull" and p.dst_capacity == 16 and p.out_subblock_tiles <= 8
    assert len(p.factory_departures) == len(departs)
    assert all(d in w for d, w in zip(departs, p.factory_departures)), p.factory_departures
    assert set(p.factory_departures) <= set(p.warnings)            # kgen check warns of each
    assert plan(load(example(name))).factory_departures == ()      # half sync: kgen's DST rule is TT's


def test_full_sync_allows_16_tile_subblocks_that_ttnn_validation_refuses():
    p = plan(make(shape="512 x 512 x 256", grid="2 x 2", pc="8 x 8", sb="4 x 4", full="true"))
    assert p.out_subblock_tiles == 16 and p.dst_capacity == 16 and p.dst_sync == "SyncFull"
    (d,) = p.factory_departures                                     # 16 > 8, the half-sync bf16 DST
    assert "16 tiles" in d and "cleared, 8 tiles with Float16_b" in d and "refuse" in d
    assert "2D multicast factory itself compiles SyncFull" in d and "SyncHalf" not in d
    within = plan(make(shape="512 x 512 x 256", grid="2 x 2", pc="8 x 8", sb="4 x 2", full="true"))
    assert within.factory_departures == ()                         # 8 tiles: TT accepts and compiles it


def test_full_sync_on_1d_departs_twice_past_the_half_sync_dst():
    spec = resolve(parse_text(example("mcast_1d_in0_small").read_text().replace(
        "per_core     = 2 x 4", "per_core     = 2 x 8").replace("grid     = 4 x 2", "grid     = 2 x 2").replace(
        "out_subblock = auto", "out_subblock = 2 x 8").replace(
        "compute = peak_hifi2", "compute = peak_hifi2\n    compute { dst_full_sync = true }"), "t.kspec"))
    p = plan(spec)
    assert p.out_subblock_tiles == 16
    syncs, bound = p.factory_departures                             # SyncHalf compiled; 16 > 8 refused
    assert "compiles SyncHalf" in syncs and "refuse" in bound and "compiles SyncFull" not in bound


def test_untilize_blockfloat_is_rejected():
    spec = resolve(parse_text(BASE.format(arch="wormhole_b0", shape="256 x 256 x 256", out="bfloat8_b",
                                          grid="2 x 2", w="auto", sb="auto", pc="auto", ob="auto", fp32="false",
                                          l1="false", full="false").replace("}\n}", "}\n untilize_out = true\n}"),
                              "t.kspec"))
    with pytest.raises(PlanError, match="untilize"):
        plan(spec)


def test_untilize_with_bias_needs_partials_in_the_output_format():
    # TT-Metal's kernel sets the packer to the output format and then packs the biased result into
    # the partials CB (untilize_mode_out = mm_partials): Float32 out with Float16_b partials (L1 acc,
    # bf16 DST) would write 4096-byte tiles into 2048-byte pages. Found by kgen fuzz (seed 1, case 47).
    text = """matmul t {
        arch = wormhole_b0   shape = 224 x 96 x 480   grid = 1 x 1
        dtype { in0 = float32  in1 = bfloat16  out = float32 }
        block { out_subblock = 7 x 1  out_block = 7 x 3  in0_block_w = 1 }
        compute { math_fidelity = HiFi3  fp32_dest_acc = false  packer_l1_acc = true }
        fuse { bias = true }
        untilize_out = true
    }"""
    with pytest.raises(PlanError, match="partials in the output format"):
        plan(resolve(parse_text(text, "t.kspec")))
    # the same with the partials in Float32 (fp32 DST) is legal
    fp32 = text.replace("fp32_dest_acc = false", "fp32_dest_acc = true").replace("7 x 1", "1 x 1")
    ok = plan(resolve(parse_text(fp32, "t.kspec")))
    assert ok.partials_format == ok.out_format == "Float32"


def test_arch_behaviour_is_data_with_the_values_tt_metal_gives():
    """What each arch changes in kgen's output comes from configs/arch/ (no code branches on the
    arch's name): Blackhole flushes the data multicast before the flag, Wormhole has the FPU
    renormalisation quirk and the HiFi4 + fp32 dest accuracy bug."""
    from kgen.core.arch import load_arch

    bh, wh = load_arch("blackhole").behaviour, load_arch("wormhole_b0").behaviour
    assert bh.flush_mcast_before_flag and not wh.flush_mcast_before_flag
    assert wh.fpu_renormalisation_quirk and not bh.fpu_renormalisation_quirk
    assert wh.hifi4_fp32_dest_accuracy_bug and not bh.hifi4_fp32_dest_accuracy_bug
    assert load_arch("wormhole_b0").toolchain.pcie_noc == (0, 3) and load_arch("blackhole").toolchain.num_dram_banks == 8


# ----------------------------------------------------------------------------------------------
# Padded last blocks. TT-Metal's 2D factory (matmul_multicore_reuse_mcast_2d_program_factory.cpp,
# "Parameters for last row, col, or block"): num_blocks_y = ceil(Mt / per_core_M), num_blocks_x =
# ceil(Nt / per_core_N); last_per_core_M = Mt % per_core_M or per_core_M; last_out_block_h =
# last_per_core_M % out_block_h or out_block_h (and the same for N / w).

def test_blackhole_4096_cubed_on_the_full_grid_pads_the_last_row_and_column():
    # 128 tiles over 10 rows: per_core_M = ceil(128 / 10) = 13, ceil(128 / 13) = 10 rows, the last
    # holds 128 - 9 * 13 = 11; over 13 columns: per_core_N = ceil(128 / 13) = 10, 13 columns, the last 8.
    p = plan(make(arch="blackhole", shape="4096 x 4096 x 4096", grid="13 x 10", pc="13 x 10"))
    assert p.grid == (13, 10)
    assert (p.last_per_core_m, p.last_per_core_n) == (11, 8)
    assert p.padded_m and p.padded_n
    # the CBs are the factory's full-block sizes: padding does not shrink them
    assert p.cb(0).pages == p.out_block_h * p.in0_block_w * 2 and p.cb(1).pages == p.out_block_w * p.in0_block_w * 2
    notes = " ".join(p.padding_notes)
    assert "11 of per_core_M = 13" in notes and "8 of per_core_N = 10" in notes


def test_last_out_block_values_are_the_factorys():
    # Mt = Nt = 7 over per_core 4 x 4 with out_block 2 x 4: last_per_core = 3, last_out_block_h = 3 % 2 = 1,
    # last_out_block_w = 3 % 4 = 3
    p = plan(make(shape="224 x 224 x 256", pc="4 x 4", ob="2 x 4", sb="1 x 2"))
    assert p.grid == (2, 2)
    assert (p.last_out_block_h, p.last_out_block_w) == (1, 3)


def test_an_out_block_entirely_past_the_tensor_is_planned_on_mcast_2d():
    # TT-Metal's _padding readers read every block but a core's last one in full
    # (`bh < num_blocks_h_dim - 1 || h < last_block_h`): with Mt = 7, per_core_M = 6 and out_block_h = 2
    # the last core holds 1 row, so its last two blocks are read past the tensor; the 2D factory's
    # receiver writers stop at last_num_blocks_h_dim = 1 (reader_bmm_tile_layout_in1_receiver_writer_padding.cpp),
    # so TT builds it and so does kgen (tests/gen/test_padded_out_blocks.py for the factories that refuse it)
    p = plan(make(shape="224 x 256 x 256", pc="6 x 4", ob="2 x 4"))
    assert (p.last_per_core_m, p.out_block_h, p.num_blocks_h_dim) == (1, 2, 3)
    # auto out_block still prefers one that reaches the last core's tiles (the choice before)
    p = plan(make(shape="224 x 256 x 256", pc="6 x 4"))
    assert p.last_per_core_m > p.per_core_m - p.out_block_h


def test_evenly_divided_plans_have_no_padding():
    p = plan(make())
    assert not p.padded_blocks and p.padding_notes == () and p.in0_last_ktile_w == 0


def test_mcast_2d_refuses_a_padded_top_row():
    # The factory gives the top row's in1 sender/writer out_block_h / out_subblock_h, out_subblock_h and
    # a 0 h-skip whatever the row: on a single row of cores, a padded M would be written past the output.
    with pytest.raises(PlanError) as exc:
        plan(make(shape="128 x 256 x 256", grid="2 x 1", pc="6 x 4"))
    assert "not the top row" in exc.value.message
    # reuse has no such sender, and two rows put the padding on a receiver row
    import dataclasses
    reuse = dataclasses.replace(make(shape="128 x 256 x 256", grid="2 x 1", pc="6 x 4"), dataflow="reuse")
    assert plan(reuse).padded_m
    assert plan(make(shape="160 x 256 x 256", grid="2 x 2", pc="3 x 4")).padded_m


def test_transpose_mcast_puts_m_blocks_along_x():
    # The 2D factory: num_blocks_y = ceil(Mt / per_core_M), num_blocks_x = ceil(Nt / per_core_N), and with
    # transpose_mcast `std::swap(num_cores_with_work_c, num_cores_with_work_r)`: the cores with work are
    # num_blocks_y columns by num_blocks_x rows. Mt = 8, Nt = 4, per_core 2 x 2: 4 M blocks, 2 N blocks.
    import dataclasses
    spec = dataclasses.replace(make(shape="256 x 128 x 256", grid="4 x 2", pc="2 x 2"), transpose_mcast=True)
    p = plan(spec)
    assert p.grid == (4, 2) and (p.m_blocks, p.n_blocks) == (4, 2)
    # validation after the swap: num_blocks_y <= grid.x, num_blocks_x <= grid.y
    with pytest.raises(PlanError) as exc:
        plan(dataclasses.replace(spec, grid=(2, 4)))
    assert "num_blocks_y <= grid.x" in exc.value.message
    # the field belongs to the 2D multicast program config only
    with pytest.raises(PlanError) as exc:
        plan(dataclasses.replace(spec, dataflow="reuse"))
    assert "2D multicast factory" in exc.value.message


def test_transpose_mcast_is_a_spec_key():
    text = BASE.format(arch="wormhole_b0", shape="256 x 128 x 256", out="bfloat16", grid="4 x 2", w="auto",
                       sb="auto", pc="2 x 2", ob="auto", fp32="false", l1="false", full="false")
    spec = resolve(parse_text(text.replace("grid", "transpose_mcast = true\n    grid", 1), "t.kspec"))
    assert spec.transpose_mcast and plan(spec).grid == (4, 2)


SHARDED = """
matmul s {{
    arch = {arch}
    shape = {shape}
    dtype {{ in0 = bfloat16 in1 = bfloat16 out = bfloat16 }}
    grid = {grid}
    {extra}
    memory {{ {memory} }}
    block {{ in0_block_w = {w} per_core = {pc} out_block = {ob} out_subblock = {sb} }}
}}
"""


def sharded(arch="wormhole_b0", shape="256 x 256 x 512", grid="4 x 2", memory="in0 = l1_block_sharded  "
            "out = l1_block_sharded", w="2", pc="4 x 2", ob="auto", sb="auto", extra=""):
    extra = extra if "dataflow" in extra else f"dataflow = mcast_2d  {extra}"   # the 2D factory's rules
    return resolve(parse_text(SHARDED.format(arch=arch, shape=shape, grid=grid, memory=memory, w=w, pc=pc, ob=ob,
                                             sb=sb, extra=extra), "s.kspec"))


def test_block_sharded_cb_table_is_the_factorys():
    # matmul_multicore_reuse_mcast_2d_program_factory.cpp @0000d49e: c_2 = per_core_M * in0_shard_width_in_tiles
    # in0 tiles globally allocated on in0 (and no 64-byte c_6 beside it: ttnn.matmul 0.81.1's 2D builder
    # allocates none, tests/gen/test_factory_cbs.py); c_4 = per_core_M * per_core_N out
    # tiles globally allocated on the output when it is sharded. Mt = Nt = 8, Kt = 16 on 4 x 2 cores with
    # per_core 4 x 2: 4 N blocks along x, so each in0 shard is 4 x (16 / 4) tiles.
    p = plan(sharded())
    t = cb_table(p)
    assert t[2] == ("Float16_b", BF16, 4 * 4, 4 * 4 * BF16, "in0 shard") and p.cb(2).buffer == "in0"
    assert 6 not in t
    assert t[4][2] == 4 * 2 and p.cb(4).buffer == "out"
    assert p.in0_shard_w == 16 // 4
    # the shard specs ttnn needs: grid of the cores with work, shard shapes in elements, ROW_MAJOR
    assert p.shard_specs["in0"] == {"memory_layout": "BLOCK_SHARDED", "grid": (0, 0, 3, 1),
                                    "orientation": "ROW_MAJOR", "shape": (4 * 32, 4 * 32)}
    assert p.shard_specs["out"]["shape"] == (4 * 32, 2 * 32)
    # transpose_mcast: the shard grid is the transposed grid and the orientation COL_MAJOR
    pt = plan(sharded(grid="2 x 4", extra="transpose_mcast = true"))
    assert pt.shard_specs["in0"]["orientation"] == "COL_MAJOR" and pt.shard_specs["in0"]["grid"] == (0, 0, 1, 3)


def test_do_not_inplace_interm0_out_cb():
    # do_not_inplace_interm0_out_CB = output_is_sharded && (per_core_M != out_block_h || per_core_N !=
    # out_block_w) (0.81.1's 2D builder; the N half: tests/gen/test_factory_cbs.py): per_core 4 x 2 with
    # out_block 2 x 2 (and subblock 1 x 2, TT's sharded-output rule) keeps c_4 and c_5 apart; with
    # out_block == per_core they share
    split = plan(sharded(ob="2 x 2", sb="1 x 2"))
    assert split.cb(4).region != split.cb(5).region and split.cb(4).pages == 4 * 2
    assert "do_not_inplace_interm0_out_CB" in split.out_partials_sharing
    shared = plan(sharded(ob="4 x 2", sb="4 x 2"))
    assert shared.cb(4).region == shared.cb(5).region


@pytest.mark.parametrize("kw, rule", [
    # BLOCK_SHARDED in0: ROW_MAJOR without transpose_mcast, COL_MAJOR with it (matmul_device_operation.cpp)
    (dict(memory="in0 = l1_block_sharded  orientation = col_major"), "COL_MAJOR orientation with transpose_mcast"),
    (dict(memory="in0 = l1_block_sharded  orientation = row_major", grid="2 x 4", extra="transpose_mcast = true"),
     "COL_MAJOR orientation with transpose_mcast"),
    # HEIGHT_SHARDED in0: !transpose_mcast, and K == in0_block_w
    (dict(memory="in0 = l1_height_sharded", grid="2 x 4", extra="transpose_mcast = true"),
     "HEIGHT_SHARDED in0 needs !transpose_mcast"),
    (dict(memory="in0 = l1_height_sharded", w="2"), "K == in0_block_w"),
    # sharded output: out_subblock_w == per_core_N || out_subblock_h == 1, the same for out_block
    (dict(memory="out = l1_block_sharded", ob="4 x 1", sb="1 x 1"), "out_block_w == per_core_N || out_block_h == 1"),
    (dict(memory="out = l1_block_sharded", ob="4 x 2", sb="2 x 1"),
     "out_subblock_w == per_core_N || out_subblock_h == 1"),
    # shard width % in0_block_w == 0: 4-tile shards and in0_block_w = 8
    (dict(w="8"), "shard_shape[1] / tile_width % in0_block_w == 0"),
    # an orientation belongs to a block-sharded in0 (kgen: the output's shards follow the grid)
    (dict(memory="out = l1_block_sharded  orientation = row_major", ob="4 x 2", sb="4 x 2"),
     "memory.orientation is a block-sharded in0's"),
])
def test_sharding_rules_are_tts(kw, rule):
    with pytest.raises(PlanError) as exc:
        plan(sharded(**kw))
    assert rule in exc.value.message


def test_sharded_auto_blocking_follows_the_sharded_rules():
    # auto subblock with a sharded output: the first of SUBBLOCK_HW_CHOICES (4,2), (2,4), ... with
    # w == per_core_N or h == 1; per_core 4 x 4, out_block 4 x 4: (4, 2) breaks it, (2, 4) has w == 4
    p = plan(sharded(shape="128 x 512 x 512", grid="4 x 1", pc="4 x 4", ob="4 x 4"))
    assert (p.out_subblock_h, p.out_subblock_w) == (2, 4)
    # auto in0_block_w divides the 4-tile shard width
    assert plan(sharded(w="auto")).in0_block_w == 4


def test_height_sharded_in0_is_the_factorys():
    # HEIGHT_SHARDED in0 (factory @0000d49e): c_0 itself globally allocated on in0, in0_CB_size = out_block_h *
    # in0_block_w tiles (one K-block: K == in0_block_w); the shard grid is the in0 senders' column
    # (validation: bbox start.x == end.x), shard per_core_M x K
    p = plan(sharded(shape="256 x 256 x 256", memory="in0 = l1_height_sharded", w="auto", pc="4 x 2"))
    assert p.in0_block_w == 8 and p.num_blocks == 1
    assert p.cb(0).buffer == "in0" and p.cb(0).pages == 4 * 8
    assert p.shard_specs["in0"] == {"memory_layout": "HEIGHT_SHARDED", "grid": (0, 0, 0, 1),
                                    "orientation": "ROW_MAJOR", "shape": (4 * 32, 8 * 32)}
    with pytest.raises(PlanError) as exc:      # kgen: c_0 spans out_block_h rows of the shard
        plan(sharded(shape="256 x 256 x 256", memory="in0 = l1_height_sharded", w="8", pc="4 x 2", ob="2 x 2"))
    assert "out_block_h == per_core_M" in exc.value.message
