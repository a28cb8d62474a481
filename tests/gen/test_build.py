"""`kgen build` end to end: folder layout, manifest vs plan, reproducibility, atomic writes, bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, example
from kgen.gen import build as build_module
from kgen.cli import main
from kgen.gen.spec import load

TILE_BYTES = {"Float16_b": 2048, "Float32": 4096, "Bfp8_b": 1088, "Bfp4_b": 576}


def run_build(capsys, *args: str) -> tuple[int, str, str]:
    """Render only: compiling is tests/toolchain/test_compile.py's subject."""
    code = main(["build", "--no-compile", *args])
    out, err = capsys.readouterr()
    return code, out, err


def built_folder(out: str) -> Path:
    return Path(re.search(r"folder\s+(\S+)", out).group(1))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_builds_and_its_manifest_matches_the_plan(path, tmp_path, capsys):
    code, out, err = run_build(capsys, str(path), "-o", str(tmp_path))
    assert code == 0, err
    folder = built_folder(out)
    assert folder.parent == tmp_path
    plan_json = json.loads((folder / "plan.json").read_text())
    m = json.loads((folder / "manifest.json").read_text())
    assert m["format_version"] == 2 and m["kernel_id"] == folder.name
    assert isinstance(m["custom_program_hash"], int) and 0 <= m["custom_program_hash"] < 2 ** 64
    assert set(m) >= {"format_version", "kernel_id", "custom_program_hash", "kernels", "cbs", "semaphores"}
    spec = load(path)
    nx, ny = plan_json["grid"]["x"], plan_json["grid"]["y"]

    # CBs: one descriptor per L1 region; total = pages x page size; formats are the plan's
    for cb in m["cbs"]:
        assert cb["core_ranges"] == [{"start": [0, 0], "end": [nx - 1, ny - 1]}]
        sizes = set()
        for f in cb["format_descriptors"]:
            row = next(c for c in plan_json["cbs"] if c["index"] == f["buffer_index"])
            assert f["data_format"] == row["data_format"]
            # every CB's page is a tile (no 64-byte c_6: provenance R3)
            assert f["page_size"] == TILE_BYTES[row["data_format"]] == row["page_bytes"]
            assert f["tile"] == {"height": 32, "width": 32, "transpose": False}
            sizes.add(row["total_bytes"])
        assert cb["total_size"] == max(sizes)
    indices = sorted(f["buffer_index"] for cb in m["cbs"] for f in cb["format_descriptors"])
    assert indices == sorted(c["index"] for c in plan_json["cbs"])
    regions = {r["name"]: sorted(r["cb_indices"]) for r in plan_json["l1_regions"]}
    assert sorted(sorted(f["buffer_index"] for f in cb["format_descriptors"]) for cb in m["cbs"]) == sorted(regions.values())

    # kernels: sources exist; the compute config is the spec's; runtime args cover every core
    kernels = {k["name"]: k for k in m["kernels"]}
    compute = kernels["compute"]
    cc = spec.compute
    # fp32 accumulation with Float32 partials: TT-Metal 0.81.1 unpacks the partials (c_5), or with a fused bias
    # their reload alias (c_7), straight into DST (provenance N8, tests/data/wheel_unpack_to_dest.toml)
    to_dest = ({"7" if plan_json["fuse"]["bias"] else "5": "UnpackToDestFp32"}
               if cc.fp32_dest_acc and plan_json["formats"]["partials"] == "Float32" else None)
    assert compute["compute_config"] == {
        "math_fidelity": cc.math_fidelity, "fp32_dest_acc_en": cc.fp32_dest_acc, "math_approx_mode": cc.math_approx,
        "dst_full_sync_en": cc.dst_full_sync, "l1_acc_enabled": plan_json["packer_l1_acc_enabled"],
        **({"unpack_to_dest_mode": to_dest} if to_dest else {})}
    assert ("PACKER_L1_ACC" in compute["defines"]) == plan_json["packer_l1_acc_enabled"]
    assert ("FP32_DEST_ACC_EN" in compute["defines"]) == cc.fp32_dest_acc
    assert compute["core_ranges"] == [{"start": [0, 0], "end": [nx - 1, ny - 1]}]
    assert compute["compile_time_args"][7] == plan_json["num_blocks"]
    if spec.dataflow == "dram_sharded":
        # TT-Metal's DRAM-sharded factory: the in1 reader/writer on every worker; in0's gather, one kernel per
        # shard core (kgen's in0_gather_<i>: the first Kt / shard-width workers) and the receivers on the rest
        # of the workers (the rest of a row, then the rows below)
        shard_pages = next(c["pages"] for c in plan_json["cbs"] if c["role"] == "in0 shard")   # per_core_M x width
        shards = plan_json["tiles"]["Kt"] // (shard_pages // plan_json["per_core"]["M"])
        rest_x, rest_y = shards % nx, shards // nx
        receivers = ({"in0_gather_receiver"} if shards < nx * ny else set()) | (
            {"in0_gather_receiver_rows"} if rest_x and rest_y + 1 < ny else set())
        expected_roles = {"compute", "in1_reader_writer"} | {f"in0_gather_{i}" for i in range(shards)} | receivers
    elif spec.dataflow in ("mcast_1d_in0", "mcast_1d_in1"):
        # TT-Metal's 1D factory: one sender on (0,0); the receivers on the rest of row 0 and on the rows below
        receiver = "in0_receiver" if spec.dataflow == "mcast_1d_in0" else "in1_receiver_writer"
        expected_roles = ({"compute", "in0_sender", "in1_sender_writer"} | ({receiver} if nx > 1 else set())
                          | ({f"{receiver}_rows"} if ny > 1 else set()))
    else:
        # the 2D factory's roles: in0 receivers where more than one core shares an M block (along x, along y
        # under transpose_mcast), in1 receivers where more than one shares an N block; a block-sharded in0 is
        # one sender/receiver kernel per position along the in0 line (kgen's in0_sharded_<i>)
        along_n, along_m = (ny, nx) if spec.transpose_mcast else (nx, ny)
        in0_roles = ({f"in0_sharded_{i}" for i in range(along_n)} if spec.memory.in0 == "l1_block_sharded" else
                     {"in0_sender"} | ({"in0_receiver"} if along_n > 1 else set()))
        expected_roles = ({"compute", "reader", "writer"} if spec.dataflow == "reuse" else
                          {"compute", "in1_sender_writer"} | in0_roles
                          | ({"in1_receiver_writer"} if along_m > 1 else set()))
    assert set(kernels) == expected_roles
    covered: dict[str, set] = {}
    for k in m["kernels"]:
        assert (folder / k["source"]).is_file()
        assert isinstance(k["compile_time_args"], list) and all(isinstance(v, int) for v in k["compile_time_args"])
        assert all(isinstance(v, int) for v in k["named_compile_time_args"].values())
        assert all(isinstance(v, str) for v in k["defines"].values())
        r = k["core_ranges"][0]
        cores = {(x, y) for x in range(r["start"][0], r["end"][0] + 1) for y in range(r["start"][1], r["end"][1] + 1)}
        assert {tuple(e["core"]) for e in k["runtime_args"]} == cores
        for e in k["runtime_args"]:
            assert len(e["args"]) == len(k["runtime_arg_names"])
            assert e["args"][:2] == e["core"] if k["processor"] != "TRISC" else True
        if k["processor"] == "TRISC":
            assert k["noc"] is None and (folder / "jit" / k["name"] / "chlkc_math.cpp").is_file()
        else:
            assert k["processor"] in ("RISCV_0", "RISCV_1") and k["noc"] in ("NOC_0", "NOC_1")
            assert (folder / "jit" / k["name"] / "kernel_includes.hpp").is_file()
            for v in k["common_runtime_args"]:
                assert set(v) == {"buffer_address"}
        covered.setdefault(k["processor"], set()).update(cores)
    # every core with work runs one compute kernel, one BRISC and one NCRISC kernel
    all_cores = {(x, y) for x in range(nx) for y in range(ny)}
    assert covered == {"TRISC": all_cores, "RISCV_0": all_cores, "RISCV_1": all_cores}
    sems = m["semaphores"]
    if spec.dataflow == "mcast_2d":
        assert [s["id"] for s in sems] == [0, 1, 2, 3] and all(s["initial_value"] == 0 for s in sems)
    elif spec.dataflow in ("mcast_1d_in0", "mcast_1d_in1"):
        assert [s["id"] for s in sems] == [0, 1] and all(s["initial_value"] == 0 for s in sems)
    elif spec.dataflow == "dram_sharded":
        # in0 sender, receiver (INVALID) and sender-valid (VALID), ids 0, 1, 2 (the DRAM-sharded factory)
        assert [(s["id"], s["initial_value"]) for s in sems] == [(0, 0), (1, 0), (2, 1)]
    else:
        assert sems == []
    # plan.json and ir.txt are what `kgen check --json` and `kgen ir` print (plan.json without the path;
    # check also prints the performance model's prediction, which is not part of the plan)
    assert main(["check", "--json", str(path)]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked.pop("spec") == str(path) and plan_json.pop("spec") is None
    assert "TFLOPS" in checked.pop("predicted")
    assert checked == plan_json
    assert main(["ir", str(path)]) == 0
    assert capsys.readouterr().out == (folder / "ir.txt").read_text()
    assert "kgen.device.runtime" in (folder / "README.md").read_text()


def test_build_is_byte_reproducible_and_independent_of_location(tmp_path, capsys):
    spec = example("peak_bf16")
    copy = tmp_path / "elsewhere" / "renamed.kspec"
    copy.parent.mkdir()
    shutil.copy(spec, copy)
    run_build(capsys, str(spec), "-o", str(tmp_path / "a"))
    run_build(capsys, str(copy), "-o", str(tmp_path / "b"))
    code, out, _ = run_build(capsys, str(spec), "-o", str(tmp_path / "a"))     # rebuild in place
    assert code == 0
    [a] = (tmp_path / "a").iterdir()
    [b] = (tmp_path / "b").iterdir()
    assert a.name == b.name and re.fullmatch(r"mm_bf16_bh_m16n16k4_sb4x2_l1acc_hifi4_[0-9a-f]{8}", a.name)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_different_content_gives_a_different_id(tmp_path, capsys):
    run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    run_build(capsys, str(example("peak_small")), "--variant", "spill", "-o", str(tmp_path))
    run_build(capsys, str(example("peak_small")), "--variant", "fp32", "-o", str(tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 3
    assert any("_spill_" in n for n in names) and sum("_l1acc_" in n for n in names) == 2


def test_identical_kernels_share_an_id_whatever_their_names_and_comments():
    """peak_bf16's base already turns packer_l1_acc on, so its `l1acc` variant is the same kernel:
    the sources differ only in a comment naming the variant, the manifest only in its label."""
    from kgen.gen.pipeline import run
    from kgen.gen.spec import load_file, resolve

    sf = load_file(example("peak_bf16"))
    base, l1acc, spill = (run(resolve(sf, v), "rendered").rendered for v in (None, "l1acc", "spill"))
    differing = [f.path for f, g in zip(base.files, l1acc.files) if f.text != g.text]
    assert "kernels/compute.cpp" in differing and "manifest.json" in differing     # the labels do differ
    assert base.manifest["spec"]["variant"] is None and l1acc.manifest["spec"]["variant"] == "l1acc"
    assert base.kernel_id == l1acc.kernel_id
    assert spill.kernel_id != base.kernel_id


def test_one_byte_of_code_changes_the_id_a_comment_does_not():
    from dataclasses import replace

    from kgen.gen.pipeline import run
    from kgen.gen.render import kernel_id, manifest_body

    a = run(load(example("peak_small")), "verified")
    program = a.verified
    sources = tuple(f for f in run(load(example("peak_small")), "rendered").rendered.files
                    if f.path.startswith(("kernels/", "jit/")))
    body = manifest_body(program)
    kid = kernel_id(program, sources, body)
    i = next(i for i, f in enumerate(sources) if f.path == "kernels/compute.cpp")
    text = sources[i].text
    pos = text.index("cb_wait_front(")
    edited = text[:pos] + "cb_wait_front (" + text[pos + len("cb_wait_front("):]      # one byte of code
    commented = text + "// a comment\n/* and\n another */\n"
    with_code = sources[:i] + (replace(sources[i], text=edited),) + sources[i + 1:]
    with_comment = sources[:i] + (replace(sources[i], text=commented),) + sources[i + 1:]
    assert kernel_id(program, with_code, body) != kid
    assert kernel_id(program, with_comment, body) == kid
    assert kernel_id(program, sources, {**body, "cbs": body["cbs"][:-1]}) != kid      # the host interface counts


def test_default_output_root_is_build(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_build(capsys, str(example("l1acc_one_block")))
    assert code == 0
    [folder] = (tmp_path / "build").iterdir()
    assert folder.name.startswith("mm_bf16_") and "_dst_" in folder.name


# ----------------------------------------------------------------------------------------------
# Bad input: exit 2, one paragraph, nothing half-written
# ----------------------------------------------------------------------------------------------

def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_output_path_that_is_a_file(tmp_path, capsys):
    target = tmp_path / "afile"
    target.write_text("x")
    code, out, err = run_build(capsys, str(example("peak_small")), "-o", str(target))
    assert code == 2 and "is not a folder" in err and "Traceback" not in err
    assert target.read_text() == "x"


def test_output_path_under_a_file(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    code, _, err = run_build(capsys, str(example("peak_small")), "-o", str(tmp_path / "afile" / "sub"))
    assert code == 2 and "cannot create output folder" in err
    assert leftovers(tmp_path) == ["afile"]


def test_unwritable_output_folder(tmp_path, capsys, monkeypatch):
    root = tmp_path / "ro"
    root.mkdir()
    monkeypatch.setattr(build_module.os, "access", lambda *a, **k: False)   # root ignores chmod
    code, _, err = run_build(capsys, str(example("peak_small")), "-o", str(root))
    assert code == 2 and "not writable" in err
    assert leftovers(root) == []


def test_failure_half_way_leaves_nothing(tmp_path, capsys, monkeypatch):
    calls = {"n": 0}
    real = Path.write_text

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 7:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", flaky)
    code, _, err = run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    assert code == 2 and "No space left on device" in err
    assert calls["n"] == 7 and leftovers(tmp_path) == []


def test_failure_while_replacing_keeps_the_old_build(tmp_path, capsys, monkeypatch):
    code, out, _ = run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    folder = built_folder(out)
    with open(folder / "kernels" / "compute.cpp", "a") as f:   # an edited folder must be rewritten
        f.write("// edited by hand\n")
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    real = Path.write_text

    def failing(self, *args, **kwargs):
        if self.name == "README.md":
            raise OSError(5, "Input/output error")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing)
    code, _, err = run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    assert code == 2
    assert leftovers(tmp_path) == [folder.name]
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("name", ['peak"x', "a;b", "x\\n", "system(", "#include"])
def test_hostile_spec_names_are_rejected_before_anything_is_written(name, tmp_path, capsys):
    text = example("peak_small").read_text().replace("matmul peak_small", f"matmul {name}")
    spec = tmp_path / "hostile.kspec"
    spec.write_text(text)
    code, _, err = run_build(capsys, str(spec), "-o", str(tmp_path / "out"))
    assert code == 2 and "Traceback" not in err and err.count("\n") <= 6
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("edit", [
    ('in0_block_w  = 4', 'in0_block_w  = "4); system(\\"x\\")"'),
    ('in0_block_w  = 4', 'in0_block_w  = 4; system'),
    ("dataflow = mcast_2d", "dataflow = '#include <x>'"),
    ("arch     = wormhole_b0", "arch     = wormhole_b0\n#include"),        # a comment: harmless
    ("compute = peak_hifi2", "compute = peak_hifi2\n    compute { math_fidelity = \"HiFi2); x(\" }"),
])
def test_hostile_values_are_rejected_or_inert(edit, tmp_path, capsys):
    text = example("peak_small").read_text().replace(*edit)
    spec = tmp_path / "hostile.kspec"
    spec.write_text(text)
    code, out, err = run_build(capsys, str(spec), "-o", str(tmp_path / "out"))
    if code == 0:     # only the comment edit parses; nothing of it reaches the sources
        folder = built_folder(out)
        for p in folder.rglob("*"):
            if p.is_file():
                assert "#include <x>" not in p.read_text() and "system" not in p.read_text()
    else:
        assert code == 2 and "Traceback" not in err
        assert not (tmp_path / "out").exists()


def test_unknown_variant_is_a_clean_error(tmp_path, capsys):
    code, _, err = run_build(capsys, str(example("peak_small")), "--variant", "nope", "-o", str(tmp_path / "o"))
    assert code == 2 and "nope" in err and not (tmp_path / "o").exists()


def test_build_leaves_no_temporary_folders(tmp_path, capsys):
    for _ in range(2):
        run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert os.stat(next(tmp_path.iterdir())).st_mode & 0o777 == 0o755


@pytest.mark.slow
def test_rebuilding_identical_content_leaves_the_folder_in_place_and_edits_are_undone(tmp_path, capsys):
    _, out, _ = run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    folder = built_folder(out)
    (folder / "compile.json").write_text("{}")           # a compile output beside the sources
    inode = folder.stat().st_ino
    run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    assert folder.stat().st_ino == inode and (folder / "compile.json").exists()
    kernel = folder / "kernels" / "compute.cpp"
    pristine = kernel.read_bytes()
    kernel.write_bytes(pristine + b"// edited\n")
    run_build(capsys, str(example("peak_small")), "-o", str(tmp_path))
    assert kernel.read_bytes() == pristine and not (folder / "compile.json").exists()
