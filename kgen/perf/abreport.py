"""`kgen ab`'s outputs: a compact terminal table, JSON (one row per variant keyed by kernel id), CSV
(one line per variant, CUTLASS-profiler style) and one self-contained HTML file whose charts
matplotlib draws as inline SVG (templates/report/ab.html.j2 prints it)."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import asdict
from typing import Any

from kgen.perf.ab import DISTRIBUTIONS, OP_KINDS, Comparison, Row

PROCESSOR_SHORT = {"TRISC0 unpack": "unpack", "TRISC1 math": "math", "TRISC2 pack": "pack", "BRISC": "BRISC",
                   "NCRISC": "NCRISC"}


# ----------------------------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------------------------

def row_to_dict(r: Row) -> dict[str, Any]:
    d: dict[str, Any] = {"variant": r.variant, "sweep": r.sweep, "overrides": dict(r.overrides),
                         "kernel_id": r.kernel_id, "legal": r.illegal is None}
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
    d.update(plan=plan, ops=dict(r.ops), speed=speed, numerics=numerics,
             emulated=asdict(r.emulated) if r.emulated else None,
             measured=asdict(r.measured) if r.measured else None)
    return d


def comparison_to_dict(c: Comparison) -> dict[str, Any]:
    return {
        "spec": c.spec_path, "name": c.spec_name, "arch": c.arch, "command": c.command, "seed": c.seed,
        "vary": {k: list(v) for k, v in c.vary},
        "sweep": {"field": c.sweep_field, "values": list(c.sweep_values)} if c.sweep_field else None,
        "verdicts": list(c.verdicts),
        "variants": {r.kernel_id: row_to_dict(r) for r in c.legal},
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
    out += [("speed", "device us", "speed/microseconds", f"{s.microseconds:,.1f}"),
            ("speed", "TFLOPS", "speed/tflops", f"{s.tflops:,.1f}"),
            ("speed", "utilization %", "speed/utilization", f"{100 * s.utilization:.1f}"),
            ("speed", "bottleneck", None, s.bottleneck)]
    for kind in OP_KINDS:
        out.append(("ops", kind, f"ops/{kind}", f"{r.op(kind):,}"))
    for d in DISTRIBUTIONS:
        e = n.of(d)
        out += [(f"numerics {d}", "max ULP", f"numerics/errors/{d}/max_ulp", f"{e.max_ulp:,}"),
                (f"numerics {d}", "max rel", f"numerics/errors/{d}/max_rel", f"{e.max_rel:.3g}"),
                (f"numerics {d}", "PCC", f"numerics/errors/{d}/pcc", f"{e.pcc:.6f}")]
        if d == "random":        # the distribution of ULP differences, bins as ab.ULP_BINS
            out.append((f"numerics {d}", "ULPs " + "/".join(label for label, _ in e.ulp_histogram), None,
                        "/".join(str(count) for _, count in e.ulp_histogram)))
        if d == "all_ones":      # the exact sum is K (tt-metal #8449)
            out.append((f"numerics {d}", "value (exact sum: K)", f"numerics/errors/{d}/first_value",
                        f"{e.first_value:g}"))
    if r.emulated is not None:
        em = r.emulated
        word = "bit-exact" if em.exact_match else ("close" if em.ok else "DIFFERS")
        out.append(("emulation", f"{em.numerics}", None, f"{em.status}, {word}"))
        out.append(("emulation", "seconds", "emulated/seconds", f"{em.seconds:.2f}"))
    if r.measured is not None:
        out.append(("device", "device us (median)", "measured/microseconds", f"{r.measured.microseconds:,.1f}"))
        out.append(("device", "PCC", "measured/pcc", f"{r.measured.pcc:.6f}"))
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
    from kgen.perf.ab import ULP_FLOOR

    legal = c.legal
    return (f"ULP: distance from the float64 result rounded to the output's grid ({legal[0].numerics.ulp_format}; "
            f"0 = correctly rounded), in the grid's spacing at the result's magnitude, never below "
            f"{ULP_FLOOR:g} x the largest result; the one error scale, per variant and between variants")


def rel_note() -> str:
    from kgen.perf.ab import PCC_MIN_SPREAD, REL_FLOOR

    return (f"max rel: over the outputs whose float64 result is at least {REL_FLOOR:.0%} of the largest "
            f"(nearer zero a relative error measures cancellation, not the kernel); PCC: '-' where an output "
            f"or its reference is constant, or the reference's spread is under {PCC_MIN_SPREAD:.0%} of its RMS "
            f"(similar positive sums: PCC would measure the error, not the agreement)").replace("%", " %")


def width_of_terminal() -> int:
    """The terminal's width: $COLUMNS, else the terminal's own, else 100."""
    import shutil

    return max(60, shutil.get_terminal_size((100, 24)).columns)


def _wrap(text: str, width: int, indent: str = "  ", more: str = "    ") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=more,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def _tables(title: str, keys: list[tuple[str, list[str]]], columns: list[tuple[str, list[str], bool]],
            width: int) -> list[str]:
    """Rows per variant (`keys`: header and cells of the leading columns), one column per figure,
    split into as many tables as it takes to fit `width`; numbers right-aligned."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    def need(header: str, cells: list[str]) -> int:
        return max([len(c) for c in cells] + [len(w) for w in header.split()] + [1])

    def make(chunk: list[tuple[str, list[str], bool]], title_text: str) -> Table:
        table = Table(title=title_text, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, show_edge=False)
        for h, cells in keys:
            table.add_column(h, no_wrap=True, min_width=need(h, cells))
        for h, cells, numeric in chunk:
            table.add_column(h, justify="right" if numeric else "left", overflow="fold", min_width=need(h, cells))
        for j in range(len(keys[0][1])):
            table.add_row(*[cells[j] for _, cells in keys], *[cells[j] for _, cells, _ in chunk])
        return table

    measure = Console(width=10_000, color_system=None)
    chunks: list[list[tuple[str, list[str], bool]]] = [[]]
    for col in columns:       # each table takes columns while their unwrapped layout fits
        if chunks[-1] and measure.measure(make(chunks[-1] + [col], "")).maximum > width:
            chunks.append([])
        chunks[-1].append(col)
    out = []
    for i, chunk in enumerate(chunks):
        table = make(chunk, title + (f" ({i + 1} of {len(chunks)})" if len(chunks) > 1 else ""))
        buf = io.StringIO()
        Console(file=buf, width=width, force_terminal=False, color_system=None, soft_wrap=False).print(table)
        out += [line.rstrip() for line in buf.getvalue().rstrip().splitlines()]
    return out


def summary_columns(c: Comparison) -> list[tuple[str, list[str], bool]]:
    """The answer's columns, one row per variant: predicted time, speed-up against the base (the
    first variant at the same sweep value), TFLOPS, utilization, max ULP, policy, and the mark:
    * for the fastest, `= NAME` for the same kernel as NAME."""
    legal = c.legal
    base = {}
    for r in legal:
        base.setdefault(r.sweep, r)
    winners = {(v.sweep, v.winner) for v in c.verdict_facts if not v.same}
    mark = [" ".join(filter(None, ["*" if (r.sweep, r.variant) in winners else "",
                                   f"= {r.same_as}" if r.same_as else ""])) for r in legal]
    cols = [
        ("", mark, False),
        ("time us", [f"{r.speed.microseconds:,.1f}" for r in legal], True),
        ("vs base", [f"{base[r.sweep].speed.cycles / r.speed.cycles:.2f}x" for r in legal], True),
        ("TFLOPS", [f"{r.speed.tflops:,.1f}" for r in legal], True),
        ("util %(a)", [f"{100 * r.speed.utilization:.1f}" for r in legal], True),
        ("max ULP(b)", [f"{r.numerics.of('random').max_ulp:,}" for r in legal], True),
        ("policy", [r.plan.policy for r in legal], False),
    ]
    if "compute.math_fidelity" not in dict(c.vary):
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
    out = [("plan", plan), ("speed", speed), ("op counts (whole program, from the verified IR)", ops),
           ("max ULP (b), per input distribution", ulp), ("max rel (c), per input distribution", rel),
           ("PCC (c), per input distribution", pccs), ("outputs per ULP error (b), random inputs", hist)]
    if any(r.emulated for r in legal):
        out.append(("emulation", [
            ("numerics", [r.emulated.numerics if r.emulated else "-" for r in legal], False),
            ("result", [(r.emulated.status + (", bit-exact" if r.emulated.exact_match else ", close" if r.emulated.ok
                         else ", DIFFERS")) if r.emulated else "-" for r in legal], False),
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
    width = width or width_of_terminal()
    legal = c.legal
    keys = _keys(c)
    lines = _wrap(f"kgen ab: {c.spec_name} ({c.spec_path}, {c.arch})"
                  + (f", sweep {c.sweep_field}" if c.sweep_field else ""), width, "", "  ")
    for title, cols in detail_sections(c):
        lines += [""] + _tables(title, keys, cols, width)
    lines += ["", "kernel ids:"]
    for r in legal:
        name = r.label
        lines += _wrap(f"{name}: {r.kernel_id}" + (f" (same kernel as {r.same_as}: not run twice)" if r.same_as else ""),
                       width)
    lines += [""] + _tables("summary, predicted by kgen's model (* fastest)", keys,
                            summary_columns(c), width)
    note = legal[0].numerics.note + (" (in a sweep, each row at its own K)" if c.sweep_field else "")
    lines += _wrap(f"(a) {UTILIZATION_NOTE}", width) + _wrap(f"(b) {ulp_note(c)}", width)
    lines += _wrap(f"(c) {rel_note()}", width) + _wrap(f"numerics: {note}", width)
    for d in c.differences:
        lines += _wrap(f"{d.b} vs {d.a}" + (f" at {c.sweep_field} = {d.sweep}" if d.sweep is not None else "")
                       + f": {d.differing} of {d.elements} outputs differ (random inputs), by at most {d.max_ulp} ULP (b)"
                       + ("" if not d.differing else "; " + ", ".join(f"{k} ULP: {v}" for k, v in d.ulp_histogram
                                                                       if v and k != "0")), width)
    for r in c.rows:
        if r.illegal is not None:
            text = r.illegal if "[rule:" in r.illegal else f"{r.illegal} [rule: {r.rule}]"
            lines += _wrap(f"illegal: {r.label}: {text}", width)
    for v in c.verdict_facts:
        lines += _wrap(f"verdict: {v.sentence}", width)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# CSV
# ----------------------------------------------------------------------------------------------

def csv_text(c: Comparison) -> str:
    """One line per variant, CUTLASS-profiler style: identity, disposition, the problem, then the
    measures (Runtime in ms, GFLOPs) and kgen's own columns."""
    header = ["Problem", "Provider", "OperationKind", "Operation", "Variant", "Disposition", "Rule",
              "m", "n", "k", "sweep_field", "sweep_value", "policy", "partials_format", "math_fidelity",
              "fp32_dest_acc", "l1_bytes", "l1_margin", "dst_headroom", "Runtime", "GFLOPs", "utilization",
              "bottleneck", *[f"ops:{k}" for k in OP_KINDS]]
    for d in DISTRIBUTIONS:
        header += [f"{d}:max_abs", f"{d}:max_rel", f"{d}:pcc", f"{d}:max_ulp"]
    header += ["emulated", "device_us", "device_pcc"]
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
        line = head + ["passed", "", *dims, c.sweep_field or "", r.sweep if r.sweep is not None else "",
                       p.policy, p.partials_format, p.math_fidelity, p.fp32_dest_acc, p.l1_bytes, p.l1_margin,
                       p.dst_headroom, s.microseconds / 1000.0, s.tflops * 1000.0, s.utilization, s.bottleneck,
                       *[r.op(k) for k in OP_KINDS]]
        for d in DISTRIBUTIONS:
            e = r.numerics.of(d)
            line += [e.max_abs, e.max_rel, e.pcc, e.max_ulp]
        line += ["" if r.emulated is None else ("bit-exact" if r.emulated.exact_match else r.emulated.status),
                 "" if r.measured is None else r.measured.microseconds, "" if r.measured is None else r.measured.pcc]
        w.writerow(line)
    return buf.getvalue()


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


def charts(c: Comparison) -> dict[str, str]:
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "kgen-ab", "font.size": 9})
    import matplotlib.pyplot as plt
    import numpy as np

    legal = c.legal
    labels = [r.label for r in legal]
    out: dict[str, str] = {}

    # 1. predicted time, with the busy time of each processor of the critical core
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(legal) + 2), 3.6))
    procs = [name for name, _ in legal[0].speed.processors]
    width = 0.8 / (len(procs) + 1)
    x = np.arange(len(legal))
    for j, proc in enumerate(procs):
        us = [dict(r.speed.processors)[proc] / r.speed.cycles * r.speed.microseconds for r in legal]
        ax.bar(x + j * width, us, width, label=f"{PROCESSOR_SHORT.get(proc, proc)} busy")
    ax.bar(x + len(procs) * width, [r.speed.microseconds for r in legal], width, color="black", label="device time")
    ax.set_xticks(x + 0.4 - width / 2, labels, rotation=20, ha="right")
    ax.set_ylabel("predicted us")
    times = [r.speed.microseconds for r in legal]
    if max(times) > 20 * min(times):          # a sweep over K spans decades: keep the small ones visible
        ax.set_yscale("log")
    ax.set_title("Predicted device time and busy time per processor (critical core)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    out["time"] = _svg(fig)

    # 2. error against the swept dimension per variant (without a sweep: per variant at the spec's K)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    variants = list(dict.fromkeys(r.variant for r in legal))
    for ax, dist in zip(axes, ("random", "positive")):
        if c.sweep_field is None:
            ax.bar(x, [max(r.numerics.of(dist).max_rel, 1e-12) for r in legal], 0.6,
                   color=[f"C{i}" for i in range(len(legal))])
            ax.set_xticks(x, labels, rotation=20, ha="right")
            ax.set_xlabel(f"variant (K = {legal[0].numerics.k})")
        else:
            for v in variants:
                pts = sorted((r.sweep, r.numerics.of(dist).max_rel) for r in legal if r.variant == v)
                ax.plot([p[0] for p in pts], [max(p[1], 1e-12) for p in pts], marker="o", label=v)
            ax.set_xlabel(c.sweep_field)
            if c.sweep_field in ("M", "N", "K"):
                ax.set_xscale("log", base=2)
            ax.legend(fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("max relative error")
        ax.set_title(f"Error vs float64, {dist} inputs")
    out["error"] = _svg(fig)

    # 3. L1 per CB region, stacked, against the arch's usable L1
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(legal) + 2), 3.6))
    names = list(dict.fromkeys(g.name for r in legal for g in r.plan.regions))
    bottom = np.zeros(len(legal))
    for name in names:
        vals = np.array([next((g.bytes for g in r.plan.regions if g.name == name), 0) for r in legal], float) / 1024
        ax.bar(x, vals, 0.6, bottom=bottom, label=name)
        bottom += vals
    usable = legal[0].plan.l1_usable / 1024
    ax.axhline(usable, color="red", linestyle="--", label=f"usable L1 ({usable:,.0f} KiB)")
    ax.set_xticks(x, labels, rotation=20, ha="right")
    ax.set_ylabel("KiB per core")
    ax.set_title("L1 per CB region, against the usable L1")
    ax.legend(fontsize=7, ncol=2)
    out["l1"] = _svg(fig)

    # 4. op counts per kind
    fig, ax = plt.subplots(figsize=(10, 3.8))
    kinds = list(OP_KINDS)
    kx = np.arange(len(kinds))
    bw = 0.8 / len(legal)
    for i, r in enumerate(legal):
        ax.bar(kx + i * bw, [max(r.op(k), 0.5) for k in kinds], bw, label=r.label)
    ax.set_yscale("log")
    ax.set_xticks(kx + 0.4 - bw / 2, kinds, rotation=30, ha="right")
    ax.set_ylabel("count (whole program)")
    ax.set_title("Op counts per kind, from the verified IR")
    ax.legend(fontsize=7)
    out["ops"] = _svg(fig)
    return out


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
            line.append({"text": text, "path": f"variants/{r.kernel_id}/{path}" if path else None})
        rows.append({"label": label, "cells": line})
    note = legal[0].numerics.note + (" (in a sweep, each row at its own K)" if c.sweep_field else "")
    return env.get_template("report/ab.html.j2").render(
        c=c, legal=legal, rows=rows, charts=charts(c), note=note,
        illegal=[r for r in c.rows if r.illegal is not None])
