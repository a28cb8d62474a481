"""Issue #12 §2: out (c_4) and partials (c_5) in one L1 region must never overwrite each other.

The trap: with more than one output block per core, the first partials pack of block i+1 lands on
pages c_4 still holds for block i until the writer has drained them. The planner keeps the two
apart then (kgen.gen.blocking.out_partials_share), and the static verifier proves, for every region two CBs
share, that no pack writes pages the other CB may still hold.
"""

from __future__ import annotations

import pytest

from conftest import EXAMPLES
from kgen.proof.emulate import emulate_folder
from kgen.gen.build import build
from kgen.gen.plan import CB_OUT, CB_PARTIALS, plan
from kgen.gen.spec import parse_text, resolve


def reuse_spec(per_core: str = "2 x 2", out_block: str = "2 x 1", k: int = 64, l1acc: bool = False,
               extra: str = "") -> str:
    return f"""
matmul m {{
    arch = blackhole
    shape = {int(per_core.split('x')[0]) * 32} x {int(per_core.split('x')[1]) * 32} x {k}
    batch = 1
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = 1x1
    dataflow = reuse
    compute {{ math_fidelity = HiFi2  packer_l1_acc = {'true' if l1acc else 'false'} }}
    block {{ out_subblock = 1 x 1  per_core = {per_core}  out_block = {out_block}  in0_block_w = 1 }}
    {extra}
}}
"""


def region_of(p, index: int) -> str:
    return p.cb(index).region


CASES = {
    # The spec of the issue, verbatim in substance, and its two siblings.
    "issue: per_core 2x2, out_block 2x1": reuse_spec(),
    "per_core 2x3, out_block 2x1": reuse_spec("2 x 3", "2 x 1"),
    "packer_l1_acc, K = 4 tiles": reuse_spec(k=128, l1acc=True),
    "out_block smaller in h": reuse_spec("2 x 2", "1 x 2", k=64),
    "bias with one K-block": reuse_spec(k=32, extra="fuse { bias = true }"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_several_output_blocks_with_partials_get_separate_regions(name):
    p = plan(resolve(parse_text(CASES[name], "t.kspec")))
    assert p.num_blocks_h_dim * p.num_blocks_w_dim > 1
    assert region_of(p, CB_OUT) != region_of(p, CB_PARTIALS), p.out_partials_sharing
    assert p.out_partials_sharing.startswith("separate:")


def test_one_output_block_per_core_keeps_tt_metals_in_place_region():
    p = plan(resolve(parse_text(reuse_spec("2 x 2", "2 x 2", k=128), "t.kspec")))
    assert region_of(p, CB_OUT) == region_of(p, CB_PARTIALS)


def test_several_blocks_without_partials_share():
    # One K-block, no bias, no untilize: every pack goes straight to c_4, partials are never written.
    p = plan(resolve(parse_text(reuse_spec(k=32), "t.kspec")))
    assert p.num_blocks == 1 and region_of(p, CB_OUT) == region_of(p, CB_PARTIALS)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.slow
def test_the_trap_specs_emulate_bit_exact_with_random_schedules(name, host_cxx, tmp_path):
    p = plan(resolve(parse_text(CASES[name], "t.kspec")))
    folder = build(p.spec, tmp_path / "b").path
    result = emulate_folder(folder, p, seed=3, schedules=3)
    assert result.ok, result.summary()
    assert result.summary()["exact_match"] is True


def shared_anyway(p):
    """The plan as it was before the fix: c_4 and c_5 in one region (a hand-broken plan)."""
    from dataclasses import replace

    from kgen.gen.plan import L1Region

    cbs = tuple(replace(c, region="out+partials") if c.index in (CB_OUT, CB_PARTIALS) else c for c in p.cbs)
    regions = tuple(r for r in p.regions if not set(r.cb_indices) & {CB_OUT, CB_PARTIALS})
    out = p.cb(CB_OUT)
    regions += (L1Region("out+partials", (CB_OUT, CB_PARTIALS), out.total_bytes),)
    return replace(p, cbs=cbs, regions=regions)


@pytest.mark.parametrize("name", list(CASES))
def test_verifier_catches_the_trap_in_a_hand_broken_plan(name):
    from kgen.gen.lower import lower
    from kgen.gen.verify import IRVerificationError, verify

    p = plan(resolve(parse_text(CASES[name], "t.kspec")))
    verify(lower(p))                             # the real plan verifies
    with pytest.raises(IRVerificationError, match="out/partials trap"):
        verify(lower(shared_anyway(p)))


def test_kgen_check_fails_as_a_kgen_bug_on_the_trap(tmp_path, capsys, monkeypatch):
    # Were the planner rule lost, `kgen check` stops with exit 3 before anything is emulated.
    import kgen.gen.blocking
    from kgen.cli import main

    monkeypatch.setattr(kgen.gen.blocking, "out_partials_share", lambda *a: (True, "shared (rule disabled by the test)"))
    path = tmp_path / "t.kspec"
    path.write_text(CASES["issue: per_core 2x2, out_block 2x1"])
    assert main(["check", str(path)]) == 3
    assert "out/partials trap" in capsys.readouterr().err


def test_verifier_accepts_every_example_and_its_variants():
    from pathlib import Path

    from kgen.gen.lower import lower
    from kgen.gen.spec import load_file
    from kgen.gen.verify import verify

    for path in EXAMPLES:
        f = load_file(path)
        for variant in (None, *f.variants):
            verify(lower(plan(resolve(f, variant))))


def test_untilize_packing_over_partials_it_has_read_is_not_flagged():
    # TT-Metal's untilize stage copies a row of partials into DST, then packs the row-major output
    # into the same pages: read before written, so legal (the emulator's rule, commit 8a7a321).
    from kgen.gen.lower import lower
    from kgen.gen.verify import verify

    p = plan(resolve(parse_text(reuse_spec("2 x 1", "2 x 1", k=128, extra="untilize_out = true"), "t.kspec")))
    assert region_of(p, CB_OUT) == region_of(p, CB_PARTIALS)
    verify(lower(p))
