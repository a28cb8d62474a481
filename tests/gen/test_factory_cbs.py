"""The CB table's rules that differ by TT-Metal 0.81.1 factory, each stated from the machine code of the
wheel's _ttnncpp.so that ttnn.matmul runs (docs/reference/provenance.md R3, R9).

Each expected value is worked out in the comment beside it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import example
from kgen.core.types import Placement
from kgen.gen.blocking import do_not_inplace_interm0_out
from kgen.gen.plan import CB_OUT, CB_PARTIALS, plan
from kgen.gen.spec import load, parse_text, resolve

# 128 x 128 x 64 on 2 x 4 cores: Mt = Nt = 4, per_core 1 x 2 (4 M blocks over y, 2 N blocks over x),
# one K-block (Kt = 2 = in0_block_w), no bias, no untilize: kgen's own split rule does not fire, and the
# out block 1 x 1 is narrower than per_core_N = 2.
SPLIT_N = """
matmul split_n {{
    arch     = wormhole_b0
    shape    = 128 x 128 x 64
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid     = 2 x 4
    dataflow = mcast_2d
    memory {{ in0 = dram  in1 = dram  out = {out} }}
    block {{
        per_core     = 1 x 2
        out_block    = {ob}
        in0_block_w  = 2
        out_subblock = 1 x 1
    }}
}}
"""


def split_n(out: str = "l1_block_sharded", ob: str = "1 x 1"):
    return resolve(parse_text(SPLIT_N.format(out=out, ob=ob), "split_n.kspec"))


def test_2d_do_not_inplace_tests_per_core_n_too():
    # create_program_mcast_in0_in1_spec (so 0x1234b8e-0x1234ba8): do_not_inplace_interm0_out_CB =
    # out BLOCK_SHARDED && (per_core_M != out_block_h || per_core_N != out_block_w). per_core_M = 1 =
    # out_block_h but per_core_N = 2 != out_block_w = 1: c_5 gets its own 1 x 1 tile region (2048 B) beside
    # c_4 on the out shard (1 x 2 tiles).
    p = plan(split_n())
    assert p.num_blocks == 1 and p.num_blocks_w_dim == 2
    assert p.cb(CB_OUT).region != p.cb(CB_PARTIALS).region
    assert p.cb(CB_OUT).buffer == "out" and p.cb(CB_OUT).pages == 1 * 2
    assert p.cb(CB_PARTIALS).pages == 1 and p.cb(CB_PARTIALS).total_bytes == 2048
    assert "do_not_inplace_interm0_out_CB" in p.out_partials_sharing
    assert "per_core = 1 x 2 != out_block = 1 x 1" in p.out_partials_sharing


def test_2d_do_not_inplace_needs_a_sharded_output_and_a_smaller_block():
    # the same blocking with the output in DRAM: the rule does not fire, kgen's (one K-block: no partials
    # packed before the result) shares; a sharded output with out_block = per_core shares too
    dram = plan(split_n(out="dram"))
    assert dram.cb(CB_OUT).region == dram.cb(CB_PARTIALS).region
    whole = plan(split_n(ob="1 x 2"))
    assert whole.cb(CB_OUT).region == whole.cb(CB_PARTIALS).region


def test_1d_do_not_inplace_is_the_2d_rule():
    # create_program_mcast_in0_artifacts (so 0x120ac22-0x120ac3b) and create_program_mcast_in1_artifacts
    # (0x121d330-0x121d349): output_is_sharded && (per_core_M != out_block_h || per_core_N != out_block_w).
    # kgen's 1D dataflows take a DRAM output only, so the rule is asked of a spec with a sharded one.
    for name in ("mcast_1d_in0_small", "mcast_1d_in1_small"):
        spec = load(example(name))
        sharded = dataclasses.replace(spec, memory=dataclasses.replace(spec.memory, out=Placement.L1_WIDTH_SHARDED))
        assert do_not_inplace_interm0_out(sharded, (2, 4), (2, 2)) is not None
        assert do_not_inplace_interm0_out(sharded, (2, 4), (1, 4)) is not None
        assert do_not_inplace_interm0_out(sharded, (2, 4), (2, 4)) is None
        assert do_not_inplace_interm0_out(spec, (2, 4), (2, 2)) is None          # DRAM output


def test_dram_sharded_and_reuse_have_no_do_not_inplace():
    # create_program_dram_sharded_spec (so 0x124f47e-0x124f4b0) shares c_4 and c_5 when interm0's format is
    # the output's and not (untilize_out && in1_num_subblocks >= 2): no per_core / out_block test, though its
    # out block is per_core_M x per_core_N_compute (padded past per_core_N). The reuse factory's program
    # config has no out block at all.
    p = plan(load(example("wh_decode_dram_sharded")))
    assert p.memory.out != Placement.DRAM
    assert do_not_inplace_interm0_out(p.spec, (p.per_core_m, p.per_core_n), (p.per_core_m, p.per_core_n + 1)) is None
    reuse = load(example("untilize_relu_reuse"))
    sharded = dataclasses.replace(reuse, memory=dataclasses.replace(reuse.memory, out=Placement.L1_BLOCK_SHARDED))
    assert do_not_inplace_interm0_out(sharded, (4, 4), (2, 2)) is None


@pytest.mark.slow
def test_split_n_port_checks(host_cxx, host_toolchain, tmp_path, capsys):
    # golden model, kgen's kernels in the emulator and TT-Metal's kernels agree bit for bit on the plan
    # with c_5 apart from the out shard
    from kgen.cli import main

    path = tmp_path / "split_n.kspec"
    path.write_text(SPLIT_N.format(out="l1_block_sharded", ob="1 x 1"))
    rc = main(["port-check", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["passed"] is True, data["failures"]
    assert data["kgen"]["exact_match"] and data["tt_metal"]["exact_match"]


def test_block_sharded_in0_has_no_l1_array_cb(tmp_path):
    # create_program_mcast_in0_in1_spec (so 0x12348f0), the 2D builder ttnn.matmul 0.81.1 reaches, declares the
    # buffers in0, in1, bias, out, intermed0, in0_sharded, intermed0_reload_alias and in0_transposed: no 64-byte
    # L1 array (only the legacy ccl_fusion create_program_mcast_in0_in1, 0x1989b34, still makes
    # CircularBufferConfig(0x40, {6: Float16_b})), and neither block-sharded reader in the wheel reads one.
    # sharded_small (in0 block-sharded): c_0, c_1, c_2 on the in0 shard, c_4 on the out shard, c_5; nothing else.
    from kgen.gen.build import build

    p = plan(load(example("sharded_small")))
    assert sorted(c.index for c in p.cbs) == [0, 1, 2, 4, 5]
    manifest = json.loads((build(p.spec, tmp_path).path / "manifest.json").read_text())
    indices = sorted(f["buffer_index"] for cb in manifest["cbs"] for f in cb["format_descriptors"])
    assert indices == [0, 1, 2, 4, 5]
