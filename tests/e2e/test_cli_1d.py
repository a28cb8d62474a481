"""The 1D multicast factory through the `kgen` command: the examples check, and a spec that breaks one
of the factory's rules is one error paragraph with exit code 2 (issue #17 item 5)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT


def run(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kgen", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize("name,needles", [
    ("mcast_1d_in0_small", ("dataflow      mcast_1d_in0", "per_core_M x per_core_N = 2 x 4", "4 x 2 cores with work")),
    ("mcast_1d_in1_small", ("dataflow      mcast_1d_in1", "per_core_M x per_core_N = 4 x 2", "4 x 2 cores with work")),
])
def test_examples_check(name, needles):
    r = run("check", f"examples/{name}.kspec")
    assert r.returncode == 0, r.stderr
    for needle in needles:
        assert needle in r.stdout, needle


SPEC = """matmul t {{
    arch = wormhole_b0
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}
    dataflow = {dataflow}
    block {{ per_core = {per_core}  in0_block_w = 2 }}
}}
"""


@pytest.mark.slow
@pytest.mark.parametrize("dataflow,shape,grid,per_core,rule", [
    ("mcast_1d_in0", "128 x 1024 x 256", "4 x 2", "2 x 4", "num_blocks_y == 1"),      # Mt = 4 > per_core_M
    ("mcast_1d_in1", "1024 x 128 x 256", "4 x 2", "4 x 2", "num_blocks_x == 1"),      # Nt = 4 > per_core_N
    ("mcast_1d_in0", "64 x 1024 x 256", "4 x 2", "2 x 2", "num_blocks_x * num_blocks_y <= grid.x * grid.y"),
])
def test_a_broken_factory_rule_is_one_error_and_exit_2(tmp_path, dataflow, shape, grid, per_core, rule):
    path = tmp_path / "t.kspec"
    path.write_text(SPEC.format(dataflow=dataflow, shape=shape, grid=grid, per_core=per_core))
    r = run("check", path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert rule in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"kgen: {path}:") and "error:" in r.stderr
    assert r.stdout == ""
