"""An explicit shard spec (issue #39 item 2): `memory { in0_shard = H x W on X x Y }` is ttnn.ShardSpec's
shape (elements) on the CoreRange (0, 0)-(X - 1, Y - 1), as the matmul_oob corpus gives it
(`(0,0)-(4,7):128x32:row`). The planner lays the tensor out from it and honours it, or refuses with TT-Metal
0.81.1's rule (matmul_device_operation.cpp's validation: per_core_M == shard_shape[0] / tile height; a
height shard holds all of K; get_matmul_program_config: the shard grid's cores along x and y are K and M
over the shard). Expected values are TT's formulas worked by hand, not kgen's output."""

from __future__ import annotations

import json

import pytest
from conftest import assert_proved

from kgen.cli import main
from kgen.core.errors import SpecError
from kgen.gen.matmul_spec import ShardGiven
from kgen.gen.plan import PlanError, plan
from kgen.gen.shards import BLOCK_K_RULE, HEIGHT_K_RULE, PER_CORE_M_RULE
from kgen.gen.spec import parse_text, resolve
from kgen.gen.spec_print import format_spec

BF16 = "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }"


def text_of(arch: str, shape: str, memory: str, *lines: str) -> str:
    body = "\n    ".join((f"arch = {arch}", f"shape = {shape}", BF16, f"memory {{ {memory} }}") + lines)
    return f"matmul s {{\n    {body}\n}}\n"


def make(*args, **kw):
    return resolve(parse_text(text_of(*args, **kw), "s.kspec"))


# ---- the spelling -----------------------------------------------------------------------------

def test_a_shard_spec_reads_as_ttnn_gives_it():
    spec = make("wormhole_b0", "1024 x 160 x 160", "in0 = l1_block_sharded  in0_shard = 128 x 32 on 5 x 8")
    assert spec.memory.in0_shard == ShardGiven((128, 32), (5, 8))
    assert spec.memory.out_shard is None
    assert str(spec.memory.in0_shard) == "128 x 32 on 5 x 8"


@pytest.mark.parametrize("memory", [
    "in0 = l1_block_sharded  in0_shard = 128 x 32 on 5 x 8",
    "in0 = l1_height_sharded  out = l1_height_sharded  in0_shard = 64 x 128 on 2 x 2  out_shard = 64 x 64 on 2 x 2",
    "in0 = l1_block_sharded  out = l1_block_sharded  orientation = col_major  in0_shard = 64x32 on 4x2",
])
def test_the_printer_writes_it_back(memory):
    spec = make("blackhole", "256 x 64 x 128", memory, "dataflow = mcast_1d_in1")
    again = resolve(parse_text(format_spec(spec), "s.kspec"))
    assert again.memory == spec.memory and again == spec


@pytest.mark.parametrize("memory, words", [
    ("in0 = l1_block_sharded  in0_shard = 128 x 32", "also names the cores it lies on"),
    ("in0 = l1_block_sharded  in0_shard = 100 x 32 on 5 x 8", "not a whole number of 32-element tiles"),
    ("in0 = l1_block_sharded  in0_shard = 128 x 48 on 5 x 8", "shard width 48"),
    ("in0 = l1_block_sharded  in0_shard = 128 x 32 on 0 x 8", "every dimension must be positive"),
    ("in0 = l1_block_sharded  in0_shard = 128 x 32 x 2 on 5 x 8", "expected 2 numbers"),
    ("in0_shard = 128 x 32 on 5 x 8", "a shard spec belongs to a tensor sharded in L1"),
    ("in0 = l1_block_sharded  in0_shard = row_major", "expected a shard spec written like"),
    ("in0 = l1_block_sharded  in0_shard = 128 x 32 over 5 x 8", "unexpected"),
])
def test_a_bad_shard_spec_is_one_paragraph_and_exit_2(tmp_path, capsys, memory, words):
    path = tmp_path / "bad.kspec"
    path.write_text(text_of("wormhole_b0", "1024 x 160 x 160", memory))
    capsys.readouterr()
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err, err
    assert "Traceback" not in err and "\n\n" not in err.strip()


# ---- honoured -----------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
@pytest.mark.parametrize("dataflow", ["mcast_2d", "auto"])
def test_a_block_shard_sets_the_2d_grid_and_per_core(arch, dataflow):
    """t_s_linear_b092efd1c6's form, small: M 512 (16 tiles), K 256 (8 tiles), N 128 (4 tiles), shard
    128 x 64 on 4 x 4: per_core_M = 128 / 32 = 4 (16 / 4 rows), K over 4 columns of 64 / 32 = 2 tiles,
    per_core_N = div_up(4, 4) = 1 (get_matmul_program_config's div_up(N, virtual_x)). No grid in the spec:
    the shard's, whatever the device's (Blackhole's 13 x 10 included)."""
    p = plan(make(arch, "512 x 128 x 256", "in0 = l1_block_sharded  out = l1_block_sharded  "
                                          "in0_shard = 128 x 64 on 4 x 4", f"dataflow = {dataflow}"))
    assert p.spec.dataflow == "mcast_2d"
    assert (p.grid, p.per_core_m, p.per_core_n, p.in0_shard_w) == ((4, 4), 4, 1, 2)
    assert p.shard_specs["in0"] == {"memory_layout": "BLOCK_SHARDED", "grid": (0, 0, 3, 3), "orientation": "ROW_MAJOR",
                                    "shape": (128, 64)}
    if dataflow == "auto":                       # in0_block_w = gcd(shard width, Kt) = gcd(2, 8)
        assert p.in0_block_w == 2


def test_a_height_shard_sets_the_1d_grid_and_per_core():
    """A height shard on the 1D in1 multicast: per_core_M = its rows (64 / 32 = 2), per_core_N = Nt, the
    shard grid the compute grid, shard i on core i."""
    p = plan(make("wormhole_b0", "256 x 64 x 128", "in0 = l1_height_sharded  in0_shard = 64 x 128 on 2 x 2",
                  "dataflow = mcast_1d_in1"))
    assert (p.grid, p.per_core_m, p.per_core_n, p.in0_block_w) == ((2, 2), 2, 2, 4)
    assert p.shard_specs["in0"]["grid"] == (0, 0, 1, 1) and p.shard_specs["in0"]["shape"] == (64, 128)


# ---- refused with TT's rule ----------------------------------------------------------------------

def _refused(spec) -> PlanError:
    with pytest.raises(PlanError) as info:
        plan(spec)
    return info.value


def test_a_shard_height_other_than_per_core_m_is_tts_refusal():
    # per_core_M fixed at 4 tiles, the shard 64 rows (2 tiles): "per_core_M (4) must equal shard_shape[0] / ..."
    e = _refused(make("wormhole_b0", "512 x 128 x 256", "in0 = l1_block_sharded  in0_shard = 64 x 64 on 4 x 4",
                      "dataflow = mcast_2d", "block { per_core = 4 x 1 }"))
    assert e.rule == PER_CORE_M_RULE and "must equal shard_shape[0]" in e.message
    assert not e.rule.startswith("kgen")


def test_a_height_shard_narrower_than_k_is_tts_refusal():
    # K = 128 (4 tiles), the shard 64 wide (2 tiles): "K must be equal to shard_shape[1] / in0_tile.get_width()"
    e = _refused(make("wormhole_b0", "256 x 64 x 128", "in0 = l1_height_sharded  in0_shard = 64 x 64 on 2 x 2",
                      "dataflow = mcast_1d_in1"))
    assert e.rule == HEIGHT_K_RULE and "K must be equal to shard_shape[1]" in e.message


def test_a_block_shard_whose_k_split_is_not_the_grid_is_tts_refusal():
    # K = 8 tiles in shards 1 tile wide need 8 cores along x; the grid the spec fixes has 4
    e = _refused(make("wormhole_b0", "512 x 128 x 256", "in0 = l1_block_sharded  in0_shard = 128 x 32 on 4 x 4",
                      "dataflow = mcast_2d", "grid = 4 x 4", "block { per_core = 4 x 1 }"))
    assert e.rule == BLOCK_K_RULE and "Num cores along x" in e.message


def test_the_corpus_shard_grids_plan_on_both_archs():
    """The 12 corpus cases with a block shard and a core grid: e.g. t_s_linear_0de474f10c, A 1x1x256x160
    bfp8 l1_block (0,0)-(4,7):32x32:row, core_grid (5, 8): per_core_M = 1 over 8 rows, K 5 tiles over 5."""
    for arch in ("wormhole_b0", "blackhole"):
        p = plan(make(arch, "256 x 160 x 160", "in0 = l1_block_sharded  out = l1_block_sharded  "
                                              "in0_shard = 32 x 32 on 5 x 8", "grid = 5 x 8"))
        assert (p.grid, p.per_core_m, p.per_core_n, p.in0_shard_w) == ((5, 8), 1, 1, 1)


# ---- proved --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
def test_a_given_block_shard_emulates_and_port_checks(host_cxx, host_toolchain, tmp_path, arch):
    """The 2D factory on the given shards: kgen's program bit-exact, TT's whole program (its block-sharded
    in0 reader on every core) bit-identical."""
    from kgen.gen.build import build

    spec = make(arch, "256 x 64 x 128", "in0 = l1_block_sharded  out = l1_block_sharded  "
                                       "in0_shard = 64 x 64 on 2 x 4", "dataflow = mcast_2d")
    p = plan(spec)
    assert (p.grid, p.per_core_m, p.per_core_n) == ((2, 4), 2, 1)
    folder = build(spec, tmp_path / "build").path
    manifest = json.loads((folder / "manifest.json").read_text())
    in0 = next(t for t in manifest["io_tensors"] if t["name"] == "in0")
    assert in0["memory"]["shard_spec"]["shape"] == [64, 64] and in0["memory"]["shard_spec"]["grid"] == [0, 0, 1, 3]
    assert_proved(folder, p)


def test_an_error_points_at_the_shard_key():
    with pytest.raises(SpecError) as info:
        make("wormhole_b0", "1024 x 160 x 160", "in0_shard = 128 x 32 on 5 x 8")
    assert info.value.span.line == 5


def test_tune_keeps_the_grid_and_per_core_a_given_shard_fixes():
    """`kgen tune` searches around the given shard, not through it: the grid and per_core it implies are
    fixed, and a candidate carrying the shard is stored and read back by the tune database whole."""
    from kgen.perf.tune.candidate import TuneConfig
    from kgen.perf.tune.space import candidate_of, search_space

    spec = make("wormhole_b0", "256 x 64 x 128", "in0 = l1_height_sharded  out = l1_height_sharded  "
                                                "in0_shard = 64 x 128 on 2 x 2", "dataflow = mcast_1d_in1")
    space = search_space(spec)
    assert "grid" not in space.searched and "per_core" not in space.searched
    assert space.fixed_grid == (2, 2) and space.fixed["per_core"] == (2, 2)
    c = candidate_of(plan(spec))
    assert c.memory.in0_shard == ShardGiven((64, 128), (2, 2))
    assert TuneConfig.from_key(c.key()) == c
