"""in0 and the output interleaved over the L1 banks (`memory { in0 = l1 }`, `out = l1`; issue #39), as
in1 already was: planned on the factories whose readers and writers take a TensorAccessor built from
each buffer (mcast_2d, reuse, mcast_1d_*), the accessor's ArgConfig without IsDram in kgen's kernels and
in TT-Metal's (0.81.1 reader_bmm_tile_layout_in0_sender_padding.cpp TensorAccessorArgs<28>, the in1
sender/writer's out accessor after in1's and sparsity's, the in1 receiver/writer's at 19,
reader_bmm_tile_layout.cpp / writer_bmm_tile_layout.cpp at 0), the manifest saying where each lives,
the model pricing them at L1 rates, and bit-exact emulation and port-check of each new placement."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import tt_kernels

from kgen.core.types import Placement, is_sharded
from kgen.gen.build import build
from kgen.gen.dataflow.tt_program import INTERLEAVED_DRAM, INTERLEAVED_L1
from kgen.gen.pipeline import run
from kgen.gen.plan import PlanError, plan
from kgen.gen.spec import parse_text, resolve
from kgen.perf.model import predict
from kgen.perf.tune.space import with_placement

L1 = Placement.L1


def _spec(memory: str, dataflow: str = "mcast_2d", grid: str = "2 x 2", shape: str = "64 x 128 x 256",
          extra: str = ""):
    return resolve(parse_text(f"""matmul l1i {{
    arch = wormhole_b0
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}
    dataflow = {dataflow}
    memory {{ {memory} }}
    block {{ in0_block_w = 2 }}
    {extra}
}}""", "l1i.kspec"))


def _built(spec, tmp_path: Path):
    folder = build(spec, tmp_path / "build").path
    return plan(spec), folder, json.loads((folder / "manifest.json").read_text())


def _ct(manifest: dict, kernel: str) -> dict[str, int]:
    k = next(k for k in manifest["kernels"] if k["name"] == kernel)
    return dict(zip(k["compile_time_arg_names"], k["compile_time_args"]))


# ---- planning ---------------------------------------------------------------------------------

def test_interleaved_l1_is_not_sharded():
    assert not is_sharded(Placement.DRAM) and not is_sharded(L1)
    assert all(is_sharded(p) for p in Placement if p not in (Placement.DRAM, L1))


@pytest.mark.parametrize("dataflow, grid", [("mcast_2d", "2 x 2"), ("reuse", "2 x 2"),
                                            ("mcast_1d_in0", "4 x 1"), ("mcast_1d_in1", "2 x 1")])
@pytest.mark.parametrize("memory", ["in0 = l1", "out = l1", "in0 = l1  in1 = l1  out = l1"])
def test_every_interleaved_factory_plans_l1_in0_and_out(dataflow, grid, memory):
    p = plan(_spec(memory, dataflow, grid))
    assert p.memory.in0 == (L1 if "in0" in memory else Placement.DRAM)
    assert p.memory.out == (L1 if "out" in memory else Placement.DRAM)


def test_an_l1_interleaved_tensor_needs_no_whole_shards():
    """kgen's whole-shards rule is for sharded tensors only: an interleaved L1 tensor is dealt page by
    page like a DRAM one, so a shape short of whole tiles and padded blocks plan."""
    p = plan(_spec("in0 = l1  in1 = l1  out = l1", shape="70 x 100 x 256"))
    assert (p.mt, p.nt, p.kt) == (3, 4, 8)
    with pytest.raises(PlanError, match="kgen: sharded tensors in whole shards"):
        plan(_spec("out = l1_block_sharded", shape="70 x 100 x 256"))


def test_untilize_out_takes_an_l1_interleaved_output():
    p = plan(_spec("out = l1", dataflow="reuse", extra="untilize_out = true"))
    assert p.untilize_out and p.memory.out == L1
    with pytest.raises(PlanError, match="a sharded output is tiles"):
        plan(_spec("in0 = l1_block_sharded  out = l1_block_sharded", extra="untilize_out = true"))


def test_the_dram_sharded_factory_refuses_l1_interleaved_in0():
    with pytest.raises(PlanError, match="takes its tensors sharded") as refused:
        plan(_spec("in0 = l1", dataflow="dram_sharded", grid="2 x 1"))
    assert "with dataflow = dram_sharded" in str(refused.value)


def test_the_output_cb_is_not_the_shard():
    """c_4 of an L1-interleaved output holds out blocks as for DRAM (the writer writes each), not the
    whole per-core output as a sharded one does; the writer writes through the out accessor."""
    dram, l1 = plan(_spec("")), plan(_spec("out = l1"))
    assert dram.cb(4).pages == l1.cb(4).pages and dram.cb(4).buffer is None and l1.cb(4).buffer is None


# ---- kernels, TT's args, manifest --------------------------------------------------------------

def test_mcast_2d_accessors_and_manifest(tmp_path):
    p, _, manifest = _built(_spec("in0 = l1  out = l1"), tmp_path)
    tensors = {t["name"]: t for t in manifest["io_tensors"]}
    l1_interleaved = {"buffer_type": "L1", "memory_layout": "INTERLEAVED"}
    assert tensors["in0"]["memory"] == tensors["out"]["memory"] == l1_interleaved and "memory" not in tensors["in1"]
    assert _ct(manifest, "in0_sender")["in0_accessor_config"] == 0
    writer = _ct(manifest, "in1_sender_writer")
    assert (writer["in1_accessor_config"], writer["out_accessor_config"]) == (INTERLEAVED_DRAM, 0)
    assert _ct(manifest, "in1_receiver_writer")["out_accessor_config"] == 0
    tt = tt_kernels(p, manifest)
    # TensorAccessorArgs(in0) at 28, then sparsity's; no IN0_SHARDED, no OUT_SHARDED: interleaved
    assert tt["in0_sender"].compile_time_args[28:30] == (INTERLEAVED_L1, 2048)
    assert "IN0_SHARDED" not in tt["in0_sender"].defines
    sender = tt["in1_sender_writer"].compile_time_args
    assert sender[33:39] == (INTERLEAVED_DRAM, 2048, 0, 0, INTERLEAVED_L1, 2048)
    assert tt["in1_receiver_writer"].compile_time_args[19:21] == (INTERLEAVED_L1, 2048)
    assert not any("OUT_SHARDED" in k.defines for k in tt.values())


def test_reuse_and_mcast_1d_accessors(tmp_path):
    p, _, manifest = _built(_spec("in0 = l1  out = l1", dataflow="reuse"), tmp_path / "reuse")
    tt = tt_kernels(p, manifest)
    assert tt["reader"].compile_time_args == (INTERLEAVED_L1, 2048, INTERLEAVED_DRAM, 2048)
    assert tt["writer"].compile_time_args == (INTERLEAVED_L1, 2048)
    p, _, manifest = _built(_spec("in0 = l1  out = l1", dataflow="mcast_1d_in0", grid="4 x 1"), tmp_path / "1d")
    tt = tt_kernels(p, manifest)
    assert tt["in0_sender"].compile_time_args[28:30] == (INTERLEAVED_L1, 2048)     # the same kernel
    assert tt["in1_sender_writer"].compile_time_args[33:39] == (INTERLEAVED_DRAM, 2048, 0, 0, INTERLEAVED_L1, 2048)


# ---- performance model and tune ----------------------------------------------------------------

def test_the_model_prices_the_plans_own_l1_placement():
    """`memory { in0 = l1  out = l1 }` is priced as predict's placement override prices it: reads and
    writes at L1 rates, no DRAM bytes for those tensors."""
    spec = _spec("", shape="512 x 512 x 512")
    dram = run(spec, "verified").verified
    l1 = run(replace(spec, memory=replace(spec.memory, in0=L1, out=L1)), "verified").verified
    assert predict(l1).cycles == pytest.approx(predict(dram, placement={"in0": "l1", "out": "l1"}).cycles)
    assert predict(l1).dram_floor_cycles < predict(dram).dram_floor_cycles


def test_tune_places_in0_and_out_in_l1():
    spec = with_placement(_spec(""), {"in0": "l1", "out": "l1"})
    assert (spec.memory.in0, spec.memory.in1, spec.memory.out) == (L1, Placement.DRAM, L1)


# ---- emulation and port-check ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("memory, dataflow, grid", [
    ("in0 = l1", "mcast_2d", "2 x 2"),
    ("out = l1", "mcast_2d", "2 x 2"),
    ("in0 = l1  in1 = l1  out = l1", "reuse", "2 x 2"),
    ("in0 = l1  out = l1", "mcast_1d_in1", "2 x 1"),
])
def test_l1_interleaved_emulates_and_port_checks(host_cxx, host_toolchain, tmp_path, memory, dataflow, grid):
    from kgen.proof.emulate import emulate_folder
    from kgen.proof.portcheck import port_check

    spec = _spec(memory, dataflow, grid)
    p, folder, _ = _built(spec, tmp_path)
    e = emulate_folder(folder, p, seed=3)
    assert e.status == "ok" and not e.hazards and e.exact_match, e.deadlock
    pc = port_check(folder, p, seed=5)
    assert pc.theirs.status == "ok" and not pc.theirs.hazards and pc.bit_identical and pc.theirs.exact_match
    assert not pc.unexplained, pc.differences()
    # TT-Metal's whole program: its readers and writers reading and writing the L1 banks
    assert pc.program is not None and not pc.program.hazards, pc.program_note
    assert pc.program_bit_identical and pc.program.exact_match


def test_l1_interleaved_tensors_and_the_cbs_share_each_bank():
    """TT's allocator deals an L1-interleaved tensor's pages round-robin over NUM_L1_BANKS = 64
    Wormhole banks (one per worker) from the top down, and the CBs must end below them. 4096 x 4096
    x 4096 bfloat16 with all three in L1: each takes ceil(16,384 tiles / 64) x 2,048 B = 524,288 B
    of every bank, 1,572,864 B together, more than the 1,393,312 usable: refused. 1024^3: 32,768 B
    each, and the CBs the planner picks leave room for them."""
    big = resolve(parse_text("matmul t {\n arch = wormhole_b0\n shape = 4096 x 4096 x 4096\n"
                             " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }\n"
                             " memory { in0 = l1 in1 = l1 out = l1 }\n dataflow = mcast_2d\n}\n", "t.kspec"))
    with pytest.raises(PlanError, match="L1-interleaved tensors fit each core's L1 bank"):
        plan(big)
    small = resolve(parse_text("matmul t {\n arch = wormhole_b0\n shape = 1024 x 1024 x 1024\n"
                               " dtype { in0 = bfloat16 in1 = bfloat16 out = bfloat16 }\n"
                               " memory { in0 = l1 in1 = l1 out = l1 }\n dataflow = mcast_2d\n}\n", "t.kspec"))
    p = plan(small)
    held = 3 * (1024 // 32) ** 2 // 64 * 2048
    assert held == 98_304 and p.cb_bytes + held <= 1_393_312 == p.arch.usable_cb_bytes
