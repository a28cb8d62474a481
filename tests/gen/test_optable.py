"""The op table is the one list of op kinds: lowering builds only its kinds, each kernel template has
one macro per op of its processor and prints the table's C++ function, and the headers a kernel
includes are the table's headers of the ops it runs."""

from __future__ import annotations

import re

import pytest

from conftest import EXAMPLES, ROOT
from kgen.gen.ir import Op, walk
from kgen.gen.lower import lower
from kgen.gen.optable import ANY, COMPUTE, DATAFLOW, OPS, work_of
from kgen.gen.plan import plan
from kgen.gen.render import _environment, render_sources
from kgen.gen.spec import load

_MACROS = {COMPUTE: ROOT / "templates" / "compute" / "ops.j2", DATAFLOW: ROOT / "templates" / "dataflow" / "ops.j2"}


def _programs():
    for path in EXAMPLES:
        yield path.stem, lower(plan(load(path, None)))


@pytest.fixture(scope="module")
def programs():
    return dict(_programs())


def test_every_kind_lowering_builds_has_a_row():
    built = set()
    for path in (ROOT / "kgen").rglob("*.py"):
        built |= set(re.findall(r'\bop\("([a-z_0-9]+)"', path.read_text()))
    assert built == set(OPS), f"kinds built but not in the table: {built - set(OPS)}; rows never built: {set(OPS) - built}"


def test_each_kernel_runs_only_ops_of_its_processor(programs):
    for name, program in programs.items():
        for kernel in program.kernels:
            allowed = (COMPUTE, ANY) if kernel.processor == "TRISC" else (DATAFLOW, ANY)
            for o, _ in walk(kernel.body):
                assert OPS[o.kind].processor in allowed, f"{name}: {o.kind} in {kernel.name} ({kernel.processor})"
                assert tuple(k for k, _ in o.args) == OPS[o.kind].args


@pytest.mark.parametrize("processor", [COMPUTE, DATAFLOW])
def test_the_macros_are_the_tables_ops(processor):
    # one public macro per op the kernels of that processor run (a leading underscore keeps a helper private)
    macros = set(re.findall(r"\{% macro ([a-z]\w*)\(o, cb(?:, pad)?\) %\}", _MACROS[processor].read_text()))
    assert macros == {k for k, row in OPS.items() if row.processor in (processor, ANY)}


def _sample(kind: str) -> Op:
    values = {"mode": "zero", "enable": True, "transpose": False, "tensor": "in0", "sem": "in0_mcast",
              "row_extent": None, "col_extent": None, "view": None}
    return Op(kind, tuple((a, values.get(a, 1)) for a in OPS[kind].args))


def test_copy_block_through_a_view_sets_the_views_read_pointer_first():
    # reload_from_cb_to_dst with MM_PARTIALS_RELOAD_ALIAS_CB: the unpacker's read pointer of the alias is the
    # partials', then copy_block reads through the alias
    module = _environment().get_template("compute/ops.j2").module
    o = Op("copy_block", (("cb", 5), ("tile", 0), ("dst", 0), ("tiles", 4), ("view", 7)))
    text = str(module.copy_block(o, {5: "cb_intermed0", 7: "cb_intermed0_reload_alias"})).strip()
    assert text == ("UNPACK((get_local_cb_interface(cb_intermed0_reload_alias).fifo_rd_ptr = "
                    "get_local_cb_interface(cb_intermed0).fifo_rd_ptr)); "
                    "copy_block(cb_intermed0_reload_alias, 0, 0, 4);")


@pytest.mark.parametrize("kind", list(OPS))
def test_each_macro_prints_the_tables_function(kind):
    row = OPS[kind]
    if row.processor in (COMPUTE, ANY):
        module = _environment().get_template("compute/ops.j2").module
        text = str(getattr(module, kind)(_sample(kind), {1: "cb_in"})).strip()
        assert re.match(rf"{re.escape(row.cxx)}[<(]", text), f"{kind} prints {text!r}, the table says {row.cxx}"
        assert text.endswith(");")
    if row.processor in (DATAFLOW, ANY):
        module = _environment().get_template("dataflow/ops.j2").module
        text = str(getattr(module, kind)(_sample(kind), {1: "cb_in"}, "    "))
        assert re.search(rf"\b{re.escape(row.cxx)}\(", text), f"{kind} prints {text!r}, the table says {row.cxx}"


def test_the_headers_a_kernel_includes_are_the_tables(programs):
    for name, program in programs.items():
        files = {f.path: f.text for f in render_sources(program)}
        for kernel in program.kernels:
            if kernel.processor != "TRISC":
                continue
            included = set(re.findall(r'#include "((?:api/compute|ttnn/operations)/[\w/]+\.(?:h|hpp))"',
                                      files[f"kernels/{kernel.name}.cpp"]))
            wanted = {OPS[o.kind].header for o, _ in walk(kernel.body) if OPS[o.kind].header}
            assert included == wanted | {"api/compute/common.h"}, name


def test_matmul_block_unpacks_as_llk_does():
    # LLK's matmul unpack: the smaller of rt, ct tiles held and rt*ct streamed per call
    o = Op("matmul_block", tuple((a, {"rt": 2, "ct": 4}.get(a, 0)) for a in OPS["matmul_block"].args))
    assert work_of(o).unpack_tiles == 2 + 8
