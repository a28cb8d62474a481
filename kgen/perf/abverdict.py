"""What `kgen ab` concludes from its rows: the fastest and slowest variants and why, each varied
field's effect with the others held fixed, and how far the variants' outputs differ, all on the
model's predictions and one ULP scale (ULPs against the float64 result rounded to the output's
grid)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from kgen.proof.numerics import ulp_histogram

if TYPE_CHECKING:
    from kgen.perf.ab import Row


@dataclass(frozen=True)
class Difference:
    """Element-wise difference of two variants' outputs on the same inputs (the `random` proxy), on
    the per-variant scale: |ULPs of b - ULPs of a|, each against the float64 result rounded to the
    output's grid (ULP_FLOOR), so it is never more than the two variants' own max ULP added."""
    a: str
    b: str
    sweep: int | None
    distribution: str
    elements: int
    differing: int
    max_ulp: int
    ulp_histogram: tuple[tuple[str, int], ...]


# The performance model's resolution: predicted times closer than this are "the same".
RESOLUTION = 0.01


@dataclass(frozen=True)
class Effect:
    """One varied field's effect with the other varied fields held at `held`: its fastest level
    against its slowest (predicted)."""
    field: str
    held: tuple[tuple[str, str], ...]
    faster: str                       # the field's value
    slower: str
    speedup: float                    # slower's time / faster's time
    same: bool                        # within RESOLUTION
    sentence: str


@dataclass(frozen=True)
class Verdict:
    """The answer at one sweep value: the fastest and slowest variants overall, why, their error,
    and (with several --vary fields) each field's effect with the others held fixed."""
    sweep: int | None
    winner: str
    slowest: str
    speedup: float                    # slowest's predicted time / winner's
    same: bool                        # every variant within RESOLUTION of the winner
    cause: str
    winner_max_ulp: int
    slowest_max_ulp: int
    ulp_difference: int               # winner's max ULP - slowest's (negative: the winner is more accurate)
    effects: tuple[Effect, ...]
    emulation: str
    headline: str                     # the fastest against the slowest, with their predicted times
    error_text: str                   # their max error, in words
    sentence: str                     # everything above in one sentence



def pairwise_differences(legal: list[Row], ulps: Mapping[tuple[str, int | None], np.ndarray]) -> tuple[Difference, ...]:
    """Each variant against the first legal one at the same sweep value, on the `random` inputs, in
    the per-variant scale (signed ULPs against float64 rounded to the grid, subtracted)."""
    out = []
    for point in dict.fromkeys(r.sweep for r in legal):
        at = [r for r in legal if r.sweep == point]
        ref = at[0]
        for r in at[1:]:
            a, b = ulps[(ref.variant, point)], ulps[(r.variant, point)]
            apart = np.abs(b - a)
            out.append(Difference(ref.variant, r.variant, point, "random", int(a.size), int(np.count_nonzero(apart)),
                                  int(apart.max(initial=0)), ulp_histogram(apart)))
    return tuple(out)


def _reason(fast: Row, slow: Row) -> str:
    """Why `fast` beats `slow`, in the model's and the IR's terms."""
    bits = []
    dr = slow.op("reload copies") - fast.op("reload copies")
    if fast.plan.policy != slow.plan.policy:
        bits.append(f"{fast.plan.policy} vs {slow.plan.policy}")
    if dr:
        bits.append(f"{abs(dr):,} {'more' if dr > 0 else 'fewer'} partials reload copies in {slow.variant}")
        dc = slow.speed.reload_cycles - fast.speed.reload_cycles
        if dc:
            bits.append(f"{dc:+,.0f} reload cycles on the critical core")
    if fast.plan.math_fidelity != slow.plan.math_fidelity:
        bits.append(f"{fast.plan.math_fidelity} vs {slow.plan.math_fidelity} fidelity phases")
    busy_fast, busy_slow = dict(fast.speed.processors), dict(slow.speed.processors)
    proc = max(busy_slow, key=lambda q: abs(busy_slow[q] - busy_fast.get(q, 0.0)))
    delta = busy_slow[proc] - busy_fast.get(proc, 0.0)
    if delta:
        bits.append(f"{proc} busy {delta:+,.0f} cycles in {slow.variant}")
    if fast.speed.bottleneck != slow.speed.bottleneck:
        bits.append(f"{slow.variant} is {slow.speed.bottleneck}, {fast.variant} {fast.speed.bottleneck}")
    elif not bits:
        bits.append(f"both {fast.speed.bottleneck}")
    return "; ".join(bits)


def _ratio(slow: Row, fast: Row) -> float:
    return slow.speed.cycles / fast.speed.cycles


def _faster(fast: Row, slow: Row, what_fast: str, what_slow: str) -> tuple[float, bool, str]:
    ratio = _ratio(slow, fast)
    if ratio - 1.0 < RESOLUTION:
        return ratio, True, f"{what_fast} and {what_slow} are the same (within {RESOLUTION:.0%})".replace("%", " %")
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
            keys: Sequence[str] = ()) -> Verdict:
    """The answer at one sweep value: the fastest and the slowest variant (predicted) and why, their
    max error in ULPs, each varied field's effect with the others held fixed, and emulation."""
    at = f" at {sweep_field} = {point}" if point is not None else ""
    fast = min(rows, key=lambda r: r.speed.cycles)
    slow = max(rows, key=lambda r: r.speed.cycles)
    uf, us = fast.numerics.of("random").max_ulp, slow.numerics.of("random").max_ulp
    grid = fast.numerics.ulp_format
    found = effects(rows, keys)
    if len(rows) == 1:
        ratio, same, cause = 1.0, True, "the only legal variant"
        head = f"{fast.variant}{at}: {fast.speed.microseconds:,.1f} us predicted (the only legal variant)"
    else:
        ratio, same, head = _faster(fast, slow, f"fastest {fast.variant}", f"slowest {slow.variant}")
        cause = _reason(fast, slow) if not same else f"both {fast.speed.bottleneck}"
        head = f"{head}{at} (predicted {fast.speed.microseconds:,.1f} vs {slow.speed.microseconds:,.1f} us)"
    if len(rows) == 1 or fast.variant == slow.variant:
        err = f"max error {uf} {grid} ULP"
    else:
        du = uf - us
        err = ((f"max error {abs(du)} ULP {'higher' if du > 0 else 'lower'} in {fast.variant}" if du
                else "the same max error") + f" ({uf} vs {us} {grid} ULP against float64 rounded to the output)")
    ones = {r.numerics.of("all_ones").first_value for r in (fast, slow)}
    if len(ones) > 1:
        err += (f"; all-ones K = {fast.numerics.k}: {fast.numerics.of('all_ones').first_value:g} in {fast.variant}, "
                f"{slow.numerics.of('all_ones').first_value:g} in {slow.variant}")
    sentence = f"{head[:-1]}; {cause}); {err}" if len(rows) > 1 and not same else f"{head}; {err}"
    if len(keys) > 1 and found:
        sentence += ". Each field with the others held fixed: " + "; ".join(e.sentence for e in found)
    emulation = ""
    emulated = [r for r in dict.fromkeys((fast, slow)) if r.emulated is not None]
    if emulated:
        word = "bit-exact" if emulated[0].emulated.numerics == "exact" else "within tolerance of the fast golden model"
        if all(r.emulated.ok for r in emulated):
            emulation = f"{'both' if len(emulated) == 2 else emulated[0].variant} {word} in emulation"
        else:
            emulation = "NOT ok in emulation: " + ", ".join(f"{r.variant} ({_emulation_failure(r.emulated, word)})"
                                                            for r in emulated if not r.emulated.ok)
        sentence += f"; {emulation}"
    return Verdict(point, fast.variant, slow.variant, ratio, same, cause, uf, us, uf - us, found, emulation, head, err,
                   sentence)


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
