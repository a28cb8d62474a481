"""benchmarks/tt_corpus.py: TT-Metal's matmul_oob corpus mapped into specs. Every expected value
below was read by hand from the stored CSV row it names (benchmarks/data/tt_matmul_oob_cases.csv,
a copy of tenstorrent/tt-metal tests/ttnn/unit_tests/benchmarks/matmul_oob/cases.csv
@ c9482b1ca67da3f62e2cf8dee66f694d703d7e8e), not taken from kgen's output."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

from kgen.gen.spec import parse_text, resolve

sys.path.insert(0, str(ROOT / "benchmarks"))
import tt_corpus

ROWS = {row["case"]: row for row in tt_corpus.read_cases(tt_corpus.CSV_PATH)}


def spec_of(case: str, arch: str = "wormhole_b0"):
    mapped = tt_corpus.map_case(ROWS[case], arch)
    assert mapped.spec_text is not None, mapped.missing
    return resolve(parse_text(mapped.spec_text)), mapped.spec_text


def test_the_stored_copy_is_the_whole_file():
    # read_file gave 67,353 characters; TT's csv module wrote CRLF line ends; README.md: 539 cases
    raw = tt_corpus.CSV_PATH.read_bytes()
    assert len(raw) == 67353 and raw.count(b"\r\n") == 540 and raw.endswith(b"LoFi,0,0\r\n")
    assert len(ROWS) == 539


def test_a_2d_matmul_with_silu():
    # i45311_2048x2048x2048-silu: 2048x2048 @ 2048x2048, bf16, linear, silu, HiFi2, fp32_acc 0, l1 acc 1
    spec, _ = spec_of("i45311_2048x2048x2048-silu")
    assert (spec.m, spec.n, spec.k, spec.batch) == (2048, 2048, 2048, 1)
    assert (spec.dtype_in0, spec.dtype_in1, spec.dtype_out) == ("bfloat16",) * 3
    assert spec.activation == "silu" and not spec.fuse_bias
    c = spec.compute
    assert (c.math_fidelity, c.fp32_dest_acc, c.packer_l1_acc, c.math_approx) == ("HiFi2", False, True, False)


def test_leading_ones_and_an_empty_out_dtype():
    # m_llama8b_w1_decode: 1x1x32x4096 @ 4096x14336, bf16 x bfp4, out_dtype empty (A's), LoFi
    spec, text = spec_of("m_llama8b_w1_decode")
    assert (spec.m, spec.n, spec.k, spec.batch) == (32, 14336, 4096, 1)
    assert (spec.dtype_in0, spec.dtype_in1, spec.dtype_out) == ("bfloat16", "bfloat4_b", "bfloat16")
    assert spec.compute.math_fidelity == "LoFi"
    assert "grid" not in text and "memory" not in text and "fuse" not in text


def test_a_broadcast_b_makes_a_batch():
    # i25503_704: 1x704x703x128 @ 128x128, bfp8 x bfp8: 704 batches of 703 x 128 x 128, B shared
    spec, text = spec_of("i25503_704")
    assert (spec.m, spec.n, spec.k, spec.batch, spec.broadcast_in1) == (703, 128, 128, 704, True)
    assert spec.dtype_out == "bfloat8_b" and "broadcast_in1" not in text


def test_a_batched_b_is_one_b_per_batch():
    # i35396_attn_av: 64x6x256x256 @ 64x6x256x64: 384 batches, B batched the same way
    spec, _ = spec_of("i35396_attn_av")
    assert (spec.m, spec.n, spec.k, spec.batch, spec.broadcast_in1) == (256, 64, 256, 384, False)


def test_a_rank_4_or_5_a_keeps_its_leading_dims():
    # i35396_attn_av: A 64x6x256x256, B 64x6x256x64 (rank 4, one B per batch and head)
    spec, text = spec_of("i35396_attn_av")
    assert "batch = 64 x 6" in text and spec.batch_dims == (64, 6) and spec.batch == 64 * 6
    # m_llama8b_w1_decode: A 1x1x32x4096 against a 2-D B (broadcast): the dims of 1 are kept
    spec, text = spec_of("m_llama8b_w1_decode")
    assert spec.batch_dims == (1, 1) and spec.batch == 1 and "broadcast_in1" not in text
    # t_linear_f0be66f925: A 1x1x1x128x256 (rank 5) @ B 1x1x256x2560 (B's batch is 1: broadcast)
    spec, _ = spec_of("t_linear_f0be66f925")
    assert spec.batch_dims == (1, 1, 1) and (spec.m, spec.n, spec.k, spec.broadcast_in1) == (128, 2560, 256, True)


def test_bias_takes_b_dtype_and_core_grid_is_x_by_y():
    # t_linear_752bf21cf0: 8x1x128x1024 @ 1024x4096, bf16 x bfp8 -> bfp8, bias, no core grid
    spec, _ = spec_of("t_linear_752bf21cf0")
    assert (spec.m, spec.n, spec.k, spec.batch) == (128, 4096, 1024, 8)
    assert spec.fuse_bias and spec.dtype_bias == "bfloat8_b" and spec.dtype_out == "bfloat8_b"
    assert spec.grid is None
    # t_linear_e075ed14b9: core_grid "(8, 7)", activation gelu_approx (TT's GELU, fast), bf16 out
    spec, _ = spec_of("t_linear_e075ed14b9")
    assert spec.grid == (8, 7) and spec.activation == "gelu_fast" and not spec.fuse_bias
    assert (spec.m, spec.n, spec.k) == (32, 18176, 4544)


@pytest.mark.parametrize("arch, grid", [("wormhole_b0", (8, 8)), ("blackhole", (13, 10))])
def test_core_grid_device_is_the_whole_grid(arch, grid):
    spec, _ = spec_of("i56976_gemma4_mlp-grid", arch)        # core_grid = device
    assert spec.arch == arch and spec.grid == grid


def test_sharded_placements():
    # s_b_2048x2048x2048_bout: a_mem l1_block, b_mem dram, out_mem l1_block, no shard spec
    spec, _ = spec_of("s_b_2048x2048x2048_bout")
    assert (spec.memory.in0, spec.memory.in1, spec.memory.out) == ("l1_block_sharded", "dram", "l1_block_sharded")


@pytest.mark.parametrize("case, placements, cause", [
    ("g_32x1024x1024_bf16_l1", ("l1", "dram", "l1"), None),     # a_mem l1, b_mem dram, out_mem l1: planned
    # l1, l1, l1 with one B per batch: mcast_2d runs it with the batch unfused (TT's fuse_batch = false)
    ("i25502_bmm704_l1", ("l1", "l1", "l1"), None),
])
def test_l1_interleaved_placements(case, placements, cause):
    """An interleaved L1 tensor is `l1` for in0, in1 and the output alike (issue #39), and the default
    mcast_2d takes it."""
    spec, _ = spec_of(case)
    assert (spec.memory.in0, spec.memory.in1, spec.memory.out) == placements
    result = tt_corpus.classify(ROWS[case], "wormhole_b0")
    assert (result.status, result.cause or None) == ("refused" if cause else "planned", cause)


@pytest.mark.parametrize("case, key, shape, cause", [
    # transpose_a = 1, A 8192 x 11008 stored K x M: M = 11008, K = 8192; B 8192 x 4096 is K x N
    ("i36426_ta_11008", "transpose_a", (11008, 4096, 8192), None),
    # transpose_b = 1, B [64, 6, 256, 64] stored N x K: one B per batch, the batch unfused (fuse_batch = false)
    ("i35396_attn_qk", "transpose_b", (256, 256, 64), None),
])
def test_the_transposes_are_written_into_the_spec(case, key, shape, cause):
    """ttnn.matmul's transpose_a / transpose_b are spec keys (issue #39 item 3): the case's stored shapes
    transposed give M, N and K, and the case plans, or meets a TT-Metal rule, like any other."""
    spec, text = spec_of(case)
    assert f"{key} = true" in text and getattr(spec, key)
    assert (spec.m, spec.n, spec.k) == shape
    result = tt_corpus.classify(ROWS[case], "wormhole_b0")
    assert (result.status, result.cause or None) == ("refused" if cause else "planned", cause)


def test_explicit_shard_specs_are_written_into_the_spec():
    """`(x0,y0)-(x1,y1):HxW:row` is ttnn.ShardSpec(CoreRange((x0,y0),(x1,y1)), [H, W], ROW_MAJOR): the spec
    says `H x W on (x1+1) x (y1+1)`. t_s_matmul_8c5056ce82 (read from its row): A 1x1x16384x256 bfp8
    l1_height (0,0)-(7,7):256x256:row, B 1x1x256x32 bfp8 l1, out l1_height."""
    spec, text = spec_of("t_s_matmul_8c5056ce82")
    assert "in0_shard = 256 x 256 on 8 x 8" in text
    assert spec.memory.in0_shard.shape == (256, 256) and spec.memory.in0_shard.grid == (8, 8)
    assert (spec.memory.in0, spec.memory.in1, spec.memory.out) == ("l1_height_sharded", "l1", "l1_height_sharded")
    # t_s_matmul_7ada312b72: B 8x16x384x64 l1_height (0,0)-(7,7):768x64:row. No factory kgen builds takes in1
    # sharded in L1 (TT's MatmulMultiCoreReuseProgramConfig beside a sharded in0 does): no spec syntax
    assert tt_corpus.map_case(ROWS["t_s_matmul_7ada312b72"], "wormhole_b0").missing == (
        "height-sharded in1", "an explicit shard spec (in1)")
    result = tt_corpus.classify(ROWS["t_s_matmul_7ada312b72"], "wormhole_b0")
    assert (result.status, result.origin, result.cause) == ("refused", "spec language",
                                                            "no spec syntax: height-sharded in1")
    # t_s_linear_0896d5f792: A 1x1x1024x160 l1_block (0,0)-(4,7):128x32:row, core_grid (5, 8)
    spec, text = spec_of("t_s_linear_0896d5f792")
    assert spec.memory.in0_shard.shape == (128, 32) and spec.memory.in0_shard.grid == (5, 8)
    assert spec.grid == (5, 8)


@pytest.mark.parametrize("dataflow", [None, "auto"])
def test_a_given_block_shard_is_honoured(dataflow):
    """The 2D factory reads each core's per_core_M x Kt / (cores along N) shard: with
    t_s_linear_0896d5f792's shard 128 x 32 on 5 x 8 (M 1024 = 32 tiles, K 160 = 5 tiles) that is per_core_M
    = 4 over 8 rows and one K tile on each of 5 columns: the plan's in0 shards are the given ones."""
    from kgen.gen.plan import plan

    mapped = tt_corpus.map_case(ROWS["t_s_linear_0896d5f792"], "wormhole_b0", dataflow)
    p = plan(resolve(parse_text(mapped.spec_text)))
    assert p.shard_specs["in0"]["shape"] == (128, 32) and p.shard_specs["in0"]["grid"] == (0, 0, 4, 7)
    assert (p.per_core_m, p.grid) == (4, (5, 8))


def test_a_height_sharded_in0_and_output_take_the_1d_in1_factory():
    """t_s_linear_582e11ecf7 (read from its row): A 1x1x16384x32 bf16 l1_height (0,0)-(7,7):256x32:row,
    B 32x32 bfp8 in DRAM, out l1_height, core_grid (8, 8). TT: create_matmul_1d_systolic_array_program_config,
    HEIGHT_SHARDED forcing is_tall: per_core_M = 512 tiles / 64 cores = 8 = the shard's 256 rows, Nt = 1."""
    result = tt_corpus.classify(ROWS["t_s_linear_582e11ecf7"], "wormhole_b0", "auto")
    assert (result.status, result.dataflow, result.grid) == ("planned", "mcast_1d_in1", "8x8")


def test_a_shard_not_at_the_origin_has_no_spec_syntax():
    row = dict(ROWS["t_s_linear_0896d5f792"], a_shard="(1,0)-(5,7):128x32:row")
    mapped = tt_corpus.map_case(row, "wormhole_b0")
    assert mapped.spec_text is None and mapped.missing == ("a shard grid not at core (0, 0) (in0)",)


def test_rule_origin_follows_the_kgen_tag():
    assert tt_corpus.rule_origin("kgen: sharded tensors in whole shards") == "kgen"
    assert tt_corpus.rule_origin("1D multicast: the cores fill whole rows of the grid (kgen)") == "kgen"
    assert tt_corpus.rule_origin("Kt % in0_block_w == 0") == "TT-Metal"


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert tt_corpus.main(["--csv", str(tmp_path / "none.csv")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(SystemExit) as exc:
        tt_corpus.main(["--no-such-flag"])
    assert exc.value.code == 2 and capsys.readouterr().err.count("\n") == 1


CORPUS_DOC = ROOT / "docs" / "corpus.md"


@pytest.mark.parametrize("arch", tt_corpus.ARCHS)
def test_the_docs_measured_tables_are_todays(arch):
    """docs/corpus.md's measured section is what benchmarks/tt_corpus.py prints now, line for line."""
    results = tt_corpus.run(list(ROWS.values()), arch)
    measured = CORPUS_DOC.read_text().split("## Measured", 1)[1].split(f"### {arch}", 1)[1]
    for line in tt_corpus.table_lines(results, arch, markdown=True):
        assert line in measured, f"docs/corpus.md ({arch}) lacks: {line}"


def test_the_docs_count_the_parts_tt_runs_apart_right():
    """The planned cases where ttnn.linear 0.81.1 runs the bias or the activation as an op of its own
    (kgen.gen.tt_bound_matmul), as docs/corpus.md counts them."""
    from kgen.gen.plan import plan

    counts = {}
    for arch in ("wormhole_b0", "blackhole"):
        bias = act = either = 0
        for result in tt_corpus.run(list(ROWS.values()), arch):
            if result.status != "planned":
                continue
            lines = plan(resolve(parse_text(result.spec))).tt_choice
            b, a = any(x.startswith("bias:") for x in lines), any(x.startswith("activation") for x in lines)
            bias, act, either = bias + b, act + a, either + (b or a)
        counts[arch] = (either, bias, act)
    text = " ".join(CORPUS_DOC.read_text().split())
    (e0, b0, a0), (e1, b1, a1) = counts["wormhole_b0"], counts["blackhole"]
    assert f"Planned, but not all of TT's call: {e0} (wormhole_b0) and {e1} (blackhole)" in text, counts
    assert f"**A bias** ({b0} / {b1})" in text and f"no core grid** ({a0} / {a1})" in text, counts
