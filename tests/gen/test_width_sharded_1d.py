"""A width-sharded in0 (and output) on TT-Metal 0.81.1's 1D in0-multicast factory (issue #39 item 2), as
process_mcast_in0_program_and_create_override_variables builds it with in0_is_sharded
(matmul_multicore_reuse_mcast_1d_program_factory.cpp) and matmul_device_operation.cpp validates it:

- shard i (all Mt rows, K tiles i * w .. (i + 1) * w - 1) on core i of the compute grid, row-major; every core of
  the grid runs reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp (num_cores = max(cores with
  work, in0_sender_num_cores)), its CT args 0 and 1 telling the cores with work, the rest of their bounding box
  (the multicast rectangle: they receive and free c_0) and the cores past it (they only multicast their shard);
- c_2 globally allocated on the shard (per_core_M x w tiles), c_0 double-buffered in0 blocks; K-block j from core
  j / (w / in0_block_w); in0_mcast_num_dests = in0_mcast_num_cores = the rectangle's cores;
- "M must be equal to per_core_M", "shard_shape[1] / in0_tile.get_width() must be divisible by in0_block_w";
  a width-sharded output under OUT_SHARDED (c_4 on the shard, last_out_num_blocks_w left out);
- dataflow = auto: get_matmul_program_config's 1D in0 config from the shard (per_core_M = M, per_core_N =
  div_up(Nt, its cores), in0_block_w = gcd(w, Kt)), create_matmul_1d_systolic_array_program_config's wide
  config with a core grid (WIDTH_SHARDED forces !is_tall).
Expected values are those formulas worked by hand."""

from __future__ import annotations

import json

import pytest

from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.plan import PlanError, plan
from kgen.gen.shards import WIDTH_M_RULE
from kgen.gen.spec import parse_text, resolve

BF16 = "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }"
W = "in0 = l1_width_sharded"


def make(shape: str, memory: str, *lines: str, arch: str = "wormhole_b0"):
    body = "\n    ".join((f"arch = {arch}", f"shape = {shape}", BF16, f"memory {{ {memory} }}") + lines)
    return resolve(parse_text(f"matmul w {{\n    {body}\n}}\n", "w.kspec"))


# M 64 (2 tiles), K 256 (8) in shards 2 tiles wide on 2 x 2 cores, N 128 (4): one N tile per core
SMALL = ("64 x 128 x 256", f"{W}  in0_shard = 64 x 64 on 2 x 2", "dataflow = mcast_1d_in0")


# ---- the plan -----------------------------------------------------------------------------------

def test_the_shards_and_cbs_are_the_factorys():
    p = plan(make(*SMALL))
    assert (p.grid, p.per_core_m, p.per_core_n, p.in0_shards, p.in0_shard_w, p.num_cores) == ((2, 2), 2, 1, 4, 2, 4)
    assert p.shard_specs["in0"] == {"memory_layout": "WIDTH_SHARDED", "grid": (0, 0, 1, 1),
                                    "orientation": "ROW_MAJOR", "shape": (64, 64)}
    # c_2: the whole shard (per_core_M x w) on the in0 buffer; c_0 two in0 blocks, a CB of its own
    assert (p.cb(2).pages, p.cb(2).buffer) == (2 * 2, "in0")
    assert (p.cb(0).pages, p.cb(0).buffer) == (2 * p.in0_block_w * 2, None)


def test_every_core_of_the_grid_runs_the_sharded_reader():
    # N 96 (3 tiles) on a 4 x 2 grid of shards 1 tile wide: 3 cores with work, their rectangle 3 x 1; cores 3..7
    # hold K slices and multicast them into it
    v = run(make("64 x 96 x 256", f"{W}  in0_shard = 64 x 32 on 4 x 2", "dataflow = mcast_1d_in0"), "verified").verified
    names = sorted(k.name for k in v.kernels if k.name.startswith("in0_sharded_"))
    assert names == [f"in0_sharded_{i}" for i in range(8)]
    assert "in0_sender" not in {k.name for k in v.kernels}
    assert v.kernel("compute").cores.size == 3
    # a core past the rectangle: one data multicast (no loopback) per K-block of its own, to its 3 cores
    sends = [n for n, _ in walk(v.kernel("in0_sharded_5").body) if n.kind == "mcast_cb"]
    assert [n["num_dests"] for n in sends] == [3]
    # a core in it: one multicast from its shard to all 3, itself included
    own = [n for n, _ in walk(v.kernel("in0_sharded_1").body) if n.kind == "mcast_shard"]
    assert [n["num_dests"] for n in own] == [3]
    manifest = run(make("64 x 96 x 256", f"{W}  in0_shard = 64 x 32 on 4 x 2", "dataflow = mcast_1d_in0"),
                   "rendered").rendered.manifest
    cores = {tuple(r["start"]) for cb in manifest["cbs"] for r in cb["core_ranges"]}
    assert (3, 1) in cores                          # the CBs are on every core of the grid


def test_tts_program_args():
    spec = make("64 x 160 x 192", f"{W}  out = l1_width_sharded  in0_shard = 64 x 32 on 3 x 2",
                "dataflow = mcast_1d_in0")
    artifacts = run(spec, "rendered")
    p = artifacts.plan
    assert (p.num_cores, p.grid) == (5, (3, 2))      # Nt 5 over 6 shard cores: core 5 has no work
    ks = p.dataflow.tt_program(p, artifacts.rendered.manifest, {}).kernels
    reader = ks["in0_sharded_5"]
    assert reader.source.endswith("reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp")
    # no output work, in the receiver grid; num_dests = num_cores = 6 (the rectangle), num_x 3, num_y 2,
    # shard width 1 and height 2 tiles, in0_block_w 1, in0_block_h 2, B 1
    ct = reader.compile_time_args
    assert ct[:2] == (0, 1) and ct[11:21] == (6, 6, 3, 2, 0, 1, 2, 1, 2, 1)
    assert ks["in0_sharded_0"].compile_time_args[:2] == (1, 1)
    (core, args), = reader.runtime_args
    assert core == (2, 1) and args[0] == 5 and len(args) == 5 + 3 + 2
    writer = ks["in1_sender_writer"]
    assert writer.defines.get("OUT_SHARDED") == "1"
    # 7 in1 args, 2 out, 9 padding, 2 bias: last_out_num_blocks_w left out
    assert {len(a) for _, a in writer.runtime_args} == {20}


@pytest.mark.parametrize("memory, dataflow", [
    (W, "mcast_1d_in1"), (W, "mcast_2d"), ("out = l1_width_sharded", "mcast_2d"),
])
def test_placements_the_factory_does_not_take(memory, dataflow):
    with pytest.raises(PlanError):
        plan(make("64 x 128 x 256", memory, f"dataflow = {dataflow}"))


def test_m_is_one_per_core_block():
    with pytest.raises(PlanError) as info:
        plan(make(*SMALL, "block { per_core = 4 x 1 }"))
    assert info.value.rule == WIDTH_M_RULE


def test_in0_block_w_divides_the_shard_width():
    with pytest.raises(PlanError):
        plan(make("64 x 128 x 512", f"{W}  in0_shard = 64 x 128 on 2 x 2", "dataflow = mcast_1d_in0",
                  "block { in0_block_w = 8 }"))


def test_auto_takes_get_matmul_program_configs_1d_config_from_the_shard():
    # t_s_linear_3c13625fe2's form: K 3072 in 4-tile shards on 8 x 3, N 768 (24 tiles): per_core_N = 1,
    # in0_block_w = gcd(4, 96) = 4; a width-sharded output: out_subblock_w == per_core_N
    p = plan(make("24 x 768 x 3072", f"{W}  out = l1_width_sharded  in0_shard = 32 x 128 on 8 x 3", "dataflow = auto"))
    assert (p.spec.dataflow, p.grid_requested, p.per_core_m, p.per_core_n, p.in0_block_w) == \
        ("mcast_1d_in0", (8, 3), 1, 1, 4)
    assert (p.out_subblock_h, p.out_subblock_w) == (1, 1)


def test_auto_lays_a_shard_out_when_the_spec_gives_none():
    # s_w_32x4096x4096: K 128 tiles over the 64 cores of an n150, 2 tiles each; per_core_N = div_up(128, 64)
    p = plan(make("32 x 4096 x 4096", W, "dataflow = auto"))
    assert (p.spec.dataflow, p.grid_requested, p.in0_shard_w, p.per_core_n, p.in0_block_w) == \
        ("mcast_1d_in0", (8, 8), 2, 2, 2)
    # blackhole's 13 x 10: 1 tile each on 128 of the 130 cores (the last two hold padding only)
    p = plan(make("32 x 4096 x 4096", W, "dataflow = auto", arch="blackhole"))
    assert (p.grid_requested, p.in0_shards, p.in0_shard_w, p.num_cores) == ((13, 10), 128, 1, 128)


def test_auto_with_a_core_grid_takes_the_systolic_wide_config():
    # t_s_linear_27fd555784's form: a core grid 8 x 3 with shards on it: per_core_N = ceil(72 / 24) = 3,
    # in0_block_w = ceil(24 / 24) = 1
    p = plan(make("24 x 2304 x 768", f"{W}  out = l1  in0_shard = 32 x 32 on 8 x 3", "dataflow = auto", "grid = 8 x 3"))
    assert (p.spec.dataflow, p.per_core_n, p.in0_block_w) == ("mcast_1d_in0", 3, 1)


def test_an_interleaved_in0_with_a_width_sharded_output():
    """s_o_w_32x4096x8192's form: create_simple's 1D in0 config for a width-sharded output."""
    p = plan(make("32 x 8192 x 4096", "out = l1_width_sharded", "dataflow = auto"))
    assert p.spec.dataflow == "mcast_1d_in0" and p.shard_specs["out"]["memory_layout"] == "WIDTH_SHARDED"


# ---- proved --------------------------------------------------------------------------------------

CASES = [
    # every shard core has work
    ("wormhole_b0", "64 x 128 x 256", f"{W}  in0_shard = 64 x 64 on 2 x 2", ""),
    ("blackhole", "64 x 128 x 256", f"{W}  in0_shard = 64 x 64 on 2 x 2", ""),
    # a core without work inside the rectangle (Nt 5 on 3 x 2), a width-sharded output
    ("wormhole_b0", "64 x 160 x 192", f"{W}  out = l1_width_sharded  in0_shard = 64 x 32 on 3 x 2", ""),
    ("blackhole", "64 x 160 x 192", f"{W}  in0_shard = 64 x 32 on 3 x 2", ""),
    # cores without work past the rectangle (Nt 3 on 4 x 2)
    ("wormhole_b0", "64 x 96 x 256", f"{W}  in0_shard = 64 x 32 on 4 x 2", ""),
    ("blackhole", "64 x 96 x 256", f"{W}  out = l1_width_sharded  in0_shard = 64 x 32 on 4 x 2", ""),
    # several K-blocks per shard, its rows apart (extract_shard_sub_blocks)
    ("wormhole_b0", "64 x 128 x 512", f"{W}  in0_shard = 64 x 128 on 2 x 2", "block { in0_block_w = 2 }"),
    ("blackhole", "64 x 96 x 512", f"{W}  in0_shard = 64 x 128 on 2 x 2", "block { in0_block_w = 2 }"),
    # a rectangle of one core (Nt 1)
    ("wormhole_b0", "64 x 32 x 256", f"{W}  in0_shard = 64 x 64 on 2 x 2", ""),
    # M, N and K short of tiles: a padded last output shard, a shard core past K
    ("wormhole_b0", "50 x 150 x 200", f"{W}  out = l1_width_sharded  in0_shard = 64 x 32 on 4 x 2",
     "block { per_core = 2 x 2 }"),
    # an interleaved in0 with a width-sharded output, a fused bias
    ("blackhole", "64 x 128 x 128", "out = l1_width_sharded", "grid = 2 x 2\n    fuse { bias = true }"),
]


@pytest.mark.slow
@pytest.mark.parametrize("arch, shape, memory, extra", CASES)
def test_width_shards_emulate_and_port_check(host_cxx, host_toolchain, tmp_path, arch, shape, memory, extra):
    """kgen's program bit-exact against the golden model; TT's whole 1D program (the sharded in0 reader on every
    core of the grid, its writers under OUT_SHARDED) bit-identical to it, every op-count difference explained."""
    from kgen.gen.build import build
    from kgen.proof.emulate import emulate_folder
    from kgen.proof.portcheck import port_check

    spec = make(shape, memory, "dataflow = mcast_1d_in0", extra, arch=arch)
    p = plan(spec)
    folder = build(spec, tmp_path / "build").path
    manifest = json.loads((folder / "manifest.json").read_text())
    shards = {t["name"] for t in manifest["io_tensors"] if "shard_spec" in t.get("memory", {})}
    assert shards == {t for t in ("in0", "out") if "sharded" in str(getattr(p.memory, t))}
    e = emulate_folder(folder, p, seed=3)
    assert e.status == "ok" and not e.hazards and e.exact_match, e.deadlock
    pc = port_check(folder, p, seed=5)
    assert pc.passed, pc.failures
    assert pc.program is not None and pc.program_bit_identical and pc.program.exact_match, pc.program_note
    explained = {k: v["explanation"] for k, v in pc.dataflow_differences().items()}
    assert not [k for k, v in explained.items() if v.startswith("unexplained")], explained


# t_s_linear_142c110e2a (every shard core has work) and s_w_32x8192x1280 (24 of its 64 shard cores past the
# rectangle of the 40 with work) as benchmarks/tt_corpus.py writes them: only what the case fixes, dataflow = auto
CORPUS = {
    "t_s_linear_142c110e2a": """matmul t_s_linear_142c110e2a {
    arch = wormhole_b0  shape = 1 x 768 x 768  dataflow = auto  batch = 1 x 1
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16  bias = bfloat16 }
    memory { in0 = l1_width_sharded  out = l1  in0_shard = 32 x 32 on 8 x 3 }
    fuse { bias = true }
    compute { math_fidelity = HiFi4  fp32_dest_acc = true  packer_l1_acc = false  math_approx = false }
}""",
    "s_w_32x8192x1280": """matmul s_w_32x8192x1280 {
    arch = wormhole_b0  shape = 32 x 1280 x 8192  dataflow = auto  batch = 1 x 1
    dtype { in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }
    memory { in0 = l1_width_sharded }
    compute { math_fidelity = HiFi2  fp32_dest_acc = false  packer_l1_acc = true  math_approx = false }
}""",
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_port_check_of_corpus_cases_with_auto(host_cxx, host_toolchain, tmp_path, case):
    from kgen.gen.build import build
    from kgen.proof.portcheck import port_check

    spec = resolve(parse_text(CORPUS[case], "c.kspec"))
    p = plan(spec)
    assert p.spec.dataflow == "mcast_1d_in0"
    pc = port_check(build(spec, tmp_path / "build").path, p, seed=5)
    assert pc.passed, pc.failures
    assert pc.program is not None and pc.program_bit_identical, pc.program_note
