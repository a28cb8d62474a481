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


# ---------------------------------------------------------------------------------------------
# The type-check against blackhole-py's own tree (tt-metal-deps/ in its checkout, $BLACKHOLE_PY).
# The real bundle is a GitHub download CI cannot reach: a fake bundle whose compiler records what it
# was asked checks the commands; the real one is checked only where $BLACKHOLE_PY names it.
# ---------------------------------------------------------------------------------------------

_FAKE_CC = '''#!{python}
import json, os, pathlib, sys
cwd = pathlib.Path.cwd()
record = {{"argv": sys.argv, "cwd": str(cwd), "files": {{p.name: p.read_text() for p in cwd.iterdir()}}}}
pathlib.Path(os.environ["FAKE_CC_LOG"], cwd.name + ".json").write_text(json.dumps(record))
if os.environ.get("FAKE_CC_FAIL") and "-DCOMPILE_FOR_" + os.environ["FAKE_CC_FAIL"] in " ".join(sys.argv):
    sys.stderr.write("kernel_includes.hpp:12:5: error: 'matmul_block_init' was not declared in this scope\\n")
    sys.exit(1)
'''


def _fake_checkout(tmp_path, monkeypatch):
    import sys

    from kgen.gen.targets import blackhole_py as bh
    t = bh.facts()["tree"]
    checkout = tmp_path / "blackhole-py"
    deps = checkout / t["deps"]
    for rel in t["required"]:
        path = deps / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel == t["compiler"]:
            path.write_text(_FAKE_CC.format(python=sys.executable))
            path.chmod(0o755)
        elif rel.endswith(".cc"):
            path.write_text("")
        else:
            path.mkdir(exist_ok=True)
    log = tmp_path / "cc-log"
    log.mkdir()
    monkeypatch.setenv(bh.CHECKOUT_ENV, str(checkout))
    monkeypatch.setenv("FAKE_CC_LOG", str(log))
    return checkout, log


def _records(log):
    import json
    return {p.stem: json.loads(p.read_text()) for p in log.glob("*.json")}


@pytest.mark.parametrize("variant", [None, "fp32"])
def test_the_check_runs_blackhole_pys_compiler_on_its_tree(variant, tmp_path, monkeypatch):
    from kgen.gen.targets import blackhole_py as bh
    from kgen.proof.bhpy_typecheck import bhpy_defines, find_tree
    from kgen.proof.chain import ChainOptions, run_chain
    from kgen.proof.targets import get

    checkout, log = _fake_checkout(tmp_path, monkeypatch)
    tree, _ = find_tree()
    assert tree is not None and tree.checkout == checkout.resolve()
    a = run(resolve(load_file(example("bhpy_padded")), variant), "rendered")
    p = bh.view(a.plan, a.rendered)
    result = run_chain(a, "typechecked", options=ChainOptions(root=tmp_path / "out"), target=get("blackhole-py"))
    step = result.step("typechecked")
    assert result.verdict == "passed" and "against blackhole-py's own tree" in step.detail, step.detail
    records = _records(log)
    # each kernel once per processor it runs on: BRISC or NCRISC, or the three TRISCs
    want = {f"{role}-{target}" for role, k in p.kernels.items()
            for target in (("trisc0", "trisc1", "trisc2") if k.noc is None
                           else ("brisc" if k.processor == "RISCV_0" else "ncrisc",))}
    assert set(records) == want and len(want) == len(step.value)
    t, f = bh.facts()["tree"], bh.facts()["flags"]
    inc = tree.deps / t["include_root"]
    for name, rec in records.items():
        role, target = name.rsplit("-", 1)
        argv, files = rec["argv"], rec["files"]
        assert argv[0] == str(tree.compiler) and argv[-2:] == ["-fsyntax-only", str(tree.stub(target))]
        assert argv[1] == f[target]["opt"] and all(flag in argv for flag in f["cflags"] + f[target]["mcpu"])
        includes = [a[2:] for a in argv if a.startswith("-I")]
        assert includes == [".", str(tree.checkout), str(inc), *(str(inc / d) for d in t["include_paths"])]
        assert [a[2:] for a in argv if a.startswith("-D")] == bhpy_defines(target)
        assert files[t["kernel_file"]] == p.kernels[role].source
        sync = "SyncFull" if p.dst_full_sync else "SyncHalf"
        assert files["chlkc_dst_sync_mode.h"].endswith(f"#define DST_SYNC_MODE DstSync::{sync}\n")
        assert f"MATH_FIDELITY = {bh.facts()['math_fidelity'][p.math_fidelity]};" in files["chlkc_math_fidelity.h"]
        assert f"DST_ACCUM_MODE = {'true' if p.dst_accum_mode else 'false'};" in files["chlkc_dst_accum_mode.h"]
        formats = files["chlkc_unpack_data_format.h"].split("unpack_src_format[32] = {")[1].split("}")[0]
        codes = [int(v) for v in formats.split(",")]
        sizes = [int(v) for v in files["chlkc_pack_tile_dims.h"].split("pack_tile_size[32] = {")[1].split("}")[0].split(",")]
        for index, dtype, _ in p.cbs:
            assert codes[index] == bh.facts()["dtype"][dtype] and sizes[index] == bh.tile_bytes(dtype)
        assert codes[31] == bh.facts()["dtype"]["Float16_b"] and len(codes) == 32
        if target.startswith("trisc"):
            assert files[t["defines_file"]] == ""
            for stage in ("unpack", "math", "pack"):
                assert files[f"chlkc_{stage}.cpp"] == (f'#define TRISC_{stage.upper()}\n#include "{t["defines_file"]}"\n'
                                                      f'#include <{t["kernel_file"]}>\n')
    if variant == "fp32":                            # Float32 partials at CB 24: code 0, 4096-byte tiles
        assert (24, "Float32") in {(i, d) for i, d, _ in p.cbs}


def test_a_kernel_that_does_not_compile_there_fails_the_build(tmp_path, monkeypatch, capsys):
    from kgen.cli import main

    _fake_checkout(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_CC_FAIL", "TRISC=1")
    assert main(["build", str(example("bhpy_padded")), "--target", "blackhole-py", "-o", str(tmp_path / "o")]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "compute (trisc1) does not compile against blackhole-py's tree" in err
    assert "'matmul_block_init' was not declared" in err


def test_blackhole_py_named_without_its_tree_is_incomplete(tmp_path, monkeypatch, capsys):
    from kgen.cli import main
    from kgen.gen.targets import blackhole_py as bh
    from kgen.proof.chain import EXIT_INCOMPLETE

    monkeypatch.setenv(bh.CHECKOUT_ENV, str(tmp_path))        # a folder, but no tt-metal-deps in it
    assert main(["build", str(example("bhpy_padded")), "--target", "blackhole-py", "-o", str(tmp_path / "o")]) \
        == EXIT_INCOMPLETE
    out = " ".join(capsys.readouterr().out.split())
    assert "INCOMPLETE (built ran); not type-checked:" in out
    assert "holds no tt-metal-deps/sfpi-toolchain/bin/riscv-tt-elf-g++ (run ./setup-deps.sh" in out


def test_the_kernels_type_check_against_a_real_blackhole_py_tree(tmp_path):
    """The acceptance check itself, where the bundle exists: $BLACKHOLE_PY names a blackhole-py
    checkout in which its ./setup-deps.sh has run."""
    from kgen.gen.targets import blackhole_py as bh
    from kgen.proof.bhpy_typecheck import check_against_tree, find_tree

    tree, why = find_tree()
    if tree is None:
        pytest.skip(f"no blackhole-py tree ({why}): its tt-metal-deps bundle is a download from GitHub "
                    f"(./setup-deps.sh in a blackhole-py checkout); set ${bh.CHECKOUT_ENV} to such a checkout")
    for variant in (None, *load_file(example("bhpy_padded")).variants):
        a = run(resolve(load_file(example("bhpy_padded")), variant), "rendered")
        results = check_against_tree(bh.view(a.plan, a.rendered), tree)
        assert all(r.ok for r in results), "\n".join(r.output for r in results if not r.ok)
