"""The blackhole-py target: the exported module against a strict stand-in of blackhole-py's dispatch.py
(boopdotpng/blackhole-py @ 37709f0ac0f028ce9ea653e9d2ed34468bf5281b), the blobs the emulator ran,
the planner rules and the exit-2 cases."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgen.core.errors import SpecError
from kgen.gen.pipeline import run
from kgen.gen.spec import load_file, resolve
from kgen.gen.targets import blackhole_py as bh
from kgen.gen.targets import bhpy_export

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "bhpy_standin"
PADDED = ROOT / "examples" / "bhpy_padded.kspec"


def _artifacts(path=PADDED, variant=None):
    return run(resolve(load_file(str(path)), variant), "rendered")


def _import_module(text: str, tmp_path: Path):
    sys.path.insert(0, str(STANDIN))
    try:
        sys.modules.pop("dispatch", None)
        path = tmp_path / bhpy_export.MODULE
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("blackhole_py_program", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(STANDIN))


def test_standin_is_strict():
    sys.path.insert(0, str(STANDIN))
    try:
        import dispatch
    finally:
        sys.path.remove(str(STANDIN))
    with pytest.raises(ValueError):
        dispatch.CBConfig(index=32, dtype=dispatch.Dtype.Float16_b, tiles=2)
    with pytest.raises(TypeError):
        dispatch.CBConfig(index=0, dtype="Float16_b", tiles=2)
    with pytest.raises(TypeError):
        dispatch.Program(cores="all", reader_kernel="", compute_kernel="", writer_kernel="", cbs=[], bogus=1)
    with pytest.raises(TypeError):
        dispatch.Program(cores="all", reader_kernel="", compute_kernel="", writer_kernel="", cbs=[], semaphores="4")
    # dispatch.py's codes at 37709f0
    assert dispatch.Dtype.Float16_b.value == 5 and dispatch.Dtype.Float16.value == 1
    assert [m.name for m in dispatch.MathFidelity] == ["LoFi", "HiFi2"]
    assert {k: v for k, v in bh.facts()["dtype"].items()} == {d.name: d.value for d in dispatch.Dtype}


class _Buffer:
    def __init__(self, addr):
        self.addr = addr


@pytest.mark.parametrize("variant", [None, "reuse", "fp32"])
def test_module_builds_a_program_with_the_recorded_blobs(tmp_path, variant):
    a = _artifacts(variant=variant)
    p = bh.view(a.plan, a.rendered)
    module = _import_module(bhpy_export.module_text(p, a.plan), tmp_path)
    f = bh.facts()["placement"]
    cores = [(x, y) for x in f["worker_columns"] for y in f["worker_rows"]]
    buffers = {"in0": _Buffer(0x1000), "in1": _Buffer(0x2000), "out": _Buffer(0x3000), "bias": _Buffer(0x4000)}
    program = module.build_program(buffers, cores)
    rows, cols = program.grid
    assert len(cols) == p.grid[0] and len(rows) == p.grid[1]
    assert program.dst_accum_mode == (variant == "fp32")
    assert program.math_fidelity.name == "HiFi2" and program.semaphores == p.semaphores
    assert sorted(cb.index for cb in program.cbs) == sorted(i for i, _, _ in p.cbs)
    assert {16, 24} <= {cb.index for cb in program.cbs}
    # each core's args, as the module resolves them, are the words kgen's emulator ran, resolved alike
    phys = {(x, y): (cols[x], rows[y]) for x in range(p.grid[0]) for y in range(p.grid[1])}
    addr = {k: b.addr for k, b in buffers.items()}

    def resolve(w):
        if isinstance(w, int):
            return w
        kind, arg = w
        return addr[arg] if kind == "addr" else cols[arg] if kind == "noc_x" else rows[arg]
    for i, (logical, xy) in enumerate(phys.items()):
        got_w = program.writer_args(i, xy, len(phys))
        got_r = program.reader_args(i, xy, len(phys))
        blob = [resolve(w) for w in bh.rta_words(p, logical)]
        assert blob[:len(got_w) + len(got_r)] == got_w + got_r
        lay = bh.rta_layout(p)
        assert len(got_w) * 4 == lay.writer_bytes       # padded to the longest: the reader's offset holds
        assert [resolve(w) for w in bh.role_args(p, logical, "reader")] == got_r


def test_cb_blob_shares_16_and_24():
    a = _artifacts(variant="fp32")
    p = bh.view(a.plan, a.rendered)
    entries = {e[0]: e for e in bh.cb_entries(p, 0x10000)}
    assert entries[16][1] == entries[24][1]
    blob = bh.cb_blob(p, 0x10000)
    assert len(blob) == 16 * 25
    assert int.from_bytes(blob[16 * 16:16 * 16 + 4], "little") == int.from_bytes(blob[24 * 16:24 * 16 + 4], "little")
    # the Float32 partials (the larger) are listed first, so the shared region is sized for them
    assert [i for i, _, _ in p.cbs][-2:] == [24, 16]


def test_emulator_ran_the_recorded_layout():
    from kgen.proof import bhpy
    a = _artifacts()
    result, p, rec = bhpy.emulate(a, parallel=1)
    assert result.ok and result.exact_match
    assert rec.rta == {c: bh.rta_words(p, c) for c in p.cores}
    assert rec.cbs == bh.cb_entries(p, rec.cbs[0][1])
    lay = bh.rta_layout(p)
    assert rec.sem_addresses[0] == rec.config_base + lay.sem_offset and lay.sem_offset % 16 == 0
    # every core's data-movement kernels ran with their slices of the blob: the writer's from offset 0,
    # the reader's from the longest writer list's end, buffers and NoC coordinates resolved
    phys = bh.physical(p)
    cols, rows = sorted({v[0] for v in phys.values()}), sorted({v[1] for v in phys.values()})

    def resolve(w):
        if isinstance(w, int):
            return w
        kind, arg = w
        return rec.addresses[arg] if kind == "addr" else cols[arg] if kind == "noc_x" else rows[arg]
    for core in p.cores:
        blob = [resolve(w) for w in rec.rta[core]]
        assert rec.run_args[(core, "brisc")] == blob[:lay.writer_bytes // 4]
        assert rec.run_args[(core, "ncrisc")] == blob[lay.writer_bytes // 4:(lay.writer_bytes + lay.reader_bytes) // 4]
    # the cores sit at Blackhole's worker columns, across the non-worker columns 8-9
    assert {x for x, _ in phys.values()} == {1, 2, 3, 4, 5, 6, 7, 10, 11}


def test_adapted_kernels_carry_their_config():
    a = _artifacts()
    p = bh.view(a.plan, a.rendered)
    compute = p.kernels["compute"].source
    assert "#define PACKER_L1_ACC 1" in compute
    # the CB indices blackhole-py shares (16 and 24) in place of kgen's 4 and 5, as values
    assert "cb_out = 16u" in compute and "cb_intermed0 = 24u" in compute
    for k in p.kernels.values():      # no compile-time args: blackhole-py's compiler passes none
        code = "\n".join(line for line in k.source.splitlines() if not line.lstrip().startswith("//"))
        assert "get_compile_time_arg_val" not in code and "TensorAccessorArgs" not in code
    reader = p.kernels["reader"]
    assert reader.processor == "RISCV_1" and reader.noc == 0 and p.kernels["writer"].noc == 1
    assert "bhpy_split_multicast" in reader.source and "get_common_arg_val" not in reader.source


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "kgen", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("spec, words", [
    ("examples/bh_fp32_bias.kspec", "MathFidelity has only LoFi, HiFi2"),
    ("examples/peak_small.kspec", "Blackhole cards only"),
    ("examples/sharded_small.kspec", "Blackhole cards only"),
    ("examples/peak_bf16_sharded.kspec", "interleaved DRAM buffers only"),
])
def test_exit_2_names_why(spec, words, tmp_path):
    r = _cli("build", spec, "--target", "blackhole-py", "-o", str(tmp_path))
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir())


def test_block_float_and_dst_rule(tmp_path):
    from kgen.gen.dataflow import MCAST_1D_IN0
    text = PADDED.read_text()
    one_d = tmp_path / "oned.kspec"
    one_d.write_text(text.replace("dataflow = mcast_2d", f"dataflow = {MCAST_1D_IN0.name}")
                     .replace("per_core = 4 x 1", "per_core = 7 x 1").replace("out_subblock = 2 x 1", "out_subblock = 1 x 1"))
    r = _cli("build", str(one_d), "--target", "blackhole-py", "-o", str(tmp_path / "o"))
    assert r.returncode == 2 and "cannot be expressed" in r.stderr
    bfp = tmp_path / "bfp.kspec"
    bfp.write_text(text.replace("in0 = bfloat16", "in0 = bfloat8_b"))
    r = _cli("build", str(bfp), "--target", "blackhole-py", "-o", str(tmp_path / "o"))
    assert r.returncode == 2 and "no block-float" in r.stderr
    # fp32 Dst with SyncHalf holds 4 tiles per section on Blackhole (blackhole-py's matmul example saw an
    # 8-tile subblock overflow it): kgen's DST rule refuses it; SyncFull (8 tiles) builds
    dst = tmp_path / "dst.kspec"
    dst.write_text("""matmul dst8 {
    arch = blackhole
    shape = 256 x 64 x 128
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid = 2 x 1
    dataflow = mcast_2d
    block { per_core = 8 x 1  in0_block_w = 2  out_subblock = 8 x 1 }
    compute { math_fidelity = HiFi2  fp32_dest_acc = true  packer_l1_acc = true  math_approx = false  dst_full_sync = false }
}
""")
    r = _cli("build", str(dst), "--target", "blackhole-py", "-o", str(tmp_path / "o"), "--no-compile")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "DST holds 4 tiles in SyncHalf with Float32 accumulation" in r.stderr, r.stderr
    dst.write_text(dst.read_text().replace("dst_full_sync = false", "dst_full_sync = true"))
    r = _cli("build", str(dst), "--target", "blackhole-py", "-o", str(tmp_path / "o"), "--no-compile")
    assert r.returncode == 0 and "fp32 Dst with SyncFull: 8 tiles per section, subblock 8 tiles" in r.stdout
    # fp32 Dst with a fused bias: blackhole-py's compiler.py gives CB 24 (Float32 partials) Float32 as its
    # unpack destination too, straight into DST, where the bias stage's SrcA read cannot take them
    bias = tmp_path / "fp32bias.kspec"
    bias.write_text(text.replace("fp32_dest_acc = false", "fp32_dest_acc = true"))
    r = _cli("build", str(bias), "--target", "blackhole-py", "-o", str(tmp_path / "o"), "--no-compile")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "cannot read the Float32 partials" in " ".join(r.stderr.split()), r.stderr


def test_float16_partials_rule():
    import dataclasses
    peak = run(resolve(load_file(str(ROOT / "examples" / "bhpy_peak.kspec")), None), "plan").plan
    assert peak.l1_acc_enabled and peak.in1_num_subblocks >= 2
    # IEEE Float16 partials, packer L1 accumulation, 2+ in1 subblocks: blackhole-py's NaN hazard
    with pytest.raises(SpecError, match="data-dependent NaNs"):
        bh.hazard_notes(dataclasses.replace(peak, partials_format="Float16"))
    # one in1 subblock does not trigger it (blackhole-py's docs: only with two or more)
    padded = _artifacts().plan
    assert padded.in1_num_subblocks == 1
    bh.hazard_notes(dataclasses.replace(padded, partials_format="Float16"))
    # kgen's own plans keep them Float16_b, and the build says so
    assert peak.partials_format == "Float16_b"
    assert any("Float16_b" in n and "hardware bug" in n for n in bh.hazard_notes(peak))


def test_typecheck_with_blackhole_py_profile(tmp_path):
    """Without $BLACKHOLE_PY the check is against the 0.81.1 headers, and says that it is not
    blackhole-py's tree (tests/proof/test_bhpy.py checks the other way)."""
    env = {k: v for k, v in os.environ.items() if k != bh.CHECKOUT_ENV}
    r = subprocess.run([sys.executable, "-m", "kgen", "build", str(PADDED), "--target", "blackhole-py", "-o",
                        str(tmp_path), "-j", "1"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    said = " ".join(r.stdout.split())
    assert ("check ok: type-checked 7 kernel builds against TT-Metal 0.81.1's headers, not blackhole-py's own "
            "tree ($BLACKHOLE_PY is not set") in said, r.stdout
    from kgen.proof.bhpy_typecheck import bhpy_defines, profile_defines
    assert "NOC_INDEX=1" in profile_defines("brisc") and "NOC_INDEX=0" in profile_defines("ncrisc")
    assert not any(d.startswith("KERNEL_COMPILE_TIME_ARGS") for d in profile_defines("math"))
    # compiler.py's _device_defines for a P150 (kgen's Blackhole: 8 DRAM banks, 140 L1 banks)
    assert {"NUM_DRAM_BANKS=8", "NUM_L1_BANKS=140", "PREFETCH_NOC_X=16", "DISPATCH_NOC_Y=3",
            "LOG_BASE_2_OF_NUM_DRAM_BANKS=3"} <= set(bhpy_defines("trisc1"))
    assert "PROGRAMMABLE_CORE_TYPE=0" in profile_defines("math") and "PROGRAMMABLE_CORE_TYPE=0" not in bhpy_defines("trisc1")


def test_ab_stages_of_the_port_plan():
    from kgen.perf.bhpy_ab import stages
    from kgen.proof.targets import get
    rows = stages(load_file(str(PADDED)), PADDED.read_text(), get("blackhole-py"))
    assert [r.name for r in rows] == ["matmul_tiles for matmul_block", "matmul_block, spill/reload",
                                      "full L1-acc lifecycle"]
    assert rows[0].why_not and "matmul_block only" in rows[0].why_not
    spill, l1acc = rows[1], rows[2]
    # spill/reload reloads the partials every K-block after the first; L1 accumulation never does here
    # (with a bias the last block packs with L1 acc too, as TT-Metal's bias path does)
    assert spill.reloads > 0 and spill.l1_acc_switches == 0
    assert l1acc.reloads == 0 and l1acc.l1_acc_switches > 0
    assert l1acc.reload_cycles == 0 and spill.reload_cycles > 0


def test_module_main_runs_against_the_fakes(tmp_path, monkeypatch, capsys):
    a = _artifacts()
    p = bh.view(a.plan, a.rendered)
    module = _import_module(bhpy_export.module_text(p, a.plan), tmp_path)
    monkeypatch.syspath_prepend(str(STANDIN))
    sys.modules.pop("device", None)
    import device
    monkeypatch.setattr(sys, "argv", ["blackhole_py_program.py", "--iters", "3"])
    module.main()
    out = capsys.readouterr().out
    assert "PCC=" in out and "rel_l2=" in out and "host wall-clock of 3 queued runs" in out
    # blackhole-py's device.queue only queues: one untimed run, the timed runs, then one read-back
    assert device.Device.calls == ["open", "queue", "run 1", "queue", "queue", "queue", "run 3", "dram_read", "close"]
    x = module.inputs(0)
    assert x["in0"].shape == (224, 256) and not x["in0"][200:].any() and not x["in0"][:, 250:].any()
    assert x["bias"].shape == (32, 288) and not x["bias"][1:].any()


def test_module_finds_the_checkout(tmp_path, monkeypatch):
    """blackhole-py's modules are top-level files of its checkout: the module imports them from
    $BLACKHOLE_PY, else from the current folder when it holds dispatch.py, else not at all."""
    a = _artifacts()
    p = bh.view(a.plan, a.rendered)
    path = tmp_path / "build" / bhpy_export.MODULE
    path.parent.mkdir()
    path.write_text(bhpy_export.module_text(p, a.plan))
    code = "import runpy, sys; sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0]); import dispatch; print(dispatch.__file__)"
    probe = ["-c", code, str(path)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", bh.CHECKOUT_ENV)}
    # -P: no current folder on sys.path from -c itself, only what the module puts there
    r = subprocess.run([sys.executable, "-P", *probe], capture_output=True, text=True, cwd=STANDIN, env=env)
    assert r.returncode == 0 and r.stdout.strip() == str(STANDIN / "dispatch.py"), r.stderr
    r = subprocess.run([sys.executable, "-P", *probe], capture_output=True, text=True, cwd=tmp_path,
                       env={**env, bh.CHECKOUT_ENV: str(STANDIN)})
    assert r.returncode == 0 and r.stdout.strip() == str(STANDIN / "dispatch.py"), r.stderr
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 1 and "not a blackhole-py checkout" in r.stderr and "Traceback" not in r.stderr
