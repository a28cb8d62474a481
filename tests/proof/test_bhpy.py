"""port-check --target blackhole-py on every variant of examples/bhpy_padded.kspec: the exported program,
run under blackhole-py's layout, gives the bytes of kgen's TT-Metal program, and both are the golden
model's bits (both policies, fp32 Dst, the reuse dataflow, with and without bias and ReLU)."""

from __future__ import annotations

import pytest

from conftest import example
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
