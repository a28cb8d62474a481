"""The predicted error of a `kgen tune` candidate: the golden model on a K-faithful proxy.

Two measures:

- `predicted_error` (`--allow-precision`'s column): max |golden - exact| / max |exact| on a 32 x K x
  32 proxy, exact being float64 of the inputs already converted to the candidate's formats.
- `predict_accuracy` (`--min-pcc`, `--max-rel-error`): the PCC and the relative error (max |error|
  over the output's max magnitude) of the candidate's whole M x N output against float64 of the
  inputs *before* any conversion to a device format (the user's arrays, or seeded N(0, 1) float32
  draws): a weight format's rounding is part of the error. The proxy computes a block of the output
  over the full K with the candidate's formats, fidelity, accumulation path and K-blocking (the only
  blocking the numerics see: kgen/proof/golden.py), as large as PROXY_MACS allows. The PCC is the
  proxy's. The relative error is a ratio of two maxima over M x N elements, and the error's tail is
  heavier than the output's, so it grows with M and N: both maxima are extrapolated from the
  proxy's elements to the output's count by a fitted Weibull tail (`tail_max`), and their ratio
  scaled by REL_ERROR_SCALE, measured against exact emulation in benchmarks/tune_precision.py
  (docs/tune.md).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from kgen.core.types import TILE_HW
from kgen.gen.plan import Plan, plan as make_plan
from kgen.gen.spec import MatmulSpec
from kgen.perf.tune.candidate import TuneConfig

PROXY_TILES = 1          # M and N of --allow-precision's proxy, in tiles: one output tile over the full K
PROXY_MACS = 1 << 24     # the accuracy proxy's size: ~0.3-1 s of the exact golden model here
PROXY_TILES_MAX = 4      # at most 4 x 4 output tiles (16,384 elements)
TAIL_SHARE = 0.1         # the top 10 % of the proxy's elements fit the tail
# The extrapolated ratio of the two maxima ran 0.89x of the emulated relative error (median over the
# 288 points of benchmarks/tune_precision.py's grid, the same for every format, K, fidelity and
# policy; p10 0.75x, p90 0.98x): the error's tail grows faster than the fit says. The prediction is
# scaled by its inverse, so that it errs neither way on the grid (docs/tune.md, with the growth set)
REL_ERROR_SCALE = 1.12


@cache
def _proxy_error(arch: str, kt: int, fidelity: str, fp32: bool, l1acc: bool, in0_fmt: str, in1_fmt: str,
                 out_fmt: str, partials_fmt: str, in0_block_w: int) -> float:
    """Max |error| / max |exact| of the golden model (kgen/proof/golden.py, bit-exact to the
    Tensix numerics of docs/reference/numerics.md) on a 32 x K x 32 proxy with seeded N(0, 1) inputs: the
    same K, formats, fidelity, accumulation path and K-blocking as the candidate, so the rounding of
    every partial sum along K is the candidate's."""
    from kgen.proof.golden import golden_matmul
    from kgen.proof.tiles import quantize

    rng = np.random.default_rng(0)
    m = n = PROXY_TILES * TILE_HW
    k = kt * TILE_HW
    a = quantize(rng.standard_normal((m, k)).astype(np.float32), in0_fmt)
    b = quantize(rng.standard_normal((k, n)).astype(np.float32), in1_fmt)
    out = golden_matmul(a, b, fidelity=fidelity, fp32_dest_acc=fp32, packer_l1_acc=l1acc, in0_format=in0_fmt,
                        in1_format=in1_fmt, out_format=out_fmt, partials_format=partials_fmt,
                        in0_block_w=in0_block_w, arch=arch).values
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(out - exact)) / max(np.max(np.abs(exact)), 1e-30))


def predicted_error(spec: MatmulSpec, c: TuneConfig) -> float:
    p = make_plan(c.apply(spec))
    return _proxy_error(p.arch.name, p.kt, p.compute.math_fidelity, p.compute.fp32_dest_acc, p.l1_acc_enabled,
                        p.in0_format, p.in1_format, p.out_format, p.partials_format, p.in0_block_w)


# ----------------------------------------------------------------------------------------------
# the accuracy of the whole output (--min-pcc, --max-rel-error)

@dataclass(frozen=True, order=True)
class NumericsPath:
    """Everything a matmul's numerics depend on (kgen/proof/golden.py's MatmulConfig without the
    fusion): two plans with the same path give the same bits for the same inputs."""

    arch: str
    kt: int
    fidelity: str
    fp32_dest_acc: bool
    l1_acc: bool                     # the planner's decision (Plan.l1_acc_enabled), not the request
    in0_format: str
    in1_format: str
    out_format: str
    partials_format: str
    in0_block_w: int

    @classmethod
    def of_plan(cls, p: Plan) -> NumericsPath:
        return cls(p.arch.name, p.kt, p.compute.math_fidelity, p.compute.fp32_dest_acc, p.l1_acc_enabled,
                   p.in0_format, p.in1_format, p.out_format, p.partials_format, p.in0_block_w)


@dataclass(frozen=True)
class OperandData:
    """One operand the user gave (`--inputs`): its values as float32, (rows, K) for in0 and (K,
    columns) for in1, and a digest that names them in caches."""

    values: np.ndarray
    path: str
    digest: str

    @classmethod
    def of(cls, values: np.ndarray, path: str) -> OperandData:
        v = np.ascontiguousarray(values, dtype=np.float32)
        return cls(v, path, hashlib.sha256(v.tobytes() + str(v.shape).encode()).hexdigest()[:16])


@dataclass(frozen=True)
class InputSource:
    """Where the accuracy proxy and the verification take their inputs: the user's arrays where
    given (`--inputs`), else seeded N(0, 1) float32 draws."""

    in0: OperandData | None = None
    in1: OperandData | None = None
    seed: int = 0

    @property
    def key(self) -> str:
        return (f"in0={self.in0.digest if self.in0 else 'normal'},in1={self.in1.digest if self.in1 else 'normal'},"
                f"seed={self.seed}")

    def describe(self) -> str:
        def one(name: str, d: OperandData | None) -> str:
            return f"{name} from {d.path}" if d else f"{name} seeded N(0, 1)"
        return f"{one('in0', self.in0)}, {one('in1', self.in1)}"

    def block(self, rows: list[int], cols: list[int], kt: int, salt: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """in0's tile rows `rows` (32 each, (len(rows) * 32, Kt * 32)) and in1's tile columns `cols`,
        unconverted float32; past the user's array (a shape short of whole tiles) zeros, as ttnn's
        tilize pads. Random operands are drawn per tile row / column from (seed, salt, index), so the
        same row is the same values in the proxy and in verification."""
        k = kt * TILE_HW
        a = np.concatenate([self._in0_rows(r, k, salt) for r in rows])
        b = np.concatenate([self._in1_cols(c, k, salt) for c in cols], axis=1)
        return a, b

    def _in0_rows(self, tile_row: int, k: int, salt: int) -> np.ndarray:
        if self.in0 is None:
            return np.random.default_rng((self.seed, salt, 0, tile_row)).standard_normal((TILE_HW, k), np.float32)
        v = self.in0.values[tile_row * TILE_HW:(tile_row + 1) * TILE_HW]
        out = np.zeros((TILE_HW, k), np.float32)
        out[:v.shape[0], :v.shape[1]] = v
        return out

    def _in1_cols(self, tile_col: int, k: int, salt: int) -> np.ndarray:
        if self.in1 is None:
            return np.random.default_rng((self.seed, salt, 1, tile_col)).standard_normal((k, TILE_HW), np.float32)
        v = self.in1.values[:, tile_col * TILE_HW:(tile_col + 1) * TILE_HW]
        out = np.zeros((k, TILE_HW), np.float32)
        out[:v.shape[0], :v.shape[1]] = v
        return out


RANDOM_INPUTS = InputSource()


def spread(count: int, total: int) -> list[int]:
    """`count` indices out of `total`, evenly spread from the first to the last (all when count >= total)."""
    if count >= total:
        return list(range(total))
    if count == 1:
        return [0]
    return sorted({round(i * (total - 1) / (count - 1)) for i in range(count)})


def proxy_tiles(mt: int, nt: int, kt: int, budget: int = PROXY_MACS) -> tuple[int, int]:
    """The proxy's output in tiles, rows x columns: at most PROXY_TILES_MAX a side and the output's,
    within `budget` multiply-accumulates over the full K; at least one tile."""
    rows, cols = min(PROXY_TILES_MAX, mt), min(PROXY_TILES_MAX, nt)
    while rows * cols * kt * TILE_HW ** 3 > budget and rows * cols > 1:
        if rows >= cols:
            rows -= 1
        else:
            cols -= 1
    return rows, cols


def tail_max(values: np.ndarray, count: int) -> float:
    """The expected largest of `count` draws of |values|'s distribution: the sample's own maximum
    when it has that many, else a Weibull tail, P(|x| > t) = exp(-(t / s)^c), fitted by least
    squares to its top TAIL_SHARE on the empirical survival function and read at 1 - 1/count:
    s (ln count)^(1/c). c is free, so a Gaussian's tail (c ~ 2, the output's) and a heavier one
    (the error's) are each extrapolated as they are; never below the sample's own maximum."""
    x = np.sort(np.abs(np.asarray(values, np.float64)).ravel())
    if x.size == 0:
        return 0.0
    if count <= x.size:
        return float(x[-1])
    top = max(int(x.size * TAIL_SHARE), min(10, x.size))
    ranks = np.arange(x.size - top, x.size)
    tail, survival = x[ranks], (x.size - ranks) / (x.size + 1.0)
    keep = tail > 0
    if np.unique(tail[keep]).size < 3:
        return float(x[-1])                 # too few distinct values to fit a tail
    c, intercept = np.polyfit(np.log(tail[keep]), np.log(-np.log(survival[keep])), 1)
    if not c > 0:
        return float(x[-1])
    return float(max(x[-1], math.exp(-intercept / c) * math.log(count) ** (1.0 / c)))


@dataclass(frozen=True)
class ErrorPrediction:
    """The predicted accuracy of a whole output against float64 of the unconverted inputs."""

    pcc: float
    rel_error: float                 # max |error| / max |reference| over the output's elements
    proxy: tuple[int, int]           # the proxy's output, rows x columns (elements), over the full K
    elements: int                    # the output's elements the relative error is extrapolated to


@dataclass(frozen=True)
class Measured:
    """The output of one computation against its float64 reference: the figures a target reads."""

    pcc: float
    rel_error: float                 # max |error| / max |reference|
    max_abs_error: float
    max_reference: float


def measure(out: np.ndarray, reference: np.ndarray) -> Measured:
    """PCC (kgen.proof.numerics.pcc, TT's tests' measure) and the relative error of `out` against
    `reference` (float64)."""
    from kgen.proof.numerics import pcc

    ref = np.asarray(reference, np.float64)
    err = np.abs(np.asarray(out, np.float64) - ref)
    scale = float(np.abs(ref).max(initial=0.0))
    worst = float(err.max(initial=0.0))
    return Measured(pcc(out, ref), worst / scale if scale > 0 else (0.0 if worst == 0 else math.inf), worst, scale)


def proxy_output(plan: Plan, source: InputSource, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The golden model's output (exact numerics) of the plan's matmul (golden_from_plan's plain
    flow: every numerics setting the plan holds, no fusion) on `rows` x `cols` output tiles of
    `source` over the full K, and float64 of the unconverted inputs: (out, reference)."""
    from kgen.proof.golden import golden_from_plan
    from kgen.proof.tiles import quantize

    mt = -(-source.in0.values.shape[0] // TILE_HW) if source.in0 is not None else rows
    nt = -(-source.in1.values.shape[1] // TILE_HW) if source.in1 is not None else cols
    a, b = source.block(spread(rows, mt), spread(cols, nt), plan.kt)
    out = golden_from_plan(plan, quantize(a, plan.in0_format), quantize(b, plan.in1_format), plain=True).values
    return out, a.astype(np.float64) @ b.astype(np.float64)


_PROXIES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
_PREDICTIONS: dict[tuple, ErrorPrediction] = {}


def predict_accuracy(plan: Plan, m: int, n: int, source: InputSource = RANDOM_INPUTS) -> ErrorPrediction:
    """The predicted PCC and relative error of an m x n output (elements; batch fused into m)
    computed as `plan` computes it, from the proxy's (out, reference), both cached per numerics
    path (NumericsPath: the plans of one path give the same bits), size and source."""
    path = NumericsPath.of_plan(plan)
    rows, cols = proxy_tiles(-(-m // TILE_HW), -(-n // TILE_HW), path.kt)
    key = (path, rows, cols, source.key)
    if (key, m * n) in _PREDICTIONS:
        return _PREDICTIONS[key, m * n]
    if key not in _PROXIES:
        _PROXIES[key] = proxy_output(plan, source, rows, cols)
    out, ref = _PROXIES[key]
    err = np.asarray(out, np.float64) - ref
    scale = tail_max(ref, m * n)
    rel = REL_ERROR_SCALE * tail_max(err, m * n) / scale if scale > 0 else 0.0
    pred = _PREDICTIONS[key, m * n] = ErrorPrediction(measure(out, ref).pcc, rel, (rows * TILE_HW, cols * TILE_HW),
                                                      m * n)
    return pred


_FLOORS: dict[tuple, ErrorPrediction] = {}


def floor_accuracy(arch: str, kt: int, in0_format: str, in1_format: str, fidelity: str, m: int, n: int,
                   source: InputSource = RANDOM_INPUTS) -> ErrorPrediction:
    """A floor under the error of every path with this arch, K, input formats and fidelity,
    whatever its accumulation: the inputs converted and their products taken at the fidelity
    (the golden model's fast numerics), summed in float32 in one K-block into a float32 output.
    Every path adds its accumulation's and its output's rounding to this error, which the device
    cannot undo: it lets a search skip every path of formats or a fidelity that cannot meet a
    target without predicting one (a statistical floor, on the proxy's inputs: it is used with a
    margin, accuracy.FLOOR_MARGIN)."""
    from kgen.proof.golden import golden_matmul
    from kgen.proof.tiles import quantize

    rows, cols = proxy_tiles(-(-m // TILE_HW), -(-n // TILE_HW), kt)
    key = (arch, kt, in0_format, in1_format, fidelity, rows, cols, source.key, m * n)
    if key not in _FLOORS:
        mt = -(-source.in0.values.shape[0] // TILE_HW) if source.in0 is not None else rows
        nt = -(-source.in1.values.shape[1] // TILE_HW) if source.in1 is not None else cols
        a, b = source.block(spread(rows, mt), spread(cols, nt), kt)
        out = golden_matmul(quantize(a, in0_format), quantize(b, in1_format), fidelity=fidelity, fp32_dest_acc=True,
                            packer_l1_acc=False, in0_format=in0_format, in1_format=in1_format, out_format="Float32",
                            arch=arch, mode="fast").values
        ref = a.astype(np.float64) @ b.astype(np.float64)
        scale = tail_max(ref, m * n)
        rel = tail_max(np.asarray(out, np.float64) - ref, m * n) / scale if scale > 0 else 0.0
        _FLOORS[key] = ErrorPrediction(measure(out, ref).pcc, rel, (rows * TILE_HW, cols * TILE_HW), m * n)
    return _FLOORS[key]
