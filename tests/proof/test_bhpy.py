"""port-check --target blackhole-py on every variant of examples/bhpy_padded.kspec: the exported program,
run under blackhole-py's layout, gives the bytes of kgen's TT-Metal program, and both are the golden
model's bits (both policies, fp32 Dst, the reuse dataflow, with and without bias and ReLU). And the
target as the chain and the commands see it: its outputs, notes, refused flags and port plan."""

from __future__ import annotations

import ast
import inspect

import pytest

from conftest import ROOT, example
from kgen.gen.pipeline import run
from kgen.gen.spec import load_file, resolve
from kgen.proof import bhpy


@pytest.mark.parametrize("variant", [None, *load_file(example("bhpy_padded")).variants])
def test_port_check_is_bit_identical(variant):
    artifacts = run(resolve(load_file(example("bhpy_padded")), variant), "rendered")
    tt, ours, identical = bhpy.port_check(artifacts, parallel=1)
    assert tt.ok and tt.exact_match, tt.hazards or tt.deadlock
    assert ours.ok and ours.exact_match, ours.hazards or ours.deadlock
    assert identical and tt.out_bytes == ours.out_bytes


def test_an_unsplit_multicast_is_caught(monkeypatch):
    """Without the split around Blackhole's columns 8-9 the row multicast's rectangle holds fewer cores
    than it names: the emulated NoC coordinates make that a reported hazard, not a silent pass."""
    from kgen.gen.targets import blackhole_py as bh
    monkeypatch.setattr(bh, "_adapt_multicasts", lambda body: body)
    artifacts = run(resolve(load_file(example("bhpy_padded")), None), "rendered")
    result, _, _ = bhpy.emulate(artifacts, parallel=1)
    assert not result.ok
    assert any(h["kind"] == "multicast destinations" for h in result.hazards), result.hazards


def test_the_target_declares_its_outputs_notes_and_port_plan(tmp_path):
    from kgen.proof.chain import ChainOptions, run_chain
    from kgen.proof.targets import get

    target = get("blackhole-py")
    a = run(resolve(load_file(example("bhpy_padded"))), "rendered")
    out = target.outputs(a)
    assert out.folder == f"{a.rendered.kernel_id}-blackhole-py"
    assert [f.path for f in out.files] == ["blackhole_py_program.py", "README.md"]
    result = run_chain(a, "built", options=ChainOptions(root=tmp_path), target=target)
    assert any("packer L1 accumulation" in n for n in result.notes)
    assert target.port_plan.field == "compute.packer_l1_acc"
    assert [v for _, v in target.port_plan.stages] == ["false", "true"]


def test_the_target_refuses_the_default_targets_flags(capsys):
    from kgen.cli import main
    from kgen.core.errors import SpecError
    from kgen.proof.chain import ChainOptions, run_chain
    from kgen.proof.targets import get

    spec = str(example("bhpy_padded"))
    assert main(["emulate", spec, "--target", "blackhole-py", "--schedules", "2"]) == 2
    assert "--schedules, --trace and --reference are for the default target" in capsys.readouterr().err
    with pytest.raises(SpecError) as refused:
        run_chain(run(resolve(load_file(spec)), "rendered"), "emulated", options=ChainOptions(schedules=1),
                  target=get("blackhole-py"))
    assert refused.value.hint == "drop them, or drop --target blackhole-py"
    assert main(["ab", spec, "--target", "blackhole-py", "--vary", "compute.packer_l1_acc=false,true"]) == 2
    assert "compares the port plan's fixed stages" in capsys.readouterr().err


def test_the_entry_points_take_plain_values():
    from kgen.perf import bhpy_ab

    assert list(inspect.signature(bhpy.run_command).parameters) == ["request", "artifacts"]
    assert list(inspect.signature(bhpy_ab.run_ab).parameters) == ["spec_path", "target", "seed", "as_json"]


def test_the_type_check_does_not_import_the_module_that_uses_it():
    tree = ast.parse((ROOT / "kgen" / "proof" / "bhpy_typecheck.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "kgen.proof.bhpy" not in modules
