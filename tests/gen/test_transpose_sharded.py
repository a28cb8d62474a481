"""transpose_a with an L1-sharded in0: TT-Metal 0.81.1 runs it, and its program computes the wrong product.

The facts (tenstorrent/tt-metal @001cea9a, which the ttnn 0.81.1 wheel matches, and the wheel's kernels):

- matmul_device_operation.cpp's validate has no rule on transpose_a with a sharded in0: for the 2D and 1D
  multicast configs it checks the stored shard's shape (per_core_M == shard_shape[0] / tile height, the
  shard width against in0_block_w or K), the same checks as without the transpose;
- bound_matmul (the wheel's `_ttnncpp.so`) runs a separate ttnn::transpose only before the
  MatmulMultiCore and DRAM-sharded configs; the reuse, 2D and 1D multicast factories get transpose_a;
- those factories give an interleaved in0's reader the transposed strides (in0_tensor_stride_w = Mt,
  in0_tensor_stride_h = 1), but a sharded in0's readers (reader_bmm_tile_layout_in0_sender_padding.cpp
  under IN0_SHARDED, reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp) push the
  shard's tiles in the order they are stored: rows of the stored K x M tensor, no strides at all;
- the compute kernel (in0_transpose_tile, from the transposed tile ttnn gives a transposed in0) transposes
  each in0 tile where it lies.

So TT's program multiplies A~ with A~'s tile (i, j) = A's tile (j, i) (A = S^T for the stored S): A's tiles
mirrored across the diagonal, each one as it is in A. These tests run TT's own kernels with its factory's
args (kgen port-check) on shapes TT's validation accepts (M = K, so the stored shard fits per_core_M and
the shard width rule), and compare with numpy float64: far from S^T B, equal to A~ B within rounding.
kgen keeps its rule ("transpose_a reads in0 interleaved ... (kgen)") rather than build that program.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import kgen.gen.plan as planner
from kgen.core.errors import KgenError
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve
from kgen.proof import tiles as tl

T = 32
CASES = {
    # 1D in1-multicast, in0 height-sharded: stored S (K x M) in 2 shards of 64 x 128 (per_core_M = 2, K = 4)
    "mcast_1d_in1 height": ("mcast_1d_in1", "2 x 1", "in0 = l1_height_sharded  in0_shard = 64 x 128 on 2 x 1"),
    # 2D multicast, in0 block-sharded on 2 x 2: shards of 64 x 64 (per_core_M = 2, shard width 2 tiles)
    "mcast_2d block": ("mcast_2d", "2 x 2", "in0 = l1_block_sharded  in0_shard = 64 x 64 on 2 x 2"),
    # 2D multicast, in0 height-sharded on one column of 2 cores: shards of 64 x 128 (K = in0_block_w = 4)
    "mcast_2d height": ("mcast_2d", "1 x 2", "in0 = l1_height_sharded  in0_shard = 64 x 128 on 1 x 2"),
}


def make(case: str, transpose_a: bool = True):
    dataflow, grid, memory = CASES[case]
    return resolve(parse_text(f"""matmul t {{
    arch = wormhole_b0  shape = 128 x 64 x 128
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}  dataflow = {dataflow}  transpose_a = {str(transpose_a).lower()}
    memory {{ {memory} }}
    compute {{ fp32_dest_acc = true  math_fidelity = HiFi4 }}
}}""", "t.kspec"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_kgen_refuses_transpose_a_on_a_sharded_in0_naming_tts_readers(case):
    with pytest.raises(KgenError) as exc:
        plan(make(case))
    assert exc.value.rule.startswith("transpose_a reads in0 interleaved") and exc.value.rule.endswith("(kgen)")
    assert all(reader.split(" ")[0] in exc.value.message for reader in planner.TT_SHARDED_IN0_READERS)
    plan(make(case, transpose_a=False))         # the same sharded config untransposed plans


def _tile_transposed(s: np.ndarray) -> np.ndarray:
    """Each 32 x 32 tile of `s` transposed where it lies (the compute kernel's in0 transpose stage)."""
    rt, ct = s.shape[0] // T, s.shape[1] // T
    return s.reshape(rt, T, ct, T).transpose(0, 3, 2, 1).reshape(rt * T, ct * T)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_tts_program_multiplies_the_shards_tiles_in_their_stored_order(host_cxx, host_toolchain, tmp_path,
                                                                        monkeypatch, case):
    """With kgen's rule lifted: TT's whole program (its readers, writers and compute kernel, the factory's
    args) runs to the end and writes A~ B, not S^T B."""
    from kgen.gen.build import build
    from kgen.proof.emulate import _encode_tensor, decode_output, make_inputs, tensors_of
    from kgen.proof.portcheck import port_check

    monkeypatch.setattr(planner, "_check_transpose_a_sharded", lambda spec: None)
    spec = make(case)
    p = plan(spec)
    folder = build(spec, tmp_path).path
    manifest = json.loads((folder / "manifest.json").read_text())
    t = {x.name: x for x in tensors_of(manifest)}
    in0 = next(x for x in manifest["io_tensors"] if x["name"] == "in0")
    assert in0["transposed"] and in0["shape"] == [1, 128, 128] and "shard_spec" in in0["memory"]
    pc = port_check(folder, p, seed=5)
    tt = pc.program
    assert tt is not None and tt.status == "ok" and not tt.hazards        # TT's program runs, no hang
    inputs = make_inputs(manifest, 5)
    s, b = (tl.decode_matrix(np.frombuffer(_encode_tensor(t[n], inputs), np.uint8), t[n].data_format,
                             t[n].shape[-2], t[n].shape[-1]).astype(np.float64) for n in ("in0", "in1"))
    got = decode_output(t["out"], tt.out_bytes).astype(np.float64)[:128]
    want = s.T @ b                                                         # ttnn.matmul's transpose(a) @ b
    tt_product = _tile_transposed(s) @ b                                   # A~ B
    # bfloat16 inputs, HiFi4 with fp32 accumulation: the output's rounding plus the accumulation's
    tol = 2 ** -8 * np.abs(tt_product) + 2 ** -10 * (np.abs(s) @ np.abs(b)) + 1e-6
    assert (np.abs(got - tt_product) <= tol).all()
    wrong = np.abs(got - want) > 2 ** -8 * np.abs(want) + 2 ** -10 * (np.abs(s.T) @ np.abs(b)) + 1e-6
    assert wrong.mean() > 0.9, wrong.mean()
    assert not tt.exact_match and pc.program_bit_identical                 # kgen would build that same program
