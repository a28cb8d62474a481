"""`kgen ab`'s numerics verdict in words: each variant's output against float64 of the math, within
its bound (kgen.proof.oracle), as a table cell, a sentence and the comparison's headline. The
terminal, CSV, JSON and HTML outputs (kgen.perf.abreport) and ab's progress lines print these."""

from __future__ import annotations

import math

from kgen.perf.abvalues import Comparison


FLOAT64_NOTE = (
    "float64: each output of the proxy against float64 of the math on the same (quantised) inputs "
    "(kgen/proof/oracle.py: the bias and the activation from their own definitions, not kgen's "
    "activation table), within a bound summed stage by stage: the matmul's own error (the golden "
    "model's output through the same flow with a zero bias row and no ReLU or activation, against "
    "float64), one ULP per rounding, the "
    "activation's Lipschitz constant times its input's error plus the accuracy of TT's SFPU code for "
    "it. 'within R': the worst output came to R of its bound (near 1 is usual: the matmul's error is "
    "most of it); 'BEYOND xR (stage)': R times it, in that stage. The matmul's own error is part of "
    "the bound, not judged by it: a plain matmul is within by construction")


def _stage(check) -> str:
    """The stage a check names beyond its bound, short: `selu`, `hardtanh`, `bias`, `matmul`."""
    name = check.culprit.split("(")[0].strip()
    return name[len("the "):] if name.startswith("the ") else name


def _times(ratio: float) -> str:
    return f"{ratio:.1f}" if ratio < 100 else f"{ratio:,.0f}"


def share_of_bound(ratio: float) -> str:
    """A share of the bound, rounded down: a worst output within it never shows as 1.00 unless it
    is exactly at it."""
    return f"{math.floor(ratio * 100 + 1e-9) / 100:.2f}"


def float64_short(check) -> str:
    """A cell: `within 0.41` (the worst output came to 0.41 of its bound) or `BEYOND x3.2 (selu)`."""
    if check is None:
        return "-"
    if check.within:
        return f"within {share_of_bound(check.worst_ratio)}"
    if not math.isfinite(check.worst_ratio):
        return f"BEYOND: NaN ({_stage(check)})"
    return f"BEYOND x{_times(check.worst_ratio)} ({_stage(check)})"


def verdict_word(check) -> str:
    return "-" if check is None else "within" if check.within else f"BEYOND ({_stage(check)})"


def output_place(check) -> str:
    r, c = check.worst
    return f"output [{r}, {c}]"


def float64_sentence(check, at: str) -> str:
    """The verdict in words: within, and how close the worst output came; or beyond, in which
    stage, by how much, at which output, with both values. `at`: where that output is."""
    if check.within:
        return (f"within its float64 bound: the worst output ({at}) came to {share_of_bound(check.worst_ratio)} of it, "
                f"max |err| {check.max_abs_err:.3g} ({check.what})")
    return (f"BEYOND its float64 bound in {_stage(check)}, {_times(check.worst_ratio)} times it: at {at} "
            f"kgen {check.worst_out:.6g}, float64 {check.worst_ref:.6g}, |err| "
            f"{abs(check.worst_out - check.worst_ref):.3g} > bound {check.worst_bound:.3g} ({check.what})")


def all_within(c: Comparison) -> bool:
    return all(r.numerics.float64 is None or r.numerics.float64.within for r in c.legal)


def float64_verdict(c: Comparison) -> list[tuple[str, list[str]]]:
    """The numerics verdict of the whole comparison: (headline, details) for the golden model's
    outputs, then for the emulated ones when there are any. Within: every variant within its bound,
    and the one that came closest; beyond: which variants, by how much, in which stage, and per
    variant its worst output with both values."""
    out: list[tuple[str, list[str]]] = []
    for what, checks in (("", [(r, r.numerics.float64, r.numerics.float64_at) for r in c.legal]),
                         (" in emulation", [(r, r.emulated.float64, "") for r in c.legal if r.emulated is not None])):
        checks = [(r, f, at) for r, f, at in checks if f is not None]
        if not checks:
            continue
        beyond = [(r, f, at) for r, f, at in checks if not f.within]
        if not beyond:
            r, f, _ = max(checks, key=lambda t: t[1].worst_ratio)
            every = f"every variant{what} is" if len(checks) > 1 else f"{r.label}{what} is"
            out.append((f"{every} within its bound (d); the closest, {r.label}, came to "
                        f"{share_of_bound(f.worst_ratio)} of it", []))
            continue
        within = [r.label for r, f, _ in checks if f.within]
        out.append((f"BEYOND the bound (d){what}: "
                    + ", ".join(f"{r.label} x{_times(f.worst_ratio)} in {_stage(f)}" for r, f, _ in beyond)
                    + (f"; within it: {', '.join(within)}" if within else ""),
                    [f"{r.label}: {float64_sentence(f, at or output_place(f))}" for r, f, at in beyond]))
    return out


def float64_sentences(c: Comparison) -> list[str]:
    return [line for head, details in float64_verdict(c) for line in (head, *details)]
