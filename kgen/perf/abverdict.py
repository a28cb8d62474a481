"""What `kgen ab` concludes from its rows: the fastest and slowest variants and why, each varied
field's effect with the others held fixed, and how far the variants' outputs differ, all on the
model's predictions and one ULP scale (ULPs against the float64 result rounded to the output's
grid)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from kgen.perf.abvalues import AgainstBase, Difference, Effect, Row, Verdict
from kgen.proof.numerics import ulp_histogram


# The performance model's resolution: predicted times closer than this are "the same".
RESOLUTION = 0.01

SAME = f"the same within the model's resolution ({RESOLUTION:.0%})".replace("%", " %")


def _base_of(at: Sequence[Row], base: str | None) -> Row:
    """The base's row among `at`: the one named `base`, else (base illegal here) the first."""
    return next((r for r in at if r.variant == base), at[0])


def pairwise_differences(legal: list[Row], ulps: Mapping[tuple[str, int | None], np.ndarray],
                         base: str | None = None) -> tuple[Difference, ...]:
    """Each variant against the base (else the first legal one) at the same sweep value, on the
    `random` inputs, in the per-variant scale (signed ULPs against float64 rounded to the grid,
    subtracted)."""
    out = []
    for point in dict.fromkeys(r.sweep for r in legal):
        at = [r for r in legal if r.sweep == point]
        ref = _base_of(at, base)
        for r in at:
            if r is ref:
                continue
            a, b = ulps[(ref.variant, point)], ulps[(r.variant, point)]
            apart = np.abs(b - a)
            out.append(Difference(ref.variant, r.variant, point, "random", int(a.size), int(np.count_nonzero(apart)),
                                  int(apart.max(initial=0)), ulp_histogram(apart)))
    return tuple(out)


def _fewer(n: float, what: str) -> str:
    """`40 more partials reload copies` or `5,214 fewer ...`: a count and its sign in words."""
    return f"{abs(n):,.0f} {'more' if n > 0 else 'fewer'} {what}"


def _reason(fast: Row, slow: Row, a: str, b: str) -> str:
    """Why `fast` (named `a`) beats `slow` (`b`), in the model's and the IR's terms, each difference
    said of `a` against `b`: `40 more partials reload copies in spill than in base`, `5,214 more
    reload cycles on spill's critical core than on base's`."""
    bits = []
    if fast.plan.policy != slow.plan.policy:
        bits.append(f"{fast.plan.policy} vs {slow.plan.policy}")
    dr = fast.op("reload copies") - slow.op("reload copies")
    if dr:
        bits.append(f"{_fewer(dr, 'partials reload copies')} in {a} than in {b}")
        dc = fast.speed.reload_cycles - slow.speed.reload_cycles
        if dc:
            bits.append(f"{_fewer(dc, 'reload cycles')} on {a}'s critical core than on {b}'s")
    if fast.plan.math_fidelity != slow.plan.math_fidelity:
        bits.append(f"{fast.plan.math_fidelity} vs {slow.plan.math_fidelity} fidelity phases")
    busy_fast, busy_slow = dict(fast.speed.processors), dict(slow.speed.processors)
    proc = max(busy_slow, key=lambda q: abs(busy_slow[q] - busy_fast.get(q, 0.0)))
    delta = busy_fast.get(proc, 0.0) - busy_slow[proc]
    if round(delta):
        bits.append(f"{proc} busy {_fewer(delta, 'cycles')} on {a}'s critical core")
    if fast.speed.bottleneck != slow.speed.bottleneck:
        bits.append(f"{a} is {fast.speed.bottleneck}, {b} {slow.speed.bottleneck}")
    elif not bits:
        bits.append(f"both {fast.speed.bottleneck}")
    return "; ".join(bits)


def _ratio(slow: Row, fast: Row) -> float:
    return slow.speed.cycles / fast.speed.cycles


def _faster(fast: Row, slow: Row, what_fast: str, what_slow: str) -> tuple[float, bool, str]:
    ratio = _ratio(slow, fast)
    if ratio - 1.0 < RESOLUTION:
        return ratio, True, f"{what_fast} and {what_slow} are {SAME}"
    return ratio, False, f"{what_fast} is {ratio:.2f}x faster than {what_slow}"


def effects(rows: Sequence[Row], keys: Sequence[str]) -> tuple[Effect, ...]:
    """Each varied field's effect with the other varied fields held fixed: for every combination of
    the others' values, the field's fastest value against its slowest (predicted)."""
    if not keys:
        return ()
    value = {r.variant: dict(r.overrides) for r in rows}
    out = []
    for key in keys:
        others = [k for k in keys if k != key]
        groups: dict[tuple[tuple[str, str], ...], list[Row]] = {}
        for r in rows:
            groups.setdefault(tuple((k, value[r.variant][k]) for k in others), []).append(r)
        for held, group in groups.items():
            if len(group) < 2:
                continue
            fast = min(group, key=lambda r: r.speed.cycles)
            slow = max(group, key=lambda r: r.speed.cycles)
            name = key.rpartition(".")[2]
            ratio, same, text = _faster(fast, slow, f"{name}={value[fast.variant][key]}",
                                        f"{name}={value[slow.variant][key]}")
            at = ", ".join(f"{k.rpartition('.')[2]}={v}" for k, v in held)
            out.append(Effect(key, held, value[fast.variant][key], value[slow.variant][key], ratio, same,
                              text + (f" at {at}" if at else "")))
    return tuple(out)


def verdict(rows: Sequence[Row], sweep_field: str | None = None, point: int | None = None,
            keys: Sequence[str] = (), base: str | None = "base") -> Verdict:
    """The answer at one sweep value, against the base (the spec as written; the first row when it
    is not among `rows`): the fastest variant (predicted) and whether it beats base beyond the
    model's resolution, why, its max error against base's, each variant against base, each varied
    field's effect with the others held fixed, and emulation."""
    at = f" at {sweep_field} = {point}" if point is not None else ""
    ref = _base_of(rows, base)
    ranked = sorted(rows, key=lambda r: (r.speed.cycles, r is not ref))      # base first among equals
    fast = ranked[0]
    distinct = [r for r in ranked[1:] if r.kernel_id is None or r.kernel_id != fast.kernel_id]
    other = ref if fast is not ref else (distinct[0] if distinct else ref)  # what the fastest is compared with
    ulp = {r.variant: r.numerics.of("random").max_ulp for r in rows}
    against = tuple(AgainstBase(r.variant, _ratio(ref, r), abs(_ratio(ref, r) - 1.0) < RESOLUTION, ulp[r.variant])
                    for r in rows)
    found = effects(rows, keys)
    name = _named(ref)
    label = {r.variant: ("base" if r is ref else r.variant) for r in rows}
    if other is fast:
        ratio, same, cause = 1.0, True, ""
        head = f"{name}{at}: {fast.speed.microseconds:,.1f} us predicted (the only legal variant)"
    else:
        ratio = _ratio(other, fast)
        same = ratio - 1.0 < RESOLUTION
        if fast is ref:
            head = (f"{name} and the next fastest, {other.variant}, are {SAME}" if same else
                    f"{name} is the fastest, {ratio:.2f}x faster than the next, {other.variant}")
        else:
            head = f"{fast.variant} and {name} are {SAME}" if same else f"{fast.variant} is {ratio:.2f}x faster than {name}"
        cause = "" if same else _reason(fast, other, label[fast.variant], label[other.variant])
        head = f"{head}{at}: {fast.speed.microseconds:,.1f} vs {other.speed.microseconds:,.1f} us predicted"
        head += _cost(fast, other, ulp, label)
    ties = tuple(r.variant for r in distinct if r is not other and _ratio(r, fast) - 1.0 < RESOLUTION)
    if ties:
        head += (f"; {', '.join(ties)} {'is' if len(ties) == 1 else 'are'} within the model's resolution of "
                 f"{fast.variant} too")
    err = _error_text(fast, other, ulp, label)
    sentence = f"{head}; why: {cause}; {err}" if cause else f"{head}; {err}"
    if len(keys) > 1 and found:
        sentence += ". Each field with the others held fixed: " + "; ".join(e.sentence for e in found)
    emulation = _emulation(fast, other)
    if emulation:
        sentence += f"; {emulation}"
    return Verdict(point, ref.variant, fast.variant, None if same else fast.variant, other.variant, ratio, same, ties,
                   cause, ulp[fast.variant], ulp[ref.variant], against, found, emulation, head, err, sentence)


def _named(ref: Row) -> str:
    """The base as the verdict names it: `base`, or `base (packer_l1_acc=true)` for a --vary row."""
    return ref.variant if ref.variant == "base" else f"base ({ref.variant})"


def _cost(fast: Row, other: Row, ulp: Mapping[str, int], label: Mapping[str, str]) -> str:
    """`, at 2.8x base's max error (312 vs 113 ULP)` when the fastest is less accurate."""
    uf, uo = ulp[fast.variant], ulp[other.variant]
    if fast is other or uf <= uo:
        return ""
    times = f"{uf / uo:.1f}x" if uo else f"{uf} ULP against 0 ULP,"
    return f", at {times} {label[other.variant]}'s max error ({uf:,} vs {uo:,} ULP)"


def _error_text(fast: Row, other: Row, ulp: Mapping[str, int], label: Mapping[str, str]) -> str:
    """The max errors of the fastest and what it is compared with, and the all-ones sums where
    they differ."""
    uf, uo = ulp[fast.variant], ulp[other.variant]
    grid = fast.numerics.ulp_format
    a, b = label[fast.variant], label[other.variant]
    if fast is other:
        return f"max error {uf:,} {grid} ULP"
    err = f"max error {abs(uf - uo):,} ULP {'higher' if uf > uo else 'lower'} in {a} than in {b}" if uf != uo \
        else "the same max error"
    err += f" ({uf:,} vs {uo:,} {grid} ULP against float64 rounded to the output)"
    ones = {r.numerics.of("all_ones").first_value for r in (fast, other)}
    if len(ones) > 1:
        err += (f"; all-ones K = {fast.numerics.k}: {fast.numerics.of('all_ones').first_value:g} in {a}, "
                f"{other.numerics.of('all_ones').first_value:g} in {b}")
    return err


def _emulation(fast: Row, other: Row) -> str:
    emulated = [r for r in dict.fromkeys((fast, other)) if r.emulated is not None]
    if not emulated:
        return ""
    word = "bit-exact" if emulated[0].emulated.numerics == "exact" else "within tolerance of the fast golden model"
    if all(r.emulated.ok for r in emulated):
        return f"{'both' if len(emulated) == 2 else emulated[0].variant} {word} in emulation"
    return "NOT ok in emulation: " + ", ".join(f"{r.variant} ({_emulation_failure(r.emulated, word)})"
                                               for r in emulated if not r.emulated.ok)


def _emulation_failure(em, word: str) -> str:
    """Why an emulation is not ok, in words: not its golden model's bits, beyond its float64 bound
    (a bit-exact emulation can be: the golden model shares the activation table), or its status."""
    why = []
    if em.status != "ok":
        why.append(em.status)
    if em.numerics == "exact" and not em.exact_match:
        why.append("not bit-exact")
    if em.float64 is not None and not em.float64.within:
        why.append("beyond its float64 bound")
    return ", ".join(why) or f"not {word}"
