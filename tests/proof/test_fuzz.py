"""The fuzz-case generator: every case is valid for kgen's own stages, reproducible from (seed,
index), small enough to emulate, and the cases of one seed cover the feature space."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from kgen import cli
from kgen.core.arch import load_arch
from kgen.core.errors import SpecError
from kgen.proof.fuzz import (MAX_GRID, MAX_TILE_MACS, CaseResult, FuzzCase, _generate, check_case, features,
                       generate_case, generate_cases, summarize)
from kgen.gen.plan import PlanError
from kgen.core.types import TILE_HW

COUNT, SEED = 200, 1


@pytest.fixture(scope="module")
def cases() -> list[FuzzCase]:
    return generate_cases(COUNT, SEED)


@pytest.fixture(scope="module")
def results(cases) -> list[CaseResult]:
    return [check_case(c) for c in cases]


@pytest.mark.slow
def test_every_case_parses_plans_lowers_and_verifies(results):
    failed = [(r.case.name, r.stage, str(r.error)) for r in results if not r.ok]
    assert not failed, failed[:3]
    assert all(r.plan is not None and r.program is not None for r in results)


def test_generation_is_reproducible(cases):
    again = generate_cases(COUNT, SEED)
    assert [c.text for c in again] == [c.text for c in cases]
    assert generate_case(SEED, 17) == cases[17]                  # case i does not depend on cases < i
    random.seed(12345)                                            # nor on the global random state
    random.random()
    assert generate_case(SEED, 3) == cases[3]
    other = generate_cases(COUNT, SEED + 1)
    assert sum(a.text != b.text for a, b in zip(cases, other)) == COUNT
    assert len({c.text for c in cases}) == COUNT                 # no duplicates within a seed


def test_generation_does_not_depend_on_the_hash_seed(cases):
    code = "from kgen.proof.fuzz import generate_case; print(generate_case(1, 5).text, end='')"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="4242")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert out.stdout == cases[5].text


def test_case_identity(cases):
    assert [c.index for c in cases] == list(range(COUNT)) and {c.seed for c in cases} == {SEED}
    assert cases[7].name == "fuzz_s1_00007" and cases[7].filename == "fuzz_s1_00007.kspec"
    assert generate_case(-3, 2).name == "fuzz_sn3_00002"
    assert check_case(generate_case(-3, 2)).ok
    assert generate_cases(0, SEED) == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        cases[0].text = ""  # type: ignore[misc]


def test_the_plan_is_the_drawn_configuration():
    """The generator's model of the planner's `auto` choices and defaults holds: what it drew is
    what kgen plans, so the coverage below is coverage of real plans."""
    for i in range(COUNT):
        c, case = _generate(SEED, i)
        p = check_case(case).raise_for_error().plan
        co = p.compute
        # the batch looped over (one in1 per batch, or fuse_batch = false): Mt is one batch's (the fused Mt / batch)
        assert (p.spec.broadcast_in1, p.batch_ct) == (c.broadcast_in1, c.batch_ct)
        assert p.spec.fuses_batch == (c.batch_ct == 1) and p.spec.fuse_batch == c.fuse_batch
        assert (p.spec.batch, p.mt * p.batch_ct, p.nt, p.kt) == (c.batch, c.mt, c.nt, c.kt) or c.tt_auto
        assert p.transpose_mcast == c.transpose_mcast and (p.memory.in0, p.memory.out) == c.memory
        assert p.memory.in1 == c.memory_in1 or p.spec.dataflow == "dram_sharded"
        if c.tt_auto:
            # dataflow = auto: TT's choice (kgen/gen/ttauto.py) gives the factory and the blocking, the
            # written grid is its core_grid; the shape is the drawn one, padded to TT's whole tiles
            assert p.tt_choice and p.spec.dataflow in ("mcast_2d", "mcast_1d_in0", "mcast_1d_in1", "reuse")
            assert (p.spec.batch, p.nt, p.kt) == (c.batch, -(-p.spec.n // TILE_HW), c.kt)
            assert not c.write_grid or (p.grid[0] <= c.grid_req[0] and p.grid[1] <= c.grid_req[1])
            assert ("grid =" in case.text or "grid     =" in case.text) == c.write_grid
        else:
            assert (p.mt * p.batch_ct, p.nt, p.grid_requested, p.spec.dataflow) == (c.mt, c.nt, c.grid_req, c.dataflow)
            assert ((p.per_core_m, p.per_core_n), (p.out_block_h, p.out_block_w), p.in0_block_w,
                    (p.out_subblock_h, p.out_subblock_w)) == (c.per_core, c.out_block, c.in0_block_w, c.subblock)
        assert (co.math_fidelity, co.fp32_dest_acc, co.packer_l1_acc, co.math_approx, co.dst_full_sync) == \
            (c.fidelity, c.fp32_dest_acc, c.packer_l1_acc, c.math_approx, c.dst_full_sync)
        assert (p.fuse_bias, p.pack_relu, p.untilize_out, p.arch.name) == (c.bias, c.relu, c.untilize, c.arch)
        in0, in1, out, bias = c.dtypes
        assert (p.spec.dtype_in0, p.spec.dtype_in1, p.spec.dtype_out, p.spec.dtype_bias) == (in0, in1, out, bias or out)


@pytest.mark.slow
def test_cases_are_small(results):
    """Small cases on grids up to 3x3; the full-grid share has one or two tiles per core on grids
    up to the arch's worker grid (load_arch, from configs/), and at least one K tile."""
    full = 0
    for r in results:
        p = r.plan
        wx, wy = load_arch(p.spec.arch).worker_grid
        assert p.kt * TILE_HW <= 512                                                        # K
        if p.tt_choice or p.spec.dataflow == "multi_core":
            # dataflow = auto: TT's grid and blocking over a drawn (small) shape; multi_core: the drawn shape's
            # output tiles split over the drawn grid (split_work_to_cores), fewer cores than it when fewer tiles
            assert p.mt * p.nt * p.kt <= max(MAX_TILE_MACS, p.mt * p.nt) and p.grid[0] <= wx and p.grid[1] <= wy
            continue
        if p.is_1d:
            # a drawn case made 1D (fuzz._one_d): the drawn per-core block, its dimension shared by every
            # core one per-core block, the other over every core of the drawn grid (the whole of it)
            assert p.grid_requested == p.grid and p.mt * p.nt * p.kt <= max(MAX_TILE_MACS, p.mt * p.nt)
            assert (p.mt <= p.per_core_m) if p.spec.dataflow == "mcast_1d_in0" else (p.nt <= p.per_core_n)
            if max(p.grid) > MAX_GRID:
                full += 1
            continue
        if max(p.grid) <= MAX_GRID:
            assert p.mt * TILE_HW <= 256 and p.nt * TILE_HW <= 256                          # batch*M, N
            assert p.mt * p.nt * p.kt <= MAX_TILE_MACS and features(p)["macs"] <= 16 * 2 ** 20
            assert max(p.grid_requested) <= MAX_GRID
        else:
            full += 1
            assert p.grid[0] <= wx and p.grid[1] <= wy and p.grid_requested == p.grid
            assert p.per_core_m <= 2 and p.per_core_n <= 2
            assert p.mt * p.nt * p.kt <= max(MAX_TILE_MACS, p.mt * p.nt)
    assert 0 < full < len(results) // 4


@pytest.mark.slow
def test_coverage(results, cases):
    s = summarize(results)
    plans = [r.plan for r in results]
    assert set(s["arch"]) == {"wormhole_b0", "blackhole"}
    assert set(s["dataflow"]) == {"mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1", "dram_sharded", "multi_core"}
    # the DRAM-sharded decode matmul: its placements, all of M on every worker, one and several rows of M
    decode = [p for p in plans if p.spec.dataflow == "dram_sharded"]
    assert all((p.memory.in0, p.memory.in1, p.memory.out) == ("l1_width_sharded", "dram_width_sharded",
                                                              "l1_width_sharded") and p.per_core_m == p.mt
               for p in decode)
    assert {min(p.mt, 2) for p in decode} == {1, 2} and any(p.in0_shards < p.num_cores for p in decode)
    # TT's padded last DRAM shard (Nt not a multiple of per_core_N) and its padding-only banks (fewer
    # workers than banks), each drawn, and every drawn width one the factory reads right: per_core_N ==
    # div_up(Nt, workers), workers = banks - (per_core_N x banks - Nt) // per_core_N
    assert any(p.nt % p.per_core_n for p in decode) and any(p.num_cores < len(p.arch.dram_bank_workers) for p in decode)
    for p in decode:
        banks = len(p.arch.dram_bank_workers)
        workers = banks - max(0, p.per_core_n * banks - p.nt) // p.per_core_n
        assert p.num_cores == workers and -(-p.nt // workers) == p.per_core_n
    assert set(s["fidelity"]) == {"LoFi", "HiFi2", "HiFi3", "HiFi4"}
    assert set(s["fp32_dest_acc"]) == {True, False} and set(s["dst_full_sync"]) == {True, False}
    assert set(s["policy"]) == {"packer_l1_acc", "spill_reload", "dst_only"}
    assert s["bias"][True] and s["relu"][True] and s["untilize_out"][True]
    assert any(b > 1 for b in s["batch"])
    # packer_l1_acc requested with 1, 2 and > 2 K-blocks; TT-Metal 0.81.1 turns it on from 2 blocks,
    # bias or not (packer_l1_acc && num_blocks > 1), and its kernel accumulates from 3, or 2 with a bias
    assert {min(p.num_blocks, 3) for p in plans if p.compute.packer_l1_acc} == {1, 2, 3}
    assert all(p.l1_acc_enabled == (p.compute.packer_l1_acc and p.num_blocks > 1) for p in plans)
    assert sum(p.policy == "packer_l1_acc" and p.num_blocks > 2 for p in plans) >= 10
    assert any(p.policy == "packer_l1_acc" and p.num_blocks == 2 and p.fuse_bias for p in plans)
    assert any(p.policy == "packer_l1_acc" and p.num_blocks == 2 and not p.fuse_bias for p in plans)
    assert any(p.policy == "spill_reload" and p.num_blocks == 2 for p in plans)
    # dtypes: every dtype on every operand, bfp8 and float32 among them; every partials format
    for attr in ("dtype_in0", "dtype_in1", "dtype_out"):
        assert {getattr(p.spec, attr) for p in plans} == {"bfloat16", "bfloat8_b", "bfloat4_b", "float32"}
    assert {p.partials_format for p in plans} >= {"Float32", "Float16_b", "Bfp8_b"}
    assert any(p.fuse_bias and p.spec.dtype_bias != p.spec.dtype_out for p in plans)
    # every grid 1x1 .. 3x3, grids past 3 in each direction up to the worker grid of each arch (its
    # last column or row among them), idle cores, several output blocks per core, untilize with > 1
    # subblock column
    grids = {(p.spec.arch, p.grid) for p in plans}
    assert {g for _, g in grids} >= {(x, y) for x in range(1, 4) for y in range(1, 4)}
    for arch in ("wormhole_b0", "blackhole"):
        wx, wy = load_arch(arch).worker_grid
        mine = [g for a, g in grids if a == arch]
        assert all(x <= wx and y <= wy for x, y in mine)
        assert any(x > MAX_GRID for x, _ in mine) and any(y > MAX_GRID for _, y in mine)
    assert any(p.grid[0] == load_arch(p.spec.arch).worker_grid[0] for p in plans)
    assert any(p.grid[1] == load_arch(p.spec.arch).worker_grid[1] for p in plans)
    assert any(p.grid != p.grid_requested for p in plans)
    assert any(p.num_blocks_h_dim * p.num_blocks_w_dim > 1 for p in plans)
    assert any(p.untilize_out and p.in1_num_subblocks > 1 for p in plans)
    # padded forms (issue #17): padded last row and column of cores, on mcast_2d and reuse, and M, N, K
    # each short of whole tiles, some of them together with padded blocks
    assert any(p.padded_m for p in plans) and any(p.padded_n for p in plans)
    assert {p.spec.dataflow for p in plans if p.padded_blocks} == {"mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1",
                                                                  "dram_sharded"}
    # the 1D factory: M padded inside mcast_in0's one M-block, N inside mcast_in1's one N-block; grids of
    # one row and of several (the receivers on two rectangles)
    assert any(p.spec.dataflow == "mcast_1d_in0" and p.padded_m for p in plans)
    assert any(p.spec.dataflow == "mcast_1d_in1" and p.padded_n for p in plans)
    for flow in ("mcast_1d_in0", "mcast_1d_in1"):
        assert {min(p.grid[1], 2) for p in plans if p.spec.dataflow == flow} == {1, 2}, flow
    # the batch looped over (fuse_batch = false) with one in1 per batch (bcast_batch = false) and with in1
    # shared, on more than one factory; some with M, N or K short of whole tiles; padded blocks (each batch's
    # last row of cores) never on reuse (its Mt % per_core_M == 0)
    looped = [p for p in plans if p.batch_ct > 1]
    batched = [p for p in looped if p.batched_in1]
    assert batched and len({p.spec.dataflow for p in batched}) > 1 and any(not p.batched_in1 for p in looped)
    assert any(p.tile_padding for p in batched) and not any(p.padded_m for p in looped if p.spec.dataflow == "reuse")
    # transpose_mcast (issue #17 item 4): on grids with more than one row and column, and padded
    transposed = [p for p in plans if p.transpose_mcast]
    assert all(p.spec.dataflow == "mcast_2d" for p in transposed)
    assert any(p.m_blocks > 1 and p.n_blocks > 1 and p.m_blocks != p.n_blocks for p in transposed)
    assert any(p.padded_blocks for p in transposed)
    # L1 sharding (issue #17 item 3): in0 and the output block-sharded, alone and together, also transposed
    placements = {(p.memory.in0, p.memory.out) for p in plans}
    assert placements >= {("dram", "dram"), ("l1_block_sharded", "dram"), ("dram", "l1_block_sharded"),
                          ("l1_block_sharded", "l1_block_sharded")}
    assert any(p.transpose_mcast and p.memory.in0 != "dram" for p in plans)
    assert any(p.memory.in0 == "l1_height_sharded" for p in plans)
    for dim in ("M", "N", "K"):
        assert any(dim in p.tile_padding for p in plans), dim
    # L1-interleaved tensors (issue #39): each of in0, in1 and the output, on more than one factory
    for tensor in ("in0", "in1", "out"):
        assert any(getattr(p.memory, tensor) == "l1" for p in plans), tensor
    assert len({p.spec.dataflow for p in plans if "l1" in (p.memory.in0, p.memory.in1, p.memory.out)}) > 1
    # an in0 of rank 4 and of rank 5 (`batch = 2 x 3`, folded as ttnn folds it), broadcast and batched in1
    assert {3, 4, 5} <= set(s["in0_rank"])
    assert {p.batched_in1 for p in plans if len(p.spec.batch_dims) > 1} == {True, False}
    # dataflow = auto (TT's own choice): with ttnn.matmul's core_grid and without, a 2D and a 1D choice
    auto = [p for p in plans if p.tt_choice]
    assert {bool(re.search(r"^\s*grid\s*=", r.case.text, re.MULTILINE)) for r in results if r.plan.tt_choice} == {True, False}
    assert "mcast_2d" in {p.spec.dataflow for p in auto} and {p.spec.dataflow for p in auto} & {"mcast_1d_in0",
                                                                                                "mcast_1d_in1"}
    assert any(p.padded_blocks and p.tile_padding for p in plans)
    # the text: every block key both explicit and auto; every way of giving a compute config
    text = "\n".join(c.text for c in cases)
    for key in ("in0_block_w", "out_subblock", "per_core", "out_block"):
        assert re.search(rf"{key} = auto", text) and re.search(rf"{key} = \d", text), key
    assert "compute cfg {" in text and "compute  = peak_hifi2" in text and "compute { math_fidelity" in text


def test_check_case_returns_the_error_and_its_stage(cases):
    case = cases[0]
    bad_key = dataclasses.replace(case, text=case.text.replace("arch ", "arhc ", 1))
    r = check_case(bad_key)
    assert not r.ok and r.stage == "parse" and isinstance(r.error, SpecError) and r.plan is None
    with pytest.raises(SpecError, match="arhc"):
        r.raise_for_error()
    bad_grid = dataclasses.replace(case, text=re.sub(r"grid\s+= \d+ ?x ?\d+", "grid = 99 x 1", case.text))
    r = check_case(bad_grid)
    assert r.stage == "plan" and isinstance(r.error, PlanError) and "worker grid" in str(r.error)


def _pick_for_cli(results: list[CaseResult]) -> list[CaseResult]:
    """A handful of cases that between them hold each arch, dataflow, policy and untilize."""
    picked: dict[tuple, CaseResult] = {}
    for r in results:
        f = features(r.plan)
        for key in (("arch", f["arch"]), ("dataflow", f["dataflow"]), ("policy", f["policy"]),
                    ("untilize", f["untilize_out"]), ("named", "compute cfg {" in r.case.text)):
            picked.setdefault(key, r)
    return list({id(r): r for r in picked.values()}.values())


@pytest.mark.slow
def test_cases_round_trip_through_kgen_check(results, tmp_path, capsys):
    picked = _pick_for_cli(results)
    assert len(picked) >= 4
    for r in picked:                                  # in-process, as `kgen check FILE --json`
        path = tmp_path / r.case.filename
        path.write_text(r.case.text)
        assert cli.main(["check", str(path), "--json"]) == 0, capsys.readouterr().err
        data = json.loads(capsys.readouterr().out)
        assert data["name"] == r.case.name and data["policy"] == r.plan.policy
        assert data["num_blocks"] == r.plan.num_blocks
    first = tmp_path / picked[0].case.filename       # and once through the real command line
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "kgen", "check", str(first)], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"policy        {picked[0].plan.policy}" in out.stdout
