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


def format_text(c: Comparison) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    legal = c.legal
    title = f"kgen ab: {c.spec_name} ({c.spec_path})" + (f", sweep {c.sweep_field}" if c.sweep_field else "")
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", show_lines=False, pad_edge=False)
    table.add_column("", no_wrap=True)
    for r in legal:
        table.add_column(r.label, overflow="fold", max_width=34)
    keys, cells = aligned(legal)
    table.add_row("kernel id", *[r.kernel_id for r in legal])
    section = None
    for sec, label in keys:
        if sec != section:
            table.add_row(f"[bold]{sec}[/bold]", *[""] * len(legal))
            section = sec
        table.add_row(f"  {label}", *[col.get((sec, label), (None, "-"))[1] for col in cells])
    buf = io.StringIO()
    console = Console(file=buf, width=max(100, 28 + 36 * len(legal)), force_terminal=False, color_system=None)
    console.print(table)
    lines = [buf.getvalue().rstrip()]
    note = legal[0].numerics.note + (" (in a sweep, each row at its own K)" if c.sweep_field else "")
    lines.append(f"  numerics: {note}; ULPs against the float64 result rounded to the output's grid "
                 f"({legal[0].numerics.ulp_format}; 0 = correctly rounded)")
    for d in c.differences:
        lines.append(f"  {d.b} vs {d.a}" + (f" at {c.sweep_field} = {d.sweep}" if d.sweep is not None else "")
                     + f": {d.differing} of {d.elements} outputs differ (random inputs), max {d.max_ulp} ULP; "
                     + ", ".join(f"{k}: {v}" for k, v in d.ulp_histogram if v))
    for r in c.rows:
        if r.illegal is not None:
            lines.append(f"  illegal: {r.label}: {r.illegal} [rule: {r.rule}]"
                         if "[rule:" not in r.illegal else f"  illegal: {r.label}: {r.illegal}")
    lines += [f"  verdict: {v}" for v in c.verdicts]
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
