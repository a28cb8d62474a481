"""The float64 oracle (kgen/proof/oracle.py) against the math: its formulas, constants and Lipschitz
constants from float64 and the published definitions, its ULPs from the formats' definitions, and
its verdict on outputs doctored beyond the bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgen.gen import activations as A
from kgen.proof import oracle as O


def test_selu_constants_are_the_published_ones():
    # Klambauer et al. 2017, eq. 14: alpha_01 ~ 1.6732632423543772848170429916717,
    # lambda_01 ~ 1.0507009873554804934193349852946
    assert O.SELU_ALPHA == pytest.approx(1.6732632423543772, abs=1e-15)
    assert O.SELU_SCALE == pytest.approx(1.0507009873554805, abs=1e-15)
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    want = [1.0507009873554805 * (v if v > 0 else 1.6732632423543772 * math.expm1(v)) for v in x]
    assert np.allclose(O.fused("selu")(x), want, rtol=0, atol=1e-15)


def test_formulas_are_the_definitions():
    x = np.array([-6.0, -3.0, -0.5, 0.0, 0.5, 3.0, 25.0])
    gelu = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    assert np.allclose(O.fused("gelu")(x), gelu, rtol=0, atol=1e-15)
    assert np.allclose(O.fused("gelu_fast")(x), gelu, rtol=0, atol=1e-15)     # same function, less exact kernel
    assert np.allclose(O.fused("sigmoid")(x), 1 / (1 + np.exp(-x)), rtol=1e-15, atol=1e-300)
    assert np.allclose(O.fused("silu")(x), x / (1 + np.exp(-x)), rtol=1e-14, atol=1e-300)
    assert np.allclose(O.fused("tanh_fast")(x), np.tanh(x), rtol=0, atol=0)
    gt = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))) for v in x]
    assert np.allclose(O.fused("gelu_tanh")(x), gt, rtol=0, atol=1e-14)
    assert O.fused("relu6")(x).tolist() == [0, 0, 0, 0, 0.5, 3, 6]
    assert O.fused("relu6(2.5)")(x).tolist() == [0, 0, 0, 0, 0.5, 2.5, 2.5]
    assert O.fused("hardtanh(-2, 2)")(x).tolist() == [-2, -2, -0.5, 0, 0.5, 2, 2]
    assert O.fused("hardsigmoid")(x).tolist() == [0, 0, 0.5 - 1 / 12, 0.5, 0.5 + 1 / 12, 1, 1]
    sp = O.fused("softplus(2, 10)")(x)
    assert sp[-1] == 25.0 and sp[0] == pytest.approx(math.log1p(math.exp(-12.0)) / 2, rel=1e-14)
    assert O.fused("relu")(x).tolist() == [0, 0, 0, 0, 0.5, 3, 25]
    assert O.fused("none")(x) is x


@pytest.mark.parametrize("spelling", ["silu", "gelu", "gelu_tanh", "tanh", "sigmoid", "relu6", "hardsigmoid",
                                      "hardtanh(-1, 1)", "selu", "selu(1.5, 0.5)", "softplus(1, 20)",
                                      "softplus(-2, 5)"])
def test_lipschitz_constants_bound_the_float64_derivative(spelling):
    f = O.fused(spelling)
    x = np.linspace(-40, 40, 800001)
    y = f(x)
    steps = np.abs(np.diff(y))
    if spelling.startswith("softplus"):     # the threshold's step: the bound's jump term, exactly
        beta, threshold = f.params
        across = (x[:-1] * beta <= threshold) != (x[1:] * beta <= threshold)
        assert abs(steps[across].max() - f.jump()) <= 2e-4      # the step, plus at most a grid interval's slope
        steps = steps[~across]
        x = x[:-1][~across]
    slope = (steps / 1e-4).max()
    assert slope <= f.lipschitz() * (1 + 1e-6)
    assert slope >= f.lipschitz() * 0.999               # not loose either


def test_defaults_are_the_published_ones_and_kgen_passes_their_float32():
    # TT's and torch's defaults; kgen's table passes their float32 bits (the wheel test checks the
    # bits are 0.81.1's)
    for spelling, params in [("hardtanh", (-1.0, 1.0)), ("softplus", (1.0, 20.0)), ("relu6", (6.0,)),
                             ("selu", (O.SELU_SCALE, O.SELU_ALPHA))]:
        assert O.fused(spelling).params == params
        act = A.parse(spelling)
        kernel = [act.p0, act.p1][: len(params)]
        assert kernel == [int(np.float32(p).view(np.uint32)) for p in params], spelling


def test_sigmoid_vector_modes_cover_faces():
    x = np.full((64, 64), 1.0)
    rows, cols = np.indices(x.shape) % 32
    top = O.fused("sigmoid(1)")(x, rows, cols)
    assert (top[rows < 16] == 1 / (1 + math.exp(-1))).all() and (top[rows >= 16] == 1.0).all()
    left = O.fused("sigmoid_fast(2)")(x, rows, cols)
    assert (left[cols < 16] < 1).all() and (left[cols >= 16] == 1.0).all()
    assert (O.fused("sigmoid(4)")(x, rows, cols) < 1).all() and (O.fused("sigmoid(0)")(x, rows, cols) < 1).all()


def test_ulps_follow_the_formats():
    v = np.array([[1.0, 1.5, -3.0, 0.0] + [0.0] * 12])
    assert O.ulp(v, "Float16_b")[0, :3].tolist() == [2 ** -7, 2 ** -7, 2 ** -6]
    assert O.ulp(v, "Float32")[0, :3].tolist() == [2 ** -23, 2 ** -23, 2 ** -22]
    assert O.ulp(v, "Float16_b")[0, 3] == 2.0 ** (-126 - 7)
    # block floats: the block's largest magnitude (3 -> 2^1), 6 magnitude bits after the leading
    # one (Bfp8_b) or 2 (Bfp4_b), doubled for the carry into the exponent
    assert set(O.ulp(v, "Bfp8_b")[0].tolist()) == {2 * 2.0 ** (1 - 6)}
    assert set(O.ulp(v, "Bfp4_b")[0].tolist()) == {2 * 2.0 ** (1 - 2)}


def test_every_sfpu_spelling_has_an_accuracy_row_with_its_source():
    for spelling in A.SFPU_SPELLINGS:
        for fp32 in (False, True):
            acc = O.accuracy(spelling, fp32_dest=fp32)
            assert acc.ulps >= 0 and acc.abs >= 0 and acc.source and acc.stated
    # TT's own statement of the tanh LUT (ckernel_sfpu_tanh.h: 0.018352 max absolute error on the
    # bfloat16 sweep) is inside the row's bound: 4 ULPs of bf16 at |tanh| < 1 plus the absolute term
    acc = O.accuracy("tanh_fast", fp32_dest=False)
    assert acc.ulps * 2 ** -8 + acc.abs >= 0.018352


def _datapath(activation: str, bias: bool = False) -> O.Datapath:
    return O.Datapath("Float16_b", "Float16_b", False, False, bias, "Float16_b" if bias else None, activation, 32)


def test_the_verdict_is_within_for_the_exact_math_and_beyond_for_a_wrong_constant():
    rng = np.random.default_rng(0)
    product = rng.standard_normal((32, 32)) * 4
    plain = np.asarray(product, np.float32)                 # a matmul error of float32 rounding
    good = np.asarray(O.fused("selu")(plain.astype(np.float64)), np.float32)
    verdict = O.check(good, product, plain, None, _datapath("selu"))
    assert verdict.within, verdict.line()
    # the scale and alpha swapped, as tenstorrent/tt-metal@fcff0cab's factory passed them
    wrong = np.asarray(O.fused(f"selu({O.SELU_ALPHA}, {O.SELU_SCALE})")(plain.astype(np.float64)), np.float32)
    verdict = O.check(wrong, product, plain, None, _datapath("selu"))
    assert not verdict.within
    assert "selu" in verdict.line() and "BEYOND" in verdict.line()
    r, c = verdict.worst
    assert verdict.worst_out == pytest.approx(float(wrong[r, c])) and verdict.worst_ref == pytest.approx(
        float(O.fused("selu")(product)[r, c]))


def test_a_wrong_bias_is_beyond_the_bound():
    rng = np.random.default_rng(1)
    product = rng.standard_normal((32, 32))
    bias = rng.standard_normal(32)
    plain = product.astype(np.float32)
    good = (plain + bias[None, :]).astype(np.float32)
    assert O.check(good, product, plain, bias, _datapath("none", bias=True)).within
    shifted = (plain + np.roll(bias, 1)[None, :]).astype(np.float32)          # the bias one column off
    verdict = O.check(shifted, product, plain, bias, _datapath("none", bias=True))
    assert not verdict.within and "bias" in verdict.line()


def test_a_packer_relu_that_passes_negatives_is_beyond_the_bound():
    product = np.linspace(-4, 4, 32 * 32).reshape(32, 32)
    plain = product.astype(np.float32)
    assert O.check(np.maximum(plain, 0), product, plain, None, _datapath("relu")).within
    verdict = O.check(plain, product, plain, None, _datapath("relu"))
    assert not verdict.within and "relu" in verdict.line()
