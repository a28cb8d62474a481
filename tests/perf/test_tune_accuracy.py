"""`kgen tune --min-pcc / --max-rel-error` from Python (kgen/perf/tune/accuracy.py, precision.py,
accuracy_verify.py, inputs.py): the target's arithmetic, the proxy against numpy float64 facts,
the front and the pick, the sub-block verification against the golden model's bits and numpy,
and the checks of the user's files."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve
from kgen.perf.tune.accuracy import AccuracyTarget, dtype_choices, parse_allow_dtype, tune_for_accuracy
from kgen.perf.tune.accuracy_verify import emulate_accuracy, sub_block_spec, sub_block_tiles
from kgen.perf.tune.inputs import load_inputs
from kgen.perf.tune.precision import (InputSource, NumericsPath, measure, predict_accuracy, proxy_tiles, spread,
                                      tail_max)
from kgen.perf.tune.space import TuneError, tuned_spec

SMALL = """matmul small_bh {{
    arch  = blackhole
    shape = {m} x {n} x {k}
    dtype {{ in0 = bfloat16  in1 = {in1}  out = bfloat16 }}
    {blocking}
}}
"""
# a small space (precision, in0_block_w, subblocks, the accumulation request): a search of seconds
FIXED = "grid = 2 x 2  dataflow = mcast_2d  block { per_core = 2 x 2  out_block = 2 x 2 }"


def small(m=128, n=128, k=512, in1="bfloat8_b", blocking=FIXED):
    return resolve(parse_text(SMALL.format(m=m, n=n, k=k, in1=in1, blocking=blocking), "<test>"))


def _pcc(out, ref) -> float:
    return float(np.corrcoef(np.asarray(out, np.float64).ravel(), np.asarray(ref, np.float64).ravel())[0, 1])


# ---------------------------------------------------------------------------------------------
# the target

@pytest.mark.parametrize("kwargs", [{}, {"min_pcc": 0.0}, {"min_pcc": 1.5}, {"min_pcc": -1}, {"min_pcc": math.nan},
                                    {"max_rel_error": 0.0}, {"max_rel_error": -0.1}, {"max_rel_error": math.inf}])
def test_a_target_out_of_range_is_bad_input(kwargs):
    with pytest.raises(TuneError):
        AccuracyTarget(**kwargs)


def test_the_share_of_the_allowance():
    t = AccuracyTarget(min_pcc=0.999)
    assert t.used(0.9995, 1.0) == pytest.approx(0.5) and t.meets(0.9995, 1.0)
    assert not t.meets(0.998, 0.0) and t.used(0.998, 0.0) == pytest.approx(2.0)
    both = AccuracyTarget(min_pcc=0.99, max_rel_error=0.01)
    assert both.used(0.999, 0.02) == pytest.approx(2.0) and both.used(0.98, 0.001) == pytest.approx(2.0)
    exact = AccuracyTarget(min_pcc=1.0)
    assert exact.meets(1.0, 0.5) and not exact.meets(0.9999999, 0.0)
    assert AccuracyTarget(min_pcc=0.9).used(math.nan, 0.0) == math.inf


def test_allow_dtype_names_operands_only():
    assert parse_allow_dtype(["in1"]) == ("in1",) and parse_allow_dtype(["in1,in0", "in1"]) == ("in0", "in1")
    for bad in (["in2"], ["weights"], ["in0,"]):
        with pytest.raises(TuneError, match="in0 .* in1"):
            parse_allow_dtype(bad)
    spec = small(in1="bfloat16")
    assert dtype_choices(spec, ()) == [("bfloat16", "bfloat16")]
    assert dtype_choices(spec, ("in1",)) == [("bfloat16", d) for d in ("bfloat16", "bfloat8_b", "bfloat4_b")]
    assert len(dtype_choices(spec, ("in0", "in1"))) == 9


# ---------------------------------------------------------------------------------------------
# the proxy

def test_tail_max_reads_the_tail_it_is_given():
    # the largest |x| of a million draws: ~4.9 for N(0, 1), ~13.8 for an exponential; the tail
    # fitted to 10,000 draws says so within 20 %; a count the sample holds is its own maximum
    rng = np.random.default_rng(1)
    x = rng.standard_normal(10_000)
    assert tail_max(x, 10_000) == np.abs(x).max()
    assert 4.9 * 0.9 < tail_max(x, 1_000_000) < 4.9 * 1.2
    assert 13.8 * 0.9 < tail_max(rng.standard_exponential(10_000), 1_000_000) < 13.8 * 1.2
    assert tail_max(x, 10 ** 8) > tail_max(x, 10 ** 6)


def test_the_proxy_stays_within_its_budget():
    for kt in (32, 128, 512):
        r, c = proxy_tiles(100, 100, kt)
        assert 1 <= r <= 4 and 1 <= c <= 4 and (r * c == 1 or r * c * kt * 32 ** 3 <= 1 << 24)
    assert proxy_tiles(1, 3, 32) == (1, 3)
    assert spread(3, 10) == [0, 4, 9] and spread(5, 3) == [0, 1, 2]


PLAN = """matmul path {{
    arch  = blackhole
    shape = {m} x {m} x {k}
    dtype {{ in0 = bfloat16  in1 = {in1}  out = bfloat16 }}
    block {{ in0_block_w = {w} }}
    compute {{ math_fidelity = {fidelity}  fp32_dest_acc = {fp32}  packer_l1_acc = {l1} }}
}}
"""


def _plan(in1="bfloat16", fidelity="HiFi4", fp32=True, l1=True, k=512, w=4, m=256):
    return plan(resolve(parse_text(PLAN.format(m=m, k=k, in1=in1, fidelity=fidelity, fp32=str(fp32).lower(),
                                               l1=str(l1).lower(), w=w), "<test>")))


def test_the_prediction_counts_the_weights_rounding():
    from kgen.proof.tiles import quantize

    # float64 facts on the proxy's own inputs: bfloat4_b weights alone, multiplied exactly, lose
    # this much PCC; the prediction through the device can only lose more
    src = InputSource()
    a, b = src.block([0, 1], [0, 1], 16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    exact_of_bfp4 = quantize(a, "Float16_b").astype(np.float64) @ quantize(b, "Bfp4_b").astype(np.float64)
    floor = 1 - _pcc(exact_of_bfp4, ref)
    p = predict_accuracy(_plan(in1="bfloat4_b"), 64, 64, src)
    assert p.proxy == (64, 64) and 1 - p.pcc >= floor * 0.999
    # bfloat16 at HiFi4 with fp32 dest: within 3x of the inputs' own rounding
    exact_of_bf16 = quantize(a, "Float16_b").astype(np.float64) @ quantize(b, "Float16_b").astype(np.float64)
    q = predict_accuracy(_plan(), 64, 64, src)
    assert 1 - _pcc(exact_of_bf16, ref) <= 1 - q.pcc < 3 * (1 - _pcc(exact_of_bf16, ref)) + 1e-9
    assert p.rel_error > q.rel_error


def test_the_relative_error_grows_with_the_output():
    p = _plan(fidelity="LoFi", fp32=False, l1=False, w=1)
    small_out, large_out = predict_accuracy(p, 256, 256), predict_accuracy(p, 4096, 4096)
    assert small_out.pcc == large_out.pcc and large_out.rel_error > small_out.rel_error


def test_measure_is_numpy():
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((40, 30))
    out = ref + 0.01 * rng.standard_normal(ref.shape)
    m = measure(out.astype(np.float32), ref)
    assert m.pcc == pytest.approx(_pcc(out.astype(np.float32), ref), abs=1e-12)
    assert m.rel_error == pytest.approx(np.abs(out.astype(np.float32) - ref).max() / np.abs(ref).max())


# ---------------------------------------------------------------------------------------------
# the search

@pytest.fixture(scope="module")
def fronts():
    spec = small(k=256, in1="bfloat16")
    return spec, {p: tune_for_accuracy(spec, AccuracyTarget(min_pcc=p), allow_dtype=("in1",), jobs=1)
                  for p in (0.999, 0.99999)}


@pytest.mark.slow
def test_the_front_leads_to_the_fastest_config_that_meets_the_target(fronts):
    spec, results = fronts
    for p, r in results.items():
        assert r.pick is not None and r.pick is r.front[-1] and r.pick.prediction.pcc >= p
        for before, after in zip(r.front, r.front[1:]):
            assert before.microseconds <= after.microseconds and after.used < before.used
        assert all(not j.meets for j in r.front[:-1])
        # no candidate whose accuracy was predicted is faster than the pick and meets the target
        assert not [j for j in r.judged if j.meets and j.scored.cycles < r.pick.scored.cycles]
        assert r.baseline is not None and r.pick.microseconds <= r.baseline.microseconds
        assert r.baseline.scored.candidate.math_fidelity == "HiFi4" and r.baseline.scored.candidate.fp32_dest_acc
    # a stricter target picks a slower, more accurate config
    loose, strict = results[0.999].pick, results[0.99999].pick
    assert strict.key() != loose.key() and strict.microseconds > loose.microseconds


def test_a_target_nothing_meets_gives_no_pick():
    r = tune_for_accuracy(small(k=128), AccuracyTarget(max_rel_error=1e-7), jobs=1)
    assert r.pick is None and r.front and not r.front[-1].meets


# ---------------------------------------------------------------------------------------------
# verification

def test_sub_blocks_keep_the_numerics_path():
    assert sub_block_tiles(8, 8, 32, (4, 4)) == (8, 8)                 # 2^21 MACs: the whole output
    rows, cols = sub_block_tiles(128, 448, 128, (4, 14))
    assert rows * cols * 128 * 32 ** 3 <= 1 << 28 and rows % 4 == 0 and cols % 14 == 0
    assert sub_block_tiles(64, 64, 512, (32, 32)) == (4, 4)          # 16 tiles: 2^28 MACs at K = 512
    spec = small(m=2048, n=4096, k=4096, blocking="")
    from kgen.perf.tune.space import candidate_of

    pick = tuned_spec(spec, candidate_of(plan(spec)))
    path = NumericsPath.of_plan(plan(pick))
    sub = sub_block_spec(pick, path, 4, 8)
    assert (sub.m, sub.n, sub.k) == (128, 256, 4096) and NumericsPath.of_plan(plan(sub)) == path


@pytest.mark.slow
def test_the_verified_figures_are_numpy_of_the_golden_bits(host_cxx):
    """A sub-block emulated exact: its PCC is numpy's of the golden model's bits (the emulator's
    bits, which the emulation checks) against float64 of the unconverted inputs."""
    from kgen.perf.tune.accuracy import AccuracyJudge
    from kgen.perf.tune.candidate import Scored
    from kgen.perf.tune.space import candidate_of
    from kgen.proof.golden import golden_from_plan
    from kgen.proof.tiles import quantize

    spec = small(m=256, n=512, k=1024, blocking="")
    p = plan(spec)
    target = AccuracyTarget(min_pcc=0.99)
    j = AccuracyJudge(spec, target, InputSource())(spec, ("bfloat16", "bfloat8_b"),
                                                   Scored(candidate_of(p), 1.0, 1.0, 1.0, 1.0, "", p.policy))
    budget = 4 * 4 * 32 * 32 ** 3                                       # a 4 x 4-tile block of the 8 x 16
    measured, block, whole = emulate_accuracy(spec, j, target, InputSource(), budget=budget)
    assert not whole and block[2] == 1024 and block[0] * block[1] * 1024 <= budget
    rows, cols = block[0] // 32, block[1] // 32
    a, b = InputSource().block(list(range(rows)), list(range(cols)), 32, salt=1)
    sub = sub_block_spec(tuned_spec(spec, j.scored.candidate), j.path, rows, cols)
    out = golden_from_plan(plan(sub), quantize(a, "Float16_b"), quantize(b, "Bfp8_b")).values
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert measured.pcc == pytest.approx(_pcc(out, ref), abs=1e-12)
    assert measured.rel_error == pytest.approx(np.abs(out - ref).max() / np.abs(ref).max(), rel=1e-9)


# ---------------------------------------------------------------------------------------------
# the user's files

def test_inputs_are_read_and_checked(tmp_path):
    spec = small(m=64, n=96, k=128)
    good_a, good_b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(good_a, np.ones((64, 128), np.float16))
    np.save(good_b, np.arange(128 * 96, dtype=np.float64).reshape(128, 96))
    src = load_inputs(spec, (str(good_a), str(good_b)))
    assert src.in0.values.dtype == np.float32 and src.in1.values.shape == (128, 96)
    assert load_inputs(spec, ("-", str(good_b))).in0 is None
    cases = {
        "missing": (str(tmp_path / "nope.npy"), "no such file"),
        "shape": (np.zeros((128, 64), np.float32) + 1, "has shape (128, 64); small_bh's in0 is (M, K) = (64, 128)"),
        "nan": (np.where(np.eye(64, 128) > 0, np.nan, 1.0).astype(np.float32), "not finite"),
        "complex": (np.ones((64, 128), np.complex64), "complex64"),
        "zeros": (np.zeros((64, 128), np.float32), "every value is zero"),
        "text": ("not an array", "not a NumPy .npy array"),
        "object": (np.array([[object()] * 128] * 64), "not a NumPy .npy array"),
    }
    for name, (content, why) in cases.items():
        path = tmp_path / f"{name}.npy"
        if isinstance(content, np.ndarray):
            np.save(path, content, allow_pickle=True)
        elif name == "text":
            path.write_text(content)
        else:
            path = content
        with pytest.raises(TuneError, match="--inputs .*" + why.replace("(", r"\(").replace(")", r"\)")):
            load_inputs(spec, (str(path), "-"))
    with pytest.raises(TuneError, match="at least one file"):
        load_inputs(spec, ("-", "-"))


def test_the_users_rows_and_columns_reach_the_proxy(tmp_path):
    spec = small(m=64, n=64, k=128)
    rng = np.random.default_rng(0)
    b = rng.standard_t(2, (128, 64)).astype(np.float32)
    np.save(tmp_path / "b.npy", b)
    src = load_inputs(spec, ("-", str(tmp_path / "b.npy")))
    _, cols = src.block([0], [1], 4)
    assert np.array_equal(cols, b[:, 32:64])
    normal = predict_accuracy(_plan(in1="bfloat8_b", k=128), 64, 64)
    heavy = predict_accuracy(_plan(in1="bfloat8_b", k=128), 64, 64, src)
    assert heavy.pcc != normal.pcc
