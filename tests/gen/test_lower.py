"""The compute IR against the lifecycle of TT-Metal 0.81.1's
bmm_large_block_zm_fused_bias_activation.cpp (docs/reference/matmul.md §1.5-§1.11), by unrolling the IR
and counting / ordering the ops the hardware would execute."""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, example
from kgen.gen.ir import format_program, unroll
from kgen.gen.lower import lower
from kgen.gen.plan import CB_BIAS, CB_IN0, CB_OUT, CB_PARTIALS, plan
from kgen.gen.spec import load, load_file
from kgen.gen.verify import verify


def program(name, variant=None):
    return lower(plan(load(example(name), variant)))


def planned(name, variant=None):
    """The plan and the IR lowered from it (the IR does not keep the plan)."""
    p = plan(load(example(name), variant))
    return p, lower(p)


def compute_ops(prog):
    return [op for op, _ in unroll(prog.kernel("compute").body)]


def l1_acc_sequence(ops):
    return [int(op["enable"]) for op in ops if op.kind == "pack_l1_acc"]


def block_of_each(ops, kind):
    """For each op of `kind`, how many in0 K-blocks had been waited for before it (0-based block)."""
    out, block = [], -1
    for op in ops:
        if op.kind == "cb_wait_front" and op["cb"] == CB_IN0:
            block += 1
        if op.kind == kind:
            out.append(block)
    return out


def test_spill_reload_lifecycle():
    p, prog = planned("peak_small", "spill")
    ops = compute_ops(prog)
    nsb = p.in0_num_subblocks * p.in1_num_subblocks                  # 1 x 2 subblocks per block
    assert p.num_blocks == 8 and nsb == 2
    assert l1_acc_sequence(ops) == []                                 # no PACKER_L1_ACC
    # every block after the first reloads each subblock's partials into DST
    reloads = block_of_each(ops, "copy_block")
    assert reloads == [b for b in range(1, 8) for _ in range(nsb)]
    packs = [op["cb"] for op in ops if op.kind == "pack_block"]
    assert packs == [CB_PARTIALS] * (7 * nsb) + [CB_OUT] * nsb        # spill 7 blocks, then the result
    # no fp32 dest and no L1 acc: no packer format reconfig before the final pack
    assert not any(op.kind == "pack_reconfig_format" for op in ops)


def test_l1_acc_without_bias_lifecycle():
    prog = program("peak_small")
    ops = compute_ops(prog)
    nsb = 2
    # block 0 -> 0 (overwrite), block 1 -> 1 (accumulate), later blocks unchanged, final pack -> 0
    assert l1_acc_sequence(ops) == [0] * nsb + [1] * nsb + [0] * nsb
    assert block_of_each(ops, "pack_l1_acc") == [0] * nsb + [1] * nsb + [7] * nsb
    # exactly one reload per subblock, on the last K-block only
    assert block_of_each(ops, "copy_block") == [7] * nsb
    # partials popped whole after each block < n-2 (rewind), the penultimate block left for the reload
    drain_pops = [b for b, op in zip(block_of_each(ops, "cb_pop_front"), [o for o in ops if o.kind == "cb_pop_front"])
                  if op["cb"] == CB_PARTIALS]
    assert drain_pops == [b for b in range(0, 6) for _ in range(nsb)] + [7] * nsb
    # the final pack re-targets the packer to the output format first
    finals = [i for i, op in enumerate(ops) if op.kind == "pack_block" and op["cb"] == CB_OUT]
    assert len(finals) == nsb
    for i in finals:
        assert ops[i - 1].kind == "pack_l1_acc" and ops[i - 1]["enable"] is False
        assert ops[i - 2].kind == "pack_reconfig_format" and ops[i - 2]["cb"] == CB_OUT


def test_l1_acc_with_bias_and_fp32_lifecycle():
    p, prog = planned("bh_fp32_bias")
    ops = compute_ops(prog)
    nsb = p.in0_num_subblocks * p.in1_num_subblocks
    assert (p.num_blocks, nsb) == (24, 16)
    # bias: block 0 -> 0, block 1 -> 1, last block packs into partials with 1, bias stage -> 0
    assert l1_acc_sequence(ops) == [0] * nsb + [1] * nsb + [1] * nsb + [0]
    assert not any(op.kind == "copy_block" for op in ops)             # never reload with bias
    # the last K-block packs into the partials (mm_out = partials), reconfigured first (FP32_DEST_ACC_EN)
    last = [i for i, op in enumerate(ops) if op.kind == "pack_block"][-nsb:]
    for i in last:
        assert ops[i]["cb"] == CB_PARTIALS
        assert ops[i - 2].kind == "pack_reconfig_format" and ops[i - 2]["cb"] == CB_PARTIALS
    # bias stage: reconfig to out, L1 acc off, SrcA -> partials / SrcB -> bias, row-broadcast adds
    stage = ops[last[-1]:]
    kinds = [op.kind for op in stage]
    assert kinds.index("pack_reconfig_format") < kinds.index("pack_l1_acc") < kinds.index("reconfig_srcab")
    assert stage[kinds.index("pack_reconfig_format")]["cb"] == CB_OUT
    assert sum(1 for op in ops if op.kind == "add_bcast_rows") == p.out_block_tiles
    assert [op["cb"] for op in ops if op.kind == "pack_tile"] == [CB_OUT] * p.out_block_tiles
    # the bias is waited once (num_blocks_w_dim == 1) and popped once at the very end
    bias_waits = [op for op in ops if op.kind == "cb_wait_front" and op["cb"] == CB_BIAS]
    assert len(bias_waits) == 1 and ops[-1].kind == "cb_pop_front" and ops[-1]["cb"] == CB_BIAS


def test_relu_only_on_the_final_pack():
    ops = compute_ops(program("l1acc_two_blocks_bias"))
    # bias + PACK_RELU: relu(zero) at the start of each bias stage; several out blocks -> relu(none) first
    relu = [(i, op["mode"]) for i, op in enumerate(ops) if op.kind == "pack_relu"]
    assert [m for _, m in relu] == ["none", "zero", "none", "zero"]
    first_add = next(i for i, op in enumerate(ops) if op.kind == "add_bcast_rows")
    assert relu[1][0] < first_add
    assert all(op.kind != "pack_block" or op["cb"] == CB_PARTIALS for op in ops)


def test_untilize_and_multi_block_reconfig():
    p, prog = planned("untilize_relu_reuse")
    ops = compute_ops(prog)
    blocks = p.num_blocks_h_dim * p.num_blocks_w_dim
    assert blocks == 2
    # reblock_and_untilize: per out block, in0 subblocks x subblock rows x subblock columns
    assert sum(op.kind == "pack_untilize_dest" for op in ops) == blocks * p.in0_num_subblocks * \
        p.out_subblock_h * p.in1_num_subblocks
    # several out blocks: packer re-targeted to the partials at each start, SrcA back to in1 at each end
    assert [op["cb"] for op in ops if op.kind == "pack_reconfig_format"] == [CB_PARTIALS] * blocks
    assert sum(op.kind == "reconfig_srca" and op["old"] == CB_PARTIALS and op["new"] == 1 for op in ops) \
        == blocks + blocks * (p.num_blocks - 1) * p.in0_num_subblocks * p.in1_num_subblocks
    # the last K-block packs into the partials (untilize_mode_out_cb), never straight to out
    assert all(op["cb"] == CB_PARTIALS for op in ops if op.kind == "pack_block")


def test_single_block_packs_straight_to_out():
    ops = compute_ops(program("l1acc_one_block"))
    assert not any(op.kind in ("copy_block", "pack_l1_acc") for op in ops)
    assert {op["cb"] for op in ops if op.kind == "pack_block"} == {CB_OUT}


def test_mcast_roles_and_semaphores():
    prog = program("peak_bf16")
    names = [k.name for k in prog.kernels]
    assert names == ["compute", "in0_sender", "in0_receiver", "in1_sender_writer", "in1_receiver_writer"]
    assert [s.name for s in prog.semaphores] == ["in0_sender", "in0_receiver", "in1_sender", "in1_receiver"]
    in0 = prog.kernel("in0_sender")
    assert (in0.processor, in0.cores.x0, in0.cores.x1) == ("NCRISC", 0, 0)
    waits = [op for op, _ in unroll(in0.body) if op.kind == "sem_wait"]
    assert len(waits) == prog.blocking.num_blocks and all(op["value"] == 7 for op in waits)   # 8 - 1 receivers
    in1 = prog.kernel("in1_sender_writer")
    assert (in1.processor, in1.cores.y0, in1.cores.y1) == ("BRISC", 0, 0)


def test_reuse_reader_tile_ids():
    p, prog = planned("l1acc_two_blocks")
    reads = [(op, env) for op, env in unroll(prog.kernel("reader").body, {"core_x": 1, "core_y": 2})
             if op.kind == "read_tiles"]
    in0 = [op["start"].eval(env) for op, env in reads if op["tensor"] == "in0"]
    in1 = [op["start"].eval(env) for op, env in reads if op["tensor"] == "in1"]
    # core (x=1, y=2): in0 rows start at 2 * per_core_M = 8, K-block b starts at column 4b
    assert in0 == [8 * p.kt + 4 * b for b in range(p.num_blocks)]
    # in1 K-block b starts at row 4b, column 1 * per_core_N = 4
    assert in1 == [4 * b * p.nt + 4 for b in range(p.num_blocks)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_and_variant_lowers_and_verifies(path):
    spec_file = load_file(path)
    for variant in (None, *spec_file.variants):
        prog = verify(lower(plan(load(path, variant))))
        text = format_program(prog)
        assert "kernel compute" in text


# ---- padded last blocks (issue #17) ------------------------------------------------------------

@pytest.mark.parametrize("variant", [None, "bias", "reuse"])
def test_padded_transfers_stay_inside_the_tensors(variant):
    """Every read and write of the padded example, unrolled on every core: no page past the tensor,
    tiles past Mt / Nt skipped, every tile inside transferred exactly once per K-block (in0, in1) or
    once (out)."""
    from kgen.gen.ir import TileNest

    p, prog = planned("padded_small", variant)
    assert p.padded_m and p.padded_n
    nx, ny = p.grid
    written: dict[int, int] = {}
    read: dict[str, dict[int, int]] = {"in0": {}, "in1": {}}
    for k in prog.kernels:
        for core in k.cores.cores():
            env0 = {"core_x": core[0], "core_y": core[1]}
            for o, env in unroll(k.body):
                if o.kind not in ("read_tiles", "write_tiles") or o["tensor"] == "bias":
                    continue
                nest = TileNest.of(o)
                e = {**env0, **env}
                first = nest.first_tile.eval(e)
                for r in range(nest.rows):
                    for c in range(nest.cols):
                        if nest.row_extent and nest.row_extent.first.eval(e) + r >= nest.row_extent.limit:
                            continue
                        if nest.col_extent and nest.col_extent.first.eval(e) + c >= nest.col_extent.limit:
                            continue
                        page = first + r * nest.row_stride + c
                        target = written if o.kind == "write_tiles" else read[o["tensor"]]
                        target[page] = target.get(page, 0) + 1
    assert sorted(written) == list(range(p.mt * p.nt)) and set(written.values()) == {1}
    assert max(read["in0"]) == p.mt * p.kt - 1 and max(read["in1"]) == p.kt * p.nt - 1
    # in0 rows are read once per column of cores in the reuse dataflow, once (by the sender) with multicast
    assert set(read["in0"].values()) == {nx if p.spec.dataflow == "reuse" else 1}


def test_a_padded_read_without_its_extent_is_caught(monkeypatch):
    """The verifier's bounds: without the row extent, the bottom row of cores reads in0 past its end."""
    from kgen.gen.dataflow import kernels
    from kgen.gen.verify import IRVerificationError

    monkeypatch.setattr(kernels.Tiles, "in0_rows", lambda self: None)
    p = plan(load(example("padded_small")))
    with pytest.raises(IRVerificationError, match="touches page"):
        verify(lower(p))
