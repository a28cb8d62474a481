"""TT-Metal's DRAM-sharded program (kgen/gen/dataflow/tt_dram_sharded.py, kgen/proof/ttmetal2.py): the Metal 2.0
named bindings the factory declares for its two readers, the headers TT-Metal's JIT generates from them,
and the whole program on a kgen dram_sharded plan, bit for bit.

Expected values are written here from matmul_multicore_reuse_mcast_dram_sharded_program_factory.cpp
(`create_program_dram_sharded_spec`: the `in0_sender` and `in1_sender_writer` KernelSpecs' compile_time_args
and runtime_arg_schema, the per-core AddRuntimeArgsForNode values and varargs) and
dram_sharded_helpers::get_max_page_size_and_num_pages; the generated headers' spelling from TT-Metal's
JIT (tt_metal/jit_build/genfiles.cpp) and the 0.81.1 experimental/kernel_args.h.
"""

from __future__ import annotations

import json

from kgen.gen.build import build
from kgen.gen.plan import plan
from kgen.gen.spec import parse_text, resolve
from kgen.gen.dataflow.tt_dram_sharded import factory_workers, max_page_size_and_num_pages, metal2_kernels
from kgen.proof.ttmetal2 import args_header, bindings_header

# The smallest DRAM-sharded matmul on Wormhole's 12 banks: Nt = 12 (one tile per bank, 12 workers on
# kgen's 6 x 2 rectangle), Kt = 4 in four in0 shards of one tile, in0_block_w = 1: four K-blocks.
SMALL = """matmul ds_small {
    arch = wormhole_b0
    shape = 32 x 384 x 128
    dtype { in0 = bfloat16  in1 = bfloat8_b  out = bfloat16 }
    dataflow = dram_sharded
    memory { in0 = l1_width_sharded  in1 = dram_width_sharded  out = l1_width_sharded }
    block { in0_block_w = 1 }
}"""
BF16, BFP8 = 2048, 1088          # tile bytes; a bfloat8_b tile is 34 DRAM alignments of 32 B on Wormhole
NOC = {"worker_x_offset": 1, "worker_y_offset": 1}


def _small(tmp_path):
    spec = resolve(parse_text(SMALL, "ds_small.kspec"))
    folder = build(spec, tmp_path / "build").path
    return plan(spec), folder, json.loads((folder / "manifest.json").read_text())


def _bound(p, manifest):
    return metal2_kernels(p, manifest, NOC, {"in0": BF16, "in1": BFP8, "out": BF16})


def test_in1_page_is_the_largest_tile_multiple_within_a_burst():
    # get_max_page_size_and_num_pages: 8192 B bursts on Wormhole, 16384 on Blackhole
    assert max_page_size_and_num_pages(1, BFP8, 8192) == (BFP8, 1)
    assert max_page_size_and_num_pages(29 * 4, BFP8, 8192) == (4 * BFP8, 29)     # 7, 6, 5 tiles do not divide 116
    assert max_page_size_and_num_pages(29 * 4, BFP8, 16384) == (4 * BFP8, 29)
    assert max_page_size_and_num_pages(8, BF16, 8192) == (4 * BF16, 2)


def test_workers_and_a_padded_last_shard_are_the_factorys():
    # in1 is sharded per_core_N tiles wide over every bank; banks holding padding only are dropped:
    # workers = banks - (banks * width - Nt) // width
    assert factory_workers(344, 12, 29) == 12           # N = 11008: the last shard 25 of 29 tiles, padded
    assert factory_workers(344, 12, 43) == 8            # ... 43 wide: banks 8..11 hold padding only
    assert factory_workers(348, 12, 29) == 12
    assert factory_workers(12, 12, 1) == 12
    assert factory_workers(10, 12, 1) == 10             # two banks would hold padding only
    assert factory_workers(64, 12, 6) == 11             # 72 - 64 = 8 padded tiles: one whole bank dropped
    assert factory_workers(5, 12, 2) == 3               # 24 - 5 = 19 padded tiles: nine banks dropped
    assert factory_workers(344, 8, 43) == 8             # Blackhole's 8 banks


def test_the_decode_example_writes_back_over_per_core_n_compute(tmp_path):
    from kgen.gen.spec import load
    from conftest import example

    p = plan(load(example("wh_decode_dram_sharded")))
    folder = build(load(example("wh_decode_dram_sharded")), tmp_path / "build").path
    manifest = json.loads((folder / "manifest.json").read_text())
    k = metal2_kernels(p, manifest, NOC, {"in0": BFP8, "in1": BFP8, "out": BFP8})["in1_reader_writer"]
    # per_core_N_in1_sender = 29, widened to per_core_N_compute = 32 (1 x 8 subblocks): the out block is
    # per_core_M x 32 tiles, its rows 32 tiles apart; the shard's rows and the write-back 29 tiles
    cta = dict(k.named_cta)
    assert (cta["in1_block_w"], cta["in1_block_num_tiles"]) == (29, 29 * 4)
    assert (cta["out_block_num_tiles"], cta["out_tensor_stride_w_bytes"]) == (32, 32 * BFP8)
    assert cta["out_reshard_tensor_stride_w_bytes"] == 29 * BFP8
    assert {varargs[0] for _, _, varargs in k.runtime} == {29 * BFP8}


def test_in0_sender_named_args_are_the_factorys(tmp_path):
    p, _, manifest = _small(tmp_path)
    assert (p.grid, p.num_cores, p.in0_shards, p.num_blocks) == ((6, 2), 12, 4, 4)
    k = _bound(p, manifest)["in0_gather_2"]
    assert k.source == "reader_bmm_tile_layout_in0_sender_dram_sharded.cpp"
    assert dict(k.named_cta) == {
        "in0_block_num_tiles": 1, "in0_block_size_bytes": BF16, "in0_last_ktile_w": 0, "in0_last_ktile_h": 0,
        "in0_mcast_num_dests": 12, "in0_mcast_num_cores": 12, "num_blocks": 4,
        # in0 on NOC_1 (preferred_noc_for_dram_write): the rectangle's corners swapped
        "in0_mcast_dest_noc_start_x": 6, "in0_mcast_dest_noc_start_y": 2,
        "in0_mcast_dest_noc_end_x": 1, "in0_mcast_dest_noc_end_y": 1,
        "num_blocks_per_shard": 1, "in0_block_w": 1, "shards_per_block": 1, "in0_shard_width_bytes": BF16}
    assert k.rta_names == ("worker_core_type", "sender_id", "is_last_ktile_padded")
    (core, named, varargs), = k.runtime
    # storage core 2 computes too: worker_core_type 2; the varargs: storage cores' NoC x, then NoC y
    assert core == (2, 0) and named == {"worker_core_type": 2, "sender_id": 2, "is_last_ktile_padded": 0}
    assert varargs == (1, 2, 3, 4, 1, 1, 1, 1)
    assert dict(k.dfbs) == {"in0": 0} and dict(k.sems) == {"in0_mcast_sender": 0, "in0_mcast_receiver": 1}
    assert [t.name for t in k.tensors] == ["in0_shard"] and k.tensors[0].address == {"l1_shard_address": "in0"}
    receivers = _bound(p, manifest)["in0_gather_receiver_rows"]
    assert {named["worker_core_type"] for _, named, _ in receivers.runtime} == {3}


def test_in1_sender_writer_named_args_are_the_factorys(tmp_path):
    p, _, manifest = _small(tmp_path)
    k = _bound(p, manifest)["in1_reader_writer"]
    assert k.source == "reader_bmm_tile_layout_in1_sender_dram_sharded.cpp"
    assert dict(k.named_cta) == {
        "in1_page_size": BFP8, "in1_num_pages": 1, "in1_block_w": 1, "in1_block_num_tiles": 1, "num_blocks": 4,
        "out_block_num_tiles": 1, "out_tensor_stride_w_bytes": BF16, "out_reshard_tensor_stride_w_bytes": BF16,
        "per_core_M": 1, "workers_per_bank": 1, "bank_row_stride_tiles": 1, "reader_width_tiles": 1}
    assert dict(k.defines) == {"OUT_SHARDED": "1", "SKIP_MCAST": "1"}
    rt = {core: (named, varargs) for core, named, varargs in k.runtime}
    # worker i = row-major index reads bank i; vc = bank & 3, bumped when an earlier worker on the same
    # row has the same bank & 3: worker 10 (core (4, 1)) meets worker 6's 2 and takes 3
    assert rt[(1, 1)][0] == {"is_worker_core": 1, "dram_bank_id": 7, "vc": 3, "dram_reader_index": 0,
                             "num_shard_to_write_back": 1, "reshard_tensor_start_offset": 0}
    assert rt[(4, 1)][0]["dram_bank_id"] == 10 and rt[(4, 1)][0]["vc"] == 3
    assert rt[(2, 0)][0]["vc"] == 2
    # one write-back triple: per_core_N_storage bytes to its own output shard's core
    assert rt[(4, 1)][1] == (BF16, 5, 2)
    assert [(t.name, t.dram, t.sharded) for t in k.tensors] == [("in1", True, True), ("out_shard", False, True)]
    assert dict(k.dfbs) == {"in1": 1, "out": 4}


def test_generated_headers_are_spelled_as_tt_metals_jit(tmp_path):
    p, _, manifest = _small(tmp_path)
    k = _bound(p, manifest)["in1_reader_writer"]
    args, bindings = args_header(k), bindings_header(k)
    assert '#include "experimental/kernel_args.h"' in args
    # RTAs at byte offsets in schema order; CTAs by value, sorted by name; varargs after the named words
    assert "constexpr ::experimental::RtaArg<uint32_t> is_worker_core{0};" in args
    assert "constexpr ::experimental::RtaArg<uint32_t> reshard_tensor_start_offset{20};" in args
    assert args.index("bank_row_stride_tiles{1u}") < args.index("in1_block_num_tiles{1u}")
    assert "get_arg_val<uint32_t>(6 + idx)" in args and "get_common_arg_val<uint32_t>(2 + idx)" in args
    assert "constexpr DFBBindingToken in1{1};" in bindings and "constexpr DFBBindingToken out{4};" in bindings
    # tensor tokens: accessor args from positional CTA 0 and 2, base addresses in common args 0 and 1
    assert "using in1_t = ::tensor_accessor::TensorBindingToken<0u, 0u>;" in bindings
    assert "using out_shard_t = ::tensor_accessor::TensorBindingToken<2u, 4u>;" in bindings
    sems = bindings_header(_bound(p, manifest)["in0_gather_0"])
    assert "constexpr SemaphoreBindingToken in0_mcast_receiver{1u, SemScope::LOCAL_NONATOMIC};" in sems


def test_the_compute_kernel_is_the_factorys_metal2_one_with_its_named_args(tmp_path):
    from kgen.gen.dataflow.tt_dram_sharded import compute

    p, _, manifest = _small(tmp_path)
    (k,) = [k for k in manifest["kernels"] if k["name"] == "compute"]
    c = compute(p, k)
    assert c.source == "bmm_large_block_zm_fused_bias_activation_metal2.cpp"
    assert dict(c.dfbs) == {"in0": 0, "in1": 1, "out": 4, "intermed0": 5}
    assert c.rta_names == ("is_worker_core",) and {named["is_worker_core"] for _, named, _ in c.runtime} == {1}
    assert c.defines["MATMUL_DRAM_SHARDED"] == "1" and c.defines["PACKER_L1_ACC"] == "1"   # num_blocks 4 > 1
    # the factory's compute CTAs: one K-block of 1 tile, 4 blocks, a 1 x 1 subblock, nothing padded
    assert {n: c.named_cta[n] for n in ("in0_block_w", "num_blocks_inner_dim", "num_blocks_w_dim", "num_blocks_h_dim",
                                        "out_subblock_w", "last_subblock_w_valid", "batch")} == {
        "in0_block_w": 1, "num_blocks_inner_dim": 4, "num_blocks_w_dim": 1, "num_blocks_h_dim": 1,
        "out_subblock_w": 1, "last_subblock_w_valid": 1, "batch": 1}


def test_the_output_shard_is_its_own_region(tmp_path):
    # the factory's out DFB is an ordinary buffer; out_reshard (tensor::out_shard) is the output's own L1
    _, _, manifest = _small(tmp_path)
    cbs = manifest["cbs"]
    out = [cb for cb in cbs if any(fd["buffer_index"] == 4 for fd in cb["format_descriptors"])]
    assert len(out) == 1 and "globally_allocated" not in out[0]
    shard = [cb for cb in cbs if cb.get("globally_allocated") == "out"]
    assert [fd["buffer_index"] for cb in shard for fd in cb["format_descriptors"]] == [7]


def test_tt_metal_dram_sharded_program_is_bit_identical(host_cxx, host_toolchain, tmp_path):
    from kgen.proof.portcheck import port_check

    p, folder, _ = _small(tmp_path)
    pc = port_check(folder, p, seed=3)
    assert pc.program is not None, pc.program_note
    assert "DRAM-sharded factory's Metal 2.0" in pc.program_note
    assert pc.program_note.startswith("bmm_large_block_zm_fused_bias_activation_metal2.cpp")   # the factory's compute
    assert pc.program.status == "ok" and not pc.program.hazards
    assert pc.program_bit_identical and pc.program.exact_match
    assert pc.passed, pc.failures
    diffs = pc.dataflow_differences()
    # TT's write-back into the output shard: one write per worker (per_core_M = 1); kgen's copies with reads
    assert diffs["noc_async_write"] == {"kgen": 0, "tt_metal": 12, "explanation": diffs["noc_async_write"]["explanation"]}
    # one multicast per K-block in TT's; kgen's 4 senders at (0..3, 0) reach the 6 x 2 rectangle in
    # 2 + 3 + 3 + 3 rectangles (below; left; right)
    assert (diffs["noc_async_write_multicast"]["kgen"], diffs["noc_async_write_multicast"]["tt_metal"]) == (11, 4)



def test_tt_metal_program_with_padded_lanes_is_bit_identical(host_cxx, host_toolchain, tmp_path):
    from kgen.proof.portcheck import port_check

    # Nt = 132 over 12 banks: per_core_N_in1_sender = 11; get_matmul_subblock_params(1, 11) = 1 x 1, widened
    # while ceil(11 / w) falls (6, 4, 3, 3, 2, 2, 2 for w = 2..8): 1 x 6, per_core_N_compute = 12,
    # last_subblock_w_valid = 6 - (12 - 11) = 5
    spec = resolve(parse_text(SMALL.replace("32 x 384 x 128", "32 x 4224 x 128"), "ds_padded.kspec"))
    p = plan(spec)
    assert (p.per_core_n, p.out_subblock_w, p.per_core_n_compute, p.last_subblock_w_valid) == (11, 6, 12, 5)
    folder = build(spec, tmp_path / "build").path
    pc = port_check(folder, p, seed=5)
    assert pc.program is not None, pc.program_note
    assert pc.bit_identical and pc.program_bit_identical and pc.program.exact_match
    assert pc.passed, pc.failures
