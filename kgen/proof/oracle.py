"""The float64 oracle: the output against the math itself, within a bound derived from the numerics.

Bit-exact agreement between the kernels and the golden model proves the data movement and the
arithmetic, but nothing about a constant both of them read from kgen's activation table. This
module shares nothing with that table: it writes each fused function from its own definition
(PyTorch's, with the published constants) and reads the user's parameters from the spec's text.

The reference of one output element, in float64 on the (quantised) inputs:

    ref = act(sum_k a[m, k] * b[k, n] + bias[n])

and the bound on |out - ref|, one term per stage the element went through:

* the plain matmul: |g - a @ b| for the golden model's output g of the same plan through the same
  flow with a zero bias row, no ReLU, no activation and no untilize copy (same formats, fidelity,
  K-blocking and accumulation), plus one ULP of the output format at g (DST held the value before
  it was rounded to the output);
* a fused bias: one ULP, at the largest of the two operands and their sum, of the format the FPU
  adds in (the unpacker's source format: TF32 with an FP32 DST, else bfloat16; the sum is aligned to
  the larger operand), and one more at the bias when the bias is Float32 (it reaches SrcB in that
  source format);
* an activation f: its Lipschitz constant times the error of its input (plus its step, for a
  function defined piecewise that steps at a boundary: softplus's threshold), plus the accuracy of
  TT's SFPU code for f (configs/oracle/activation_accuracy.toml: measured on TT's LLK code over
  every bfloat16 input, beside what TT's source states), plus one ULP of DST's format for the store
  of its result back to DST (a parameter DST cannot hold, such as hardtanh's 1.14 in bfloat16, is
  rounded);
* the packer's ReLU: Lipschitz 1, exact;
* with untilize_out, the copy through the partials CB back into DST: one ULP of the partials format
  and one of the unpacker's source format;
* the output: one ULP of the output format at the output (the packer rounds).

Block floats take their ULP from the largest magnitude of the 16 values sharing an exponent,
doubled (the rounding may carry into the exponent).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kgen.core.resources import config_table

# The published SELU constants (Klambauer et al., "Self-Normalizing Neural Networks", 2017, eq. 14;
# torch.nn.SELU's documentation gives the same digits).
SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -np.asarray(x, np.float64)))


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    return erf(x)


@dataclass(frozen=True)
class Function:
    """One fused function as its definition gives it: the formula over float64 and the parameters
    in the order the spec writes them, with the definition's defaults."""

    name: str
    formula: Callable[..., np.ndarray]          # (x, *params) -> float64
    defaults: tuple[float, ...] = ()
    # sup |f'| over the reals (for the parameterised ones, a function of the parameters); a
    # test checks each against a float64 derivative on a fine grid
    lipschitz: Callable[..., float] = lambda *ps: 1.0
    # (params) -> the elements it applies to, by their (row, column) inside their 32 x 32 tile, or
    # None: all of them
    covers: Callable[..., Callable[[np.ndarray, np.ndarray], np.ndarray] | None] | None = None
    # (params) -> the size of a jump: a function defined piecewise may step where its input crosses
    # the boundary, so an input error near it costs the step as well as Lipschitz x the error
    jump: Callable[..., float] = lambda *ps: 0.0


def _softplus(x, beta, threshold):
    bx = beta * x
    with np.errstate(over="ignore"):
        return np.where(bx > threshold, x, np.logaddexp(0.0, bx) / beta)


def _softplus_step(beta: float, threshold: float) -> float:
    """The step at beta x = threshold: log1p(exp(-threshold)) / |beta| (unbounded past exp's range)."""
    return math.log1p(math.exp(-threshold)) / abs(beta) if threshold > -700 else math.inf


def _selu(x, scale, alpha):
    return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _sigmoid_faces(mode: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    if mode == 1:
        return lambda r, c: r < 16
    if mode == 2:
        return lambda r, c: c < 16
    return None


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


# torch.nn.functional's definitions; the `_fast` spellings compute the same function less exactly.
_FUNCTIONS = (
    Function("relu", lambda x: np.maximum(x, 0.0)),
    Function("silu", lambda x: x * _sigmoid(x), lipschitz=lambda: 1.0999),
    Function("gelu", _gelu, lipschitz=lambda: 1.12891),
    Function("gelu_tanh", _gelu_tanh, lipschitz=lambda: 1.1290),
    Function("tanh", np.tanh),
    # ttnn's sigmoid with a vector mode (UnaryWithParam(SIGMOID, mode)): 1 the rows of faces 0 and 1
    # (the top 16 rows of each tile), 2 the columns of faces 0 and 2 (the left 16), else every element;
    # the others keep their value
    Function("sigmoid", lambda x, mode: _sigmoid(x), (4.0,),
             lipschitz=lambda mode: 0.25 if mode not in (1, 2) else 1.0, covers=_sigmoid_faces),
    # ttnn's relu_max(x, upper) = max(0, min(x, upper)); relu6 is upper = 6
    Function("relu6", lambda x, top: np.maximum(np.minimum(x, top), 0.0), (6.0,)),
    Function("hardsigmoid", lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0), lipschitz=lambda: 1.0 / 6.0),
    Function("hardtanh", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), (-1.0, 1.0)),
    Function("selu", _selu, (SELU_SCALE, SELU_ALPHA),
             lipschitz=lambda scale, alpha: abs(scale) * max(1.0, abs(alpha))),
    # torch's softplus returns x where beta x > threshold: a step of log1p(exp(-threshold)) / |beta|
    Function("softplus", _softplus, (1.0, 20.0), jump=lambda beta, threshold: _softplus_step(beta, threshold)),
)
FUNCTIONS = {f.name: f for f in _FUNCTIONS}
_FAST = ("gelu_fast", "gelu_tanh_fast", "tanh_fast", "sigmoid_fast")

_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True)
class Fused:
    """The function a spec's `fuse.activation` text names, read from the text alone."""

    spelling: str                     # the spec's text, e.g. `selu` or `hardtanh(-2, 2)`
    function: Function | None         # None: no activation
    params: tuple[float, ...] = ()

    @property
    def name(self) -> str:
        return self.spelling.split("(")[0].strip()

    @property
    def packer_relu(self) -> bool:
        return self.name == "relu"

    def __call__(self, x: np.ndarray, tile_rows: np.ndarray | None = None,
                 tile_cols: np.ndarray | None = None) -> np.ndarray:
        """f(x); where the function covers only some elements of a tile, the element's (row,
        column) inside its tile say which (the others keep x)."""
        if self.function is None:
            return x
        with np.errstate(over="ignore", invalid="ignore"):
            y = self.function.formula(x, *self.params)
        covered = self.covered(tile_rows, tile_cols)
        return y if covered is None else np.where(covered, y, x)

    def covered(self, tile_rows, tile_cols) -> np.ndarray | None:
        """Which elements the function applies to, or None: every one."""
        part = None if self.function is None or self.function.covers is None else self.function.covers(*self.params)
        if part is None:
            return None
        if tile_rows is None or tile_cols is None:
            raise ValueError(f"{self.spelling} covers part of each tile: give the elements' places in their tiles")
        return part(tile_rows, tile_cols)

    def lipschitz(self) -> float:
        return 1.0 if self.function is None else self.function.lipschitz(*self.params)

    def jump(self) -> float:
        return 0.0 if self.function is None else self.function.jump(*self.params)


def fused(spelling: str) -> Fused:
    """Parse a spec's activation text: the name, then its numbers if it is written as a call."""
    m = _CALL.match(spelling or "none")
    if m is None:
        raise ValueError(f"not an activation: {spelling!r}")
    name = m.group(1)
    if name == "none":
        return Fused("none", None)
    base = name[: -len("_fast")] if name in _FAST else name
    fn = FUNCTIONS.get(base)
    if fn is None:
        raise ValueError(f"the float64 oracle has no definition of {name!r}")
    params = tuple(float(p) for p in m.group(2).split(",")) if m.group(2) and m.group(2).strip() else fn.defaults
    if len(params) != len(fn.defaults):
        raise ValueError(f"{name} takes {len(fn.defaults)} parameters, the spec gives {len(params)}")
    return Fused(spelling.strip(), fn, params)


# --------------------------------------------------------------------------------------------
# ULPs of the formats a value passes through

_MANTISSA_BITS = {"Float32": 23, "Float16_b": 7, "Float16": 10, "Tf32": 10}
_BLOCK_MANTISSA_BITS = {"Bfp8_b": 6, "Bfp4_b": 2, "Bfp2_b": 0}      # magnitude bits - 1
_MIN_NORMAL_EXP = {"Float32": -126, "Float16_b": -126, "Float16": -14, "Tf32": -126}


def ulp(values: np.ndarray, fmt: str) -> np.ndarray:
    """One unit in the last place of `fmt` at each of `values` ((rows, cols)): for a block float,
    at the largest magnitude of the 16 columns that share its exponent, doubled."""
    v = np.abs(np.nan_to_num(np.asarray(values, np.float64), nan=0.0, posinf=0.0, neginf=0.0))
    if fmt in _BLOCK_MANTISSA_BITS:
        rows, cols = v.shape
        pad = (-cols) % 16
        blocks = np.pad(v, ((0, 0), (0, pad))).reshape(rows, -1, 16).max(axis=2)
        v = np.repeat(blocks, 16, axis=1)[:, :cols]
        bits, lowest, scale = _BLOCK_MANTISSA_BITS[fmt], -126, 2.0
    else:
        bits, lowest, scale = _MANTISSA_BITS[fmt], _MIN_NORMAL_EXP[fmt], 1.0
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(v > 0, v, 1.0)))
    e = np.where(v > 0, np.maximum(e, lowest), lowest)
    return scale * np.exp2(e - bits)


# --------------------------------------------------------------------------------------------
# The stated accuracy of each SFPU function

@dataclass(frozen=True)
class Accuracy:
    """|f as DST holds it after TT's SFPU code - f(x)| <= ulps * ULP_DST(f(x)) + abs, for x in
    DST's format: the store back to DST included."""

    ulps: float
    abs: float
    stated: str                       # what TT's LLK source says of the function, or "nothing"
    source: str


def accuracy(name: str, *, fp32_dest: bool) -> Accuracy:
    """The row of configs/oracle/activation_accuracy.toml for this spelling and DST mode."""
    if name in ("none", "relu"):
        return Accuracy(0.0, 0.0, "exact", "no SFPU function")
    row = config_table("oracle/activation_accuracy.toml").get(name)
    if row is None:
        raise KeyError(f"configs/oracle/activation_accuracy.toml has no row for {name}")
    entry = row["fp32_dest" if fp32_dest else "bf16_dest"]
    return Accuracy(float(entry[0]), float(entry[1]), row["stated"], row["source"])


# --------------------------------------------------------------------------------------------
# The check

@dataclass(frozen=True)
class Datapath:
    """What decides the bound: the formats a value passes through and the DST mode."""

    out_format: str
    partials_format: str
    untilize_out: bool
    fp32_dest_acc: bool
    fused_bias: bool
    bias_format: str | None
    activation: str                   # the spec's `fuse.activation` text
    rows_per_batch: int               # the logical M: an output row's place in its tile is (row % M) % 32

    @classmethod
    def of_plan(cls, plan) -> Datapath:
        return cls(plan.out_format, plan.partials_format, plan.untilize_out, plan.compute.fp32_dest_acc,
                   plan.fuse_bias, plan.bias_format, plan.spec.activation, plan.spec.m)


@dataclass(frozen=True)
class Float64Check:
    """The output against float64 of the math, element by element within its bound."""

    what: str                         # e.g. "matmul + bias + selu(1.0507, 1.67326)"
    within: bool
    elements: int
    max_abs_err: float
    worst_ratio: float                # max over the elements of |out - ref| / bound
    worst: tuple[int, int]            # (row, column) of that element in the (batch*M, N) output
    worst_out: float
    worst_ref: float
    worst_bound: float
    culprit: str                      # the stage named when the bound is exceeded

    def line(self) -> str:
        if self.within:
            return (f"within its float64 bound: max |err| {self.max_abs_err:.4g}, at most "
                    f"{self.worst_ratio:.2f} of the bound ({self.what})")
        r, c = self.worst
        return (f"BEYOND its float64 bound in {self.culprit}: at [{r}, {c}] kgen {self.worst_out:.6g}, float64 "
                f"{self.worst_ref:.6g} (|err| {abs(self.worst_out - self.worst_ref):.4g} > bound "
                f"{self.worst_bound:.4g}, {self.worst_ratio:.1f} times it)")

    def summary(self) -> dict:
        return {"what": self.what, "within": self.within, "max_abs_err": self.max_abs_err,
                "worst_ratio": self.worst_ratio, "worst": list(self.worst), "worst_out": self.worst_out,
                "worst_ref": self.worst_ref, "worst_bound": self.worst_bound,
                "culprit": None if self.within else self.culprit}


def check(out: np.ndarray, product: np.ndarray, plain: np.ndarray, bias: np.ndarray | None, n: Datapath, *,
          golden_slack: float = 0.0) -> Float64Check:
    """`out` (the kernels' output values), `product` (float64 a @ b), `plain` (the golden model's
    output of the plan through the same flow with a zero bias row and no ReLU or activation:
    golden_from_plan(..., plain=True)), all (rows, N) and sliced to the logical
    output; `bias` (N,) or None. `golden_slack`: an absolute term for fast numerics, whose golden
    model is itself only within a tolerance of the exact one."""
    with np.errstate(invalid="ignore", over="ignore"):
        out64 = np.asarray(out, np.float64)
        plain64 = np.asarray(plain, np.float64)
    act = fused(n.activation)
    dst = "Float32" if n.fp32_dest_acc else "Float16_b"
    stages = ["matmul"]
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(plain64 - product) + ulp(plain64, n.out_format) + golden_slack
        pre = np.array(product, np.float64)
        if n.fused_bias and bias is not None:
            row = np.asarray(bias, np.float64)[None, :]
            pre = pre + row
            # the FPU adds two source-register operands (19 bits: TF32's mantissa with an FP32 DST),
            # aligned to the larger: one ULP of the largest of the operands and the sum (it may
            # cancel far below them, or carry above them); the matmul's operand is the partials,
            # which `plain` holds, not the exact product
            larger = np.maximum(np.maximum(np.abs(plain64), np.abs(row)), np.abs(plain64 + row))
            source = "Tf32" if n.fp32_dest_acc else "Float16_b"      # the 19-bit source registers' format
            err = err + ulp(larger, source) + (ulp(row, source) if n.bias_format == "Float32" else 0.0)
            stages.append("bias")
        rows, cols = np.indices(pre.shape)
        tile_rows, tile_cols = (rows % n.rows_per_batch) % 32, cols % 32
        ref = act(pre, tile_rows, tile_cols)
        if act.function is not None:
            acc = accuracy(act.name, fp32_dest=n.fp32_dest_acc)
            # the SFPU writes its result back to DST, whose format rounds it (the accuracy rows were
            # measured with parameters DST holds exactly: a clamp at 1.14 is stored as bfloat16's 1.133)
            applied = act.lipschitz() * err + act.jump() + (acc.ulps + 1) * ulp(ref, dst) + acc.abs
            covered = act.covered(tile_rows, tile_cols)
            err = applied if covered is None else np.where(covered, applied, err)
            stages.append(act.spelling)
        if n.untilize_out:
            # the result is packed to the partials CB and copied back into DST through the unpacker
            # before the last pack (TT's untilize path): one ULP of each of those formats
            err = err + ulp(ref, n.partials_format) + ulp(ref, "Tf32" if n.fp32_dest_acc else "Float16_b")
        bound = err + ulp(out64, n.out_format)
        diff = np.abs(out64 - ref)
        bad_nan = np.isnan(out64) != np.isnan(ref)
        ratio = np.where(bad_nan, np.inf, np.where(np.isnan(diff), 0.0, diff / np.where(bound > 0, bound, 1e-300)))
    within = bool((ratio <= 1.0 + 1e-9).all())
    flat = int(np.argmax(ratio)) if ratio.size else 0
    idx = np.unravel_index(flat, ratio.shape) if ratio.size else (0, 0)
    culprit = stages[-1] if len(stages) > 1 else "the matmul"
    return Float64Check(" + ".join(stages), within, int(out64.size),
                        float(np.nanmax(diff, initial=0.0)) if diff.size else 0.0,
                        float(ratio[idx]) if ratio.size else 0.0, (int(idx[0]), int(idx[1])),
                        float(out64[idx]) if ratio.size else 0.0, float(ref[idx]) if ratio.size else 0.0,
                        float(bound[idx]) if ratio.size else 0.0, culprit)
