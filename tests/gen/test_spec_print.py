"""The .kspec printer: what it prints, the parser reads back to the same spec (hypothesis over
every field the schema allows), and every example file survives print -> parse."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kgen.core.types import ARCHS, DTYPE_TO_FORMAT, MATH_FIDELITY_VALUE, TILE_HW
from kgen.gen import activations
from kgen.gen.dataflow import NAMES as DATAFLOWS
from kgen.gen.spec import (MAX_BATCH, MAX_DIM_ELEMENTS, MAX_PAGE_ID, MEMORY_IN0, MEMORY_IN1, MEMORY_OUT,
                           SHARD_ORIENTATIONS, BlockSpec, ComputeConfig, MatmulSpec, MemorySpec, load,
                           parse_text, resolve)
from kgen.gen.spec_print import NOT_PRINTED_FIELDS, PRINTED_FIELDS, format_spec

ROOT = Path(__file__).resolve().parents[2]


def reparse(text: str) -> MatmulSpec:
    return resolve(parse_text(text, "<printed>"))


def same(a: MatmulSpec, b: MatmulSpec) -> bool:
    """Equal in every field the text carries (not the file it came from, nor its variants)."""
    return replace(a, path="", variant=None, variants=()) == replace(b, path="", variant=None, variants=())


def test_the_printer_names_every_field():
    # a field added to MatmulSpec must be printed (or declared not part of the text)
    assert {f.name for f in fields(MatmulSpec)} == PRINTED_FIELDS | NOT_PRINTED_FIELDS


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
pairs = st.tuples(st.integers(1, 64), st.integers(1, 64))
maybe_pair = st.none() | pairs


@st.composite
def specs(draw) -> MatmulSpec:
    dims = st.integers(1, MAX_DIM_ELEMENTS)
    m, n, k = draw(dims), draw(dims), draw(dims)
    batch = draw(st.integers(1, MAX_BATCH))
    # a rank-4 or rank-5 in0 (`batch = B1 x B2`, `B1 x B2 x B3`): dims whose product is the batch
    batch_dims = draw(st.sampled_from(((), (1, batch), (batch, 1), (1, batch, 1), (1, 1, batch))))
    tiles = [-(-v // TILE_HW) for v in (m, n, k)]
    # the parser's own limit: every tile of every tensor has a 32-bit page id
    assume(batch * tiles[0] * tiles[2] - 1 <= MAX_PAGE_ID and tiles[2] * tiles[1] - 1 <= MAX_PAGE_ID
           and batch * tiles[0] * tiles[1] - 1 <= MAX_PAGE_ID)
    dtypes = st.sampled_from(tuple(DTYPE_TO_FORMAT))
    dtype_out = draw(dtypes)
    fuse_bias = draw(st.booleans())
    compute = ComputeConfig(math_fidelity=draw(st.sampled_from(tuple(MATH_FIDELITY_VALUE))),
                            fp32_dest_acc=draw(st.booleans()), packer_l1_acc=draw(st.booleans()),
                            math_approx=draw(st.booleans()), dst_full_sync=draw(st.booleans()),
                            preset=draw(names))
    memory = MemorySpec(draw(st.sampled_from(MEMORY_IN0)), draw(st.sampled_from(MEMORY_IN1)),
                        draw(st.sampled_from(MEMORY_OUT)), draw(st.none() | st.sampled_from(SHARD_ORIENTATIONS)))
    return MatmulSpec(
        name=draw(names), path="<drawn>", arch=draw(st.sampled_from(ARCHS)), m=m, n=n, k=k, batch=batch,
        batch_dims=batch_dims,
        dtype_in0=draw(dtypes), dtype_in1=draw(dtypes), dtype_out=dtype_out,
        dtype_bias=draw(dtypes) if fuse_bias or draw(st.booleans()) else dtype_out,
        grid=draw(maybe_pair), dataflow=draw(st.sampled_from(DATAFLOWS)),
        block=BlockSpec(draw(st.none() | st.integers(1, 64)), draw(maybe_pair), draw(maybe_pair), draw(maybe_pair)),
        compute=compute, fuse_bias=fuse_bias, activation=draw(activation_spellings()),
        untilize_out=draw(st.booleans()), variant=None, variants=(), spans={},
        transpose_mcast=draw(st.booleans()), memory=memory)


@st.composite
def activation_spellings(draw) -> str:
    """Any activation the table accepts; a call's parameters any finite float32 the table accepts
    (softplus's beta non-zero, relu6's maximum non-zero, sigmoid's vector mode 0 to 4)."""
    name = draw(st.sampled_from(activations.SPELLINGS))
    row = activations.ROWS[name]
    if not row.params or draw(st.booleans()):
        return activations.parse(name).spelling
    if row.params == ("vector_mode",):
        values = [float(draw(st.integers(0, 4)))]
    else:
        values = [draw(st.floats(width=32, allow_nan=False, allow_infinity=False)) for _ in row.params]
    assume(row.kind != "softplus" or values[0] != 0)
    assume(row.kind != "relu6" or values[0] != 0)
    return activations.parse(f"{name}({', '.join(activations.format_f32(v) for v in values)})").spelling


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(specs())
def test_parse_of_print_is_the_spec(spec: MatmulSpec):
    text = format_spec(spec, comment="written by a test\nsecond line")
    back = reparse(text)
    assert same(back, spec), text
    assert format_spec(back, comment="written by a test\nsecond line") == text     # printing is stable


def test_every_example_round_trips():
    paths = sorted((ROOT / "examples").glob("*.kspec"))
    assert paths
    for path in paths:
        original = resolve(parse_text(path.read_text(), str(path)))
        for variant in (None, *original.variants):
            spec = load(path, variant)
            assert same(reparse(format_spec(spec)), spec), f"{path} variant {variant}"


def test_defaults_are_left_to_the_parser():
    spec = load(ROOT / "examples" / sorted(p.name for p in (ROOT / "examples").glob("*.kspec"))[0])
    plain = replace(spec, grid=None, block=BlockSpec(), memory=MemorySpec())
    text = format_spec(plain)
    assert not any(line.strip().startswith(("memory", "block", "grid")) for line in text.splitlines())
    assert "memory { in0 = l1_block_sharded  in1 = dram  out = l1_block_sharded }" in format_spec(
        replace(plain, memory=MemorySpec("l1_block_sharded", "dram", "l1_block_sharded")))


def test_every_fuzz_drawn_spec_round_trips():
    # kgen fuzz spells its specs every way the grammar allows (keys in any order, `auto`, presets
    # with overrides, omitted defaults); the printer's one form must read back to the same spec,
    # and the plan of the printed text must be the plan of the fuzz's text
    from kgen.core.errors import KgenError
    from kgen.gen.plan import plan
    from kgen.proof.fuzz import generate_case

    planned = 0
    for seed in (0, 1, 2):
        for index in range(100):
            case = generate_case(seed, index)
            spec = resolve(parse_text(case.text, case.filename))
            back = reparse(format_spec(spec))
            assert same(back, spec), case.text
            try:
                expected = plan(spec)
            except KgenError:
                continue
            # (a `dataflow = auto` plan holds the spec as TT's choice resolved it, so the specs are compared
            # as `same` compares them)
            got = plan(back)
            assert replace(got, spec=None) == replace(expected, spec=None) and same(got.spec, expected.spec), case.text
            planned += 1
    assert planned >= 250
