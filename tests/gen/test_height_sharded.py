"""A height-sharded in0 and output on TT-Metal 0.81.1's 1D in1-multicast factory (issue #39 item 2), as
process_mcast_in1_program_and_create_override_variables builds it (matmul_multicore_reuse_mcast_1d_program_
factory.cpp) and matmul_device_operation.cpp validates it:

- core i of the compute grid (row-major) holds M-block i: per_core_M rows, all of N; shard i of a
  ROW_MAJOR height-sharded tensor on that grid lies on the same core;
- in0: `IN0_SHARDED`; a height shard holds all of K ("K must be equal to shard_shape[1] /
  in0_tile.get_width()"); in0_CB_tiles = num_blocks * per_core_M * in0_block_w (the whole shard); read in one
  K-block, c_0 is globally allocated on the shard; in several (extract_shard_sub_blocks = shard width /
  in0_block_w > 1), c_2 is the shard and each K-block is copied out of it into c_0;
- out: `OUT_SHARDED`, c_4 globally allocated on the shard (per_core_M x per_core_N tiles), the writers'
  last-num-blocks runtime args left out (`if (!output_is_sharded)`), "N must be equal to per_core_N",
  "out_subblock_w must be equal to per_core_N or out_subblock_h must be equal to 1";
- dataflow = auto: get_matmul_program_config's 1D config from the shard (per_core_M its rows, per_core_N = Nt,
  in0_block_w = Kt), create_matmul_1d_systolic_array_program_config's tall one with a core grid.
Expected values are those formulas worked by hand."""

from __future__ import annotations

import json

import pytest
from conftest import assert_proved

from kgen.core.types import Placement
from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.plan import SHARDED_PLACEMENT_RULE, PlanError, plan
from kgen.gen.spec import parse_text, resolve

BF16 = "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }"
H = Placement.L1_HEIGHT_SHARDED


def make(shape: str, memory: str, *lines: str, arch: str = "wormhole_b0"):
    body = "\n    ".join((f"arch = {arch}", f"shape = {shape}", BF16, f"memory {{ {memory} }}") + lines)
    return resolve(parse_text(f"matmul h {{\n    {body}\n}}\n", "h.kspec"))


BOTH = "in0 = l1_height_sharded  out = l1_height_sharded"


# ---- the plan -----------------------------------------------------------------------------------

def test_the_shards_and_cbs_are_the_factorys():
    # M 256 (8 tiles), N 64 (2), K 128 (4) on a 2 x 2 grid: 4 cores of 2 rows each
    p = plan(make("256 x 64 x 128", BOTH, "dataflow = mcast_1d_in1", "grid = 2 x 2"))
    assert (p.grid, p.per_core_m, p.per_core_n, p.in0_block_w, p.num_blocks) == ((2, 2), 2, 2, 4, 1)
    assert p.shard_specs["in0"] == {"memory_layout": "HEIGHT_SHARDED", "grid": (0, 0, 1, 1),
                                    "orientation": "ROW_MAJOR", "shape": (64, 128)}
    assert p.shard_specs["out"] == {"memory_layout": "HEIGHT_SHARDED", "grid": (0, 0, 1, 1),
                                    "orientation": "ROW_MAJOR", "shape": (64, 64)}
    # c_0: the whole in0 shard (2 x 4 tiles) on the in0 buffer; c_4: the whole output shard (2 x 2) on out
    assert (p.cb(0).pages, p.cb(0).buffer) == (2 * 4, "in0")
    assert (p.cb(4).pages, p.cb(4).buffer) == (2 * 2, "out")


def test_the_kernels_read_and_write_no_tensor_through_the_noc():
    v = run(make("256 x 64 x 128", BOTH, "dataflow = mcast_1d_in1", "grid = 2 x 2"), "verified").verified
    in0 = v.kernel("in0_sender")
    assert not in0.tensors and not [n for n, _ in walk(in0.body) if n.kind == "read_tiles"]
    for name in ("in1_sender_writer", "in1_receiver_writer"):
        k = v.kernel(name)
        assert "out" not in {t.name for t in k.tensors}
        assert not [n for n, _ in walk(k.body) if n.kind == "write_tiles"]
        waits = [n["tiles"] for n, _ in walk(k.body) if n.kind == "cb_wait_front" and n["cb"] == 4]
        assert waits == [2 * 2]                  # the whole output shard, once


def test_a_partial_last_row_of_shards():
    # 3 shards of 2 rows (M = 6 tiles) on a 2 x 2 grid: cores (0,0), (1,0), (0,1); the grid is the shard's
    p = plan(make("192 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", "dataflow = mcast_1d_in1"))
    assert (p.grid, p.num_cores, p.per_core_m) == ((2, 2), 3, 2)
    assert p.shard_specs["in0"]["grid"] == (0, 0, 1, 1)


def test_a_padded_batch_and_a_partial_last_shard():
    """t_s_linear_0e04b93aef's form, small: A [5, 49, 64] height-sharded 96 x 64 on 2 x 2. ttnn pads each
    batch's 49 rows to 64 (2 tiles), so Mt = 10 tiles in shards of 3: 4 shards, the last holding 1 tile row
    (ttnn pads it to the shard shape). The 1D factory reads each shard whole and its last core's writer stops
    at the tensor's rows (an interleaved output): kgen plans it."""
    p = plan(make("49 x 64 x 64", "in0 = l1_height_sharded  out = l1  in0_shard = 96 x 64 on 2 x 2", "batch = 5",
                  "dataflow = mcast_1d_in1"))
    assert (p.mt, p.per_core_m, p.num_cores, p.last_per_core_m) == (10, 3, 4, 1)
    # a height-sharded output with a partial last shard stays refused (kgen's whole-shard rule)
    with pytest.raises(PlanError) as info:
        plan(make("49 x 64 x 64", BOTH + "  in0_shard = 96 x 64 on 2 x 2", "batch = 5", "dataflow = mcast_1d_in1"))
    assert info.value.rule == "kgen: sharded tensors in whole shards"


def test_tts_program_args():
    artifacts = run(make("256 x 64 x 128", BOTH, "dataflow = mcast_1d_in1", "grid = 2 x 2"), "rendered")
    p = artifacts.plan
    ks = p.dataflow.tt_program(p, artifacts.rendered.manifest, {}).kernels
    in0 = ks["in0_sender"]
    assert in0.defines == {"SKIP_MCAST": "1", "IN0_SHARDED": "1"}
    # CT args 9..11: extract_shard_sub_blocks, shard width and height in tiles
    assert in0.compile_time_args[9:12] == (0, 4, 2)
    sender, receiver = ks["in1_sender_writer"], ks["in1_receiver_writer"]
    assert sender.defines.get("OUT_SHARDED") == "1" and receiver.defines.get("OUT_SHARDED") == "1"
    # the sender's 20 runtime args without last_out_num_blocks_w; the receivers' 13 without the last two
    assert {len(a) for _, a in sender.runtime_args} == {20}
    assert {len(a) for _, a in receiver.runtime_args} == {13}


# ---- TT's rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("memory, dataflow, words", [
    # the 1D in0 multicast takes in0 interleaved ("input_tensor_a must be width sharded")
    ("in0 = l1_height_sharded", "mcast_1d_in0", "take"),
    # the 2D factory's output is BLOCK_SHARDED ("Output memory layout must be BLOCK_SHARDED")
    ("out = l1_height_sharded", "mcast_2d", "take"),
])
def test_placements_the_factory_does_not_take(memory, dataflow, words):
    with pytest.raises(PlanError) as info:
        plan(make("256 x 64 x 128", memory, f"dataflow = {dataflow}", "grid = 2 x 2"))
    assert words in info.value.message and info.value.rule == SHARDED_PLACEMENT_RULE


def test_a_height_shard_read_in_several_k_blocks_is_copied_out_of_c_2():
    """in0_block_w = 1 < Kt = 4 (TT's systolic config with a core grid picks ceil(Kt / cores)):
    extract_shard_sub_blocks = 4 / 1 > 1, c_2 on the shard, c_0 a CB of its own of num_blocks x per_core_M x
    in0_block_w = 4 x 2 x 1 tiles, each K-block's 2 rows copied out of the shard (TT's CT arg 9 = 1)."""
    artifacts = run(make("256 x 64 x 128", BOTH, "dataflow = mcast_1d_in1", "grid = 2 x 2",
                         "block { in0_block_w = 1 }"), "rendered")
    p = artifacts.plan
    assert (p.cb(0).pages, p.cb(0).buffer) == (4 * 2 * 1, None)
    assert (p.cb(2).pages, p.cb(2).buffer) == (2 * 4, "in0")
    in0 = p.dataflow.tt_program(p, artifacts.rendered.manifest, {}).kernels["in0_sender"]
    assert in0.compile_time_args[9:12] == (1, 4, 2)
    # the 2D factory reads a height shard as one K-block: TT's "K == in0_block_w" there
    with pytest.raises(PlanError) as info:
        plan(make("256 x 64 x 128", "in0 = l1_height_sharded", "dataflow = mcast_2d", "grid = 2 x 4",
                  "block { in0_block_w = 2 }"))
    assert "in0_block_w = 2" in info.value.message


# ---- dataflow = auto --------------------------------------------------------------------------------

def test_auto_takes_get_matmul_program_configs_1d_config_from_the_shard():
    # shard 64 x 128 on 2 x 2: per_core_M = 2, per_core_N = Nt = 2, in0_block_w = K = 4; the sharded output's
    # get_matmul_subblock_params: out_subblock_w == per_core_N (2), h 1
    p = plan(make("256 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", "dataflow = auto"))
    assert (p.spec.dataflow, p.grid, p.per_core_m, p.per_core_n, p.in0_block_w) == ("mcast_1d_in1", (2, 2), 2, 2, 4)
    assert (p.out_subblock_h, p.out_subblock_w) == (1, 2)


def test_auto_lays_a_shard_out_when_the_spec_gives_none():
    # no shard spec: ceil(batch * Mt / cores) rows on each of the device's 8 x 8 Wormhole cores: 256 tiles / 64
    p = plan(make("8192 x 256 x 256", BOTH, "dataflow = auto"))
    assert (p.spec.dataflow, p.grid, p.per_core_m, p.per_core_n) == ("mcast_1d_in1", (8, 8), 4, 8)


def test_auto_with_a_core_grid_takes_the_systolic_tall_config():
    # t_s_linear_582e11ecf7: 16384 x 32 x 32 on core_grid (8, 8): per_core_M = 512 / 64 = 8, in0_block_w =
    # ceil(1 / 64) = 1 = Kt
    p = plan(make("16384 x 32 x 32", BOTH + "  in0_shard = 256 x 32 on 8 x 8", "dataflow = auto", "grid = 8 x 8"))
    assert (p.spec.dataflow, p.grid, p.per_core_m, p.per_core_n, p.in0_block_w) == ("mcast_1d_in1", (8, 8), 8, 1, 1)


def test_an_interleaved_in0_with_a_height_sharded_output():
    """s_o_h_8192x512x512's form: create_simple's 1D in1 config for a height-sharded output, whose subblock
    comes from get_matmul_subblock_params with out_subblock_w == per_core_N: here no (1, Nt) choice (Nt = 16),
    so its fallback 1 x 1."""
    p = plan(make("8192 x 512 x 512", "out = l1_height_sharded", "dataflow = auto"))
    assert p.spec.dataflow == "mcast_1d_in1" and p.per_core_n == 16
    assert (p.out_subblock_h, p.out_subblock_w) == (1, 1)


# ---- proved --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("arch, shape, memory, extra", [
    ("wormhole_b0", "256 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", ""),
    ("blackhole", "256 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", ""),
    ("wormhole_b0", "192 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", ""),       # a partial last row
    ("blackhole", "256 x 96 x 64", "in0 = l1_height_sharded  in0_shard = 64 x 64 on 2 x 2", ""),   # out in DRAM
    ("wormhole_b0", "256 x 64 x 128", "out = l1_height_sharded  out_shard = 64 x 64 on 2 x 2", ""),  # in0 in DRAM
    # several K-blocks out of the shard (extract_shard_sub_blocks)
    ("wormhole_b0", "256 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", "block { in0_block_w = 1 }"),
    ("blackhole", "256 x 64 x 128", BOTH + "  in0_shard = 64 x 128 on 2 x 2", "block { in0_block_w = 2 }"),
    # a batch padded to whole tiles (49 -> 64 rows) and a partial last shard, the output interleaved
    ("wormhole_b0", "49 x 64 x 64", "in0 = l1_height_sharded  out = l1  in0_shard = 96 x 64 on 2 x 2", "batch = 5"),
    ("blackhole", "49 x 64 x 64", "in0 = l1_height_sharded  in0_shard = 96 x 64 on 2 x 2", "batch = 5"),
])
def test_height_shards_emulate_and_port_check(host_cxx, host_toolchain, tmp_path, arch, shape, memory, extra):
    """kgen's program bit-exact against the golden model; TT's whole 1D program (its in0 reader under
    IN0_SHARDED, its writers under OUT_SHARDED) bit-identical to it."""
    from kgen.gen.build import build

    spec = make(shape, memory, "dataflow = mcast_1d_in1", extra, arch=arch)
    p = plan(spec)
    folder = build(spec, tmp_path / "build").path
    manifest = json.loads((folder / "manifest.json").read_text())
    shards = {t["name"] for t in manifest["io_tensors"] if "shard_spec" in t.get("memory", {})}
    assert shards == {t for t in ("in0", "out") if getattr(p.memory, t) == H}
    assert_proved(folder, p)
