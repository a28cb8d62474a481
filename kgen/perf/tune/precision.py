"""`kgen tune --allow-precision`'s predicted error: the golden model on a K-faithful proxy."""

from __future__ import annotations

from functools import cache

from kgen.core.types import TILE_HW
from kgen.gen.plan import plan as make_plan
from kgen.gen.spec import MatmulSpec
from kgen.perf.tune.candidate import TuneConfig

PROXY_TILES = 1          # M and N of the proxy, in tiles: the error of one output tile over the full K


@cache
def _proxy_error(arch: str, kt: int, fidelity: str, fp32: bool, l1acc: bool, in0_fmt: str, in1_fmt: str,
                 out_fmt: str, partials_fmt: str, in0_block_w: int) -> float:
    """Max |error| / max |exact| of the golden model (kgen/proof/golden.py, bit-exact to the
    Tensix numerics of docs/reference/numerics.md) on a 32 x K x 32 proxy with seeded N(0, 1) inputs: the
    same K, formats, fidelity, accumulation path and K-blocking as the candidate, so the rounding of
    every partial sum along K is the candidate's."""
    import numpy as np

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
