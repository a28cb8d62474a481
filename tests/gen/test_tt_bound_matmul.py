"""What ttnn.linear 0.81.1 runs as ops of their own around the matmul program (bound_matmul and
get_post_process_bias, ttnn/cpp/ttnn/operations/matmul/matmul.cpp at v0.81.1), and that `kgen check`
says so where kgen's `dataflow = auto` fuses them."""

from __future__ import annotations

import pytest

from kgen.gen import tt_bound_matmul
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve


def make(memory: str = "", fuse: str = "bias = true", grid: str = ""):
    text = f"""matmul t {{
    arch = wormhole_b0  shape = 64 x 1024 x 1024  {grid}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16  bias = bfloat16 }}
    memory {{ {memory} }}
    fuse {{ {fuse} }}
}}"""
    return resolve(parse_text(text, "t.kspec"))


# get_post_process_bias with no program config and no core grid: an output not in DRAM -> post-processed; a DRAM
# output with in0 not sharded and not every tensor DRAM-interleaved -> post-processed; else fused
@pytest.mark.parametrize("memory, post", [
    ("", False),                                   # every tensor DRAM-interleaved
    ("out = l1", True),                            # the output not in DRAM
    ("in0 = l1", True),                            # DRAM output, in0 interleaved in L1
    ("in1 = l1", True),
    ("in0 = l1_width_sharded", False),             # DRAM output, in0 sharded
    ("in0 = l1_width_sharded  out = l1", True),
])
def test_the_bias_is_post_processed_by_tts_rule(memory, post):
    assert bool(tt_bound_matmul.bias_post_processed(make(memory))) is post


def test_a_core_grid_keeps_the_bias_and_the_activation_in_the_program():
    spec = make("out = l1", "bias = true  activation = silu", grid="grid = 8 x 4")
    assert not tt_bound_matmul.bias_post_processed(spec)
    assert not tt_bound_matmul.activation_post_processed(spec)
    assert tt_bound_matmul.separate_ops(spec) == ()


def test_without_a_core_grid_the_activation_is_a_unary_op_of_its_own():
    assert tt_bound_matmul.activation_post_processed(make("", "activation = gelu"))
    assert not tt_bound_matmul.activation_post_processed(make("", "bias = true"))


def test_check_says_where_kgen_fuses_what_tt_runs_apart():
    resolved_lines = plan(make("out = l1", "bias = true  activation = silu")).tt_choice
    text = "\n".join(resolved_lines)
    assert "ttnn::add of its own" in text and "get_post_process_bias: the output is not in DRAM" in text
    assert "activation silu" in text and "Unary_chain" in text and "differ in the last bit" in text
    relu = "\n".join(plan(make("", "activation = relu")).tt_choice)
    assert "ReLU commutes with rounding" in relu and "ttnn::add" not in relu
