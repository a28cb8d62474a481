"""The DRAM-sharded dataflow against TT-Metal's DRAM-sharded factory
(matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp, tenstorrent/tt-metal@01502698) and
the arch facts it runs on. Every expected value is computed here from TT's rule, quoted beside it,
never read back from kgen's plan."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, example
from kgen.core.arch import load_arch
from kgen.core.types import TILE_HW
from kgen.gen.dataflow import DRAM_SHARDED, GRID_2D, ONE_D, REGISTRY
from kgen.gen.dataflow.dram_sharded import SEMAPHORE_IDS, bank_assignment
from kgen.gen.ir import INVALID, VALID, walk
from kgen.gen.pipeline import run
from kgen.gen.plan import PlanError, plan
from kgen.gen.rules import CB_IN0, CB_IN0_SHARD, CB_IN1, CB_OUT, CB_OUT_SHARD, CB_PARTIALS
from kgen.gen.spec import load, load_file, parse_text, resolve

MEMORY = "memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }"


def make(shape="32 x 384 x 256", arch="wormhole_b0", block="", extra="", memory=MEMORY):
    return resolve(parse_text(
        f"matmul t {{ arch = {arch}  shape = {shape}  dataflow = dram_sharded "
        f"dtype {{ in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }}  {memory}  block {{ {block} }}  {extra} }}"))


# The 0.81.1 wheel's tt_metal/soc_descriptors/*_arch.yaml: dram_views[i].worker_endpoint[0], the NoC 0
# subchannel of dram[channel], in bank order (the DRAM-sharded factory asks for NoC 0). Blackhole's
# banks 1-3 differ from tt-metal@049e2880's dram_preferred_worker_endpoint (0-3, 0-8, 0-6).
WH_ENDPOINTS = [(0, 11), (0, 1), (0, 5), (0, 7), (5, 1), (5, 11), (5, 2), (5, 9), (5, 8), (5, 3), (5, 5), (5, 7)]
BH_ENDPOINTS = [(0, 11), (0, 2), (0, 9), (0, 5), (9, 11), (9, 3), (9, 8), (9, 6)]


def test_bank_to_worker_assignment_is_tts():
    # get_optimal_dram_to_physical_worker_assignment (tt_metal/common/core_assignment.cpp @0266e6f1):
    # "worker cores are placed to the right of the DRAM Controller": x + 1; on Wormhole a bank on row
    # 0 or 6 (no Tensix) moves down one row, on Blackhole to row 2 at least
    wh = [(x + 1, y + 1 if y in (0, 6) else y) for x, y in WH_ENDPOINTS]
    bh = [(x + 1, max(y, 2)) for x, y in BH_ENDPOINTS]
    assert bank_assignment("wormhole_b0") == tuple(wh)
    assert bank_assignment("blackhole") == tuple(bh)
    assert load_arch("wormhole_b0").dram_bank_endpoints == tuple(WH_ENDPOINTS)
    assert load_arch("blackhole").dram_bank_endpoints == tuple(BH_ENDPOINTS)
    # one worker per bank, no two alike (the report's point: no shared route)
    for arch, n in (("wormhole_b0", 12), ("blackhole", 8)):
        workers = bank_assignment(arch)
        assert len(workers) == load_arch(arch).toolchain.num_dram_banks == n and len(set(workers)) == n


def test_example_plans_as_the_factory():
    p = plan(load(example("wh_decode_dram_sharded")))
    mt, kt, nt, banks = 1, 4096 // TILE_HW, 11136 // TILE_HW, 12
    per_core_n = -(-nt // banks)                     # per_core_N_compute = div_up(N, num_dram_banks)
    assert (p.per_core_m, p.per_core_n, p.num_cores) == (mt, per_core_n, banks)
    w = 4
    num_blocks = kt // w                             # num_blocks = K / in0_block_w
    assert (p.in0_block_w, p.num_blocks) == (w, num_blocks)
    # in0_CB_tiles = per_core_M * in0_block_w * 2 (B * num_blocks > 1: double buffer)
    assert p.cb(CB_IN0).pages == mt * w * 2
    # in1_CB_tiles = per_core_N_in1_sender * in0_block_w * 3 (triple buffer)
    assert p.cb(CB_IN1).pages == per_core_n * w * 3
    # in2_CB_tiles = per_core_M * in0_shard_width_in_tiles, on the in0 buffer: Kt over 8 shards
    # (the most workers dividing Kt = 128)
    assert p.cb(CB_IN0_SHARD).pages == mt * (kt // 8) and p.cb(CB_IN0_SHARD).buffer == "in0"
    # get_matmul_subblock_params(1, 29) = 1 x 1 (29 is prime); one tile high and narrower than
    # max_subblock_w = 8: w grows while ceil(29 / w) falls: 8 (4 subblocks), per_core_N_compute = 8 x 4 = 32
    n_compute, sbw = 32, 8
    assert (p.out_subblock_h, p.out_subblock_w, p.per_core_n_compute) == (1, sbw, n_compute)
    assert (p.out_block_h, p.out_block_w, p.num_blocks_w_dim) == (mt, n_compute, 1)
    # last_subblock_w_valid = out_subblock_w - (per_core_N_compute - per_core_N_in1_sender) = 8 - 3
    assert p.last_subblock_w_valid == sbw - (n_compute - per_core_n) == 5
    # out_block_tiles = per_core_M * per_core_N_compute, an ordinary buffer; the output shard
    # (out_reshard, per_core_M x per_core_N_storage) on the output buffer
    assert p.cb(CB_OUT).pages == mt * n_compute and p.cb(CB_OUT).buffer is None
    assert p.cb(CB_OUT_SHARD).pages == mt * per_core_n and p.cb(CB_OUT_SHARD).buffer == "out"
    assert p.cb(CB_PARTIALS).pages == mt * n_compute                # interm0: out_num_entries
    # packer_l1_acc_en = packer_l1_acc && num_blocks > 1
    assert p.l1_acc_enabled is (p.compute.packer_l1_acc and num_blocks > 1)
    # in1 is width-sharded over every bank: shard i is columns i * per_core_N ..
    assert p.shard_specs["out"]["shape"] == (mt * TILE_HW, per_core_n * TILE_HW)
    assert p.shard_specs["in0"]["shape"] == (mt * TILE_HW, kt // 8 * TILE_HW)


def test_one_k_block_is_single_buffered():
    p = plan(make(shape="32 x 384 x 128", block="in0_block_w = 4"))
    # Kt = 4 = in0_block_w: B * num_blocks == 1, no double or triple buffering; one shard holds the block
    assert p.num_blocks == 1 and p.cb(CB_IN0).pages == 4 and p.cb(CB_IN1).pages == 4 * p.per_core_n
    assert p.in0_shards == 1


def test_taller_m_takes_one_k_block_per_shard():
    p = plan(make(shape="64 x 384 x 1024", block="in0_block_w = 4"))
    # per_core_M = 2 > 1: num_blocks_per_shard == 1, so Kt / in0_block_w = 8 shards
    assert (p.per_core_m, p.in0_shards, p.in0_shard_w) == (2, 8, 4)


@pytest.mark.parametrize("arch,nt,workers", [("wormhole_b0", 8, 8), ("wormhole_b0", 20, 10), ("wormhole_b0", 24, 12),
                                             ("blackhole", 16, 8), ("blackhole", 6, 6)])
def test_padding_only_banks_are_dropped(arch, nt, workers):
    # "Remove cores assigned to padding-only DRAM banks": shard width = ceil(Nt / banks); the banks past
    # ceil(Nt / shard width) hold padding only and get no worker
    banks = 12 if arch == "wormhole_b0" else 8
    shard = -(-nt // banks)
    assert workers == banks - (shard * banks - nt) // shard
    p = plan(make(shape=f"32 x {nt * 32} x 256", arch=arch))
    assert (p.per_core_n, p.num_cores) == (shard, workers)


def test_semaphores_are_the_factorys():
    program = run(make(), until="ir").ir
    # in0 sender (INVALID), in0 receiver (INVALID), in0 sender valid (VALID), ids 0, 1, 2
    assert [(s.name, s.id, s.initial) for s in program.semaphores] == [
        ("in0_sender", 0, INVALID), ("in0_receiver", 1, INVALID), ("in0_sender_valid", 2, VALID)]
    assert dict(SEMAPHORE_IDS) == {"in0_sender": 0, "in0_receiver": 1, "in0_sender_valid": 2}


def test_every_worker_reads_only_its_own_banks_columns():
    program = run(make(shape="32 x 768 x 256"), until="ir").ir    # Nt = 24: 2 tiles on each of 12 banks
    reader = next(k for k in program.kernels if k.name == "in1_reader_writer")
    assert reader.processor == "BRISC" and reader.noc == 0     # preferred_noc_for_dram_read
    gathers = [k for k in program.kernels if k.role == "in0_gather"]
    assert len(gathers) == 8 and all(k.processor == "NCRISC" and k.noc == 1 for k in gathers)   # Kt = 8 shards


@pytest.mark.parametrize("kw,rule", [
    (dict(block="per_core = 2 x 3", shape="32 x 384 x 256"), "per_core_M == Mt"),
    # Nt = 12 in 5-tile shards: (60 - 12) // 5 = 9 padding-only banks, 3 workers reading div_up(12, 3) = 4
    (dict(block="per_core = 1 x 5"), r"per_core_N \(in1's shard width\) == div_up\(Nt, workers\)"),
    # Nt = 344 in 28-tile shards needs 13 shards: more than Wormhole's 12 banks
    (dict(shape="32 x 11008 x 4096", block="per_core = 1 x 28"), "need 13 DRAM banks"),
    (dict(shape="32 x 11008 x 4096", block="per_core = 1 x 30"), r"div_up\(Nt, workers\) = 29 tiles of a 30-tile"),
    (dict(shape="64 x 384 x 1024", block="in0_block_w = 1"), "per_core_M > 1 needs one K-block per in0 shard"),
    (dict(shape="64 x 384 x 1024"), "per_core_M > 1 needs one K-block per in0 shard"),
    (dict(extra="fuse.bias = true"), "without a fused bias"),
    (dict(memory=""), "takes its tensors sharded"),
    (dict(memory="memory { in0 = l1_width_sharded  in1 = dram  out = l1_width_sharded }"),
     "takes in0 = l1_width_sharded, in1 = dram_width_sharded"),
])
def test_factory_rules_are_enforced(kw, rule):
    with pytest.raises(PlanError, match=rule):
        plan(make(**kw))


def test_cli_exit_2_names_the_rule(tmp_path):
    # 30-tile shards of Nt = 344: (360 - 344) // 30 = 0 padding-only banks, so 12 workers, each reading
    # div_up(344, 12) = 29 tiles of a K row as one run from a 30-tile bank row: TT would read wrong tiles
    spec = tmp_path / "bad.kspec"
    spec.write_text(f"matmul t {{ arch = wormhole_b0  shape = 32 x 11008 x 4096  dataflow = dram_sharded\n"
                    f"dtype {{ in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }}  {MEMORY}  "
                    f"block {{ per_core = 1 x 30 }} }}\n")
    proc = subprocess.run([sys.executable, "-m", "kgen", "check", str(spec)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "per_core_N_in1_sender = div_up(N, num_workers)" in proc.stderr
    assert "Remove cores assigned to padding-only DRAM banks" in proc.stderr
    # the widths TT reads right, nearest first, that kgen plans: 32 (11 workers) fills no rectangle
    assert "per_core = 1 x 29, 35, 39, 43" in proc.stderr


def test_registered_but_not_drawn_as_a_dram_form():
    # tune and fuzz draw the DRAM-interleaved forms from GRID_2D / ONE_D; this factory takes none
    assert DRAM_SHARDED in REGISTRY and "dram_sharded" not in GRID_2D and "dram_sharded" not in ONE_D


# --- N not divisible by the banks: the factory's padded last shard (the same lines at 01502698 and in
# the file's later Metal 2.0 versions, whose kernel args the 0.81.1 wheel's readers take):
#   in1_shard_width_tiles = in1 shard_spec width / tile width
#   in1_tensor_padded_width_tiles = in1_shard_width_tiles * num_dram_banks
#   if padded > N: only_padding_banks = (padded - N) / in1_shard_width_tiles; TT_FATAL(only_padding_banks <
#       num_dram_banks); those trailing banks' workers are dropped
#   per_core_N_compute = per_core_N_in1_sender = div_up(N, num_workers)
#   in1_block_tiles = per_core_N_in1_sender * in0_block_w, x3 when num_blocks > 1
#   output shards: num_blocks_x = ((N - 1) / per_core_N) + 1 of per_core_N tiles (compute_output_specs)


def _tt_workers(nt, width, banks):
    padded = width * banks
    only_padding = (padded - nt) // width if padded > nt else 0
    assert only_padding < banks                      # "Padding banks count {} must be less than ..."
    return banks - only_padding


def test_llama_11008_plans_as_the_factory_pads_it():
    p = plan(load(example("wh_decode_dram_sharded_11008")))
    nt, kt, banks, w = 11008 // TILE_HW, 4096 // TILE_HW, 12, 4
    width = -(-nt // banks)                          # ttnn's shard of 344 tiles over 12 banks: 29
    workers = _tt_workers(nt, width, banks)
    assert (width, width * banks - nt, workers) == (29, 4, 12)      # 4 padding tiles, no padding-only bank
    per_core_n = -(-nt // workers)                   # per_core_N_in1_sender = div_up(N, num_workers)
    assert per_core_n == width                       # the single reader's run is the shard's row
    assert (p.per_core_m, p.per_core_n, p.num_cores) == (1, per_core_n, workers)
    # the last worker's shard: 344 - 11 x 29 = 25 real columns of 29
    assert p.padded_n and p.last_per_core_n == nt - (workers - 1) * per_core_n == 25
    num_blocks = kt // w
    assert (p.in0_block_w, p.num_blocks) == (w, num_blocks)
    assert p.cb(CB_IN1).pages == per_core_n * w * 3                  # in1_block_tiles x 3 (triple buffer)
    assert p.cb(CB_IN1).pages * p.cb(CB_IN1).page_bytes == 29 * 4 * 3 * 1088      # bfloat8_b tile: 1088 B
    assert p.cb(CB_IN0).pages == 1 * w * 2                           # in0 double-buffered
    assert p.cb(CB_OUT_SHARD).pages == 1 * per_core_n and p.cb(CB_OUT_SHARD).buffer == "out"   # the padded out shard
    # per_core_N_compute = 32 (1 x 8 subblocks, as for 29 above), last_subblock_w_valid = 8 - (32 - 29)
    assert (p.out_subblock_w, p.per_core_n_compute, p.last_subblock_w_valid) == (8, 32, 5)
    assert p.cb(CB_OUT).pages == 32
    # in1: 29-tile shards of all K, one per bank, 12 of them (the last padded by ttnn); the output:
    # num_blocks_x = ((344 - 1) / 29) + 1 = 12 shards of 1 x 29 tiles
    assert p.shard_specs["in1"]["shape"] == (kt * TILE_HW, 29 * TILE_HW)
    assert p.shard_specs["in1"]["grid"] == (0, 0, 11, 0)
    assert ((nt - 1) // per_core_n) + 1 == p.num_cores
    assert p.shard_specs["out"]["shape"] == (TILE_HW, 29 * TILE_HW)
    assert any("25 of per_core_N = 29" in n for n in p.padding_notes)


def test_llama_11008_reader_reads_whole_padded_shards():
    program = run(load(example("wh_decode_dram_sharded_11008")), until="ir").ir
    reader = next(k for k in program.kernels if k.name == "in1_reader_writer")
    reads = [(n, loops) for n, loops in walk(reader.body) if n.kind == "read_bank_tiles"]
    # one read per K-block of in1_block_num_tiles = per_core_N_in1_sender * in0_block_w = 29 * 4 tiles
    # (the factory's compile-time arg), padding columns included on bank 11
    assert len(reads) == 1 and reads[0][0]["tiles"] == 29 * 4
    loop = next(lp for lp in reads[0][1] if lp.var == "block")
    assert (loop.start, loop.stop) == (0, (4096 // TILE_HW) // 4)     # num_blocks = K / in0_block_w


def test_llama_11008_on_8_banks_drops_4_padding_only_banks():
    # "8 banks": the factory starts from all 12 (get_dram_bank_reader_assignments(device, ...)) and only
    # drops trailing banks that hold padding only; 43-tile shards give 43 x 12 - 344 = 172 = 4 x 43
    p = plan(resolve(load_file(example("wh_decode_dram_sharded_11008")), "banks8"))
    nt, banks, width = 344, 12, 43
    workers = _tt_workers(nt, width, banks)
    assert workers == 8 and -(-nt // workers) == width
    assert (p.per_core_n, p.num_cores, p.padded_n) == (width, workers, False)
    # get_matmul_subblock_params(1, 43) = 1 x 1; widened: ceil(43 / w) = 22, 15, 11, 9, 8, 7, 6 for w = 2..8:
    # 1 x 8, per_core_N_compute = 8 x 6 = 48, last_subblock_w_valid = 8 - (48 - 43) = 3
    assert (p.out_subblock_h, p.out_subblock_w, p.per_core_n_compute, p.last_subblock_w_valid) == (1, 8, 48, 3)
    assert p.shard_specs["in1"]["grid"] == (0, 0, 7, 0)
    assert any("DRAM banks 8..11 hold padding only" in n for n in p.padding_notes)


@pytest.mark.parametrize("nt,banks", [(344, 12), (26, 12), (13, 8), (100, 8)])
def test_auto_width_is_ttns_shard_and_every_bank_works(nt, banks):
    # ceil(Nt / banks)-wide shards leave less than one shard of padding: no padding-only bank when Nt >= banks
    from kgen.gen.dataflow.dram_sharded import shard_widths, shard_workers
    width = -(-nt // banks)
    assert shard_workers(nt, width, banks) == _tt_workers(nt, width, banks)
    assert shard_widths(nt, banks)[0] == width
    for w in shard_widths(nt, banks):                # every width kgen takes reads right under TT's rules
        assert -(-nt // _tt_workers(nt, w, banks)) == w


# TT's rule, written out: (per_core_M, per_core_N, fp32_dest_acc) -> (out_subblock_h, out_subblock_w,
# per_core_N_compute). get_matmul_subblock_params(M, N, false, false, fp32) takes the first (h, w) of
# SUBBLOCK_HW_CHOICES dividing M x N (at most 4 tiles with fp32); then, when h == 1 and w < max_subblock_w
# (4 with fp32, else 8), w grows while ceil(N / w) gets strictly smaller, and N_compute = w x ceil(N / w).
@pytest.mark.parametrize("m,n,fp32,expected", [
    (1, 29, False, (1, 8, 32)),          # 29 prime: 1 x 1, widened to 8 over 4 subblocks
    (1, 43, False, (1, 8, 48)),          # 6 subblocks of 8
    (1, 29, True, (1, 4, 32)),           # fp32 dest: max 4, ceil(29 / 4) = 8 subblocks
    (1, 84, False, (1, 8, 88)),          # 84: 1 x 7 (12 subblocks), 8 needs 11
    (1, 5, False, (1, 5, 5)),            # 1 x 5 then ceil(5 / w) = 1 for every wider w: not fewer
    (1, 16, False, (1, 8, 16)),          # already 1 x 8: nothing to widen
    (2, 4, False, (2, 4, 4)),            # a taller subblock is left alone
    (1, 1, False, (1, 1, 1)),
])
def test_the_subblock_is_the_factorys(m, n, fp32, expected):
    from kgen.gen.dataflow.dram_sharded import factory_subblock

    assert factory_subblock(m, n, fp32) == expected


def test_fp32_dest_takes_at_most_4_wide_subblocks():
    p = plan(make(shape="32 x 11136 x 4096", block="per_core = 1 x 29  in0_block_w = 4",
                  extra="compute { fp32_dest_acc = true }"))
    # max_subblock_w = 4: 29 -> 1 x 4 over ceil(29 / 4) = 8 subblocks, 32 tiles, the last 4 - 3 = 1 lane real
    assert (p.out_subblock_w, p.per_core_n_compute, p.last_subblock_w_valid) == (4, 32, 1)


def test_the_compute_kernel_narrows_the_last_subblock_and_the_writer_drops_the_padding():
    program = run(load(example("wh_decode_dram_sharded")), until="ir").ir
    compute = next(k for k in program.kernels if k.name == "compute")
    args = dict(compute.compile_time_args)
    # the factory's compute args: in1_block_w = per_core_N_in1_sender (in1's row stride), in1_num_subblocks
    # = per_core_N_compute / out_subblock_w, out_block_num_tiles = per_core_M * per_core_N_compute
    assert (args["in1_block_w"], args["in1_num_subblocks"], args["out_block_num_tiles"]) == (29, 32 // 8, 32)
    assert args["in1_block_num_tiles"] == 29 * 4
    assert dict(compute.named_compile_time_args)["last_subblock_w_valid"] == 5
    assert ("MATMUL_DRAM_SHARDED", "1") in compute.defines
    assert [a.name for a in compute.runtime_args] == ["is_worker_core"]
    widths = {int(n["ct"]) for n, _ in walk(compute.body) if n.kind == "matmul_block"}
    assert widths == {8, 5}                      # full subblocks and the narrowed last one
    assert all(int(n["tiles"]) == 8 for n, _ in walk(compute.body) if n.kind == "pack_block")   # packed whole
    writer = next(k for k in program.kernels if k.name == "in1_reader_writer")
    (copy,) = [n for n, _ in walk(writer.body) if n.kind == "copy_shard"]
    # per_core_M rows of per_core_N_storage tiles out of rows per_core_N_compute wide into the shard
    assert (copy["cb"], copy["src_cb"], copy["rows"], copy["cols"], copy["row_stride"]) == (CB_OUT_SHARD, CB_OUT, 1, 29, 32)


@pytest.mark.parametrize("block,rule", [
    ("in0_block_w = 4  out_subblock = 1 x 1", "chooses the subblock itself"),
    ("in0_block_w = 4  out_block = 1 x 16", "out_block = per_core"),
])
def test_an_explicit_blocking_other_than_the_factorys_is_refused(block, rule):
    with pytest.raises(PlanError, match=rule):
        plan(make(shape="32 x 11136 x 4096", block=f"per_core = 1 x 29  {block}"))


def test_a_taller_subblock_that_splits_the_row_is_refused():
    # per_core 2 x 6: get_matmul_subblock_params(2, 6) = 2 x 3 (the first of SUBBLOCK_HW_CHOICES dividing
    # both, at most 8 tiles), two subblocks per row. The compute kernel packs c_4 subblock by subblock; the
    # factory's writer copies it into the output shard one tile row of per_core_N_compute tiles at a time
    # (out_tensor_stride_w_bytes), which is the same order only for h = 1 or w = per_core_N_compute.
    with pytest.raises(PlanError, match="output copy: out_subblock_h == 1 .. out_subblock_w == per_core_N_compute"):
        plan(make(shape="64 x 2304 x 1024", block="per_core = 2 x 6  in0_block_w = 4"))


def test_the_factorys_own_subblock_may_be_written():
    p = plan(make(shape="32 x 11136 x 4096", block="per_core = 1 x 29  in0_block_w = 4  out_subblock = 1 x 8"))
    assert (p.out_subblock_w, p.per_core_n_compute) == (8, 32)


def test_a_fused_activation_runs_over_the_padded_lanes_too():
    # TT's kernel applies the SFPU activation to the whole subblock (apply_activation_from_pack(out_subblock_
    # num_tiles)), padded lanes included. fp32 dest: get_matmul_subblock_params(1, 5) = 1 x 1 (1 x 5 is over
    # 4 tiles), widened to 1 x 3 (ceil(5 / 3) = 2 < 5; 4 needs 2 as well): per_core_N_compute 6, valid 3 - 1
    spec = make(shape="32 x 160 x 320", block="per_core = 1 x 5  in0_block_w = 10",
                extra="fuse { activation = tanh }  compute { fp32_dest_acc = true }")
    a = run(spec, "verified")
    p = a.plan
    assert (p.out_subblock_w, p.per_core_n_compute, p.last_subblock_w_valid) == (3, 6, 2)
    compute = next(k for k in a.ir.kernels if k.name == "compute")
    assert {int(n["tiles"]) for n, _ in walk(compute.body) if n.kind == "activation_apply"} == {3}
