"""TT-Metal's own 2D-multicast readers/writers on kgen's plans (kgen/gen/dataflow/tt_mcast.py), through the
host model of the kernel API and the port check.

The args are checked against TT-Metal's factory rules (docs/reference/matmul.md §2.4-2.5); the real proof
is that TT-Metal's unchanged kernels, compiled against kgen's host model with those args and run
with TT-Metal's compute kernel, produce the golden model's bits and kgen's program's bits.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import example, tt_kernels, words

from kgen import cli
from kgen.gen.build import build
from kgen.gen.plan import plan
from kgen.gen.spec import load_file, resolve
from kgen.gen.dataflow.tt_program import INTERLEAVED_DRAM, DataflowSwapError

# One row or one column of cores: the factory compiles the multicast out (SKIP_MCAST) on the side
# without receivers. And a Blackhole plan, where the senders flush between data and flag multicasts.
SMALL_SPECS = {
    "one_column": """matmul one_column {
        arch = wormhole_b0  shape = 128 x 64 x 256  grid = 1 x 2  dataflow = mcast_2d
        dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16  bias = bfloat16 }
        block { in0_block_w = 2  out_subblock = auto  per_core = auto }
        fuse { bias = true }
    }""",
    "one_row": """matmul one_row {
        arch = wormhole_b0  shape = 64 x 128 x 256  grid = 2 x 1  dataflow = mcast_2d
        dtype { in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }
        block { in0_block_w = 4  out_subblock = auto  per_core = auto }
    }""",
    "blackhole_bias": """matmul blackhole_bias {
        arch = blackhole  shape = 128 x 128 x 256  grid = 2 x 2  dataflow = mcast_2d
        dtype { in0 = bfloat16  in1 = bfloat16  out = float32  bias = bfloat16 }
        block { in0_block_w = 2  out_subblock = auto  per_core = auto }
        fuse { bias = true }
    }""",
    # Mt = 7, Nt = 9 over per_core 4 x 4: 3 x 2 cores, the bottom row holds 3 rows of tiles and the
    # right column 1 column (padded last blocks; TT-Metal's _padding readers/writers' case)
    "padded": """matmul padded {
        arch = wormhole_b0  shape = 224 x 288 x 256  grid = 3 x 2  dataflow = mcast_2d
        dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16  bias = bfloat16 }
        block { in0_block_w = 2  out_subblock = 1 x 2  per_core = 4 x 4  out_block = 2 x 4 }
        fuse { bias = true }
    }""",
    # transpose_mcast with padded last blocks along both M and N: Mt = 7 over per_core_M = 2 gives 4
    # M blocks along x, the last with 1 row of tiles; Nt = 3 over per_core_N = 2 gives 2 N blocks along y
    "transposed": """matmul transposed {
        arch = wormhole_b0  shape = 224 x 96 x 128  grid = 4 x 2  dataflow = mcast_2d  transpose_mcast = true
        dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16  bias = bfloat16 }
        block { in0_block_w = 2  out_subblock = 1 x 2  per_core = 2 x 2  out_block = 2 x 2 }
        fuse { bias = true }
    }""",
    # in0 and the output block-sharded under transpose_mcast (COL_MAJOR shards), with a bias, on Blackhole:
    # 2 M blocks along x, 4 N blocks along y, Kt = 16 over the 4 cores of each in0 column
    "sharded_transposed": """matmul sharded_transposed {
        arch = blackhole  shape = 256 x 512 x 512  grid = 2 x 4  dataflow = mcast_2d  transpose_mcast = true
        dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16  bias = bfloat16 }
        memory { in0 = l1_block_sharded  out = l1_block_sharded  orientation = col_major }
        block { in0_block_w = 2  out_subblock = 1 x 4  per_core = 4 x 4  out_block = 2 x 4 }
        fuse { bias = true }
    }""",
}


def _spec(name: str, tmp_path: Path):
    if name in SMALL_SPECS:
        path = tmp_path / f"{name}.kspec"
        path.write_text(SMALL_SPECS[name] + "\n")
    else:
        path = example(name)
    return resolve(load_file(path), None)


def _manifest(spec, tmp_path: Path) -> tuple[object, Path, dict]:
    folder = build(spec, tmp_path / "build").path
    return plan(spec), folder, json.loads((folder / "manifest.json").read_text())


def test_args_follow_the_factory_rules(tmp_path):
    p, _, manifest = _manifest(_spec("peak_small", tmp_path), tmp_path)   # 2 x 2 grid, 8 x 8 x 32 tiles
    args = tt_kernels(p, manifest)
    cols, rows = p.grid
    sender = args["in0_sender"]
    ct = sender.compile_time_args
    # block geometry, then the multicast destination counts: the row without its sender
    assert ct[4:7] == (p.in0_block_w, p.out_block_h, p.out_block_h * p.in0_block_w)
    assert ct[12] == p.num_blocks and ct[17] == ct[18] == cols - 1
    # TensorAccessorArgs(in0) = {IsDram, aligned page}, then the empty sparsity accessor {0, 0}
    assert ct[28:32] == (INTERLEAVED_DRAM, 2048, 0, 0) and len(ct) == 33
    assert sender.named_compile_time_args["num_active"] == 0 and not sender.defines
    # in0 runs on NOC 1: the rectangle (right .. left+1 of the sender's row) is given end first
    (core, rt), = [c for c in sender.runtime_args if c[0] == (0, 1)]
    assert rt[1] == p.per_core_m * p.kt * 1
    assert rt[2:6] == ({"noc_x": cols - 1}, {"noc_y": 1}, {"noc_x": 1}, {"noc_y": 1})
    # in1 runs on NOC 0: the column below the sender, top first; the writer's output start tile
    in1 = args["in1_sender_writer"]
    (core, rt), = [c for c in in1.runtime_args if c[0] == (1, 0)]
    assert rt[2:6] == ({"noc_x": 1}, {"noc_y": 1}, {"noc_x": 1}, {"noc_y": rows - 1})
    assert rt[8] == p.per_core_n and len(rt) == 21
    assert in1.compile_time_args[12] == in1.compile_time_args[13] == rows - 1
    assert len(in1.compile_time_args) == 39                        # no bias accessor
    receiver = args["in1_receiver_writer"]
    (core, rt), = [c for c in receiver.runtime_args if c[0] == (1, 1)]
    assert rt[:2] == ({"noc_x": 1}, {"noc_y": 0})                  # the column's sender
    assert rt[3] == p.per_core_n + p.per_core_m * p.nt             # output start tile of core (1, 1)


def test_padding_args_follow_the_factory_rules(tmp_path):
    """The factory's "Parameters for last row, col, or block", computed here from its formulas for
    Mt = 7, Nt = 9, per_core 4 x 4, out_block 2 x 4, out_subblock 1 x 2, bf16 out (2048-byte tiles)."""
    p, _, manifest = _manifest(_spec("padded", tmp_path), tmp_path)
    assert p.grid == (3, 2)                                # ceil(9 / 4) x ceil(7 / 4)
    args = tt_kernels(p, manifest)
    out_block_h, out_block_w, sbh, sbw, tile = 2, 4, 1, 2, 2048
    last_per_core_m, last_per_core_n = 7 % 4, 9 % 4                        # 3, 1
    last_out_block_h = last_per_core_m % out_block_h or out_block_h         # 1
    last_out_block_w = last_per_core_n % out_block_w or out_block_w         # 1
    last_out_num_blocks_h = (last_per_core_m - 1) // out_block_h + 1        # 2
    last_out_num_blocks_w = (last_per_core_n - 1) // out_block_w + 1        # 1
    nonzero_sb_h = (last_out_block_h - 1) // sbh + 1                         # 1
    nonzero_sb_w = (last_out_block_w - 1) // sbw + 1                         # 1
    last_sb_h = last_out_block_h % sbh or sbh                                # 1
    last_sb_w = last_out_block_w % sbw or sbw                                # 1
    addr_skip = tile * (sbw - last_sb_w)                                     # 2048
    w_skip = (sbw * sbh) * (out_block_w // sbw - nonzero_sb_w)               # 2
    h_skip = (out_block_h // sbh - nonzero_sb_h) * (out_block_w * sbh)       # 4
    rt = {k: dict(a.runtime_args) for k, a in args.items()}
    # in0 sender: last_out_block_h on the last row, out_block_h elsewhere (after the rectangle)
    assert rt["in0_sender"][(0, 1)][6] == last_out_block_h and rt["in0_sender"][(0, 0)][6] == out_block_h
    # in1 sender/writer of the right column: last_out_block_w, the writer's padding args, bias, blocks in w
    right = rt["in1_sender_writer"][(2, 0)]
    assert right[9] == last_out_block_w
    assert right[10:18] == (out_block_h // sbh, sbh, 0, out_block_w // sbw, nonzero_sb_w, last_sb_w, addr_skip, w_skip)
    assert right[20] == last_out_num_blocks_w
    inner = rt["in1_sender_writer"][(1, 0)]
    assert inner[9] == out_block_w and inner[14:18] == (out_block_w // sbw, sbw, 0, 0) and inner[20] == 1
    # in1 receiver/writer of the bottom-right core: both edges
    corner = rt["in1_receiver_writer"][(2, 1)]
    assert corner[4:8] == (out_block_h // sbh, nonzero_sb_h, last_sb_h, h_skip)
    assert corner[8:13] == (out_block_w // sbw, nonzero_sb_w, last_sb_w, addr_skip, w_skip)
    assert corner[13:15] == (last_out_num_blocks_h, last_out_num_blocks_w)
    bottom = rt["in1_receiver_writer"][(0, 1)]
    assert bottom[4:8] == (2, 1, 1, 4) and bottom[8:13] == (2, 2, 2, 0, 0) and bottom[13:15] == (2, 1)


def test_transpose_mcast_args_follow_the_factory(tmp_path):
    """transpose_mcast, as matmul_multicore_reuse_mcast_2d_program_factory.cpp (tt-metal @0000d49e) does
    it: the cores with work are num_blocks_y x num_blocks_x (M blocks along x), in0_idx = core.x and
    in1_idx = core.y, the in0 sender is the top row and multicasts down its column, the in1
    sender/writer is the left column and multicasts along its row; the CT dest counts keep their
    meaning (in0: num_blocks_x - 1, in1: num_blocks_y - 1). in0 is on NOC 1, in1 on NOC 0."""
    p, _, manifest = _manifest(_spec("transposed", tmp_path), tmp_path)
    num_blocks_y, num_blocks_x = -(-7 // 2), -(-3 // 2)                     # 4 M blocks, 2 N blocks
    assert p.grid == (num_blocks_y, num_blocks_x)
    kernels = {k["name"]: k for k in manifest["kernels"]}
    assert kernels["in0_sender"]["core_ranges"] == [{"start": [0, 0], "end": [3, 0]}]       # top row
    assert kernels["in1_sender_writer"]["core_ranges"] == [{"start": [0, 0], "end": [0, 1]}]  # left column
    args = tt_kernels(p, manifest)
    ct0, ct1 = args["in0_sender"].compile_time_args, args["in1_sender_writer"].compile_time_args
    assert ct0[17] == ct0[18] == num_blocks_x - 1 and ct1[12] == ct1[13] == num_blocks_y - 1
    rt = {k: dict(a.runtime_args) for k, a in args.items()}
    # in0 sender of M block 2 (core (2, 0)): start tile per_core_M * Kt * 2; its column below it, given
    # on NOC 1 end first: in1's rectangle (bottom .. top+1) of the untransposed factory
    kt, nt, pcm, pcn = 4, 3, 2, 2
    assert rt["in0_sender"][(2, 0)][1] == pcm * kt * 2
    assert rt["in0_sender"][(2, 0)][2:6] == ({"noc_x": 2}, {"noc_y": 1}, {"noc_x": 2}, {"noc_y": 1})
    # the last M block (x = 3) reads last_out_block_h = 7 % 2 = 1 rows
    assert rt["in0_sender"][(3, 0)][6] == 1 and rt["in0_sender"][(2, 0)][6] == 2
    # in0 receivers are sent to by the top of their column
    assert rt["in0_receiver"][(1, 1)] == ({"noc_x": 1}, {"noc_y": 0})
    # in1 sender/writer of N block 1 (core (0, 1)): start tile per_core_N * 1, its row right of it on NOC 0
    # start first; out start tile in1_idx * per_core_N + in0_idx * per_core_M * Nt
    w = rt["in1_sender_writer"][(0, 1)]
    assert w[1] == pcn * 1 and w[2:6] == ({"noc_x": 1}, {"noc_y": 1}, {"noc_x": 3}, {"noc_y": 1})
    assert w[8] == 1 * pcn + 0 * pcm * nt
    # N block 1 is the last (in1_idx == in1_end_idx): last_out_block_w = (3 % 2) % 2 = 1
    assert w[9] == 1 and rt["in1_sender_writer"][(0, 0)][9] == 2
    # in1 receiver/writer (3, 1): sent to by the left end of its row; the last M and N block
    r = rt["in1_receiver_writer"][(3, 1)]
    assert r[:2] == ({"noc_x": 0}, {"noc_y": 1}) and r[3] == 1 * pcn + 3 * pcm * nt
    assert r[13:15] == (1, 1)                            # last_out_num_blocks_h, _w


def test_block_sharded_in0_and_sharded_output_args_follow_the_factory(tmp_path):
    """matmul_multicore_reuse_mcast_2d_program_factory.cpp @0000d49e for in0 BLOCK_SHARDED and a sharded
    output, written out here for sharded_small (Mt = Nt = 8, Kt = 16, 4 x 2 cores, per_core 4 x 2,
    in0_block_w 2, bf16): every core runs reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded
    with CT args {core_has_output_block_work, core_in_in0_receiver_mcast_grid, in0_block_num_tiles,
    in0_block_size_bytes, in0_last_ktile_w, in0_last_ktile_h, num_blocks, out_num_blocks_x,
    out_num_blocks_y, sems, in0_mcast_num_dests = in0_mcast_num_cores = num_blocks_x, num_x, num_y,
    transpose_mcast, shard width, shard height, in0_block_w, in0_block_h, B, fuse_op}, named {cb_in0: c_0,
    cb_in0_sharded: c_2} (the two the kernel reads; @0000d49e's cb_l1_array = c_6 names a CB 0.81.1's 2D
    builder does not allocate, provenance R3); the writers get OUT_SHARDED and no last_num_blocks args."""
    p, _, manifest = _manifest(_spec("sharded_small", tmp_path), tmp_path)
    args = tt_kernels(p, manifest)
    num_blocks_x, in0_block_num_tiles, tile = 4, 4 * 2, 2048
    shard_w, shard_h = 16 // num_blocks_x, 4
    sems = {s["name"]: s["id"] for s in manifest["semaphores"]}
    for i in range(num_blocks_x):
        a = args[f"in0_sharded_{i}"]
        assert a.compile_time_args[:22] == (1, 1, in0_block_num_tiles, in0_block_num_tiles * tile, 0, 0, 16 // 2, 1, 1,
                                            sems["in0_sender"], sems["in0_receiver"], num_blocks_x, num_blocks_x,
                                            num_blocks_x, 1, 0, shard_w, shard_h, 2, 4, 1, 0)
        assert a.named_compile_time_args == {"cb_in0": 0, "cb_in0_sharded": 2} and not a.defines
        # runtime: sender_id = core.x; the row's rectangle, given end first on NOC 1; the row's NoC x list;
        # the row's NoC y
        for (x, y), rt in a.runtime_args:
            assert x == i and rt[0] == x
            assert rt[1:5] == ({"noc_x": num_blocks_x - 1}, {"noc_y": y}, {"noc_x": 0}, {"noc_y": y})
            assert rt[5:] == (*({"noc_x": j} for j in range(num_blocks_x)), {"noc_y": y})
    sender, receiver = args["in1_sender_writer"], args["in1_receiver_writer"]
    assert sender.defines["OUT_SHARDED"] == "1" and receiver.defines["OUT_SHARDED"] == "1"
    assert len(dict(sender.runtime_args)[(0, 0)]) == 20 and len(dict(receiver.runtime_args)[(0, 1)]) == 13
    # the manifest describes the shards for ttnn, and c_2 / c_4 as globally allocated on them
    tensors = {t["name"]: t for t in manifest["io_tensors"]}
    assert tensors["in0"]["memory"] == {"buffer_type": "L1", "memory_layout": "BLOCK_SHARDED",
                                        "shard_spec": {"grid": [0, 0, 3, 1], "shape": [128, 128],
                                                       "orientation": "ROW_MAJOR"}}
    assert tensors["out"]["memory"]["shard_spec"]["shape"] == [128, 64] and "memory" not in tensors["in1"]
    assert {c.get("globally_allocated") for c in manifest["cbs"]} == {None, "in0", "out"}


def test_height_sharded_in0_args_follow_the_factory(tmp_path):
    """in0 HEIGHT_SHARDED: the interleaved in0 sender kernel with IN0_SHARDED, its CT args 10 and 11 the
    shard's width and height in tiles (in0_shard_width_in_tiles = K, in0_shard_height_in_tiles =
    per_core_M), extract_shard_sub_blocks (CT arg 9) false."""
    text = """matmul h {
        arch = wormhole_b0  shape = 256 x 256 x 256  grid = 4 x 2  dataflow = mcast_2d
        dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
        memory { in0 = l1_height_sharded }
        block { per_core = 4 x 2 }
    }"""
    path = tmp_path / "h.kspec"
    path.write_text(text + "\n")
    p, _, manifest = _manifest(resolve(load_file(path), None), tmp_path)
    sender = tt_kernels(p, manifest)["in0_sender"]
    assert sender.defines == {"IN0_SHARDED": "1"}
    assert sender.compile_time_args[9:12] == (0, 8, 4)
    assert {c.get("globally_allocated") for c in manifest["cbs"]} == {None, "in0"}


def test_in1_in_l1_is_an_l1_tensor_accessor(tmp_path):
    """in1 interleaved in L1: kgen's in1 sender and TT-Metal's read it through a TensorAccessor whose
    ArgConfig has no IsDram bit (tensor_accessor::ArgConfig, IsDram = 1 << 1); the manifest says where it
    lives."""
    p, folder, manifest = _manifest(resolve(load_file(example("sharded_small")), "in1_l1"), tmp_path)
    tensors = {t["name"]: t for t in manifest["io_tensors"]}
    assert tensors["in1"]["memory"] == {"buffer_type": "L1", "memory_layout": "INTERLEAVED"}
    kgen_sender = next(k for k in manifest["kernels"] if k["name"] == "in1_sender_writer")
    ct = dict(zip(kgen_sender["compile_time_arg_names"], kgen_sender["compile_time_args"]))
    assert ct["in1_accessor_config"] == 0
    tt = tt_kernels(p, manifest)["in1_sender_writer"].compile_time_args
    # TensorAccessorArgs(in1) after 19 reader, 10 writer args, the bias stride, the all-gather, reduce-scatter
    # and compact_output flags (0.81.1's kernel), for bfloat16 in1 tiles of 2048 bytes
    assert tt[33] == 0 and tt[34] == 2048


def test_in0_last_ktile_w_is_the_logical_k_modulo_the_tile(tmp_path):
    """The factory: in0_last_ktile_w = logical K % tile width (its reader zeroes the rest of the last K
    tile), in0_last_ktile_h = 0 without transpose_a: in0 sender CT args 7 and 8."""
    p, _, manifest = _manifest(_spec("padded_small", tmp_path), tmp_path)       # K = 250
    ct = tt_kernels(p, manifest)["in0_sender"].compile_time_args
    assert (ct[7], ct[8]) == (250 % 32, 0)
    # the tensors the factory sees are ttnn's padded ones: 7 x 8 tiles of in0, 8 x 9 of in1
    tensors = {t["name"]: t for t in manifest["io_tensors"]}
    assert tensors["in0"]["shape"] == [1, 200, 250] and tensors["in0"]["padded_shape"] == [1, 224, 256]
    assert tensors["in1"]["padded_shape"] == [256, 288] and tensors["out"]["padded_shape"] == [1, 224, 288]
    p2, _, manifest2 = _manifest(_spec("peak_small", tmp_path), tmp_path)
    assert tt_kernels(p2, manifest2)["in0_sender"].compile_time_args[7] == 0
    assert all("padded_shape" not in t for t in manifest2["io_tensors"])


def test_skip_mcast_where_there_are_no_receivers(tmp_path):
    p, _, manifest = _manifest(_spec("one_column", tmp_path), tmp_path)
    args = tt_kernels(p, manifest)
    assert args["in0_sender"].defines == {"SKIP_MCAST": "1"} and "in0_receiver" not in args
    assert args["in1_sender_writer"].defines == {"FUSE_BIAS": "1"}
    assert len(args["in1_sender_writer"].compile_time_args) == 41      # + TensorAccessorArgs(bias)


def test_a_row_major_reuse_output_is_not_swapped(tmp_path):
    # the reuse factory's writer (writer_bmm_tile_layout.cpp) writes tiles; its reader and writer on
    # whole-tile reuse plans: tests/proof/test_ttreuse.py
    p, _, manifest = _manifest(_spec("untilize_relu_reuse", tmp_path), tmp_path)
    assert "ROW_MAJOR" in p.dataflow.tt_unsupported(p, manifest)
    with pytest.raises(DataflowSwapError):
        tt_kernels(p, manifest)


@pytest.mark.parametrize("name", ["peak_small", "l1acc_two_blocks_bias", "one_column", "one_row", "blackhole_bias",
                                  "padded", "padded_small", "transposed", "transpose_mcast_small",
                                  "sharded_small", "sharded_transposed"])
@pytest.mark.slow
def test_tt_metal_program_is_bit_identical(host_cxx, host_toolchain, tmp_path, name):
    """TT-Metal's compute kernel and its four readers/writers, unchanged, on kgen's plan."""
    from kgen.proof.portcheck import port_check

    spec = _spec(name, tmp_path)
    p, folder, _ = _manifest(spec, tmp_path)
    pc = port_check(folder, p, seed=11)
    assert pc.program is not None, pc.program_note
    assert pc.program.status == "ok", pc.program.deadlock
    assert not pc.program.hazards, pc.program.hazards
    assert pc.program.exact_match and pc.program_bit_identical and pc.passed
    # every TT-Metal data-movement kernel ran to its end on every core
    assert all(proc["finished"] for proc in pc.program.processors)
    ops = pc.dataflow_op_counts(pc.program)
    assert ops["noc_async_read"] == pc.dataflow_op_counts(pc.ours)["noc_async_read"]   # same tiles from DRAM
    assert ops.get("noc_async_write", 0) == pc.dataflow_op_counts(pc.ours).get("noc_async_write", 0)
    if p.memory.out != "dram":          # a sharded output is never written: it is the shards
        assert not ops.get("noc_async_write")


@pytest.mark.slow
def test_port_check_reports_the_program(host_cxx, host_toolchain, capsys):
    code = cli.main(["port-check", str(example("peak_small"))])
    text = capsys.readouterr().out
    assert code == 0
    assert "program    bit-identical" in text and "reader_bmm" not in text.split("program")[0]
    assert "noc_async_write_multicast" in text


def test_failed_assert_stops_the_run_at_its_line(host_cxx, tmp_path):
    """ASSERT is always checked in the emulator, as under TT-Metal's watcher."""
    from kgen.proof.emulate import emulate_folder

    p, folder, _ = _manifest(_spec("peak_small", tmp_path), tmp_path)
    bad = tmp_path / "bad" / folder.name
    shutil.copytree(folder, bad)
    src = bad / "kernels" / "in0_receiver.cpp"
    text = src.read_text()
    anchor = "void kernel_main() {\n"
    line = text[:text.index(anchor)].count("\n") + 2
    src.write_text(text.replace(anchor, anchor + "    ASSERT(get_arg_val<uint32_t>(0) == 12345);\n", 1))
    e = emulate_folder(bad, p)
    assert e.status != "ok" and not e.ok
    h = next(h for h in e.hazards if h["kind"] == "assertion")
    assert h["file"].endswith("kernels/in0_receiver.cpp") and h["line"] == line
    assert "get_arg_val<uint32_t>(0) == 12345" in h["message"]


@pytest.mark.slow
def test_fuzz_with_port_check(host_cxx, host_toolchain, tmp_path, capsys):
    """Random valid plans: TT-Metal's compute kernel, and for mcast_2d its whole program with the
    factory's args, give kgen's bits on every one."""
    code = cli.main(["fuzz", "--count", "40", "--seed", "2", "--port-check", "--no-typecheck", "--keep", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "40 case(s) of seed 2 passed" in out
    ported = int(words(out).split("its whole program on the ")[1].split()[0])
    assert ported >= 10                                  # the seed draws mcast_2d plans often enough


# TT-Metal 0.81.1's legacy-API matmul data-movement kernels, all of which the host model compiles
# unchanged but one: the in1 ring all-gather programs NoC command-buffer registers directly. The
# Metal 2.0 kernels (the *_metal2.cpp forks and the DRAM-sharded readers: experimental/kernel_args.h,
# whose arguments the JIT generates from a host ProgramSpec) are another API, which kgen does not emit.
TT_LEGACY_DATAFLOW = [
    "reader_bmm_tile_layout_in0_sender_padding", "reader_bmm_tile_layout_in0_receiver",
    "reader_bmm_tile_layout_in1_sender_writer_padding", "reader_bmm_tile_layout_in1_receiver_writer_padding",
    "reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded", "reader_bmm_tile_layout_in0_ring_all_gather",
    "reader_bmm_tile_layout", "writer_bmm_tile_layout", "reader_bmm_8bank_output_tiles_partitioned",
]
NAMED_CBS = {"cb_in0": 0, "cb_in1": 1, "cb_in0_sharded": 2, "cb_in2": 2, "cb_bias": 3, "cb_out": 4, "cb_intermed0": 5,
             "cb_sparsity": 6, "cb_in0_intermediate": 8, "cb_in1_intermediate": 9, "cb_in0_transposed": 10,
             "num_active": 0}


@pytest.mark.parametrize("defines", [(), (("FUSE_BIAS", "1"), ("SKIP_MCAST", "1"))], ids=["plain", "bias_skip_mcast"])
@pytest.mark.parametrize("arch_spec", ["peak_small", "blackhole_bias"])
@pytest.mark.parametrize("kernel", TT_LEGACY_DATAFLOW)
@pytest.mark.slow
def test_tt_dataflow_kernels_compile_against_host_model(host_cxx, host_toolchain, tmp_path, kernel, arch_spec,
                                                        defines):
    import subprocess

    from kgen.toolchain.compile import KernelInfo
    from kgen.proof.emulate import find_host_compiler, kernel_argv
    from kgen.proof.ttdataflow import tt_dataflow_dir, ttnn_include_dir

    tree = host_toolchain.headers
    source = tt_dataflow_dir(tree) / f"{kernel}.cpp"
    spec = _spec(arch_spec, tmp_path)
    folder = build(spec, tmp_path / "build").path
    gen = tmp_path / "jit" / kernel
    gen.mkdir(parents=True)
    shutil.copy(folder / "jit" / "in0_sender" / "chlkc_descriptors.h", gen)   # the CB formats of a real plan
    (gen / "kernel_includes.hpp").write_text(f'#include "{source}"\n')
    pairs = ",".join(f'{{"{n}",{v}}}' for n, v in NAMED_CBS.items())
    (gen / "named_ct_arg_map_generated.h").write_text(f"#define KERNEL_COMPILE_TIME_ARG_MAP {pairs}\n")
    # every compile-time arg 2: interleaved DRAM accessors (ArgConfig IsDram) and nonzero sizes
    k = KernelInfo(kernel, "RISCV_0", 0, (2,) * 80, defines, source, gen, (ttnn_include_dir(tree),))
    argv = kernel_argv(find_host_compiler(), plan(spec).arch, k, "brisc", tmp_path) + ["-fsyntax-only"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
