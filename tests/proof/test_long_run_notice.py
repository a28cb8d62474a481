"""`kgen port-check` and `kgen emulate` say up front, on stderr, when a run will take a while
(issue 42, item 9): the estimate comes from the plan's size, not from an example's name."""

from __future__ import annotations

from dataclasses import replace

from conftest import example

import kgen.proof.chain
from kgen.cli import main
from kgen.core.errors import SpecError
from kgen.gen.plan import plan
from kgen.gen.spec import load
from kgen.proof.emulate import LONG_RUN_SECONDS, duration_notice, expected_seconds


def test_the_11008_decode_port_check_says_minutes_and_a_small_one_says_nothing(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    big = plan(load(example("wh_decode_dram_sharded_11008")))
    notice = duration_notice(big, "kgen port-check", programs=3)
    # measured: 36 s of CPU time on 2 cores (kgen/proof/emulate.py's constants)
    assert notice is not None and "about 40 seconds" in notice and "32 x 11008 x 4096" in notice.replace("\n  ", " ")
    assert all(len(line) <= 80 for line in notice.splitlines())
    assert duration_notice(plan(load(example("peak_small"))), "kgen port-check", programs=3) is None


def test_the_estimate_grows_with_the_plan_not_with_its_name():
    small = load(example("peak_small"))
    p = plan(small)
    # three programs on one set of inputs share one golden model: more than one run, less than three
    assert expected_seconds(p) < expected_seconds(p, 3) < 3 * expected_seconds(p)
    # the same spec, larger: the same name, a longer estimate
    larger = plan(replace(small, m=small.m * 8, n=small.n * 8, block=replace(small.block, per_core=None,
                                                                               out_block=None, out_subblock=None)))
    assert expected_seconds(larger) > 30 * expected_seconds(p)
    assert expected_seconds(p) < LONG_RUN_SECONDS


def test_port_check_prints_the_notice_before_it_builds(monkeypatch, capsys):
    def stop(*args, **kwargs):
        raise SpecError("stopped before the build")     # the test needs only what comes before it
    monkeypatch.setattr(kgen.proof.chain, "run_chain", stop)
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["port-check", str(example("wh_decode_dram_sharded_11008"))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgen port-check: expect about 40 seconds of CPU time"), err
    assert main(["emulate", str(example("peak_small"))]) == 2
    assert "expect" not in capsys.readouterr().err


def test_fast_numerics_is_estimated_as_fast(monkeypatch):
    """--numerics fast computes in float32: port-check of peak_bf16_sharded (63.8 G multiply-adds)
    took 73 s here, where the exact model's rate would say half an hour."""
    monkeypatch.setenv("COLUMNS", "100")
    p = plan(load(example("peak_bf16_sharded")))
    assert "about a minute" in duration_notice(p, "kgen port-check", programs=3, numerics="fast")
    assert expected_seconds(p, 3, "exact") > 20 * expected_seconds(p, 3, "fast")
