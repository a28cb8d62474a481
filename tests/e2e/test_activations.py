"""Fused SFPU activations through the CLI, as a user runs them: every activation TT-Metal 0.81.1's
matmul fuses (both modes where TT has two), on a Wormhole and a Blackhole spec, with and without a
fused bias:

- `kgen build --check` type-checks the kernels against the 0.81.1 headers, TT's LLK SFPU headers
  (llk_api/llk_sfpu/ckernel_sfpu_*.h) included, through kgen's SFPI stand-ins;
- `kgen emulate` is bit-exact against the golden model, and `kgen port-check` gives kgen's bits
  with TT-Metal's compute kernel (SFPU_ACTIVATION, bmm_fused_activation.hpp) in kgen's program and
  in TT's whole program. These run TT's LLK code on the host SFPU model and compare with the NumPy
  SFPU golden model.

Plus bad activation input (exit 2, one paragraph naming TT's rule), and the sign of the performance
effect: a GELU matmul with a small K is bound by the pack thread, where the plain one is not.
"""

from __future__ import annotations

import json
import re

import pytest

from kgen.cli import main
from kgen.gen import activations

# one spelling per activation and mode; the parameterised ones with parameters other than TT's defaults
SPELLINGS = tuple(f"{s}(-2, 2)" if s == "hardtanh" else f"{s}(2, 10)" if s == "softplus" else s
                  for s in activations.SFPU_SPELLINGS)
ARCHES = ("wormhole_b0", "blackhole")
CASES = [(s, arch, bias) for s in SPELLINGS for arch in ARCHES for bias in (False, True)]
IDS = [f"{s.split('(')[0]}-{arch[:2]}-{'bias' if bias else 'nobias'}" for s, arch, bias in CASES]

SPEC = """\
matmul act {{
    arch     = {arch}
    shape    = 64 x 64 x 128                 # 2 x 2 x 4 tiles: two K-blocks, a spill and a reload
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid     = 2 x 2
    dataflow = mcast_2d
    block {{ in0_block_w = 2 }}
    fuse {{ bias = {bias}  activation = {act} }}
}}
"""


def spec_file(tmp_path, act: str, arch: str = "wormhole_b0", bias: bool = False, text: str = SPEC):
    path = tmp_path / "act.kspec"
    path.write_text(text.format(act=act, arch=arch, bias=str(bias).lower()))
    return path


def test_every_activation_of_the_issue_is_covered():
    assert len(SPELLINGS) == 14 and {activations.parse(s).kind for s in SPELLINGS} == set(
        activations.KERNEL_ACTIVATIONS[1:])


@pytest.mark.slow
@pytest.mark.parametrize("act, arch, bias", CASES, ids=IDS)
def test_build_check_type_checks(host_toolchain, tmp_path, capsys, act, arch, bias):
    rc = main(["build", "--check", str(spec_file(tmp_path, act, arch, bias)), "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert re.search(r"type-checked \d+ kernel builds", out), out
    compute = next((tmp_path / "out").glob("*/kernels/compute.cpp")).read_text()
    assert '#include "ttnn/operations/matmul/device/kernels/compute/bmm_fused_activation.hpp"' in compute
    assert compute.count("apply_activation_from_pack<") == 1      # one last-K-block body, or one bias stage
    manifest = json.loads(next((tmp_path / "out").glob("*/manifest.json")).read_text())
    kernel = next(k for k in manifest["kernels"] if k["processor"] == "TRISC")
    named = kernel["named_compile_time_args"]
    a = activations.parse(act)
    assert kernel["defines"].get("SFPU_ACTIVATION") == "1"
    assert (named["activation_type"], named["activation_param0"], named["activation_param1"],
            named["activation_param2"]) == (a.type_value, a.p0, a.p1, a.p2)


def _with_tt_kernel(tree, spec_path, out, edit=lambda f: f):
    """kgen's build of the spec with TT-Metal's compute kernel in place of kgen's (port-check's
    `with_compute_kernel`), `edit` applied to the rendered files, type-checked."""
    from dataclasses import replace

    from kgen.gen.build import write_artifacts
    from kgen.gen.pipeline import run, with_compute_kernel
    from kgen.gen.spec import load
    from kgen.toolchain.compile import compile_folder, failure_text

    swap = with_compute_kernel(tree.headers.reference_kernel)

    def rendered(a):
        r = swap(a)
        return replace(r, files=tuple(edit(f) for f in r.files))

    folder = write_artifacts(run(load(spec_path), overrides={"rendered": rendered}), out).path
    # the session's compile cache: kgen's readers and writers, the same files as in kgen's own build,
    # are checked once (the cache is keyed by content, so an edited file is compiled again)
    report = compile_folder(folder, tree, "check", parallel=2)
    return [failure_text(r, str(spec_path)) for r in report.failures]


@pytest.mark.slow
@pytest.mark.parametrize("act, arch, bias", CASES, ids=IDS)
def test_tt_metals_compute_kernel_type_checks_with_kgens_activation_args(host_toolchain, tmp_path, act, arch, bias):
    """TT's bmm_large_block_zm_fused_bias_activation.cpp takes SFPU_ACTIVATION and the named args
    activation_type / activation_param0..2 from kgen's descriptors: it type-checks in kgen's build."""
    failures = _with_tt_kernel(host_toolchain, spec_file(tmp_path, act, arch, bias), tmp_path / "ref")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_the_type_check_reaches_tts_activation_helpers(host_toolchain, tmp_path):
    """Seeded misuse: softplus with param0 (beta) = 0 in the named args must fail TT's own
    static_assert in bmm_fused_activation.hpp, so the check really compiles the SFPU path."""
    def zero_beta(f):
        if f.path == "jit/compute/named_ct_arg_map_generated.h":
            text = re.sub(r'\{"activation_param0",\d+\}', '{"activation_param0",0}', f.text)
            assert text != f.text
            from dataclasses import replace
            return replace(f, text=text)
        return f

    failures = _with_tt_kernel(host_toolchain, spec_file(tmp_path, "softplus(2, 10)"), tmp_path / "ref", zero_beta)
    assert failures and all("beta) must be non-zero" in f for f in failures), "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("act, arch, bias", CASES, ids=IDS)
def test_emulate_bit_exact_and_port_check_against_tts_kernels(host_cxx, host_toolchain, tmp_path, capsys, act,
                                                              arch, bias):
    """kgen's program emulates bit-exact against the golden model (port-check's own first step, the
    emulation `kgen emulate` runs), and TT-Metal's compute kernel in kgen's program, and TT's whole
    program (its 2D multicast readers and writers), give kgen's bits."""
    rc = main(["port-check", str(spec_file(tmp_path, act, arch, bias)), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["kgen"]["status"] == "ok" and data["kgen"]["exact_match"] and not data["kgen"]["hazards"], data["kgen"]
    assert rc == 0 and data["passed"] is True and data["failures"] == [], data["failures"]
    assert data["bit_identical"] and data["kgen"]["exact_match"] and data["tt_metal"]["exact_match"]
    assert data["program"].get("ran") is not False, data["program"]


# ----------------------------------------------------------------------------------------------
# bad input: exit 2, one paragraph that names TT's rule, nothing on stdout, no traceback
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("act, needles", [
    ("softplus(0, 20)", ("beta must be non-zero", "SOFTPLUS activation beta parameter cannot be zero")),
    ("softplus(1)", ("softplus takes 2 parameters (BETA, THRESHOLD), found 1",)),
    ("hardtanh(1, 2, 3)", ("hardtanh takes 2 parameters (MIN, MAX), found 3",)),
    ("gelu(1)", ("gelu takes no parameters",)),
    ("hardtanh(1000000000000000000000000000000000000000, 1)", ("does not fit a float32",)),
    ("gelu_tanhh", ("unknown activation `gelu_tanhh`", "did you mean `gelu_tanh`?")),
])
def test_bad_activation_is_one_clear_error(tmp_path, capsys, act, needles):
    rc = main(["check", str(spec_file(tmp_path, act))])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "Traceback" not in err, err
    assert err.startswith(f"kgen: {tmp_path / 'act.kspec'}:8:39: error: "), err
    for needle in needles:
        assert needle in err, err


def test_an_unclosed_call_says_how_to_write_one(tmp_path, capsys):
    rc = main(["check", str(spec_file(tmp_path, "softplus(2, 10"))])
    err = capsys.readouterr().err
    assert rc == 2 and "closed by ')'" in err, err


# ----------------------------------------------------------------------------------------------
# the performance effect (predicted)
# ----------------------------------------------------------------------------------------------

SMALL_K = """\
matmul act {{
    arch     = {arch}
    shape    = 2048 x 2048 x 64              # K = 2 tiles: little math per output tile
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    fuse {{ bias = {bias}  activation = {act} }}
}}
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_gelu_with_small_k_is_pack_bound_where_the_plain_matmul_is_not(tmp_path, capsys, arch):
    def predicted(act):
        path = spec_file(tmp_path, act, arch, text=SMALL_K)
        assert main(["perf", str(path), "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    plain, gelu = predicted("none"), predicted("gelu")
    assert "TRISC2 pack" not in plain["bottleneck"], plain["bottleneck"]
    assert "TRISC2 pack" in gelu["bottleneck"] and "SFPU" in gelu["bottleneck"], gelu["bottleneck"]
    assert gelu["cycles"] > plain["cycles"]


def test_ab_varies_the_activation(tmp_path, capsys):
    """`kgen ab --vary fuse.activation=none,gelu,gelu_fast` shows the accurate GELU slower (pack-bound)
    than the plain matmul and the fast GELU in between or equal."""
    path = spec_file(tmp_path, "none", "wormhole_b0", text=SMALL_K)
    rc = main(["ab", str(path), "--vary", "fuse.activation=none,gelu,gelu_fast", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    us = {r["overrides"]["fuse.activation"]: r["speed"]["microseconds"] for r in data["variants"].values()}
    assert us["gelu"] > us["gelu_fast"] >= us["none"]
