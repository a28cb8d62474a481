"""`kgen tune`'s search space: what a candidate fixes, which of its values a spec leaves open, the
tensors' placement, and the winner written back as a spec.

- **Space.** A candidate fixes the grid, per_core M x N, out_block, in0_block_w, out_subblock, the
  accumulation request (compute.packer_l1_acc) and the dataflow; with `allow_precision` also the
  math fidelity and fp32 dest accumulation. Shape, dtypes, batch, fusion and untilize stay the
  spec's. `space="auto"` searches what the spec leaves open: the values written `auto` (grid and
  block fields), the dataflow when the spec has no `dataflow =` line, and the accumulation policy
  when packer_l1_acc comes from TTNN's defaults rather than the spec or its preset. `space="all"`
  searches every one of them whatever the spec says.
- **Legality.** Values are drawn from the divisor structure of the problem (a value that does not
  divide never plans), and the planner (`kgen.gen.plan.plan`) is the only filter: a candidate is
  legal when it plans. No rule is restated here. The tensors' placement is the spec's `memory { }`
  (a `placement` argument is written into it first), so with a sharded in0 or output every
  candidate carries it and must pass the planner's shard rules, is predicted as the sharded program
  kgen builds, and is written out (`spec_text`) with it: what `kgen check` accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping

from kgen.core.errors import KgenError
from kgen.core.types import Placement
from kgen.gen import dataflow as dataflows
from kgen.gen.plan import Plan
from kgen.gen.shards import with_shard_defaults
from kgen.gen.spec import MatmulSpec
from kgen.perf.tune.candidate import TuneConfig, batched_in1

FIDELITIES = ("LoFi", "HiFi2", "HiFi3", "HiFi4")
# the factories whose per_core blocks tune searches (Dataflow.draws_blocks)
DATAFLOWS = tuple(d.name for d in dataflows.REGISTRY if d.draws_blocks)
ONE_D = dataflows.ONE_D   # the 1D dataflows and the per_core axis that covers its tiles
SPACES = ("auto", "all")
DEFAULT_BUDGET = 1_000_000


class TuneError(KgenError):
    """Bad tune input (a flag value, a spec with nothing legal)."""


def candidate_of(p: Plan) -> TuneConfig:
    """The candidate a plan realises (TT's auto choice, the spec as written)."""
    return TuneConfig(grid=p.grid_requested, per_core=(p.per_core_m, p.per_core_n),
                     out_block=(p.out_block_h, p.out_block_w), in0_block_w=p.in0_block_w,
                     out_subblock=(p.out_subblock_h, p.out_subblock_w), packer_l1_acc=p.compute.packer_l1_acc,
                     dataflow=p.spec.dataflow, math_fidelity=p.compute.math_fidelity,
                     fp32_dest_acc=p.compute.fp32_dest_acc, memory=p.spec.memory)


@dataclass(frozen=True)
class Space:
    """Which values the search varies, and the fixed ones."""

    mode: str
    searched: tuple[str, ...]        # names of the searched fields
    fixed_grid: tuple[int, int] | None
    fixed: Mapping[str, object]      # field -> the spec's value for fields not searched
    padded: bool                     # also per_core values that do not divide (TT's padded last block)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def dataflow_options(spec: MatmulSpec) -> tuple[str, ...]:
    """The dataflows the search may give this spec: with one in1 per batch only the factories that take
    it (the multicast ones fuse the batch and TT refuses a batched in1 there: base.BATCHED_IN1_RULE)."""
    if batched_in1(spec):
        return tuple(d.name for d in dataflows.REGISTRY if dataflows.takes_batched_in1(d) and d.draws_blocks)
    return DATAFLOWS


def search_space(spec: MatmulSpec, mode: str = "auto", allow_precision: bool = False,
                 padded: bool = True, keep: Iterable[str] = ()) -> Space:
    """The searched and fixed fields; `keep` names fields held at the spec's value whatever the mode
    (e.g. the dataflow where a placement only suits one)."""
    keep = set(keep)
    if mode not in SPACES:
        raise TuneError(f"--space {mode!r}: expected one of {', '.join(SPACES)}")
    if spec.dataflow in dataflows.BY_NAME:     # a shard the spec gives fixes the grid and per_core it implies
        spec = with_shard_defaults(spec, dataflows.get(spec.dataflow).is_1d)
    b = spec.block
    searched: list[str] = []
    fixed: dict[str, object] = {}

    def decide(name: str, open_: bool, value: object) -> None:
        if name not in keep and (mode == "all" or open_):
            searched.append(name)
        else:
            fixed[name] = value

    decide("grid", spec.grid is None, spec.grid)
    decide("per_core", b.per_core is None, b.per_core)
    decide("out_block", b.out_block is None, b.out_block)
    decide("in0_block_w", b.in0_block_w is None, b.in0_block_w)
    decide("out_subblock", b.out_subblock is None, b.out_subblock)
    # `dataflow = auto` leaves the factory to a choice, as no dataflow line does: the search makes it
    decide("dataflow", "dataflow" not in spec.spans or spec.dataflow == dataflows.AUTO, _kept_dataflow(spec))
    decide("packer_l1_acc", _from_ttnn_defaults(spec, "compute.packer_l1_acc"), spec.compute.packer_l1_acc)
    if allow_precision:
        searched += ["math_fidelity", "fp32_dest_acc"]
    else:
        fixed["math_fidelity"] = spec.compute.math_fidelity
        fixed["fp32_dest_acc"] = spec.compute.fp32_dest_acc
    # a batched in1 runs the reuse factory's batch loop, which has no padded blocks (Mt % per_core_M == 0)
    return Space(mode, tuple(searched), None if "grid" in searched else spec.grid, fixed,
                 padded and not batched_in1(spec))


def _kept_dataflow(spec: MatmulSpec) -> str:
    """The factory a held `dataflow` names: the spec's, or under `auto` (no dataflow line) the one
    ttnn.matmul's rule picks (kgen/gen/ttauto.py)."""
    if spec.dataflow != dataflows.AUTO:
        return spec.dataflow
    from kgen.gen.ttauto import tt_auto

    choice = tt_auto(spec)
    if choice.config is None:
        raise TuneError(f"the dataflow is held, but dataflow = auto has no factory here: {choice.note}")
    return choice.config.dataflow


def _from_ttnn_defaults(spec: MatmulSpec, key: str) -> bool:
    """Whether a compute value comes from TTNN's defaults (configs/compute/ttnn_default.kspec), not
    from the spec or a preset it names."""
    from kgen.gen.spec import DEFAULT_COMPUTE

    span = spec.spans.get(key)
    return span is None or Path(span.path).name == f"{DEFAULT_COMPUTE}.kspec"


# `placement` values (kgen.perf.model.predict's, as benchmarks/gemm_rows.placement writes them) and
# the memory {} value that builds each: TT's benchmark rows block-shard in0 and the output
_MEMORY_OF = {("in0", "dram"): Placement.DRAM, ("in0", "l1"): Placement.L1,
              ("in0", "sharded"): Placement.L1_BLOCK_SHARDED,
              **{("in0", p.value): p for p in (Placement.L1_BLOCK_SHARDED, Placement.L1_HEIGHT_SHARDED)},
              ("in1", "dram"): Placement.DRAM, ("in1", "l1"): Placement.L1,
              ("out", "dram"): Placement.DRAM, ("out", "l1"): Placement.L1,
              ("out", "sharded"): Placement.L1_BLOCK_SHARDED,
              ("out", Placement.L1_BLOCK_SHARDED.value): Placement.L1_BLOCK_SHARDED}


def with_placement(spec: MatmulSpec, placement: Mapping[str, str] | None) -> MatmulSpec:
    """The spec with its tensors where `placement` puts them, as its `memory { }` (the planner's
    shard rules then apply to every candidate). None or {} leaves the spec's own memory."""
    if not placement:
        return spec
    values = {"in0": spec.memory.in0, "in1": spec.memory.in1, "out": spec.memory.out}
    for tensor, where in placement.items():
        memory = _MEMORY_OF.get((tensor, where))
        if memory is None:
            known = ", ".join(f"{t}={w}" for t, w in _MEMORY_OF)
            raise TuneError(f"placement {tensor}={where}: kgen builds no such program; placements: {known}")
        values[tensor] = memory
    return replace(spec, memory=replace(spec.memory, **values))


# ----------------------------------------------------------------------------------------------
# the winner as a spec
# ----------------------------------------------------------------------------------------------

def tuned_spec(spec: MatmulSpec, c: TuneConfig) -> MatmulSpec:
    """`c` applied to `spec`, its compute config named `<spec>_tuned` where the search changed it."""
    tuned = c.apply(spec)
    if tuned.compute != spec.compute:
        tuned = replace(tuned, compute=replace(tuned.compute, preset=f"{spec.name}_tuned"))
    return tuned


def spec_text(spec: MatmulSpec, c: TuneConfig, note: str = "") -> str:
    """A .kspec that plans exactly as `c` applied to `spec` (kgen.gen.spec_print): every searched
    value written out, the placement as `memory { }`, the compute config in full. The spec's
    variants are not carried over."""
    from kgen.gen.spec_print import format_spec

    return format_spec(tuned_spec(spec, c), comment=f"written by kgen tune{': ' + note if note else ''}")


# ----------------------------------------------------------------------------------------------
# the target a result belongs to, for the database
# ----------------------------------------------------------------------------------------------

def model_digest(arch_name: str | None = None) -> str:
    """What the predictions of this run depend on besides the candidate: every kgen source the
    model path imports and every config file (tunedb.prediction_digest). A stored prediction is
    reused only under the same digest. (One digest for every arch: a change to either card's table
    retires both.)"""
    from kgen.perf.tunedb import prediction_digest

    return prediction_digest()


def target_of(spec: MatmulSpec, placement: Mapping[str, str] | None = None) -> dict[str, object]:
    """The target key fields: arch, shape, dtypes, fidelity and the fixed semantics (the placement
    of the tensors among them), versions, the prediction digest."""
    from kgen.core.version import TT_METAL_VERSION, __version__

    spec = with_placement(spec, placement)
    return {
        "arch": spec.arch, "m": spec.m, "n": spec.n, "k": spec.k, "batch": spec.batch,
        "dtype_in0": spec.dtype_in0, "dtype_in1": spec.dtype_in1, "dtype_out": spec.dtype_out,
        "dtype_bias": spec.dtype_bias if spec.fuse_bias else None,
        "fidelity": spec.compute.math_fidelity, "fp32_dest_acc": spec.compute.fp32_dest_acc,
        "fuse_bias": spec.fuse_bias, "activation": spec.activation, "untilize_out": spec.untilize_out,
        "math_approx": spec.compute.math_approx, "dst_full_sync": spec.compute.dst_full_sync,
        "transpose_mcast": spec.transpose_mcast,
        **({} if spec.broadcast_in1 else {"broadcast_in1": False}),    # one in1 per batch: another matmul
        # transposed inputs: another program (the transpose stage, other strides); keys without them as before
        **{t: True for t in ("transpose_a", "transpose_b") if getattr(spec, t)},
        "placement": {"in0": spec.memory.in0, "in1": spec.memory.in1, "out": spec.memory.out,
                      "orientation": spec.memory.orientation},
        "kgen_version": __version__, "tt_metal_version": TT_METAL_VERSION,
        "model": model_digest(spec.arch),
    }


