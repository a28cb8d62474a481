"""kgen.device.measure on the fake ttnn: the PCC is the caller's rule, and the device layer stands
without kgen's proof and perf layers."""

from __future__ import annotations

import numpy as np
import pytest

import fake_ttnn
from conftest import example
from kgen.device.measure import measure_on_device
from kgen.gen.build import build
from kgen.gen.spec import load


def test_the_output_is_compared_by_the_callers_rule(tmp_path):
    folder = build(load(example("peak_small")), tmp_path).path
    tensors = {n: fake_ttnn.FakeTensor(0x1000 * (i + 1)) for i, n in enumerate(("in0", "in1", "out"))}
    ref = np.arange(16, dtype=np.float64).reshape(4, 4)
    seen = []

    def rule(out, reference):
        seen.append((out, reference))
        return 0.25

    m = measure_on_device(folder, tensors, device=fake_ttnn.FakeDevice(), ttnn=fake_ttnn, reference=ref,
                          read_output=lambda t: -ref, runs=2, warmup=0, synchronize=lambda: None, pcc_of=rule)
    assert m.pcc == 0.25 and m.runs == 2 and m.warmup == 0
    assert len(seen) == 1 and np.array_equal(seen[0][0], -ref) and seen[0][1] is ref


def test_the_pcc_rule_is_required():
    with pytest.raises(TypeError):
        measure_on_device("folder", {}, device=None, ttnn=fake_ttnn, reference=np.zeros(1),
                          read_output=lambda t: t)
