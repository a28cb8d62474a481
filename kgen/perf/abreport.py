"""`kgen ab`'s outputs: a compact terminal table, JSON (one row per variant keyed by kernel id), CSV
(one line per variant, CUTLASS-profiler style) and one self-contained HTML file whose charts
matplotlib draws as inline SVG (templates/report/ab.html.j2 prints it)."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import asdict, dataclass
from typing import Any

from kgen.core import terminal
from kgen.core.terminal import split_columns, split_tables
from kgen.perf.ab import DISTRIBUTIONS, OP_KINDS
from kgen.perf.abvalues import Comparison, Row
from kgen.perf.abfloat64 import (FLOAT64_NOTE, all_within, float64_sentence, float64_sentences,  # noqa: F401
                                 float64_short, float64_verdict, output_place, share_of_bound, verdict_word)

PROCESSOR_SHORT = {"TRISC0 unpack": "unpack", "TRISC1 math": "math", "TRISC2 pack": "pack", "BRISC": "BRISC",
                   "NCRISC": "NCRISC"}


# ----------------------------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------------------------

def row_to_dict(r: Row) -> dict[str, Any]:
    d: dict[str, Any] = {"variant": r.variant, "sweep": r.sweep, "overrides": dict(r.overrides),
                         "kernel_id": r.kernel_id, "legal": r.illegal is None, "same_kernel_as": r.same_as}
    if r.illegal is not None:
        d.update(illegal=r.illegal, rule=r.rule)
        return d
    plan = asdict(r.plan)
    plan["grid"] = list(r.plan.grid)
    plan["dst_headroom"] = r.plan.dst_headroom
    plan["cbs"] = [asdict(c) for c in r.plan.cbs]
    plan["regions"] = [{**asdict(g), "cb_indices": list(g.cb_indices)} for g in r.plan.regions]
    speed = asdict(r.speed)
    speed["processors"] = dict(r.speed.processors)
    numerics = asdict(r.numerics)
    numerics["errors"] = {e.distribution: {**asdict(e), "ulp_histogram": dict(e.ulp_histogram)}
                          for e in r.numerics.errors}
    for e in numerics["errors"].values():
        del e["distribution"]
    f64 = r.numerics.float64
    numerics["float64"] = None if f64 is None else {**f64.summary(), "at": r.numerics.float64_at,
                                                    "short": float64_short(f64),
                                                    "text": float64_sentence(f64, r.numerics.float64_at)}
    del numerics["float64_at"]
    emulated = None
    if r.emulated:
        emulated = asdict(r.emulated)
        e64 = r.emulated.float64
        emulated["float64"] = None if e64 is None else {**e64.summary(), "short": float64_short(e64),
                                                        "text": float64_sentence(e64, output_place(e64))}
    d.update(plan=plan, ops=dict(r.ops), speed=speed, numerics=numerics, emulated=emulated,
             measured=asdict(r.measured) if r.measured else None)
    return d


def verdict_to_dict(v) -> dict[str, Any]:
    """One sweep value's verdict: the fastest against base (the spec as written), or when base is the
    fastest against the next (`against`); `winner` is null when they are the same within the
    model's resolution; every variant against base."""
    from kgen.perf.abverdict import RESOLUTION

    return {"sweep": v.sweep, "base": v.base, "fastest": v.fastest, "winner": v.winner, "against": v.against,
            "speedup": v.speedup, "same_within_resolution": v.same, "resolution": RESOLUTION,
            "same_as_fastest": list(v.ties), "cause": v.cause,
            "error": {"fastest_max_ulp": v.fastest_max_ulp, "base_max_ulp": v.base_max_ulp,
                      "difference_ulp": v.ulp_difference, "scale": "ULP against float64 rounded to the output grid"},
            "against_base": [{"variant": a.variant, "speedup": a.speedup, "same_within_resolution": a.same,
                              "max_ulp": a.max_ulp} for a in v.against_base],
            "effects": [{"field": e.field, "held": dict(e.held), "faster": e.faster, "slower": e.slower,
                         "speedup": e.speedup, "same_within_resolution": e.same, "sentence": e.sentence}
                        for e in v.effects],
            "emulation": v.emulation or None, "headline": v.headline, "sentence": v.sentence}


def comparison_to_dict(c: Comparison) -> dict[str, Any]:
    return {
        "spec": c.spec_path, "name": c.spec_name, "arch": c.arch, "command": c.command, "seed": c.seed,
        "vary": {k: list(v) for k, v in c.vary},
        "base": {"variant": c.base, "note": c.base_note or "base: the spec as written"},
        "sweep": {"field": c.sweep_field, "values": list(c.sweep_values)} if c.sweep_field else None,
        "verdicts": list(c.verdicts),           # the sentences of `verdict`, one per sweep value
        "verdict": [verdict_to_dict(v) for v in c.verdict_facts],
        # one entry per distinct kernel (per sweep value, each has its own id); a variant with the
        # same kernel as an earlier one is listed under `same_kernel`, with the id its figures are under
        "variants": {r.kernel_id: row_to_dict(r) for r in c.legal if r.same_as is None},
        "same_kernel": [{"variant": r.variant, "sweep": r.sweep, "kernel_id": r.kernel_id, "same_kernel_as": r.same_as}
                        for r in c.legal if r.same_as is not None],
        "notes": {"utilization": UTILIZATION_NOTE, "ulp": ulp_note(c), "max_rel_and_pcc": rel_note(),
                  "float64": FLOAT64_NOTE},
        # the numerics verdict: every variant's golden-model output against float64 of the math
        "float64": {"within": all_within(c), "sentences": float64_sentences(c)},
        "illegal": [row_to_dict(r) for r in c.rows if r.illegal is not None],
        "differences": [{**asdict(d), "ulp_histogram": dict(d.ulp_histogram)} for d in c.differences],
    }


# ----------------------------------------------------------------------------------------------
# the table (terminal and HTML share it): one column per variant, one line per fact
# ----------------------------------------------------------------------------------------------

def _fmt(value: Any, spec: str) -> str:
    return format(value, spec) if value is not None else "-"


def table_lines(r: Row) -> list[tuple[str, str, str | None, Any]]:
    """(section, label, JSON path under the row (None: not a number), text) for one variant."""
    p, s, n = r.plan, r.speed, r.numerics
    out: list[tuple[str, str, str | None, Any]] = [
        ("plan", "policy", None, p.policy),
        ("plan", "why", None, p.policy_reason),
        ("plan", "partials", None, f"{p.partials_format}"),
        ("plan", "fidelity / fp32 Dst", None, f"{p.math_fidelity} / {'on' if p.fp32_dest_acc else 'off'}"),
        ("plan", "K-blocks", "plan/num_blocks", f"{p.num_blocks}"),
        ("plan", "DST headroom (tiles)", "plan/dst_headroom", f"{p.dst_headroom}"),
        ("plan", "L1 CBs (bytes)", "plan/l1_bytes", f"{p.l1_bytes:,}"),
        ("plan", "L1 margin (bytes)", "plan/l1_margin", f"{p.l1_margin:,}"),
    ]
    for i, g in enumerate(p.regions):
        out.append(("plan", f"L1 {g.name}", f"plan/regions/{i}/bytes", f"{g.bytes:,}"))
    out += [("speed", "predicted us", "speed/microseconds", f"{s.microseconds:,.1f}"),
            ("speed", "predicted TFLOPS", "speed/tflops", f"{s.tflops:,.1f}"),
            ("speed", "utilization % (a)", "speed/utilization", f"{100 * s.utilization:.1f}"),
            ("speed", "bottleneck", None, s.bottleneck)]
    for kind in OP_KINDS:
        out.append(("ops", kind, f"ops/{kind}", f"{r.op(kind):,}"))
    for d in DISTRIBUTIONS:
        e = n.of(d)
        out += [(f"numerics {d}", "max ULP", f"numerics/errors/{d}/max_ulp", f"{e.max_ulp:,}"),
                (f"numerics {d}", "max rel (c)", f"numerics/errors/{d}/max_rel" if e.max_rel is not None else None,
                 _opt(e.max_rel, ".3g")),
                (f"numerics {d}", "PCC (c)", f"numerics/errors/{d}/pcc" if e.pcc is not None else None,
                 _opt(e.pcc, ".6f"))]
        if d == "random":        # the distribution of ULP differences, bins as ab.ULP_BINS
            out.append((f"numerics {d}", "ULPs " + "/".join(label for label, _ in e.ulp_histogram), None,
                        "/".join(str(count) for _, count in e.ulp_histogram)))
        if d == "all_ones":      # the exact sum is K (tt-metal #8449)
            out.append((f"numerics {d}", "value (exact sum: K)", f"numerics/errors/{d}/first_value",
                        f"{e.first_value:g}"))
    f64 = n.float64
    if f64 is not None:
        out += [("float64 (d)", "verdict", None, float64_short(f64)),
                ("float64 (d)", "worst |err| / bound", None, share_of_bound(f64.worst_ratio)),     # rounded down
                ("float64 (d)", "worst output", None, n.float64_at),
                ("float64 (d)", "kgen / float64 there", None, f"{f64.worst_out:.6g} / {f64.worst_ref:.6g}"),
                ("float64 (d)", "its bound", "numerics/float64/worst_bound", f"{f64.worst_bound:.3g}"),
                ("float64 (d)", "max |err|", "numerics/float64/max_abs_err", f"{f64.max_abs_err:.3g}"),
                ("float64 (d)", "stages", None, f64.what)]
    if r.emulated is not None:
        em = r.emulated
        word = "bit-exact" if em.exact_match else ("close" if em.ok else "DIFFERS")
        out.append(("emulation", f"{em.numerics}", None, f"{em.status}, {word}"))
        if em.float64 is not None:
            out.append(("emulation", "float64 (d)", None, float64_short(em.float64)))
        out.append(("emulation", "seconds", "emulated/seconds", f"{em.seconds:.2f}"))
    if r.measured is not None:
        out.append(("device", "device us (median)", "measured/microseconds", f"{r.measured.microseconds:,.1f}"))
        out.append(("device", "PCC", "measured/pcc" if r.measured.pcc is not None else None,
                    _opt(r.measured.pcc, ".6f")))
    return out


def aligned(legal) -> tuple[list[tuple[str, str]], list[dict[tuple[str, str], tuple[str | None, str]]]]:
    """The (section, label) lines of every variant in first-seen order (variants can differ, e.g. in
    their L1 regions), and per variant its (JSON path, text) by line."""
    keys: dict[tuple[str, str], None] = {}
    cells = []
    for r in legal:
        col = {}
        for sec, label, path, text in table_lines(r):
            keys.setdefault((sec, label))
            col[(sec, label)] = (path, text)
        cells.append(col)
    order = {sec: i for i, (sec, _) in reversed(list(enumerate(keys)))}     # keep each section together
    return sorted(keys, key=lambda k: (order[k[0]], list(keys).index(k))), cells


UTILIZATION_NOTE = ("utilization: the ideal time (M*K*N/32^3 tile products at the variant's own fidelity's "
                    "cycles per tile, spread over the full card grid) over the predicted time; so a HiFi4 "
                    "variant can show more utilization than a faster HiFi2 one")


def ulp_note(c: Comparison) -> str:
    from kgen.perf.abvalues import ULP_FLOOR

    legal = c.legal
    return (f"ULP: distance from the float64 result rounded to the output's grid ({legal[0].numerics.ulp_format}; "
            f"0 = correctly rounded), in the grid's spacing at the result's magnitude, never below "
            f"{ULP_FLOOR:g} x the largest result; the one error scale, per variant and between variants")


def rel_note() -> str:
    from kgen.perf.abvalues import PCC_MIN_SPREAD, REL_FLOOR

    return (f"max rel: over the outputs whose float64 result is at least {REL_FLOOR:.0%} of the largest "
            f"(nearer zero a relative error measures cancellation, not the kernel); PCC: '-' where an output "
            f"or its reference is constant, or the reference's spread is under {PCC_MIN_SPREAD:.0%} of its RMS "
            f"(similar positive sums: PCC would measure the error, not the agreement)").replace("%", " %")


def _wrap(text: str, width: int, indent: str = "  ", more: str = "    ") -> list[str]:
    """A paragraph at `width`, its further lines at `more`."""
    return terminal.wrap(text, width, indent, more)


def summary_columns(c: Comparison) -> list[tuple[str, list[str], bool]]:
    """The answer's columns, one row per variant: predicted time, speed-up against the base (the
    spec as written, at the same sweep value), TFLOPS, utilization, max ULP, policy, and the mark:
    * for the verdict's winner, `base` (with --vary) for the spec as written, `= NAME` for the
    same kernel as NAME."""
    legal = c.legal
    base = {r.sweep: c.base_at(r.sweep) for r in legal}
    winners = {(v.sweep, v.winner) for v in c.verdict_facts if v.winner is not None}
    mark = [" ".join(filter(None, ["*" if (r.sweep, r.variant) in winners else "",
                                   "base" if c.vary and r is base[r.sweep] else "",
                                   f"= {r.same_as}" if r.same_as else ""])) for r in legal]
    cols = [
        ("", mark, False),
        ("time us", [f"{r.speed.microseconds:,.1f}" for r in legal], True),
        ("vs base", [f"{base[r.sweep].speed.cycles / r.speed.cycles:.2f}x" for r in legal], True),
        ("TFLOPS", [f"{r.speed.tflops:,.1f}" for r in legal], True),
        ("util %(a)", [f"{100 * r.speed.utilization:.1f}" for r in legal], True),
        ("max ULP(b)", [f"{r.numerics.of('random').max_ulp:,}" for r in legal], True),
        ("float64(d)", [float64_short(r.numerics.float64) for r in legal], False),
        ("policy", [r.plan.policy for r in legal], False),
    ]
    if "compute.math_fidelity" not in dict(c.vary) and len({r.plan.math_fidelity for r in legal}) > 1:
        cols.append(("fidelity", [r.plan.math_fidelity for r in legal], False))
    return cols


def _keys(c: Comparison) -> list[tuple[str, list[str]]]:
    """The leading columns that name a row: the sweep value, then the variant (with --vary, one
    column per varied field)."""
    legal = c.legal
    out = [(c.sweep_field, [f"{r.sweep:,}" for r in legal])] if c.sweep_field else []
    if c.vary:
        return out + [(k.rpartition(".")[2], [dict(r.overrides)[k] for r in legal]) for k, _ in c.vary]
    return out + [("variant", [r.variant for r in legal])]


def base_words(c: Comparison) -> str:
    """What `vs base` is against: the spec as written, and with --vary which row that is."""
    at = f" at the same {c.sweep_field}" if c.sweep_field else ""
    if not c.base_note:
        return f"vs base: the predicted speed-up against base, the spec as written{at}"
    return f"vs base: the predicted speed-up against {c.base_note.removeprefix('base: ')}{at}"


def detail_sections(c: Comparison) -> list[tuple[str, list[tuple[str, list[str], bool]]]]:
    """The rest of the facts, per section: (title, columns)."""
    legal = c.legal
    regions = list(dict.fromkeys(g.name for r in legal for g in r.plan.regions))
    plan = [("K-blocks", [f"{r.plan.num_blocks}" for r in legal], True),
            ("DST headroom (tiles)", [f"{r.plan.dst_headroom}" for r in legal], True),
            ("partials", [r.plan.partials_format for r in legal], False),
            ("fp32 Dst", ["on" if r.plan.fp32_dest_acc else "off" for r in legal], False),
            ("L1 CBs (bytes)", [f"{r.plan.l1_bytes:,}" for r in legal], True),
            ("L1 margin (bytes)", [f"{r.plan.l1_margin:,}" for r in legal], True)]
    for name in regions:
        plan.append((f"L1 {name} (bytes)", [next((f"{g.bytes:,}" for g in r.plan.regions if g.name == name), "-")
                                            for r in legal], True))
    speed = [("predicted cycles", [f"{r.speed.cycles:,.0f}" for r in legal], True),
             ("bottleneck (predicted)", [r.speed.bottleneck for r in legal], False)]
    ops = [(kind, [f"{r.op(kind):,}" for r in legal], True) for kind in OP_KINDS]
    ulp = [(f"{d}", [f"{r.numerics.of(d).max_ulp:,}" for r in legal], True) for d in DISTRIBUTIONS]
    ulp.append(("all-ones value (exact: K)", [f"{r.numerics.of('all_ones').first_value:g}" for r in legal], True))
    rel = [(f"{d}", [_opt(r.numerics.of(d).max_rel, ".3g") for r in legal], True) for d in DISTRIBUTIONS]
    pccs = [(f"{d}", [_opt(r.numerics.of(d).pcc, ".6f") for r in legal], True) for d in DISTRIBUTIONS]
    hist = [(f"{label} ULP", [f"{dict(r.numerics.of('random').ulp_histogram)[label]:,}" for r in legal], True)
            for label, _ in legal[0].numerics.of("random").ulp_histogram]
    f64 = [r.numerics.float64 for r in legal]
    oracle = [("verdict", [verdict_word(f) for f in f64], False),
              ("of bound", [share_of_bound(f.worst_ratio) if f else "-" for f in f64], True),
              ("worst output", [r.numerics.float64_at or "-" for r in legal], False),
              ("kgen", [_opt(f and f.worst_out, ".6g") for f in f64], True),
              ("float64", [_opt(f and f.worst_ref, ".6g") for f in f64], True),
              ("bound", [_opt(f and f.worst_bound, ".3g") for f in f64], True)]
    out = [("plan", plan), ("speed", speed), ("op counts (whole program, from the verified IR)", ops),
           ("max ULP (b), per input distribution", ulp), ("max rel (c), per input distribution", rel),
           ("PCC (c), per input distribution", pccs), ("outputs per ULP error (b), random inputs", hist)]
    if any(f is not None for f in f64):
        out.append(("against float64 of the math (d): the worst output and its bound", oracle))
    if any(r.emulated for r in legal):
        out.append(("emulation", [
            ("numerics", [r.emulated.numerics if r.emulated else "-" for r in legal], False),
            ("result", [(r.emulated.status + (", bit-exact" if r.emulated.exact_match else ", close" if r.emulated.ok
                         else ", DIFFERS")) if r.emulated else "-" for r in legal], False),
            ("float64 (d)", [float64_short(r.emulated.float64) if r.emulated else "-" for r in legal], False),
            ("seconds", [f"{r.emulated.seconds:.2f}" if r.emulated else "-" for r in legal], True)]))
    if any(r.measured for r in legal):
        out.append(("on the card (measured)", [
            ("device us (median)", [f"{r.measured.microseconds:,.1f}" if r.measured else "-" for r in legal], True),
            ("PCC", [_opt(r.measured.pcc, ".6f") if r.measured else "-" for r in legal], True)]))
    return out


def _opt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_text(c: Comparison, width: int | None = None) -> str:
    """The terminal's report at its width: the details per section, then the summary (one row per
    variant, or per variant and sweep value) and the verdict last, where the eye lands."""
    width = width or terminal.width()
    legal = c.legal
    keys = _keys(c)
    lines = _wrap(f"kgen ab: {c.spec_name} ({c.spec_path}, {c.arch})"
                  + (f", sweep {c.sweep_field}" if c.sweep_field else ""), width, "", "  ")
    for title, cols in detail_sections(c):
        lines += [""] + split_tables(title, keys, cols, width)
    lines += ["", "kernel ids:"]
    for r in legal:
        name = r.label
        lines += _wrap(f"{name}: {r.kernel_id}" + (f" (same kernel as {r.same_as}: not run twice)" if r.same_as else ""),
                       width)
    summary = summary_columns(c)
    plain = [col for col in summary if col[0] != "float64(d)"]
    split = len(split_columns(keys, summary, width)[1]) > len(split_columns(keys, plain, width)[1])
    # the verdict's column would split the summary: it goes under it, one line for every row
    lines += [""] + split_tables("summary, predicted by kgen's model (* fastest)", keys, plain if split else summary, width)
    if split:
        lines += _wrap("float64 (d): " + ", ".join(f"{r.label} {float64_short(r.numerics.float64)}" for r in legal),
                       width)
    note = legal[0].numerics.note + (" (in a sweep, each row at its own K)" if c.sweep_field else "")
    lines += _wrap(base_words(c), width)
    lines += _wrap(f"(a) {UTILIZATION_NOTE}", width) + _wrap(f"(b) {ulp_note(c)}", width)
    lines += _wrap(f"(c) {rel_note()}", width) + _wrap(f"(d) {FLOAT64_NOTE}", width)
    lines += _wrap(f"numerics: {note}", width)
    for d in c.differences:
        lines += _wrap(f"{d.b} vs {d.a}" + (f" at {c.sweep_field} = {d.sweep}" if d.sweep is not None else "")
                       + f": {d.differing} of {d.elements} outputs differ (random inputs), by at most {d.max_ulp} ULP (b)"
                       + ("" if not d.differing else "; " + ", ".join(f"{k} ULP: {v}" for k, v in d.ulp_histogram
                                                                       if v and k != "0")), width)
    for r in c.rows:
        if r.illegal is not None:
            text = r.illegal if "[rule:" in r.illegal else f"{r.illegal} [rule: {r.rule}]"
            lines += _wrap(f"illegal: {r.label}: {text}", width)
    for v in c.verdict_facts:           # the answer last, where the eye lands: one fact a line
        lines += _wrap(f"verdict: {v.headline}", width, "", "    ")
        if not v.same:
            lines += _wrap(f"why: {v.cause}", width)
        lines += _wrap(f"error: {v.error_text}", width)
        if len(c.vary) > 1:
            lines += _wrap("each field with the others held fixed:", width)
            for e in v.effects:
                lines += _wrap(e.sentence, width, "    ", "      ")
        if v.emulation:
            lines += _wrap(f"emulation: {v.emulation}", width)
    for head, details in float64_verdict(c):      # the numerics verdict, last: are the numerics fine?
        lines += _wrap(f"float64: {head}", width, "", "    ")
        for line in details:
            lines += _wrap(line, width)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# CSV
# ----------------------------------------------------------------------------------------------

def disposition(r: Row) -> str:
    """What was checked: `passed`/`failed` only from an emulation or a card run; else not_verified."""
    if r.illegal is not None:
        return "illegal"
    if r.emulated is not None:
        return "passed" if r.emulated.ok else "failed"
    return "not_verified"


def csv_text(c: Comparison) -> str:
    """One line per variant, CUTLASS-profiler style: identity, disposition (what a check found, or
    not_verified), the problem, then the measures: Runtime (ms) only from a card (--device), the
    model's prediction in predicted_ms, and kgen's own columns."""
    header = ["Problem", "Provider", "OperationKind", "Operation", "Variant", "Disposition", "Rule",
              "m", "n", "k", "sweep_field", "sweep_value", "same_kernel_as", "policy", "partials_format",
              "math_fidelity", "fp32_dest_acc", "l1_bytes", "l1_margin", "dst_headroom", "Runtime", "GFLOPs",
              "predicted_ms", "predicted_GFLOPs", "predicted_utilization_full_grid", "bottleneck",
              *[f"ops:{k}" for k in OP_KINDS]]
    for d in DISTRIBUTIONS:
        header += [f"{d}:max_abs", f"{d}:max_rel", f"{d}:pcc", f"{d}:max_ulp"]
    header += ["emulated", "device_us", "device_pcc", "float64", "float64_worst_ratio", "emulated_float64"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for i, r in enumerate(c.rows):
        head = [i, "kgen", "gemm", r.kernel_id or "", r.variant]
        if r.illegal is not None:
            w.writerow(head + ["illegal", r.rule] + [""] * (len(header) - len(head) - 2))
            continue
        p, s = r.plan, r.speed
        dims = _dims(c, r)
        flops = 2.0 * dims[0] * dims[1] * dims[2]
        runtime = "" if r.measured is None else r.measured.microseconds / 1000.0
        gflops = "" if r.measured is None else flops / (r.measured.microseconds * 1e-6) / 1e9
        line = head + [disposition(r), "", *dims, c.sweep_field or "", r.sweep if r.sweep is not None else "",
                       r.same_as or "", p.policy, p.partials_format, p.math_fidelity, p.fp32_dest_acc, p.l1_bytes,
                       p.l1_margin, p.dst_headroom, runtime, gflops, s.microseconds / 1000.0, s.tflops * 1000.0,
                       s.utilization, s.bottleneck, *[r.op(k) for k in OP_KINDS]]
        for d in DISTRIBUTIONS:
            e = r.numerics.of(d)
            line += [e.max_abs, _blank(e.max_rel), _blank(e.pcc), e.max_ulp]
        line += ["" if r.emulated is None else ("bit-exact" if r.emulated.exact_match else r.emulated.status),
                 "" if r.measured is None else r.measured.microseconds,
                 "" if r.measured is None else _blank(r.measured.pcc)]
        f64, e64 = r.numerics.float64, r.emulated.float64 if r.emulated is not None else None
        line += ["" if f64 is None else ("within" if f64.within else "beyond"),
                 "" if f64 is None else f64.worst_ratio,
                 "" if e64 is None else ("within" if e64.within else "beyond")]
        w.writerow(line)
    return buf.getvalue()


def _blank(value: float | None) -> Any:
    return "" if value is None else value


def _dims(c: Comparison, r: Row) -> list[int]:
    m = re.search(r"shape\s*=\s*(\d+)\s*x\s*(\d+)\s*x\s*(\d+)", c.spec_text)
    dims = [int(v) for v in m.groups()] if m else [0, 0, 0]
    for key, value in r.overrides:
        if key == "shape":
            dims = [int(v) for v in value.split("x")]
    if c.sweep_field in ("M", "N", "K") and r.sweep is not None:
        dims["MNK".index(c.sweep_field)] = r.sweep
    dims[2] = r.numerics.k
    return dims


# ----------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------

def _svg(fig) -> str:
    """A matplotlib figure as inline SVG: text kept as text, no metadata, no XML prologue, no
    namespace URLs (an inline <svg> in HTML needs none)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight",
                metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text, count=0)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    return text


def _label(r: Row) -> str:
    return r.variant + (f" (= {r.same_as})" if r.same_as else "")


def _finish(ax, legend: bool = False) -> None:
    """A legend outside the axes (never over the data), and a light grid."""
    ax.grid(True, axis="both", alpha=0.3)
    ax.set_axisbelow(True)
    if legend:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def _linear_or_log(ax, values) -> None:
    """A linear y axis unless the values span more than 20x (then log, labelled at 1-2-5 steps, so
    the small ones stay visible); tick labels with thousands separators either way."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    positive = [v for v in values if v > 0]
    if positive and max(positive) > 20 * min(positive):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:g}"))


@dataclass(frozen=True)
class _Charts:
    """What the charts of one comparison share."""
    c: Comparison
    plt: Any
    np: Any
    thousands: Any                  # an axis formatter: 12,345
    first: dict[int | None, Row]    # the base's row at each sweep value
    base_name: str
    lines: list[str]                # one line per distinct kernel: a twin would hide the variant it repeats
    line_label: dict[str, str]
    rows: list[Row]                 # the per-variant charts' rows: a sweep's at its last value
    at: str                         # " at K = 4,096" in a sweep


def charts(c: Comparison) -> dict[str, str]:
    """Inline SVG charts, each of one measure with units on its axes: predicted time (lines against
    the swept value in a sweep), busy time per processor, max ULP and the ULP histogram (the verdict's
    scale), L1 per CB region (bytes, as the table) and op counts."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "kgen-ab", "font.size": 9})
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    from kgen.perf.ab import BASE

    legal = c.legal
    variants = list(dict.fromkeys(r.variant for r in legal))
    first = {r.sweep: c.base_at(r.sweep) for r in legal}
    twins: dict[str, list[str]] = {}
    for r in legal:
        if r.same_as is not None and r.variant not in twins.get(r.same_as, []):
            twins.setdefault(r.same_as, []).append(r.variant)
    lines = [v for v in variants if not any(r.same_as for r in legal if r.variant == v)]
    k = _Charts(c, plt, np, FuncFormatter(lambda v, _: f"{v:,.0f}"), first,
                "base" if c.base == BASE else f"base ({c.base})", lines,
                {v: v + "".join(f" (= {t})" for t in twins.get(v, [])) for v in lines},
                legal if c.sweep_field is None else [r for r in legal if r.sweep == c.sweep_values[-1]],
                f" at {c.sweep_field} = {c.sweep_values[-1]:,}" if c.sweep_field else "")
    return {"time": _time_chart(k) if c.sweep_field is None else _time_sweep_chart(k), "busy": _busy_chart(k),
            "error": _error_chart(k) if c.sweep_field is None else _error_sweep_chart(k),
            "hist": _histogram_chart(k), "l1": _l1_chart(k), "ops": _ops_chart(k)}


def _time_chart(k: _Charts) -> str:
    """Predicted time per variant, with the speed-up against the base at each bar's end."""
    legal, np = k.c.legal, k.np
    n = len(legal)
    fig, ax = k.plt.subplots(figsize=(9, 0.9 + 0.42 * n))
    y = np.arange(n)[::-1]
    times = [r.speed.microseconds for r in legal]
    ax.barh(y, times, 0.6, color=["C2" if r.variant == k.c.verdict_facts[0].winner else "C0" for r in legal])
    for yi, r in zip(y, legal):
        ax.annotate(f"{k.first[None].speed.cycles / r.speed.cycles:.2f}x", (r.speed.microseconds, yi),
                    xytext=(4, 0), textcoords="offset points", va="center", ha="left", fontsize=8)
    ax.set_xlim(0, max(times) * 1.18)
    ax.set_yticks(y, [_label(r) for r in legal])
    ax.set_xlabel("predicted device time (us)")
    ax.set_ylabel("variant")
    ax.xaxis.set_major_formatter(k.thousands)
    ax.set_title(f"Predicted time per variant; labels: speed-up vs {k.base_name} (green: the verdict's fastest)", fontsize=9,
                 wrap=True)
    _finish(ax)
    return _svg(fig)


def _sweep_axis(ax, c: Comparison) -> None:
    ax.set_xlabel(f"{c.sweep_field} (elements)" if c.sweep_field in ("M", "N", "K") else c.sweep_field)
    if c.sweep_field in ("M", "N", "K"):
        ax.set_xscale("log", base=2)
    ax.set_xticks(list(c.sweep_values), [f"{v:,}" for v in c.sweep_values])
    ax.minorticks_off()


def _time_sweep_chart(k: _Charts) -> str:
    """A sweep: predicted time and speed-up against the base, one line per variant."""
    legal = k.c.legal
    fig, axes = k.plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"wspace": 0.35})
    for v in k.lines:
        pts = sorted((r.sweep, r.speed.microseconds, k.first[r.sweep].speed.cycles / r.speed.cycles)
                     for r in legal if r.variant == v)
        xs = [p[0] for p in pts]
        axes[0].plot(xs, [p[1] for p in pts], marker="o", label=k.line_label[v])
        axes[1].plot(xs, [p[2] for p in pts], marker="o", label=k.line_label[v])
    _linear_or_log(axes[0], [r.speed.microseconds for r in legal])
    axes[0].set_ylabel("predicted device time (us)")
    axes[0].set_title("Predicted time", fontsize=9)
    axes[1].set_ylabel(f"speed-up vs {k.base_name} (x)")
    axes[1].set_title(f"Predicted speed-up vs {k.base_name}", fontsize=9)
    for ax in axes:
        _sweep_axis(ax, k.c)
        _finish(ax)
    _finish(axes[1], legend=True)
    return _svg(fig)


def _busy_chart(k: _Charts) -> str:
    """Busy time per processor of the critical core, per variant."""
    rows, np = k.rows, k.np
    procs = [name for name, _ in k.c.legal[0].speed.processors]
    n = len(rows)
    fig, ax = k.plt.subplots(figsize=(9, 0.9 + 0.22 * n * len(procs)))
    h = 0.8 / len(procs)
    y = np.arange(n)[::-1]
    for j, proc in enumerate(procs):
        us = [dict(r.speed.processors)[proc] / r.speed.cycles * r.speed.microseconds for r in rows]
        ax.barh(y + 0.4 - (j + 0.5) * h, us, h, label=PROCESSOR_SHORT.get(proc, proc))
    ax.set_yticks(y, [_label(r) for r in rows])
    ax.set_xlabel("predicted busy time on the critical core (us)")
    ax.set_ylabel("variant")
    ax.xaxis.set_major_formatter(k.thousands)
    ax.set_title(f"Busy time per processor{k.at}", fontsize=9)
    _finish(ax, legend=True)
    return _svg(fig)


def _error_chart(k: _Charts) -> str:
    """Max ULP on the random inputs per variant: the verdict's measure."""
    legal, np = k.c.legal, k.np
    fig, ax = k.plt.subplots(figsize=(9, 0.9 + 0.42 * len(legal)))
    y = np.arange(len(legal))[::-1]
    ulps = [r.numerics.of("random").max_ulp for r in legal]
    ax.barh(y, ulps, 0.6, color="C1")
    for yi, u in zip(y, ulps):
        ax.annotate(f"{u:,}", (u, yi), xytext=(4, 0), textcoords="offset points", va="center", ha="left",
                    fontsize=8)
    ax.set_xlim(0, max(max(ulps), 1) * 1.18)
    ax.set_yticks(y, [_label(r) for r in legal])
    ax.set_xlabel(f"max error ({legal[0].numerics.ulp_format} ULP vs float64 rounded to the output)")
    ax.set_ylabel("variant")
    ax.set_title(f"Max error, random inputs, K = {legal[0].numerics.k:,}", fontsize=9)
    _finish(ax)
    return _svg(fig)


def _error_sweep_chart(k: _Charts) -> str:
    """A sweep: max ULP on the random inputs, one line per variant."""
    legal = k.c.legal
    fig, ax = k.plt.subplots(figsize=(9, 3.6))
    for v in k.lines:
        pts = sorted((r.sweep, r.numerics.of("random").max_ulp) for r in legal if r.variant == v)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k.line_label[v])
    _linear_or_log(ax, [r.numerics.of("random").max_ulp for r in legal])
    _sweep_axis(ax, k.c)
    ax.set_ylabel(f"max error ({legal[0].numerics.ulp_format} ULP)")
    ax.set_title("Max error vs float64 rounded to the output, random inputs", fontsize=9)
    _finish(ax, legend=True)
    return _svg(fig)


def _histogram_chart(k: _Charts) -> str:
    """The ULP histogram per variant (random inputs)."""
    rows, np = k.rows, k.np
    bins = [label for label, _ in rows[0].numerics.of("random").ulp_histogram]
    fig, ax = k.plt.subplots(figsize=(9, 3.4))
    x = np.arange(len(bins))
    bw = 0.8 / len(rows)
    for i, r in enumerate(rows):
        ax.bar(x - 0.4 + (i + 0.5) * bw, [n for _, n in r.numerics.of("random").ulp_histogram], bw, label=_label(r))
    ax.set_xticks(x, bins)
    ax.set_xlabel(f"error ({k.c.legal[0].numerics.ulp_format} ULP vs float64 rounded to the output)")
    ax.set_ylabel("outputs (count)")
    ax.set_title(f"Outputs per error bin, random inputs{k.at}", fontsize=9)
    _finish(ax, legend=True)
    return _svg(fig)


def _l1_chart(k: _Charts) -> str:
    """L1 per CB region, stacked, in bytes (as the table), against the usable L1."""
    rows, np = k.rows, k.np
    fig, ax = k.plt.subplots(figsize=(9, 0.9 + 0.42 * len(rows)))
    names = list(dict.fromkeys(g.name for r in rows for g in r.plan.regions))
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    for name in names:
        vals = np.array([next((g.bytes for g in r.plan.regions if g.name == name), 0) for r in rows], float)
        ax.barh(y, vals, 0.6, left=left, label=name)
        left += vals
    usable = rows[0].plan.l1_usable
    ax.axvline(usable, color="red", linestyle="--", label=f"usable L1 ({usable:,} bytes)")
    ax.set_yticks(y, [_label(r) for r in rows])
    ax.set_xlabel("L1 per core (bytes)")
    ax.set_ylabel("variant")
    ax.xaxis.set_major_formatter(k.thousands)
    ax.tick_params(axis="x", labelrotation=20)
    ax.set_title(f"L1 per CB region, against the usable L1{k.at}", fontsize=9)
    _finish(ax, legend=True)
    return _svg(fig)


def _ops_chart(k: _Charts) -> str:
    """Op counts per kind (no bar: zero)."""
    rows, np = k.rows, k.np
    kinds = list(OP_KINDS)
    fig, ax = k.plt.subplots(figsize=(9, 1.0 + 0.16 * len(kinds) * len(rows)))
    y = np.arange(len(kinds))[::-1]
    bh = 0.8 / len(rows)
    for i, r in enumerate(rows):
        counts = np.array([r.op(kind) for kind in kinds], float)
        ax.barh(y + 0.4 - (i + 0.5) * bh, np.where(counts > 0, counts, np.nan), bh, label=_label(r))
    ax.set_xscale("log")
    ax.set_yticks(y, kinds)
    ax.set_xlabel("count over the whole program (log scale; no bar: zero)")
    ax.set_ylabel("op kind")
    ax.set_title(f"Op counts per kind, from the verified IR{k.at}", fontsize=9)
    _finish(ax, legend=True)
    return _svg(fig)


def html_text(c: Comparison) -> str:
    import jinja2

    from kgen.core.resources import data_dir

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    legal = c.legal
    keys, cells = aligned(legal)
    rows = []
    section = None
    for sec, label in keys:
        if sec != section:
            rows.append({"section": sec})
            section = sec
        line = []
        for r, col in zip(legal, cells):
            path, text = col.get((sec, label), (None, "-"))
            # a figure without a JSON path (a rounded share, a pair) still aligns as a number
            line.append({"text": text, "path": f"variants/{r.kernel_id}/{path}" if path else None,
                         "num": bool(re.fullmatch(r"-?[\d.,]+(e[-+]\d+)?( / -?[\d.,]+(e[-+]\d+)?)?", text))})
        rows.append({"label": label, "cells": line})
    note = legal[0].numerics.note + (" (in a sweep, each row at its own K)" if c.sweep_field else "")
    keys = _keys(c)
    summary_cols = summary_columns(c)
    summary = {"headers": [h for h, _ in keys] + [h for h, _, _ in summary_cols[1:]],
               "numeric": [False] * len(keys) + [n for _, _, n in summary_cols[1:]],
               "rows": [{"cells": [cells[i] for _, cells in keys] + [cells[i] for _, cells, _ in summary_cols[1:]],
                         "winner": summary_cols[0][1][i].startswith("*"), "same_as": legal[i].same_as,
                         "base": bool(c.vary) and legal[i] is c.base_at(legal[i].sweep)}
                        for i in range(len(legal))]}
    return env.get_template("report/ab.html.j2").render(
        c=c, legal=legal, rows=rows, charts=charts(c), note=note, summary=summary, base_words=base_words(c),

        notes={"utilization": UTILIZATION_NOTE, "ulp": ulp_note(c), "rel": rel_note(), "float64": FLOAT64_NOTE},
        float64={"verdict": float64_verdict(c)},
        illegal=[r for r in c.rows if r.illegal is not None])
