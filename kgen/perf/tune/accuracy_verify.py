"""`kgen tune --min-pcc ... --verify`: the pick's accuracy proven by exact emulation, and the pick
built, type-checked, emulated and port-checked as every verified winner is (verify.py).

Exact emulation of a whole large matmul is too slow here (~2^28 multiply-accumulates a minute on
this kind of machine), and fast numerics (float32) cannot prove a precision target. Where the whole
output is larger than EXACT_MAX_MACS, a sub-block of it is emulated over the same K: whole tile rows
of in0 and tile columns of in1 (the user's, spread over the matrix, or seeded N(0, 1) draws
independent of the proxy's), built with the pick's numerics path (formats, fidelity, fp32 dest,
accumulation policy, partials format, K-blocking: all an element's bits depend on,
kgen/proof/golden.py), which is checked before it runs. Every emulated element is then one of the
pick's own elements, bit for bit; the sub-block's relative error is taken against its own max
magnitude, which is at most the whole output's (the check is the stricter for it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from kgen.core.errors import KgenError
from kgen.core.types import TILE_HW
from kgen.gen import dataflow as dataflows
from kgen.gen.plan import PlanError, plan as make_plan
from kgen.gen.spec import BlockSpec, MatmulSpec, MemorySpec
from kgen.perf.tune.accuracy import AccuracyTarget, Judged
from kgen.perf.tune.candidate import tiles
from kgen.perf.tune.precision import InputSource, Measured, NumericsPath, measure, spread
from kgen.perf.tune.space import spec_text, tuned_spec
from kgen.perf.tune.verify import EXACT_MAX_MACS, verify_spec_text


@dataclass(frozen=True)
class AccuracyCheck:
    """What `--verify` found of one pick's accuracy."""

    status: str                      # passed | failed | incomplete
    measured: Measured | None        # the emulated output against float64 of the unconverted inputs
    used: float | None               # the share of the target's allowance it used
    emulated: tuple[int, int, int]   # rows x columns of the output emulated, K (elements)
    whole: bool                      # the whole output, not a sub-block
    output: tuple[int, int]          # the whole output, rows (batch fused) x columns
    errors: tuple[str, ...]
    structural: dict                 # verify_spec_text's verdict on the pick itself
    seconds: float

    def where(self) -> str:
        r, c, k = self.emulated
        if self.whole:
            return f"the whole {r:,} x {c:,} output over K = {k:,}"
        return (f"a {r:,} x {c:,} sub-block of the {self.output[0]:,} x {self.output[1]:,} output over the full "
                f"K = {k:,} (exact emulation of the whole would be {self.output[0] * self.output[1] * k:,} "
                f"multiply-accumulates, above the {EXACT_MAX_MACS:,} exact emulation takes here)")


def sub_block_tiles(mt: int, nt: int, kt: int, per_core: tuple[int, int], budget: int = EXACT_MAX_MACS,
                    batch: int = 1) -> tuple[int, int]:
    """The emulated block, tile rows x columns: the whole output when it is within `budget`
    multiply-accumulates, else whole per_core blocks (fewer where one is too large) within it."""
    if batch == 1 and mt * nt * kt * TILE_HW ** 3 <= budget:
        return mt, nt
    per = budget // (kt * TILE_HW ** 3)
    rows, cols = min(mt, per_core[0]), min(nt, per_core[1])
    while rows * cols > max(per, 1) and rows * cols > 1:
        if rows >= cols:
            rows = max(1, rows // 2)
        else:
            cols = max(1, cols // 2)
    grown = True
    while grown:                     # more whole blocks while the budget allows
        grown = False
        for dr, dc in ((per_core[0], 0), (0, per_core[1])):
            r, c = min(mt, rows + dr), min(nt, cols + dc)
            if (r, c) != (rows, cols) and r * c <= per:
                rows, cols, grown = r, c, True
    return rows, cols


def sub_block_spec(pick: MatmulSpec, path: NumericsPath, rows: int, cols: int) -> MatmulSpec:
    """The pick on `rows` x `cols` output tiles over the same K, with its numerics path: its own
    blocking on the cores that cover the block, else the planner's blocking with the pick's
    in0_block_w and accumulation request (the numerics see nothing else)."""
    block = pick.block
    per_core = (min(block.per_core[0], rows), min(block.per_core[1], cols)) if block.per_core else None
    grid = None if per_core is None else (-(-cols // per_core[1]), -(-rows // per_core[0]))
    if grid is not None and pick.transpose_mcast:
        grid = grid[::-1]
    attempts = [
        replace(pick, m=rows * TILE_HW, n=cols * TILE_HW, batch=1, broadcast_in1=True, grid=grid,
                block=replace(block, per_core=per_core) if per_core == block.per_core else
                BlockSpec(in0_block_w=block.in0_block_w, per_core=per_core)),
        replace(pick, m=rows * TILE_HW, n=cols * TILE_HW, batch=1, broadcast_in1=True, grid=None,
                dataflow=dataflows.DEFAULT.name, memory=MemorySpec(), transpose_mcast=False,
                block=BlockSpec(in0_block_w=block.in0_block_w)),
    ]
    reasons = []
    for spec in attempts:
        try:
            p = make_plan(spec)
        except PlanError as exc:
            reasons.append(exc.rule)
            continue
        if NumericsPath.of_plan(p) == path:
            return spec
        reasons.append(f"another numerics path ({NumericsPath.of_plan(p)})")
    raise KgenError(f"no {rows} x {cols}-tile sub-block of {pick.name} plans with the pick's numerics: "
                    + "; ".join(reasons))


def _bias(cols: list[int], seed: int) -> np.ndarray:
    """Seeded N(0, 1) bias values of the output's tile columns `cols`."""
    return np.concatenate([np.random.default_rng((seed, 2, 2, c)).standard_normal(TILE_HW, np.float32) for c in cols])


def _real(indices: list[int], total: int | None) -> np.ndarray:
    """Which elements of the tiles `indices` lie inside an array of `total` rows (None: all)."""
    at = np.concatenate([np.arange(t * TILE_HW, (t + 1) * TILE_HW) for t in indices])
    return np.ones(at.size, bool) if total is None else at < total


def emulate_accuracy(spec_d: MatmulSpec, j: Judged, target: AccuracyTarget, source: InputSource, *,
                     budget: int = EXACT_MAX_MACS, seed: int = 0) -> tuple[Measured, tuple[int, int, int], bool]:
    """Exact emulation of the pick (whole, or a sub-block over the same K) on `source`'s inputs:
    the output measured against float64 of the unconverted inputs, the block emulated (rows,
    columns, K) and whether it was the whole output. Raises KgenError when the emulation fails (not
    bit-exact to the golden model, a hazard, a deadlock)."""
    from kgen.core.manifest import load_manifest
    from kgen.gen.pipeline import run
    from kgen.proof.chain import run_chain
    from kgen.proof.emulate import Inputs, decode_output, emulate_folder, tensors_of
    from kgen.proof.oracle import fused
    from kgen.proof.tiles import quantize

    pick = tuned_spec(spec_d, j.scored.candidate)
    p = make_plan(pick)
    mt, nt, kt = tiles(pick)
    mt = pick.batch * -(-pick.m // TILE_HW)          # every batch's rows: the elements the user has
    rows, cols = sub_block_tiles(mt, nt, kt, (p.per_core_m, p.per_core_n), budget, pick.batch)
    whole = (rows, cols) == (mt, nt) and pick.batch == 1
    spec = pick if whole else sub_block_spec(pick, j.path, rows, cols)
    in0_rows = source.in0.values.shape[0] if source.in0 is not None else None
    in1_cols = source.in1.values.shape[1] if source.in1 is not None else None
    row_tiles = spread(rows, -(-in0_rows // TILE_HW)) if in0_rows is not None and not whole else list(range(rows))
    col_tiles = spread(cols, -(-in1_cols // TILE_HW)) if in1_cols is not None and not whole else list(range(cols))
    a, b = source.block(row_tiles, col_tiles, kt, salt=1)
    if whole:                         # the whole output: the spec's own shape, zeros past it (tilize's padding)
        a[pick.m:, :] = 0.0
        b[:, pick.n:] = 0.0
    a[:, pick.k:] = 0.0
    b[pick.k:, :] = 0.0
    artifacts = run(spec, "rendered")
    plan = artifacts.plan
    built = run_chain(artifacts, "built").step("built")
    if built is None or built.status != "ok":
        raise KgenError(f"the emulated spec did not build: {built.detail if built else 'no build step'}")
    bias = _bias(col_tiles, seed) if plan.fuse_bias else None
    inputs = Inputs(quantize(a, plan.in0_format), quantize(b, plan.in1_format),
                    None if bias is None else quantize(bias[None, :], plan.bias_format)[0], None)
    e = emulate_folder(built.value.path, plan, numerics="exact", inputs=inputs, parallel=1)
    if not e.ok:
        why = ("not bit-exact to the golden model" if not e.exact_match else
               e.float64.line() if e.float64 is not None and not e.float64.within else
               f"status {e.status}, {len(e.hazards)} hazards")
        raise KgenError(f"the exact emulation failed: {why}")
    _, manifest = load_manifest(built.value.path)
    out_tensor = next(t for t in tensors_of(manifest) if t.name == "out")
    values = decode_output(out_tensor, e.out_bytes)[: a.shape[0], : b.shape[1]]
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if bias is not None:
        ref = ref + bias.astype(np.float64)[None, :]
    r_idx, c_idx = np.indices(ref.shape)
    ref = fused(pick.activation)(ref, r_idx % TILE_HW, c_idx % TILE_HW)
    real_rows = _real(row_tiles, in0_rows if not whole else pick.m)
    real_cols = _real(col_tiles, in1_cols if not whole else pick.n)
    keep = np.ix_(real_rows, real_cols)
    return measure(values[keep], ref[keep]), (int(real_rows.sum()), int(real_cols.sum()), pick.k), whole


def verify_accuracy(spec_d: MatmulSpec, j: Judged, target: AccuracyTarget, source: InputSource, *,
                    budget: int = EXACT_MAX_MACS, seed: int = 0, structural: bool = True) -> AccuracyCheck:
    """The pick's accuracy by exact emulation, then (when it meets the target) the pick itself
    through verify.py's job: build, type-check, emulate and port-check. Never raises for a failing
    pick: the verdict says why."""
    start = time.perf_counter()
    output = (spec_d.batch * spec_d.m, spec_d.n)
    try:
        measured, emulated, whole = emulate_accuracy(spec_d, j, target, source, budget=budget, seed=seed)
    except KgenError as exc:
        return AccuracyCheck("failed", None, None, (0, 0, spec_d.k), False, output,
                             (f"exact emulation: {getattr(exc, 'message', str(exc))}",), {},
                             time.perf_counter() - start)
    used = target.used(measured.pcc, measured.rel_error)
    if used > 1.0:
        return AccuracyCheck("failed", measured, used, emulated, whole, output,
                             (f"the emulated output misses the target: {target.margin(measured.pcc, measured.rel_error)}",),
                             {}, time.perf_counter() - start)
    verdict = verify_spec_text(spec_text(spec_d, j.scored.candidate), "auto", seed) if structural else \
        {"status": "passed", "errors": [], "steps": {}}
    status = verdict["status"]
    return AccuracyCheck(status, measured, used, emulated, whole, output, tuple(verdict["errors"]), verdict,
                         time.perf_counter() - start)
