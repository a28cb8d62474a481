"""Random *valid* matmul specs for `kgen fuzz`: seeded, reproducible, small enough to emulate.

Every case is built inside the legal space directly (divisors, DST capacity, the L1 budget) from
the rules the planner enforces (README "How kgen decides", plan.py), instead of rejection-sampling
against the planner: a generator that asked the planner what is legal could never catch the
planner rejecting something legal. `check_case` then runs kgen's own stages on the text.

Size: the emulator runs every core, so the cost is the whole matmul. Batch*M and N are at most
8 tiles (256 elements), K at most 16 tiles (512), and Mt*Nt*Kt <= 512 tile-triples, i.e. at most
512 * 32**3 = 16 Mi multiply-accumulates per case.
"""

from __future__ import annotations

import dataclasses
import functools

import random
import shutil
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgen.core import terminal
from kgen.core.terminal import keep_together
from kgen.core.arch import ArchFacts, load_arch
from kgen.core.errors import KgenBug, KgenError
from kgen.core.types import ARCHS, DTYPE_TO_FORMAT, MATH_FIDELITY_VALUE, TILE_HW, Placement
from kgen.gen import activations
from kgen.gen import dataflow as dataflows
from kgen.gen.planned import FuzzLimits
from kgen.proof import fuzz_forms
from kgen.proof.chain import EXIT_INCOMPLETE

if TYPE_CHECKING:  # stage modules are imported lazily, as cli.py does, so generation stays cheap
    from kgen.gen.ir import Program
    from kgen.gen.pipeline import Artifacts
    from kgen.gen.plan import Plan

MAX_GRID = 3                 # grids 1x1 .. 3x3: enough to exercise sender/receiver roles
FULL_GRID_SHARE = 0.12       # ... and this share of cases on grids up to the arch's whole worker
                             # grid (13 x 10 Blackhole, 8 x 8 Wormhole), one or two tiles per core
MAX_MT = 8                   # batch*M in tiles (fused batch), <= 256 elements
MAX_NT = 8                   # N in tiles, <= 256 elements
MAX_KT = 16                  # K in tiles, <= 512 elements
MAX_TILE_MACS = 512          # Mt*Nt*Kt; one tile triple is 32**3 MACs -> <= 16 Mi MACs per case
AUTO_IN0_BLOCK_W_MAX = 8     # plan.py's bound on the auto in0_block_w search (mirrored, not imported)
INPUT_BUFFERING_DEPTH = 2    # in0/in1 CBs are double-buffered when more than one K-block flows
# Shares of cases drawn padded: a last row or column of cores with fewer tiles than
# per_core (TT-Metal's padded last blocks), and M, N or K short of whole tiles (padded as ttnn tilizes).
PADDED_BLOCKS_SHARE = 0.3
ONE_D_SHARE = 0.25           # cases made TT-Metal's 1D multicast (mcast_1d_in0 / mcast_1d_in1)
PARTIAL_ROW_SHARE = 0.5      # of those, on a grid whose last row the run of cores fills in part
WHOLE_BLOCKS_SHARE = 0.5     # of the padded cases, a last core with whole out blocks past the tensor where TT skips them
# The dataflows a case is drawn with; the 1D multicast forms are made from drawn cases (_one_d), on
# their own random stream, so that the cases of a seed that stay 2D or reuse are what they were.
DRAWN_DATAFLOWS = dataflows.GRID_2D
TILE_PADDING_SHARE = 0.3
TRANSPOSE_MCAST_SHARE = 0.25  # of mcast_2d cases: transpose_mcast (M blocks along x)
DRAM_SHARDED_SHARE = 0.1      # cases made TT-Metal's DRAM-sharded decode matmul (the factories taking no DRAM tensor)
MAX_DRAWS = 64               # bound of the L1-budget redraw loop (it never needs more than a few)

DTYPES: tuple[str, ...] = tuple(DTYPE_TO_FORMAT)
FIDELITIES: tuple[str, ...] = tuple(MATH_FIDELITY_VALUE)
# bfloat16 dominates real use; the others still appear in a good share of cases.
DTYPE_WEIGHTS: dict[str, int] = {"bfloat16": 4, "bfloat8_b": 3, "bfloat4_b": 1, "float32": 2}


@dataclass(frozen=True)
class FuzzCase:
    index: int
    seed: int
    name: str
    text: str                # a complete .kspec source

    @property
    def filename(self) -> str:
        return f"{self.name}.kspec"


@dataclass(frozen=True)
class CaseResult:
    """What kgen's stages made of a case: the plan and program, or the kgen error and its stage."""

    case: FuzzCase
    plan: Plan | None
    program: Program | None
    stage: str | None                      # parse, or the pipeline stage that raised: plan | ir | verified | rendered
    error: KgenError | KgenBug | None
    artifacts: Artifacts | None = None     # what the stages made (all of them when ok)

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_for_error(self) -> CaseResult:
        if self.error is not None:
            raise self.error
        return self


@dataclass(frozen=True)
class _Choice:
    """The concrete configuration of one case (all in tiles), before it is written as text."""

    arch: str
    dataflow: str
    batch: int
    mt: int                   # batch * M tiles (the planner fuses batch into M)
    nt: int
    kt: int
    grid_req: tuple[int, int]             # x, y as written
    per_core: tuple[int, int]             # M x N tiles
    out_block: tuple[int, int]
    in0_block_w: int
    subblock: tuple[int, int]
    dtypes: tuple[str, str, str, str | None]   # in0, in1, out, bias (None: defaults to out)
    fidelity: str
    fp32_dest_acc: bool
    packer_l1_acc: bool
    math_approx: bool
    dst_full_sync: bool
    bias: bool
    relu: bool
    untilize: bool
    auto: frozenset[str]       # block keys written as `auto`
    omit: frozenset[str]       # optional keys left out (the default applies)
    trim: tuple[int, int, int] = (0, 0, 0)   # elements short of whole tiles in M (per batch), N, K
    transpose_mcast: bool = False            # grid_req is then M cores along x, N cores along y
    memory: tuple[str, str] = (Placement.DRAM, Placement.DRAM)   # where in0 and the output live (spec `memory { }`)
    activation: str = "none"                 # fuse.activation as written (relu when `relu`)
    broadcast_in1: bool = True               # False: one in1 per batch, the kernels loop over the batch
    memory_in1: str = Placement.DRAM         # where in1 lives when not the factory's own (l1: interleaved in L1)
    tt_auto: bool = False                    # `dataflow = auto`: TT's factory, blocking (and grid if not written)
    write_grid: bool = True                  # with tt_auto: the grid is ttnn.matmul's core_grid, or left out
    transposed: tuple[bool, bool] = (False, False)   # transpose_a, transpose_b (fuzz_forms.transposed_inputs)
    fuse_batch: bool | None = None           # `fuse_batch =` as written (None: not written, the default)
    # the shard specs written (fuzz_forms.shard_specs): tensor, shard shape in elements, shard grid (x, y)
    shards: tuple[tuple[str, tuple[int, int], tuple[int, int]], ...] = ()

    @property
    def unfused(self) -> bool:
        """Every core loops over the batch (TT's fuse_batch = false): asked for, or one in1 per batch."""
        return self.batch > 1 and (self.fuse_batch is False or (self.fuse_batch is None and not self.broadcast_in1))

    @property
    def batch_ct(self) -> int:
        """The batch the kernels loop over: 1 with the batch fused into M, the batch when it is not."""
        return self.batch if self.unfused else 1

    @property
    def num_blocks(self) -> int:
        return self.kt // self.in0_block_w


# ----------------------------------------------------------------------------------------------
# The legal space (mirrors of plan.py's rules, written from the README / TT-Metal digest)
# ----------------------------------------------------------------------------------------------

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _auto_per_core(tiles: int, cores: int) -> int:
    """The planner's auto per_core: the smallest divisor that needs no more than `cores` cores."""
    return min(d for d in _divisors(tiles) if tiles // d <= cores)


def _auto_in0_block_w(kt: int) -> int:
    """The planner's auto in0_block_w when L1 is not the limit (always so in this small space)."""
    return max(d for d in _divisors(kt) if d <= AUTO_IN0_BLOCK_W_MAX)


def _l1_acc(packer_l1_acc: bool, num_blocks: int) -> bool:
    """packer_l1_acc_en = packer_l1_acc && num_blocks > 1: every factory of TT-Metal 0.81.1's
    ttnn.matmul, bias or not (docs/reference/provenance.md, R7). A deliberate independent restatement
    of the planner's rule (blocking.packer_l1_acc_en), as the fuzzer's oracle."""
    return packer_l1_acc and num_blocks > 1


def _partials_format(fp32_dest_acc: bool, l1acc: bool, out_fmt: str) -> str:
    """interm0_data_format: a deliberate independent restatement of plan._partials_format (TT-Metal's
    2D factory rule), as the fuzzer's oracle."""
    if fp32_dest_acc:
        return "Float32"
    return "Float16_b" if l1acc else out_fmt


def _cb_bytes(arch: ArchFacts, c: _Choice) -> int:
    """Bytes of the CB regions per core (README "CBs"): in0/in1 one K-block, double-buffered with
    more than one K-block; bias out_block_w tiles; out and partials one out block, sharing a region
    when their formats match unless untilize_out has more than one subblock column."""
    tb = arch.tile_bytes
    in0_fmt, in1_fmt, out_fmt = (DTYPE_TO_FORMAT[d] for d in c.dtypes[:3])
    bias_fmt = DTYPE_TO_FORMAT[c.dtypes[3] or c.dtypes[2]]
    obh, obw = c.out_block
    depth = INPUT_BUFFERING_DEPTH if c.batch_ct * c.num_blocks > 1 else 1
    pf = _partials_format(c.fp32_dest_acc, _l1_acc(c.packer_l1_acc, c.num_blocks), out_fmt)
    out, partials = obh * obw * tb[out_fmt], obh * obw * tb[pf]
    # An independent mirror of plan.out_partials_share: TT-Metal's in-place rule, and kgen's split
    # when several output blocks per core pass through a region partials are packed into first.
    several = c.batch_ct * (c.per_core[0] // obh) * (c.per_core[1] // obw) > 1    # batch fused into M, or looped
    partials_first = c.num_blocks > 1 or c.bias or c.untilize
    share = pf == out_fmt and not (c.untilize and obw // c.subblock[1] > 1) and not (several and partials_first)
    total = obh * c.in0_block_w * depth * tb[in0_fmt] + obw * c.in0_block_w * depth * tb[in1_fmt]
    total += obw * tb[bias_fmt] if c.bias else 0
    return total + (max(out, partials) if share else out + partials)


# ----------------------------------------------------------------------------------------------
# Drawing a case
# ----------------------------------------------------------------------------------------------

def _dtype(rng: random.Random) -> str:
    return rng.choices(DTYPES, weights=[DTYPE_WEIGHTS[d] for d in DTYPES])[0]


def _blocking(rng: random.Random, mt: int, nt: int, auto_w: bool) -> tuple[int, int]:
    """(kt, in0_block_w) with Mt*Nt*Kt within the MAC budget. Explicit blocking draws the K-block
    count first, so that 1, 2 and > 2 K-blocks (the three accumulation regimes) all occur often."""
    max_kt = max(1, min(MAX_KT, MAX_TILE_MACS // (mt * nt)))     # a full grid still gets one K tile
    if auto_w:
        kt = rng.randint(1, max_kt)
        return kt, _auto_in0_block_w(kt)
    want = rng.choices((1, 2, 3), weights=(25, 20, 55))[0]
    if want == 3:
        want = rng.randint(3, max(3, max_kt))
    blocks = min(want, max_kt)
    w = rng.randint(1, max_kt // blocks)
    return blocks * w, w


def _draw(rng: random.Random) -> _Choice:
    arch = rng.choice(ARCHS)
    dataflow = rng.choice(DRAWN_DATAFLOWS)

    # Grid with work first, then per-core tiles, so that totals stay within MAX_MT x MAX_NT; a
    # share of cases spreads one or two tiles per core over grids up to the whole worker grid.
    full_x, full_y = load_arch(arch).worker_grid
    if rng.random() < FULL_GRID_SHARE:
        gx, gy = rng.randint(1, full_x), rng.randint(MAX_GRID + 1, full_y)
        if rng.random() < 0.5:
            gx, gy = gy if gy <= full_x else full_x, rng.randint(1, full_y)
        pn, pm = rng.randint(1, 2), rng.randint(1, 2)
    else:
        gx, gy = rng.randint(1, MAX_GRID), rng.randint(1, MAX_GRID)
        pn, pm = rng.randint(1, MAX_NT // gx), rng.randint(1, MAX_MT // gy)
    nt, mt = gx * pn, gy * pm
    # Sometimes ask for more cores than have work (the planner warns, the extra cores idle).
    grid_req = (gx, gy)
    if rng.random() < 0.2:
        grid_req = (rng.randint(gx, max(gx, MAX_GRID)), rng.randint(gy, max(gy, MAX_GRID)))
    # batch divides the fused M (each batch is a whole number of tile rows).
    batch = 1 if rng.random() < 0.6 else rng.choice(_divisors(mt))

    in0, in1, out = _dtype(rng), _dtype(rng), _dtype(rng)
    bias = rng.random() < 0.4
    bias_dtype = _dtype(rng) if bias and rng.random() < 0.5 else None
    relu = rng.random() < 0.4
    # Block-float output exists only as tiles: untilize_out needs bfloat16 or float32 out.
    untilize = out in ("bfloat16", "float32") and rng.random() < 0.25

    fidelity = rng.choice(FIDELITIES)
    fp32_dest_acc = rng.random() < 0.5
    packer_l1_acc = rng.random() < 0.6
    math_approx = rng.random() < 0.5
    dst_full_sync = rng.random() < 0.15
    capacity = load_arch(arch).dst_tiles(dst_full_sync, fp32_dest_acc)

    auto: set[str] = set()
    for key, p in (("in0_block_w", 0.2), ("out_subblock", 0.3), ("out_block", 0.3), ("per_core", 0.25)):
        if rng.random() < p:
            auto.add(key)
    kt, w = _blocking(rng, mt, nt, "in0_block_w" in auto)

    # per_core `auto` only where the planner's choice is this one (a larger requested grid would
    # spread M/N over more cores and break the explicit out_block/subblock drawn below).
    if (_auto_per_core(mt, grid_req[1]), _auto_per_core(nt, grid_req[0])) != (pm, pn):
        auto.discard("per_core")
    # out_block: the whole per-core block half the time (what `auto` gives when L1 fits), else any
    # divisor pair (several output blocks per core).
    if "out_block" in auto or rng.random() < 0.5:
        ob = (pm, pn)
    else:
        ob = (rng.choice(_divisors(pm)), rng.choice(_divisors(pn)))
    subblocks = [(h, sw) for h in _divisors(ob[0]) for sw in _divisors(ob[1]) if h * sw <= capacity]
    sb = rng.choice(subblocks)
    if "out_subblock" in auto:
        sb = _auto_subblock(ob, capacity)

    omit: set[str] = set()
    if ob == (pm, pn) and "out_block" not in auto and rng.random() < 0.5:
        omit.add("out_block")   # the default is per_core (shrunk to fit L1; it fits here)
    for key in ("batch", "dataflow"):
        if (key == "batch" and batch == 1 or key == "dataflow" and dataflow == dataflows.DEFAULT.name) and rng.random() < 0.3:
            omit.add(key)       # batch = 1 is the default; the dataflow line is left out only under TT's choice

    # untilize_out with a fused bias needs partials in the output format (plan.py rule).
    out_fmt = DTYPE_TO_FORMAT[out]
    if untilize and bias and _partials_format(fp32_dest_acc, _l1_acc(packer_l1_acc, kt // w), out_fmt) != out_fmt:
        untilize = False

    return _Choice(arch, dataflow, batch, mt, nt, kt, grid_req, (pm, pn), ob, w, sb,
                   (in0, in1, out, bias_dtype), fidelity, fp32_dest_acc, packer_l1_acc, math_approx,
                   dst_full_sync, bias, relu, untilize, frozenset(auto), frozenset(omit),
                   activation=_draw_activation(rng, relu))


def _draw_activation(rng: random.Random, relu: bool) -> str:
    """The packer's ReLU when drawn, else half the time an SFPU activation of the table with random
    parameters (softplus's beta non-zero), else none. Drawn last, so the other choices of a seed stay."""
    if relu:
        return activations.parse("relu").spelling
    if rng.random() < 0.5:
        return activations.NONE
    name = rng.choice(activations.SFPU_SPELLINGS)
    row = activations.ROWS[name]
    if not row.params or rng.random() < 0.3:
        return activations.parse(name).spelling
    values = _PARAMETER_DRAWS[row.params](rng)
    return activations.parse(f"{name}({', '.join(activations.format_f32(v) for v in values)})").spelling


def _clamp(rng: random.Random) -> tuple[float, float]:
    low = round(rng.uniform(-4.0, 0.0), 2)
    return low, round(low + rng.uniform(0.25, 8.0), 2)


# A parameterised row's parameters, by their names (kgen.gen.activations): values TT accepts and
# that compute what the name says
_PARAMETER_DRAWS = {
    ("min", "max"): _clamp,
    ("beta", "threshold"): lambda rng: (rng.choice((-1, 1)) * round(rng.uniform(0.25, 4.0), 2),
                                        round(rng.uniform(1.0, 30.0), 1)),
    ("max",): lambda rng: (round(rng.uniform(0.25, 8.0), 2),),
    ("scale", "alpha"): lambda rng: (round(rng.uniform(0.5, 2.0), 2), round(rng.uniform(0.5, 2.0), 2)),
    ("vector_mode",): lambda rng: (float(rng.randrange(5)),),
}


def _auto_subblock(ob: tuple[int, int], capacity: int) -> tuple[int, int]:
    """The planner's auto subblock: the first of TT-Metal's SUBBLOCK_HW_CHOICES that divides the
    out block and fits DST. Only used for the L1 model (the text says `auto`)."""
    from kgen.gen.plan import (
        SUBBLOCK_HW_CHOICES,  # a table of TT-Metal's, not a rule of kgen's
    )
    return next((h, w) for h, w in SUBBLOCK_HW_CHOICES if ob[0] % h == 0 and ob[1] % w == 0 and h * w <= capacity)


# ----------------------------------------------------------------------------------------------
# Writing a case
# ----------------------------------------------------------------------------------------------

def _b(v: bool) -> str:
    return "true" if v else "false"


def _dims(rng: random.Random, *values: int) -> str:
    # `4 x 2` and `4x2` are one DIMS token either way; both spellings exercise the lexer.
    return (" x " if rng.random() < 0.8 else "x").join(str(v) for v in values)


@functools.cache
def _presets() -> dict[str, dict[str, object]]:
    """The shipped compute presets (configs/compute/*.kspec), to write `compute = NAME` + overrides."""
    from kgen.gen.spec import preset_computes, preset_values
    return {name: preset_values(name) for name in preset_computes()}


def _compute_lines(rng: random.Random, c: _Choice) -> tuple[list[str], list[str]]:
    """(top-level compute block, matmul lines): inline only, a shipped preset plus overrides of the
    fields that differ, or a named block in the file."""
    fields = {"math_fidelity": c.fidelity, "fp32_dest_acc": c.fp32_dest_acc, "packer_l1_acc": c.packer_l1_acc,
              "math_approx": c.math_approx, "dst_full_sync": c.dst_full_sync}
    text = {k: v if isinstance(v, str) else _b(v) for k, v in fields.items()}
    style = rng.choice(("inline", "preset", "named"))
    if style == "named":
        body = "\n".join(f"    {k:<13} = {v}" for k, v in text.items())
        return [f"compute cfg {{\n{body}\n}}", ""], ["compute  = cfg"]
    if style == "preset":
        presets = _presets()
        preset = rng.choice(sorted(presets))
        diff = [f"{k} = {text[k]}" for k, v in fields.items() if presets[preset][k] != v]
        line = f"compute  = {preset}"
        if diff:  # one item, so the shuffle keeps the overrides right after their preset
            line += "\n    compute { " + "  ".join(diff) + " }"
        return [], [line]
    return [], ["compute { " + "  ".join(f"{k} = {v}" for k, v in text.items()) + " }"]


def _text(rng: random.Random, c: _Choice, name: str, seed: int, index: int) -> str:
    def block_value(key: str, value: str) -> str:
        return "auto" if key in c.auto else value

    m, n, k = c.mt * TILE_HW // c.batch - c.trim[0], c.nt * TILE_HW - c.trim[1], c.kt * TILE_HW - c.trim[2]
    in0, in1, out, bias_dtype = c.dtypes
    dtype = f"dtype {{ in0 = {in0}  in1 = {in1}  out = {out}" + (f"  bias = {bias_dtype}" if bias_dtype else "") + " }"
    block = [f"in0_block_w = {block_value('in0_block_w', str(c.in0_block_w))}",
             f"out_subblock = {block_value('out_subblock', _dims(rng, *c.subblock))}",
             f"per_core = {block_value('per_core', _dims(rng, *c.per_core))}"]
    if "out_block" not in c.omit:
        block.append(f"out_block = {block_value('out_block', _dims(rng, *c.out_block))}")
    rng.shuffle(block)
    # a key the form leaves to a default (a shard spec's grid and per_core, multi_core's whole block)
    block = [b for b in block if not b.startswith("per_core") or "per_core" not in c.omit]
    pre, compute = _compute_lines(rng, c)
    lines = [f"arch     = {c.arch}", f"shape    = {_dims(rng, m, n, k)}", dtype,
             f"grid     = {_dims(rng, *c.grid_req)}", "block { " + "  ".join(block) + " }", *compute]
    lines = [ln for ln in lines if not (ln.startswith("grid") and "grid" in c.omit)
             and not (ln.startswith("block") and "block" in c.omit)]
    if c.tt_auto:           # TT picks the factory and every block value (and the grid, when none is written)
        lines = [ln for ln in lines if not ln.startswith("block") and (c.write_grid or not ln.startswith("grid"))]
    if "batch" not in c.omit:
        lines.append(f"batch    = {fuzz_forms.batch_spelling(random.Random(f'kgen-fuzz-rank:{seed}:{index}'), c.batch)}")
    if not c.tt_auto:
        lines.append(f"dataflow = {c.dataflow}")
    elif "dataflow" not in c.omit:      # no dataflow line is TT's choice too
        lines.append(f"dataflow = {dataflows.AUTO}")
    if c.transpose_mcast:
        lines.append("transpose_mcast = true")
    lines += [f"transpose_{t} = true" for t, on in zip("ab", c.transposed) if on]
    if not c.broadcast_in1:
        lines.append("broadcast_in1 = false")
    if c.fuse_batch is not None:
        lines.append(f"fuse_batch = {_b(c.fuse_batch)}")
    if c.memory != (Placement.DRAM, Placement.DRAM) or c.memory_in1 != Placement.DRAM:
        # in1 where the factory takes it, when that is not DRAM (the DRAM-sharded factory's banks)
        in1_at = sorted(dataflows.get(c.dataflow).placements.get("in1", {Placement.DRAM}))
        in1_line = "" if Placement.DRAM in in1_at else f"  in1 = {in1_at[0]}"
        if c.memory_in1 != Placement.DRAM:
            in1_line = f"  in1 = {c.memory_in1}"
        shards = "".join(f"  {t}_shard = {h} x {w} on {x} x {y}" for t, (h, w), (x, y) in c.shards)
        lines.append(f"memory {{ in0 = {c.memory[0]}{in1_line}  out = {c.memory[1]}{shards} }}")
    fuse = ([f"bias = {_b(c.bias)}"] if c.bias or rng.random() < 0.3 else []) + \
           ([f"activation = {c.activation}"] if c.activation != activations.NONE or rng.random() < 0.3 else [])
    if fuse:
        lines.append("fuse { " + "  ".join(fuse) + " }")
    if c.untilize or rng.random() < 0.2:
        lines.append(f"untilize_out = {_b(c.untilize)}")
    head, rest = lines[:2], lines[2:]
    rng.shuffle(rest)   # keys may come in any order; arch and shape stay first for the reader
    macs = c.mt * c.nt * c.kt * TILE_HW ** 3
    header = (f"# kgen fuzz case {index} of seed {seed}: {c.arch} {c.dataflow}, batch*M x N x K = "
              f"{c.mt * TILE_HW} x {n} x {k} ({macs} MACs), {c.num_blocks} K-block(s), "
              f"{c.dtypes[0]}/{c.dtypes[1]} -> {c.dtypes[2]}")
    body = "\n".join(f"    {ln}" for ln in head + rest)
    return "\n".join([header, *pre, f"matmul {name} {{", body, "}", ""])


def _case_name(seed: int, index: int) -> str:
    # A .kspec NAME: letters, digits and underscores only (a negative seed gets an `n`).
    return f"fuzz_s{'n' if seed < 0 else ''}{abs(seed)}_{index:05d}"


def generate_case(seed: int, index: int) -> FuzzCase:
    """Case `index` of `seed`: a function of (seed, index) only (its own string-seeded Random,
    which CPython seeds through SHA-512, so it does not depend on PYTHONHASHSEED or global state)."""
    return _generate(seed, index)[1]


def _generate(seed: int, index: int) -> tuple[_Choice, FuzzCase]:
    """The case and the configuration it was drawn as (tests compare the latter with the plan)."""
    rng = random.Random(f"kgen-fuzz:{seed}:{index}")
    for _ in range(MAX_DRAWS):
        c = _draw(rng)
        if _cb_bytes(load_arch(c.arch), c) <= load_arch(c.arch).usable_cb_bytes:
            break
    else:  # unreachable within the size limits above (worst case ~1.34 MB < 1.39 MB)
        raise AssertionError(f"fuzz: no case within L1 after {MAX_DRAWS} draws (seed {seed}, index {index})")
    # the 1D and padded forms draw from their own streams, so the rest of a case is what it was before them
    c = _one_d(random.Random(f"kgen-fuzz-1d:{seed}:{index}"), c)
    c = _padded(random.Random(f"kgen-fuzz-padding:{seed}:{index}"), c)
    c = _transposed(random.Random(f"kgen-fuzz-transpose:{seed}:{index}"), c)
    c = fuzz_forms.sharded_2d(random.Random(f"kgen-fuzz-sharding:{seed}:{index}"), c, _cb_bytes)
    # issue #39's forms (kgen/proof/fuzz_forms.py): height and width shards on the 1D multicasts, the batch looped
    # over (fuse_batch = false, in1 shared or one per batch), TT's multi-core factory, L1-interleaved tensors,
    # `dataflow = auto`, transposed inputs, the shard specs written
    c = fuzz_forms.height_sharded(random.Random(f"kgen-fuzz-height-sharded:{seed}:{index}"), c, _cb_bytes)
    c = fuzz_forms.width_sharded(random.Random(f"kgen-fuzz-width-sharded:{seed}:{index}"), c, _cb_bytes)
    c = _dram_sharded(random.Random(f"kgen-fuzz-dram-sharded:{seed}:{index}"), c)
    c = fuzz_forms.unfused_batch(random.Random(f"kgen-fuzz-batched-in1:{seed}:{index}"), c, _cb_bytes)
    c = fuzz_forms.multi_core(random.Random(f"kgen-fuzz-multi-core:{seed}:{index}"), c)
    c = fuzz_forms.l1_interleaved(random.Random(f"kgen-fuzz-l1-interleaved:{seed}:{index}"), c, _cb_bytes)
    c = fuzz_forms.tt_auto(random.Random(f"kgen-fuzz-auto:{seed}:{index}"), c, DRAWN_DATAFLOWS)
    c = fuzz_forms.transposed_inputs(random.Random(f"kgen-fuzz-transposed-inputs:{seed}:{index}"), c, _cb_bytes)
    c = fuzz_forms.shard_specs(random.Random(f"kgen-fuzz-shard-spec:{seed}:{index}"), c)
    name = _case_name(seed, index)
    return c, FuzzCase(index, seed, name, _text(rng, c, name, seed, index))


def _one_d(rng: random.Random, c: _Choice) -> _Choice:
    """Some cases made TT-Metal's 1D multicast (README, "The 1D multicast factory"): the drawn grid's
    cores become one row-major run, each holding the drawn per-core block, and the multicast operand's
    dimension shrinks to one per-core block (mcast_in0: Mt = per_core_M; mcast_in1: Nt = per_core_N) while
    the other spreads over every core. The per-core blocking (and so the L1 budget) and the MACs per
    core are the drawn ones. The grid is the drawn grid with work, which the cores fill exactly, or in
    some cases a narrower one whose last row they fill in part (the factory multicasts to the run's
    bounding box; its cores past the run only receive)."""
    if rng.random() >= ONE_D_SHARE:
        return c
    dataflow = rng.choice(tuple(dataflows.ONE_D))
    gx, gy = c.nt // c.per_core[1], c.mt // c.per_core[0]        # the drawn grid with work
    pm, pn = c.per_core
    cores = gx * gy
    mt, nt = (pm, cores * pn) if dataflows.ONE_D[dataflow] == 0 else (cores * pm, pn)
    batch = c.batch if mt % c.batch == 0 else 1                   # batch is fused into M
    arch = load_arch(c.arch)
    wx, wy = arch.worker_grid
    grid = (gx, gy)
    widths = [w for w in range(2, min(wx + 1, cores)) if cores % w and -(-cores // w) <= wy]
    if widths and rng.random() < PARTIAL_ROW_SHARE:
        w = rng.choice(widths)
        grid = (w, -(-cores // w))                                # a run whose last row is partial
    one_d = dataclasses.replace(c, dataflow=dataflow, mt=mt, nt=nt, batch=batch, grid_req=grid,
                                auto=frozenset(c.auto - {"per_core"}),       # 1D's auto per_core is its own
                                omit=frozenset(c.omit - {"dataflow"}))
    # the 1D case keeps the drawn per-core blocking; it is taken only while its CBs still fit L1
    return one_d if _cb_bytes(arch, one_d) <= arch.usable_cb_bytes else c


def _padded(rng: random.Random, c: _Choice) -> _Choice:
    """Some cases made padded. Fewer tiles on the last row (column) of cores, by fewer than one out
    block, so the last core's tiles still reach its last out block (TT-Metal's _padding readers read
    every earlier block whole; plan.py's rule), or, where the factory's writers skip a last core's whole
    out blocks past the tensor, by up to all but one of its tiles; and M, N, K short of whole tiles. The per-core
    blocking, and so the L1 budget, is unchanged. Not with untilize_out (the planner refuses it) nor
    with a batch (each batch is a whole number of tile rows here)."""
    if c.untilize:
        return c
    mt, nt, auto = c.mt, c.nt, set(c.auto)
    (pm, pn), (obh, obw) = c.per_core, c.out_block
    if rng.random() < PADDED_BLOCKS_SHARE and c.batch == 1:
        # M only where the factory's kernels take a padded last M-block: mcast_2d below the top row,
        # mcast_1d_in0 on every core (the one M-block), mcast_1d_in1 never
        factory, m_ok = dataflows.get(c.dataflow), dataflows.get(c.dataflow).pads_last_m_block(c.mt // pm)
        # whole out blocks past the tensor where the factory's writers skip them (its own random stream)
        whole = random.Random(f"kgen-fuzz-whole:{c.mt}:{c.nt}:{c.kt}:{c.per_core}:{c.out_block}").random()
        reach = [pm if whole < WHOLE_BLOCKS_SHARE and factory.skips_padded_out_blocks(0, c.mt // pm) else min(pm, obh),
                 pn if whole < WHOLE_BLOCKS_SHARE and factory.skips_padded_out_blocks(1, c.mt // pm) else min(pn, obw)]
        if reach[0] > 1 and m_ok and rng.random() < 0.6:
            mt -= rng.randint(1, reach[0] - 1)
        if reach[1] > 1 and rng.random() < 0.6:
            nt -= rng.randint(1, reach[1] - 1)
        if (mt, nt) != (c.mt, c.nt):
            auto.discard("per_core")        # the planner's auto per_core divides Mt and Nt
    trim = (0, 0, 0)
    if rng.random() < TILE_PADDING_SHARE:
        trim = tuple(rng.randint(1, TILE_HW - 1) if rng.random() < 0.5 else 0 for _ in range(3))
    return dataclasses.replace(c, mt=mt, nt=nt, auto=frozenset(auto), trim=trim)


def _transposed(rng: random.Random, c: _Choice) -> _Choice:
    """Some mcast_2d cases with transpose_mcast: the 2D factory then lays the M blocks along x and the
    N blocks along y, so the requested grid is written swapped (and must still fit the worker grid:
    the factory checks num_blocks_y <= grid.x and num_blocks_x <= grid.y after the swap). per_core is
    written out: auto would spread M over the swapped grid's columns."""
    wx, wy = load_arch(c.arch).worker_grid
    gx, gy = c.grid_req
    if not dataflows.get(c.dataflow).transpose_mcast or gy > wx or gx > wy or rng.random() >= TRANSPOSE_MCAST_SHARE:
        return c
    return dataclasses.replace(c, grid_req=(gy, gx), transpose_mcast=True, auto=c.auto - {"per_core"})


def _dram_sharded(rng: random.Random, c: _Choice) -> _Choice:
    """Some cases made by a factory that takes no DRAM-interleaved tensor (TT-Metal's DRAM-sharded
    decode matmul): the factory draws its own layout (`Dataflow.fuzz_layout`, with its rules); no
    bias, no untilize, no transpose, whole tiles."""
    sharded_only = [d for d in dataflows.REGISTRY if not dataflows.takes_dram(d)]
    if not sharded_only or rng.random() >= DRAM_SHARDED_SHARE:
        return c
    df = rng.choice(sharded_only)
    d = df.fuzz_layout(rng, c.arch, c.fp32_dest_acc, FuzzLimits(MAX_NT, MAX_KT, MAX_GRID, MAX_TILE_MACS))
    return dataclasses.replace(c, dataflow=df.name, batch=1, mt=d.mt, nt=d.nt, kt=d.kt, grid_req=d.grid,
                               per_core=d.per_core, out_block=d.out_block, in0_block_w=d.in0_block_w,
                               subblock=d.subblock, bias=False, untilize=False, trim=(0, 0, 0),
                               transpose_mcast=False, auto=frozenset(),
                               omit=frozenset(c.omit - {"dataflow", "out_block"}), memory=d.placements,
                               dtypes=c.dtypes[:3] + (None,))


def generate_cases(count: int, seed: int) -> list[FuzzCase]:
    return [generate_case(seed, i) for i in range(count)]


# ----------------------------------------------------------------------------------------------
# Checking a case with kgen's own stages
# ----------------------------------------------------------------------------------------------

def check_case(case: FuzzCase) -> CaseResult:
    """parse, then the stages through `rendered` in-process (kgen/gen/pipeline.py). A kgen error
    (user-level or bug) is returned with the stage that raised it; any other exception propagates."""
    from kgen.gen.pipeline import Artifacts, run
    from kgen.gen.spec import parse_text, resolve

    try:
        spec = resolve(parse_text(case.text, case.filename))
    except (KgenError, KgenBug) as exc:
        return CaseResult(case, None, None, "parse", exc)
    try:
        a = run(spec)
    except (KgenError, KgenBug) as exc:
        a = getattr(exc, "artifacts", None) or Artifacts(spec)
        return CaseResult(case, a.plan, a.verified, getattr(exc, "stage", None), exc, a)
    return CaseResult(case, a.plan, a.verified, None, None, a)


def features(p: Plan) -> dict[str, object]:
    """The coverage-relevant facts of a planned case (for summaries and coverage checks)."""
    s, c = p.spec, p.compute
    return {
        "arch": p.arch.name, "dataflow": s.dataflow, "batch": s.batch, "broadcast_in1": s.broadcast_in1,
        "dtypes": f"{s.dtype_in0}/{s.dtype_in1}->{s.dtype_out}", "fidelity": c.math_fidelity,
        "fp32_dest_acc": c.fp32_dest_acc, "packer_l1_acc": c.packer_l1_acc, "dst_full_sync": c.dst_full_sync,
        "policy": p.policy, "num_blocks": p.num_blocks, "bias": p.fuse_bias, "relu": p.pack_relu,
        "activation": p.activation.row.spelling,
        "untilize_out": p.untilize_out, "grid": f"{p.grid[0]}x{p.grid[1]}", "transpose_mcast": p.transpose_mcast,
        "memory": f"in0 {s.memory.in0}, out {s.memory.out}",
        "memory_in1": str(s.memory.in1), "tt_auto": bool(p.tt_choice), "in0_rank": 2 + len(s.batch_shape),
        "grid_requested": f"{p.grid_requested[0]}x{p.grid_requested[1]}",
        "macs": p.mt * p.nt * p.kt * TILE_HW ** 3,
        "padded_blocks": "/".join(d for d, on in (("M", p.padded_m), ("N", p.padded_n)) if on) or "none",
        "tile_padding": "/".join(p.tile_padding) or "none",
        "transposed": "".join(t for t, on in (("a", s.transpose_a), ("b", s.transpose_b)) if on) or "none",
    }


def summarize(results: list[CaseResult]) -> dict[str, Counter]:
    """Counts per feature value over the cases that planned, and of each form (`forms`: fuzz_forms.FORMS)."""
    out: dict[str, Counter] = {"forms": Counter()}
    for r in results:
        if r.plan is None:
            continue
        for key, value in features(r.plan).items():
            out.setdefault(key, Counter())[value] += 1
        out["forms"].update(fuzz_forms.forms(r.plan))
    return out


# ----------------------------------------------------------------------------------------------
# `kgen fuzz`: build -> type-check (when available) -> emulate, stop at the first failure
# ----------------------------------------------------------------------------------------------

class _CaseFailure(Exception):
    def __init__(self, stage: str, detail: str):
        super().__init__(detail)
        self.stage = stage
        self.detail = detail


def run_fuzz(*, count: int, seed: int, start: int = 0, keep: str | None = None, typecheck: bool = True,
             port_check: bool = False, parallel: int = 2, out) -> int:
    """Generate, build, type-check and emulate `count` cases; 0 when all pass, 1 at the first failure
    (with the spec written to disk and the commands that reproduce it). With `port_check`, each case
    also runs `kgen port-check`: TT-Metal's compute kernel, and where its factory's kernels run the plan
    (the multicast forms, reuse with whole blocks) TT-Metal's whole program, must give kgen's bits."""
    import tempfile
    from pathlib import Path

    from kgen.core.interrupts import remove_tree
    from kgen.core.resources import cache_root, writable_dir

    # An unusable cache is the user's setting, not a failing case: say so before case 0 (exit 2).
    writable_dir(cache_root())
    if count == 0:
        out.write("fuzz: no cases to run (--count 0)\n")
        return 0
    keep_dir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="kgen-fuzz-"))
    try:
        keep_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KgenError(f"--keep {keep}: cannot create the folder: {exc.strerror or exc}") from None
    try:
        code = _run_cases(seed, range(start, start + count), keep_dir, keep is not None, typecheck, port_check,
                          parallel, out)
    except BaseException:
        # interrupted (Ctrl-C, SIGTERM, SIGHUP) or an error: no case failed, so nothing to look at
        if keep is None:
            remove_tree(keep_dir)
        raise
    if code == 0 or code == EXIT_INCOMPLETE:
        if keep is None:           # nothing failed, so nothing to look at: leave no temporary folder
            shutil.rmtree(keep_dir, ignore_errors=True)
    return code


_STEP_NAMES = {"built": "build", "typechecked": "type-check", "emulated": "emulate", "portchecked": "port-check"}


def _run_cases(seed: int, indices: range, keep_dir, kept: bool, typecheck: bool, port_check: bool, parallel: int,
               out) -> int:
    """Each case through the checks and the chain after rendering; 1 at the first failure,
    EXIT_INCOMPLETE when a check could not run (the last line says which and why)."""
    import time

    from kgen.proof.chain import ChainOptions, run_chain

    width = terminal.width()

    started = time.perf_counter()
    checked = ported = 0
    not_run: dict[str, str] = {}              # step -> why it could not run
    drawn: Counter = Counter()                # form -> cases (fuzz_forms.FORMS)
    pc_flag = " --port-check" if port_check else ""
    for index in indices:
        case = generate_case(seed, index)
        path = keep_dir / case.filename
        path.write_text(case.text)
        t0 = time.perf_counter()
        stage = "check"
        try:
            result = check_case(case)
            if result.error is not None:
                raise _CaseFailure(result.stage or "check", str(result.error))
            stage = "build"
            chain = run_chain(result.artifacts, "portchecked" if port_check else "emulated",
                              skip=() if typecheck else {"typechecked"},
                              options=ChainOptions(seed=index, parallel=parallel))
            for step in chain.steps:
                if step.status == "failed":
                    raise _CaseFailure(_STEP_NAMES[step.name], step.detail)
                if step.status == "skipped":
                    not_run.setdefault(step.name, step.detail)
            checked += chain.step("typechecked") is not None and chain.step("typechecked").status == "ok"
            pc = chain.value("portchecked")
            ported += pc is not None and pc.program is not None
        except _CaseFailure as exc:
            rerun = "port-check" if exc.stage == "port-check" else "emulate"
            out.write(f"FAIL case {index} ({case.name}) at {exc.stage}:\n{exc.detail}\n"
                      f"  spec:  {path}\n"
                      f"  repro: kgen fuzz --seed {seed} --start {index} --count 1{pc_flag}\n"
                      f"         kgen {rerun} {path} --seed {index}\n")
            return 1
        except KgenError as exc:
            out.write(f"FAIL case {index} ({case.name}) at {stage}: {exc}\n  spec:  {path}\n"
                      f"  repro: kgen fuzz --seed {seed} --start {index} --count 1{pc_flag}\n")
            return 1
        f = features(result.plan)
        drawn.update(fuzz_forms.forms(result.plan))
        head = f"ok   case {index:4d} {case.name}  "
        blocks = keep_together(f"{f['num_blocks']:>2} K-blk")
        grid = keep_together(f"grid {f['grid']}")
        took = keep_together(f"{time.perf_counter() - t0:5.2f} s")
        # the columns after the name stay columns when the line wraps: its rest goes under them
        out.write("\n".join(terminal.wrap(
            f"{head}{f['arch']:<11} {f['dataflow']:<8} {f['dtypes']:<28} {f['policy']:<14} {blocks}  {grid}  {took}",
            width, "", " " * len(head))) + "\n")
        out.flush()
    count = len(indices)
    ran = ["built"] + (["emulated bit-exact and within the float64 bound"] if "emulated" not in not_run else [])
    checked_words = keep_together(f"{checked} type-checked")
    tc_note = (f", {checked_words} against the TT-Metal headers" if typecheck and "typechecked" not in not_run
               else ", type-check not asked for (--no-typecheck)" if not typecheck else "")
    if port_check and "portchecked" not in not_run:
        tc_note += (f"; TT-Metal's compute kernel bit-identical on all, its whole program on the {ported} "
                    f"case(s) its factory's kernels run")
    where = f"; specs in {keep_dir}" if kept else ""
    seconds = f"{time.perf_counter() - started:.1f} s"
    out.write("\n".join(terminal.hanging(fuzz_forms.forms_line(drawn, keep_together), width)) + "\n")
    if not_run:
        why = "; ".join(f"{_STEP_NAMES[name]} not run: {reason}" for name, reason in not_run.items())
        out.write("\n".join(terminal.hanging(f"fuzz: {count} case(s) of seed {seed} INCOMPLETE: {', '.join(ran)}"
                                             f"{tc_note}; {seconds}{where}; {why} (kgen doctor)", width)) + "\n")
        return EXIT_INCOMPLETE
    out.write("\n".join(terminal.hanging(f"fuzz: {count} case(s) of seed {seed} passed: {', '.join(ran)}{tc_note}; "
                                         f"{seconds}{where}", width)) + "\n")
    return 0
