"""The targets of `--target`: one registry of `Target` objects, each declaring what `built` writes
for it and the chain steps it runs; every registered target through the one chain, with the one
policy for a missing tool (INCOMPLETE, exit 4); plain values, not argparse's Namespace, in proof/ and
perf/. A target's own facts are tested beside it (tests/proof/test_bhpy.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT, example, last_paragraph
from kgen.cli import main
from kgen.core.errors import SpecError
from kgen.gen.pipeline import run
from kgen.gen.spec import load_file, resolve
from kgen.proof import chain, targets
from kgen.proof.chain import EXIT_INCOMPLETE, ChainOptions, run_chain

# a spec every target takes (Blackhole, bfloat16, the 2D multicast on DRAM)
SPEC = str(example("bhpy_padded"))


def test_the_registry_names_each_target_once():
    assert targets.NAMES[0] == targets.DEFAULT == chain.TT_METAL.name
    assert targets.get(targets.DEFAULT) is chain.TT_METAL
    for name in targets.NAMES:
        target = targets.get(name)
        assert target.name == name
        assert set(target.steps) <= set(chain.STEP_NAMES) - {"built"}
    with pytest.raises(SpecError, match="kgen builds for tt-metal"):
        targets.get("no-such-runtime")


@pytest.mark.parametrize("name", targets.NAMES)
def test_built_writes_what_the_target_declares(name, tmp_path):
    target = targets.get(name)
    a = run(resolve(load_file(SPEC)), "rendered")
    out = target.outputs(a)
    result = run_chain(a, "built", options=ChainOptions(root=tmp_path), target=target)
    assert result.verdict == "passed" and [s.name for s in result.steps] == ["built"]
    folder = result.value("built").path
    assert folder == tmp_path / out.folder
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == {f.path for f in out.files}


@pytest.mark.parametrize("name", targets.NAMES)
@pytest.mark.parametrize("command, step", [("emulate", "emulated"), ("port-check", "port-checked")])
def test_without_a_host_compiler_every_target_is_incomplete(name, command, step, monkeypatch, capsys):
    """One policy for one missing tool, whatever the target: the chain's last line and exit 4."""
    monkeypatch.setattr(chain, "missing_for_emulation", lambda: "no host g++ (test)")
    assert main([command, SPEC, "--target", name, "-j", "1"]) == EXIT_INCOMPLETE
    last = last_paragraph(capsys.readouterr().out)
    assert last.startswith(f"kgen {command}") and "INCOMPLETE (built ran)" in last, last
    assert f"not {step}: no host g++ (test)" in last


@pytest.mark.parametrize("name", targets.NAMES)
def test_a_build_whose_type_check_cannot_run_is_incomplete(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(chain, "missing_for_typecheck", lambda tc, mode: "no TT-Metal headers (test)")
    assert main(["build", SPEC, "--target", name, "-o", str(tmp_path)]) == EXIT_INCOMPLETE
    last = last_paragraph(capsys.readouterr().out)
    assert last.startswith("kgen build") and "INCOMPLETE (built ran); not type-checked: no TT-Metal headers (test)" in last
    # --no-compile asks for rendering only
    assert main(["build", SPEC, "--target", name, "-o", str(tmp_path), "--no-compile"]) == 0


LATER_LAYERS = sorted(p for layer in ("proof", "perf") for p in (ROOT / "kgen" / layer).rglob("*.py"))


@pytest.mark.parametrize("path", LATER_LAYERS, ids=lambda p: p.relative_to(ROOT / "kgen").as_posix())
def test_no_namespace_reaches_proof_or_perf(path):
    """The CLI turns argparse's results into plain values: no module of proof/ or perf/ imports argparse
    or takes a parameter called args."""
    tree = ast.parse(path.read_text())
    assert "argparse" not in {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "args" not in {a.arg for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))
                          for a in n.args.args + n.args.kwonlyargs}


def _kgen_imports(path: Path) -> set[str]:
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("kgen."):
            out.add(n.module)
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.startswith("kgen.")}
    return out


def test_the_chain_imports_no_target():
    """The chain runs the Target it is given: it imports neither the registry nor any module that
    imports the chain (a target's steps), at any level, TYPE_CHECKING too."""
    proof = ROOT / "kgen" / "proof"
    users = {f"kgen.proof.{p.stem}" for p in proof.glob("*.py") if "kgen.proof.chain" in _kgen_imports(p)}
    assert "kgen.proof.targets" in users
    assert not users & _kgen_imports(proof / "chain.py")
