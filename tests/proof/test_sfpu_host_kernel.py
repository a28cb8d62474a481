"""TT-Metal 0.81.1's own matmul compute kernel with a fused SFPU activation, in the emulator.

`bmm_large_block_zm_fused_bias_activation.cpp` is compiled unchanged with `-DSFPU_ACTIVATION` and the
named compile-time args TT's factory sets (activation_type, activation_param0..2); its
`apply_activation_from_pack` waits for math's DST section with TTI_SEMWAIT, points the SFPU at the
packer's DST half (TT_SETC16) and runs the activation on every tile of the sub-block before the
pack. Until the spec has `fuse { activation }`, the defines and args are injected here.

The check: the emulated output equals the activation (kgen.proof.sfpu_host, the same LLK code on the
same host SFPU model) applied to the golden model's DST, packed as the packer packs BF16 DST into
BF16 tiles (a value with a zero exponent becomes zero).
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kgen.gen.build import write_artifacts
from kgen.gen.pipeline import run, with_compute_kernel
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve

SPEC = """
matmul act_small {{
    arch     = {arch}
    shape    = 64 x 128 x 64
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid     = 1 x 1
    dataflow = mcast_2d
    block {{ in0_block_w = 2  out_subblock = auto  per_core = auto }}
}}
"""

# KernelActivation values (ttnn/.../matmul/shared_with_host/activation_type.hpp, 0.81.1)
SILU, SIGMOID, HARDTANH = 4, 6, 8


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _with_activation(reference: Path, activation: int, params: tuple[int, int, int]):
    swap = with_compute_kernel(reference)
    named = {"activation_type": activation, **{f"activation_param{i}": p for i, p in enumerate(params)}}

    def rendered(a):
        r = swap(a)
        compute = next(k for k in r.manifest["kernels"] if k["processor"] == "TRISC")
        compute["defines"]["SFPU_ACTIVATION"] = "1"
        extra = "".join(f',{{"{n}",{v}}}' for n, v in named.items())
        files = []
        for f in r.files:
            if f.path == f"jit/{compute['name']}/named_ct_arg_map_generated.h":
                f = replace(f, text=re.sub(r"(#define KERNEL_COMPILE_TIME_ARG_MAP .*)", lambda m: m.group(1) + extra, f.text))
            if f.path == f"jit/{compute['name']}/defines_generated.h":   # a compute kernel's defines
                f = replace(f, text=f.text + "#define SFPU_ACTIVATION 1\n")
            if f.path == "manifest.json":
                data = json.loads(f.text)
                next(k for k in data["kernels"] if k["processor"] == "TRISC")["defines"]["SFPU_ACTIVATION"] = "1"
                f = replace(f, text=json.dumps(data, indent=2) + "\n")
            files.append(f)
        return replace(r, files=tuple(files))
    return rendered


def _face_tiles(matrix: np.ndarray) -> np.ndarray:
    """(R, C) values -> (tiles, 32, 32) in DST's face order, tile rows first."""
    rows, cols = matrix.shape
    t = matrix.reshape(rows // 32, 2, 16, cols // 32, 2, 16).transpose(0, 3, 1, 4, 2, 5)
    return np.ascontiguousarray(t.reshape(-1, 32, 32))


def _from_face_tiles(t: np.ndarray, rows: int, cols: int) -> np.ndarray:
    m = t.reshape(rows // 32, cols // 32, 2, 2, 16, 16).transpose(0, 2, 4, 1, 3, 5)
    return m.reshape(rows, cols)


@pytest.mark.slow
@pytest.mark.parametrize("arch,activation,params", [
    ("wormhole_b0", SILU, (0, 0, 0)),
    ("blackhole", SIGMOID, (0, 0, 0)),
    ("wormhole_b0", HARDTANH, (_f32_bits(-0.25), _f32_bits(0.5), 0)),
])
def test_tt_kernel_with_fused_activation_emulates(host_cxx, host_toolchain, tmp_path, arch, activation, params):
    from kgen.proof.emulate import decode_output, emulate_folder, golden_bytes, make_inputs, tensors_of
    from kgen.proof.sfpu_host import KINDS, run_activation
    from kgen.toolchain.headers import find_headers
    from kgen.core.manifest import load_manifest

    tree, note = find_headers()
    assert tree is not None, note
    spec = resolve(parse_text(SPEC.format(arch=arch)))
    p = plan(spec)
    folder = write_artifacts(run(spec, overrides={"rendered": _with_activation(tree.reference_kernel, activation, params)}),
                             tmp_path).path
    _, manifest = load_manifest(folder)
    inputs = make_inputs(manifest, 7)
    e = emulate_folder(folder, p, seed=7, inputs=inputs)
    assert e.status == "ok" and not e.hazards, (e.deadlock, e.hazards)
    assert not e.exact_match        # the golden model has no activation: the activation changed the output
    # what the activation makes of the golden model's DST (BF16: fp32_dest_acc is off in this spec)
    tensor = next(t for t in tensors_of(manifest) if t.name == "out")
    dst = decode_output(tensor, golden_bytes(p, inputs, tensor, "exact"))
    rows, cols = dst.shape
    act = run_activation(_face_tiles(dst), KINDS[activation], *params, arch=arch,
                         fp32_dest=spec.compute.fp32_dest_acc, approx=spec.compute.math_approx)
    want = _from_face_tiles(act, rows, cols)
    bits = want.view(np.uint32) & 0xffff0000
    bits[(bits & 0x7f800000) == 0] = 0      # the packer's BF16 flush of a zero exponent
    got = decode_output(tensor, e.out_bytes)
    assert np.array_equal(got.view(np.uint32), bits.view(np.uint32))
