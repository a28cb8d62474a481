"""`dataflow = auto` (issue #39 item 1): the planner resolves the spec to what ttnn.matmul 0.81.1 picks
with no program config (kgen/gen/ttauto.py, re-exported by kgen/perf/ttchoice.py), but for the fields
the spec fixes; `kgen check` names the TT rule behind each field; what kgen does not reconstruct is
refused with a clear error naming TT's rule. It is the default: a spec with no dataflow line gets it."""

from __future__ import annotations

import json

import pytest

from kgen.cli import main
from kgen.gen.plan import PlanError, plan
from kgen.gen.spec import parse_text, resolve
from kgen.perf.ttchoice import tt_auto

BF16 = "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }"


def make(arch: str, shape: str, *lines: str, auto: bool = True):
    body = "\n    ".join((f"arch = {arch}", f"shape = {shape}", BF16) + (("dataflow = auto",) if auto else ())
                          + lines)
    return resolve(parse_text(f"matmul t {{\n    {body}\n}}\n", "<auto>"))


def fields(p) -> dict:
    c = p.compute
    return {"dataflow": p.spec.dataflow, "grid": p.grid, "per_core": (p.per_core_m, p.per_core_n),
            "in0_block_w": p.in0_block_w, "out_block": (p.out_block_h, p.out_block_w),
            "out_subblock": (p.out_subblock_h, p.out_subblock_w),
            "compute": (c.math_fidelity, c.fp32_dest_acc, c.packer_l1_acc, c.math_approx, c.dst_full_sync)}


CASES = [
    # arch, shape, extra lines, the factory TT's rule picks
    ("wormhole_b0", "1024 x 1024 x 1024", (), "mcast_2d"),             # create_simple: 2D over 8 x 8
    ("blackhole", "2048 x 2048 x 2048", (), "mcast_2d"),
    ("wormhole_b0", "8192 x 256 x 1024", (), "mcast_1d_in1"),          # tall: in1 multicast
    ("wormhole_b0", "32 x 4096 x 4096", (), "mcast_1d_in0"),           # decode-like: wide, in0 multicast
    ("wormhole_b0", "512 x 1024 x 1024", (), "mcast_1d_in0"),          # one row of blocks
    ("blackhole", "1000 x 1000 x 1000", (), None),                     # padded tiles and last blocks
    ("blackhole", "1024 x 1024 x 1024", ("grid = 4 x 4",), "mcast_2d"),   # core_grid: create_matmul_program_config
    ("wormhole_b0", "64 x 2048 x 1024", ("batch = 8", "grid = 8 x 8"), None),  # batch fused into M
    ("wormhole_b0", "1024 x 1024 x 1024", ("dtype { in0 = bfloat8_b  in1 = bfloat8_b  out = bfloat8_b }",), None),
]


@pytest.mark.parametrize("arch,shape,extra,factory", CASES, ids=[f"{c[0]}-{c[1]}-{len(c[2])}" for c in CASES])
def test_auto_plans_to_ttchoices_choice(arch, shape, extra, factory):
    if extra and extra[0].startswith("dtype"):
        spec = resolve(parse_text(f"matmul t {{\n arch = {arch}\n shape = {shape}\n dataflow = auto\n {extra[0]}\n}}\n"))
        reference = resolve(parse_text(f"matmul t {{\n arch = {arch}\n shape = {shape}\n {extra[0]}\n}}\n"))
    else:
        spec, reference = make(arch, shape, *extra), make(arch, shape, *extra, auto=False)
    choice = tt_auto(reference)
    assert choice.config is not None, choice.note
    got, want = fields(plan(spec)), fields(plan(choice.spec))
    assert got == want
    assert got["dataflow"] == choice.config.dataflow
    assert got["per_core"] == choice.config.per_core and got["in0_block_w"] == choice.config.in0_block_w
    assert got["out_block"] == choice.config.out_block and got["out_subblock"] == choice.config.out_subblock
    c = choice.compute
    assert got["compute"] == (c.math_fidelity, c.fp32_dest_acc, c.packer_l1_acc, c.math_approx, c.dst_full_sync)
    if factory:
        assert got["dataflow"] == factory


def test_auto_1024_cubed_on_wormhole_by_hand():
    """create_simple_matmul_program_config on the 8 x 8 grid: 32 x 32 tiles over 8 x 8 cores ->
    per_core 4 x 4, in0_block_w = Kt / cols = 4, subblock 4 x 2 (first of SUBBLOCK_HW_CHOICES
    dividing 4 x 4 within 8 tiles); ttnn.matmul's compute with no program config: HiFi2, L1 acc."""
    p = plan(make("wormhole_b0", "1024 x 1024 x 1024"))
    assert fields(p) == {"dataflow": "mcast_2d", "grid": (8, 8), "per_core": (4, 4), "in0_block_w": 4,
                         "out_block": (4, 4), "out_subblock": (4, 2),
                         "compute": ("HiFi2", False, True, False, False)}
    assert any("create_simple_matmul_program_config" in line for line in p.tt_choice)


def test_no_dataflow_line_is_tts_choice_and_mcast_2d_stays_a_value():
    # 8192 x 256 x 1024: Mt / Nt = 32 > 8, a tall shape, so create_simple takes the 1D in1 config
    spec = make("wormhole_b0", "8192 x 256 x 1024", auto=False)
    assert spec.dataflow == "auto"
    p = plan(spec)
    assert p.spec.dataflow == "mcast_1d_in1" and p.tt_choice
    assert fields(p) == fields(plan(make("wormhole_b0", "8192 x 256 x 1024")))
    assert spec.compute.math_fidelity == "HiFi2"      # ttnn's default: no program config
    written = plan(make("wormhole_b0", "8192 x 256 x 1024", "dataflow = mcast_2d", auto=False))
    assert written.spec.dataflow == "mcast_2d" and written.tt_choice == ()


def test_a_fixed_field_wins():
    base = fields(plan(make("wormhole_b0", "1024 x 1024 x 1024")))
    w = fields(plan(make("wormhole_b0", "1024 x 1024 x 1024", "block { in0_block_w = 8 }")))
    assert w["in0_block_w"] == 8 and {k: v for k, v in w.items() if k != "in0_block_w"} == \
        {k: v for k, v in base.items() if k != "in0_block_w"}
    # a fixed per_core: the 2D factory's grid is its blocks', the out block and subblock the planner's
    p = plan(make("wormhole_b0", "1024 x 1024 x 1024", "block { per_core = 8 x 8 }"))
    assert (p.per_core_m, p.per_core_n) == (8, 8) and p.grid == (4, 4) and p.spec.dataflow == "mcast_2d"
    assert any("per_core = 8 x 8: fixed by the spec (TT's rule chose 4 x 4" in line for line in p.tt_choice)
    # a fixed compute config is the one passed to ttnn.matmul: the spec's
    p = plan(make("wormhole_b0", "1024 x 1024 x 1024", "compute { math_fidelity = HiFi4  fp32_dest_acc = true }"))
    assert p.compute.math_fidelity == "HiFi4" and p.compute.fp32_dest_acc
    assert p.out_subblock_h * p.out_subblock_w <= 4          # TT's subblock rule under fp32 dest
    # a 1D choice keeps a fixed in0_block_w too
    p = plan(make("wormhole_b0", "8192 x 256 x 1024", "block { in0_block_w = 4 }"))
    assert p.spec.dataflow == "mcast_1d_in1" and p.in0_block_w == 4


def _refused(spec, *words):
    with pytest.raises(PlanError) as info:
        plan(spec)
    text = str(info.value) + " " + (info.value.hint or "")
    for w in words:
        assert w in text, text
    return info.value


def test_bad_combinations_are_clear_errors():
    # TT's 1D choice has no transpose_mcast
    _refused(make("wormhole_b0", "8192 x 256 x 1024", "transpose_mcast = true"),
             "TT's rule chose mcast_1d_in1", "transpose_mcast = false")
    # a fixed per_core that does not fit the device grid: the planner's rule, with legal values
    _refused(make("wormhole_b0", "1024 x 1024 x 1024", "block { per_core = 2 x 8 }"), "per_core_M = 2")
    # a width-sharded in0 (TT's 1D in0 config, tests/gen/test_width_sharded_1d.py) with a height-sharded output:
    # get_matmul_program_config's own TT_FATAL
    _refused(make("wormhole_b0", "1024 x 1024 x 1024", "memory { in0 = l1_width_sharded  out = l1_height_sharded }"),
             "Input A and output memory layouts must match")
    # in0 width-sharded with a DRAM-width-sharded in1: get_matmul_program_config's own TT_FATAL
    e = _refused(make("wormhole_b0", "32 x 4096 x 4096", "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  "
                                                           "out = l1_width_sharded }"),
                 "Input tensor B must have INTERLEAVED memory layout")
    assert not e.rule.endswith("(kgen)")
    # batch > 1 without a core grid: create_simple's configs take fuse_batch = false (every core loops
    # over the batch); a spec fixing the fused form is refused (tests/gen/test_unfused_batch.py plans them)
    _refused(make("wormhole_b0", "64 x 1024 x 1024", "batch = 4", "fuse_batch = true"), "fuse_batch = true",
             "not fused")


# ----------------------------------------------------------------------------------------------
# TT's choice for L1 and sharded tensors and a batched in1, each read from
# tenstorrent/tt-metal@001cea9a ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp
# ----------------------------------------------------------------------------------------------

def test_l1_interleaved_takes_create_simples_placed_2d_config():
    """create_simple_matmul_program_config with in0 and the output in L1: all_dram false, so the 2D
    config is the one `if ((core_range.y > 0 and num_blocks_x <= num_cores_x and ...) or use_mcast_2d)`
    builds without its `if (all_dram_interleaved)` block: per_core_M = per_core_N = get_per_core_factor
    (16: its CB estimate, 1,310,720 B, is below WH's 1,393,312 less in0's 32 KiB share of each L1 bank),
    blocks ceil(32 / 16) = 2 x 2 cores, out_block = per_core, in0_block_w 2, and `out_subblock_h = 4;
    out_subblock_w = 2; if (out_subblock_w != per_core_N) out_subblock_h = 1;` -> 1 x 2."""
    p = plan(make("wormhole_b0", "1024 x 1024 x 1024", "memory { in0 = l1  out = l1 }"))
    f = fields(p)
    assert (f["dataflow"], f["grid"], f["per_core"], f["out_block"], f["in0_block_w"], f["out_subblock"]) == \
        ("mcast_2d", (2, 2), (16, 16), (16, 16), 2, (1, 2))
    assert any("tensors not all DRAM-interleaved" in line for line in p.tt_choice)
    # the same with only the output block-sharded (use_mcast_2d's BLOCK_SHARDED output branch)
    f = fields(plan(make("wormhole_b0", "1024 x 1024 x 1024", "memory { out = l1_block_sharded }")))
    assert (f["dataflow"], f["per_core"], f["out_subblock"]) == ("mcast_2d", (16, 16), (1, 2))


def test_l1_interleaved_narrow_shape_is_the_1d_config():
    """create_simple: `if (all_interleaved && is_narrow)` with all_dram false tests the ratio only:
    4096 / 32 = 128 > 8, wide -> get_mcast_1d_config(mcast_in0) on the device grid: per_core_N =
    div_up(div_up(4096, 130), 32) = 1 on Blackhole's 13 x 10."""
    f = fields(plan(make("blackhole", "32 x 4096 x 4096", "memory { in0 = l1 }")))
    assert (f["dataflow"], f["per_core"], f["in0_block_w"]) == ("mcast_1d_in0", (1, 1), 2)


def test_l1_falls_through_to_the_multicore_config_kgen_builds_as_multi_core():
    """create_simple's `return MatmulMultiCoreProgramConfig{};`: with tensors not all DRAM-interleaved,
    one block (256^3: 1 x 1 blocks of 16 tiles, get_core_range gives 0 x 0 and no 1D or 2D branch
    applies), or more blocks than cores (Gemma's 1024 x 5376 x 5376, corpus case i56976: factor 8, 21 x 4
    = 84 blocks > 64 cores). ttnn runs MatmulMultiCoreProgramFactory there on the device's compute grid
    (normalize_program_config), kgen's multi_core. A bias there TT adds after the matmul in a ttnn::add of its
    own (bound_matmul's post-processed bias), which kgen does not build: refused, tagged kgen."""
    for shape, why in (("256 x 256 x 256", "a single block"), ("1024 x 5376 x 5376", "more than the 64 cores")):
        p = plan(make("wormhole_b0", shape, "memory { in0 = l1 }"))
        assert p.spec.dataflow == "multi_core" and p.grid_requested == (8, 8), shape
        assert (p.per_core_m, p.per_core_n, p.out_subblock_h, p.out_subblock_w) == (1, 1, 1, 1)
        assert p.in0_block_w == p.kt and p.num_blocks == 1                 # all of K in DST
        assert any("MatmulMultiCoreProgramConfig" in line and why in line for line in p.tt_choice)
    e = _refused(make("wormhole_b0", "256 x 256 x 256", "memory { in0 = l1 }", "fuse { bias = true }"),
                 "separate ttnn::add")
    assert e.rule.endswith("(kgen)")


def test_a_core_grid_with_l1_tensors_is_create_matmul_program_config():
    """With a core grid the memory config does not enter create_matmul_program_config's interleaved
    branches: an L1 in0 plans exactly as a DRAM one."""
    dram = fields(plan(make("wormhole_b0", "1024 x 1024 x 1024", "grid = 8 x 8")))
    l1 = fields(plan(make("wormhole_b0", "1024 x 1024 x 1024", "grid = 8 x 8", "memory { in0 = l1  out = l1 }")))
    assert l1 == dram


def test_a_batched_in1_with_a_core_grid_is_the_reuse_config():
    """create_matmul_program_config, `if (input_b_is_batched)` with in0 batched and neither input sharded:
    m_tiles_per_core = Mt, n_tiles_per_core = Nt, k_tiles_per_core = 1; can_cbs_fit_in_l1 -> a
    MatmulMultiCoreReuseProgramConfig (kgen's reuse), out_subblock from get_subblock_sizes(Mt, Nt):
    the first (w, h) pair with w | 32 and h | 2 is (4, 2): h x w = 2 x 4."""
    p = plan(make("wormhole_b0", "64 x 1024 x 1024", "batch = 4", "broadcast_in1 = false", "grid = 8 x 8"))
    f = fields(p)
    assert (f["dataflow"], f["per_core"], f["in0_block_w"], f["out_subblock"]) == ("reuse", (2, 32), 1, (2, 4))
    assert p.batch_ct == 4 and any("MatmulMultiCoreReuseProgramConfig" in line for line in p.tt_choice)


def test_a_block_sharded_in0_follows_the_planners_shard():
    """kgen's `l1_block_sharded` leaves the shard to the op: kgen's planner shards in0 over mcast_2d's grid
    of blocks (8 x 8 on Wormhole for 32 x 32 tiles: shards of 4 x 4 tiles). get_matmul_program_config
    (in0 sharded, no core grid) on that 2D shard grid: per_core_M = div_up(M, virtual_y) = 4,
    per_core_N = div_up(N, virtual_x) = 4, in0_block_w = gcd(shard width 4, Kt 32) = 4; with the output
    sharded, get_matmul_subblock_params' per_core_N_equals_subblock_w constraint: 1 x 4 (else 4 x 2).
    A COL_MAJOR orientation is transpose_mcast."""
    f = fields(plan(make("wormhole_b0", "1024 x 1024 x 1024",
                         "memory { in0 = l1_block_sharded  out = l1_block_sharded }")))
    assert (f["dataflow"], f["grid"], f["per_core"], f["in0_block_w"], f["out_subblock"]) == \
        ("mcast_2d", (8, 8), (4, 4), 4, (1, 4))
    p = plan(make("wormhole_b0", "1024 x 1024 x 1024", "memory { in0 = l1_block_sharded  orientation = col_major }"))
    assert p.transpose_mcast and fields(p)["out_subblock"] == (4, 2)
    # a sharded output of another layout than in0's: TT's own TT_FATAL, not a kgen rule
    e = _refused(make("wormhole_b0", "1024 x 1024 x 1024", "memory { in0 = l1_block_sharded  out = l1_width_sharded }"),
                 "Input A and output memory layouts must match")
    assert not e.rule.endswith("(kgen)")


def test_create_simples_placed_2d_config_that_tt_itself_refuses():
    """The placed 2D config with a per-core factor of 2 has out_subblock 4 x 2 (out_subblock_w == per_core_N
    keeps h = 4), which get_program_config's `per_core_M % out_subblock_h == 0` check refuses."""
    from kgen.gen.ttauto import Refusal, _placed_2d

    r = _placed_2d(make("wormhole_b0", "1024 x 1024 x 1024"), (8, 8), 2, 2, "16 x 16 blocks")
    assert isinstance(r, Refusal) and r.tt_own and "per_core_M must be divisible by out_subblock_h" in r.message


def test_a_misspelt_auto_is_a_spec_error_naming_auto():
    from kgen.core.errors import SpecError

    with pytest.raises(SpecError) as info:
        resolve(parse_text(f"matmul t {{\n arch = wormhole_b0\n shape = 64 x 64 x 64\n {BF16}\n dataflow = autoo\n}}\n"))
    assert "auto" in str(info.value) and "did you mean `auto`" in (info.value.hint or "")


def test_kgen_check_names_each_rule_and_refuses_with_exit_2(tmp_path, capsys):
    path = tmp_path / "auto.kspec"
    path.write_text(f"matmul t {{\n arch = wormhole_b0\n shape = 8192 x 256 x 1024\n {BF16}\n dataflow = auto\n}}\n")
    capsys.readouterr()
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    section = out.split("TT's choice (dataflow = auto")[1].split("\n\n")[0]
    flat = " ".join(section.split())
    for field in ("dataflow auto -> mcast_1d_in1", "grid -> 8 x 8", "per_core -> 4 x 8", "in0_block_w -> 2",
                  "out_block -> 4 x 8", "out_subblock -> 4 x 2", "compute -> HiFi2"):
        assert field in flat, flat
    for rule in ("create_simple_matmul_program_config", "get_mcast_1d_config", "get_multi_dim_per_core_factor",
                 "get_matmul_subblock_params", "create_matmul_attributes",
                 "tenstorrent/tt-metal ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp @ v0.81.1"):
        assert rule in flat, rule
    # a batch without a core grid: create_simple's fuse_batch = false, named with its rule
    path.write_text(f"matmul t {{\n arch = wormhole_b0\n shape = 64 x 1024 x 1024\n batch = 4\n {BF16}\n"
                    f" broadcast_in1 = false\n dataflow = auto\n}}\n")
    assert main(["check", str(path)]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "fuse_batch -> false: create_simple_matmul_program_config" in flat and "one in1 matrix per batch" in flat
    # the spec fixing the other form is refused in one paragraph
    path.write_text(path.read_text().replace(" dataflow = auto", " dataflow = auto\n fuse_batch = true"))
    assert main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "fuse_batch = true with dataflow = auto" in err and "not fused" in err
    assert "Traceback" not in err and err.count("\n\n") == 0


def test_a_1d_choice_over_a_partial_row_plans():
    """512 x 1024 x 1024 on Blackhole's 13 x 10 grid: TT's 1D choice, per_core 16 x 1, gives Nt = 32
    cores, the first 32 row-major: two rows of 13 and 6 of a third. TT's 1D factory multicasts in0 to
    their bounding box, 13 x 3 (matmul_multicore_reuse_mcast_1d_program_factory.cpp:
    all_cores_with_work.bounding_box()); the box's 7 cores past the run have no work."""
    p = plan(make("blackhole", "512 x 1024 x 1024"))
    assert p.spec.dataflow == "mcast_1d_in0" and (p.per_core_m, p.per_core_n) == (16, 1)
    assert p.grid == (13, 3) and p.num_cores == 32


AUTO_FORMS = {
    # create_simple's placed 2D config (in0 and out in L1): per_core = out_block = 16 x 16, subblock 1 x 2
    "l1_placed_2d": ("1024 x 1024 x 64", "memory { in0 = l1  out = l1 }"),
    # a batched in1 with a core grid: MatmulMultiCoreReuseProgramConfig, kgen's reuse, per_core Mt x Nt
    "batched_in1_reuse": ("64 x 128 x 128", "batch = 3  broadcast_in1 = false  grid = 4 x 4"),
    # a block-sharded in0 and output: the 2D config from the planner's shard, subblock w == per_core_N
    "block_sharded_2d": ("256 x 256 x 256", "memory { in0 = l1_block_sharded  out = l1_block_sharded }"),
}


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(AUTO_FORMS))
def test_the_new_auto_forms_port_check(host_cxx, host_toolchain, tmp_path, capsys, form):
    """Each form TT's choice now lands on is built, emulated bit-exact and port-checked against TT-Metal's
    own kernels (its whole program, as `kgen port-check` runs it)."""
    shape, extra = AUTO_FORMS[form]
    path = tmp_path / f"{form}.kspec"
    path.write_text(f"matmul {form} {{\n arch = wormhole_b0\n shape = {shape}\n {BF16}\n {extra}\n"
                    f" dataflow = auto\n}}\n")
    rc = main(["port-check", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["passed"] is True, data["failures"]
    assert data["kgen"]["exact_match"] and data["tt_metal"]["exact_match"]
