"""TT-Metal's 1D multicast factory (issue #17 item 5): plan and IR against its rules.

The rules, from matmul_multicore_reuse_mcast_1d_program_factory.cpp (tt-metal @00629f0f, the legacy
process_mcast_in0_program_and_create_override_variables / process_mcast_in1_... builders) and the
validation of matmul_device_operation.cpp (@9f46ee6b); README "The 1D multicast factory":

- num_blocks_y = ceil(Mt / per_core_M), num_blocks_x = ceil(Nt / per_core_N); num_cores = their
  product <= grid.x * grid.y; mcast_in0 needs num_blocks_y == 1, mcast_in1 num_blocks_x == 1;
- the cores are the first num_cores of the grid, row-major; core i holds output block i;
- core (0,0) is the sender; the multicast rectangle is the bounding box of all cores; num_dests =
  num_cores - 1 (its own core excluded);
- CBs: in0 = out_block_h * in0_block_w tiles, in1 = out_block_w * in0_block_w, each x2 when
  B * num_blocks > 1; out and partials out_block_h * out_block_w (one region when their formats match);
  bias out_block_w;
- packer_l1_acc_en = packer_l1_acc && num_blocks > 1 on both paths, bias or not (the 0.81.1 wheel's
  builders, docs/reference/provenance.md R7).

Every expected value is worked out from those rules in the test, not read back from kgen.
"""

from __future__ import annotations

import pytest

from conftest import example
from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.plan import PlanError, plan
from kgen.gen.spec import load, parse_text, resolve

BF16 = 2048


def make(dataflow="mcast_1d_in0", shape="64 x 1024 x 256", grid="4 x 2", per_core="2 x 4", w="2", extra=""):
    return resolve(parse_text(f"""matmul t {{
    arch = wormhole_b0
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}
    dataflow = {dataflow}
    block {{ per_core = {per_core}  in0_block_w = {w} }}
    compute {{ math_fidelity = HiFi2  packer_l1_acc = true }}
    {extra}
}}""", "t.kspec"))


def cbs(p):
    return {c.index: (c.pages, c.page_bytes, c.region) for c in p.cbs}


def test_mcast_in0_example_plans_as_the_factory():
    p = plan(load(example("mcast_1d_in0_small")))
    # 50 x 1000 x 256 -> Mt 2, Nt 32, Kt 8; per_core 2 x 4: num_blocks_y = 1, num_blocks_x = 32 / 4 = 8 cores,
    # row-major over the 4-wide grid: two full rows
    assert (p.mt, p.nt, p.kt) == (2, 32, 8)
    assert (p.per_core_m, p.per_core_n, p.grid) == (2, 4, (4, 2))
    # out_block = per_core (2 x 4); in0_block_w 2 -> 4 K-blocks, double-buffered inputs
    assert cbs(p) == {0: (2 * 2 * 2, BF16, "in0"), 1: (4 * 2 * 2, BF16, "in1"),
                      4: (2 * 4, BF16, "out+partials"), 5: (2 * 4, BF16, "out+partials")}
    assert p.l1_acc_enabled and p.partials_format == "Float16_b"


def test_mcast_in1_example_plans_as_the_factory():
    p = plan(load(example("mcast_1d_in1_small")))
    # 1000 x 50 x 256 -> Mt 32, Nt 2, Kt 8; per_core 4 x 2: num_blocks_x = 1, num_blocks_y = 8 cores
    assert (p.mt, p.nt, p.kt, p.per_core_m, p.per_core_n, p.grid) == (32, 2, 8, 4, 2, (4, 2))
    assert cbs(p) == {0: (4 * 2 * 2, BF16, "in0"), 1: (2 * 2 * 2, BF16, "in1"),
                      4: (4 * 2, BF16, "out+partials"), 5: (4 * 2, BF16, "out+partials")}
    # with the bias: c_3 holds out_block_w = 2 tiles (in3_CB_tiles, no double buffer)
    assert cbs(plan(load(example("mcast_1d_in1_small"), "bias")))[3] == (2, BF16, "bias")


@pytest.mark.parametrize("dataflow,blocks,on", [
    ("mcast_1d_in0", 2, True),        # 0.81.1, every factory: packer_l1_acc && num_blocks > 1
    ("mcast_1d_in0", 1, False),
    ("mcast_1d_in1", 2, True),
    ("mcast_1d_in1", 1, False),
    ("mcast_1d_in1", 3, True),
    ("mcast_2d", 2, True),
    ("mcast_2d", 1, False),
])
def test_l1_accumulation_threshold_of_each_factory(dataflow, blocks, on):
    shape, per_core, grid = {"mcast_1d_in0": ("64 x 256 x {k}", "2 x 2", "4 x 1"),
                             "mcast_1d_in1": ("256 x 64 x {k}", "2 x 2", "4 x 1"),
                             "mcast_2d": ("64 x 64 x {k}", "1 x 1", "2 x 2")}[dataflow]
    p = plan(make(dataflow, shape.format(k=64 * blocks), grid, per_core))      # in0_block_w 2 -> `blocks` K-blocks
    assert p.num_blocks == blocks and p.l1_acc_enabled == on
    if blocks == 2:
        # TT-Metal's kernel then defines PACKER_L1_ACC but never accumulates: block 0 packs with it off,
        # the last block reloads the partials (bmm_large_block_zm_fused_bias_activation.cpp)
        v = run(make(dataflow, shape.format(k=128), grid, per_core), "verified").verified
        ops = [n for n, _ in walk(v.kernel("compute").body) if n.kind == "pack_l1_acc"]
        assert ops and not any(n["enable"] for n in ops)


def test_auto_per_core_covers_the_multicast_dimension():
    # mcast_in0: per_core_M = Mt (2); per_core_N the smallest divisor of Nt = 32 whose cores fill whole rows
    # of the 4 x 2 grid: 32 / 4 = 8 cores
    p = plan(make(per_core="auto"))
    assert (p.per_core_m, p.per_core_n, p.grid) == (2, 4, (4, 2))
    p = plan(make("mcast_1d_in1", "1024 x 64 x 256", per_core="auto"))
    assert (p.per_core_m, p.per_core_n, p.grid) == (4, 2, (4, 2))


def test_padding_inside_the_one_block():
    # mcast_in0 with per_core_M = 3 > Mt = 2: every core's out block holds 2 of 3 rows (the factory's
    # in0_last_out_block_h); mcast_in1 with per_core_N = 3 > Nt = 2
    p = plan(make(per_core="3 x 4"))
    assert p.padded_m and p.last_out_block_h == 2 and p.grid == (4, 2)
    p = plan(make("mcast_1d_in1", "1024 x 64 x 256", per_core="4 x 3"))
    assert p.padded_n and p.last_out_block_w == 2
    # mcast_in0 with 7 cores in one row: Nt = 32 = 6 x 5 + 2
    p = plan(make(grid="7 x 1", per_core="2 x 5"))
    assert p.grid == (7, 1) and p.last_per_core_n == 2


def test_mcast_in1_pads_the_last_of_several_cores():
    """Mt = 32 = 6 x 5 + 2 over per_core_M = 5 on 7 cores: the last is a receiver, whose writer the factory
    gives last_out_num_blocks_h and the padded last block's args (the legacy mcast_in1 builder's
    `output_idx_y == num_blocks_y - 1`); every in0 reader gets last_block_h = per_core_M."""
    p = plan(make("mcast_1d_in1", "1000 x 64 x 256", per_core="5 x 2", grid="7 x 1"))
    assert p.grid == (7, 1) and p.last_per_core_m == 2 and p.padded_m


@pytest.mark.parametrize("kw,rule", [
    (dict(per_core="1 x 4"), "num_blocks_y == 1"),                        # Mt = 2 over per_core_M 1: 2 blocks
    (dict(dataflow="mcast_1d_in1", shape="1024 x 64 x 256", per_core="4 x 1"), "num_blocks_x == 1"),
    (dict(per_core="2 x 2"), "num_blocks_x * num_blocks_y <= grid.x * grid.y"),   # 16 cores > 8
])
def test_factory_rules_are_enforced(kw, rule):
    with pytest.raises(PlanError) as exc:
        plan(make(**kw))
    assert rule in exc.value.message


def test_kernels_run_where_the_factory_puts_them():
    """mcast_in0 on 4 x 2: in0 sender on (0,0); receivers on the rest of row 0 and on row 1; the in1
    reader/writer on every core, reading column block i = 4y + x; two semaphores, ids 0 and 1."""
    v = run(make(), "verified").verified
    where = {k.name: (k.role, str(k.cores)) for k in v.kernels}
    assert where == {"compute": ("compute", "(0,0)-(3,1)"), "in0_sender": ("in0_sender", "(0,0)-(0,0)"),
                     "in0_receiver": ("in0_receiver", "(1,0)-(3,0)"),
                     "in0_receiver_rows": ("in0_receiver", "(0,1)-(3,1)"),
                     "in1_sender_writer": ("in1_sender_writer", "(0,0)-(3,1)")}
    assert {s.name: s.id for s in v.semaphores} == {"in0_sender": 0, "in0_receiver": 1}
    send = v.kernel("in0_sender")
    mcast = next(n for n, _ in walk(send.body) if n.kind == "mcast_cb")
    assert mcast["num_dests"] == 7
    # the in1 block of core (x, y) starts at tile column (4y + x) * per_core_N
    read = next(n for n, _ in walk(v.kernel("in1_sender_writer").body) if n.kind == "read_tiles")
    assert read["start"].eval({"block": 0, "bw": 0, "core_x": 1, "core_y": 1}) == (4 * 1 + 1) * 4
    v1 = run(make("mcast_1d_in1", "1024 x 64 x 256", per_core="4 x 2"), "verified").verified
    assert {k.name: str(k.cores) for k in v1.kernels if k.name != "compute"} == {
        "in0_sender": "(0,0)-(3,1)", "in1_sender_writer": "(0,0)-(0,0)",
        "in1_receiver_writer": "(1,0)-(3,0)", "in1_receiver_writer_rows": "(0,1)-(3,1)"}
    assert {s.name: s.id for s in v1.semaphores} == {"in1_sender": 0, "in1_receiver": 1}
    read = next(n for n, _ in walk(v1.kernel("in0_sender").body) if n.kind == "read_tiles")
    # in0 rows of core (x, y): M-block i = 4y + x, per_core_M 4 rows of Kt = 8 tiles
    assert read["start"].eval({"block": 0, "bh": 0, "core_x": 3, "core_y": 1}) == (4 * 1 + 3) * 4 * 8
