"""The structure kgen keeps: layers that import only earlier layers (never the package root), modules
that import each other in no circle (function-level and type-only imports count), dataflow
names spelled only by the registry, and source files and functions small enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kgen.core.types import Placement
from kgen.gen import dataflow as dataflows

ROOT = Path(__file__).resolve().parents[1] / "kgen"
LAYERS = ("core", "gen", "toolchain", "device", "proof", "perf")   # each imports only the ones before it
LINE_BUDGET = {"gen/plan.py": 600, "gen/lower.py": 600}
MAX_FILE_LINES = 800          # every source file, Python or the emulator's C++
MAX_FUNCTION_LINES = 80       # every Python function, from its `def` to its last line
SOURCES = sorted(ROOT.rglob("*.py"))
ALL_SOURCES = sorted(p for p in ROOT.rglob("*") if p.suffix in (".py", ".cpp", ".h", ".hpp") and p.is_file())
# The stages after lowering read the IR alone: the IR module, and what renders, verifies and predicts it.
IR_READERS = ("gen/ir.py", "gen/render.py", "gen/verify.py", "gen/descriptors.py", "perf/model.py")
# The modules that name no op kind: they loop over the op table and dispatch on its columns (the CB, DST,
# semaphore and fill effects, the index-bound rule, the cost term), so a kind is spelled only in
# gen/optable.py (its OpKind) and by what builds ops (gen/lower.py, gen/dataflow/).
KIND_FREE = ("gen/ir.py", "gen/render.py", "gen/verify.py", "gen/descriptors.py", "perf/model.py")
# The templates render.py prints a Program with (ab's HTML report and the toolchain stand-ins are not).
IR_TEMPLATES = ("compute", "dataflow", "common", "jit", "report/README.md.j2")


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every kgen import, at module level or inside a function."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "kgen":
            out += [(node.lineno, f"kgen.{a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in out if m == "kgen" or m.startswith("kgen.")]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_package_root_only_re_exports_the_versions():
    # for users' `kgen.__version__`; no module of kgen reads the root (the versions live in core)
    assert [m for _, m in _imports(ast.parse((ROOT / "__init__.py").read_text()))] == ["kgen.core.version"]


@pytest.mark.parametrize("path", [p for p in SOURCES if _rel(p) != "__init__.py"], ids=_rel)
def test_no_module_imports_the_package_root(path):
    for line, module in _imports(ast.parse(path.read_text())):
        parts = module.split(".")     # kgen.NAME must be a module or package, not a name the root defines
        assert len(parts) > 1 and ((ROOT / parts[1]).is_dir() or (ROOT / f"{parts[1]}.py").is_file()), \
            f"{_rel(path)}:{line} imports {module} from the package root"


@pytest.mark.parametrize("path", [p for p in SOURCES if _rel(p).split("/")[0] in LAYERS], ids=_rel)
def test_a_layer_imports_only_earlier_layers(path):
    layer = LAYERS.index(_rel(path).split("/")[0])
    for line, module in _imports(ast.parse(path.read_text())):
        parts = module.split(".")
        assert len(parts) > 1 and parts[1] in LAYERS, f"{_rel(path)}:{line} imports {module}, not a layer"
        assert LAYERS.index(parts[1]) <= layer, (f"{_rel(path)}:{line} imports {module}: "
                                                 f"{parts[1]} comes after {LAYERS[layer]}")


def _module_of(name: str) -> str | None:
    """The kgen source file (relative) a dotted name is, or None when it names no module."""
    rel = Path(*name.split(".")[1:])
    for candidate in (rel.with_suffix(".py"), rel / "__init__.py"):
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
    return None


def _import_graph() -> dict[str, set[str]]:
    """Module -> the kgen modules it imports (`from kgen.a import b` reaches kgen/a/b.py when that is a
    module, else kgen/a), at module level, inside functions and under TYPE_CHECKING alike."""
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        edges = graph.setdefault(_rel(path), set())
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("kgen"):
                names = [f"{node.module}.{a.name}" if _module_of(f"{node.module}.{a.name}") else node.module
                         for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("kgen.")]
            edges.update(m for m in map(_module_of, names) if m and m != _rel(path))
    return graph


def test_the_modules_form_no_import_circle():
    import graphlib
    try:
        graphlib.TopologicalSorter(_import_graph()).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"an import circle: {' -> '.join(exc.args[1])}")


def _string_constants(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_only_the_registry_spells_a_dataflow():
    names = set(dataflows.NAMES)
    found = [f"{_rel(p)}:{line} {value!r}" for p in SOURCES if not _rel(p).startswith("gen/dataflow/")
             for line, value in _string_constants(p) if value in names]
    assert found == []


def test_only_the_placement_enum_spells_a_sharded_placement():
    sharded = {p.value for p in Placement if p.value.startswith("l1_")}
    found = [f"{_rel(p)}:{line} {value!r}" for p in SOURCES if _rel(p) != "core/types.py"
             for line, value in _string_constants(p) if value in sharded]
    assert found == []


@pytest.mark.parametrize("rel", KIND_FREE)
def test_only_the_op_table_names_an_op_kind(rel):
    """No string literal of these modules is an op kind, and none names an OpKind member: what an op
    does to the CBs, DST and semaphores, the bounds it keeps and what it costs are its row's columns."""
    from kgen.gen.optable import OpKind

    kinds = {k.value for k in OpKind}
    found = [f"{rel}:{line} {value!r}" for line, value in _string_constants(ROOT / rel) if value in kinds]
    tree = ast.parse((ROOT / rel).read_text())
    found += [f"{rel}:{node.lineno} {node.value.id}.{node.attr}" for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in ("OpKind", "K") and node.attr in OpKind.__members__]
    assert found == []


def test_no_placement_is_compared_with_a_string():
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) \
                    and node.left.attr in ("in0", "in1", "out") \
                    and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in node.comparators):
                found.append(f"{_rel(path)}:{node.lineno}")
    assert found == []


@pytest.mark.parametrize("rel,budget", sorted(LINE_BUDGET.items()))
def test_stage_modules_stay_within_their_line_budget(rel, budget):
    assert len((ROOT / rel).read_text().splitlines()) <= budget


@pytest.mark.parametrize("path", ALL_SOURCES, ids=_rel)
def test_a_source_file_stays_within_the_line_budget(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_FILE_LINES, f"{_rel(path)} has {lines} lines (at most {MAX_FILE_LINES})"


@pytest.mark.parametrize("path", SOURCES, ids=_rel)
def test_a_function_stays_within_the_line_budget(path):
    long = [f"{_rel(path)}:{node.lineno} {node.name} has {node.end_lineno - node.lineno + 1} lines"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, "\n".join(long) + f"\n(at most {MAX_FUNCTION_LINES} lines a function)"


def test_the_ir_does_not_hold_the_plan():
    from dataclasses import fields

    from kgen.gen.ir import Program
    assert "plan" not in {f.name for f in fields(Program)} and not hasattr(Program, "plan")


@pytest.mark.parametrize("rel", IR_READERS)
def test_the_ir_readers_never_reach_for_a_plan(rel):
    """Every Program these modules receive stands on its own: no `.plan` attribute is read, nor asked for
    by name (getattr), anywhere in them."""
    found = []
    for node in ast.walk(ast.parse((ROOT / rel).read_text())):
        if isinstance(node, ast.Attribute) and node.attr == "plan":
            found.append(f"{rel}:{node.lineno} .plan")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                and any(isinstance(a, ast.Constant) and a.value == "plan" for a in node.args):
            found.append(f"{rel}:{node.lineno} {node.func.id}(..., 'plan')")
    assert found == []


def test_the_ir_templates_read_no_plan():
    """The templates print the Program render hands them: no `plan` in their context, no `.plan` read."""
    import jinja2.meta
    from jinja2 import nodes

    from kgen.gen.render import _environment

    env = _environment()
    templates = ROOT.parent / "templates"
    paths = sorted(p for rel in IR_TEMPLATES for p in ((templates / rel).rglob("*.j2") if (templates / rel).is_dir()
                                                       else [templates / rel]))
    assert len(paths) >= 10
    found = []
    for path in paths:
        tree = env.parse(path.read_text())
        if "plan" in jinja2.meta.find_undeclared_variables(tree):
            found.append(f"{path.name}: reads `plan` from its context")
        found += [f"{path.name}:{n.lineno} .plan" for n in tree.find_all(nodes.Getattr) if n.attr == "plan"]
    assert found == []
