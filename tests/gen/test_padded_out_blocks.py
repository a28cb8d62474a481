"""A last core whose out blocks past its last tiles lie entirely outside the tensor (issue #39 item 4).

TT-Metal 0.81.1's kernels (the wheel's reader_bmm_tile_layout_in0_sender_padding.cpp,
reader_bmm_tile_layout_in1_sender_writer_padding.cpp, reader_bmm_tile_layout_in1_receiver_writer_padding.cpp):

- the readers skip rows / columns past the tensor only in a core's last out block
  (`bh < num_blocks_h_dim - 1 || h < last_block_h`, `bw < num_blocks_w_dim - 1 || w < last_block_w`):
  every earlier block, whole padded ones included, is read in full, past the tensor;
- the in1 sender/writer writes only `bw < num_blocks_w_dim_` (num_blocks_w_dim_ = last_num_blocks_w_dim
  from the block it names on), the receiver/writer only `bh < num_blocks_h_dim_ && bw < num_blocks_w_dim_`;
  the sender/writer has no last_num_blocks_h_dim: it writes every h-block;
- the factories give those args: the 2D one last_out_num_blocks_w / _h to the last column / row
  (matmul_multicore_reuse_mcast_2d_program_factory.cpp), the 1D mcast_in0 one last_out_num_blocks_w to its
  last core and, along M, only the last h-block's padding (in0_last_out_block_h of `M < per_core_M ? M :
  per_core_M`) to every core (matmul_multicore_reuse_mcast_1d_program_factory.cpp, @00629f0f).

So TT builds (and writes correctly) a whole padded out block along N on both factories and along M on the
2D factory's rows below the top; along M on mcast_in0 its writer writes the whole h-blocks past the output.
"""

from __future__ import annotations

import pytest

from kgen.gen.dataflow.tt_mcast import FactoryValues
from kgen.gen.pipeline import run
from kgen.gen.plan import PlanError, plan
from kgen.gen.spec import parse_text, resolve


def make(dataflow="mcast_2d", shape="200 x 280 x 256", grid="3 x 3", per_core="3 x 4", out_block="1 x 2",
         arch="wormhole_b0", extra=""):
    return resolve(parse_text(f"""matmul t {{
    arch = {arch}
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid = {grid}
    dataflow = {dataflow}
    block {{ per_core = {per_core}  out_block = {out_block}  in0_block_w = 2  out_subblock = 1 x 1 }}
    compute {{ math_fidelity = HiFi2  packer_l1_acc = true }}
    {extra}
}}""", "t.kspec"))


def test_mcast_2d_plans_whole_padded_blocks_along_m_and_n():
    # Mt = 7 over per_core_M = 3: the bottom row holds 1 row, out_block_h = 1 leaves it 2 whole blocks past
    # M; Nt = 9 over per_core_N = 4: the right column holds 1 column, out_block_w = 2 leaves 1 whole block
    p = plan(make())
    assert (p.last_per_core_m, p.num_blocks_h_dim, p.last_per_core_n, p.num_blocks_w_dim) == (1, 3, 1, 2)


def test_tt_writers_last_block_counts_are_the_factorys():
    """last_out_num_blocks_h/w = (last_per_core - 1) / out_block + 1, the blocks a last core writes."""
    artifacts = run(make(), "rendered")
    f = FactoryValues.of(artifacts.plan, artifacts.rendered.manifest)
    assert (f.last_nbh, f.last_nbw) == ((1 - 1) // 1 + 1, (1 - 1) // 2 + 1) == (1, 1)
    program = artifacts.plan.dataflow.tt_program(artifacts.plan, artifacts.rendered.manifest, {})
    # the receiver/writer of the bottom-right core (2, 2): its last two runtime args
    rt = dict(program.kernels["in1_receiver_writer"].runtime_args)[(2, 2)]
    assert rt[-2:] == (1, 1)


def test_mcast_1d_in1_plans_a_padded_last_core():
    # Mt = 10 over per_core_M = 3: 4 cores, the last holds 1 row; out_block_h = 1 leaves it 2 blocks past M,
    # which its receiver/writer skips (last_out_num_blocks_h = 1)
    p = plan(make("mcast_1d_in1", "300 x 100 x 256", "3 x 2", "3 x 4", "1 x 4"))
    assert (p.num_cores, p.last_per_core_m, p.num_blocks_h_dim) == (4, 1, 3)


def test_mcast_1d_in1_on_one_core_takes_an_m_tail_as_tt_does():
    """One core (num_blocks_y == 1), Mt = 3 over per_core_M = 4: TT's single-Y sender/writer takes the tail
    with out_block_h = per_core_M (one internal H block; with several, M % out_block_h == 0 and the tail in
    the final block cannot both hold while M < per_core_M), not otherwise ("a single-Y
    mcast_in1 sender supports a partial final H block only with one internal H block", and "... requires
    the logical M tail to be in the final internal H block", strings of the 0.81.1 _ttnncpp.so)."""
    p = plan(make("mcast_1d_in1", "96 x 64 x 256", "7 x 1", "4 x 2", "4 x 2"))
    assert (p.num_cores, p.mt, p.last_per_core_m, p.num_blocks_h_dim) == (1, 3, 3, 1)
    with pytest.raises(PlanError) as exc:
        plan(make("mcast_1d_in1", "96 x 64 x 256", "7 x 1", "4 x 2", "2 x 2"))      # 3 % 2, 2 H blocks
    assert "a single-Y mcast_in1 sender supports a partial final H block only" in exc.value.message
    with pytest.raises(PlanError) as exc:
        plan(make("mcast_1d_in1", "64 x 64 x 256", "7 x 1", "4 x 2", "2 x 2"))      # Mt = 2: a whole block past M
    assert "pad only a core's last out block" in exc.value.message


def test_mcast_1d_in0_plans_whole_padded_blocks_along_n():
    # Nt = 32 over per_core_N = 6: 6 cores, the last holds 2 columns; out_block_w = 2 leaves it 2 blocks past N
    p = plan(make("mcast_1d_in0", "50 x 1000 x 256", "3 x 2", "2 x 6", "2 x 2"))
    assert (p.last_per_core_n, p.num_blocks_w_dim) == (2, 3)


@pytest.mark.parametrize("kw, words", [
    # mcast_in0 along M: every core's one M-block; Mt = 2 over per_core_M = 3 with out_block_h = 1
    (dict(dataflow="mcast_1d_in0", shape="50 x 1000 x 256", grid="3 x 2", per_core="3 x 6", out_block="1 x 2"),
     "pad only a core's last out block"),
    # mcast_in1 along N: TT refuses ("mcast_in1 requires the logical N tail to be in the final internal W block")
    (dict(dataflow="mcast_1d_in1", shape="320 x 100 x 256", grid="3 x 2", per_core="2 x 6", out_block="2 x 2"),
     "pad only a core's last out block"),
])
def test_the_rule_stays_where_tt_cannot_skip_whole_blocks(kw, words):
    with pytest.raises(PlanError) as exc:
        plan(make(**kw))
    assert words in exc.value.message


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["wormhole_b0", "blackhole"])
@pytest.mark.parametrize("kw", [
    dict(),                                                                   # 2D: M and N
    dict(extra="fuse { bias = true }"),
    dict(extra="transpose_mcast = true"),
    dict(shape="192 x 32 x 256", grid="1 x 2", per_core="5 x 1", out_block="1 x 1"),   # in0 past the end of every tensor
    dict(dataflow="mcast_1d_in0", shape="50 x 1000 x 256", grid="3 x 2", per_core="2 x 6", out_block="2 x 2",
         extra="fuse { bias = true }"),
    # mcast_in1, Mt = 10 over per_core_M = 3: the 4th core holds 1 row, 2 whole h-blocks past M
    dict(dataflow="mcast_1d_in1", shape="300 x 100 x 256", grid="3 x 2", per_core="3 x 4", out_block="1 x 4",
         extra="fuse { bias = true }"),
    # mcast_in1 on one core, Mt = 3 over per_core_M = 4 (TT's in0 reader reads all 4 rows)
    dict(dataflow="mcast_1d_in1", shape="96 x 64 x 256", grid="7 x 1", per_core="4 x 2", out_block="4 x 2"),
])
def test_port_check_runs_tt_programs_on_whole_padded_blocks(host_cxx, host_toolchain, tmp_path, arch, kw):
    """TT's own kernels with the factory's args: bit-identical to kgen's and bit-exact; the only op-count
    difference TT's extra reads of the whole blocks past the tensor."""
    from kgen.gen.build import build
    from kgen.proof.portcheck import port_check

    spec = make(arch=arch, **kw)
    p = plan(spec)
    pc = port_check(build(spec, tmp_path).path, p, seed=4)
    assert pc.passed, pc.failures
    assert pc.program is not None and pc.program_bit_identical and pc.program.exact_match
    reads = pc.dataflow_differences()["noc_async_read"]
    assert "whole out blocks past the tensor" in str(reads["explanation"])
    assert reads["tt_metal"] > reads["kgen"]


@pytest.mark.slow
def test_tt_mcast_in0_writer_writes_whole_h_blocks_past_the_output(host_cxx, host_toolchain, tmp_path, monkeypatch):
    """Why the rule stays on mcast_1d_in0 along M: with it lifted, TT's program (its own kernels, the
    factory's args) writes every h-block of the one M-block. Mt = 2, per_core_M = 3, out_block_h = 1: its
    in1 sender/writer gets the padding args of the last h-block only (in0_last_out_block_h = 3 % 1 -> 1, a
    full block) and no last_num_blocks_h_dim, so each of the 6 cores writes a third row of tiles, past the
    2-row output: 32 tiles (Nt) written past the output tensor's pages, which on a device is other DRAM."""
    from kgen.gen.build import build
    from kgen.gen.dataflow.mcast_1d import Mcast1D
    from kgen.proof.portcheck import port_check

    monkeypatch.setattr(Mcast1D, "skips_padded_out_blocks", lambda self, axis, m_blocks: True)
    spec = make("mcast_1d_in0", "50 x 1000 x 256", "3 x 2", "3 x 6", "1 x 2")
    p = plan(spec)
    assert (p.mt, p.per_core_m, p.num_blocks_h_dim, p.nt) == (2, 3, 3, 32)
    pc = port_check(build(spec, tmp_path).path, p, seed=4)
    writes = pc.dataflow_differences()["noc_async_write"]
    assert writes["kgen"] == p.mt * p.nt                           # kgen writes the output's 64 tiles
    assert writes["tt_metal"] - writes["kgen"] == (p.per_core_m - p.mt) * p.nt     # TT: 32 more, past it
    assert not pc.passed
