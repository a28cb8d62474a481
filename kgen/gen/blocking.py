"""One core's blocking: the CB table and its L1 regions, the accumulation policy and partials format,
and the out_block / in0_block_w / out_subblock search that fills each `auto` (TT-Metal's 2D multicast
factory's decisions, matmul_multicore_reuse_mcast_2d_program_factory.cpp)."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.core.arch import ArchFacts
from kgen.core.types import Placement, is_sharded
from kgen.core.errors import KgenBug
from kgen.gen.dataflow import get as dataflow_of
from kgen.gen.planned import partials_unpack_to_dest_cb
from kgen.gen.ir import CircularBuffer, L1Region
from kgen.gen.rules import (CB_BIAS, CB_IN0, CB_IN0_SHARD, CB_IN0_TRANSPOSED, CB_IN1, CB_OUT, CB_OUT_SHARD, CB_PARTIALS,
                            SUBBLOCK_HW_CHOICES, Offer, PlanError, divisors, fmt_pair, nearest_offer, suggestion)
from kgen.gen.matmul_spec import ComputeConfig, MatmulSpec

# in0/in1 CBs are double-buffered when more than one K-block flows (MCAST_INPUT_BUFFERING_DEPTH).
INPUT_BUFFERING_DEPTH = 2
# Upper bound of the auto in0_block_w search: deeper K-blocks buy little once the matrix engine is
# fed and cost L1 twice (double buffering).
AUTO_IN0_BLOCK_W_MAX = 8


def in0_block_w_edit(v: int) -> tuple[str, int]:
    return "block.in0_block_w", v


def _out_block_dim(ob: tuple[int, int], i: int):
    """The edit of one dimension of out_block (i = 0: h, 1: w), the other kept."""
    return lambda v: ("block.out_block", (v, ob[1]) if i == 0 else (ob[0], v))


POLICY_L1_ACC = "packer_l1_acc"
POLICY_SPILL = "spill_reload"
POLICY_DST = "dst_only"






def do_not_inplace_interm0_out(spec: MatmulSpec, per_core: tuple[int, int], out_block: tuple[int, int]) -> str | None:
    """Why TT-Metal's factory keeps out (c_4) and partials (c_5) apart, `do_not_inplace_interm0_out_CB`:
    a sharded output whose c_4 holds more than one output block, i.e. per_core_M != out_block_h or
    per_core_N != out_block_w, on the factories that test it (Dataflow.do_not_inplace_interm0_out); None when
    it does not fire."""
    if not is_sharded(spec.memory.out) or not dataflow_of(spec.dataflow).do_not_inplace_interm0_out:
        return None
    if per_core == out_block:
        return None
    return (f"separate: do_not_inplace_interm0_out_CB (TT-Metal's factory: a sharded output with per_core = "
            f"{fmt_pair(per_core)} != out_block = {fmt_pair(out_block)})")


def out_partials_share(spec: MatmulSpec, partials_fmt: str, out_fmt: str, in1_num_subblocks: int,
                       num_blocks: int, out_blocks_per_core: int) -> tuple[bool, str]:
    """Whether out (c_4) and partials (c_5) share one L1 region, and why (docs/reference/matmul.md §2.3).

    TT-Metal's factory shares them unless the formats differ, or untilize_out has more than one
    subblock column, or `do_not_inplace_interm0_out_CB` (a sharded output whose c_4 holds more than
    one output block). kgen also splits them whenever more than one output block passes through the
    region on a core and partials are packed before a block's final result: the first partials
    pack of block i+1 would land on pages c_4 still holds for block i until the writer (another
    kernel) drains them. TT-Metal's compute kernel has no wait for that (its classic kernel had
    one: cb_reserve_back(out_cb, ...) "since interm and output share memory"), so the plan must
    keep the two apart for TT-Metal's kernel and kgen's alike (for example reuse, per_core 2 x 2,
    out_block 2 x 1 would pack over undrained output)."""
    if partials_fmt != out_fmt:
        return False, f"separate: partials {partials_fmt} and out {out_fmt} differ in format"
    if spec.untilize_out and in1_num_subblocks > 1:
        return False, "separate: untilize_out with more than one subblock column (TT-Metal's factory rule)"
    partials_first = num_blocks > 1 or spec.fuse_bias or spec.untilize_out
    if out_blocks_per_core > 1 and partials_first:
        return False, (f"separate: {out_blocks_per_core} output blocks per core pass through it and partials are "
                       f"packed before each block's result, so sharing would overwrite output the writer has "
                       f"not drained")
    return True, "shared: one output block's pages are reused by partials and out in turn (TT-Metal's in-place rule)"


def _height_sharded_in0(spec: MatmulSpec, pages: int, per_core_m: int, in0_block_w: int, num_blocks: int,
                        batch_ct: int) -> tuple[int, bool, bool]:
    """c_0's pages, whether it lies on a height-sharded in0's shard, and whether c_2 does instead. The 2D
    factory: c_0 on the shard (one K-block). The 1D factory (matmul_multicore_reuse_mcast_1d_program_factory.cpp,
    its mcast_in1 builder): `in0_CB_tiles = num_blocks * per_core_M * in0_block_w * B` when in0 is sharded, on
    the shard unless `extract_shard_sub_blocks` (shard width / in0_block_w > 1): then the reader copies each
    K-block out of c_2, the shard (`if (in0_is_sharded and extract_shard_sub_blocks)`)."""
    if spec.memory.in0 != Placement.L1_HEIGHT_SHARDED:
        return pages, False, False
    if not dataflow_of(spec.dataflow).is_1d:
        return pages, True, False
    return num_blocks * per_core_m * in0_block_w * batch_ct, num_blocks == 1, num_blocks > 1


def cb_table(spec: MatmulSpec, arch: ArchFacts, in0_fmt: str, in1_fmt: str, out_fmt: str, bias_fmt: str | None,
              partials_fmt: str, out_block: tuple[int, int], in0_block_w: int, num_blocks: int,
              batch_ct: int, in1_num_subblocks: int, out_blocks_per_core: int,
              per_core: tuple[int, int] = (0, 0), in0_shard_w: int = 0, in1_w: int = 0, out_shard_w: int = 0
              ) -> tuple[tuple[CircularBuffer, ...], tuple[L1Region, ...], str]:
    """CB sizing of the 2D factory (docs/reference/matmul.md §2.3). With a block-sharded in0, c_2 holds the
    core's shard (per_core_M x shard width tiles, globally allocated on in0; no 64-byte c_6 beside it, as
    in 0.81.1's 2D builder); with a sharded output c_4 holds the core's whole output shard (per_core_M x
    per_core_N tiles, globally allocated on out), and `do_not_inplace_interm0_out_CB` (per_core != out_block
    on the factories that test it, do_not_inplace_interm0_out) keeps the partials apart. `in1_w`: the tiles
    of one in1 row in c_1 when they are fewer than the out block's (the DRAM-sharded factory's
    per_core_N_in1_sender beside its padded per_core_N_compute); `out_shard_w`: the output shard's width
    when c_4 is a buffer of its own and the writer copies its real columns into the shard (c_7, globally
    allocated on out; that factory's out_reshard)."""
    tb = arch.tile_bytes
    obh, obw = out_block
    depth = INPUT_BUFFERING_DEPTH if batch_ct * num_blocks > 1 else 1
    in0_depth, in1_depth = dataflow_of(spec.dataflow).cb_depths(batch_ct * num_blocks, depth)
    out_sharded = is_sharded(spec.memory.out)
    share, sharing = out_partials_share(spec, partials_fmt, out_fmt, in1_num_subblocks, num_blocks,
                                        out_blocks_per_core)
    tt_split = do_not_inplace_interm0_out(spec, per_core, out_block)
    if tt_split:                                 # TT's own rule first, whatever kgen's says
        share, sharing = False, tt_split
    out_region = "out+partials" if share else "out"
    out_pages = per_core[0] * per_core[1] if out_sharded else obh * obw
    out_buffer = "out" if out_sharded and not out_shard_w else None
    in0_pages, in0_on_shard, extract = _height_sharded_in0(spec, obh * in0_block_w * in0_depth, per_core[0],
                                                           in0_block_w, num_blocks, batch_ct)
    cbs = [
        # a height-sharded in0: c_0 itself is globally allocated on the in0 buffer (the factory:
        # `if (in0_height_sharded) src0_cb_config.set_globally_allocated_address(*in0_buffer)`)
        CircularBuffer(CB_IN0, "cb_in0", "in0", in0_fmt, tb[in0_fmt], in0_pages, "in0",
                       buffer="in0" if in0_on_shard else None),
        CircularBuffer(CB_IN1, "cb_in1", "in1", in1_fmt, tb[in1_fmt], (in1_w or obw) * in0_block_w * in1_depth, "in1"),
    ]
    if spec.transpose_a:     # TT's `if (in0_transpose_tile)`: c_10 as large as c_0, in in0's format
        cbs.append(CircularBuffer(CB_IN0_TRANSPOSED, "cb_in0_transposed", "in0 transposed", in0_fmt, tb[in0_fmt],
                                  obh * in0_block_w * in0_depth, "in0 transposed"))
    if spec.memory.in0 in (Placement.L1_BLOCK_SHARDED, Placement.L1_WIDTH_SHARDED) or extract:
        # the DRAM-sharded factory's c_2 too: `in2_CB_tiles = per_core_M * in0_shard_width_in_tiles` on in0
        cbs.append(CircularBuffer(CB_IN0_SHARD, "cb_in0_sharded", "in0 shard", in0_fmt, tb[in0_fmt],
                                  per_core[0] * (in0_shard_w or in0_block_w * num_blocks), "in0 shard", buffer="in0"))
    if bias_fmt is not None:
        cbs.append(CircularBuffer(CB_BIAS, "cb_bias", "bias", bias_fmt, tb[bias_fmt], obw, "bias"))
    cbs.append(CircularBuffer(CB_OUT, "cb_out", "out", out_fmt, tb[out_fmt], out_pages, out_region, buffer=out_buffer))
    if out_shard_w:
        cbs.append(CircularBuffer(CB_OUT_SHARD, "cb_out_shard", "out shard", out_fmt, tb[out_fmt],
                                  per_core[0] * out_shard_w, "out shard", buffer="out"))
    # TT-Metal 0.81.1's UnpackToDestFp32 for the reload (Dataflow.partials_unpack_to_dest): on the partials, or
    # on an alias over the same pages (with its own index, handed over by MM_PARTIALS_RELOAD_ALIAS_CB)
    to_dest = partials_unpack_to_dest_cb(dataflow_of(spec.dataflow), spec.compute.fp32_dest_acc, partials_fmt,
                                         spec.fuse_bias)
    partials_region = out_region if share else "partials"
    cbs.append(CircularBuffer(CB_PARTIALS, "cb_intermed0", "partials", partials_fmt, tb[partials_fmt], obh * obw,
                              partials_region, unpack_to_dest=to_dest == CB_PARTIALS))
    if to_dest not in (None, CB_PARTIALS):
        if any(c.index == to_dest for c in cbs):
            raise KgenBug(f"the partials' reload alias c_{to_dest} is taken in the CB table")
        cbs.append(CircularBuffer(to_dest, "cb_intermed0_reload_alias", "partials reload alias", partials_fmt,
                                  tb[partials_fmt], obh * obw, partials_region, unpack_to_dest=True,
                                  index_define="MM_PARTIALS_RELOAD_ALIAS_CB"))
    cbs = list(dataflow_of(spec.dataflow).factory_cbs(tuple(cbs)))     # as the factory sizes them
    if share and len({c.region for c in cbs if c.index in (CB_OUT, CB_PARTIALS)}) > 1:
        sharing = "separate: the factory's own CB table gives the output a buffer of its own"
    regions: dict[str, list[CircularBuffer]] = {}
    for c in cbs:
        regions.setdefault(c.region, []).append(c)
    return tuple(cbs), tuple(L1Region(name, tuple(c.index for c in members), max(c.total_bytes for c in members))
                             for name, members in regions.items()), sharing



@dataclass(frozen=True)
class Blocking:
    """The out_block / in0_block_w / out_subblock search of one core's work: the given values checked,
    each auto filled with the largest choice whose CBs fit L1."""
    spec: MatmulSpec
    arch: ArchFacts
    kt: int
    per_core_m: int
    per_core_n: int
    capacity: int                    # DST tiles in this sync mode and accumulation format
    dst_sync: str
    dst_accum: str
    batch_ct: int
    in0_fmt: str
    in1_fmt: str
    out_fmt: str
    bias_fmt: str | None
    mt: int
    nt: int
    in0_shard_w: int = 0             # K tiles of a block-sharded in0's shard (0: in0 is not block-sharded)
    in1_w: int = 0                   # tiles of an in1 row in c_1 when fewer than per_core_n (cb_table)
    out_shard_w: int = 0             # the output shard's width when c_4 is not the shard (cb_table)
    l1_tensor_bytes: int = 0         # of each core's L1 bank, held by L1-interleaved tensors (below the CBs' end)

    @property
    def out_sharded(self) -> bool:
        return is_sharded(self.spec.memory.out)

    def sharded_out_allows(self, hw: tuple[int, int]) -> bool:
        """TT's validation of a sharded output (matmul_device_operation.cpp @001cea9a): out_subblock_w ==
        per_core_N || out_subblock_h == 1, and the same of out_block, so that the packed tiles land in
        the shard row by row."""
        return not self.out_sharded or hw[1] == self.per_core_n or hw[0] == 1

    def check_out_block(self, ob: tuple[int, int]) -> None:
        for i, (dim, per) in enumerate((("h", self.per_core_m), ("w", self.per_core_n))):
            if per % ob[i]:
                raise PlanError(f"per_core_{'MN'[i]} % out_block_{dim} == 0",
                                f"out_block_{dim} = {ob[i]} does not divide per_core_{'MN'[i]} = {per}",
                                self.spec.span("block.out_block"),
                                nearest_offer(divisors(per), ob[i], f"out_block_{dim} dividing per_core_{'MN'[i]}",
                                              _out_block_dim(ob, i)))
        if not self.sharded_out_allows(ob):
            raise PlanError("sharded output: out_block_w == per_core_N || out_block_h == 1",
                            f"out_block {fmt_pair(ob)} with a sharded output and per_core_N = {self.per_core_n}",
                            self.spec.span("block.out_block"),
                            Offer(tuple(suggestion(fmt_pair(o), ("block.out_block", o))
                                        for o in ((ob[0], self.per_core_n), (1, ob[1]))),
                                  "out_block with out_block_w == per_core_N or out_block_h == 1"))

    def padding_violation(self, ob: tuple[int, int], strict: bool = False) -> tuple[str, str, Offer] | None:
        """TT-Metal's _padding readers skip rows/columns past the tensor only in a core's last out block
        (reader_bmm_tile_layout_in0_sender_padding.cpp: `bh < num_blocks_h_dim - 1 || h < last_block_h`;
        in1: `bw < num_blocks_w_dim - 1 || w < last_block_w`): every earlier block is read whole. So the
        last core's tiles must reach into its last out block, or its readers would read past the tensor.
        Where the factory's writers stop at that core's last_num_blocks_h/w_dim
        (Dataflow.skips_padded_out_blocks) TT builds it: the whole blocks past the tensor are read, computed
        and not written, and kgen's readers skip their tiles as they skip a padded block's. `strict`: the
        rule whatever the factory (the auto out_block search prefers blocks that keep it)."""
        factory = dataflow_of(self.spec.dataflow)
        m_blocks = -(-self.mt // self.per_core_m)
        for i, (dim, tiles, per) in enumerate((("h", self.mt, self.per_core_m), ("w", self.nt, self.per_core_n))):
            last = tiles % per or per
            if last <= per - ob[i] and (strict or not factory.skips_padded_out_blocks(i, m_blocks)):
                mn = "MN"[i]
                return (f"{mn}t % per_core_{mn} > per_core_{mn} - out_block_{dim} (TT-Metal's readers pad only a "
                        f"core's last out block)",
                        f"the last core along {'yx'[i]} holds {last} of per_core_{mn} = {per} tiles, so out_block_{dim} "
                        f"= {ob[i]} leaves it {(per - last) // ob[i]} out block(s) entirely past the tensor, which "
                        f"TT-Metal's _padding readers would read in full"
                        + ("" if strict else f", and the {factory.label} factory's writers of that core have no "
                                             f"last_num_blocks_{dim}_dim to stop at"),
                        nearest_offer([d for d in divisors(per) if last > per - d], ob[i],
                                      f"out_block_{dim} reaching into the last core's tiles", _out_block_dim(ob, i)))
        return self._single_y_violation(factory, ob, m_blocks)

    def _single_y_violation(self, factory, ob: tuple[int, int], m_blocks: int) -> tuple[str, str, Offer] | None:
        """TT-Metal's mcast_in1 on one core (num_blocks_y == 1) with an M tail: its sender/writer takes the
        tail only in one internal H block ("a single-Y mcast_in1 sender supports a partial final H block
        only with one internal H block", 0.81.1 _ttnncpp.so; M % out_block_h == 0 || out_num_blocks_y == 1)."""
        last, per = self.mt % self.per_core_m, self.per_core_m
        if not (factory.single_y_m_tail_rule and m_blocks == 1 and last and last % ob[0] and per // ob[0] > 1):
            return None
        return ("a single-Y mcast_in1 sender supports a partial final H block only with one internal H block "
                "(TT-Metal: M % out_block_h == 0 || out_num_blocks_y == 1)",
                f"Mt = {self.mt} on the one core of per_core_M = {per}: out_block_h = {ob[0]} gives "
                f"{per // ob[0]} internal H blocks and a last one of {last % ob[0]} rows",
                nearest_offer([d for d in divisors(per) if last % d == 0 or d == per], ob[0],
                              "out_block_h dividing Mt, or per_core_M", _out_block_dim(ob, 0)))

    def check_padding(self, ob: tuple[int, int]) -> None:
        bad = self.padding_violation(ob)
        if bad:
            raise PlanError(bad[0], bad[1], self.spec.span("block.out_block"), bad[2])

    def check_in0_block_w(self, w: int) -> None:
        if self.kt % w:
            raise PlanError("Kt % in0_block_w == 0", f"in0_block_w = {w} does not divide Kt = {self.kt}",
                            self.spec.span("block.in0_block_w"),
                            nearest_offer(divisors(self.kt), w, "in0_block_w dividing Kt", in0_block_w_edit))
        if self.in0_shard_w and self.in0_shard_w % w:
            raise PlanError("shard_shape[1] / tile_width % in0_block_w == 0 (sharded in0)",
                            f"in0_block_w = {w} does not divide the in0 shard width of {self.in0_shard_w} tiles",
                            self.spec.span("block.in0_block_w"),
                            nearest_offer(divisors(self.in0_shard_w), w, "in0_block_w dividing the shard width",
                                          in0_block_w_edit))

    def w_allowed(self, w: int) -> bool:
        return not self.in0_shard_w or self.in0_shard_w % w == 0

    def subblock_for(self, ob: tuple[int, int]) -> tuple[int, int] | None:
        for h, w in SUBBLOCK_HW_CHOICES:
            if ob[0] % h == 0 and ob[1] % w == 0 and h * w <= self.capacity and self.sharded_out_allows((h, w)):
                return h, w
        return None

    def check_subblock(self, sb: tuple[int, int], ob: tuple[int, int]) -> None:
        for i, dim in enumerate("hw"):
            if ob[i] % sb[i]:
                raise PlanError(f"out_block_{dim} % out_subblock_{dim} == 0",
                                f"out_subblock_{dim} = {sb[i]} does not divide out_block_{dim} = {ob[i]}",
                                self.spec.span("block.out_subblock"),
                                nearest_offer(divisors(ob[i]), sb[i], f"out_subblock_{dim} dividing out_block_{dim}",
                                              lambda v, i=i: ("block.out_subblock", (v, sb[1]) if i == 0 else (sb[0], v))))
        if sb[0] * sb[1] > self.capacity:
            legal = [(h, w) for h, w in SUBBLOCK_HW_CHOICES
                     if ob[0] % h == 0 and ob[1] % w == 0 and h * w <= self.capacity]
            raise PlanError("out_subblock_h * out_subblock_w <= get_dest_reg_count",
                            f"out_subblock {fmt_pair(sb)} = {sb[0] * sb[1]} tiles, but DST holds {self.capacity} "
                            f"tiles in {self.dst_sync} with {self.dst_accum} accumulation",
                            self.spec.span("block.out_subblock"),
                            Offer(tuple(suggestion(fmt_pair(hw), ("block.out_subblock", hw)) for hw in legal),
                                  "out_subblock of TT-Metal's SUBBLOCK_HW_CHOICES within DST"))
        if not self.sharded_out_allows(sb):
            raise PlanError("sharded output: out_subblock_w == per_core_N || out_subblock_h == 1",
                            f"out_subblock {fmt_pair(sb)} with a sharded output and per_core_N = {self.per_core_n}",
                            self.spec.span("block.out_subblock"),
                            Offer((suggestion(f"1 x {sb[1]}", ("block.out_subblock", (1, sb[1]))),
                                   suggestion(f"{sb[0]} x {self.per_core_n}",
                                              ("block.out_subblock", (sb[0], self.per_core_n)))),
                                  "out_subblock with out_subblock_h == 1 or out_subblock_w == per_core_N"))

    def cbs_for(self, ob: tuple[int, int], w: int, sb: tuple[int, int]):
        nb = self.kt // w
        l1acc, _ = accumulation_policy(self.spec, self.spec.compute, nb)
        pf, _ = partials_format(self.spec.compute, l1acc, self.out_fmt)
        out_blocks = self.batch_ct * (self.per_core_m // ob[0]) * (self.per_core_n // ob[1])
        return cb_table(self.spec, self.arch, self.in0_fmt, self.in1_fmt, self.out_fmt, self.bias_fmt, pf, ob, w,
                         nb, self.batch_ct, ob[1] // sb[1], out_blocks, (self.per_core_m, self.per_core_n),
                         self.in0_shard_w, self.in1_w, self.out_shard_w)

    def fits(self, ob: tuple[int, int], w: int, sb: tuple[int, int]) -> bool:
        _, regions, _ = self.cbs_for(ob, w, sb)
        return sum(r.bytes for r in regions) <= self.arch.usable_cb_bytes - self.l1_tensor_bytes

    def choose(self, choices: list[str], fixed: tuple[tuple[int, int], tuple[int, int]] | None = None
               ) -> tuple[tuple[int, int], int, tuple[int, int]]:
        """(out_block, in0_block_w, out_subblock): the first candidate whose CBs fit, largest out block
        first; if none fits, the first legal one, whose L1 overflow plan() then reports. `fixed`: the
        (out_block, out_subblock) a factory chooses itself (the spec's were checked against them)."""
        block = self.spec.block
        given_ob, given_w, given_sb = block.out_block, block.in0_block_w, block.out_subblock
        given_w = given_w or dataflow_of(self.spec.dataflow).fixed_in0_block_w(self.kt)   # the factory's own
        if fixed is not None:
            given_ob, given_sb = fixed
        if given_ob is not None:
            self.check_out_block(given_ob)
            self.check_padding(given_ob)
        if given_w is not None:
            self.check_in0_block_w(given_w)

        ob_candidates = [given_ob] if given_ob else sorted(
            ((h, w) for h in divisors(self.per_core_m) for w in divisors(self.per_core_n)),
            key=lambda p: (-(p[0] * p[1]), -p[1]))
        ob_candidates = [ob for ob in ob_candidates if given_ob or (self.padding_violation(ob) is None
                                                                     and self.sharded_out_allows(ob)
                                                                     and (self.spec.memory.in0 != Placement.L1_HEIGHT_SHARDED
                                                                          or ob[0] == self.per_core_m))]
        # blocks without whole padded out blocks first (the choice of every spec kgen planned before TT's
        # last_num_blocks_h/w_dim were taken), then those the factory's writers skip
        ob_candidates.sort(key=lambda ob: self.padding_violation(ob, strict=True) is not None)
        w_candidates = [given_w] if given_w else [d for d in reversed(divisors(self.kt))
                                                  if d <= AUTO_IN0_BLOCK_W_MAX and self.w_allowed(d)]
        if self.spec.memory.in0 == Placement.L1_HEIGHT_SHARDED and not given_w:
            w_candidates = [self.kt]          # TT: K == in0_block_w == the shard's width
        chosen: tuple[tuple[int, int], int, tuple[int, int]] | None = None
        first_legal: tuple[tuple[int, int], int, tuple[int, int]] | None = None
        for ob in ob_candidates:
            sb = given_sb or self.subblock_for(ob)
            if sb is None:
                continue
            if given_sb:
                try:
                    self.check_subblock(sb, ob)
                except PlanError:
                    if given_ob:
                        raise
                    continue
            for w in w_candidates:
                first_legal = first_legal or (ob, w, sb)
                if self.fits(ob, w, sb):
                    chosen = (ob, w, sb)
                    break
            if chosen:
                break
        if chosen is None:
            if first_legal is None:
                if given_sb:
                    self.check_subblock(given_sb, given_ob or (self.per_core_m, self.per_core_n))
                raise PlanError("a subblock from SUBBLOCK_HW_CHOICES fits the out block and DST",
                                "no out_block has a legal subblock", self.spec.span("block"))
            chosen = first_legal  # plan() reports its L1 overflow with suggestions
        (obh, obw), in0_block_w, (sbh, sbw) = chosen
        if given_ob is None and fixed is None:
            choices.append(f"out_block auto -> {obh} x {obw}: the largest block dividing per_core "
                           f"{self.per_core_m} x {self.per_core_n} whose CBs fit L1")
        if given_w is None and self.spec.memory.in0 == Placement.L1_HEIGHT_SHARDED:
            choices.append(f"in0_block_w auto -> {in0_block_w} = Kt: a height-sharded in0 is one K-block "
                           f"(TT-Metal: K == in0_block_w == the shard's width)")
        elif given_w is None:
            choices.append(f"in0_block_w auto -> {in0_block_w}: the largest divisor of Kt = {self.kt} up to "
                           f"{AUTO_IN0_BLOCK_W_MAX}" + (f" dividing the in0 shard's {self.in0_shard_w} tiles"
                                                        if self.in0_shard_w else "") + " whose CBs fit L1")
        if given_sb is None:
            choices.append(f"out_subblock auto -> {sbh} x {sbw}: first of TT-Metal's SUBBLOCK_HW_CHOICES (h, w) "
                           f"dividing out_block {obh} x {obw} within DST capacity {self.capacity}")
        elif fixed is None:
            self.check_subblock(given_sb, (obh, obw))
        return chosen



def packer_l1_acc_en(packer_l1_acc: bool, num_blocks: int) -> bool:
    """TT-Metal 0.81.1's `packer_l1_acc_en = packer_l1_acc && num_blocks > 1`, the one rule of every factory
    ttnn.matmul reaches, bias or not: the 2D builder (create_program_mcast_in0_in1_spec), the optimized
    reuse factory (MatmulMultiCoreReuseOptimizedProgramFactory), both 1D builders (mcast_in0 and mcast_in1,
    spec and legacy) and the DRAM-sharded builder, read in the machine code of the wheel's _ttnncpp.so
    (docs/reference/provenance.md, R7). It guards the PACKER_L1_ACC define and the Float16_b partials
    (partials_format). The older rule (num_blocks > 2, or > 1 with a fused bias; tt-metal@0000d49e) is
    only ccl_fusion_mcast_2d.cpp's at 0.81.1, which ttnn.matmul does not reach."""
    return packer_l1_acc and num_blocks > 1


def accumulation_policy(spec: MatmulSpec, c: ComputeConfig, num_blocks: int) -> tuple[bool, str]:
    """The decision (packer_l1_acc_en, the same for every dataflow) and why, for `kgen check`."""
    if not c.packer_l1_acc:
        if num_blocks > 1:
            return False, f"packer_l1_acc = false -> spill/reload: each of the {num_blocks} K-blocks after the " \
                          "first reloads the partials into DST"
        return False, "packer_l1_acc = false, num_blocks = 1 -> no spill: one K-block accumulates in DST"
    if packer_l1_acc_en(c.packer_l1_acc, num_blocks):
        extra = ("; the last K-block packs into the partials with L1 acc and the bias stage consumes them"
                 if spec.fuse_bias else
                 "; with 2 K-blocks the packer never accumulates: TT-Metal's kernel under PACKER_L1_ACC packs "
                 "block 0's partials with L1 acc off, and the last block reloads them and packs to out"
                 if num_blocks == 2 else
                 "; blocks 0..n-2 accumulate in L1, the last block reloads once and packs to out with L1 acc off")
        return True, f"packer_l1_acc requested and num_blocks = {num_blocks} > 1 -> packer L1 accumulation" + extra
    return False, ("packer_l1_acc requested, but num_blocks = 1: TT-Metal turns L1 accumulation on only when "
                   "num_blocks > 1, bias or not -> no spill: one K-block accumulates in DST")


def partials_format(c: ComputeConfig, l1acc: bool, out_fmt: str) -> tuple[str, str]:
    """interm0_data_format (every 0.81.1 matmul factory): Float32 with fp32 dest, else Float16_b with L1 acc
    (`l1acc` = packer_l1_acc_en), else out."""
    if c.fp32_dest_acc:
        return "Float32", "fp32_dest_acc = true -> partials in Float32"
    if l1acc:
        return "Float16_b", "packer L1 accumulation without fp32 dest -> partials in Float16_b (L1 acc cannot add into block-float)"
    return out_fmt, f"no fp32 dest and no L1 accumulation -> partials in the output format {out_fmt}"



def l1_offers(blocking: Blocking, ob: tuple[int, int], w: int, sb: tuple[int, int]) -> tuple[Offer, ...]:
    """What an L1 overflow offers: the largest smaller in0_block_w, and the largest smaller out block
    (its tallest first), each one the spec re-plans with (PlanError re-plans them when shown)."""
    given_sb = blocking.spec.block.out_subblock is not None
    ws = (suggestion(f"in0_block_w = {d}", ("block.in0_block_w", d))
          for d in reversed(divisors(blocking.kt)) if d < w)
    obs = (suggestion(f"out_block = {h} x {ww}", ("block.out_block", (h, ww)))
           for h in reversed(divisors(blocking.per_core_m)) for ww in reversed(divisors(blocking.per_core_n))
           if h * ww < ob[0] * ob[1] and (not given_sb or (h % sb[0] == 0 and ww % sb[1] == 0)))
    return (Offer(ws, f"in0_block_w below {w}", count=1),
            Offer(obs, f"out_block smaller than {fmt_pair(ob)}", count=1))
