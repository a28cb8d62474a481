"""`kgen perf` and the predicted-time line of `kgen check`: a Prediction as text or as data."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from kgen.core.errors import KgenError
from kgen.gen.spec import BlockSpec, MatmulSpec
from kgen.perf.model import Prediction, predict


@dataclass(frozen=True)
class PolicyComparison:
    """The same blocking under the other accumulation policy, or why there is none."""
    other_policy: str | None
    other_cycles: float | None
    note: str


def same_blocking_other_policy(spec: MatmulSpec, p) -> MatmulSpec:
    """The spec with the plan's blocking fixed and the packer L1 accumulation request flipped."""
    block = BlockSpec(in0_block_w=p.in0_block_w, out_subblock=(p.out_subblock_h, p.out_subblock_w),
                      per_core=(p.per_core_m, p.per_core_n), out_block=(p.out_block_h, p.out_block_w))
    compute = replace(spec.compute, packer_l1_acc=not spec.compute.packer_l1_acc)
    return replace(spec, block=block, compute=compute, grid=p.grid_requested)


def compare_policies(p, prediction: Prediction) -> PolicyComparison:
    """The other accumulation request at plan `p`'s blocking, planned and predicted (the plan is the
    pipeline's: it holds the spec, which the IR does not)."""
    from kgen.gen.pipeline import run

    try:
        other = run(same_blocking_other_policy(p.spec, p), "verified")
    except KgenError as exc:
        return PolicyComparison(None, None, f"the other request does not plan at this blocking: "
                                            f"{getattr(exc, 'message', str(exc))}")
    if other.plan.policy == p.policy:
        return PolicyComparison(None, None, f"{p.policy} either way at {p.num_blocks} K-block(s) "
                                            f"({other.plan.policy_reason})")
    cycles = predict(other.verified).cycles
    return PolicyComparison(other.plan.policy, cycles, "")


def one_line(pr: Prediction) -> str:
    """The line `kgen check` prints."""
    return (f"{pr.microseconds:,.1f} us device ({pr.cycles:,.0f} cycles at {pr.clock_mhz} MHz), "
            f"{pr.tflops:,.1f} TFLOPS, {pr.utilization:.1%} of the full-grid ideal; {pr.bottleneck}")


def format_prediction(pr: Prediction, comparison: PolicyComparison, name: str, width: int | None = None) -> str:
    """The prediction at `width` columns (the terminal's)."""
    from kgen.core import terminal
    from kgen.core.terminal import Column, keep_together

    width = width or terminal.width()
    lines = terminal.hanging(f"kgen perf: {name}", width) + [""]
    rows = [
        ("device time", f"{pr.microseconds:,.2f} us = {pr.cycles:,.0f} cycles at {pr.clock_mhz} MHz"),
        ("wall time", f"{pr.wall_us:,.2f} us per op predicted, back to back without trace: max(device time + "
                      f"{pr.trace_us:g} us op-to-op gap, {pr.host_us:g} us host issue time)"),
        ("TFLOPS", f"{pr.tflops:,.1f}"),
        ("utilization", f"{pr.utilization:.1%}  (ideal {pr.ideal_cycles:,.0f} cycles: M*K*N/32^3 tile products "
                        f"at the fidelity's cycles per tile over the full grid)"),
        ("bottleneck", f"{pr.bottleneck}, {pr.bottleneck_share:.0%} of the time"),
        ("critical core", f"({pr.critical_core[0]},{pr.critical_core[1]}), {pr.blocks} K-block step(s), "
                          f"pipeline {pr.core_cycles:,.0f} cycles"),
        ("DRAM floor", f"{pr.dram_floor_cycles:,.0f} cycles (every DRAM byte at the card's usable bandwidth)"),
        ("per program", f"+{pr.trace_us:g} us with trace (dispatch and op-to-op gap); "
                        f"~{pr.host_us:g} us host issue time per op without trace"),
    ]
    lines += terminal.key_values(rows, width) + [""]
    procs = pr.processors
    # `dram 17,780` is one item: a wrapped kinds cell breaks between items only
    kinds = [", ".join(keep_together(f"{k} {v:,.0f}") for k, v in sorted(q.work.items(), key=lambda kv: -kv[1]) if v)
             for q in procs]
    lines += terminal.table([Column("processor", [q.processor for q in procs]),
                             Column("kernel", [q.kernel for q in procs]),
                             Column("busy cycles", [f"{q.busy:,.0f}" for q in procs], numeric=True),
                             Column("stall cycles", [f"{q.stall:,.0f}" for q in procs], numeric=True),
                             Column("busy by kind", kinds)], width, gap=3)
    c = pr.policy_cost
    lines += [""] + terminal.hanging(f"policy {pr.policy}: reload/copy {c.reload_cycles:,.0f} cycles, packs into "
                                     f"partials {c.partials_pack_cycles:,.0f} (of which L1-acc read-modify-write "
                                     f"{c.l1_acc_surcharge:,.0f})", width, "  ")
    if comparison.other_policy is not None:
        delta = comparison.other_cycles - pr.cycles
        lines += terminal.hanging(f"same blocking with {comparison.other_policy}: {comparison.other_cycles:,.0f} "
                                  f"cycles ({delta / pr.cycles:+.1%} against {pr.policy})", width, "  ")
    else:
        lines += terminal.hanging(f"other policy: {comparison.note}", width, "  ")
    return "\n".join(lines) + "\n"


def prediction_to_dict(pr: Prediction, comparison: PolicyComparison) -> dict[str, Any]:
    data = asdict(pr)
    data["critical_core"] = list(pr.critical_core)
    data["wall_us"] = pr.wall_us          # per op without trace, as a host-timed loop measures it
    data["policy_comparison"] = asdict(comparison)
    return data
