"""The targets of `--target`: one registry of `Target` objects, each declaring what `built` writes
for it and the chain steps it runs; every target through the one chain, with the one policy for a
missing tool (INCOMPLETE, exit 4); plain values, not argparse's Namespace, into proof/ and perf/."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from conftest import ROOT, example
from kgen.cli import main
from kgen.core.errors import SpecError
from kgen.gen.pipeline import run
from kgen.gen.spec import load_file, resolve
from kgen.proof import chain, targets
from kgen.proof.chain import EXIT_INCOMPLETE, ChainOptions, run_chain

PADDED = str(example("bhpy_padded"))


def _artifacts(path: str = PADDED):
    return run(resolve(load_file(path)), "rendered")


def test_the_registry_names_each_target_once():
    assert targets.NAMES == ("tt-metal", "blackhole-py") and targets.DEFAULT == "tt-metal"
    for name in targets.NAMES:
        target = targets.get(name)
        assert target.name == name
        # the steps after `built`, in the chain's order
        assert list(target.steps) == [n for n in chain.STEP_NAMES if n in target.steps and n != "built"]
    assert targets.get("tt-metal") is chain.TT_METAL
    with pytest.raises(SpecError, match="kgen builds for tt-metal, blackhole-py"):
        targets.get("no-such-runtime")


def test_a_target_declares_what_built_writes(tmp_path):
    a = _artifacts()
    tt = chain.TT_METAL.outputs(a)
    assert tt.folder == a.rendered.kernel_id and tt.files == a.rendered.files
    bhpy = targets.get("blackhole-py").outputs(a)
    assert bhpy.folder == f"{a.rendered.kernel_id}-blackhole-py"
    assert [f.path for f in bhpy.files] == ["blackhole_py_program.py", "README.md"]
    result = run_chain(a, "built", options=ChainOptions(root=tmp_path), target=targets.get("blackhole-py"))
    assert result.verdict == "passed" and result.value("built").path == tmp_path / bhpy.folder
    assert sorted(p.name for p in (tmp_path / bhpy.folder).iterdir()) == ["README.md", "blackhole_py_program.py"]
    # the target's notes on the spec come with the result
    assert any("packer L1 accumulation" in n for n in result.notes)


@pytest.mark.parametrize("target", ["tt-metal", "blackhole-py"])
@pytest.mark.parametrize("command, step", [("emulate", "emulated"), ("port-check", "port-checked")])
def test_without_a_host_compiler_every_target_is_incomplete(target, command, step, monkeypatch, capsys):
    """One policy for one missing tool: blackhole-py exited 2 (an EmulatorError) where TT-Metal said
    INCOMPLETE; both now end with the chain's last line and exit 4."""
    monkeypatch.setattr(chain, "missing_for_emulation", lambda: "no host g++ (test)")
    assert main([command, PADDED, "--target", target, "-j", "1"]) == EXIT_INCOMPLETE
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"kgen {command}") and "INCOMPLETE (built ran)" in last, last
    assert f"not {step}: no host g++ (test)" in last


def test_blackhole_py_build_without_the_host_checker_is_incomplete(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(chain, "missing_for_typecheck", lambda tc, mode: "no TT-Metal headers (test)")
    assert main(["build", PADDED, "--target", "blackhole-py", "-o", str(tmp_path)]) == EXIT_INCOMPLETE
    out = capsys.readouterr().out.splitlines()
    assert "  check    skipped: no TT-Metal headers (test)" in out
    assert out[-1].startswith("kgen build --target blackhole-py: INCOMPLETE (built ran); "
                              "not type-checked: no TT-Metal headers (test)"), out[-1]
    # --no-compile asks for rendering only
    assert main(["build", PADDED, "--target", "blackhole-py", "-o", str(tmp_path), "--no-compile"]) == 0


def test_a_target_refuses_the_options_it_has_no_use_for(capsys):
    assert main(["emulate", PADDED, "--target", "blackhole-py", "--schedules", "2"]) == 2
    assert "--schedules, --trace and --reference are for the default target" in capsys.readouterr().err
    with pytest.raises(SpecError) as refused:
        run_chain(_artifacts(), "emulated", options=ChainOptions(schedules=1), target=targets.get("blackhole-py"))
    assert refused.value.hint == "drop them, or drop --target blackhole-py"


def test_ab_asks_the_target_for_its_port_plan(capsys):
    assert chain.TT_METAL.port_plan is None
    plan = targets.get("blackhole-py").port_plan
    assert plan.field == "compute.packer_l1_acc" and [v for _, v in plan.stages] == ["false", "true"]
    assert main(["ab", PADDED, "--target", "blackhole-py", "--vary", "compute.packer_l1_acc=false,true"]) == 2
    assert "compares the port plan's fixed stages" in capsys.readouterr().err


# the modules that make up the targets, below the CLI
TARGET_MODULES = ("proof/chain.py", "proof/targets.py", "proof/bhpy.py", "proof/bhpy_typecheck.py", "perf/bhpy_ab.py")


@pytest.mark.parametrize("rel", TARGET_MODULES)
def test_no_namespace_crosses_into_proof_or_perf(rel):
    tree = ast.parse((ROOT / "kgen" / rel).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "argparse" not in imported
    params = [a.arg for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda)) for a in n.args.args]
    assert "args" not in params


def test_the_entry_points_take_plain_values():
    from kgen.perf import bhpy_ab
    from kgen.proof import bhpy

    assert list(inspect.signature(bhpy.run_command).parameters) == ["request", "artifacts"]
    assert list(inspect.signature(bhpy_ab.run_ab).parameters) == ["spec_path", "target", "seed", "as_json"]


def _kgen_imports(path: Path) -> set[str]:
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("kgen."):
            out.add(n.module)
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.startswith("kgen.")}
    return out


def test_the_target_modules_form_no_circle():
    """chain runs any target without importing one; a target's module imports the chain; the
    type-check of blackhole-py does not import the module that uses it (at any level, TYPE_CHECKING
    too)."""
    proof = ROOT / "kgen" / "proof"
    assert not {"kgen.proof.bhpy", "kgen.proof.bhpy_typecheck", "kgen.proof.targets"} & _kgen_imports(proof / "chain.py")
    assert "kgen.proof.bhpy" not in _kgen_imports(proof / "bhpy_typecheck.py")
    assert "kgen.proof.targets" not in _kgen_imports(proof / "bhpy.py") | _kgen_imports(proof / "bhpy_typecheck.py")
