"""`kgen perf` and the predicted line of `kgen check`, through the CLI."""

from __future__ import annotations

import json

from conftest import example
from kgen.cli import main


def test_perf_prints_time_tflops_utilization_bottleneck_processors_and_policy(capsys):
    assert main(["perf", str(example("peak_small"))]) == 0
    out = capsys.readouterr().out
    for what in ("device time", "TFLOPS", "utilization", "bottleneck", "critical core", "TRISC0 unpack",
                 "TRISC1 math", "TRISC2 pack", "BRISC", "NCRISC", "policy packer_l1_acc",
                 "same blocking with spill_reload"):
        assert what in out, what


def test_perf_json_and_variants(capsys):
    assert main(["perf", str(example("peak_small")), "--variant", "spill", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["policy"] == "spill_reload" and data["policy_comparison"]["other_policy"] == "packer_l1_acc"
    assert data["cycles"] > data["ideal_cycles"] > 0 and 0 < data["utilization"] < 1
    assert {p["processor"] for p in data["processors"]} == {"TRISC0 unpack", "TRISC1 math", "TRISC2 pack",
                                                            "BRISC", "NCRISC"}


def test_check_shows_the_predicted_time_in_one_line(capsys):
    assert main(["check", str(example("peak_small"))]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("predicted")]
    assert len(lines) == 1 and "us device" in lines[0] and "TFLOPS" in lines[0]
    assert main(["check", str(example("peak_small")), "--json"]) == 0
    assert "TFLOPS" in json.loads(capsys.readouterr().out)["predicted"]


def test_perf_bad_input_is_a_clean_error(tmp_path, capsys):
    assert main(["perf", str(tmp_path / "missing.kspec")]) == 2
    assert main(["perf", str(example("peak_small")), "--variant", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "no variant named `nope`" in err and "Traceback" not in err
