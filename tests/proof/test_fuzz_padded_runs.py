"""kgen fuzz draws the forms issue #39 item 4 opened: 1D multicast runs whose last row is partial (TT-Metal's
1D factory multicasts to their bounding box) and a last core with whole out blocks past the tensor where
the factory's writers stop at last_num_blocks_h/w_dim (Dataflow.skips_padded_out_blocks)."""

from __future__ import annotations

from kgen.proof.fuzz import _generate, check_case

SEEDS, COUNT = (1, 2, 3), 200


def _plans():
    for seed in SEEDS:
        for i in range(COUNT):
            c, case = _generate(seed, i)
            yield check_case(case).raise_for_error().plan


def test_fuzz_draws_partial_1d_runs_and_whole_padded_blocks():
    partial, whole = set(), set()
    for p in _plans():
        if p.is_1d and p.num_cores < p.grid[0] * p.grid[1]:
            partial.add(p.spec.dataflow)
        rows = -(-p.last_per_core_m // p.out_block_h) < p.num_blocks_h_dim
        cols = -(-p.last_per_core_n // p.out_block_w) < p.num_blocks_w_dim
        if rows or cols:
            assert p.dataflow.skips_padded_out_blocks(0 if rows else 1, -(-p.mt // p.per_core_m)), p.spec.name
            whole.add((p.spec.dataflow, "M" if rows else "N"))
    assert partial == {"mcast_1d_in0", "mcast_1d_in1"}, partial
    assert whole, "no case with whole out blocks past the tensor"
