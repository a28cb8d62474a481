"""The float64 oracle in the verdicts, end to end: a constant swapped in kgen's activation table
passes the golden model (both read the table) and fails emulate, port-check and fuzz, each naming
the activation; every activation on both archs and both DST modes, emulated, lies within its
float64 bound on random inputs and on inputs placed at each function's edges."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kgen import cli
from kgen.gen import activations as A

SPEC = """
matmul probe {{
    arch     = {arch}
    shape    = 64 x 64 x 64
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid     = 1 x 1
    compute {{ math_fidelity = HiFi4  fp32_dest_acc = {fp32} }}
    fuse {{ activation = {act} }}
}}
"""

# tenstorrent/tt-metal@fcff0cab's SELU bits: alpha in param0 (read by the kernel as the scale)
OLD_SELU = (0x3FD637BD, 0x3F8674F5, 0)


@pytest.fixture
def old_selu(monkeypatch):
    row = A.ROWS["selu"]
    monkeypatch.setitem(A.ROWS, "selu", dataclasses.replace(row, encode=lambda ps: OLD_SELU))


def _spec(write_spec, act: str, arch: str = "wormhole_b0", fp32: bool = False):
    return write_spec(SPEC.format(arch=arch, act=act, fp32=str(fp32).lower()))


def test_a_swapped_constant_fails_emulate_naming_the_activation(host_cxx, host_toolchain, write_spec, old_selu,
                                                                capsys):
    code = cli.main(["emulate", str(_spec(write_spec, "selu"))])
    out = capsys.readouterr().out
    assert code == 1
    assert "bit-exact against the exact golden model" in out        # the golden model reads the same table
    assert "BEYOND its float64 bound in selu" in out


def test_a_swapped_constant_fails_port_check_naming_the_activation(host_cxx, host_toolchain, write_spec, old_selu,
                                                                   capsys):
    code = cli.main(["port-check", str(_spec(write_spec, "selu"))])
    captured = capsys.readouterr()
    assert code == 1
    assert "float64 bound in selu" in captured.out + captured.err


def test_a_swapped_constant_fails_fuzz_naming_the_activation(host_cxx, host_toolchain, old_selu, capsys, tmp_path):
    from kgen.proof.fuzz import generate_case

    assert "activation = selu" in generate_case(1, 31).text.replace("\n", " ")
    code = cli.main(["fuzz", "--seed", "1", "--start", "31", "--count", "1", "--no-typecheck",
                     "--keep", str(tmp_path / "kept")])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL case 31" in out and "float64 bound in selu" in out


def edge_inputs(act: str, fp32: bool) -> tuple[np.ndarray, np.ndarray]:
    """in0 (64 x 64) whose rows hold each function's edges, in1 the identity: the product is in0
    exactly (bfloat16 values, one non-zero term per sum), so DST holds the edge values."""
    points = [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 2.5, -3.0, 3.0, 5.0, -5.0, -5.5,
              -5.54, -6.0, 6.0, 5.99, 6.01, 10.0, 19.9, 20.0, 20.1, 30.0, -30.0, 88.0, -88.0, 100.0, -100.0,
              1000.0, -1000.0, 3e4, -3e4, 1e-5, -1e-5, 0.1, -0.1, 4.0, -4.0, 8.0, -8.0, 0.25, -0.25]
    values = np.array(points + list(np.linspace(-12, 12, 64 * 64 - len(points))), np.float32)
    bf16 = (values.view(np.uint32) & 0xFFFF0000).view(np.float32)
    return bf16.reshape(64, 64), np.eye(64, dtype=np.float32)


# every spelling of the table but none, the packer's ReLU with them
EVERY = [s for s in A.SPELLINGS if s != A.NONE]
# the parameter forms, on two of the four arch x DST combinations
FORMS = [("sigmoid(1)", "wormhole_b0", False), ("sigmoid_fast(2)", "blackhole", True),
         ("selu(1.5, 2)", "blackhole", False), ("relu6(3)", "wormhole_b0", True),
         ("hardtanh(-2, 0.5)", "blackhole", True), ("softplus(2, 10)", "wormhole_b0", False),
         ("softplus(-0.5, 5)", "blackhole", True)]


@pytest.mark.slow
@pytest.mark.parametrize("act, arch, fp32", [(a, arch, fp32) for a in EVERY for arch in ("wormhole_b0", "blackhole")
                                             for fp32 in (False, True)] + FORMS)
def test_every_activation_is_within_its_float64_bound(host_cxx, host_toolchain, write_spec, tmp_path, act, arch,
                                                      fp32):
    from kgen.gen.build import build
    from kgen.gen.plan import plan
    from kgen.gen.spec import load_file, resolve
    from kgen.proof.emulate import Inputs, emulate_folder

    spec = resolve(load_file(_spec(write_spec, act, arch, fp32)))
    p = plan(spec)
    folder = build(spec, tmp_path).path
    random = emulate_folder(folder, p, seed=5)
    assert random.exact_match and random.float64.within, random.float64.line()
    edges = emulate_folder(folder, p, inputs=Inputs(*edge_inputs(act, fp32), None))
    assert edges.exact_match and edges.float64.within, edges.float64.line()


@pytest.mark.slow
@pytest.mark.parametrize("seed, index", [
    (2, 1),     # LoFi, bfloat8_b weights: the partials far from the exact product; the bias add's sum above both
    (2, 5),     # a Float32 bias without an FP32 DST reaches SrcB as bfloat16
    (4, 23),    # untilize_out: the result goes through the partials CB and the unpacker once more
    (12, 64),   # untilize_out with sigmoid: the activation sees DST before the copy truncates it
    (11, 23),   # hardtanh(-2.07, 1.14) on a bfloat16 DST: the clamp's 1.14 is stored as 1.133
    (2, 17),    # sigmoid's vector mode on an output that is not whole tiles (the golden model's row chunks)
])
def test_fuzz_cases_whose_numerics_the_bound_must_cover(host_cxx, host_toolchain, capsys, tmp_path, seed, index):
    code = cli.main(["fuzz", "--seed", str(seed), "--start", str(index), "--count", "1", "--no-typecheck",
                     "--keep", str(tmp_path / "kept")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "within the float64 bound" in out
