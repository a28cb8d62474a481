"""The performance model on a batched in1 (reuse factory, `broadcast_in1 = false`): every batch's own
in1 is DRAM traffic. The reader of matmul_multicore_reuse_program_factory.cpp (@1e768b71) reads, per core
and per batch, per_core_M x Kt tiles of in0 and Kt x per_core_N of in1 (reader_bmm_tile_layout.cpp's
`batch` loop), and the writer writes per_core_M x per_core_N output tiles per batch."""

from __future__ import annotations

from conftest import example

from kgen.core.costs import load_costs
from kgen.gen.pipeline import run
from kgen.gen.spec import load
from kgen.perf.model import _KernelCost, predict

TILE = 2048


def _dram_bytes(program) -> int:
    costs = load_costs(program.arch.name)
    return sum(_KernelCost(program, k, costs, {}).dram_bytes
               * (k.cores.x1 - k.cores.x0 + 1) * (k.cores.y1 - k.cores.y0 + 1) for k in program.kernels)


def test_every_batchs_in1_is_priced_as_dram_traffic():
    v = run(load(example("attention_qk_batched")), "verified").verified
    B, Mt, Nt, Kt, pcm, pcn, cores = 8, 8, 8, 2, 2, 2, 16
    reads = cores * B * (pcm * Kt + Kt * pcn) * TILE
    writes = B * Mt * Nt * TILE
    assert _dram_bytes(v) == reads + writes
    # the same matmul with one in1 for all batches moves less: in1 read per core once per fused block
    shared = run(load(example("attention_qk_batched"), "broadcast"), "verified").verified
    assert _dram_bytes(shared) < _dram_bytes(v)
    p = predict(v)
    assert p.blocks == B * v.blocking.num_blocks                 # one pipeline step per batch and K-block
    assert p.dram_floor_cycles > 0 and p.cycles >= p.dram_floor_cycles
