"""kgen tune on a batched in1 (`broadcast_in1 = false`): it proposes only the factory that takes one in1
per batch (TT's reuse factory; the multicast configs fuse the batch and matmul_device_operation.cpp
@001cea9a refuses a batched in1 there), and only whole blocks per batch (the reuse factory's
TT_FATAL(Mt % per_core_M == 0), TT_FATAL(Nt % per_core_N == 0))."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

from kgen.gen import dataflow as dataflows
from kgen.gen.spec import parse_text, resolve
from kgen.perf.tune.candidate import tiles
from kgen.perf.tune.space import dataflow_options, search_space

SPEC = """matmul tb {
    arch = wormhole_b0  shape = 256 x 256 x 64  batch = 8  broadcast_in1 = false
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
}
"""


def test_the_search_space_keeps_to_the_factory_that_takes_a_batched_in1():
    spec = resolve(parse_text(SPEC, "tb.kspec"))
    # (the multi-core factory runs a batched in1 too, but has no blocks for tune to search: draws_blocks)
    takers = {d.name for d in dataflows.REGISTRY if dataflows.takes_batched_in1(d) and d.draws_blocks}
    assert set(dataflow_options(spec)) == takers == {"reuse"}
    assert tiles(spec) == (8, 8, 2)                      # Mt is one batch's
    assert not search_space(spec, "all").padded
    broadcast = resolve(parse_text(SPEC.replace("broadcast_in1 = false", ""), "tb.kspec"))
    drawn = {d.name for d in dataflows.REGISTRY if d.draws_blocks}
    assert set(dataflow_options(broadcast)) == drawn and tiles(broadcast) == (64, 8, 2)


def test_tune_proposes_no_refused_factory_and_no_padded_block(tmp_path):
    path = tmp_path / "tb.kspec"
    path.write_text(SPEC)
    out = subprocess.run([sys.executable, "-m", "kgen", "tune", str(path), "--no-db", "--json", "--space", "all",
                          "--top", "50"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    ranked = result["ranked"]
    assert ranked and result["stats"]["illegal"] == 0
    for r in ranked:
        c = r["candidate"]
        assert c["dataflow"] == "reuse" and not r["padded"], c
        assert 8 % c["per_core"][0] == 0 and 8 % c["per_core"][1] == 0, c
