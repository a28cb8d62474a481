"""Batch rank above 3: an in0 of rank 4 to 8 (`batch = B1 x B2`, ... up to six leading dims), folded as
ttnn.matmul 0.81.1 folds it.

The facts, from TT-Metal (tenstorrent/tt-metal) and the 0.81.1 wheel's `_ttnncpp.so`:

- every factory and the automatic config take the batch as `get_batch_size(padded shape)`, the product
  of every dim but the last two (matmul_utilities.cpp, matmul_program_config.cpp @001cea9a: `B *
  Mt`, `batch_size_a * m_size`), so a rank-4 matmul runs the program of its rank-3 fold;
- `bcast_batch` is `get_batch_size(b) == 1` (matmul_device_operation.cpp `get_broadcast_batch`);
- a non-broadcast matmul needs in0 and in1 of the same rank ("Batched (non-bcast) matmul requires
  inputs of the same rank, got a_shape rank: {} vs b_shape rank: {}") and equal batch dims ("bmm
  (non-bcast matmul) expects input tensors of shapes BCMK*BCKN=BCMN or batch dimension {} mismatch"),
  both strings of `MatmulDeviceOperation::validate_on_program_cache_miss` in the wheel;
- with fuse_batch (the 2D and 1D multicast factories) B's batch must be 1 ("Matmul with fused batch
  requires input tensors of shapes BCMK*11KN=BCMN", `validate_matmul_mcast_fuse_batch_preamble`);
- the output keeps in0's leading dims (`compute_matmul_output_shape`): [..., M, N].

The numbers a test compares with are numpy's (float64 np.matmul of the original-rank tensors).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from kgen.core.errors import KgenError, SpecError
from kgen.gen.pipeline import run
from kgen.gen.plan import BATCHED_IN1_RULE, plan
from kgen.gen.spec import parse_text, resolve
from kgen.gen.spec_print import format_spec

M, N, K = 64, 96, 128


def spec(batch: str, dataflow: str = "reuse", broadcast: bool = True, extra: str = ""):
    return resolve(parse_text(f"""
matmul r {{
    arch = wormhole_b0  shape = {M} x {N} x {K}  batch = {batch}  broadcast_in1 = {str(broadcast).lower()}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = 2 x 2  dataflow = {dataflow}
    {extra}
}}""", "r.kspec"))


def tt_batch_size(shape: tuple[int, ...]) -> int:
    """TT's get_batch_size: the product of every dim but the last two."""
    return int(np.prod(shape[:-2], dtype=np.int64))


@pytest.mark.parametrize("batch,dims", [("2 x 3", (2, 3)), ("2 x 3 x 4", (2, 3, 4)), ("1 x 1", (1, 1)),
                                        ("1 x 7 x 1", (1, 7, 1)), ("2 x 1 x 3 x 1 x 2 x 1", (2, 1, 3, 1, 2, 1))])
def test_the_leading_dims_fold_into_ttnns_batch(batch, dims):
    s = spec(batch)
    assert s.batch_dims == dims and s.batch_shape == dims
    assert s.batch == tt_batch_size((*dims, M, K))


def test_a_rank_3_spec_is_as_before():
    s = spec("6")
    assert s.batch == 6 and s.batch_dims == () and s.batch_shape == (6,)


@pytest.mark.parametrize("batch,dataflow,broadcast", [
    ("2 x 3", "reuse", False), ("2 x 3", "reuse", True), ("2 x 3 x 2", "mcast_2d", True),
    ("3 x 1 x 2", "mcast_1d_in1", True), ("2 x 2", "mcast_1d_in0", True),
    ("2 x 1 x 1 x 3 x 1 x 1", "reuse", False)])                        # rank 8, TT's largest
def test_a_rank_4_to_8_matmul_plans_as_its_rank_3_fold(batch, dataflow, broadcast):
    # TT's factories see B = get_batch_size only: the same program as `batch = B`
    extra = "block { per_core = 2 x 3 }" if dataflow == "reuse" and not broadcast else ""
    high = spec(batch, dataflow, broadcast, extra)
    folded = spec(str(high.batch), dataflow, broadcast, extra)
    a, b = plan(high), plan(folded)
    keys = ("mt", "nt", "kt", "batch_ct", "grid", "per_core_m", "per_core_n", "in0_block_w", "out_block_h",
            "out_block_w", "out_subblock_h", "out_subblock_w", "num_blocks", "policy", "batched_in1")
    assert {k: getattr(a, k) for k in keys} == {k: getattr(b, k) for k in keys}
    assert replace(high, batch_dims=()) == folded


def _tensors(s) -> dict:
    files = {f.path: f.text for f in run(s).rendered.files}
    return {t["name"]: t for t in json.loads(files["manifest.json"])["io_tensors"]}


def test_the_manifest_keeps_the_users_rank():
    t = _tensors(spec("2 x 3", broadcast=True))
    assert t["in0"]["shape"] == [2, 3, M, K] and t["out"]["shape"] == [2, 3, M, N]
    assert t["in1"]["shape"] == [K, N]                             # broadcast: one in1, BCMK*11KN
    b = _tensors(spec("2 x 3 x 2", broadcast=False, extra="block { per_core = 2 x 3 }"))
    # ttnn's rules for a non-broadcast matmul: in1 of in0's rank, the same batch dims
    assert len(b["in1"]["shape"]) == len(b["in0"]["shape"]) == 5
    assert b["in1"]["shape"][:-2] == b["in0"]["shape"][:-2] == [2, 3, 2]
    assert b["in1"]["shape"][-2:] == [K, N] and b["out"]["shape"] == [2, 3, 2, M, N]


def test_a_batched_in1_with_a_fused_batch_is_refused_with_tts_rule():
    with pytest.raises(KgenError) as err:
        plan(spec("2 x 3", "mcast_2d", broadcast=False, extra="fuse_batch = true"))
    assert getattr(err.value, "rule", None) == BATCHED_IN1_RULE


@pytest.mark.parametrize("batch,words", [
    ("2 x 1 x 1 x 1 x 1 x 1 x 2", "rank 9"), ("0 x 3", "must be positive"), ("64 x 128", "batch of 8192"),
    ("2.5", "whole number"), ("-2 x 3", "must be positive")])
def test_what_kgen_does_not_take_is_a_one_paragraph_error(batch, words):
    with pytest.raises(SpecError) as err:
        spec(batch)
    assert words in err.value.message and "\n" not in err.value.message


def test_the_printer_writes_the_dims_back():
    s = spec("2 x 3 x 4", broadcast=False)
    again = resolve(parse_text(format_spec(s), "<printed>"))
    assert again.batch_dims == (2, 3, 4) and again.batch == 24


def test_check_json_and_text_name_the_dims():
    from kgen.gen.plan_report import format_plan, plan_to_dict

    p = plan(spec("2 x 3", broadcast=False, extra="block { per_core = 2 x 3 }"))
    d = plan_to_dict(p)
    assert d["shape_elements"]["batch"] == 6 and d["shape_elements"]["batch_dims"] == [2, 3]
    assert "in0 2 x 3 x 64 x 128" in " ".join(format_plan(p, width=200).split())
    assert "batch_dims" not in plan_to_dict(plan(spec("6", broadcast=False, extra="block { per_core = 2 x 3 }")))[
        "shape_elements"]


@pytest.mark.slow
@pytest.mark.parametrize("batch,broadcast", [("2 x 3", False), ("2 x 1 x 2", True), ("1 x 2 x 1 x 1 x 2 x 1", False)])
def test_the_emulated_result_is_numpys_matmul_of_the_original_rank_tensors(host_cxx, tmp_path, batch, broadcast):
    from kgen.gen.build import build
    from kgen.proof.emulate import (
        decode_output,
        emulate_folder,
        make_inputs,
        tensors_of,
    )

    s = spec(batch, broadcast=broadcast, extra=("" if broadcast else "block { per_core = 2 x 3 }")
             + "  compute { math_fidelity = HiFi4  fp32_dest_acc = true }")
    p = plan(s)
    folder = build(s, tmp_path).path
    manifest = json.loads((folder / "manifest.json").read_text())
    inputs = make_inputs(manifest, seed=5)
    e = emulate_folder(folder, p, seed=5, inputs=inputs)
    assert e.status == "ok" and not e.hazards and e.exact_match
    dims = s.batch_dims
    # the original-rank tensors: in0 [*dims, M, K], in1 [*dims, K, N] (or [K, N] broadcast)
    a = inputs.in0.astype(np.float64).reshape(*dims, M, K)
    b = inputs.in1.astype(np.float64).reshape(*(dims if not broadcast else ()), K, N)
    want = np.matmul(a, b)                                          # [*dims, M, N]
    out = next(t for t in tensors_of(manifest) if t.name == "out")
    got = decode_output(out, e.out_bytes).astype(np.float64).reshape(*dims, M, N)
    assert list(want.shape) == next(t["shape"] for t in manifest["io_tensors"] if t["name"] == "out")
    # bfloat16 output of a HiFi4, fp32-accumulated matmul: within bfloat16's rounding of the result
    assert np.abs(got - want).max() <= 2 ** -7 * np.abs(want).max()
