"""TT-Metal's reuse program (kgen/gen/dataflow/tt_reuse.py): its reader and writer with the reuse factory's
args, and the whole program on kgen's reuse plans, broadcast and batched in1, bit for bit.

Expected args are written here from matmul_multicore_reuse_program_factory.cpp (tenstorrent/tt-metal
@1e768b71, `reader_desc.emplace_runtime_args` / `writer_desc.emplace_runtime_args`), in the argument
order of the 0.81.1 kernels reader_bmm_tile_layout.cpp (21 args) and writer_bmm_tile_layout.cpp (13).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import example, tt_factory_args

from kgen.gen.build import build
from kgen.gen.plan import plan
from kgen.gen.spec import load
from kgen.gen.dataflow.tt_program import INTERLEAVED_DRAM

TILE = 2048     # bf16


_args = tt_factory_args


def test_batched_reader_and_writer_args_are_the_factorys(tmp_path):
    # attention_qk_batched: B = 8, Mt = Nt = 8, Kt = 2 per batch; per_core 2 x 2 on 4 x 4 cores;
    # in0_block_w 2 (one K-block), subblock 2 x 2; bcast_batch = false
    p, _, args = _args("attention_qk_batched", None, tmp_path)
    B, Mt, Nt, Kt, pcm, pcn, w, sbh, sbw = 8, 8, 8, 2, 2, 2, 2, 2, 2
    assert (p.in0_block_w, p.out_subblock_h, p.out_subblock_w) == (w, sbh, sbw)
    reader, writer = args["reader"], args["writer"]
    assert reader.compile_time_args == (INTERLEAVED_DRAM, TILE, INTERLEAVED_DRAM, TILE)   # TensorAccessorArgs in0, in1
    assert reader.named_compile_time_args == {"cb_in0": 0, "cb_in1": 1}
    assert writer.compile_time_args == (INTERLEAVED_DRAM, TILE) and writer.named_compile_time_args == {"cb_out": 4}
    assert len(reader.runtime_args) == len(writer.runtime_args) == 16
    ox, oy = 3, 2                                           # core (3, 2): output_idx_x = 3, output_idx_y = 2
    assert dict(reader.runtime_args)[(ox, oy)] == (
        {"buffer_address": "in0"}, Kt * pcm * oy, 1, Kt, w, w, pcm, w * pcm,
        {"buffer_address": "in1"}, pcn * ox, 1, Nt, w * Nt, pcn, w, pcn * w,
        Kt // w, Mt * Kt, Kt * Nt, B, 0)                    # num_blocks, MtKt, KtNt, batch, bcast_B
    assert dict(writer.runtime_args)[(ox, oy)] == (
        {"buffer_address": "out"}, ox * pcn + oy * pcm * Nt, 1, Nt, sbw, sbh * Nt,
        sbw, sbh, sbw * sbh, pcn // sbw, pcm // sbh, Mt * Nt, B)


def test_broadcast_in1_is_the_factory_over_the_fused_batch(tmp_path):
    # variant broadcast: the batch fused into M (Mt = 8 x 8 = 64), per_core 16 x 2: B = 1, bcast_B = 1
    p, _, args = _args("attention_qk_batched", "broadcast", tmp_path)
    rt = dict(args["reader"].runtime_args)[(1, 3)]
    assert (p.mt, p.batch_ct) == (64, 1)
    assert rt[1] == 2 * 16 * 3 and rt[9] == 2 * 1 and rt[17:] == (64 * 2, 2 * 8, 1, 1)


@pytest.mark.parametrize("name,variant,why", [("padded_small", "reuse", "padded blocks"),
                                              ("untilize_relu_reuse", None, "ROW_MAJOR"),
                                              ("l1acc_two_blocks", "bias", "bias")])
def test_what_the_factorys_kernels_cannot_run_is_said(tmp_path, name, variant, why):
    spec = load(example(name), variant)
    folder = build(spec, tmp_path / "build").path
    p = plan(spec)
    reason = p.dataflow.tt_unsupported(p, json.loads((folder / "manifest.json").read_text()))
    assert reason is not None and why in reason, reason


def test_batched_golden_is_each_batchs_own_matmul():
    from kgen.proof.golden import golden_from_plan

    p = plan(load(example("attention_qk_batched")))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 256, 64)).astype(np.float32)
    b = rng.standard_normal((8, 64, 256)).astype(np.float32)
    whole = golden_from_plan(p, a, b).values
    for i in (0, 5):
        assert np.array_equal(whole[i * 256:(i + 1) * 256], golden_from_plan(p, a[i], b[i]).values)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64)).reshape(-1, 256)
    assert np.corrcoef(whole.ravel(), ref.ravel())[0, 1] > 0.999


@pytest.mark.parametrize("name,variant", [("attention_qk_batched", None), ("attention_qk_batched", "padded"),
                                          ("attention_qk_batched", "broadcast"), ("l1acc_two_blocks", None)])
@pytest.mark.slow
def test_tt_metal_reuse_program_is_bit_identical(host_cxx, host_toolchain, tmp_path, name, variant):
    """TT-Metal's compute kernel and its reuse factory's reader/writer, unchanged, on kgen's plan: the
    acceptance shape (B = 8, M = N = 256, K = 64, in1 per batch), padded to whole tiles, broadcast, and a
    broadcast reuse plan with two K-blocks."""
    from kgen.proof.portcheck import port_check

    p, folder, _ = _args(name, variant, tmp_path)
    pc = port_check(folder, p, seed=5)
    assert pc.program is not None, pc.program_note
    assert "reuse factory's" in pc.program_note
    assert pc.program.status == "ok" and not pc.program.hazards
    assert pc.program_bit_identical and pc.program.exact_match
    assert pc.passed, pc.failures
    # one read barrier per K-block fewer in TT's reader: the only difference, explained
    diffs = pc.dataflow_differences()
    assert set(diffs) == {"noc_async_read_barrier"}
    blocks = p.num_cores * p.batch_ct * p.num_blocks
    assert diffs["noc_async_read_barrier"]["kgen"] - diffs["noc_async_read_barrier"]["tt_metal"] == blocks
