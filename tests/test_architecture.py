"""The structure kgen keeps: layers that import only earlier layers, dataflow names spelled only by
the registry, and stage modules small enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kgen.core.types import Placement
from kgen.gen import dataflow as dataflows

ROOT = Path(__file__).resolve().parents[1] / "kgen"
LAYERS = ("core", "gen", "toolchain", "device", "proof", "perf")   # each imports only the ones before it
LINE_BUDGET = {"gen/plan.py": 600, "gen/lower.py": 600}
SOURCES = sorted(ROOT.rglob("*.py"))


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every kgen import, at module level or inside a function."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                                                    if node.module == "kgen"]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in out if m == "kgen" or m.startswith("kgen.")]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_package_root_is_constants_only():
    # layers may read kgen.__version__; the root itself imports nothing of kgen, so it adds no edge
    assert _imports(ast.parse((ROOT / "__init__.py").read_text())) == []


@pytest.mark.parametrize("path", [p for p in SOURCES if _rel(p).split("/")[0] in LAYERS], ids=_rel)
def test_a_layer_imports_only_earlier_layers(path):
    layer = LAYERS.index(_rel(path).split("/")[0])
    for line, module in _imports(ast.parse(path.read_text())):
        parts = module.split(".")
        if len(parts) == 1 or parts[1] not in LAYERS:      # the root's constants (kgen, kgen.__version__)
            assert parts[1:] in ([], ["__version__"], ["TT_METAL_VERSION"]), f"{_rel(path)}:{line} imports {module}"
            continue
        assert LAYERS.index(parts[1]) <= layer, (f"{_rel(path)}:{line} imports {module}: "
                                                 f"{parts[1]} comes after {LAYERS[layer]}")


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
