"""A block-sharded in0 line hands each K-block over as TT-Metal's block-sharded reader does
(tt-metal v0.81.1 reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp, with the args
of matmul_multicore_reuse_mcast_2d_program_factory.cpp):

- `extract_shard_sub_blocks = shard_height_in_tiles > 1 && num_blocks_per_shard > 1`: only then is the
  K-block copied out of the shard (one local noc read per tile row, then a read barrier);
- the sender waits for `in0_mcast_num_dests - 1` increments (every other core of the line);
- one data multicast per K-block to the whole line (in0_mcast_num_cores cores, the sender among them):
  from the copy without loopback to `in0_mcast_num_cores - 1` cores, else straight out of the shard with
  `MCAST_INCL_SRC` to `in0_mcast_num_cores`;
- the VALID flag: set locally, then multicast with `MCAST_INCL_SRC` to `in0_mcast_num_cores`, a flush, and
  the sender waits for its own VALID like every receiver (`receiver_sem.wait(VALID)`).
The line is the sender's row (its column under transpose_mcast): in0_mcast_num_cores = the cores along it.
"""

from __future__ import annotations

import pytest

from kgen.gen.ir import INVALID, VALID, walk
from kgen.gen.pipeline import run
from kgen.gen.spec import parse_text, resolve
from kgen.gen.verify import IRVerificationError, verify

from test_verify import break_kernel, once, with_args

SPEC = """
matmul t {{
    arch = {arch}  shape = {m} x 256 x 512  grid = {grid}  dataflow = mcast_2d
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    memory {{ in0 = l1_block_sharded  out = l1_block_sharded  orientation = {orientation} }}
    {transpose}
    block {{ in0_block_w = {ibw}  per_core = {pm} x 2  out_block = {pm} x 2  out_subblock = {pm} x 2 }}
}}
"""

# (per_core_M, in0_block_w, transpose_mcast, arch): the line has 4 cores, each shard 4 K tiles wide
CASES = [(4, 2, False, "wormhole_b0"),     # 4 tiles high, 2 K-blocks per shard: TT extracts
         (4, 4, False, "wormhole_b0"),     # one K-block per shard: straight out of the shard
         (1, 2, False, "wormhole_b0"),     # one tile row: straight out of the shard
         (1, 1, False, "blackhole"),       # one tile row, 4 K-blocks per shard
         (4, 2, True, "wormhole_b0"),      # the line is a column
         (4, 4, True, "blackhole")]


def _verified(pm, ibw, transpose, arch):
    text = SPEC.format(arch=arch, m=pm * 32 * 2, grid="2 x 4" if transpose else "4 x 2",
                       orientation="col_major" if transpose else "row_major",
                       transpose="transpose_mcast = true" if transpose else "", ibw=ibw, pm=pm)
    return run(resolve(parse_text(text, "t.kspec")), "verified").verified


def _send(kernel):
    """The K-block loop in which this position sends from its own shard (it waits for increments)."""
    return next(loops[-1] for o, loops in walk(kernel.body) if o.kind == "sem_wait" and o["sem"] == "in0_sender")


def _rect(o, env):
    xs = sorted((o["start_x"].logical(env), o["end_x"].logical(env)))
    ys = sorted((o["start_y"].logical(env), o["end_y"].logical(env)))
    return {(x, y) for x in range(xs[0], xs[1] + 1) for y in range(ys[0], ys[1] + 1)}


@pytest.mark.parametrize("pm, ibw, transpose, arch", CASES)
def test_the_line_hands_each_k_block_over_as_tt_does(pm, ibw, transpose, arch):
    program = _verified(pm, ibw, transpose, arch)
    num_cores, shard_w = 4, 4                       # the line's cores; Kt = 16 over 4 shards
    extract = pm > 1 and shard_w // ibw > 1         # TT's extract_shard_sub_blocks
    for i in range(num_cores):
        kernel = program.kernel(f"in0_sharded_{i}")
        body = list(_send(kernel).body)
        ops = [o.kind for o in body]
        # the copy only where TT extracts
        assert ("copy_shard" in ops) == extract
        waits = [o for o in body if o.kind == "sem_wait"]
        assert [(o["sem"], o["value"]) for o in waits] == [("in0_sender", num_cores - 1), ("in0_receiver", VALID)]
        data = [o for o in body if o.kind in ("mcast_cb", "mcast_shard")]
        flags = [o for o in body if o.kind in ("mcast_sem_set", "mcast_sem_set_loopback")]
        assert len(data) == 1 and len(flags) == 1   # one multicast to the whole line, not one per side
        assert data[0].kind == ("mcast_cb" if extract else "mcast_shard")
        assert data[0]["num_dests"] == (num_cores - 1 if extract else num_cores)
        assert flags[0].kind == "mcast_sem_set_loopback" and flags[0]["num_dests"] == num_cores
        # every core of the line is in the rectangle, the sender included
        for along in range(2):
            me = (i, along) if not transpose else (along, i)
            env = {"core_x": me[0], "core_y": me[1]}
            line = {(x, along) for x in range(num_cores)} if not transpose else {(along, y) for y in range(num_cores)}
            assert _rect(data[0], env) == line and _rect(flags[0], env) == line and me in line
        # the flag: INVALID at the block's start, the local VALID before its multicast, then the wait for it
        sets = [(o["sem"], o["value"]) for o in body if o.kind == "sem_set"]
        assert sets == [("in0_receiver", INVALID), ("in0_sender", 0), ("in0_receiver", VALID)]
        assert ops.index("mcast_sem_set_loopback") < ops.index("noc_writes_flushed", ops.index("mcast_sem_set_loopback")) \
            < len(ops) - 2 and ops[-2:] == ["sem_wait", "cb_push_back"]


def test_a_loopback_flag_that_does_not_count_its_sender_is_caught():
    program = _verified(4, 2, False, "wormhole_b0")
    broken = break_kernel(program, "in0_sharded_1",
                          once(lambda o: o.kind == "mcast_sem_set_loopback",
                               lambda o: with_args(o, num_dests=o["num_dests"] - 1)))
    with pytest.raises(IRVerificationError, match=r"num_dests = 3"):
        verify(broken)


def test_a_shard_multicast_past_the_shard_is_caught():
    program = _verified(4, 4, False, "wormhole_b0")
    broken = break_kernel(program, "in0_sharded_2",
                          once(lambda o: o.kind == "mcast_shard",
                               lambda o: with_args(o, start=o["start"] + 1)))
    with pytest.raises(IRVerificationError, match=r"`mcast_shard` sends tiles up to 16 of c_2, which holds 16"):
        verify(broken)
