"""The verifier catches hand-broken IRs (each break is a bug class kgen must never emit)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from conftest import example
from kgen.gen.ir import Loop, Op, op
from kgen.gen.lower import lower
from kgen.gen.plan import CB_IN0, CB_OUT, CB_PARTIALS, plan
from kgen.gen.spec import load
from kgen.gen.verify import IRVerificationError, verify


def program(name="peak_small", variant=None):
    return lower(plan(load(example(name), variant)))


def rewrite(nodes, fn):
    out = []
    for n in nodes:
        if isinstance(n, Loop):
            out.append(replace(n, body=rewrite(n.body, fn)))
        else:
            out.extend(fn(n))
    return tuple(out)


def break_kernel(prog, kernel_name, fn):
    kernels = tuple(replace(k, body=rewrite(k.body, fn)) if k.name == kernel_name else k for k in prog.kernels)
    return replace(prog, kernels=kernels)


def once(predicate, replacement):
    """A rewrite that replaces the first op matching `predicate` (in tree order) with `replacement`."""
    state = {"done": False}

    def fn(node):
        if not state["done"] and predicate(node):
            state["done"] = True
            return replacement(node)
        return [node]
    return fn


def with_args(o, **changes):
    return [replace(o, args=tuple({**dict(o.args), **changes}.items()))]


def test_examples_verify():
    verify(program())


def test_dropped_pop_is_caught():
    prog = break_kernel(program(), "compute",
                        once(lambda o: o.kind == "cb_pop_front" and o["cb"] == CB_IN0, lambda o: []))
    with pytest.raises(IRVerificationError, match=r"CB c_0: \d+ page\(s\) pushed but \d+ popped"):
        verify(prog)


def test_l1_acc_left_on_is_caught():
    last_off = lambda o: o.kind == "pack_l1_acc" and o["enable"] is False and "final" in o.note
    prog = break_kernel(program(), "compute", once(last_off, lambda o: [op("pack_l1_acc", True)]))
    with pytest.raises(IRVerificationError, match="L1 accumulation is still on"):
        verify(prog)


def test_overfilled_dst_is_caught():
    # a 4 x 4 subblock: 16 tiles in a half-sync bf16 DST of 8
    prog = break_kernel(program(), "compute",
                        once(lambda o: o.kind == "matmul_block", lambda o: with_args(o, ct=4, rt=4)))
    with pytest.raises(IRVerificationError, match="exceed its capacity of 8"):
        verify(prog)


def test_push_without_reserve_is_caught():
    prog = break_kernel(program(), "compute",
                        once(lambda o: o.kind == "cb_reserve_back" and o["cb"] == CB_OUT, lambda o: []))
    with pytest.raises(IRVerificationError, match="without 8 reserved|only 0 were reserved"):
        verify(prog)


def test_pop_beyond_wait_is_caught():
    prog = break_kernel(program("peak_small", "spill"), "compute",
                        once(lambda o: o.kind == "cb_wait_front" and o["cb"] == CB_PARTIALS, lambda o: []))
    with pytest.raises(IRVerificationError, match="waited for"):
        verify(prog)


def test_step_not_dividing_cb_is_caught():
    def odd(o):
        return [op("cb_wait_front", CB_IN0, 3), op("cb_wait_front", CB_IN0, o["tiles"])]
    prog = break_kernel(program(), "compute", once(lambda o: o.kind == "cb_wait_front" and o["cb"] == CB_IN0, odd))
    with pytest.raises(IRVerificationError, match="step of 3 tiles on c_0"):
        verify(prog)


def test_dst_protocol_order_is_caught():
    prog = break_kernel(program(), "compute", once(lambda o: o.kind == "tile_regs_wait", lambda o: []))
    with pytest.raises(IRVerificationError, match="while DST is committed"):
        verify(prog)


def test_partials_not_one_block_under_l1_acc_is_caught():
    prog = program()
    cbs = tuple(replace(cb, pages=cb.pages * 2) if cb.index == CB_PARTIALS else cb for cb in prog.cbs)
    with pytest.raises(IRVerificationError, match="exactly one output block"):
        verify(replace(prog, cbs=cbs))


@pytest.mark.parametrize("change,match", [
    (dict(l1_acc_enabled=False), "PACKER_L1_ACC is defined"),
    (dict(fp32_dest_acc=True), "FP32_DEST_ACC_EN is not defined"),
    (dict(dst_sync="SyncFull"), "DST tiles"),
])
def test_compute_flags_that_disagree_with_the_kernel_are_caught(change, match):
    """The flags the descriptor, the manifest and the emulator read must be the kernel's."""
    prog = program()                                   # peak_small: L1 acc on, bf16 Dst, SyncHalf
    with pytest.raises(IRVerificationError, match=match):
        verify(replace(prog, compute=replace(prog.compute, **change)))


def test_l1_acc_flag_without_the_op_is_caught():
    prog = program()
    broken = break_kernel(prog, "compute", lambda n: [] if n.kind == "pack_l1_acc" else [n])
    with pytest.raises(IRVerificationError, match="never turns L1 accumulation on"):
        verify(broken)


def test_semaphore_imbalance_is_caught():
    prog = break_kernel(program(), "in0_sender",
                        once(lambda o: o.kind == "sem_wait", lambda o: with_args(o, value=o["value"] + 1)))
    with pytest.raises(IRVerificationError, match="semaphore in0_sender"):
        verify(prog)


def test_writer_that_never_drains_is_caught():
    prog = break_kernel(program(), "in1_sender_writer",
                        once(lambda o: o.kind == "cb_pop_front" and o["cb"] == CB_OUT, lambda o: []))
    with pytest.raises(IRVerificationError, match="CB c_4"):
        verify(prog)


def test_index_beyond_uint32_is_caught(monkeypatch):
    """The backstop behind the spec's 32-bit page-id rule: with that rule switched off, a batch of
    4096 2097152^3 matmuls lowers to a reader whose page index (coefficient 2^41 on core_y) does
    not fit the kernels' uint32_t arithmetic, and the verifier refuses it. Within the rule (batch
    1: 2^32 pages, the last id 2^32 - 1) the same shape verifies."""
    import kgen.gen.spec
    from kgen.gen.spec import parse_text, resolve

    text = """matmul big {
    arch  = wormhole_b0
    shape = 2097152 x 2097152 x 2097152
    batch = BATCH
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid  = 8 x 8
    dataflow = mcast_2d
}
"""
    verify(lower(plan(resolve(parse_text(text.replace("BATCH", "1"), "big.kspec")))))
    monkeypatch.setattr(kgen.gen.spec, "MAX_PAGE_ID", 1 << 62)
    with pytest.raises(IRVerificationError, match=r"uint32_t"):
        verify(lower(plan(resolve(parse_text(text.replace("BATCH", "4096"), "big.kspec")))))


def _kernel_with(prog, kind):
    from kgen.gen.ir import walk
    return next(k.name for k in prog.kernels if any(o.kind == kind for o, _ in walk(k.body)))


def test_tile_read_past_the_tensor_is_caught():
    # One extra row of tiles per read: the last block's last row falls off the tensor (TileNest's page bound)
    prog = program()
    broken = break_kernel(prog, _kernel_with(prog, "read_tiles"),
                          once(lambda o: o.kind == "read_tiles", lambda o: with_args(o, rows=o["rows"] + 1)))
    with pytest.raises(IRVerificationError, match=r"`read_tiles` touches page \d+ of in\d, which has \d+"):
        verify(broken)


def test_row_write_past_the_page_is_caught():
    # A row written one byte further along its page overruns the row-major page (RowNest's byte bound)
    prog = program("untilize_relu_reuse")
    broken = break_kernel(prog, _kernel_with(prog, "write_rows"),
                          once(lambda o: o.kind == "write_rows",
                               lambda o: with_args(o, offset_bytes=o["offset_bytes"] + 1)))
    with pytest.raises(IRVerificationError, match=r"`write_rows` reaches row \d+ / byte \d+ of out"):
        verify(broken)


def test_sharded_and_transposed_examples_verify():
    for name, variant in (("sharded_small", None), ("sharded_small", "transposed"), ("sharded_small", "height"),
                          ("transpose_mcast_small", None), ("transpose_mcast_small", "padded")):
        verify(program(name, variant))


def test_shard_copy_past_the_shard_is_caught():
    # One extra tile row per copy: the last out block's last row falls off the 4 x 4-tile shard (c_2)
    prog = program("sharded_small")
    broken = break_kernel(prog, "in0_sharded_1",
                          once(lambda o: o.kind == "copy_shard", lambda o: with_args(o, rows=o["rows"] + 1)))
    with pytest.raises(IRVerificationError, match=r"`copy_shard` reaches tile \d+ of c_2, which holds 16"):
        verify(broken)


# the fused SFPU activation: the verifier holds the IR to TT's kernel

def _activation_program(act="gelu", bias=False):
    from kgen.gen.spec import parse_text, resolve

    return lower(plan(resolve(parse_text(
        f"matmul t {{ arch = wormhole_b0  shape = 128 x 128 x 256  grid = 2 x 2  block {{ in0_block_w = 2 }} "
        f"dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}  fuse {{ bias = {str(bias).lower()}  "
        f"activation = {act} }} }}", "t.kspec"))))


@pytest.mark.parametrize("bias", [False, True])
def test_activation_programs_verify(bias):
    verify(_activation_program(bias=bias))


@pytest.mark.parametrize("mutation, message", [
    # the apply runs over fewer tiles than TT's kernel passes (out_subblock_num_tiles)
    (once(lambda o: o.kind == "activation_apply", lambda o: with_args(o, tiles=1)), "out_subblock_num_tiles"),
    # a different activation than the plan's (and its named args)
    (once(lambda o: o.kind == "activation_apply", lambda o: with_args(o, activation="silu")), "the plan fuses gelu"),
    # no init
    (once(lambda o: o.kind == "activation_init", lambda o: []), "init must run once, first"),
    # the apply where no DST section is committed: the plain wait stays, the apply comes after it
    (once(lambda o: o.kind == "activation_apply", lambda o: [Op("tile_regs_wait", ()), o]), "activation_apply while DST is waited"),
])
def test_broken_activation_is_caught(mutation, message):
    with pytest.raises(IRVerificationError, match=re.escape(message)):
        verify(break_kernel(_activation_program(), "compute", mutation))


def test_dram_sharded_examples_verify():
    for name, variant in (("wh_decode_dram_sharded", None), ("wh_decode_dram_sharded_11008", None),
                          ("wh_decode_dram_sharded_11008", "banks8")):
        verify(program(name, variant))


def test_matmul_past_the_pushed_in1_tiles_is_caught():
    # TT's DRAM-sharded factory pads per_core_N_compute to 32 for 29 real columns: the reader pushes 29 x 4
    # in1 tiles per K-block; a last 1 x 8 subblock not narrowed to last_subblock_w_valid = 5 reads in1
    # tiles 24 + 3 x 29 + 7 = 118 >= 116 at its last K step
    narrowed = lambda o: o.kind == "matmul_block" and int(o["ct"]) == 5       # noqa: E731
    prog = break_kernel(program("wh_decode_dram_sharded"), "compute",
                        lambda o: with_args(o, ct=8) if narrowed(o) else [o])
    with pytest.raises(IRVerificationError, match=r"matmul_block reads tile \d+ of c_1, beyond the 116 tile\(s\) "
                                                  r"pushed for the block"):
        verify(prog)


def test_pack_of_lanes_no_matmul_wrote_outside_the_padding_is_caught():
    # a narrowed last subblock leaves 8 - 5 padded lanes, which the pack may take as DST holds them; a
    # matmul narrower than last_subblock_w_valid leaves more than the padding unwritten
    narrowed = lambda o: o.kind == "matmul_block" and int(o["ct"]) == 5       # noqa: E731
    prog = break_kernel(program("wh_decode_dram_sharded"), "compute",
                        lambda o: with_args(o, ct=4) if narrowed(o) else [o])
    with pytest.raises(IRVerificationError, match=r"packs DST tile 7 which math never wrote"):
        verify(prog)


def test_an_fpu_operand_unpacked_to_dest_is_caught():
    # bh_fp32_bias:spill: fp32 accumulation, a bias, spill/reload. TT-Metal 0.81.1 marks the reload's alias
    # c_7 UnpackToDestFp32, not the partials c_5 the bias add reads through SrcA (provenance N8); marking
    # c_5 itself (kgen's bug class: descriptors that disagree with the factory's) breaks the bias add
    prog = program("bh_fp32_bias", "spill")
    verify(prog)
    assert prog.cb(7).unpack_to_dest and not prog.cb(CB_PARTIALS).unpack_to_dest
    marked = replace(prog, cbs=tuple(replace(c, unpack_to_dest=c.index == CB_PARTIALS) for c in prog.cbs))
    with pytest.raises(IRVerificationError, match=r"`add_bcast_rows` reads c_5 as an FPU operand"):
        verify(marked)


def test_a_reload_through_a_cb_that_is_not_the_partials_alias_is_caught():
    prog = program("bh_fp32_bias", "spill")
    broken = break_kernel(prog, "compute", once(lambda o: o.kind == "copy_block", lambda o: with_args(o, view=CB_IN0)))
    with pytest.raises(IRVerificationError, match=r"reads c_5 through c_0, which is not an alias of its pages"):
        verify(broken)
    # the alias's index reaches the kernel through MM_PARTIALS_RELOAD_ALIAS_CB, and must say c_7
    compute = next(k for k in prog.kernels if k.name == "compute")
    wrong = replace(compute, defines=tuple((n, "9" if n == "MM_PARTIALS_RELOAD_ALIAS_CB" else v)
                                           for n, v in compute.defines))
    with pytest.raises(IRVerificationError, match=r"c_7's index reaches the kernel as MM_PARTIALS_RELOAD_ALIAS_CB"):
        verify(replace(prog, kernels=tuple(wrong if k.name == "compute" else k for k in prog.kernels)))
