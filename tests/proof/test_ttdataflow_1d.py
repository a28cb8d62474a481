"""TT-Metal's readers/writers in the places and with the args of its 1D multicast factory
(kgen/gen/dataflow/tt_mcast.py), and its whole program on kgen's 1D plans, bit for bit.

Expected args are computed here from the legacy builders of
matmul_multicore_reuse_mcast_1d_program_factory.cpp (tt-metal @00629f0f,
process_mcast_in0_program_and_create_override_variables / process_mcast_in1_...), in the argument
layout of the 0.81.1 kernels (reader_bmm_tile_layout_in0_sender_padding.cpp,
_in0_receiver.cpp, _in1_sender_writer_padding.cpp, _in1_receiver_writer_padding.cpp).
"""

from __future__ import annotations

import json
import subprocess
import sys
import os

import pytest
from conftest import ROOT, tt_factory_args

from kgen.gen.dataflow.tt_program import INTERLEAVED_DRAM

TILE = 2048     # bf16


_args = tt_factory_args


def test_mcast_in0_args_are_the_factorys(tmp_path):
    # mcast_1d_in0_small: Mt 2, Nt 32, Kt 8 (K = 256); per_core 2 x 4 on 4 x 2 cores; out_block 2 x 4,
    # subblock 2 x 4, in0_block_w 2 -> 4 K-blocks; semaphores in0 sender 0, receiver 1
    p, _, args = _args("mcast_1d_in0_small", None, tmp_path)
    Mt, Nt, Kt, pcm, pcn, obh, obw, sbh, sbw, w, nb = 2, 32, 8, 2, 4, 2, 4, 2, 4, 2, 4
    cores = 8
    sender = args["in0_sender"]
    assert sender.compile_time_args == (
        1, Kt, w, obh * Kt, w, obh, obh * w, 0, 0, 0, 0, 0,     # strides, block, last K tile w/h, no shard
        nb, 1, 1, 0, 1, cores - 1, cores - 1,                  # blocks; semaphores; num_dests, num_cores
        Mt * Kt, 1, 1, 0, 0, 0, 1, 0, 0,                       # MtKt, B, B, no reuse/sparsity, bcast_A, fuse_op
        INTERLEAVED_DRAM, TILE, 0, 0, 0)
    assert sender.named_compile_time_args == {"cb_in0": 0, "cb_in0_sharded": 2, "cb_l1_array": 6,
                                              "cb_sparsity": 6, "num_active": 0}
    assert sender.defines == {}
    # the rectangle: the bounding box (0,0)-(3,1), end first on the in0 NOC (NOC 1); last_block_h = out_block_h
    assert dict(sender.runtime_args)[(0, 0)] == ({"buffer_address": "in0"}, 0, {"noc_x": 3}, {"noc_y": 1},
                                                 {"noc_x": 0}, {"noc_y": 0}, obh, 0)
    for name, cores_of in (("in0_receiver", [(1, 0), (2, 0), (3, 0)]), ("in0_receiver_rows", [(0, 1), (3, 1)])):
        r = args[name]
        assert r.compile_time_args == (obh * w, nb, 1, 1, 0, 1, 1, 0)
        for core in cores_of:
            assert dict(r.runtime_args)[core] == ({"noc_x": 0}, {"noc_y": 0})      # the top-left sender
    in1 = args["in1_sender_writer"]
    ct = in1.compile_time_args
    assert ct[:19] == (1, Nt, w * Nt, obw, obw, w, obw * w, nb, 1, 1, 0, 0, 0, 0, Kt * Nt, 1, 1, 0, 0)
    assert ct[19:29] == (1, Nt, sbw, sbh * Nt, obw, obh * Nt, sbw, sbh, sbw * sbh, Mt * Nt)
    assert ct[29:] == (0, 0, 0, 0, INTERLEAVED_DRAM, TILE, 0, 0, INTERLEAVED_DRAM, TILE)
    assert in1.defines == {"SKIP_MCAST": "1"}
    # core (1, 1) is core i = 5: in1 column block 5, output tiles from 5 * per_core_N; no padding
    assert dict(in1.runtime_args)[(1, 1)] == (
        {"buffer_address": "in1"}, 5 * pcn, 0, 0, 0, 0, 0, {"buffer_address": "out"}, 5 * pcn,
        obw, obh // sbh, sbh, 0, obw // sbw, obw // sbw, sbw, 0, 0, 0, 0, 1)


def test_mcast_in0_padding_args_are_the_factorys(tmp_path):
    # variant m_padded: per_core 3 x 4 with Mt = 2 -> in0_last_per_core_M = 2, in0_last_out_block_h = 2 of 3;
    # out_subblock auto on a 3 x 4 block: (3, 2) is SUBBLOCK_HW_CHOICES' first fit
    p, _, args = _args("mcast_1d_in0_small", "m_padded", tmp_path)
    obh, obw, sbh, sbw = 3, 4, p.out_subblock_h, p.out_subblock_w
    assert (p.out_block_h, p.out_block_w) == (obh, obw)
    last_obh = 2 % obh or obh                                              # 2
    nonzero_h = (last_obh - 1) // sbh + 1
    last_sbh = last_obh % sbh or sbh
    h_skip = (obh // sbh - nonzero_h) * (obw * sbh)
    assert dict(args["in0_sender"].runtime_args)[(0, 0)][6] == last_obh
    # every core's writer gets the M padding: it is the one M-block
    for core, rt in args["in1_sender_writer"].runtime_args:
        assert rt[10:13] == (nonzero_h, last_sbh, h_skip), core
    # variant padded: Nt = 32 = 6 x 5 + 2 over 7 cores in a row; per_core_N 5, out_block_w 5
    p, _, args = _args("mcast_1d_in0_small", "padded", tmp_path)
    obw, sbw = p.out_block_w, p.out_subblock_w
    assert (p.grid, p.per_core_n, obw) == ((7, 1), 5, 5)
    last_obw = 2 % obw or obw                                              # 2
    nonzero_w = (last_obw - 1) // sbw + 1
    last_sbw = last_obw % sbw or sbw
    rt = dict(args["in1_sender_writer"].runtime_args)
    last = rt[(6, 0)]
    assert last[9] == last_obw and last[13:18] == (obw // sbw, nonzero_w, last_sbw, TILE * (sbw - last_sbw),
                                                   sbw * p.out_subblock_h * (obw // sbw - nonzero_w))
    assert last[20] == (2 - 1) // obw + 1 and rt[(5, 0)][9] == obw


def test_mcast_in1_args_are_the_factorys(tmp_path):
    # mcast_1d_in1_small: Mt 32, Nt 2, Kt 8; per_core 4 x 2 on 4 x 2 cores; out_block 4 x 2, subblock 4 x 2
    p, _, args = _args("mcast_1d_in1_small", None, tmp_path)
    Mt, Nt, Kt, pcm, obh, obw, sbh, sbw, w, nb = 32, 2, 8, 4, 4, 2, 4, 2, 2, 4
    cores = 8
    in0 = args["in0_sender"]
    assert in0.compile_time_args[:19] == (1, Kt, w, obh * Kt, w, obh, obh * w, 0, 0, 0, 0, 0, nb, 1, 1, 0, 0, 0, 0)
    assert in0.defines == {"SKIP_MCAST": "1"} and "cb_l1_array" not in in0.named_compile_time_args
    # core (2, 1) is core i = 6: in0 rows from M-block 6; last_block_h = per_core_M on every core
    assert dict(in0.runtime_args)[(2, 1)] == ({"buffer_address": "in0"}, 6 * pcm * Kt, 0, 0, 0, 0, pcm, 0)
    send = args["in1_sender_writer"]
    assert send.compile_time_args[10:14] == (0, 1, cores - 1, cores - 1)      # semaphores 0, 1; dests
    assert send.defines == {}
    # in1 on NOC 0: the rectangle (0,0)-(3,1) start first; the sender writes M-block 0; last_x is always true
    assert dict(send.runtime_args)[(0, 0)] == (
        {"buffer_address": "in1"}, 0, {"noc_x": 0}, {"noc_y": 0}, {"noc_x": 3}, {"noc_y": 1}, 0,
        {"buffer_address": "out"}, 0, obw, obh // sbh, sbh, 0, obw // sbw, obw // sbw, sbw, 0, 0, 0, 0, 1)
    for name in ("in1_receiver_writer", "in1_receiver_writer_rows"):
        r = args[name]
        assert r.compile_time_args == (obw * w, nb, 1, 1, 0, 1, 1, 1, Nt, sbw, sbh * Nt, obw, obh * Nt, sbw, sbh,
                                       sbw * sbh, Mt * Nt, 0, 0, INTERLEAVED_DRAM, TILE)
    # core (3, 1) is core i = 7, the last: output tiles from 7 * per_core_M * Nt
    assert dict(args["in1_receiver_writer_rows"].runtime_args)[(3, 1)] == (
        {"noc_x": 0}, {"noc_y": 0}, {"buffer_address": "out"}, 7 * pcm * Nt,
        obh // sbh, obh // sbh, sbh, 0, obw // sbw, obw // sbw, sbw, 0, 0, 1, 1)


@pytest.mark.parametrize("name,variant", [
    ("mcast_1d_in0_small", None), ("mcast_1d_in0_small", "bias"), ("mcast_1d_in0_small", "two_blocks"),
    ("mcast_1d_in0_small", "padded"), ("mcast_1d_in0_small", "m_padded"),
    ("mcast_1d_in1_small", None), ("mcast_1d_in1_small", "bias"), ("mcast_1d_in1_small", "row"),
    ("mcast_1d_in1_small", "padded"),
])
@pytest.mark.slow
def test_tt_metal_1d_program_is_bit_identical(host_cxx, host_toolchain, tmp_path, name, variant):
    """TT-Metal's compute kernel and its 1D factory's readers/writers, unchanged, on kgen's plan."""
    from kgen.proof.portcheck import port_check

    p, folder, _ = _args(name, variant, tmp_path)
    pc = port_check(folder, p, seed=5)
    assert pc.program is not None, pc.program_note
    assert "1D multicast" in pc.program_note
    assert pc.program.status == "ok" and not pc.program.hazards
    assert pc.program.exact_match and pc.program_bit_identical and pc.passed, pc.failures
    assert all(proc["finished"] for proc in pc.program.processors)
    ours, theirs = pc.dataflow_op_counts(pc.ours), pc.dataflow_op_counts(pc.program)
    for op in ("noc_async_read", "noc_async_write", "noc_async_write_multicast", "noc_semaphore_set_multicast"):
        assert theirs.get(op, 0) == ours.get(op, 0), op


@pytest.mark.slow
def test_port_check_of_a_1d_example_through_the_cli(host_cxx, host_toolchain):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "kgen", "port-check", "examples/mcast_1d_in1_small.kspec", "--json"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["passed"] and out["program"]["bit_identical"]
