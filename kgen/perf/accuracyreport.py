"""`kgen tune --min-pcc / --max-rel-error`'s report: the terminal text (the search, the speed-accuracy
front with the pick last, the pick and its margin, the HiFi4 + fp32 comparison, the verification),
its JSON, and the HTML page (`--html`: the answer first, then the front as a chart, matplotlib as
inline SVG, nothing loaded from elsewhere)."""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass

from kgen.core import terminal
from kgen.core.types import FORMAT_SHORT
from kgen.perf.tune.accuracy import AccuracyResult, Judged
from kgen.perf.tune.accuracy_verify import AccuracyCheck
from kgen.perf.tune.verify import steps_text

POLICY_SHORT = {"packer_l1_acc": "L1 acc", "spill_reload": "spill", "dst_only": "DST"}


@dataclass(frozen=True)
class Verified:
    """One pick `--verify` ran: the candidate, the check, and whether it was dropped."""

    judged: Judged
    check: AccuracyCheck


def _share(used: float) -> str:
    if not math.isfinite(used):
        return "inf"
    return f"{100 * used:.0f} %" if used < 10 else f"{used:,.0f}x"


def _target_cell(j: Judged) -> str:
    return ("meets " if j.meets else "misses ") + _share(j.used)


def _fidelity(j: Judged) -> str:
    c = j.scored.candidate
    return c.math_fidelity + ("+fp32" if c.fp32_dest_acc else "")


def _pcc(pcc: float) -> str:
    return f"{pcc:.6f}" if pcc > 0.99 else f"{pcc:.4f}"


def _varied(result: AccuracyResult) -> list[int]:
    """The operands whose dtype the search chose (0: in0, 1: in1)."""
    return [i for i in (0, 1) if len({d[i] for d in result.dtype_options}) > 1]


def config_text(j: Judged, result: AccuracyResult) -> str:
    c = j.scored.candidate
    dtypes = "".join(f" {('in0', 'in1')[i]} {j.dtypes[i]}" for i in _varied(result))
    return c.short(j.scored.policy) + dtypes


def front_columns(result: AccuracyResult, rows: list[Judged]) -> list[terminal.Column]:
    cols = [terminal.Column("#", [str(i + 1) for i in range(len(rows))], True),
            terminal.Column("predicted us", [f"{j.microseconds:,.2f}" for j in rows], True),
            terminal.Column("PCC", [_pcc(j.prediction.pcc) for j in rows], True),
            terminal.Column("rel error", [f"{j.prediction.rel_error:.2e}" for j in rows], True),
            terminal.Column("target (a)", [_target_cell(j) for j in rows])]
    for i in _varied(result):
        cols.append(terminal.Column(("in0", "in1")[i], [j.dtypes[i] for j in rows]))
    cols += [terminal.Column("fidelity", [_fidelity(j) for j in rows]),
             terminal.Column("acc. (b)", [POLICY_SHORT.get(j.scored.policy, j.scored.policy) for j in rows]),
             terminal.Column("w", [str(j.scored.candidate.in0_block_w) for j in rows], True),
             terminal.Column("partials", [FORMAT_SHORT.get(j.path.partials_format, j.path.partials_format)
                                          for j in rows])]
    return cols


def _space_words(result: AccuracyResult) -> str:
    varied = _varied(result)
    formats = "; the format of " + " and ".join(("in0", "in1")[i] for i in varied) + " (bfloat16, bfloat8_b, " \
        "bfloat4_b)" if varied else ""
    return (f"blocking as kgen tune searches it, math fidelity, fp32 dest accumulation, packer L1 "
            f"accumulation or spill/reload{formats}; the partials format follows from fp32 dest, L1 "
            f"accumulation and the output, as in TT's factories")


def format_accuracy(result: AccuracyResult, verified: list[Verified], final: AccuracyResult, pick: Judged | None,
                    output, html, width: int | None = None) -> str:
    """The terminal report: `result` is the search before verification, `final` after it (the
    same when nothing was dropped), `pick` the answer (verified when --verify ran)."""
    width = width or terminal.width()
    spec = result.spec
    w = lambda key, text: terminal.key_value(key, text, width, 8)   # noqa: E731
    lines = terminal.wrap(f"kgen tune: {spec.name} ({spec.arch} {spec.m} x {spec.n} x {spec.k}"
                          f"{' batch ' + str(spec.batch) if spec.batch != 1 else ''}, {spec.dtype_in0} x "
                          f"{spec.dtype_in1} -> {spec.dtype_out})", width, "", "  ")
    lines += w("target", f"{result.target.text()}, against float64 of the inputs before any conversion to a "
                         f"device format ({result.source.describe()})")
    lines += w("space", _space_words(result))
    px = result.proxy
    lines += w("search", f"{result.searches} searches, {result.predicted:,} candidates predicted by the model, "
                         f"{result.paths} numerics paths through the golden model (exact numerics on a {px[0]} x "
                         f"{px[1]} block of the output over the full K, extrapolated to the "
                         f"{spec.batch * spec.m:,} x {spec.n:,} output); {result.seconds:.1f} s")
    lines += [""] + _front_lines(final, width)
    lines += [""] + _pick_lines(final, pick, verified, width)
    if output is not None and pick is not None:
        lines += w("wrote", f"{output} (kgen check / kgen build take it)")
    if html is not None:
        lines += w("html", f"{html}")
    lines += [""] + terminal.hanging(
        "(a) target: the share of the allowance a config's predicted error uses, (1 - PCC) / (1 - P) for "
        "--min-pcc P and error / E for --max-rel-error E (the larger with both); at most 100 % meets the "
        "target. Predicted: the golden model (bit-exact to the Tensix numerics) on the proxy block, the "
        "relative error (max |error| over the output's max magnitude) extrapolated from its elements to "
        "the whole output's by a fitted Weibull tail (docs/tune.md: validated against exact emulation)", width)
    lines += terminal.hanging(
        "(b) accumulation across K-blocks: L1 acc = the packer accumulates partials in L1, spill = spilled "
        "and reloaded through the partials CB, DST = one K-block, in DST throughout; w: in0_block_w; "
        "partials: their format (fp32, bf16, or the output's)", width)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _front_lines(result: AccuracyResult, width: int) -> list[str]:
    rows = list(result.front)
    if not rows:
        return terminal.wrap("no legal configuration in this space (every candidate rejected by the planner)", width)
    title = ("speed-accuracy front, predicted: fastest first, each row more accurate than every faster "
             "config the search predicted"
             + ("; the pick last, every row above it misses the target" if result.pick else
                "; no configuration meets the target: the last row is the most accurate predicted"))
    lines = terminal.wrap(title, width) + terminal.table(front_columns(result, rows), width)
    if result.floors:
        lines += [""] + terminal.key_value("floors", floors_text(result), width, 8)
    return lines


def floors_text(result: AccuracyResult) -> str:
    """The formats and fidelities skipped because their error floor alone misses the target, one
    entry per choice of formats."""
    from kgen.perf.tune.space import FIDELITIES

    t = result.target
    parts = []
    for dtypes in sorted({f.dtypes for f in result.floors}):
        floors = [f for f in result.floors if f.dtypes == dtypes]
        names = sorted({f.fidelity for f in floors}, key=FIDELITIES.index)
        at = "every fidelity" if len(names) == len(FIDELITIES) else ", ".join(names)
        dt = " ".join(f"{('in0', 'in1')[i]} {dtypes[i]}" for i in _varied(result)) or "the spec's formats"
        figures = ([f"PCC <= {_pcc(max(f.prediction.pcc for f in floors))}"] if t.min_pcc is not None else []) + \
            ([f"relative error >= {min(f.prediction.rel_error for f in floors):.2e}"] if t.max_rel_error is not None
             else [])
        parts.append(f"{dt} at {at} ({', '.join(figures)})")
    return ("the inputs converted and multiplied at the fidelity, summed exactly, already miss the target, "
            "whatever the accumulation (no config of them was predicted): " + "; ".join(parts))


def _pick_lines(result: AccuracyResult, pick: Judged | None, verified: list[Verified], width: int) -> list[str]:
    w = lambda key, text: terminal.key_value(key, text, width, 8)   # noqa: E731
    t = result.target
    lines: list[str] = []
    if pick is None:
        best = result.front[-1] if result.front else None
        why = ("none passed verification" if verified else "no configuration in the space meets it")
        lines += w("pick", f"none: {why}" + (f"; the most accurate predicted is {config_text(best, result)} at "
                                            f"{best.microseconds:,.2f} us: {t.margin(best.prediction.pcc, best.prediction.rel_error)}"
                                            if best is not None and not verified else ""))
    else:
        lines += w("pick", f"{config_text(pick, result)}: {pick.microseconds:,.2f} us predicted; predicted "
                           f"{t.margin(pick.prediction.pcc, pick.prediction.rel_error)}")
        b = result.baseline
        if b is not None:
            lines += w("vs HiFi4", f"the fastest meeting the target at HiFi4 + fp32 dest: {b.microseconds:,.2f} us "
                                   f"predicted ({config_text(b, result)}); the pick is "
                                   f"{b.scored.cycles / pick.scored.cycles:.2f}x as fast")
        else:
            lines += w("vs HiFi4", "no configuration at HiFi4 + fp32 dest meets the target")
    for n, v in enumerate(verified):
        lines += w("verified" if n == 0 else "", _verified_text(v, result))
    if not verified and pick is not None:
        lines += w("verified", "not verified: --verify emulates the pick with exact numerics and port-checks it")
    return lines


def _verified_text(v: Verified, result: AccuracyResult) -> str:
    c = v.check
    head = f"{config_text(v.judged, result)}: {c.status}"
    if c.measured is not None:
        head += (f"; exact emulation of {c.where()}: {result.target.margin(c.measured.pcc, c.measured.rel_error)}"
                 + ("" if c.whole else " (the relative error against the sub-block's own max magnitude)"))
    steps = steps_text(c.structural.get("steps") or {})
    if steps:
        head += f"; the pick itself: {steps}"
    if c.errors:
        head += ("; dropped: " if c.status == "failed" else "; not verified: ") + "; ".join(c.errors)
    return head + f" ({c.seconds:.1f} s)"


# ----------------------------------------------------------------------------------------------
# JSON

def judged_json(j: Judged) -> dict:
    from dataclasses import asdict

    return {"candidate": asdict(j.scored.candidate), "microseconds": j.microseconds, "policy": j.scored.policy,
            "dtype_in0": j.dtypes[0], "dtype_in1": j.dtypes[1], "partials_format": j.path.partials_format,
            "pcc": j.prediction.pcc, "rel_error": j.prediction.rel_error, "used": j.used, "meets": j.meets}


def as_json(result: AccuracyResult, verified: list[Verified], final: AccuracyResult, pick: Judged | None,
            output, html) -> dict:
    t = result.target
    return {
        "spec": result.spec.name,
        "target": {"min_pcc": t.min_pcc, "max_rel_error": t.max_rel_error},
        "inputs": result.source.describe(),
        "proxy": list(result.proxy),
        "search": {"searches": result.searches, "predicted": result.predicted, "paths": result.paths,
                   "seconds": result.seconds},
        "front": [judged_json(j) for j in final.front],
        "front_before_verification": [judged_json(j) for j in result.front],
        "baseline_hifi4_fp32": judged_json(final.baseline) if final.baseline else None,
        "pick": judged_json(pick) if pick else None,
        "verified": [{"candidate": judged_json(v.judged), "status": v.check.status,
                      "pcc": v.check.measured.pcc if v.check.measured else None,
                      "rel_error": v.check.measured.rel_error if v.check.measured else None,
                      "used": v.check.used, "emulated": list(v.check.emulated), "whole": v.check.whole,
                      "errors": list(v.check.errors), "steps": v.check.structural.get("steps"),
                      "seconds": v.check.seconds} for v in verified],
        "output": str(output) if output else None,
        "html": str(html) if html else None,
    }


# ----------------------------------------------------------------------------------------------
# HTML

def _svg(fig) -> str:
    """A matplotlib figure as inline SVG: text as text, no metadata, no XML prologue or namespace URLs."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Creator": None, "Date": None, "Format": None,
                                                                   "Type": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text)
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


def _error_axis(result: AccuracyResult) -> tuple[str, callable, float]:
    """The chart's error measure: (axis label, value of a Judged, the target's value on it)."""
    t = result.target
    if t.max_rel_error is None:
        return "1 - PCC, predicted (log scale)", lambda j: max(1.0 - j.prediction.pcc, 1e-12), max(1 - t.min_pcc, 1e-12)
    if t.min_pcc is None:
        return ("relative error: max |error| / max |output|, predicted (log scale)",
                lambda j: max(j.prediction.rel_error, 1e-12), t.max_rel_error)
    return "share of the allowance used, predicted (log scale)", lambda j: max(j.used, 1e-12), 1.0


def chart(result: AccuracyResult, pick: Judged | None) -> str:
    """Predicted us against predicted error: the fastest config of each numerics path (grey: misses
    the target; blue: meets it), the front as a line, the target as a dashed line, the pick marked."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "kgen-tune", "font.size": 9})
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    label, error, line = _error_axis(result)
    fastest: dict = {}
    for j in result.judged:
        key = (j.dtypes, j.path)
        if key not in fastest or j.scored.cycles < fastest[key].scored.cycles:
            fastest[key] = j
    points = list(fastest.values())
    fig, ax = plt.subplots(figsize=(9, 4.6))
    for meets, color, name in ((False, "#999999", "misses the target"), (True, "C0", "meets the target")):
        pts = [j for j in points if j.meets == meets]
        if pts:
            ax.scatter([error(j) for j in pts], [j.microseconds for j in pts], s=18, color=color, label=name,
                       zorder=2)
    front = list(result.front)
    if front:
        ax.plot([error(j) for j in front], [j.microseconds for j in front], color="C1", marker="o", ms=5,
                label="speed-accuracy front", zorder=3)
    ax.axvline(line, color="C3", linestyle="--", label=f"target: {result.target.text()}", zorder=1)
    if pick is not None:
        ax.scatter([error(pick)], [pick.microseconds], s=160, marker="*", color="C2", edgecolor="black",
                   label=f"pick: {pick.microseconds:,.2f} us", zorder=4)
    ax.set_xscale("log")
    ax.set_xlabel(label)
    ax.set_ylabel("predicted device time (us)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.1f}"))
    ax.set_title("Each point: the fastest config of one numerics path (formats, fidelity, fp32 dest, "
                 "accumulation, in0_block_w)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
    return _svg(fig)


def html_text(result: AccuracyResult, verified: list[Verified], final: AccuracyResult, pick: Judged | None) -> str:
    import jinja2

    from kgen.core.resources import data_dir

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    t = final.target
    rows = list(final.front)
    columns = front_columns(final, rows)
    table = {"headers": [c.header.replace(" (a)", "") for c in columns], "numeric": [c.numeric for c in columns],
             "rows": [{"cells": [c.cells[i] for c in columns], "pick": pick is not None and j.key() == pick.key(),
                       "meets": j.meets} for i, j in enumerate(rows)]}
    answer = (f"{config_text(pick, final)}: {pick.microseconds:,.2f} us predicted; predicted "
              f"{t.margin(pick.prediction.pcc, pick.prediction.rel_error)}" if pick is not None else
              "no configuration meets the target")
    baseline = final.baseline
    return env.get_template("report/tune_accuracy.html.j2").render(
        spec=final.spec, target=t.text(), source=final.source.describe(), answer=answer, pick=pick,
        baseline=(f"{baseline.microseconds:,.2f} us predicted; the pick is "
                  f"{baseline.scored.cycles / pick.scored.cycles:.2f}x as fast") if baseline and pick else None,
        verified=[_verified_text(v, final) for v in verified], table=table, chart=chart(final, pick),
        space=_space_words(final), proxy=final.proxy)
