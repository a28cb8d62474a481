"""kgen tune tries TT-Metal's DRAM-sharded factory where it applies: a decode-sized M of DRAM tensors
(tech_reports/LLMs/llms.md 4.3.2.2: "DRAM-sharded matmul should be used in decode mode"), with the
factory's own placements and its one per_core (all of M; N over every DRAM bank)."""

from __future__ import annotations

from kgen.core.types import Placement
from kgen.gen.spec import parse_text, resolve
from kgen.perf.tune.search import _groups
from kgen.perf.tune.space import search_space


def _spec(m: int, n: int = 11136, k: int = 4096):
    return resolve(parse_text(f"matmul d {{ arch = wormhole_b0  shape = {m} x {n} x {k} "
                              f"dtype {{ in0 = bfloat8_b  in1 = bfloat8_b  out = bfloat8_b }} }}"))


def _dram_sharded_groups(spec):
    return [g for g in _groups(spec, search_space(spec), None) if g.dataflows == ("dram_sharded",)]


def test_decode_m_searches_the_dram_sharded_config():
    groups = _dram_sharded_groups(_spec(32))
    assert groups
    nt, banks = 11136 // 32, 12
    for g in groups:
        assert g.per_core == (1, -(-nt // banks))          # per_core_N_compute = div_up(N, num_dram_banks)
        assert (g.memory.in0, g.memory.in1, g.memory.out) == (
            Placement.L1_WIDTH_SHARDED, Placement.DRAM_WIDTH_SHARDED, Placement.L1_WIDTH_SHARDED)


def test_prefill_m_does_not():
    assert not _dram_sharded_groups(_spec(32 * 8))          # 8 tiles of M: not decode-sized
