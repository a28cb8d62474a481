"""`kgen ab`'s base: the spec as written, which every variant is compared with.

Without --vary it is the spec's own `base` row. With --vary it is the combination whose resolved
spec equals the spec as written (the values are compared after resolution, so `HiFi2` from a
preset and `2x2` against `2 x 2` match); when no combination is the spec as written (one of its
values is not among the varied ones), `kgen ab` adds the spec as written after them as a row named
`base`, whose cells show its own values."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from kgen.core.errors import KgenError
from kgen.gen.spec import MatmulSpec, SpecFile, override_entry, resolve, with_variant

BASE = "base"
_PROBE = "kgen_ab_base_probe"


@dataclass(frozen=True)
class SpecBase:
    """Which row is the spec as written: `name` (an existing --vary combination's, or BASE for a
    row to add), whether it must be added, its value per varied field, and a note saying so."""
    name: str
    added: bool
    values: tuple[tuple[str, str], ...]
    note: str


def _plain(s: MatmulSpec) -> MatmulSpec:
    """A resolved spec without what only names it (the variant, the preset's name)."""
    return replace(s, variant=None, variants=(), compute=replace(s.compute, preset=""))


def _resolved(spec_file: SpecFile, overrides: Sequence[tuple[str, str]]) -> MatmulSpec | None:
    try:
        entries = {k: override_entry(k, v, "--vary") for k, v in overrides}
        return _plain(resolve(with_variant(spec_file, _PROBE, entries), _PROBE))
    except KgenError:
        return None


def own_text(spec_file: SpecFile, written: MatmulSpec, key: str) -> str:
    """The spec's own value of `key` as text: a compute field as resolved (a preset's too), else as
    written in the file, else what an absent key means."""
    if key.startswith("compute."):
        value = getattr(written.compute, key.split(".", 1)[1])
        return str(value).lower() if isinstance(value, bool) else str(value)
    entry = spec_file.entries.get(key)
    if entry is not None:
        return entry.value.text
    return "auto" if key.startswith("block.") or key == "grid" else "default"


def spec_base(spec_file: SpecFile, vary: Sequence[tuple[str, Sequence[str]]],
              combos: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> SpecBase:
    """The base of a comparison: BASE without --vary; with it, the combination (name, overrides)
    that resolves to the spec as written, else a row to add with the spec's own value per field (a
    varied value where that field's value resolves the same, so the per-field effects group it)."""
    if not vary:
        return SpecBase(BASE, False, (), "")
    try:
        written = resolve(spec_file, None)
    except KgenError:
        written = None
    plain = None if written is None else _plain(written)
    if plain is not None:
        for name, overrides in combos:
            if _resolved(spec_file, overrides) == plain:
                return SpecBase(name, False, tuple(overrides), f"base: {name}, the spec as written")
    values = []
    for key, levels in vary:
        level = next((v for v in levels if plain is not None and _resolved(spec_file, [(key, v)]) == plain), None)
        values.append((key, level if level is not None else
                       own_text(spec_file, written, key) if written is not None else "?"))
    text = ", ".join(f"{k.rpartition('.')[2]}={v}" for k, v in values)
    return SpecBase(BASE, True, tuple(values),
                    f"base: the spec as written ({text}), not among the --vary combinations: added as the row `base`")
