"""`fuse_batch = false` on the multicast factories: per_core of one batch's Mt, every core looping over
the batch, as TT-Metal 0.81.1's 2D and 1D multicast factories run a MatmulMultiCoreReuseMultiCast(1D)
ProgramConfig with fuse_batch = false, and as ttnn.matmul picks it for a batched matmul with no core
grid (create_simple_matmul_program_config).

The expected values are TT-Metal's, written here from its sources:

- matmul_multicore_reuse_mcast_2d/1d_program_factory.cpp: `B = fuse_batch ? 1 : batch(a)`,
  `Mt = get_M_dim(a, tile, fuse_batch)` (one batch's rows unfused), `bcast_batch = get_batch_size(b) == 1`.
- The 0.81.1 wheel's kernels (ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow/):
  reader_bmm_tile_layout_in0_sender_padding.cpp reads MtKt at CT arg 19 and in0_B, in1_B at 20, 21 and
  steps in0 by MtKt per batch; reader_bmm_tile_layout_in1_sender_writer_padding.cpp reads KtNt, batch,
  bcast_B at 14, 15, 16 and MtNt at 28, steps in1 by KtNt per batch only when bcast_B == 0
  (`if constexpr (bcast_B == 0) in1_tensor_start_tile_id += KtNt`) and the output by MtNt; the in0
  receiver and the in1 receiver/writer read the batch at CT arg 6 (the writer's MtNt at 16).
- matmul_device_operation.cpp (0.81.1 _ttnncpp.so strings): "Matmul with fused batch requires input
  tensors of shapes BCMK*11KN=BCMN", "fuse_batch must be enabled when input A is sharded",
  "Block-sharded output is incompatible with batch > 1 ... when batch fusion is disabled".
"""

from __future__ import annotations

import pytest

from kgen.core.errors import KgenError
from kgen.gen.ir import walk
from kgen.gen.pipeline import run
from kgen.gen.plan import UNFUSED_SHARDED_IN0_RULE, UNFUSED_SHARDED_OUT_RULE, plan
from kgen.gen.spec import parse_text, resolve

B, M, N, K = 3, 96, 128, 64                 # Mt x Nt x Kt = 3 x 4 x 2 tiles per batch
MT, NT, KT = 3, 4, 2

# (dataflow, grid, per_core): the 2D grid pads each batch's Mt = 3 over per_core_M = 2 (its bottom row a
# receiver row); the 1D in0 multicast holds one batch's Mt on each of 4 cores; the 1D in1 multicast splits
# one batch's Mt over 2 cores, the last padded
FORMS = [("mcast_2d", "2 x 2", "2 x 2"), ("mcast_1d_in0", "4 x 1", "3 x 1"), ("mcast_1d_in1", "2 x 1", "2 x 4")]


def spec(dataflow="mcast_2d", grid="2 x 2", per_core="2 x 2", broadcast=True, arch="wormhole_b0", extra="",
         fuse="fuse_batch = false"):
    return resolve(parse_text(f"""matmul t {{
    arch = {arch}  shape = {M} x {N} x {K}  batch = {B}  broadcast_in1 = {str(broadcast).lower()}  {fuse}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}  dataflow = {dataflow}
    block {{ per_core = {per_core}  in0_block_w = 1 }}
    {extra}
}}""", "t.kspec"))


@pytest.mark.parametrize("dataflow,grid,per_core", FORMS)
@pytest.mark.parametrize("broadcast", [True, False])
def test_the_batch_is_looped_over_with_one_batchs_mt(dataflow, grid, per_core, broadcast):
    p = plan(spec(dataflow, grid, per_core, broadcast))
    assert (p.mt, p.nt, p.kt, p.batch_ct) == (MT, NT, KT, B)         # B = batch, Mt of one batch
    assert p.batched_in1 is (not broadcast)                           # bcast_batch = get_batch_size(b) == 1
    pcm, pcn = (int(v) for v in per_core.split(" x "))
    assert p.num_cores == -(-MT // pcm) * -(-NT // pcn)                # the blocks of one batch's tiles


def test_fused_is_the_default_with_a_shared_in1_and_unfused_with_a_batched_one():
    fused = plan(spec(fuse="", per_core="5 x 2"))                        # B * Mt = 9 over 2 rows of cores
    assert (fused.mt, fused.batch_ct) == (B * MT, 1)
    unfused = plan(spec(fuse="", broadcast=False))
    assert (unfused.mt, unfused.batch_ct, unfused.spec.fuse_batch) == (MT, B, None)


def _first_tile(kernel, tensor: str, b: int) -> int:
    for o, loops in walk(kernel.body):
        if o.kind in ("read_tiles", "write_tiles") and o["tensor"] == tensor:
            env = {lp.var: lp.start for lp in loops} | {"b": b, "core_x": 0, "core_y": 0}
            return o["start"].eval(env)
    raise AssertionError(f"{kernel.name} reads no {tensor}")


@pytest.mark.parametrize("broadcast", [True, False])
@pytest.mark.parametrize("b", [0, 1, 2])
def test_each_batch_starts_at_the_factorys_offsets(broadcast, b):
    v = run(spec(broadcast=broadcast), "verified").verified
    in0, in1 = v.kernel("in0_sender"), v.kernel("in1_sender_writer")
    assert _first_tile(in0, "in0", b) == b * MT * KT                            # + b * MtKt
    assert _first_tile(in1, "in1", b) == (0 if broadcast else b * KT * NT)      # + b * KtNt unless bcast_B
    assert _first_tile(in1, "out", b) == b * MT * NT                            # + b * MtNt


@pytest.mark.parametrize("dataflow,grid,per_core", FORMS)
@pytest.mark.parametrize("broadcast", [True, False])
def test_tt_programs_batch_args_are_the_factorys(dataflow, grid, per_core, broadcast):
    artifacts = run(spec(dataflow, grid, per_core, broadcast), "rendered")
    p = artifacts.plan
    ks = p.dataflow.tt_program(p, artifacts.rendered.manifest, {}).kernels
    in0 = ks["in0_sender"].compile_time_args
    assert (in0[19], in0[20], in0[21]) == (MT * KT, B, B)                    # MtKt, in0_B, in1_B
    in1 = ks["in1_sender_writer"].compile_time_args
    assert (in1[14], in1[15], in1[16], in1[28]) == (KT * NT, B, int(broadcast), MT * NT)  # KtNt, B, bcast_B, MtNt
    for name in ("in0_receiver", "in1_receiver_writer"):
        if name in ks:
            assert ks[name].compile_time_args[6] == B
    if "in1_receiver_writer" in ks:
        assert ks["in1_receiver_writer"].compile_time_args[16] == MT * NT


def test_a_fused_batched_in1_is_refused_with_tts_rule_and_the_hint_unfuses_it():
    with pytest.raises(KgenError) as err:
        plan(spec(broadcast=False, fuse="fuse_batch = true"))
    assert "BCMK*11KN=BCMN" in str(err.value) and "fuse_batch = false" in str(err.value.hint)


def test_reuse_unfused_is_tts_reuse_program_with_a_shared_in1():
    p = plan(spec("reuse", "2 x 3", "1 x 2"))                          # the reuse factory: whole blocks
    assert (p.mt, p.batch_ct, p.batched_in1) == (MT, B, False)


def test_transpose_a_reads_each_batchs_k_x_m_when_unfused():
    # TT checks transpose_a against a batch only under fuse_batch (matmul_device_operation.cpp: "transpose_a
    # with fuse_batch is not supported when batch dimensions exist and M_per_batch > 1")
    with pytest.raises(KgenError, match="M_per_batch > 1"):
        plan(spec(fuse="", per_core="5 x 2", extra="transpose_a = true"))
    p = plan(spec(extra="transpose_a = true"))
    v = run(spec(extra="transpose_a = true"), "verified").verified
    assert _first_tile(v.kernel("in0_sender"), "in0", 2) == 2 * MT * KT          # batch 2's stored K x M
    assert p.batch_ct == B


@pytest.mark.parametrize("extra,rule", [
    ("memory { in0 = l1_block_sharded }", UNFUSED_SHARDED_IN0_RULE),
    ("memory { out = l1_block_sharded }", UNFUSED_SHARDED_OUT_RULE)])
def test_tts_refusals_of_an_unfused_batch(extra, rule):
    with pytest.raises(KgenError) as err:
        plan(spec(extra=extra))
    assert getattr(err.value, "rule", None) == rule


def test_a_factory_that_fuses_the_batch_refuses_fuse_batch_false():
    with pytest.raises(KgenError, match="fuses the batch into M"):
        plan(spec("dram_sharded", "auto", "1 x 1", extra="memory { in0 = l1_width_sharded  in1 = dram_width_sharded  "
                                                          "out = l1_width_sharded }"))


def auto(shape: str, batch: int, broadcast: bool = True, arch: str = "wormhole_b0", extra: str = ""):
    return resolve(parse_text(f"""matmul t {{
    arch = {arch}  shape = {shape}  batch = {batch}  broadcast_in1 = {str(broadcast).lower()}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    dataflow = auto
    {extra}
}}""", "t.kspec"))


@pytest.mark.parametrize("shape,batch,broadcast,dataflow,per_core", [
    # create_simple on 8 x 8: 2D over the grid, ceil(Mt / 8) x ceil(Nt / 8) of one batch's Mt = Nt = 16
    ("512 x 512 x 512", 4, True, "mcast_2d", (2, 2)),
    ("512 x 512 x 512", 4, False, "mcast_2d", (2, 2)),
    # a wide shape (N / M > 8): the 1D in0 config, per_core_M = one batch's Mt = 1, ceil(ceil(N / 64) / 32)
    ("32 x 4096 x 256", 2, True, "mcast_1d_in0", (1, 2)),
    # a tall one: the 1D in1 config, ceil(ceil(M / 64) / 32) x Nt
    ("4096 x 32 x 256", 2, False, "mcast_1d_in1", (2, 1)),
])
def test_auto_without_a_core_grid_plans_tts_unfused_choice(shape, batch, broadcast, dataflow, per_core):
    p = plan(auto(shape, batch, broadcast))
    assert p.spec.dataflow == dataflow and p.spec.fuse_batch is False and p.batch_ct == batch
    assert (p.per_core_m, p.per_core_n) == per_core
    assert any(line.startswith("fuse_batch -> false: create_simple_matmul_program_config") for line in p.tt_choice)


def test_auto_with_a_core_grid_keeps_the_batch_fused():
    # create_matmul_program_config (a core grid given) fuses the batch: batch * Mt over the grid's rows
    p = plan(auto("512 x 512 x 512", 4, extra="grid = 8 x 8"))
    assert p.batch_ct == 1 and p.mt == 4 * 16 and p.per_core_m == 8


# ----------------------------------------------------------------------------------------------
# Proof: kgen's program emulated bit-exact, and TT-Metal's own kernels with the factory's args beside it
# ----------------------------------------------------------------------------------------------

def _port_check(s, tmp_path, seed=5):
    from kgen.gen.build import build
    from kgen.proof.portcheck import port_check

    p = plan(s)
    pc = port_check(build(s, tmp_path).path, p, seed=seed)
    assert pc.passed, pc.failures
    assert pc.program is not None and pc.program_bit_identical and pc.program.exact_match
    return p


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
@pytest.mark.parametrize("dataflow,grid,per_core", FORMS)
@pytest.mark.parametrize("broadcast", [True, False])
def test_port_check_runs_tt_programs_over_the_batch(host_cxx, host_toolchain, tmp_path, arch, dataflow, grid,
                                                    per_core, broadcast):
    p = _port_check(spec(dataflow, grid, per_core, broadcast, arch), tmp_path)
    assert p.batch_ct == B


@pytest.mark.slow
def test_port_check_of_reuse_with_a_shared_in1(host_cxx, host_toolchain, tmp_path):
    _port_check(spec("reuse", "2 x 3", "1 x 2"), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("dataflow,grid,per_core,broadcast,arch", [
    ("mcast_2d", "2 x 2", "2 x 2", True, "wormhole_b0"), ("mcast_1d_in1", "2 x 1", "2 x 4", False, "blackhole"),
    ("mcast_1d_in0", "4 x 1", "3 x 1", False, "wormhole_b0")])
def test_port_check_of_transposed_inputs_over_the_batch(host_cxx, host_toolchain, tmp_path, dataflow, grid, per_core,
                                                        broadcast, arch):
    # A stored [B, K, M] in block float (its shared exponents taken again over the transposed rows), B
    # stored [N, K] or [B, N, K]; K = 80 pads the last K tile
    s = resolve(parse_text(f"""matmul t {{
    arch = {arch}  shape = {M} x {N} x 80  batch = {B}  broadcast_in1 = {str(broadcast).lower()}  fuse_batch = false
    transpose_a = true  transpose_b = true
    dtype {{ in0 = bfloat8_b  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}  dataflow = {dataflow}
    block {{ per_core = {per_core}  in0_block_w = 1 }}
}}""", "t.kspec"))
    _port_check(s, tmp_path)


@pytest.mark.slow
def test_port_check_with_a_bias_read_once_over_the_batch(host_cxx, host_toolchain, tmp_path):
    # num_blocks_w_dim == 1: the bias is read for (b == 0 && bh == 0) only and stays resident
    _port_check(spec(extra="fuse { bias = true }"), tmp_path)


# two cases of TT's own corpus (tests/ttnn/unit_tests/benchmarks/matmul_oob/cases.csv), as
# benchmarks/tt_corpus.py writes them: only what the case fixes, dataflow = auto
CORPUS = {
    "t_matmul_893fa6dc5e": ("77 x 64 x 77", "1 x 12", False, "HiFi4", "true", "true", "mcast_2d"),
    "t_matmul_bd344f5d09": ("32 x 64 x 32", "1 x 71", True, "HiFi2", "false", "false", "mcast_1d_in0"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_port_check_of_corpus_cases_with_auto(host_cxx, host_toolchain, tmp_path, case):
    shape, batch, broadcast, fidelity, fp32, l1_acc, dataflow = CORPUS[case]
    s = resolve(parse_text(f"""matmul {case} {{
    arch = wormhole_b0  shape = {shape}  dataflow = auto  batch = {batch}  broadcast_in1 = {str(broadcast).lower()}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    compute {{ math_fidelity = {fidelity}  fp32_dest_acc = {fp32}  packer_l1_acc = {l1_acc}  math_approx = false }}
}}""", "c.kspec"))
    p = _port_check(s, tmp_path)
    assert p.spec.dataflow == dataflow and p.batch_ct > 1 and not p.spec.fuses_batch
