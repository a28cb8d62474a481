"""The stage driver (kgen/gen/pipeline.py): one ordered chain for every command, `until`, per-stage
overrides, the dump of every stage's artefact, and `kgen emulate` planning once."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import example
from kgen.cli import main
from kgen.core.errors import KgenError
from kgen.gen.pipeline import STAGES, run
from kgen.gen.plan import PlanError
from kgen.gen.plan_report import plan_to_dict
from kgen.gen.spec import load, parse_text, resolve
from kgen.gen.verify import IRVerificationError


def test_stages_in_order_and_until():
    assert list(STAGES) == ["plan", "ir", "verified", "rendered"]
    spec = load(example("peak_small"))
    a = run(spec, "plan")
    assert a.plan is not None and a.ir is None and a.verified is None and a.rendered is None
    a = run(spec, "verified")
    assert a.verified is a.ir and a.rendered is None
    a = run(spec)
    assert a.rendered.kernel_id.startswith("mm_") and any(f.path == "kernels/compute.cpp" for f in a.rendered.files)
    assert json.loads(next(f.text for f in a.rendered.files if f.path == "manifest.json")) == a.rendered.manifest
    with pytest.raises(ValueError):
        run(spec, "compiled-by-magic")
    with pytest.raises(ValueError):
        run(spec, overrides={"lowering": lambda a: None})


def test_an_overridden_ir_is_still_verified():
    """A replaced stage is checked like the stage it replaces: an IR whose compute kernel lost its
    ops fails the verifier."""
    from kgen.gen.lower import lower

    def broken(a):
        program = lower(a.plan)
        compute = replace(program.kernels[0], body=())
        return replace(program, kernels=(compute, *program.kernels[1:]))

    with pytest.raises(IRVerificationError) as info:
        run(load(example("peak_small")), overrides={"ir": broken})
    assert info.value.stage == "verified" and info.value.artifacts.ir is not None


def test_a_rendered_override_replaces_what_is_written(tmp_path):
    from kgen.gen.build import write_artifacts
    from kgen.gen.pipeline import Rendered, _render

    def edited(a):
        r = _render(a)
        files = tuple(replace(f, text="// edited by hand\n" + f.text) if f.path == "kernels/compute.cpp" else f
                      for f in r.files)
        return Rendered(r.kernel_id, files, r.manifest)

    result = write_artifacts(run(load(example("peak_small")), overrides={"rendered": edited}), tmp_path)
    assert (result.path / "kernels" / "compute.cpp").read_text().startswith("// edited by hand\n")


def test_the_failing_stage_is_named():
    text = example("peak_small").read_text().replace("grid     = 2 x 2", "grid     = 99 x 2")
    with pytest.raises(PlanError) as info:
        run(resolve(parse_text(text, "t.kspec")))
    assert info.value.stage == "plan" and info.value.artifacts.plan is None


def test_dump_writes_every_stage(tmp_path):
    spec = load(example("peak_small"))
    a = run(spec, dump=tmp_path / "dump")
    folder = tmp_path / "dump" / spec.name
    assert json.loads((folder / "spec.json").read_text())["name"] == spec.name
    assert json.loads((folder / "plan.json").read_text()) == json.loads(json.dumps(plan_to_dict(a.plan)))
    assert (folder / "ir.txt").read_text() == (folder / "verified.txt").read_text()
    for f in a.rendered.files:
        assert (folder / "rendered" / f.path).read_text() == f.text


def test_kgen_dump_from_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KGEN_DUMP", "dumps")                      # relative: under the current folder
    assert main(["check", str(example("peak_small"))]) == 0
    folder = tmp_path / "dumps" / "peak_small"
    assert sorted(p.name for p in folder.iterdir()) == ["ir.txt", "plan.json", "spec.json", "verified.txt"]


@pytest.mark.parametrize("value", ["afile", ""])
def test_bad_kgen_dump_is_a_user_error(tmp_path, monkeypatch, capsys, value):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("KGEN_DUMP", value)
    if value == "":
        assert main(["check", str(example("peak_small"))]) == 0      # empty: unset, as for every kgen variable
        return
    assert main(["check", str(example("peak_small"))]) == 2
    err = capsys.readouterr().err
    assert "KGEN_DUMP" in err and "not a folder" in err and "Traceback" not in err


def test_emulate_plans_once(host_cxx, monkeypatch, capsys):
    import kgen.gen.plan

    calls = []
    real = kgen.gen.plan.plan
    monkeypatch.setattr(kgen.gen.plan, "plan", lambda spec: calls.append(spec.name) or real(spec))
    assert main(["emulate", str(example("l1acc_one_block"))]) == 0
    assert calls == ["l1acc_one_block"]


def test_errors_keep_the_user_error_type():
    with pytest.raises(KgenError):
        run(resolve(parse_text(example("peak_small").read_text().replace("grid     = 2 x 2", "grid     = 99 x 2"),
                               "t.kspec")))


@pytest.mark.slow
def test_with_compute_kernel_swaps_only_the_compute_threads(tmp_path):
    """Port-check's reference kernel (or a user-edited kernel) as a `rendered` override: each TRISC
    thread's JIT file includes the new source by its absolute path; every other byte is kgen's."""
    from kgen.gen.pipeline import KernelSourceError, with_compute_kernel

    source = tmp_path / "my_compute.cpp"
    source.write_text("// a kernel\n")
    spec = load(example("peak_small"))
    ours, theirs = run(spec).rendered, run(spec, overrides={"rendered": with_compute_kernel(source)}).rendered
    assert theirs.kernel_id == ours.kernel_id and theirs.manifest == ours.manifest
    changed = {a.path for a, b in zip(ours.files, theirs.files) if a.text != b.text}
    assert changed == {f"jit/compute/chlkc_{t}.cpp" for t in ("unpack", "math", "pack")}
    assert all(f'#include "{source}"' in f.text for f in theirs.files if f.path in changed)
    with pytest.raises(KernelSourceError):
        with_compute_kernel(tmp_path / "missing.cpp")
