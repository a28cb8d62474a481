"""What TT-Metal would have picked, for `kgen tune`'s comparison table.

TT's automatic choice (ttnn.matmul with no program config: the factory, grid, blocking and compute
config it picks, for every placement; a Refusal where TT's choice is a program kgen does not build)
lives in kgen/gen/ttauto.py, where the planner's `dataflow = auto` reads it too; its names are
re-exported here.

**TT's manual (benchmark) choice.** tests/ttnn/unit_tests/benchmarks/test_benchmark.py
(test_matmul_2d_host_perf) picks per shape; its rows and rule live in benchmarks/gemm_rows.py
(`rows(card, kind)`, `manual_spec(row)`, `placement(row)`), read here when that file exists.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from types import ModuleType
from typing import Mapping

from kgen.core.errors import KgenError
from kgen.gen.spec import MatmulSpec
# re-exported: TT's automatic choice is kgen.gen.ttauto's
from kgen.gen.ttauto import (Choice, Refusal, TTConfig, spec_for_config, tt_auto,  # noqa: F401
                             tt_auto_config, tt_compute, tt_matmul_compute)

# ----------------------------------------------------------------------------------------------
# the benchmark's manual configuration (benchmarks/gemm_rows.py, when present)
# ----------------------------------------------------------------------------------------------

CARDS = {"wormhole_b0": ("n150",), "blackhole": ("p150", "p150_11x10")}


@cache
def gemm_rows() -> ModuleType | None:
    """benchmarks/gemm_rows.py of the checkout (rows of TT's published GEMM tables), or None."""
    from kgen.core.resources import data_dir

    try:
        path = data_dir("configs").parent / "benchmarks" / "gemm_rows.py"
    except FileNotFoundError:
        return None
    if not path.is_file():
        return None
    module_spec = importlib.util.spec_from_file_location("kgen_gemm_rows", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module          # dataclasses look their module up while it loads
    try:
        module_spec.loader.exec_module(module)
    except Exception:       # noqa: BLE001 - a checkout without its data: no manual column
        del sys.modules[module_spec.name]
        return None
    return module


def benchmark_row(spec: MatmulSpec, kind: str = "manual"):
    """The row of TT's published table (kind manual | oob) for this spec's card, shape, dtype and
    fidelity, if there is one (on Blackhole the 13 x 10 table first, the 11 x 10 one when the
    spec's grid is 11 x 10)."""
    mod = gemm_rows()
    if mod is None or spec.batch != 1:
        return None
    cards = CARDS.get(spec.arch, ())
    if spec.grid == (11, 10):
        cards = tuple(reversed(cards))
    for card in cards:
        try:
            rows = mod.rows(card, kind)
        except Exception:   # noqa: BLE001 - missing data
            continue
        for r in rows:
            if (r.m, r.k, r.n) == (spec.m, spec.k, spec.n) and mod.KGEN_DTYPE.get(r.dtype) == spec.dtype_in0 \
                    and spec.dtype_in1 == spec.dtype_in0 == spec.dtype_out \
                    and r.math_fidelity == spec.compute.math_fidelity:
                return r
    return None


def tt_manual(spec: MatmulSpec) -> tuple[Choice, Mapping[str, str] | None] | None:
    """TT's manual config for this spec (a benchmark shape) and its placement, or None."""
    row = benchmark_row(spec, "manual")
    if row is None:
        return None
    from kgen.gen.spec import parse_text, resolve

    mod = gemm_rows()
    try:
        text = mod.manual_spec(row)
        s = resolve(parse_text(text, "<TT manual>"))
        placement = mod.placement(row)
    except (KgenError, Exception) as exc:   # noqa: BLE001 - the row's spec is another module's text
        return Choice(None, None, False, f"TT's manual config does not load: {exc}"), None
    return Choice(None, s, False, "TT's benchmark config"), placement
