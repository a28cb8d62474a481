"""The SFPU cost of the fused activations (configs/perf/sfpu.toml), priced on the pack thread: every
activation has a row, the one published per-row figure is the table's, and the cost is charged to
TRISC2 where TT's kernel runs it."""

from __future__ import annotations

import re

import pytest

from kgen.core.resources import config_table
from kgen.gen import activations
from kgen.gen.lower import lower
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve
from kgen.perf.model import predict, sfpu_tile_cycles


@pytest.mark.parametrize("spelling", activations.SFPU_SPELLINGS)
@pytest.mark.parametrize("fp32_dest", [False, True])
def test_every_activation_is_priced_in_both_dst_modes(spelling, fp32_dest):
    # at least one SFPU instruction per row over the 32 rows of a tile: a load and a store each
    assert sfpu_tile_cycles(spelling, fp32_dest) >= 32 * 2


def test_hardsigmoid_is_the_llk_comments_figure(host_toolchain):
    """Blackhole's ckernel_sfpu_activations.h (0.81.1) says its hardsigmoid body is "7 instructions
    per row": the table's count. No other activation has a published per-row or per-tile figure."""
    header = (host_toolchain.headers.root / "tt_metal/hw/ckernels/blackhole/metal/llk_api/llk_sfpu/"
              "ckernel_sfpu_activations.h")
    published = int(re.search(r"(\d+) instructions per row", header.read_text()).group(1))
    assert config_table("perf/sfpu.toml")["activation"]["hardsigmoid"]["any"]["instructions"] == published


def test_the_activation_is_charged_to_the_pack_thread():
    text = ("matmul t { arch = blackhole  shape = 512 x 512 x 64  grid = 2 x 2 "
            "dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }  fuse { activation = %s } }")
    busy = {}
    for act in ("none", "gelu"):
        pred = predict(lower(plan(resolve(parse_text(text % act, "t.kspec")))))
        busy[act] = {p.processor: dict(p.work) for p in pred.processors}
    assert "sfpu" not in busy["none"]["TRISC2 pack"]
    out_tiles_per_core = (512 // 32 // 2) * (512 // 32 // 2)
    assert busy["gelu"]["TRISC2 pack"]["sfpu"] == pytest.approx(out_tiles_per_core * sfpu_tile_cycles("gelu", False))
    assert busy["gelu"]["TRISC1 math"] == busy["none"]["TRISC1 math"]


def test_ab_vary_keeps_a_calls_commas():
    from kgen.perf.ab import parse_vary

    assert parse_vary(["fuse.activation=none,hardtanh(-2, 2),softplus(1,5)"]) == (
        ("fuse.activation", ("none", "hardtanh(-2, 2)", "softplus(1,5)")),)
    assert parse_vary(["compute.packer_l1_acc=false,true"]) == (("compute.packer_l1_acc", ("false", "true")),)
