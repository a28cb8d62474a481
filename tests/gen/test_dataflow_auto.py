"""`dataflow = auto` (issue #39 item 1): the planner resolves the spec to what ttnn.matmul 0.81.1 picks
with no program config (kgen/gen/ttauto.py, re-exported by kgen/perf/ttchoice.py), but for the fields
the spec fixes; `kgen check` names the TT rule behind each field; what kgen does not reconstruct is
refused with a clear error. The default (no dataflow line) stays mcast_2d."""

from __future__ import annotations

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


def test_the_default_is_still_mcast_2d_and_has_no_tt_choice():
    spec = make("wormhole_b0", "8192 x 256 x 1024", auto=False)
    assert spec.dataflow == "mcast_2d"
    p = plan(spec)
    assert p.spec.dataflow == "mcast_2d" and p.tt_choice == ()
    assert spec.compute.math_fidelity == "HiFi2"      # unchanged ttnn default: no program config


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
    # placements TT's automatic choice takes other paths for (L1, sharded, DRAM-sharded in1)
    _refused(make("wormhole_b0", "1024 x 1024 x 1024", "memory { in0 = l1 }"),
             "DRAM-interleaved tensors only", "dataflow = mcast_2d")
    _refused(make("wormhole_b0", "32 x 4096 x 4096", "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  "
                                                       "out = l1_width_sharded }"),
             "DRAM-interleaved tensors only", "dataflow = dram_sharded")
    # a batched in1 (one matrix per batch): TT's reuse-factory choice is not reconstructed
    _refused(make("wormhole_b0", "64 x 1024 x 1024", "batch = 4", "broadcast_in1 = false"),
             "batched in1", "dataflow = reuse")
    _refused(make("wormhole_b0", "64 x 1024 x 1024", "batch = 4", "broadcast_in1 = false", "grid = 8 x 8"),
             "batched in1", "dataflow = reuse")
    # (TT's 1D choice whose cores do not fill whole rows of Blackhole's 13-wide grid plans:
    # test_a_1d_choice_over_a_partial_row_plans)
    # batch > 1 without a core grid
    _refused(make("wormhole_b0", "64 x 1024 x 1024", "batch = 4"), "not reconstructed", "core grid")


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
    path.write_text(f"matmul t {{\n arch = wormhole_b0\n shape = 64 x 1024 x 1024\n batch = 4\n {BF16}\n"
                    f" broadcast_in1 = false\n dataflow = auto\n}}\n")
    assert main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "batched in1" in err and "Traceback" not in err and err.count("\n\n") == 0


def test_a_1d_choice_over_a_partial_row_plans():
    """512 x 1024 x 1024 on Blackhole's 13 x 10 grid: TT's 1D choice, per_core 16 x 1, gives Nt = 32
    cores, the first 32 row-major: two rows of 13 and 6 of a third. TT's 1D factory multicasts in0 to
    their bounding box, 13 x 3 (matmul_multicore_reuse_mcast_1d_program_factory.cpp:
    all_cores_with_work.bounding_box()); the box's 7 cores past the run have no work."""
    p = plan(make("blackhole", "512 x 1024 x 1024"))
    assert p.spec.dataflow == "mcast_1d_in0" and (p.per_core_m, p.per_core_n) == (16, 1)
    assert p.grid == (13, 3) and p.num_cores == 32
