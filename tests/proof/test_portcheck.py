"""Issue #12 §3: a port check passes only when every program finishes bit-exact against the golden
model, without a hazard, and TT-Metal's output is kgen's bit for bit. Otherwise exit 1, naming the
condition that failed."""

from __future__ import annotations

import json

import pytest

from conftest import example, words
from kgen.cli import main


def broken_reference(tmp_path, host_toolchain):
    """TT-Metal's compute kernel with one seeded bug: every subblock column reads in1's first
    columns (its in1 subblock offset never advances), so any plan with more than one subblock
    column computes the wrong product."""
    src = host_toolchain.headers.reference_kernel
    text = src.read_text()
    seeded = text.replace("in1_index_subblock_offset += out_subblock_w;", "in1_index_subblock_offset += 0;", 1)
    assert seeded != text
    path = tmp_path / src.name
    path.write_text(seeded)
    return path


@pytest.mark.slow
def test_port_check_passes_on_a_correct_port(host_cxx, host_toolchain, capsys):
    rc = main(["port-check", str(example("peak_small")), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["passed"] is True and data["failures"] == [], data["failures"]
    assert data["kgen"]["exact_match"] and data["tt_metal"]["exact_match"] and not data["kgen"]["hazards"]


@pytest.mark.slow
def test_port_check_fails_when_tt_metals_kernel_is_wrong(host_cxx, host_toolchain, tmp_path, capsys):
    ref = broken_reference(tmp_path, host_toolchain)
    rc = main(["port-check", str(example("peak_small")), "--reference", str(ref)])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "verdict    FAIL" in out
    assert "TT-Metal's compute kernel is not the golden model's result" in out
    assert "TT-Metal's compute kernel does not give kgen's bits" in out


@pytest.mark.slow
def test_port_check_fails_when_both_programs_are_wrong_alike(host_cxx, host_toolchain, tmp_path, capsys, monkeypatch):
    """Two wrong programs with the same bits are not a pass (the old verdict said 'bit-identical'
    and exited 0). kgen's own kernel is made wrong the same way as the reference: the port check
    compares the emulations, so a golden model that disagrees with both must fail it."""
    import kgen.proof.portcheck

    real = kgen.proof.portcheck.emulate_folder

    def wrong_golden(*args, **kwargs):
        e = real(*args, **kwargs)
        from dataclasses import replace
        return replace(e, exact_match=False, mismatched=7)
    monkeypatch.setattr(kgen.proof.portcheck, "emulate_folder", wrong_golden)
    rc = main(["port-check", str(example("l1acc_one_block")), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["bit_identical"] is True and data["passed"] is False
    assert any("kgen's program is not the golden model's result" in f for f in data["failures"]), data["failures"]


@pytest.mark.slow
def test_port_check_says_when_tt_metals_kernel_runs_as_ttnn_matmul_would_not_run_it(
        host_cxx, host_toolchain, tmp_path, capsys):
    """dst_full_sync: TT-Metal 0.81.1's 1D builders set double_buffer_dest after to_compute_hardware_config,
    so the 1D factory compiles SyncHalf whatever is asked (docs/reference/matmul.md §3.3); its kernel under
    SyncFull is a configuration ttnn.matmul never builds. The check still runs it and passes on matching
    bits, but says so, as `kgen check` warns. The 2D factory compiles SyncFull when asked: with a subblock
    within the half-sync DST nothing departs."""
    def full_sync(name):
        text = example(name).read_text()
        preset = "compute = peak_hifi2"
        assert preset in text
        spec = tmp_path / f"{name}_full_sync.kspec"
        spec.write_text(text.replace(preset, preset + "\n    compute { dst_full_sync = true }", 1))
        return spec

    spec = full_sync("mcast_1d_in0_small")
    rc = main(["port-check", str(spec)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert ("departs TT-Metal's kernel ran as ttnn.matmul 0.81.1 would not run it: dst_full_sync = true: "
            "TT-Metal's 1D multicast factory compiles SyncHalf") in words(out)
    rc = main(["port-check", str(spec), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(data["factory_departures"]) == 1 and "SyncHalf" in data["factory_departures"][0]
    main(["check", str(spec)])
    assert words(data["factory_departures"][0]) in words(capsys.readouterr().out)      # the same words as `check`
    rc = main(["port-check", str(full_sync("peak_small")), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["factory_departures"] == [], data["factory_departures"]
    rc = main(["port-check", str(example("mcast_1d_in0_small")), "--json"])
    assert json.loads(capsys.readouterr().out)["factory_departures"] == []


def test_fast_numerics_verdict_does_not_claim_bit_exact(host_cxx, host_toolchain, capsys):
    """With --numerics fast the golden comparison is a tolerance, not bit-exactness: the verdict says
    so (only TT-Metal's output against kgen's is still compared bit for bit)."""
    rc = main(["port-check", str(example("l1acc_one_block")), "--numerics", "fast", "-j", "1"])
    out = capsys.readouterr().out
    verdict = words(out[out.index("  verdict "):])          # the verdict ends the report, wrapped or not
    assert rc == 0 and "PASS" in verdict, verdict
    assert "bit-exact against the golden model" not in verdict and "not a bit-exact check" in verdict, verdict
