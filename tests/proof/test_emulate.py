"""The host emulator: the rendered kernels run on every core and must reproduce the golden model's
bits (an independent NumPy implementation); the diagnoses fire on deliberately broken kernels,
each at the kernel source line of the bug; TT-Metal's own compute kernel runs in kgen's place."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, example

from kgen import cli
from kgen.gen.build import build
from kgen.gen.plan import plan
from kgen.gen.spec import load_file, resolve

# Examples small enough for exact emulation in the test run (MACs <= ~300 M). The larger ones
# (peak_bf16, wh_bfp8_spill, bh_fp32_bias, wh_fp32_hifi4: 2-69 G MACs) run in fast mode here and
# in exact mode by hand (benchmarks/emulate_examples.py).
EXACT_EXAMPLES = ["peak_small", "l1acc_one_block", "l1acc_two_blocks", "l1acc_two_blocks_bias", "untilize_relu_reuse",
                  "padded_small", "transpose_mcast_small", "sharded_small", "bhpy_padded"]
# non_tile_1000 (1 G MACs) and bh_4096_full_grid (69 G MACs) are padded (issue #17); wh_mlp_11008
# (92 G MACs, about 2 minutes in fast mode) runs by hand.
LARGE_EXAMPLES = ["wh_fp32_hifi4", "bh_fp32_bias", "wh_bfp8_spill", "peak_bf16", "non_tile_1000", "bh_4096_full_grid",
                  "peak_bf16_sharded"]


def _documented_fast_emulations() -> set[str]:
    """The examples whose `kgen emulate examples/<name>.kspec --numerics fast` README.md or docs/ show as it
    is: tests/e2e/test_readme.py runs that command (exit 0 is no hazard, the fast golden model matched and
    the float64 bound held; it checks the pcc there), so it is not emulated here a second time."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    command = re.compile(r"^kgen emulate examples/(\w+)\.kspec --numerics fast *(?:#.*)?$", re.M)
    return {name for page in pages for name in command.findall(page.read_text())}


LARGE_UNDOCUMENTED = [name for name in LARGE_EXAMPLES if name not in _documented_fast_emulations()]


def _variants(name: str) -> list[str | None]:
    return [None, *load_file(example(name)).variants]


def _built(name: str, variant: str | None, root: Path):
    spec = resolve(load_file(example(name)), variant)
    p = plan(spec)
    return p, build(spec, root).path


def _emulate(folder, p, **kw):
    from kgen.proof.emulate import emulate_folder

    return emulate_folder(folder, p, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("name,variant", [(n, v) for n in EXACT_EXAMPLES for v in _variants(n)])
def test_examples_emulate_bit_exact(host_cxx, tmp_path, name, variant):
    p, folder = _built(name, variant, tmp_path)
    e = _emulate(folder, p, seed=3)
    assert e.status == "ok", e.deadlock
    assert not e.hazards, e.hazards
    assert e.exact_match, f"{name}/{variant}: {e.mismatched} elements differ from the golden model"
    # the golden model is itself close to float64 (a sanity bound, not the check)
    assert e.errors.pcc > 0.999
    # every core ran every processor of its kernels to the end
    assert all(proc["finished"] for proc in e.processors)
    assert len({tuple(proc["core"]) for proc in e.processors}) == p.num_cores


def test_both_policies_are_exercised():
    policies = {plan(resolve(load_file(example(n)), v)).policy for n in EXACT_EXAMPLES for v in _variants(n)}
    assert {"packer_l1_acc", "spill_reload"} <= policies


def test_the_documented_fast_emulation_is_a_large_example():
    # the parse found the docs' command, and the example it takes out of the list below is one of them
    assert _documented_fast_emulations() & set(LARGE_EXAMPLES) == {"peak_bf16"}


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE_UNDOCUMENTED)
def test_large_examples_emulate_fast(host_cxx, tmp_path, name):
    p, folder = _built(name, None, tmp_path)
    e = _emulate(folder, p, seed=1, numerics="fast")
    assert e.status == "ok" and not e.hazards
    assert e.golden_close, "fast emulation is beyond the fast-mode tolerance of the fast golden model"
    assert e.errors.pcc > 0.99


# The model prices TT 0.81.1's Float32 reload straight into DST as serial with the matmul (8cb891a); the
# emulator reloads into DST bit for bit (41df3a0) but still times it as a pipelined SrcA copy, so on a
# Float32 spill it comes out about 11 % faster than the model. Open: the emulator's timing of that reload.
_FP32_RELOAD_TIMING = pytest.mark.xfail(strict=True, reason="the emulator does not yet time the serial "
                                        "Float32 reload into DST that kgen perf prices")


@pytest.mark.parametrize("name", ["l1acc_one_block", "l1acc_two_blocks_bias", "peak_small", "untilize_relu_reuse",
                                  pytest.param("wh_fp32_hifi4", marks=_FP32_RELOAD_TIMING), "padded_small",
                                  "transpose_mcast_small", "sharded_small"])
def test_the_emulators_modelled_time_agrees_with_kgen_perf(host_cxx, tmp_path, name):
    # Issue #14: both price every op from the same cost tables; the emulator's event-level timeline
    # and the model's per-block pipeline must agree within 5 % (benchmarks/perf_vs_emulator.py).
    from kgen.gen.pipeline import run
    from kgen.perf.model import predict

    p, folder = _built(name, None, tmp_path)
    e = _emulate(folder, p, seed=0, numerics="fast")
    predicted = predict(run(resolve(load_file(example(name))), "verified").verified).cycles
    assert e.cycles == pytest.approx(predicted, rel=0.05)


def test_cli_json_summary_and_trace(host_cxx, tmp_path, capsys):
    trace = tmp_path / "run.json"
    code = cli.main(["emulate", str(example("peak_small")), "--variant", "spill", "--seed", "7",
                     "--trace", str(trace), "--json", "--schedules", "2"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["exact_match"] is True and out["schedules_identical"] is True and out["schedules"] == 2
    for key in ("max_abs_err", "max_rel_err", "pcc", "seconds"):
        assert isinstance(out[key], float)
    # per core and per processor: op counts and stall counts
    procs = out["processors"]
    assert len(procs) == 4 * 5
    assert all("stalls" in p and p["ops"] for p in procs)
    events = json.loads(trace.read_text())["traceEvents"]
    tracks = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "X"}
    assert len(tracks) == 20                                    # one track per core x processor
    names = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert any(n.startswith("trisc1/math") for n in names)


def test_cli_text_report(host_cxx, capsys):
    code = cli.main(["emulate", str(example("l1acc_one_block"))])
    text = capsys.readouterr().out
    assert code == 0
    assert "bit-exact" in text and "pcc" in text and "stalls" in text


@pytest.mark.slow
def test_random_schedules_give_identical_bits(host_cxx, tmp_path):
    p, folder = _built("untilize_relu_reuse", None, tmp_path)
    e = _emulate(folder, p, seed=2, schedules=3)
    assert e.schedules == 3 and e.schedules_identical and e.exact_match


# ---- port check ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,variant", [("peak_small", None), ("peak_small", "spill"), ("peak_small", "fp32"),
                                          ("l1acc_two_blocks_bias", None), ("untilize_relu_reuse", None),
                                          ("l1acc_one_block", None),
                                          # padded last blocks and a shape short of whole tiles (issue #17)
                                          ("padded_small", "bias"), ("padded_small", "bfp8"),
                                          ("padded_small", "reuse"),
                                          # transpose_mcast and L1 sharding (issue #17)
                                          ("transpose_mcast_small", "padded"), ("sharded_small", None),
                                          ("sharded_small", "transposed"), ("sharded_small", "height"),
                                          ("sharded_small", "in1_l1")])
@pytest.mark.slow
def test_port_check_matches_tt_metal_kernel(host_cxx, host_toolchain, tmp_path, name, variant):
    from kgen.proof.portcheck import port_check

    p, folder = _built(name, variant, tmp_path)
    pc = port_check(folder, p, seed=5)
    assert pc.theirs.status == "ok" and not pc.theirs.hazards, pc.theirs.hazards
    assert pc.bit_identical
    assert pc.theirs.exact_match
    assert not pc.unexplained, pc.differences()
    # TT-Metal's whole program, its readers/writers too, on every mcast_2d plan and on the reuse plans
    # its reuse factory's kernels can run; those have no padding path and write tiles
    # (reader_bmm_tile_layout.cpp, writer_bmm_tile_layout.cpp)
    not_run = {("untilize_relu_reuse", None): "ROW_MAJOR", ("padded_small", "reuse"): "padded blocks"}
    if (name, variant) not in not_run:
        assert pc.program is not None and not pc.program.hazards, pc.program_note
        assert pc.program_bit_identical and pc.program.exact_match
        assert not pc.unexplained_dataflow, pc.dataflow_differences()
    else:
        assert pc.program is None and not_run[name, variant] in pc.program_note


@pytest.mark.slow
def test_port_check_cli_json(host_cxx, host_toolchain, capsys):
    code = cli.main(["port-check", str(example("peak_small")), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["bit_identical"] is True
    assert out["program"]["ran"] is True and out["program"]["bit_identical"] is True
    assert out["kgen"]["op_counts"]["matmul_block"] == out["tt_metal"]["op_counts"]["matmul_block"] > 0


def test_port_check_bad_reference_is_exit_2(tmp_path, capsys):
    code = cli.main(["port-check", str(example("peak_small")), "--reference", str(tmp_path / "nope.cpp")])
    assert code == 2
    assert "no such kernel source" in capsys.readouterr().err


# ---- diagnoses on deliberately broken kernels -----------------------------------------------

def _broken(tmp_path, kernel: str, old: str, new: str, *, example_name="peak_small", variant=None, count=1):
    """A copy of a build folder with one kernel edited; returns (plan, folder, line of the edit)."""
    p, folder = _built(example_name, variant, tmp_path / "good")
    bad = tmp_path / "bad" / folder.name
    shutil.copytree(folder, bad)
    src = bad / "kernels" / kernel
    text = src.read_text()
    assert old in text, f"{old!r} not in {kernel}"
    line = text[:text.index(old)].count("\n") + 1
    src.write_text(text.replace(old, new, count))
    return p, bad, line


def _hazard(e, kind):
    found = [h for h in e.hazards if h["kind"] == kind]
    assert found, f"no {kind!r} hazard in {e.hazards}"
    return found[0]


def test_deadlock_report_names_waits_and_last_ops(host_cxx, tmp_path):
    p, folder, _ = _broken(tmp_path, "in0_sender.cpp", "cb_push_back(cb_in0, 16);", "")
    e = _emulate(folder, p)
    assert e.status == "deadlock" and not e.ok
    report = e.deadlock
    assert "cb_wait_front(c_0, 16): 0 page(s) pushed" in report          # what compute waits on
    assert "kernels/compute.cpp:" in report and "trisc0/unpack" in report
    assert "cb_reserve_back(c_1, 16): 0 of 32 page(s) free" in report    # and the writer, on its CB
    assert "last ops:" in report


def test_semaphore_deadlock_names_semaphore_and_value(host_cxx, tmp_path):
    p, folder, line = _broken(tmp_path, "in0_receiver.cpp",
                              "noc_semaphore_inc(get_noc_addr(in0_sender_noc_x", "if (0) noc_semaphore_inc(get_noc_addr(in0_sender_noc_x")
    e = _emulate(folder, p)
    assert e.status == "deadlock"
    assert "noc_semaphore_wait(semaphore 0, 1): value is 0" in e.deadlock
    assert f"kernels/in0_receiver.cpp:{line + 1}" in e.deadlock          # the receiver waits on its flag next


def test_out_partials_sharing_trap(host_cxx, tmp_path):
    # The last block reloads the partials and must pop them before packing the output into the
    # same pages; without the pop, the pack writes over pages c_5 still holds.
    p, folder, _ = _broken(tmp_path, "compute.cpp",
                           "cb_pop_front(cb_intermed0, out_subblock_num_tiles);\n                            reconfig_data_format_srca",
                           "reconfig_data_format_srca")
    e = _emulate(folder, p)
    # The pack into out overwrites partials pages that c_5 still holds; the first subblock's were
    # already reloaded, so the hazard is the second reload reading them back (now out's data), or
    # the pack into the second subblock's pages before their reload.
    text = (folder / "kernels" / "compute.cpp").read_text().splitlines()
    kinds = {h["kind"]: h for h in e.hazards}
    assert kinds.keys() & {"write into unconsumed pages", "read of overwritten pages"}, e.hazards
    h = kinds.get("write into unconsumed pages") or kinds["read of overwritten pages"]
    assert h["file"].endswith("kernels/compute.cpp")
    assert "pack_block(0, cb_out" in text[h["line"] - 1] or "copy_block(cb_intermed0" in text[h["line"] - 1]


def test_read_of_pages_never_pushed(host_cxx, tmp_path):
    p, folder, _ = _broken(tmp_path, "in1_sender_writer.cpp", "cb_wait_front(cb_out, 8);", "")
    e = _emulate(folder, p)
    h = _hazard(e, "read of pages never pushed")
    assert h["file"] == "kernels/in1_sender_writer.cpp"
    text = (folder / "kernels" / "in1_sender_writer.cpp").read_text().splitlines()
    assert "noc_async_write_page" in text[h["line"] - 1]
    pop = _hazard(e, "pop beyond waited")
    assert "cb_pop_front(cb_out, 8)" in text[pop["line"] - 1]


def test_pop_beyond_waited(host_cxx, tmp_path):
    p, folder, line = _broken(tmp_path, "compute.cpp", "cb_wait_front(cb_in0, in0_block_num_tiles);",
                              "cb_wait_front(cb_in0, 8);")
    e = _emulate(folder, p)
    h = _hazard(e, "pop beyond waited")
    assert "cb_pop_front(c_0, 16)" in h["message"] and "only 8 page(s) were waited" in h["message"]
    assert h["file"] == "kernels/compute.cpp"
    assert _hazard(e, "read beyond waited")["line"] > line


def test_reserve_beyond_capacity(host_cxx, tmp_path):
    p, folder, line = _broken(tmp_path, "in0_sender.cpp", "cb_reserve_back(cb_in0, 16);", "cb_reserve_back(cb_in0, 64);")
    e = _emulate(folder, p)
    h = _hazard(e, "reserve beyond capacity")
    assert (h["file"], h["line"]) == ("kernels/in0_sender.cpp", line)
    assert "has only 32 pages" in h["message"]
    assert not e.ok


def test_l1_accumulation_left_on(host_cxx, tmp_path):
    p, folder, _ = _broken(tmp_path, "compute.cpp", "pack_reconfig_l1_acc(0);  // final pack to out overwrites", "")
    e = _emulate(folder, p)
    h = _hazard(e, "L1 accumulation left on")
    assert "pack_reconfig_l1_acc(0)" in h["message"] and "compute" in h["message"]
    assert not e.exact_match                 # the output accumulated into stale L1, as hardware would


def test_dst_beyond_capacity(host_cxx, tmp_path):
    p, folder, line = _broken(tmp_path, "compute.cpp", "in1_block_w * k, 0, false", "in1_block_w * k, 4, false", count=99)
    e = _emulate(folder, p)
    h = _hazard(e, "DST beyond capacity")
    assert h["file"] == "kernels/compute.cpp" and h["line"] == line
    assert "holds 8 tile(s)" in h["message"]


def test_format_mismatch_is_reported(host_cxx, tmp_path):
    # Packing the final output without switching the packer from the partials' format.
    p, folder, _ = _broken(tmp_path, "compute.cpp", "pack_reconfig_data_format(cb_out);", "",
                              variant="fp32")
    e = _emulate(folder, p)
    h = _hazard(e, "format mismatch")
    assert "configured for Float32" in h["message"] and "Float16_b pages" in h["message"]


# ---- stress: random valid specs through build -> type-check -> emulate ----------------------

@pytest.mark.slow
@pytest.mark.parametrize("start", [0, 50, 100, 150])
def test_fuzz_200_cases_seed_1(start, host_cxx, host_toolchain, tmp_path, capsys):
    """The acceptance run, `kgen fuzz --count 200 --seed 1` (every case bit-exact, no hazard), as four
    runs of 50 cases that test workers can share (`--start` draws the same cases)."""
    code = cli.main(["fuzz", "--count", "50", "--start", str(start), "--seed", "1", "--keep", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "50 case(s) of seed 1 passed" in out and "50 type-checked" in out


def test_fuzz_failure_names_the_case_and_repro(host_cxx, tmp_path, capsys, monkeypatch):
    from kgen.proof import emulate

    real = emulate.emulate_folder

    def broken(folder, p, **kw):      # a kgen bug stand-in: the emulated output is wrong for case 2
        e = real(folder, p, **kw)
        if kw.get("seed") == 2:
            from dataclasses import replace
            return replace(e, exact_match=False, mismatched=7)
        return e

    monkeypatch.setattr(emulate, "emulate_folder", broken)
    code = cli.main(["fuzz", "--count", "4", "--seed", "1", "--no-typecheck", "--keep", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL case 2 (fuzz_s1_00002) at emulate" in out
    assert "repro: kgen fuzz --seed 1 --start 2 --count 1" in out
    assert (tmp_path / "fuzz_s1_00002.kspec").is_file()


def test_the_emulator_takes_every_cost_from_the_performance_models_tables():
    # One table per fact: 16 cycles per tile product and fidelity phase (MatrixUnit.md), and every
    # other per-call cost, is read from configs/perf by both the emulator and kgen perf
    from kgen.core.arch import load_arch
    from kgen.core.costs import load_costs
    from kgen.core.types import MATH_FIDELITY_VALUE
    from kgen.proof.emulate import modelled_cycles

    for arch in ("wormhole_b0", "blackhole"):
        cycles, costs = modelled_cycles(load_arch(arch)), load_costs(arch)
        assert costs.math.cycles_per_tile_phase == 16
        for fidelity, value in MATH_FIDELITY_VALUE.items():
            for fp32 in (False, True):
                assert cycles[f"matmul_tile{'_fp32' if fp32 else ''}.{value}"] == costs.matmul_tile_cycles(fidelity, fp32)
        # a LoFi tile is one 16-cycle phase plus its overhead
        assert costs.matmul_tile_cycles("LoFi", False) == 16 + costs.math.overhead_per_tile
        assert cycles["datacopy_tile"] == costs.math.datacopy_cycles_per_tile
        assert cycles["eltwise_tile"] == costs.math.eltwise_cycles_per_tile
        for fmt in ("Float16_b", "Float32", "Bfp8_b", "Bfp4_b"):
            assert cycles[f"unpack_tile.{fmt}"] == costs.unpack_tile(fmt)
            assert cycles[f"pack_tile.{fmt}"] == costs.pack_tile(fmt, False)
            assert cycles[f"pack_tile_l1acc.{fmt}"] == costs.pack_tile(fmt, True)
        assert cycles["dram_read_latency"] == costs.dram.read_latency
        columns, rows = load_arch(arch).worker_grid
        for destinations in range(1, columns * rows + 1):
            assert cycles[f"mcast_issue.{destinations}"] == costs.multicast_issue(destinations)
            assert cycles[f"mcast_landing.{destinations}"] == costs.multicast_landing(destinations)
        assert "emulator" not in str(cycles) and not {"noc_op", "noc_bytes_per_cycle", "unpack_tile"} & set(cycles)


# ----------------------------------------------------------------------------------------------
# Shapes that are not tile multiples (issue #17): padded to tiles as ttnn tilizes (zeros), the output
# sliced back.

ODD_K = """matmul odd_k {{
    arch = wormhole_b0  shape = 64 x 96 x {k}  grid = 2 x 1  dataflow = mcast_2d
    dtype {{ in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }}
    block {{ in0_block_w = 2  per_core = 2 x 2  out_subblock = auto }}
    compute {{ packer_l1_acc = true  fp32_dest_acc = false }}
}}
"""


def _odd_built(tmp_path, k: int):
    path = tmp_path / f"odd_k_{k}.kspec"
    path.write_text(ODD_K.format(k=k))
    spec = resolve(load_file(path), None)
    return plan(spec), build(spec, tmp_path / f"build_{k}").path


def test_padded_k_never_changes_the_result(host_cxx, tmp_path):
    """K = 100 pads to 128 with zeros; the same matmul with K = 128 whose last 28 K columns/rows are zero
    gives the same bits, kernel for kernel: the padding adds exact zeros."""
    from kgen.proof.emulate import load_manifest, make_inputs

    p_odd, odd = _odd_built(tmp_path, 100)
    p_full, full = _odd_built(tmp_path, 128)
    assert (p_odd.kt, p_odd.tile_padding) == (4, {"K": (100, 128)}) and p_full.kt == 4
    inputs = make_inputs(load_manifest(odd)[1], seed=5)
    assert not inputs.in0[:, 100:].any() and not inputs.in1[100:, :].any()       # zeros, as tilize pads
    assert inputs.in0[:, :100].any() and inputs.in1[:100, :].any()
    a = _emulate(odd, p_odd, inputs=inputs)
    b = _emulate(full, p_full, inputs=inputs)
    assert a.status == b.status == "ok" and a.exact_match and b.exact_match
    assert a.out_bytes == b.out_bytes


def test_the_error_against_float64_ignores_the_padding():
    """Only the logical output is compared with float64: the padded rows and columns are no output."""
    import numpy as np

    from kgen.proof.emulate import Inputs, error_stats

    rng = np.random.default_rng(0)
    a, b = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    a[:40, :50] = rng.standard_normal((40, 50))
    b[:50, :33] = rng.standard_normal((50, 33))
    inputs = Inputs(a, b, None, (1, 40, 33))
    out = (a.astype(np.float64) @ b).astype(np.float32)
    out[40:, :] = np.nan                    # whatever lies in the padding does not count
    out[:, 33:] = 1e30
    e = error_stats(out, inputs, "none")
    assert e.max_abs_err < 1e-5 and e.pcc > 0.999999      # float32 rounding of the output only
    assert inputs.logical_output(out).shape == (40, 33)


def test_shards_are_placed_as_ttnn_places_them():
    """ttnn's ShardSpec: the tensor's shards in row-major order over its grid of shards go to the shard
    grid's cores in ROW_MAJOR (x fastest) or COL_MAJOR (y fastest) order."""
    from kgen.proof.emulate import shard_placement

    # 4 x 8 tiles in 2 x 2-tile shards: 2 x 4 shards on a 4 x 2 grid (row major) or a 2 x 4 grid (col major)
    row = shard_placement({"grid": (0, 0, 3, 1), "shape": (64, 64), "orientation": "ROW_MAJOR"}, 4, 8)
    assert row[0] == ((0, 0), 0, 0, 2, 2) and row[3] == ((3, 0), 0, 6, 2, 2) and row[4] == ((0, 1), 2, 0, 2, 2)
    col = shard_placement({"grid": (0, 0, 1, 3), "shape": (64, 64), "orientation": "COL_MAJOR"}, 4, 8)
    assert col[1] == ((0, 1), 0, 2, 2, 2) and col[4] == ((1, 0), 2, 0, 2, 2)


def test_a_sharded_in0_and_output_live_in_l1_only(host_cxx, tmp_path):
    """The emulator gets each core's in0 shard in its L1 at the shard CB's address and no DRAM copy of
    in0, and reads the output back from the cores' shards: no DRAM output."""
    import json

    from kgen.proof.emulate import build_program, kernel_builds, make_inputs, require_host_compiler

    p, folder = _built("sharded_small", None, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    work = tmp_path / "work"
    work.mkdir()
    prog = build_program(manifest, p.arch, kernel_builds(folder, p.arch, require_host_compiler()), numerics="exact",
                         workdir=work, inputs=make_inputs(manifest, 0), plan=p)
    lines = prog.text.splitlines()
    assert [ln for ln in lines if ln.startswith("input ")] and not any("in0.bin" in ln for ln in lines)
    assert not any(ln.startswith("output ") for ln in lines)
    shards_in = [ln for ln in lines if ln.startswith("l1_input ")]
    shards_out = [ln for ln in lines if ln.startswith("l1_output ")]
    # 8 cores, each with a 4 x 4-tile in0 shard and a 4 x 2-tile output shard of bf16 tiles
    assert len(shards_in) == len(shards_out) == 8
    assert {int(ln.split()[3]) for ln in shards_in} == {4 * 4 * 2048}
    assert {int(ln.split()[3]) for ln in shards_out} == {4 * 2 * 2048}
    e = _emulate(folder, p, seed=2)
    assert e.status == "ok" and e.exact_match and not e.hazards
