"""The text report of one emulation (`kgen emulate`), and the op counts summed over its processors."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgen.proof.emulate import Emulation


def emulated_op_totals(processors) -> dict[str, int]:
    """Op name -> calls, summed over the emulated processors' reports (not verify.op_totals, which
    counts the IR)."""
    totals: dict[str, int] = {}
    for p in processors:
        for k, v in p["ops"].items():
            totals[k] = totals.get(k, 0) + v
    return dict(sorted(totals.items()))


def format_report(e: Emulation, *, per_processor: bool = True) -> str:
    lines = [f"kgen emulate: {e.kernel_id} ({e.numerics} numerics, seed {e.seed})"]
    verdict = {"ok": "finished", "deadlock": "DEADLOCK", "stopped": "STOPPED"}.get(e.status, e.status)
    lines.append(f"  run        {verdict}; {len(e.processors)} processors on "
                 f"{len({tuple(p['core']) for p in e.processors})} cores; {e.cycles} modelled cycles")
    if e.status == "ok":
        golden = "bit-exact" if e.exact_match else f"DIFFERS in {e.mismatched} element(s)"
        if e.numerics == "fast" and not e.exact_match:
            golden += " (within the fast-mode tolerance)" if e.golden_close else " (BEYOND the fast-mode tolerance)"
        lines.append(f"  golden     {golden} against the {e.numerics} golden model")
        lines.append(f"  vs float64 max_abs_err {e.errors.max_abs_err:.4g}  max_rel_err {e.errors.max_rel_err:.4g}  "
                     f"pcc {e.errors.pcc:.6f}")
    if e.schedules:
        lines.append(f"  schedules  {e.schedules} random interleaving(s): "
                     f"{'identical output' if e.schedules_identical else 'OUTPUT DIFFERS between schedules'}")
    rate = f", {e.macs / max(e.emulate_seconds, 1e-9) / 1e6:.1f} M MAC/s" if e.status == "ok" else ""
    lines.append(f"  time       {e.seconds:.2f} s ({e.emulate_seconds:.2f} s emulating{rate})")
    if e.deadlock:
        lines += ["", e.deadlock.rstrip()]
    for h in e.hazards:
        lines.append(f"  HAZARD {h['kind']}: {h['file']}:{h['line']} core ({h['core'][0]},{h['core'][1]}) "
                     f"{h['processor']}: {h['message']}")
    if per_processor:
        lines.append("")
        lines.append("  core   processor      kernel                 ops    stalls  stall cycles  cycles")
        for p in e.processors:
            lines.append(f"  ({p['core'][0]},{p['core'][1]})  {p['processor']:<14} {p['kernel']:<20} "
                         f"{sum(p['ops'].values()):>6} {p['stalls']:>8} {p['stall_cycles']:>13} {p['cycles']:>7}")
        totals = emulated_op_totals(e.processors)
        lines.append("  op counts (all cores): " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    return "\n".join(lines)
