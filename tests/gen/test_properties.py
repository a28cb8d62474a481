"""Property tests: for random specs the planner either names a broken rule or returns a plan that
satisfies every TT-Metal rule, and the IR of every such plan verifies (kgen never emits a bug)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgen.core.errors import SpecError
from kgen.gen.lower import lower
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve
from kgen.core.types import DTYPE_TO_FORMAT
from kgen.gen.verify import verify

dims = st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16])
maybe = lambda strat: st.one_of(st.just("auto"), strat)


def divisor_of(draw, n: int) -> int:
    return draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))


@st.composite
def specs(draw):
    """Half the specs draw block values freely (mostly illegal), half from divisors (mostly legal)."""
    arch = draw(st.sampled_from(["wormhole_b0", "blackhole"]))
    mt, nt, kt = draw(dims), draw(dims), draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24]))
    batch = draw(st.sampled_from([1, 1, 2]))
    gx, gy = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    pair = st.tuples(st.integers(1, 8), st.integers(1, 8)).map(lambda p: f"{p[0]} x {p[1]}")
    in0_block_w = maybe(st.integers(1, 8).map(str))
    per_core = out_block = maybe(pair)
    if draw(st.booleans()):
        pm, pn = divisor_of(draw, mt * batch), divisor_of(draw, nt)
        gx, gy = nt // pn, mt * batch // pm
        per_core = st.just(f"{pm} x {pn}")
        out_block = maybe(st.just(f"{divisor_of(draw, pm)} x {divisor_of(draw, pn)}"))
        in0_block_w = st.just(str(divisor_of(draw, kt)))
    text = f"""
matmul p {{
    arch = {arch}
    shape = {mt * 32} x {nt * 32} x {kt * 32}
    batch = {batch}
    dtype {{ in0 = {draw(st.sampled_from(list(DTYPE_TO_FORMAT)))} in1 = {draw(st.sampled_from(list(DTYPE_TO_FORMAT)))}
            out = {draw(st.sampled_from(list(DTYPE_TO_FORMAT)))} }}
    grid = {draw(maybe(st.just(f"{gx} x {gy}")))}
    dataflow = {draw(st.sampled_from(["mcast_2d", "reuse"]))}
    block {{
        in0_block_w = {draw(in0_block_w)}
        out_subblock = {draw(st.one_of(st.just("auto"), st.just("auto"), pair))}
        per_core = {draw(per_core)}
        out_block = {draw(out_block)}
    }}
    compute {{
        math_fidelity = {draw(st.sampled_from(["LoFi", "HiFi2", "HiFi3", "HiFi4"]))}
        fp32_dest_acc = {draw(st.sampled_from(["true", "false"]))}
        packer_l1_acc = {draw(st.sampled_from(["true", "false"]))}
        dst_full_sync = {draw(st.sampled_from(["true", "false", "false"]))}
    }}
    fuse {{ bias = {draw(st.sampled_from(["true", "false"]))} activation = {draw(st.sampled_from(["none", "relu"]))} }}
    untilize_out = {draw(st.sampled_from(["true", "false", "false"]))}
}}
"""
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_plans_obey_tt_metal_rules_and_ir_verifies(text):
    try:
        p = plan(resolve(parse_text(text, "p.kspec")))
    except SpecError as exc:
        assert exc.span is not None and exc.message        # a rule error always points at the text
        return
    c = p.compute
    # matmul validation (docs/reference/matmul.md §2.8, §3.3)
    assert p.kt % p.in0_block_w == 0
    assert p.out_block_h % p.out_subblock_h == 0 and p.out_block_w % p.out_subblock_w == 0
    assert p.per_core_m % p.out_block_h == 0 and p.per_core_n % p.out_block_w == 0
    assert p.out_subblock_tiles <= p.dst_capacity == p.arch.dst_tiles(c.dst_full_sync, c.fp32_dest_acc)
    assert p.grid[0] <= p.grid_requested[0] <= p.arch.worker_grid[0]
    assert p.grid[1] <= p.grid_requested[1] <= p.arch.worker_grid[1]
    assert p.cb_bytes <= p.arch.usable_cb_bytes
    # the 2D factory's decisions (§2.2, §2.3)
    nb = p.kt // p.in0_block_w
    assert p.num_blocks == nb
    # TT-Metal 0.81.1, every factory: packer_l1_acc && num_blocks > 1, bias or not (provenance.md R7)
    assert p.l1_acc_enabled == (c.packer_l1_acc and nb > 1)
    expected_partials = "Float32" if c.fp32_dest_acc else ("Float16_b" if p.l1_acc_enabled else p.out_format)
    assert p.partials_format == expected_partials
    shared = p.cb(4).region == p.cb(5).region
    # An independent restatement of the sharing rule (deliberately not kgen.gen.plan.out_partials_share):
    # TT-Metal's in-place condition, and kgen's split when several output blocks pass through a
    # region that partials are packed into before each block's result (issue #12).
    several_blocks = p.batch_ct * p.num_blocks_h_dim * p.num_blocks_w_dim > 1
    partials_first = nb > 1 or p.fuse_bias or p.untilize_out
    assert shared == (p.partials_format == p.out_format and not (p.untilize_out and p.in1_num_subblocks > 1)
                      and not (several_blocks and partials_first))
    depth = 2 if nb > 1 else 1
    assert p.cb(0).pages == p.out_block_h * p.in0_block_w * depth
    assert p.cb(1).pages == p.out_block_w * p.in0_block_w * depth
    assert p.cb(5).pages == p.cb(4).pages == p.out_block_tiles
    # and the IR of every legal plan verifies
    verify(lower(p))
