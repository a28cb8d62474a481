"""kgen fuzz draws the forms that issue #39 added on 2026-11-27, and each drawn spec plans as drawn:

- the batch looped over (TT's fuse_batch = false) on every factory that runs it (reuse, mcast_2d,
  mcast_1d_in0/in1, multi_core), in1 shared and one per batch; transpose_a with a looped batch;
- `dataflow = multi_core` (TT's MatmulMultiCoreProgramFactory): its block 1 x 1 with in0_block_w = Kt, written,
  `auto` or left out; no bias, activation, untilize_out or transposed input;
- a height-sharded in0 and output on mcast_1d_in1 (shard i, per_core_M rows, on core i of the compute grid);
- a width-sharded in0, and some outputs, on mcast_1d_in0 (every core of the grid holding a K slice of all of M);
- shard specs written (`memory.in0_shard / out_shard = H x W on X x Y`), some leaving the grid and per_core
  to the shard (ttnn's get_matmul_program_config);
and the fuzz's summary counts the cases of each form."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from kgen.core.types import TILE_HW
from kgen.proof import fuzz_forms
from kgen.proof.fuzz import FuzzCase, _generate, check_case, run_fuzz, summarize

SEEDS, COUNT = (1, 2, 3), 400
SEED = SEEDS[0]


def _first(match) -> tuple[FuzzCase, object, object]:
    """(case, drawn choice, plan) of the first case of SEEDS whose choice `match` takes."""
    for seed in SEEDS:
        for i in range(COUNT):
            c, case = _generate(seed, i)
            if match(c):
                return case, c, check_case(case).raise_for_error().plan
    raise AssertionError(f"no case of seeds {SEEDS} among {COUNT} each draws the form")


@pytest.mark.parametrize("dataflow", ["reuse", "mcast_2d", "mcast_1d_in0", "mcast_1d_in1", "multi_core"])
@pytest.mark.parametrize("shared_in1", [True, False])
def test_a_seed_loops_over_the_batch_on_every_factory_that_runs_it(dataflow, shared_in1):
    _, c, p = _first(lambda c: c.dataflow == dataflow and c.unfused and c.broadcast_in1 == shared_in1)
    assert p.spec.dataflow == dataflow and p.spec.batch == c.batch > 1
    assert not p.spec.fuses_batch and p.batch_ct == c.batch             # every core loops over the batch
    assert p.batched_in1 == (not shared_in1)                            # bcast_B = 0: one in1 per batch
    assert p.mt == -(-p.spec.m // TILE_HW)                              # one batch's Mt
    if dataflow != "multi_core":                                        # per_core of one batch's Mt
        assert -(-p.mt // p.per_core_m) * -(-p.nt // p.per_core_n) == p.num_cores
        assert p.mt % p.per_core_m == 0 or dataflow in ("mcast_2d", "mcast_1d_in1")   # reuse: Mt % per_core_M == 0


@pytest.mark.parametrize("dataflow", ["mcast_2d", "mcast_1d_in1"])
def test_a_seed_pads_each_looped_batchs_last_row_of_cores(dataflow):
    _, _, p = _first(lambda c: c.dataflow == dataflow and c.unfused and (c.mt // c.batch) % c.per_core[0])
    assert p.batch_ct == p.spec.batch > 1 and p.padded_m and p.mt % p.per_core_m     # one batch's Mt


def test_a_seed_reads_a_looped_batchs_in0_transposed():
    _, _, p = _first(lambda c: c.transposed[0] and c.batch > 1)
    assert p.spec.transpose_a and p.spec.batch > 1 and p.batch_ct == p.spec.batch


@pytest.mark.parametrize("style", ["written", "auto", "left out"])
def test_a_seed_draws_the_multi_core_factory(style):
    def match(c):
        block = "left out" if "block" in c.omit else "auto" if c.auto else "written"
        return c.dataflow == "multi_core" and block == style
    case, _, p = _first(match)
    text = case.text
    assert "dataflow = multi_core" in text and ("block {" in text) == (style != "left out")
    assert (p.per_core_m, p.per_core_n, p.out_block_h, p.out_block_w, p.out_subblock_h, p.out_subblock_w) == (1,) * 6
    assert p.in0_block_w == p.kt and p.num_blocks == 1                  # all of K in DST
    assert not (p.fuse_bias or p.pack_relu or p.untilize_out or p.spec.transpose_a or p.spec.transpose_b)
    units = p.batch_ct * p.mt * p.nt                                    # split_work_to_cores over the output tiles
    assert p.num_cores == min(units, p.grid_requested[0] * p.grid_requested[1])


@pytest.mark.parametrize("memory", [("l1_height_sharded", "dram"), ("dram", "l1_height_sharded"),
                                    ("l1_height_sharded", "l1_height_sharded")])
def test_a_seed_height_shards_the_1d_in1_multicast(memory):
    _, _, p = _first(lambda c: c.dataflow == "mcast_1d_in1" and c.memory == memory)
    assert (p.memory.in0, p.memory.out) == memory and p.is_1d and p.nt == p.per_core_n
    x, y = p.grid_requested
    for tensor, width in (("in0", p.kt), ("out", p.nt)):
        if getattr(p.memory, tensor) == "l1_height_sharded":       # shard i: per_core_M rows on core i
            assert p.shard_specs[tensor]["shape"] == (p.per_core_m * TILE_HW, width * TILE_HW)
            assert p.shard_specs[tensor]["grid"] == (0, 0, x - 1, y - 1)
    assert p.mt == p.num_cores * p.per_core_m                           # whole shards, one a core


@pytest.mark.parametrize("memory", [("l1_width_sharded", "dram"), ("l1_width_sharded", "l1_width_sharded")])
def test_a_seed_width_shards_the_1d_in0_multicast(memory):
    """TT's rules for a width-sharded in0 on the 1D in0 multicast hold on the drawn case: "M must be equal to
    per_core_M", every core of the compute grid holding K slices of all of M, and the output shard (if any)
    one core's per_core_M x per_core_N block."""
    _, _, p = _first(lambda c: c.dataflow == "mcast_1d_in0" and c.memory == memory)
    assert (p.memory.in0, p.memory.out) == memory and p.is_1d and p.mt == p.per_core_m
    x, y = p.grid_requested
    shard = p.shard_specs["in0"]
    assert shard["grid"] == (0, 0, x - 1, y - 1) and shard["shape"][0] == p.mt * TILE_HW
    width = shard["shape"][1] // TILE_HW
    assert p.kt % width == 0 and width % p.in0_block_w == 0 and p.kt // width <= x * y
    if memory[1] == "l1_width_sharded":
        assert tuple(p.shard_specs["out"]["shape"]) == (p.per_core_m * TILE_HW, p.per_core_n * TILE_HW)


@pytest.mark.parametrize("dataflow,defaults", [("mcast_2d", False), ("mcast_1d_in1", False), ("mcast_2d", True),
                                               ("mcast_1d_in1", True)])
def test_a_seed_writes_shard_specs(dataflow, defaults):
    case, c, p = _first(lambda c: c.dataflow == dataflow and c.shards and ("grid" in c.omit) == defaults)
    text = case.text
    for tensor, (h, w), (x, y) in c.shards:
        assert f"{tensor}_shard = {h} x {w} on {x} x {y}" in text
        given = p.spec.memory.shard(tensor)
        assert (given.shape, given.grid) == ((h, w), (x, y))
        laid = p.shard_specs[tensor]                                    # the plan lays the given shard out
        assert tuple(laid["shape"]) == (h, w) and laid["grid"] == (0, 0, x - 1, y - 1)
    if defaults:                                    # grid and per_core left to the shard, as ttnn derives them
        assert "grid" not in text.split("{", 1)[1] and "per_core" not in text
        assert p.grid_requested == c.grid_req and (p.per_core_m, p.per_core_n) == c.per_core


def test_the_summary_counts_each_form():
    results = [check_case(_generate(SEED, i)[1]) for i in range(90)]
    counts = summarize(results)["forms"]
    assert set(counts) <= set(fuzz_forms.FORMS)
    for form in fuzz_forms.FORMS:                                       # a case counts once in each of its forms
        assert counts[form] == sum(form in fuzz_forms.forms(r.plan) for r in results)
    assert counts["multi-core"] == sum(r.plan.spec.dataflow == "multi_core" for r in results) > 0
    line = fuzz_forms.forms_line(Counter({"multi-core": 3}))
    assert line.startswith("forms: ") and "multi-core 3" in line and "shard spec 0" in line


@pytest.mark.slow
def test_kgen_fuzz_emulates_a_multi_core_case_and_prints_the_form_counts():
    case, _, _ = _first(lambda c: c.dataflow == "multi_core")
    out = io.StringIO()
    assert run_fuzz(count=1, seed=case.seed, start=case.index, typecheck=False, out=out) == 0, out.getvalue()
    assert "multi-core 1" in out.getvalue() and "forms: " in out.getvalue()
