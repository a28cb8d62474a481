"""Transposed inputs: ttnn.matmul's transpose_a / transpose_b, as TT-Metal 0.81.1 runs them.

The facts, from TT-Metal 0.81.1 (the wheel's kernels under ttnn/cpp/ttnn/operations/matmul/device/kernels,
its `_ttnncpp.so` strings, and the factories' source: reuse_optimized_descriptor.cpp,
matmul_multicore_reuse_mcast_2d_program_factory.cpp):

- ttnn.matmul(a, b, transpose_a, transpose_b) computes transpose(a) @ transpose(b) over the last two dims:
  a stored K x M, b stored N x K;
- the reuse, 2D and 1D multicast factories read the stored tensors with swapped tile strides:
  in0_tensor_stride_w = transpose_a ? Mt : 1, in0_tensor_stride_h = transpose_a ? 1 : Kt,
  in1_tensor_stride_w = transpose_b ? Kt : 1, in1_tensor_stride_h = transpose_b ? 1 : Nt;
- the compute kernel transposes each in0 tile into cb_in0_transposed (c_10, as large as c_0, in0's
  format) when its compile-time arg 17 (in0_transpose_tile) is set, and each in1 tile through
  matmul_block's transpose flag under the define IN1_TRANSPOSE_TILE;
- bound_matmul runs a separate ttnn::transpose before the DRAM-sharded factory;
- "transpose_a with fuse_batch is not supported when batch dimensions exist and M_per_batch > 1".

The numbers an emulation is compared with are numpy float64's of the stored tensors' transposes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgen.core.errors import KgenError
from kgen.gen.lower import compute_compile_time_args, compute_defines, lower
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve
from kgen.proof import tiles as tl

M, N, K = 96, 160, 128          # 3 x 5 x 4 tiles


def spec(extra: str, dataflow: str = "mcast_2d", shape: str = f"{M} x {N} x {K}", dtype: str = "bfloat16"):
    return resolve(parse_text(f"""
matmul t {{
    arch = wormhole_b0  shape = {shape}
    dtype {{ in0 = {dtype}  in1 = {dtype}  out = bfloat16 }}
    grid = 2 x 2  dataflow = {dataflow}
    block {{ in0_block_w = 2 }}
    {extra}
}}""", "t.kspec"))


def test_the_keys_default_to_no_transpose():
    s = spec("")
    assert (s.transpose_a, s.transpose_b) == (False, False)
    s = spec("transpose_a = true  transpose_b = true")
    assert (s.transpose_a, s.transpose_b) == (True, True)


@pytest.mark.parametrize("dataflow", ["mcast_2d", "reuse"])
def test_the_compute_kernel_gets_tts_arg_17_and_define(dataflow):
    a = plan(spec("transpose_a = true", dataflow))
    b = plan(spec("transpose_b = true", dataflow))
    assert dict(compute_compile_time_args(a))["in0_transpose_tile"] == 1
    assert list(compute_compile_time_args(a))[17] == ("in0_transpose_tile", 1)     # TT's positional arg 17
    assert dict(compute_compile_time_args(b))["in0_transpose_tile"] == 0
    assert ("IN1_TRANSPOSE_TILE", "1") in compute_defines(b)
    assert ("IN1_TRANSPOSE_TILE", "1") not in compute_defines(a)


def test_c10_is_sized_as_c0_in_in0s_format():
    p = plan(spec("transpose_a = true", dtype="bfloat8_b"))
    cbs = {c.index: c for c in p.cbs}
    assert 10 in cbs and cbs[10].name == "cb_in0_transposed"
    assert (cbs[10].pages, cbs[10].data_format, cbs[10].page_bytes) == (cbs[0].pages, cbs[0].data_format,
                                                                        cbs[0].page_bytes)
    assert 10 not in {c.index for c in plan(spec("transpose_b = true")).cbs}


def _reads(p, tensor):
    prog = lower(p)
    out = []

    def walk(nodes):
        for n in nodes:
            if hasattr(n, "body"):
                walk(n.body)
            elif n.kind == "read_tiles" and n["tensor"] == tensor:
                out.append(n)
    for k in prog.kernels:
        walk(k.body)
    return out


@pytest.mark.parametrize("dataflow", ["mcast_2d", "reuse"])
def test_the_readers_step_as_tts_strides(dataflow):
    p = plan(spec("transpose_a = true  transpose_b = true", dataflow))
    mt, nt, kt = p.mt, p.nt, p.kt
    for o in _reads(p, "in0"):      # block rows over M, columns over K: stride_h = 1, stride_w = Mt
        assert (o["row_stride"], o["col_stride"]) == (1, mt)
    for o in _reads(p, "in1"):      # block rows over K, columns over N: stride_h = 1, stride_w = Kt
        assert (o["row_stride"], o["col_stride"]) == (1, kt)
    q = plan(spec("", dataflow))
    assert all((o["row_stride"], o.get("col_stride")) == (kt, None) for o in _reads(q, "in0"))
    assert all((o["row_stride"], o.get("col_stride")) == (nt, None) for o in _reads(q, "in1"))


def test_the_manifest_holds_the_stored_shapes():
    from kgen.gen.pipeline import run

    files = {f.path: f.text for f in run(spec("transpose_a = true  transpose_b = true")).rendered.files}
    io = {t["name"]: t for t in json.loads(files["manifest.json"])["io_tensors"]}
    assert io["in0"]["shape"] == [1, K, M] and io["in0"]["transposed"] is True
    assert io["in1"]["shape"] == [N, K] and io["in1"]["transposed"] is True
    assert io["out"]["shape"] == [1, M, N] and "transposed" not in io["out"]


def test_the_dram_sharded_factory_is_refused_naming_tts_separate_transpose():
    extra = "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }"
    with pytest.raises(KgenError, match="separate ttnn::transpose"):
        plan(spec(f"transpose_b = true  {extra}", "dram_sharded"))


def test_transpose_a_with_a_fused_batch_is_refused_with_tts_rule():
    s = resolve(parse_text(f"""
matmul t {{
    arch = wormhole_b0  shape = {M} x {N} x {K}  batch = 2
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = 2 x 2  transpose_a = true
}}""", "t.kspec"))
    with pytest.raises(KgenError, match="M_per_batch > 1"):
        plan(s)


@pytest.mark.slow
@pytest.mark.parametrize("dataflow,extra,dtype", [
    ("mcast_2d", "transpose_a = true  transpose_b = true  fuse { bias = true  activation = relu }", "bfloat16"),
    ("mcast_2d", "transpose_b = true  transpose_mcast = true", "bfloat8_b"),
    ("reuse", "transpose_a = true", "bfloat8_b"),
    ("mcast_2d", "transpose_a = true", "float32"),
    ("mcast_1d_in0", "transpose_a = true  transpose_b = true  block { per_core = 7 x 2 }", "bfloat16"),
    ("mcast_1d_in1", "transpose_b = true  block { per_core = 2 x 5 }", "bfloat8_b"),
])
def test_the_emulated_kernels_compute_the_transposes_product(host_cxx, tmp_path, dataflow, extra, dtype):
    from kgen.gen.build import build
    from kgen.proof.emulate import _encode_tensor, decode_output, emulate_folder, make_inputs, tensors_of

    extra += "  compute { fp32_dest_acc = true  math_fidelity = HiFi4 }"
    s = spec(extra, dataflow, shape="200 x 150 x 100", dtype=dtype)     # padded M, N and K
    p = plan(s)
    folder = build(s, tmp_path).path
    manifest = json.loads((folder / "manifest.json").read_text())
    inputs = make_inputs(manifest, seed=3)
    e = emulate_folder(folder, p, seed=3, inputs=inputs)
    assert e.status == "ok" and not e.hazards and e.exact_match
    t = {x.name: x for x in tensors_of(manifest)}
    # the device tensors as ttnn holds them (stored K x M / N x K when transposed), decoded from their bytes
    stored = {n: tl.decode_matrix(np.frombuffer(_encode_tensor(t[n], inputs), np.uint8), t[n].data_format,
                                  t[n].shape[-2], t[n].shape[-1]).astype(np.float64) for n in ("in0", "in1")}
    a = stored["in0"].T if s.transpose_a else stored["in0"]
    b = stored["in1"].T if s.transpose_b else stored["in1"]
    want = a @ b
    size = np.abs(want)
    if s.fuse_bias:     # the bias add runs in the source registers' TF32: rounding of both operands
        bias = inputs.bias.astype(np.float64)[None, :]
        size = size + np.abs(bias)
        want = np.maximum(want + bias, 0)
    got = decode_output(t["out"], e.out_bytes).astype(np.float64)[: want.shape[0]]
    m, n = 200, 150
    # HiFi4 with fp32 accumulation: the bfloat16 output's rounding (2^-8 relative) plus the FPU's
    # accumulation, within 2^-10 of sum |a||b| (the same bound holds untransposed; a transpose gone wrong
    # errs by the size of the products); a bfp8_b A is blocked again over its transposed rows by the
    # transpose stage: one bfp8_b rounding of each of A's values, 2^-7 of its block's largest, so at most
    # 2^-6 x max|A| x sum|B| of a column
    mag = np.abs(a) @ np.abs(b)
    extra_err = 2 ** -10 * mag
    if dtype == "bfloat8_b" and s.transpose_a:
        extra_err = extra_err + 2 ** -6 * np.abs(a).max() * np.abs(b).sum(axis=0)[None, :]
    tol = 2 ** -8 * np.abs(want) + (2 ** -10 * size if s.fuse_bias else 0) + extra_err + 1e-6
    assert (np.abs(got - want)[:m, :n] <= tol[:m, :n]).all(), np.abs(got - want)[:m, :n].max()
