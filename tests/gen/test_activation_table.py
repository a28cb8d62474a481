"""The activation table (kgen/gen/activations.py) against TT-Metal 0.81.1: the KernelActivation enum
of the fetched headers, the parameter encoding of TT's factory (get_activation_params in
ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.hpp), and where the lowering puts
the activation (bmm_large_block_zm_fused_bias_activation.cpp: in place of tile_regs_wait on the last
K-block's pack without a bias, in the bias stage with one)."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from kgen.gen import activations as A
from kgen.gen.ir import Loop, Op
from kgen.gen.lower import lower
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def test_kernel_activation_order_is_the_headers_enum(host_toolchain):
    """activation_type is the enum's position: read the enum from the fetched 0.81.1 header."""
    header = (host_toolchain.headers.root / "ttnn/cpp/ttnn/operations/matmul/shared_with_host/activation_type.hpp")
    body = re.search(r"enum class KernelActivation[^{]*\{([^}]*)\}", header.read_text()).group(1)
    names = [n.strip().lower() for n in body.split(",") if n.strip()]
    assert tuple(names) == A.KERNEL_ACTIVATIONS


def test_every_kernel_activation_has_a_spelling_and_the_issue_spellings_exist():
    kinds = {row.kind for row in A.ROWS.values()}
    assert set(A.KERNEL_ACTIVATIONS) <= kinds
    assert set(A.SPELLINGS) == {"none", "relu", "silu", "gelu", "gelu_fast", "gelu_tanh", "gelu_tanh_fast", "tanh",
                                "tanh_fast", "sigmoid", "sigmoid_fast", "relu6", "hardsigmoid", "hardtanh", "selu",
                                "softplus"}


@pytest.mark.parametrize("spelling, expected", [
    # fast flags: param0 for gelu, gelu_tanh and tanh; sigmoid's vector mode (0: RC) in param0, fast in param1
    ("gelu", (1, 0, 0, 0)), ("gelu_fast", (1, 1, 0, 0)), ("gelu_tanh", (2, 0, 0, 0)), ("gelu_tanh_fast", (2, 1, 0, 0)),
    ("tanh", (3, 0, 0, 0)), ("tanh_fast", (3, 1, 0, 0)), ("silu", (4, 0, 0, 0)),
    # sigmoid: the vector mode in param0 (4, TT's string form: the whole tile), the fast flag in param1
    ("sigmoid", (6, 4, 0, 0)), ("sigmoid_fast", (6, 4, 1, 0)), ("hardsigmoid", (7, 0, 0, 0)),
    ("sigmoid(1)", (6, 1, 0, 0)), ("sigmoid_fast(2)", (6, 2, 1, 0)), ("sigmoid(0)", (6, 0, 0, 0)),
    # the factory's literal defaults (0.81.1's _ttnncpp.so: tests/gen/test_activation_wheel.py)
    ("relu6", (5, 0x40C00000, 0, 0)),
    ("hardtanh", (8, 0xBF800000, 0x3F800000, 0)),
    # SELU: param0 the scale, param1 alpha, float32 nearest the published constants
    ("selu", (9, 0x3F867D5F, 0x3FD62D7D, 0)),
    ("selu(1.5, 2)", (9, bits(1.5), bits(2.0), 0)),
    ("relu6(3)", (5, bits(3.0), 0, 0)),
    ("softplus", (10, 0x3F800000, 0x41A00000, 0x3F800000)),
    # float parameters as float32 bit patterns; softplus's 1.0f / beta in param2
    ("hardtanh(-2, 0.5)", (8, bits(-2.0), bits(0.5), 0)),
    ("softplus(2, 10)", (10, bits(2.0), bits(10.0), bits(0.5))),
    ("softplus(3, 20)", (10, bits(3.0), bits(20.0), int(np.array(np.float32(1) / np.float32(3)).view(np.uint32)))),
    ("softplus(-0.7, 5)", (10, bits(-0.7), bits(5.0), int(np.array(np.float32(1) / np.float32(-0.7)).view(np.uint32)))),
])
def test_parameters_are_encoded_as_tts_factory_does(spelling, expected):
    act = A.parse(spelling)
    assert act.sfpu
    assert (act.type_value, act.p0, act.p1, act.p2) == expected
    assert dict(act.named_args) == {"activation_type": expected[0], "activation_param0": expected[1],
                                    "activation_param1": expected[2], "activation_param2": expected[3]}


def test_relu_is_the_packer_and_none_is_nothing():
    assert A.parse("relu").packer_relu and not A.parse("relu").sfpu
    assert not A.parse("none").sfpu and A.parse("none").named_args == ()


@pytest.mark.parametrize("text, needle", [
    ("softplus(0, 20)", "beta parameter cannot be zero"),
    ("softplus(-0, 20)", "beta parameter cannot be zero"),        # -0.0 == 0 in TT's check
    ("softplus(1)", "takes 2 parameters"),
    ("hardtanh(1, 2, 3)", "takes 2 parameters"),
    ("gelu(1)", "takes no parameters"),
    ("hardtanh(1000000000000000000000000000000000000000, 1)", "does not fit a float32"),
    ("swish", "unknown activation"),
    # bmm_fused_activation.hpp passes `PARAM0 ? PARAM0 : 6.0f`: TT's kernel would clamp at 6
    ("relu6(0)", "clamps at 6"),
    # get_activation_params: the vector mode is at most 4
    ("sigmoid(5)", "from 0 to 4"), ("sigmoid(-1)", "from 0 to 4"), ("sigmoid(1.5)", "from 0 to 4"),
    ("selu(1)", "takes 2 parameters"),
])
def test_bad_activations_name_the_rule(text, needle):
    with pytest.raises(A.ActivationError, match=re.escape(needle)):
        A.parse(text)


@pytest.mark.parametrize("value", [1.0, -1.0, 0.5, 1.67326, 20.0, 1e-8, 3.4e38, -0.0, 1.401298464324817e-45,
                                   3.4028234663852886e38, -3.4028234663852886e38, 3.4027e38])
def test_format_f32_reads_back_to_the_same_float32(value):
    text = A.format_f32(value)
    assert "e" not in text.lower()
    assert bits(float(text)) == bits(value)


def test_canonical_spelling_is_what_the_spec_keeps():
    assert A.parse("hardtanh").spelling == "hardtanh(-1, 1)"
    assert A.parse("softplus( 1.0 ,20.000)").spelling == "softplus(1, 20)"
    # TT's string forms stay bare; a written parameter is kept
    assert [A.parse(t).spelling for t in ("selu", "relu6", "sigmoid")] == ["selu", "relu6", "sigmoid"]
    assert A.parse("selu(1.5, 2.0)").spelling == "selu(1.5, 2)"


@pytest.mark.parametrize("text, warned", [
    # TT 0.81.1 accepts a minimum above the maximum (get_activation_params checks nothing); its
    # clamp returns the maximum (hardtanh) or 0 (relu_max: max(0, min(x, top))) everywhere
    ("hardtanh(2, -2)", True), ("hardtanh(-2, 2)", False), ("hardtanh(1, 1)", False),
    ("relu6(-1)", True), ("relu6(3)", False), ("selu", False),
])
def test_what_tt_accepts_but_computes_other_than_named_is_a_caution(text, warned):
    assert bool(A.caution(A.parse(text).spelling)) == warned


SPEC = """
matmul t {{
    arch = {arch}
    shape = 128 x 128 x 256
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = 2 x 2
    dataflow = mcast_2d
    block {{ in0_block_w = 2 }}
    fuse {{ bias = {bias}  activation = {act} }}
}}
"""


def _program(act: str, bias: bool, arch: str = "wormhole_b0"):
    spec = resolve(parse_text(SPEC.format(arch=arch, bias=str(bias).lower(), act=act), "t.kspec"))
    return lower(plan(spec))


def _walk(nodes, path=()):
    for n in nodes:
        if isinstance(n, Loop):
            yield from _walk(n.body, path + (n,))
        else:
            yield n, path


@pytest.mark.parametrize("bias", [False, True])
def test_the_activation_replaces_tile_regs_wait_exactly_at_tts_points(bias):
    """Without a bias: in the last K-block's pack (not in earlier blocks' spills); with a bias: in the
    bias stage only (the last K-block packs partials with a plain tile_regs_wait)."""
    program = _program("gelu", bias)
    last = program.blocking.num_blocks - 1
    assert last > 0
    compute = next(k for k in program.kernels if k.processor == "TRISC")
    ops = list(_walk(compute.body))
    applies = [(o, path) for o, path in ops if o.kind == "activation_apply"]
    assert applies, "no activation_apply"
    inits = [o for o, _ in ops if o.kind == "activation_init"]
    assert len(inits) == 1 and ops[0][0].kind == "activation_init"      # before hw_startup, as TT's kernel
    for o, path in applies:
        in_k_loop = any(loop.var == "block" for loop in path)
        if bias:
            assert not in_k_loop
        else:
            assert in_k_loop and all((loop.start, loop.stop) == (last, last + 1) for loop in path if loop.var == "block")
    # every apply is followed by packs and a release, as tile_regs_wait was
    kinds = [o.kind for o, _ in ops]
    for i, kind in enumerate(kinds):
        if kind == "activation_apply":
            assert kinds[i - 2:i] == ["tile_regs_commit", "cb_reserve_back"] or kinds[i - 1] == "cb_reserve_back"
    assert ("SFPU_ACTIVATION", "1") in compute.defines
    assert dict(compute.named_compile_time_args)["activation_type"] == A.KERNEL_ACTIVATIONS.index("gelu")


def test_no_activation_leaves_the_kernel_without_sfpu_ops_and_define():
    for act in ("none", "relu"):
        compute = next(k for k in _program(act, False).kernels if k.processor == "TRISC")
        assert not any(o.kind.startswith("activation_") for o, _ in _walk(compute.body))
        assert "SFPU_ACTIVATION" not in dict(compute.defines)
        assert not any(n.startswith("activation_") for n, _ in compute.named_compile_time_args)


def test_softplus_reciprocal_of_a_tiny_beta_is_float32_infinity():
    # TT's get_activation_params computes 1.0f / beta in float32; numpy's float32 division is the fact
    import numpy as np
    from kgen.gen import activations
    beta = float(np.float32(1e-45))
    with np.errstate(over="ignore", divide="ignore"):
        want = int((np.float32(1.0) / np.float32(beta)).view(np.uint32))
    assert activations.ROWS["softplus"].encode((beta, 1.0))[2] == want == 0x7F800000
