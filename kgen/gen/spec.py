"""Stage 1, parse: .kspec text -> `MatmulSpec` (frozen dataclasses that keep source spans).

`kgen.gen.spec_syntax` reads the text into a generic tree of groups and assignments; this module
checks every key, type and range against the schema below, so that an error can name the key, point at
the text and suggest the nearest valid key or value.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from math import prod
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from kgen.core.errors import SpecError, Span
from kgen.core.resources import config_files
from kgen.core.types import ARCHS, DTYPE_TO_FORMAT, MATH_FIDELITY_VALUE, TILE_HW, Placement
from kgen.gen import activations
from kgen.gen import dataflow as dataflows
# the values this module produces (re-exported: most users import them from here)
from kgen.gen.matmul_spec import (MEMORY_IN0, MEMORY_IN1, MEMORY_OUT, SHARD_ORIENTATIONS,  # noqa: F401
                                  BlockSpec, ComputeConfig, MatmulSpec, MemorySpec, ShardGiven)
from kgen.gen.spec_syntax import (RawEntry, RawGroup, RawValue, Source, parse_tree, raw_group, raw_value,
                                  read_source, value_shape_error)
from kgen.gen.ttnn_defaults import MATMUL_DEFAULT, MATMUL_DEFAULT_SOURCE, matmul_default_compute

MAX_INT_DIGITS = 12            # longer literals are rejected before int() (Python caps int() at 4300 digits)
MAX_INT = 1 << 31              # any number above this is a typo, not a matmul
MAX_DIM_ELEMENTS = 1 << 21     # per M/N/K dimension: 65536 tiles
MAX_BATCH = 4096


def _suggest(word: str, options: list[str] | tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    if not close:
        close = difflib.get_close_matches(word.lower(), [o.lower() for o in options], n=1, cutoff=0.5)
        if close:
            close = [next(o for o in options if o.lower() == close[0])]
    return f"did you mean `{close[0]}`?" if close else None


# ----------------------------------------------------------------------------------------------
# Schema: one checker per key
# ----------------------------------------------------------------------------------------------

Checker = Callable[[RawValue, str], Any]


def _literal_int(text: str, key: str, span: Span, hi: int) -> int:
    """int() of a numeric literal whose digit count is checked first."""
    digits = text.strip().lstrip("-").lstrip("0")
    if len(digits) > MAX_INT_DIGITS:
        raise SpecError(f"{key}: a {len(digits)}-digit number is far too large (at most {hi})", span)
    return int(text)


def _int_text(v: RawValue, key: str, lo: int, hi: int) -> int:
    n = _literal_int(v.text, key, v.span, hi)
    if n <= 0 and lo >= 1:
        raise SpecError(f"{key} = {v.text}: must be a positive number", v.span,
                        hint=f"use a value from {lo} to {hi}")
    if n > hi:
        raise SpecError(f"{key} = {v.text} is too large (at most {hi})", v.span)
    if n < lo:
        raise SpecError(f"{key} = {v.text} is too small (at least {lo})", v.span)
    return n


def _positive_int(hi: int = MAX_INT, allow_auto: bool = False) -> Checker:
    def check(v: RawValue, key: str) -> int | None:
        if allow_auto and v.kind == "word" and v.text == "auto":
            return None
        if v.kind == "int":
            return _int_text(v, key, 1, hi)
        expected = "a positive whole number" + (" or auto" if allow_auto else "")
        raise SpecError(f"{key} = {v.text}: expected {expected}", v.span, hint=_type_hint(v))
    return check


def _dims(count: int, allow_auto: bool, what: str, hi: int = MAX_INT) -> Checker:
    def check(v: RawValue, key: str) -> tuple[int, ...] | None:
        if allow_auto and v.kind == "word" and v.text == "auto":
            return None
        example = " x ".join(["4"] * count)
        if v.kind != "dims" and not (count == 1 and v.kind == "int"):
            raise SpecError(f"{key} = {v.text}: expected {what} written like `{example}`"
                            + (" or auto" if allow_auto else ""), v.span, hint=_type_hint(v))
        parts = [p.strip() for p in v.text.split("x")]
        if len(parts) != count:
            raise SpecError(f"{key} = {v.text}: expected {count} numbers ({what}), found {len(parts)}", v.span,
                            hint=f"write it like `{example}`")
        values = []
        for p in parts:
            n = _literal_int(p, key, v.span, hi)
            if n <= 0:
                raise SpecError(f"{key} = {v.text}: every dimension must be positive", v.span)
            if n > hi:
                raise SpecError(f"{key} = {v.text}: {n} is too large (at most {hi})", v.span)
            values.append(n)
        return tuple(values)
    return check


# in0 of rank 8 at most: the rank TT-Metal's TensorAccessor, which the 0.81.1 matmul readers and writers
# address their tensors with, is built for (tensor_accessor::MAX_RANK = 8, tt_metal/hw/inc/internal/tensor/const.h
# in the 0.81.1 wheel)
MAX_TENSOR_RANK = 8
MAX_BATCH_DIMS = MAX_TENSOR_RANK - 2


def _batch(v: RawValue, key: str) -> int | tuple[int, ...]:
    """`batch = B` (an in0 of rank 3, [B, M, K]) or `batch = B1 x B2 ...` (rank 4 to 8).
    ttnn.matmul 0.81.1 folds every leading dim into one batch of their product (get_batch_size of the
    padded shape, matmul_utilities.cpp), as kgen does; the dims stay in the shapes kgen prints."""
    if v.kind == "int":
        return _int_text(v, key, 1, MAX_BATCH)
    if v.kind != "dims":
        raise SpecError(f"{key} = {v.text}: expected a positive whole number, or in0's leading dims "
                        f"written like `2 x 8`", v.span, hint=_type_hint(v))
    parts = [p.strip() for p in v.text.split("x")]
    if len(parts) > MAX_BATCH_DIMS:
        raise SpecError(f"{key} = {v.text}: {len(parts)} batch dims make an in0 of rank {len(parts) + 2}; "
                        f"TT-Metal's TensorAccessor is built for rank {MAX_TENSOR_RANK} at most (tensor_accessor::"
                        f"MAX_RANK, tt_metal/hw/inc/internal/tensor/const.h), so {MAX_BATCH_DIMS} batch dims", v.span,
                        hint="fold leading dims together: ttnn multiplies them into one batch anyway")
    dims = tuple(_literal_int(p, key, v.span, MAX_BATCH) for p in parts)
    if any(d <= 0 for d in dims):
        raise SpecError(f"{key} = {v.text}: every dimension must be positive", v.span)
    total = prod(dims)
    if total > MAX_BATCH:
        raise SpecError(f"{key} = {v.text} folds into a batch of {total}, too large (at most {MAX_BATCH})", v.span)
    return dims


def _enum(options: tuple[str, ...], allow_auto: bool = False) -> Checker:
    def check(v: RawValue, key: str) -> str | None:
        if allow_auto and v.kind == "word" and v.text == "auto":
            return None
        if v.kind == "word" and v.text in options:
            return v.text
        hint = _suggest(v.text, options) or f"one of: {', '.join(options)}"
        raise SpecError(f"{key} = {v.text}: expected one of {', '.join(options)}", v.span, hint=hint)
    return check


def _placement(options: tuple[Placement, ...]) -> Checker:
    check = _enum(tuple(options))
    return lambda v, key: Placement(check(v, key))


def _shard(v: RawValue, key: str) -> ShardGiven:
    """`H x W on X x Y`: a shard of H x W elements on X columns by Y rows of cores from (0, 0), as
    ttnn.ShardSpec(grid=CoreRange((0, 0), (X - 1, Y - 1)), shape=[H, W]). Whole tiles only: TT's matmul
    reads a shard as tiles ("Shard height {} must be divisible by tile height {}", matmul_program_config.cpp)."""
    example = "`256 x 32 on 8 x 4` (shard height x width in elements, on x columns by y rows of cores)"
    if v.kind == "dims":
        raise SpecError(f"{key} = {v.text}: a shard spec also names the cores it lies on", v.span,
                        hint=f"write it like {example}")
    if v.kind != "shard":
        raise SpecError(f"{key} = {v.text}: expected a shard spec written like {example}", v.span, hint=_type_hint(v))
    shape_text, grid_text = v.text.split(" on ")
    shape = _dims(2, False, "shard height x width in elements", MAX_DIM_ELEMENTS)(
        RawValue("dims", shape_text, v.span), key)
    grid = _dims(2, False, "x (columns) by y (rows) of cores", 1024)(RawValue("dims", grid_text, v.span), key)
    for what, size in zip(("height", "width"), shape):
        if size % TILE_HW:
            raise SpecError(f"{key} = {v.text}: the shard {what} {size} is not a whole number of {TILE_HW}-element "
                            f"tiles (TT-Metal: \"Shard {what} {{}} must be divisible by tile {what} {{}}\")", v.span,
                            hint=f"a shard {what} that is a multiple of {TILE_HW}")
    return ShardGiven(shape, grid)


def _bool(v: RawValue, key: str) -> bool:
    if v.kind == "word" and v.text in ("true", "false"):
        return v.text == "true"
    hint = _suggest(v.text, ("true", "false")) or "write true or false"
    raise SpecError(f"{key} = {v.text}: expected true or false", v.span, hint=hint)


def _name(v: RawValue, key: str) -> str:
    if v.kind == "word":
        return v.text
    raise SpecError(f"{key} = {v.text}: expected the name of a compute config", v.span, hint=_type_hint(v))


def _activation(v: RawValue, key: str) -> str:
    """An activation's canonical spelling (kgen.gen.activations checks it as TT-Metal does)."""
    if v.kind not in ("word", "call"):
        raise SpecError(f"{key} = {v.text}: expected an activation name or a call like `hardtanh(-1, 1)`", v.span,
                        hint=f"one of: {', '.join(activations.SPELLINGS)}")
    try:
        return activations.parse(v.text).spelling
    except activations.ActivationError as exc:
        name = v.text.split("(")[0]
        hint = None if name in activations.ROWS else (_suggest(name, activations.SPELLINGS)
                                                       or f"one of: {', '.join(activations.SPELLINGS)}")
        raise SpecError(f"{key} = {v.text}: {exc}", v.span, hint=hint) from None


def _type_hint(v: RawValue) -> str | None:
    if v.kind == "string":
        return "values are written without quotes"
    if v.kind == "decimal":
        return "whole numbers only"
    return None


COMPUTE_KEYS: dict[str, Checker] = {
    "math_fidelity": _enum(tuple(MATH_FIDELITY_VALUE)),
    "fp32_dest_acc": _bool,
    "packer_l1_acc": _bool,
    "math_approx": _bool,
    "dst_full_sync": _bool,
}

_DTYPES = tuple(DTYPE_TO_FORMAT)

MATMUL_KEYS: dict[str, Checker] = {
    "arch": _enum(ARCHS),
    "shape": _dims(3, False, "M x N x K in elements", MAX_DIM_ELEMENTS),
    "batch": _batch,                   # B, or in0's leading dims B1 x B2 (x B3): rank 4 and 5, folded
    "dtype.in0": _enum(_DTYPES),
    "dtype.in1": _enum(_DTYPES),
    "dtype.out": _enum(_DTYPES),
    "dtype.bias": _enum(_DTYPES),
    "grid": _dims(2, True, "x (columns) by y (rows)", 1024),
    "dataflow": _enum(dataflows.NAMES + (dataflows.AUTO,)),    # auto: TT's own choice (kgen/gen/ttauto.py)
    "block.in0_block_w": _positive_int(65536, allow_auto=True),
    "block.out_subblock": _dims(2, True, "h x w tiles", 65536),
    "block.per_core": _dims(2, True, "M x N tiles", 65536),
    "block.out_block": _dims(2, True, "h x w tiles", 65536),
    "compute": _name,
    **{f"compute.{k}": c for k, c in COMPUTE_KEYS.items()},
    "fuse.bias": _bool,
    "fuse.activation": _activation,
    "untilize_out": _bool,
    "transpose_mcast": _bool,
    "transpose_a": _bool,
    "transpose_b": _bool,
    "broadcast_in1": _bool,
    "fuse_batch": _bool,
    "memory.in0": _placement(MEMORY_IN0),
    "memory.in1": _placement(MEMORY_IN1),
    "memory.out": _placement(MEMORY_OUT),
    "memory.orientation": _enum(SHARD_ORIENTATIONS),
    "memory.in0_shard": _shard,          # an explicit shard spec: `H x W on X x Y` (ttnn.ShardSpec)
    "memory.out_shard": _shard,
}
REQUIRED_MATMUL_KEYS = ("arch", "shape", "dtype.in0", "dtype.in1", "dtype.out")
MATMUL_GROUPS = ("dtype", "block", "compute", "fuse", "memory", "variants")


def _check_key(key: str, span: Span, schema: Mapping[str, Checker], where: str) -> None:
    if key in schema:
        return
    hint = _suggest(key, sorted(schema))
    head = key.split(".")[0]
    if hint is None and head in {k.split(".")[0] for k in schema if "." in k}:
        keys = sorted(k for k in schema if k.startswith(head + "."))
        hint = f"{head} takes: {', '.join(k.split('.', 1)[1] for k in keys)}"
    raise SpecError(f"unknown key `{key}` in {where}", span, hint=hint)


def _flatten(group: RawGroup, prefix: str, out: list[RawEntry], allowed_groups: tuple[str, ...],
             group_spans: dict[str, Span] | None = None) -> None:
    for e in group.entries:
        out.append(RawEntry(prefix + e.key, e.key_span, e.value))
    for g in group.groups:
        if g.name is not None:
            shape_error = value_shape_error(g.span)
            if shape_error is not None:
                raise shape_error
            raise SpecError(f"unexpected name `{g.name}` after `{g.kind}`", g.span,
                            hint=f"write `{g.kind} {{ ... }}`")
        if not allowed_groups:
            raise SpecError(f"a group cannot nest inside `{prefix.rstrip('.')}`", g.span,
                            hint=f"write `key = value` lines directly inside {prefix.rstrip('.')} {{ }}")
        if g.kind not in allowed_groups:
            hint = _suggest(g.kind, allowed_groups) or f"groups here: {', '.join(allowed_groups)}"
            raise SpecError(f"unknown group `{g.kind}`", g.span, hint=hint)
        if group_spans is not None:
            group_spans.setdefault(prefix + g.kind, g.span)
        _flatten(g, prefix + g.kind + ".", out, (), group_spans)


def _collect(entries: list[RawEntry], schema: Mapping[str, Checker], where: str) -> dict[str, RawEntry]:
    seen: dict[str, RawEntry] = {}
    for e in sorted(entries, key=lambda e: (e.key_span.line, e.key_span.column)):  # source order
        _check_key(e.key, e.key_span, schema, where)
        if e.key in seen:
            first = seen[e.key].key_span
            raise SpecError(f"`{e.key}` is given twice (first at line {first.line})", e.key_span,
                            hint="keep one; use variants { ... } for alternatives")
        seen[e.key] = e
    return seen


# ----------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpecFile:
    """A parsed .kspec file before variant selection and compute-preset resolution."""

    path: str
    matmul_name: str
    matmul_span: Span
    entries: Mapping[str, RawEntry]
    variants: Mapping[str, Mapping[str, RawEntry]]
    variant_spans: Mapping[str, Span]
    computes: Mapping[str, Mapping[str, RawEntry]]
    compute_spans: Mapping[str, Span]
    group_spans: Mapping[str, Span]       # `block { }`, `dtype { }`, ... of the matmul body


def _compute_block(g: RawGroup) -> dict[str, RawEntry]:
    if g.name is None:
        raise SpecError("a compute config needs a name: `compute NAME { ... }`", g.span)
    if g.groups:
        raise SpecError(f"unexpected group `{g.groups[0].kind}` inside compute {g.name}", g.groups[0].span)
    entries = _collect(list(g.entries), COMPUTE_KEYS, f"compute {g.name}")
    for key, entry in entries.items():  # type errors surface even if no matmul uses this config
        COMPUTE_KEYS[key](entry.value, key)
    return entries


def parse_text(text: str, path: str = "<spec>") -> SpecFile:
    # CRLF and CR-only line endings become \n, the one line break the grammar and spans count.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    src = Source(path, text)
    tree = parse_tree(text, src)
    groups = [raw_group(child, src) for child in tree.children if child.data == "group"]
    for child in tree.children:
        if child.data != "group":
            span = src.of(child)
            raise SpecError("assignments must be inside a `matmul NAME { ... }` block", span)
    computes: dict[str, dict[str, RawEntry]] = {}
    compute_spans: dict[str, Span] = {}
    matmuls: list[RawGroup] = []
    for g in groups:
        if g.kind == "compute":
            entries = _compute_block(g)
            if g.name in computes:
                raise SpecError(f"compute config `{g.name}` is defined twice", g.span)
            computes[g.name] = entries
            compute_spans[g.name] = g.span
        elif g.kind == "matmul":
            if g.name is None:
                raise SpecError("a matmul needs a name: `matmul NAME { ... }`", g.span)
            matmuls.append(g)
        else:
            hint = _suggest(g.kind, ("matmul", "compute")) or "top-level blocks are `matmul NAME { }` and `compute NAME { }`"
            raise SpecError(f"unknown block `{g.kind}`", g.span, hint=hint)
    if not matmuls:
        raise SpecError("no `matmul NAME { ... }` block in the file", src.span(1, 1), path=path,
                        hint="a spec describes one matmul; see examples/")
    if len(matmuls) > 1:
        raise SpecError(f"more than one matmul block (`{matmuls[0].name}` and `{matmuls[1].name}`)",
                        matmuls[1].span, hint="put each matmul in its own file")
    mm = matmuls[0]
    variants_groups = [g for g in mm.groups if g.kind == "variants"]
    body = RawGroup(mm.kind, mm.name, mm.span, mm.entries, tuple(g for g in mm.groups if g.kind != "variants"))
    flat: list[RawEntry] = []
    group_spans: dict[str, Span] = {}
    _flatten(body, "", flat, tuple(g for g in MATMUL_GROUPS if g != "variants"), group_spans)
    entries = _collect(flat, MATMUL_KEYS, f"matmul {mm.name}")
    variants: dict[str, dict[str, RawEntry]] = {}
    variant_spans: dict[str, Span] = {}
    if len(variants_groups) > 1:
        raise SpecError("`variants` is given twice", variants_groups[1].span, hint="put every variant in one block")
    for vg in variants_groups:
        if vg.name is not None or vg.entries:
            span = vg.entries[0].key_span if vg.entries else vg.span
            raise SpecError("variants holds named groups: `variants { NAME { key = value } }`", span)
        for v in vg.groups:
            if v.name is not None:
                raise SpecError(f"unexpected name `{v.name}` after variant `{v.kind}`", v.span)
            if v.kind in variants:
                raise SpecError(f"variant `{v.kind}` is defined twice", v.span)
            flat_v: list[RawEntry] = []
            _flatten(v, "", flat_v, tuple(g for g in MATMUL_GROUPS if g != "variants"))
            variants[v.kind] = _collect(flat_v, MATMUL_KEYS, f"variant {v.kind}")
            for key, entry in variants[v.kind].items():  # type errors fail `check` of the base too
                MATMUL_KEYS[key](entry.value, key)
            variant_spans[v.kind] = v.span
    return SpecFile(path, mm.name, mm.span, MappingProxyType(entries), MappingProxyType(variants),
                    MappingProxyType(variant_spans), MappingProxyType(computes), MappingProxyType(compute_spans),
                    MappingProxyType(group_spans))


@cache
def preset_computes() -> Mapping[str, Mapping[str, RawEntry]]:
    """Named compute configs shipped in configs/compute/*.kspec."""
    found: dict[str, Mapping[str, RawEntry]] = {}
    for p in config_files("compute", "*.kspec"):
        text = p.read_text()
        src = Source(str(p), text)
        for child in parse_tree(text, src).children:
            g = raw_group(child, src)
            if g.kind == "compute" and g.name:
                found[g.name] = _compute_block(g)
    return MappingProxyType(found)


DEFAULT_COMPUTE = "ttnn_default"     # ComputeKernelConfig struct defaults: under every compute config a spec gives


def preset_values(name: str) -> dict[str, Any]:
    """A shipped preset's fields (configs/compute/NAME.kspec), checked as a spec's are."""
    return {key: COMPUTE_KEYS[key](entry.value, key) for key, entry in preset_computes()[name].items()}


COMPUTE_FIELDS = ("math_fidelity", "fp32_dest_acc", "packer_l1_acc", "math_approx", "dst_full_sync")


def _compute_config(name: str, name_span: Span | None, spec: SpecFile, overrides: Mapping[str, RawEntry],
                    spans: dict[str, Span], named: bool, variant: str | None) -> ComputeConfig:
    """A compute config the spec gives: the preset `name` (DEFAULT_COMPUTE when only compute.* keys
    are written), then the inline keys. `named`: the spec has a `compute = NAME` line."""
    presets = preset_computes()
    if name in spec.computes:
        base = spec.computes[name]
        where = f"preset {name} (defined in the spec file)"
    elif name in presets:
        base = presets[name]
        where = f"preset {name} (configs/compute/{name}.kspec)"
    else:
        known = sorted(set(spec.computes) | set(presets))
        raise SpecError(f"no compute config named `{name}`", name_span,
                        hint=_suggest(name, known) or f"defined here or in configs/compute/: {', '.join(known)}")
    values: dict[str, Any] = preset_values(DEFAULT_COMPUTE)       # TTNN's struct defaults under every block
    sources = {k: "ComputeKernelConfig default (a compute config given to ttnn is used whole; a field it "
                  "leaves out takes the struct's default, not ttnn.matmul's)" for k in values}
    if named:
        for key, entry in base.items():
            values[key] = COMPUTE_KEYS[key](entry.value, key)
            spans[f"compute.{key}"] = entry.value.span
            sources[key] = where
    own = spec.variants.get(variant, {}) if variant is not None else {}
    for key, entry in overrides.items():
        short = key.split(".", 1)[1]
        values[short] = COMPUTE_KEYS[short](entry.value, key)
        spans[key] = entry.value.span
        sources[short] = f"variant {variant}" if key in own else "spec (inline)"
    return ComputeConfig(preset=name, sources=tuple((k, sources[k]) for k in COMPUTE_FIELDS), **values)


def _matmul_default(vals: Mapping[str, Any]) -> ComputeConfig:
    """A matmul with no compute line: what ttnn.matmul at the targeted version runs with. The spec's
    grid is a core_grid argument; any block value, a dataflow or transpose_mcast is a program config
    (`dataflow = auto` is not: it asks for TT's choice, made with no program config)."""
    program_config = (any(v is not None for k, v in vals.items() if k.startswith("block."))
                      or vals.get("dataflow", dataflows.AUTO) != dataflows.AUTO or bool(vals.get("transpose_mcast"))
                      or "fuse_batch" in vals)
    values, reasons = matmul_default_compute(
        vals["arch"], vals["dtype.in0"], vals["dtype.in1"], vals["dtype.out"],
        user_grid=vals.get("grid") is not None, program_config=program_config)
    sources = tuple((k, f"{MATMUL_DEFAULT_SOURCE} ({reasons[k]})") for k in COMPUTE_FIELDS)
    return ComputeConfig(preset=MATMUL_DEFAULT, sources=sources, **values)


def resolve(spec: SpecFile, variant: str | None = None) -> MatmulSpec:
    """Apply a variant's overrides and the compute preset; check every value."""
    entries = dict(spec.entries)
    if variant is not None:
        if variant not in spec.variants:
            known = sorted(spec.variants)
            raise SpecError(f"no variant named `{variant}` in {spec.path}", path=spec.path,
                            hint=(_suggest(variant, known) or f"variants: {', '.join(known)}") if known
                            else "this spec defines no variants")
        entries.update(spec.variants[variant])
    for key in REQUIRED_MATMUL_KEYS:
        if key not in entries:
            raise SpecError(f"matmul {spec.matmul_name} is missing the required key `{key}`", spec.matmul_span,
                            hint=f"add `{key.split('.')[-1]} = ...`" + (" inside dtype { }" if "." in key else ""))
    spans: dict[str, Span] = {"matmul": spec.matmul_span, **spec.group_spans}
    vals: dict[str, Any] = {}
    for key, entry in entries.items():
        spans[key] = entry.value.span
        if key != "compute" and not key.startswith("compute."):
            vals[key] = MATMUL_KEYS[key](entry.value, key)
    preset_entry = entries.get("compute")
    overrides = {k: e for k, e in entries.items() if k.startswith("compute.")}
    if preset_entry is None and not overrides:
        compute = _matmul_default(vals)
    else:
        preset = MATMUL_KEYS["compute"](preset_entry.value, "compute") if preset_entry else DEFAULT_COMPUTE
        compute = _compute_config(preset, preset_entry.value.span if preset_entry else spec.matmul_span, spec,
                                  overrides, spans, preset_entry is not None, variant)
    m, n, k = vals["shape"]
    batch_dims = vals.get("batch", 1) if isinstance(vals.get("batch"), tuple) else ()
    if batch_dims:                          # ttnn's fold: one batch of the leading dims' product
        vals["batch"] = prod(batch_dims)
    # M, N, K need not be tile multiples: ttnn pads each tensor to whole tiles (the plan says what)
    _check_page_ids(m, n, k, vals.get("batch", 1), spans, vals.get("broadcast_in1", True))
    block = BlockSpec(
        in0_block_w=vals.get("block.in0_block_w"),
        out_subblock=vals.get("block.out_subblock"),
        per_core=vals.get("block.per_core"),
        out_block=vals.get("block.out_block"),
    )
    return MatmulSpec(
        name=spec.matmul_name, path=spec.path, arch=vals["arch"], m=m, n=n, k=k,
        batch=vals.get("batch", 1), batch_dims=batch_dims,
        dtype_in0=vals["dtype.in0"], dtype_in1=vals["dtype.in1"], dtype_out=vals["dtype.out"],
        dtype_bias=vals.get("dtype.bias", vals["dtype.out"]),
        grid=vals.get("grid"), dataflow=vals.get("dataflow", dataflows.AUTO), block=block, compute=compute,
        fuse_bias=vals.get("fuse.bias", False), activation=vals.get("fuse.activation", "none"),
        untilize_out=vals.get("untilize_out", False), variant=variant,
        variants=tuple(spec.variants), spans=MappingProxyType(spans),
        transpose_mcast=vals.get("transpose_mcast", False),
        memory=_memory(vals, spans),
        broadcast_in1=vals.get("broadcast_in1", True),
        transpose_a=vals.get("transpose_a", False), transpose_b=vals.get("transpose_b", False),
        fuse_batch=vals.get("fuse_batch"),
    )


def _memory(vals: Mapping[str, Any], spans: Mapping[str, Span]) -> MemorySpec:
    """The `memory { }` group; a shard spec is a sharded L1 tensor's (a tensor interleaved, or sharded over
    the DRAM banks by the DRAM-sharded factory's own rule, has none to give)."""
    place = {t: vals.get(f"memory.{t}", Placement.DRAM) for t in ("in0", "in1", "out")}
    for t in ("in0", "out"):
        key = f"memory.{t}_shard"
        if key in vals and not str(place[t]).startswith("l1_"):
            raise SpecError(f"{key} = {vals[key]} with {t} = {place[t]}: a shard spec belongs to a tensor sharded in L1",
                            spans[key], hint=f"memory.{t} = l1_height_sharded, l1_width_sharded or l1_block_sharded, "
                                             f"or leave {t}_shard out")
    return MemorySpec(place["in0"], place["in1"], place["out"], vals.get("memory.orientation"),
                      vals.get("memory.in0_shard"), vals.get("memory.out_shard"))


MAX_PAGE_ID = (1 << 32) - 1    # kernels index DRAM pages with uint32_t (TensorAccessor, get_noc_addr)


def _check_page_ids(m: int, n: int, k: int, batch: int, spans: Mapping[str, Span], broadcast_in1: bool = True) -> None:
    """Every tile a kernel addresses must have a page id that fits in 32 bits. in0 is batch x M x K,
    in1 is K x N (shared by the batch) or batch x K x N (not broadcast), out is batch x M x N."""
    mt, nt, kt = (-(-v // TILE_HW) for v in (m, n, k))      # padded to whole tiles
    in1_tiles = kt * nt if broadcast_in1 else batch * kt * nt
    for tensor, tiles in (("in0", batch * mt * kt), ("in1", in1_tiles), ("out", batch * mt * nt)):
        if tiles - 1 > MAX_PAGE_ID:
            key = "batch" if "batch" in spans and tiles // batch - 1 <= MAX_PAGE_ID else "shape"
            raise SpecError(f"{tensor} would have {tiles} tiles, but kernels address DRAM pages with 32-bit ids "
                            f"(at most {MAX_PAGE_ID + 1} tiles per tensor)", spans[key],
                            hint="split the matmul into smaller ones")


def load_file(path: str | Path) -> SpecFile:
    return parse_text(read_source(path), str(path))


def load(path: str | Path, variant: str | None = None) -> MatmulSpec:
    """Parse a .kspec file and resolve it (optionally as one of its variants)."""
    return resolve(load_file(path), variant)


# ----------------------------------------------------------------------------------------------
# Variants made outside the file (`kgen ab --vary`, `--sweep`)
# ----------------------------------------------------------------------------------------------

def override_entry(key: str, value: str, origin: str) -> RawEntry:
    """`key = value` written on a command line, parsed by the spec grammar and checked against the
    same schema as a variant block in the file. `origin` (e.g. `--vary`) is where errors point."""
    text = f"{key} = {value}"
    src = Source(origin, text)
    tree = parse_tree(text, src)
    items = list(tree.children)
    if len(items) != 1 or items[0].data != "assign":
        raise SpecError(f"{origin} {text!r}: expected one `FIELD=VALUE`", src.span(1, 1, 1, len(text) + 1))
    path_tree, value_tree = items[0].children
    dotted = ".".join(str(t) for t in path_tree.children)
    entry = RawEntry(dotted, src.of(path_tree), raw_value(value_tree, src))
    _check_key(entry.key, entry.key_span, MATMUL_KEYS, origin)
    MATMUL_KEYS[entry.key](entry.value, entry.key)          # a type or range error names the key now
    return entry


def with_variant(spec: SpecFile, name: str, entries: Mapping[str, RawEntry], base: str | None = None) -> SpecFile:
    """The file with one more variant: `base`'s overrides (None: the matmul itself), then `entries`,
    exactly as if `variants { name { ... } }` had been written in it."""
    merged = dict(spec.variants[base]) if base is not None else {}
    merged.update(entries)
    span = next(iter(entries.values())).key_span if entries else spec.matmul_span
    return SpecFile(spec.path, spec.matmul_name, spec.matmul_span, spec.entries,
                    MappingProxyType({**spec.variants, name: MappingProxyType(merged)}),
                    MappingProxyType({**spec.variant_spans, name: span}), spec.computes, spec.compute_spans,
                    spec.group_spans)


def numeric_keys() -> tuple[str, ...]:
    """The matmul keys that take one whole number (what `--sweep` may step besides M, N and K)."""
    probe = RawValue("int", "32", Span("<probe>", 1, 1, 1, 3))
    found = []
    for key, check in MATMUL_KEYS.items():
        try:
            if isinstance(check(probe, key), int):
                found.append(key)
        except SpecError:
            pass
    return tuple(found)
