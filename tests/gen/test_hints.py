"""A refusal's hint offers only values the planner accepts (issue 42, item 8).

Each value a PlanError's hint shows is a spec edit (`Suggestion.edits`); re-planned with it, the spec
must pass the rule it broke and every other one. Where no value does, the hint says so instead of
offering one that leads into the next refusal.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from conftest import example

from kgen.core.types import Placement
from kgen.gen.matmul_spec import BlockSpec, MemorySpec
from kgen.gen.plan import PlanError, edited, is_legal, plan
from kgen.gen.plan import refusal as refusal_of
from kgen.gen.rules import Offer, suggestion
from kgen.gen.spec import load, parse_text, resolve

# The issue's spec: M x N x K = 4096 x 7168 x 8192 on Blackhole, per_core 13 x 19. Its auto
# in0_block_w (4) fits L1; with in0_block_w = 8 the CBs overflow, and every out block smaller than
# 13 x 19 breaks the padded-block rule (the last core holds 15 of 19 columns and 11 of 13 rows) on the
# reuse dataflow. (On mcast_2d, the issue's, TT's writers skip a last core's whole out blocks past the
# tensor, last_num_blocks_h/w_dim, so a smaller out block plans: test_the_issues_spec_plans_on_mcast_2d.)
ISSUE_SPEC = """
matmul big {
    arch = blackhole
    shape = 4096 x 7168 x 8192
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    dataflow = reuse
    block { per_core = 13 x 19  in0_block_w = 8 }
}
"""


def test_the_issues_spec_plans_on_mcast_2d():
    spec = resolve(parse_text(ISSUE_SPEC.replace("dataflow = reuse", "dataflow = mcast_2d"), "big.kspec"))
    p = plan(spec)
    assert p.in0_block_w == 8 and (p.out_block_h, p.out_block_w) != (13, 19)
    assert p.last_per_core_m <= p.per_core_m - p.out_block_h or p.last_per_core_n <= p.per_core_n - p.out_block_w


def refusal(spec) -> PlanError:
    with pytest.raises(PlanError) as err:
        plan(spec)
    return err.value


def assert_hint_replans(exc: PlanError, spec) -> None:
    """Every value the hint shows re-plans; the hint shows exactly them, or says none passes."""
    hint = exc.hint or ""
    shown = [s for chosen in exc.taken for s in chosen]
    for s in shown:
        assert is_legal(edited(spec, s.edits)), f"hint offers {s.text} ({s.edits}), which is refused: {hint}"
        assert s.text in hint, f"{s.text} not in the hint: {hint}"
    if exc.offers and not shown:
        assert hint.startswith("no ") and "passes every rule" in hint, hint


def test_the_issues_l1_overflow_hint_offers_no_out_block_that_the_padded_block_rule_refuses():
    spec = resolve(parse_text(ISSUE_SPEC, "big.kspec"))
    exc = refusal(spec)
    assert exc.rule == "CBs fit the usable L1 of the core"
    assert "out_block = 13 x 1" not in exc.hint              # the old hint, refused by the padded-block rule
    assert exc.hint == ("nearest legal values: in0_block_w = 4 (no out_block smaller than 13 x 19 passes "
                        "every rule)")
    assert_hint_replans(exc, spec)
    # and the out block the old hint offered is indeed refused, under the padded-block rule
    bad = refusal(edited(spec, (("block.out_block", (13, 1)),)))
    assert "pad only a core's last out block" in bad.rule


def test_a_hint_that_has_no_value_says_so():
    spec = resolve(parse_text(ISSUE_SPEC, "big.kspec"))
    exc = PlanError("r", "m", None, Offer((suggestion("in0_block_w = 3", ("block.in0_block_w", 3)),),
                                          "in0_block_w dividing Kt"), otherwise="a smaller per_core")
    exc.bind(lambda edits: refusal_of(edited(spec, edits)))
    # in0_block_w = 3 does not divide Kt = 256
    assert exc.hint == ("no in0_block_w dividing Kt passes every rule (with in0_block_w = 3 it breaks "
                        "[rule: Kt % in0_block_w == 0]); a smaller per_core")


def test_an_unbound_error_shows_its_values_unchecked():
    exc = PlanError("r", "m", None, Offer((suggestion("7", ("block.in0_block_w", 7)),), "x"))
    assert exc.hint == "nearest legal values: 7"
    assert PlanError("r", "m", None, "a text").hint == "nearest legal values: a text"


def test_a_per_core_hint_changes_both_dimensions_when_both_break_the_rule():
    spec = load(example("peak_small"))
    spec = replace(spec, grid=(2, 2), block=BlockSpec(per_core=(1, 1)))
    exc = refusal(spec)
    assert exc.hint.startswith("nearest legal values: per_core = "), exc.hint
    assert_hint_replans(exc, spec)


# ---- a sweep of refused specs: examples with random block values, grids, dataflows and placements ----

DATAFLOWS = ("mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1", "dram_sharded")
BASES = ("peak_small", "padded_small", "non_tile_1000", "wh_decode_dram_sharded", "mcast_1d_in0_small",
         "attention_qk_batched", "bh_fp32_bias", "sharded_small")


def _pair(rng: random.Random, hi_a: int, hi_b: int) -> tuple[int, int]:
    return rng.randint(1, max(1, hi_a)), rng.randint(1, max(1, hi_b))


def _mutations(rng: random.Random, spec) -> list:
    """One change each, of the kinds a user makes: a block value, the grid, the dataflow, a placement."""
    mt, nt, kt = -(-spec.m // 32) * spec.batch, -(-spec.n // 32), -(-spec.k // 32)
    pm, pn = spec.block.per_core or (mt, nt)
    block = spec.block
    return [
        lambda s: replace(s, block=replace(s.block, per_core=_pair(rng, mt, nt))),
        lambda s: replace(s, block=replace(s.block, out_block=_pair(rng, pm, pn))),
        lambda s: replace(s, block=replace(s.block, in0_block_w=rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 16, kt]))),
        lambda s: replace(s, block=replace(s.block, out_subblock=_pair(rng, 8, 8))),
        lambda s: replace(s, block=BlockSpec(per_core=_pair(rng, mt, nt), in0_block_w=block.in0_block_w)),
        lambda s: replace(s, grid=_pair(rng, 14, 11)),
        lambda s: replace(s, dataflow=rng.choice(DATAFLOWS)),
        lambda s: replace(s, memory=MemorySpec(rng.choice(list(Placement)[:5]), rng.choice((Placement.DRAM, Placement.L1)),
                                               rng.choice((Placement.DRAM, Placement.L1_BLOCK_SHARDED)),
                                               rng.choice((None, "row_major", "col_major")))),
        lambda s: replace(s, untilize_out=not s.untilize_out),
        lambda s: replace(s, transpose_mcast=not s.transpose_mcast),
        lambda s: replace(s, fuse_bias=not s.fuse_bias),
        lambda s: replace(s, broadcast_in1=False, batch=rng.choice((2, 4))),
    ]


def _mutant(rng: random.Random, spec):
    """The spec with one to three changes (most refusals a user meets break one rule, some two)."""
    for change in rng.sample(_mutations(rng, spec), rng.choice((1, 1, 2, 3))):
        spec = change(spec)
    return spec


def test_every_hinted_value_of_a_sweep_of_refused_specs_replans():
    rng = random.Random(42)
    bases = [load(example(name)) for name in BASES]
    rules: dict[str, int] = {}
    refused = offered = 0
    for _ in range(500):
        spec = _mutant(rng, rng.choice(bases))
        try:
            plan(spec)
        except PlanError as exc:
            refused += 1
            rules[exc.rule] = rules.get(exc.rule, 0) + 1
            assert_hint_replans(exc, spec)
            offered += any(exc.taken)
    # the sweep reaches most of the planner's rules, and many of its hints offer values (the rest say
    # that none passes: a change that breaks two rules often needs two changes)
    assert refused >= 200 and len(rules) >= 20, (refused, sorted(rules))
    assert offered >= refused // 4, (offered, refused)


def test_a_refusal_replans_nothing_until_its_hint_is_read(monkeypatch):
    # tune and fuzz plan thousands of refused candidates and read only the rule
    import kgen.gen.plan as planner
    calls = []
    real = planner.refusal
    monkeypatch.setattr(planner, "refusal", lambda *a: calls.append(a) or real(*a))
    spec = resolve(parse_text(ISSUE_SPEC, "big.kspec"))
    exc = refusal(spec)
    assert exc.rule == "CBs fit the usable L1 of the core" and not calls
    assert "in0_block_w = 4" in exc.hint and calls
