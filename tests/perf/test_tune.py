"""kgen tune's search (kgen/perf/tune/), database (tunedb.py) and TT's own choice (ttchoice.py)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from conftest import ROOT
from kgen.core.errors import KgenError
from kgen.gen.pipeline import run
from kgen.gen.plan import PlanError, plan
from kgen.gen.spec import load, parse_text, resolve
from kgen.perf.model import predict
from kgen.perf.model import lower_bound_cycles
from kgen.perf.tune import (TuneConfig, TuneError, candidate_of, search_space,
                            spec_text, target_of, tiles, tune, with_placement)
from kgen.perf.tunedb import TuneDb
from kgen.perf.ttchoice import tt_auto, tt_auto_config, tt_matmul_compute

SMALL = ROOT / "examples" / "peak_small.kspec"
PEAK = ROOT / "examples" / "peak_bf16.kspec"


def small_all_space():
    """peak_small with the grid fixed at 2 x 2: every block field, dataflow and policy searched."""
    return load(SMALL)


@pytest.mark.parametrize("dtype, fidelity", [("bfloat8_b", "LoFi"), ("bfloat4_b", "LoFi"), ("float32", "HiFi4")])
@pytest.mark.slow
def test_bound_holds_for_unpack_bound_formats(dtype, fidelity):
    """LoFi block-float matmuls are unpack-bound in the model: the bound's unpack term must hold too."""
    spec = _spec(f"arch = blackhole\n shape = 640 x 832 x 832\n dtype {{ in0 = {dtype} in1 = {dtype} out = {dtype} }}\n"
                 f" compute {{ math_fidelity = {fidelity} }}")
    full = tune(spec, space="all", top=3, prune=False)
    assert full.stats.bound_violations == 0 and full.stats.predicted > 100
    pruned = tune(spec, space="all", top=3)
    assert [s.candidate for s in pruned.ranked] == [s.candidate for s in full.ranked]


@pytest.fixture(scope="module")
def small_exhaustive():
    """peak_small's whole space searched without pruning, every prediction kept: two tests read it."""
    return tune(small_all_space(), space="all", top=5, prune=False, keep_all=True)


@pytest.mark.slow
@pytest.mark.xdist_group("small_exhaustive")
def test_pruned_search_is_the_exhaustive_one(small_exhaustive):
    spec = small_all_space()
    full = small_exhaustive
    pruned = tune(spec, space="all", top=5)
    assert full.stats.bound_violations == 0
    assert [s.candidate for s in pruned.ranked] == [s.candidate for s in full.ranked[:5]]
    assert pruned.stats.pruned > 0 and pruned.stats.predicted < full.stats.predicted


@pytest.mark.slow
@pytest.mark.xdist_group("small_exhaustive")
def test_lower_bound_holds_for_every_prediction(small_exhaustive):
    """The bound is the matrix engine's busy time for the tile products (configs/perf [math]); no
    predicted program of that per-core block is faster."""
    spec = small_all_space()
    full = small_exhaustive
    _, _, kt = tiles(spec)
    for s in full.ranked:
        c = s.candidate
        assert s.cycles >= lower_bound_cycles(spec.arch, c.per_core, kt, c.math_fidelity, c.fp32_dest_acc,
                                              "Float16_b", "Float16_b")


def test_the_search_ranks_by_the_estimator_it_is_given():
    from dataclasses import replace

    from kgen.perf.model import predict
    from kgen.perf.tune import Estimator

    # the automatic space (230 candidates, most pruned); the searched space's own pruning against the
    # exhaustive search is test_pruned_search_is_the_exhaustive_one's
    spec = small_all_space()
    default = tune(spec, space="auto", top=3)
    # no lower bound: nothing pruned, every legal candidate ranked
    unbounded = tune(spec, space="auto", keep_all=True, estimator=Estimator(predict))
    assert unbounded.stats.pruned == 0 and default.stats.pruned > 0
    assert [s.candidate for s in unbounded.ranked[:3]] == [s.candidate for s in default.ranked]
    # an estimator that prices the model's slowest program cheapest picks exactly that one
    slowest = max(unbounded.ranked, key=lambda s: s.cycles)
    inverted = tune(spec, space="auto", top=1,
                    estimator=Estimator(lambda program: replace(predict(program), cycles=1e12 - predict(program).cycles)))
    assert inverted.ranked[0].cycles == pytest.approx(1e12 - slowest.cycles)


def test_the_planner_is_the_only_filter():
    """A candidate tune calls illegal fails plan() with a named rule; every ranked one plans to the
    candidate's own values and predicts the same time again."""
    spec = load(PEAK)                     # out_block searched: the large ones overflow L1
    result = tune(spec, top=3, prune=False)
    illegal = [o for o in result.outcomes if o.status == "illegal"]
    assert illegal
    for o in illegal[:50]:
        with pytest.raises(PlanError):
            plan(o.candidate.apply(spec))
    for s in result.ranked:
        p = plan(s.candidate.apply(spec))
        assert candidate_of(p) == s.candidate
        assert predict(run(s.candidate.apply(spec), "verified").verified).cycles == pytest.approx(s.cycles)


def test_space_auto_searches_only_what_the_spec_leaves_open():
    spec = load(PEAK)                       # per_core, in0_block_w, subblock, dataflow, policy given
    space = search_space(spec, "auto")
    assert space.searched == ("out_block",)
    assert search_space(spec, "all").searched == ("grid", "per_core", "out_block", "in0_block_w", "out_subblock",
                                                  "dataflow", "packer_l1_acc")
    assert "math_fidelity" in search_space(spec, "auto", allow_precision=True).searched
    result = tune(spec, top=3)
    for s in result.ranked:
        c = s.candidate
        assert (c.per_core, c.in0_block_w, c.out_subblock, c.dataflow) == ((16, 16), 4, (4, 2), "mcast_2d")


def test_space_all_searches_the_1d_dataflows_where_they_apply():
    """TT's 1D factory needs num_blocks_y == 1 (mcast_in0: per_core_M covers Mt) or num_blocks_x == 1
    (mcast_in1); a decode-like shape (1 row of tiles) gets 1D in0 candidates, each on the fewest whole
    rows of the 8-wide grid that hold ceil(Nt / per_core_N) cores, and they plan to those cores."""
    spec = _spec("arch = wormhole_b0\n shape = 32 x 4096 x 1024\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    result = tune(spec, space="all", top=200, prune=False)
    one_d = [o for o in result.outcomes if o.candidate.dataflow == "mcast_1d_in0" and o.status == "predicted"]
    assert one_d
    for o in one_d[:20]:
        c = o.candidate
        assert c.per_core[0] >= 1                       # Mt = 1: every per_core_M covers it
        cores = -(-128 // c.per_core[1])
        assert c.grid == (min(cores, 8), -(-cores // min(cores, 8)))
        p = plan(c.apply(spec))
        assert p.spec.dataflow == "mcast_1d_in0" and p.grid == c.grid
    assert not [o for o in result.outcomes if o.candidate.dataflow == "mcast_1d_in1" and o.candidate.per_core[1] < 128]


def test_tt_autos_1d_choice_plans_with_the_1d_factory():
    """512 x 1024 x 1024 on n150: TT's 1D in0 config (per_core 16 x 1 over the 8 x 8 compute grid)
    is 32 blocks, the first 32 cores row-major: 4 whole rows of 8."""
    spec = _spec("arch = wormhole_b0\n shape = 512 x 1024 x 1024\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    choice = tt_auto(spec)
    assert choice.spec.dataflow == "mcast_1d_in0" and choice.spec.grid == (8, 8)
    p = plan(choice.spec)
    assert (p.per_core_m, p.per_core_n) == (16, 1) and p.grid == (8, 4)


def test_sampling_is_seeded_and_reproducible():
    spec = small_all_space()
    a = tune(spec, space="all", top=3, budget=300, seed=11)
    b = tune(spec, space="all", top=3, budget=300, seed=11)
    c = tune(spec, space="all", top=3, budget=300, seed=12)
    assert a.stats.sampled and a.stats.candidates == 300
    assert [s.candidate for s in a.ranked] == [s.candidate for s in b.ranked]
    assert a.ranked[0].cycles >= tune(spec, space="all", top=1).ranked[0].cycles     # never better than exhaustive
    assert c.stats.sampled


def test_parallel_search_gives_the_same_answer():
    spec = load(PEAK)
    one = tune(spec, space="all", top=3, jobs=1)
    two = tune(spec, space="all", top=3, jobs=2)
    assert [s.candidate for s in one.ranked] == [s.candidate for s in two.ranked]


def test_4096_cubed_blackhole_search_is_fast():
    """Issue #16: a 4096^3 Blackhole search in under 30 s on this machine (2 processes)."""
    result = tune(load(PEAK), space="all", top=5, jobs=2)
    assert not result.stats.sampled
    assert result.stats.seconds < 30, result.stats


@pytest.mark.slow
def test_the_written_spec_round_trips(tmp_path):
    spec = load(PEAK)
    result = tune(spec, space="all", top=1)
    best = result.ranked[0]
    path = tmp_path / "best.kspec"
    path.write_text(spec_text(spec, best.candidate))
    again = plan(load(path))
    assert candidate_of(again) == best.candidate
    assert predict(run(load(path), "verified").verified).cycles == pytest.approx(best.cycles)


@pytest.mark.slow
def test_padded_candidates_are_planned_with_tts_padded_last_blocks():
    # 128 tiles over Blackhole's 13 x 10 cores: a per_core that does not divide wins, and the planner
    # pads the last row/column of cores as TT-Metal does (grid = ceil(Mt / per_core_M) x ...).
    # Padded per_core values are in the default space (issue #16: "including the padded last block
    # once kgen supports it"); padded=False keeps to the divisors.
    spec = load(PEAK)
    result = tune(spec, space="all", top=1)
    assert result.space.padded
    c = result.ranked[0].candidate
    assert c.padded(spec)
    p = plan(c.apply(spec))
    assert (p.spec.m, p.spec.n, p.spec.k) == (spec.m, spec.n, spec.k)          # the shape is the spec's
    assert p.grid == (-(-p.nt // c.per_core[1]), -(-p.mt // c.per_core[0]))
    assert p.mt % c.per_core[0] or p.nt % c.per_core[1]
    exact = tune(spec, space="all", top=1, padded=False)
    assert not exact.ranked[0].candidate.padded(spec)
    assert result.ranked[0].microseconds <= exact.ranked[0].microseconds


# ----------------------------------------------------------------------------------------------
# TT's automatic choice (ttnn's generate_matmul_program_config; rules restated here from TT-Metal's
# source as an independent oracle: WH usable L1 for CBs 1,393,312 B, bf16 tile 2,048 B, bf8 1,088 B)
# ----------------------------------------------------------------------------------------------

def _spec(text_body: str):
    return resolve(parse_text("matmul t {\n" + text_body + "\n}\n", "t.kspec"))


def _tt_estimate(m, n, w, in_tile, interm_tile):
    """get_estimated_size_of_cbs: double-buffered in0/in1, the output sized as in0, the partials."""
    return 2 * m * w * in_tile + 2 * n * w * in_tile + m * n * in_tile + m * n * interm_tile


WH_L1 = 1_393_312


def test_tt_auto_1024_cubed_wormhole():
    """create_simple_matmul_program_config: per_core_factor 16 fits (estimate 1,310,720 B < L1), so
    the blocks are ceil(32/16) = 2 x 2, neither one row nor one column: the 2D config over the whole
    8 x 8 grid with per_core ceil(32/8) = 4 x 4, in0_block_w = Kt / cols = 4; it fits, so out_block is
    per_core; SUBBLOCK_HW_CHOICES' first pair (4, 2) read as (h, w) divides 4 x 4."""
    assert _tt_estimate(16, 16, 2, 2048, 2048) < WH_L1
    spec = _spec("arch = wormhole_b0\n shape = 1024 x 1024 x 1024\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert (cfg.dataflow, cfg.grid, cfg.per_core, cfg.in0_block_w, cfg.out_block, cfg.out_subblock) == \
        ("mcast_2d", (8, 8), (4, 4), 4, (4, 4), (4, 2))


def test_tt_auto_one_row_of_blocks_is_the_1d_in0_config():
    """512 x 1024 x 1024 (GEMM_FLOPS.md's slow out-of-box row): blocks ceil(16/16) = 1 x ceil(32/16) = 2,
    one row -> get_mcast_1d_config(mcast_in0): per_core_M = Mt = 16, per_core_N =
    ceil(ceil(1024 / 64 cores) / 32) = 1, in0_block_w 2 (Kt even); subblock (8, 1) is the first pair
    dividing 16 x 1."""
    spec = _spec("arch = wormhole_b0\n shape = 512 x 1024 x 1024\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert (cfg.dataflow, cfg.per_core, cfg.in0_block_w, cfg.out_block, cfg.out_subblock) == \
        ("mcast_1d_in0", (16, 1), 2, (16, 1), (8, 1))


def test_tt_auto_pads_on_the_full_blackhole_grid():
    """BH 13 x 10, 128 tiles each way: per_core M = ceil(128/10) = 13, N = ceil(128/13) = 10;
    13 columns do not divide Kt = 128, so in0_block_w = 1; subblock: the first (h, w) pair dividing
    13 x 10 is (1, 5)."""
    spec = replace(load(PEAK), grid=None)            # the device's whole grid
    cfg = tt_auto_config(spec)
    assert cfg.grid == (13, 10) and cfg.per_core == (13, 10) and cfg.in0_block_w == 1
    assert cfg.out_subblock == (1, 5)
    choice = tt_auto(spec)
    assert choice.padded and (choice.spec.m, choice.spec.n) == (spec.m, spec.n)   # the planner pads
    assert plan(choice.spec).grid == (13, 10)


def test_tt_auto_with_a_core_grid_sets_subblock_h_to_one():
    """With a core grid (the spec's grid, ttnn.matmul(core_grid=...)): create_matmul_program_config,
    in0_block_w 4 stepped down to a divisor of Kt, get_subblock_sizes reading pairs as (w, h), and
    out_subblock_h = 1 unless out_subblock_w == per_core_N."""
    cfg = tt_auto_config(load(PEAK))
    assert cfg.grid == (8, 8)
    spec = _spec("arch = wormhole_b0\n shape = 1024 x 1024 x 96\n grid = 8 x 8\n"
                 " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert cfg.in0_block_w == 3 and cfg.per_core == (4, 4) and cfg.out_subblock == (2, 4)


def test_tt_auto_narrow_shape():
    """32 x 4096: narrow (ratio 128 > 8) and wide: the 1D in0 config, per_core_N = ceil(ceil(4096/64)/32)
    = 2. With a core grid, create_matmul_1d_systolic_array_program_config: wide (batch*Mt = 1 <= Nt = 128),
    per_core = Mt x ceil(Nt / 64 cores) = 1 x 2, in0_block_w = ceil(Kt / 64) = 1; get_subblock_sizes reads
    the pairs as (w, h): the first with w | 2 and h | 1 is (2, 1), so h x w = 1 x 2."""
    spec = _spec("arch = wormhole_b0\n shape = 32 x 4096 x 1024\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert cfg.dataflow == "mcast_1d_in0" and cfg.per_core == (1, 2) and cfg.in0_block_w == 2
    cfg = tt_auto_config(replace(spec, grid=(8, 8)))
    assert (cfg.dataflow, cfg.grid, cfg.per_core, cfg.in0_block_w, cfg.out_block, cfg.out_subblock) == \
        ("mcast_1d_in0", (8, 8), (1, 2), 1, (1, 2), (1, 2))


def test_tt_auto_narrow_test_on_a_core_grid_uses_the_padded_m():
    """M = 70, N = 800, K = 256 on an 8 x 8 core grid. create_matmul_program_config takes
    height = batch * a_padded_shape[-2] = 96 (3 tiles) and width = 800: 800 // 96 = 8, not above 8,
    so not narrow (the logical 800 // 70 = 11 would be), and no padded size is within one tile: the 2D
    config, per_core = ceil(3 / 8) x ceil(25 / 8) = 1 x 4, in0_block_w 4 (divides Kt = 8), out_block =
    per_core (it fits), get_subblock_sizes' first (w, h) pair with w | 4 and h | 1 is (4, 1): 1 x 4,
    and out_subblock_w == per_core_N keeps out_subblock_h."""
    assert 800 // 96 <= 8 < 800 // 70
    spec = _spec("arch = wormhole_b0\n shape = 70 x 800 x 256\n grid = 8 x 8\n"
                 " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert (cfg.dataflow, cfg.grid, cfg.per_core, cfg.in0_block_w, cfg.out_block, cfg.out_subblock) == \
        ("mcast_2d", (8, 8), (1, 4), 4, (1, 4), (1, 4))


def test_a_core_grid_larger_than_the_device_still_takes_the_core_grid_path():
    """create_matmul_program_config replaces a core grid that does not fit the device by the device's
    compute grid, and stays on its own path (in0_block_w 4 stepped down, not create_simple's Kt / cols):
    per_core ceil(32 / 8) = 4 x 4, out_block 4 x 4 (fits), get_subblock_sizes' first (w, h) pair (4, 2)
    divides it, so h x w = 2 x 4, kept since out_subblock_w == per_core_N."""
    spec = _spec("arch = wormhole_b0\n shape = 1024 x 1024 x 1024\n grid = 12 x 12\n"
                 " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert cfg.grid == (8, 8) and cfg.per_core == (4, 4) and cfg.in0_block_w == 4
    assert cfg.out_block == (4, 4) and cfg.out_subblock == (2, 4)


def test_tt_auto_splits_out_block_when_the_cbs_do_not_fit():
    """WH 4096^3 bf16 on 8 x 8: per_core 16 x 16, in0_block_w 128/8 = 16 does not fit; going down the
    products (256: 16x16, 128: 8x16, 64: 8x8 as the squarest) the first that fits is 8 x 8 at w 16."""
    assert _tt_estimate(16, 16, 16, 2048, 2048) >= WH_L1
    assert _tt_estimate(8, 16, 16, 2048, 2048) >= WH_L1
    assert _tt_estimate(8, 8, 16, 2048, 2048) < WH_L1
    spec = _spec("arch = wormhole_b0\n shape = 4096 x 4096 x 4096\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    cfg = tt_auto_config(spec)
    assert (cfg.per_core, cfg.in0_block_w, cfg.out_block, cfg.out_subblock) == ((16, 16), 16, (8, 8), (4, 2))


def test_tt_default_compute_config():
    """ttnn.matmul with no compute config (create_matmul_attributes at tt-metal 001cea9a): HiFi2 unless
    a core grid or program config is given or both inputs are block floats (then LoFi); math_approx off;
    fp32 accumulation exactly when the output is float32, packer L1 accumulation otherwise."""
    bf16 = _spec("arch = wormhole_b0\n shape = 64 x 64 x 64\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    bf8 = _spec("arch = wormhole_b0\n shape = 64 x 64 x 64\n dtype { in0 = bfloat8_b in1 = bfloat8_b out = bfloat8_b }")
    assert tt_matmul_compute(bf16).math_fidelity == "HiFi2" and tt_matmul_compute(bf8).math_fidelity == "LoFi"
    assert tt_matmul_compute(bf16).packer_l1_acc and not tt_matmul_compute(bf16).fp32_dest_acc
    assert not tt_matmul_compute(bf16).math_approx
    assert tt_matmul_compute(replace(bf16, grid=(8, 8))).math_fidelity == "LoFi"        # a core grid


def test_tt_auto_runs_ttnns_default_compute_where_the_spec_leaves_it():
    """No compute line: TT auto runs ttnn.matmul's default (HiFi2, packer L1 acc on for bf16; LoFi with
    a core grid). A compute config in the spec: TT auto runs that same config."""
    spec = _spec("arch = wormhole_b0\n shape = 1024 x 1024 x 1024\n dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    choice = tt_auto(spec)
    c = choice.compute
    assert (c.math_fidelity, c.packer_l1_acc, c.fp32_dest_acc, c.math_approx) == ("HiFi2", True, False, False)
    assert choice.spec.compute == c and "default" in choice.compute_from
    assert tt_auto(replace(spec, grid=(8, 8))).compute.math_fidelity == "LoFi"
    given = _spec("arch = wormhole_b0\n shape = 1024 x 1024 x 1024\n compute = peak_hifi2\n"
                  " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    choice = tt_auto(given)
    assert choice.compute == given.compute and choice.spec.compute == given.compute
    assert "spec" in choice.compute_from
    # a compute block the spec defines is the spec's config, even named as the default (kgen tune -o)
    named = _spec("arch = wormhole_b0\n shape = 1024 x 1024 x 1024\n grid = 8 x 8\n"
                  " compute { math_fidelity = HiFi2 packer_l1_acc = true math_approx = false }\n"
                  " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    named = replace(named, compute=replace(named.compute, preset="ttnn_matmul_default"))
    assert tt_auto(named).compute == named.compute       # not the core-grid default's LoFi


# ----------------------------------------------------------------------------------------------
# the database
# ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_db_records_and_reuses(tmp_path):
    spec = load(SMALL)
    db = TuneDb(tmp_path / "t.sqlite")
    tid = db.target_id(target_of(spec))
    first = tune(spec, space="all", top=3)
    db.record(tid, first.outcomes)
    known = db.known(tid)
    assert len(known) == len(first.outcomes)
    again = tune(spec, space="all", top=3, known=known)
    assert again.stats.predicted == 0 and again.stats.reused > 0
    assert [s.candidate for s in again.ranked] == [s.candidate for s in first.ranked]
    assert all(s.reused for s in again.ranked)
    db.record_verification(tid, first.ranked[0].candidate, "mm_x", "passed", [], {"k": 1})
    assert db.verification(tid, first.ranked[0].candidate) == ("passed", (), "mm_x")
    db.record(tid, first.outcomes)                                      # a re-run keeps the verdict
    assert db.verification(tid, first.ranked[0].candidate)[0] == "passed"
    report = db.report()
    assert "256 x 256 x 1024" in report and "best verified" in report
    db.close()
    with sqlite3.connect(tmp_path / "t.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.slow
def test_db_keys_by_target(tmp_path):
    a = load(SMALL)
    b = replace(a, compute=replace(a.compute, math_fidelity="HiFi4"))
    db = TuneDb(tmp_path / "t.sqlite")
    assert db.target_id(target_of(a)) != db.target_id(target_of(b))
    assert db.target_id(target_of(a)) == db.target_id(target_of(a))
    assert db.target_id(target_of(a, {"in0": "sharded"})) != db.target_id(target_of(a))


def test_a_directory_is_not_a_database(tmp_path):
    with pytest.raises(KgenError):
        TuneDb(tmp_path)


def test_a_shape_short_of_whole_tiles_is_tuned_on_the_planners_tiles():
    # ttnn tilizes 1000 x 1000 x 1000 to 32 x 32 x 32 tiles (zeros past the shape): the search counts
    # the tiles as the planner does, and its winner plans with those tiles.
    spec = _spec("arch = wormhole_b0\n shape = 1000 x 1000 x 1000\n"
                 " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }")
    assert tiles(spec) == (32, 32, 32)
    result = tune(spec, space="all", top=1)
    winner = plan(result.ranked[0].candidate.apply(spec))
    assert (winner.mt, winner.nt, winner.kt) == (32, 32, 32)


# ----------------------------------------------------------------------------------------------
# a sharded placement: every candidate carries its memory {} and passes the planner's shard rules
# ----------------------------------------------------------------------------------------------

SHARDED = {"in0": "sharded", "out": "sharded"}


def _p150_bfp4():
    """The shape of TT's p150 manual table where a DRAM-priced search picked in0_block_w = 13
    against an in0 shard 2 tiles wide."""
    return _spec("arch = blackhole\n shape = 640 x 832 x 832\n"
                 " dtype { in0 = bfloat4_b in1 = bfloat4_b out = bfloat4_b }\n compute { math_fidelity = LoFi }")


def test_a_sharded_search_ranks_only_what_kgen_check_accepts():
    spec = _p150_bfp4()
    result = tune(spec, space="all", placement=SHARDED, keep=("dataflow",), top=20)
    assert len(result.ranked) == 20
    _, _, kt = tiles(spec)
    for s in result.ranked:
        c = s.candidate
        text = spec_text(spec, c)
        assert "memory { in0 = l1_block_sharded  in1 = dram  out = l1_block_sharded }" in text
        written = resolve(parse_text(text, "written.kspec"))
        p = plan(written)                                   # kgen check's plan: no PlanError
        assert candidate_of(p) == c
        # TT's validation (matmul_device_operation.cpp): the in0 shard's width in tiles, Kt over the
        # cores along N, is a multiple of in0_block_w; a sharded output's subblock spans per_core_N
        # or is one row
        cores_n = -(-tiles(spec)[1] // c.per_core[1])
        assert (kt // cores_n) % c.in0_block_w == 0
        assert c.out_subblock[1] == c.per_core[1] or c.out_subblock[0] == 1
        assert predict(run(written, "verified").verified).cycles == pytest.approx(s.cycles)


def test_the_candidate_a_dram_priced_search_picked_is_illegal_sharded():
    # in0_block_w = 13 over Kt = 26 plans with DRAM tensors; with in0 block-sharded over 13 cores
    # along N each shard is 2 tiles wide, and TT requires in0_block_w to divide it
    spec = _p150_bfp4()
    sharded_memory = with_placement(spec, SHARDED).memory
    dram_pick = TuneConfig((13, 10), (2, 2), (2, 2), 13, (2, 2), False, "mcast_2d", "LoFi", False)
    plan(dram_pick.apply(spec))
    with pytest.raises(PlanError, match="in0_block_w"):
        plan(replace(dram_pick, memory=sharded_memory).apply(spec))
    best = tune(spec, space="all", placement=SHARDED, keep=("dataflow",), top=1).ranked[0].candidate
    assert best.memory == sharded_memory and (26 // -(-26 // best.per_core[1])) % best.in0_block_w == 0


def test_a_placement_kgen_cannot_build_is_bad_input():
    with pytest.raises(TuneError, match="in1=sharded"):
        tune(load(SMALL), placement={"in1": "sharded"})


# ----------------------------------------------------------------------------------------------
# stored results do not outlive the code that made them
# ----------------------------------------------------------------------------------------------

def _copy_tree(tmp_path):
    """A copy of kgen/ and configs/ to edit (the repository is never edited)."""
    import shutil

    pkg = tmp_path / "kgen"
    shutil.copytree(ROOT / "kgen", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    return pkg, tmp_path / "configs"


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_prediction_digest_covers_every_source_and_config_of_the_model(tmp_path):
    from kgen.perf import tunedb

    pkg, configs = _copy_tree(tmp_path)
    same = tunedb.prediction_digest_of(pkg, configs)
    assert same == tunedb.prediction_digest()                   # where the tree is does not matter
    checker = tunedb.checker_digest_of(pkg, configs, "toolchain")
    covered = {p.relative_to(pkg).as_posix() for p in tunedb.import_closure(tunedb.PREDICTION_ROOTS, pkg)}
    assert {"core/costs.py", "core/arch.py", "gen/plan.py", "gen/lower.py", "perf/model.py"} <= covered
    _edit(pkg / "core" / "costs.py", '"HiFi2": 2', '"HiFi2": 3')          # a cost constant
    assert tunedb.prediction_digest_of(pkg, configs) != same
    _edit(pkg / "core" / "costs.py", '"HiFi2": 3', '"HiFi2": 2')
    assert tunedb.prediction_digest_of(pkg, configs) == same
    toml = next(configs.glob("perf/*.toml"))
    toml.write_text(toml.read_text() + "\n# a changed table\n")
    assert tunedb.prediction_digest_of(pkg, configs) != same
    assert tunedb.checker_digest_of(pkg, configs, "toolchain") != checker   # the emulator reads the costs too


def test_the_checker_digest_covers_the_emulator_and_the_toolchain(tmp_path):
    from kgen.perf import tunedb

    pkg, configs = _copy_tree(tmp_path)
    before = tunedb.checker_digest_of(pkg, configs, "g++ 12.2.0")
    prediction = tunedb.prediction_digest_of(pkg, configs)
    assert tunedb.checker_digest_of(pkg, configs, "g++ 13.1.0") != before
    cpp = next((pkg / "proof" / "emu" / "src").glob("*.cpp"))
    cpp.write_text(cpp.read_text() + "\n// changed\n")
    after_cpp = tunedb.checker_digest_of(pkg, configs, "g++ 12.2.0")
    assert after_cpp != before
    _edit(pkg / "proof" / "emulate.py", '"""', '"""changed. ')
    assert tunedb.checker_digest_of(pkg, configs, "g++ 12.2.0") not in (before, after_cpp)
    assert tunedb.prediction_digest_of(pkg, configs) == prediction          # predictions do not run the emulator


def test_a_changed_model_or_emulator_is_not_served_from_the_database(tmp_path, monkeypatch):
    from kgen.perf import tunedb

    spec = load(SMALL)
    db = TuneDb(tmp_path / "t.sqlite")
    tid = db.target_id(target_of(spec))
    first = tune(spec, space="all", top=3)
    db.record(tid, first.outcomes)
    best = first.ranked[0].candidate
    db.record_verification(tid, best, "mm_x", "passed", [], {})
    assert db.verification(tid, best) == ("passed", (), "mm_x")

    # a changed cost constant (in a copy): a new target, nothing known, every candidate predicted again
    pkg, configs = _copy_tree(tmp_path)
    _edit(pkg / "core" / "costs.py", '"HiFi2": 2', '"HiFi2": 3')
    monkeypatch.setattr(tunedb, "prediction_digest", lambda: tunedb.prediction_digest_of(pkg, configs))
    changed = db.target_id(target_of(spec))
    assert changed != tid and db.known(changed) == {}
    again = tune(spec, space="all", top=3, known=db.known(changed))
    assert again.stats.reused == 0 and again.stats.predicted > 0
    monkeypatch.undo()
    assert db.target_id(target_of(spec)) == tid

    # a changed emulator source: the verdict on the same kernel is not served
    cpp = next((pkg / "proof" / "emu" / "src").glob("*.cpp"))
    cpp.write_text(cpp.read_text() + "\n// changed\n")
    monkeypatch.setattr(tunedb, "checker_digest", lambda: tunedb.checker_digest_of(pkg, configs, "same toolchain"))
    assert db.verification(tid, best) is None and db.verification(tid, best, kernel_id="mm_x") is None
    assert "verified passed 0" in db.report()
    monkeypatch.undo()
    assert db.verification(tid, best, kernel_id="mm_x") == ("passed", (), "mm_x")

    # a changed generator: the kernel id recorded for the config is no longer trusted; the id of the
    # kernel as built now finds its verdict
    monkeypatch.setattr(tunedb, "generator_digest", lambda: "another generator")
    assert db.verification(tid, best) is None
    assert db.verification(tid, best, kernel_id="mm_x") == ("passed", (), "mm_x")
    db.close()


def test_a_version_1_database_is_migrated_without_its_verdicts(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO meta VALUES ('schema_version', '1');
            CREATE TABLE targets (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, arch TEXT NOT NULL,
                m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, dtypes TEXT NOT NULL,
                fidelity TEXT NOT NULL, kgen_version TEXT NOT NULL, tt_metal_version TEXT NOT NULL,
                model TEXT NOT NULL, created REAL NOT NULL);
            CREATE TABLE candidates (target_id INTEGER NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
                error TEXT NOT NULL DEFAULT '', microseconds REAL, cycles REAL, tflops REAL, utilization REAL,
                bottleneck TEXT, policy TEXT, kernel_id TEXT, verify_status TEXT, verify_errors TEXT,
                verify_detail TEXT, evaluated REAL NOT NULL, verified REAL, PRIMARY KEY (target_id, config));
        """)
    spec = load(SMALL)
    best = tune(spec, space="all", top=1).ranked[0].candidate
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO candidates (target_id, config, status, kernel_id, verify_status, evaluated) "
                     "VALUES (1, ?, 'predicted', 'mm_old', 'passed', 0)", (best.key(),))
    with TuneDb(path) as db:
        assert db.verification(1, best) is None
        assert db.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "2"


def test_a_dataflow_auto_spec_is_searched_over_the_dataflows():
    """`dataflow = auto` leaves the factory to a choice, as no dataflow line does: tune searches it
    (it once looked `auto` up as a factory and raised KeyError)."""
    spec = _spec("arch = wormhole_b0\n shape = 256 x 256 x 512\n grid = 2 x 2\n"
                 " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }\n dataflow = auto")
    assert "dataflow" in search_space(spec, "auto").searched
    result = tune(spec, top=3)
    assert result.ranked and all(s.candidate.dataflow != "auto" for s in result.ranked)
    for s in result.ranked:
        assert plan(s.candidate.apply(spec)).dataflow.name == s.candidate.dataflow
