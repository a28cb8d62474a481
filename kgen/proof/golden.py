"""Golden model: the exact output bits TT-Metal's blocked matmul produces on a Tensix core, computed
from the inputs and the plan without running kernels (docs/reference/numerics.md §7, §13).

Flow per output element (§6, §7, docs/reference/matmul.md §1.5-§1.11):

* in1 -> SrcA (5-bit multiplier port), in0 -> SrcB (7-bit port), with the unpacker's truncation (§2).
* For each K-block ``b`` (``in0_block_w`` K-tiles): Dst starts at 0 or at the reloaded partials;
  for each K-tile, for each fidelity phase, for K-face 0 then 1: one MVMUL (§4, §6).
* End of block, **spill/reload** (no packer L1 acc): blocks before the last pack Dst to the partials
  CB (``partials_format``) and every later block reloads them (§7.2); Float32 partials straight into
  Dst (UnpackToDestFp32, as TT-Metal 0.81.1's factories mark them), others through SrcA.
  **Packer L1 acc**: block 0 packs (overwrite), blocks 1..n-2 start from a zero Dst and pack with
  ``L1 += Dst``, and the last block reloads the L1 sum once (§7.3). With a fused bias every block,
  the last too, packs into the partials with L1 acc (block 0 overwrites).
* The last block packs to the output (ReLU in the packer), or, with a fused bias, into the partials;
  the bias stage then adds ``partials (SrcA) + bias row (SrcB)`` with ELWADD and packs to the
  output with ReLU (§7.3). With ``untilize_out`` the final result goes through the partials CB and a
  copy into Dst before the last pack (docs/reference/matmul.md §1.11).

Numerically the per-core blocking (grid, per-core M/N, subblocks) does not matter: every output
element sees the same sequence. Only the K blocking does.

Two modes: ``"exact"`` (bit-level, :mod:`kgen.proof.numerics`; vectorised over output rows, columns and
K) and ``"fast"`` (float32 matmuls per K-block with the fidelity slices applied to the operands,
the same blocking, and the exact unpack / pack / L1-acc / reload conversions at block boundaries).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from kgen.proof import numerics as nx
from kgen.proof import tiles as tl
from kgen.core.arch import load_arch

@dataclass(frozen=True)
class GoldenResult:
    """Output of the golden model: the (M, N) row-major matrix in ``format`` as the hardware
    stores it (``data.bits``: uint32 / uint16 patterns or block-float codes, ``data.exps``: one
    shared exponent per 16 columns)."""

    data: nx.L1Data
    mode: str

    @property
    def format(self) -> str:
        return self.data.format

    @property
    def bits(self) -> np.ndarray:
        return self.data.bits

    @property
    def exps(self) -> np.ndarray | None:
        return self.data.exps

    @property
    def values(self) -> np.ndarray:
        """float32 (M, N) values of the output."""
        return self.data.values()

    def tile_bytes(self) -> np.ndarray:
        """L1 byte images of the output tiles, (M/32, N/32, TILE_BYTES[format]) (§9)."""
        fmt = self.format
        bits = self.data.bits
        m, n = bits.shape
        faces = tl.tilize(tl.to_tiles(bits))                         # (Mt, Nt, 1024)
        if fmt == "Float32":
            return np.ascontiguousarray(faces.astype("<u4")).view(np.uint8)
        if fmt == "Float16_b":
            return np.ascontiguousarray(faces.astype("<u2")).view(np.uint8)
        e = self.data.exps.reshape(m // 32, 2, 16, n // 32, 2)        # (Mt, fr, r, Nt, fc)
        e = e.transpose(0, 3, 1, 4, 2).reshape(m // 32, n // 32, 64)  # face = 2*fr + fc, then row
        return tl.bfp_tile_bytes(e, faces, fmt)


@dataclass(frozen=True)
class MatmulConfig:
    """Everything that decides the numerics of one matmul (see :func:`golden_matmul`)."""

    fidelity: str
    fp32_dest_acc: bool
    packer_l1_acc: bool
    in0_format: str
    in1_format: str
    out_format: str
    partials_format: str
    bias_format: str
    in0_block_w: int
    num_k_blocks: int
    relu: bool
    fused_bias: bool
    untilize_out: bool
    wormhole_bug: bool
    reload_unpack_to_dest: bool
    bfp_pack_src: str
    # untilize_out's copy of the result out of the partials CB goes straight into DST (the partials CB
    # itself is UnpackToDestFp32; with a bias only its reload alias is)
    untilize_unpack_to_dest: bool = False
    # the fused SFPU activation as the kernel receives it, (kind, param0, param1, param2), or None;
    # applied to DST where TT's kernel applies it (kgen.gen.activations)
    activation: tuple[str, int, int, int] | None = None
    arch: str = "blackhole"
    math_approx: bool = False


def default_partials_format(out_format: str, fp32_dest_acc: bool, packer_l1_acc: bool) -> str:
    """interm0_data_format of the matmul factories (§7.1): Float32 with fp32 dest, else Float16_b
    with packer L1 acc, else the output format. A deliberate independent restatement of
    plan._partials_format: the golden model takes its rules from docs/reference/numerics.md, not the planner."""
    if fp32_dest_acc:
        return "Float32"
    if packer_l1_acc:
        return "Float16_b"
    return tl.canonical_format(out_format)


def golden_matmul(in0, in1, *, fidelity: str, fp32_dest_acc: bool, packer_l1_acc: bool,
                  in0_format: str = "Float16_b", in1_format: str = "Float16_b",
                  out_format: str = "Float16_b", partials_format: str | None = None,
                  in0_block_w: int | None = None, num_k_blocks: int | None = None,
                  bias=None, bias_format: str | None = None, relu: bool = False,
                  untilize_out: bool = False, arch: str = "blackhole",
                  reload_unpack_to_dest: bool = True, bfp_pack_src: str = "Float16_b",
                  activation: tuple[str, int, int, int] | None = None, math_approx: bool = False,
                  untilize_unpack_to_dest: bool | None = None, mode: str = "exact") -> GoldenResult:
    """Exact output of TT-Metal's blocked matmul ``in0 @ in1 (+ bias) (relu)`` on Tensix.

    ``in0`` (M, K) and ``in1`` (K, N): float values (quantised to their formats by the host rule if
    they are not representable, :func:`kgen.proof.tiles.quantize`); M, N, K multiples of 32.
    ``fidelity``: LoFi | HiFi2 | HiFi3 | HiFi4. ``fp32_dest_acc``: Dst in fp32 (else bf16).
    ``packer_l1_acc``: TT-Metal's ``packer_l1_acc_en`` (PACKER_L1_ACC defined), already decided
    (``Plan.l1_acc_enabled``); without it K-blocks spill/reload. Formats are TT-Metal DataFormat names
    (Float32, Float16_b, Bfp8_b, Bfp4_b) or ttnn dtypes; ``partials_format`` defaults to the factory
    rule (§7.1). ``in0_block_w``: K-tiles per K-block (default: all of K in one block);
    ``num_k_blocks``, if given, must equal Kt / in0_block_w. ``bias``: (N,) row added by the fused
    bias stage (``bias_format`` defaults to ``out_format``). ``relu``: packer ReLU on the final pack.
    ``arch``: its ``fpu_renormalisation_quirk`` (Wormhole's, §4 step 8) is modelled when set.
    ``reload_unpack_to_dest``: Float32 partials reload losslessly, straight into Dst, as every TT-Metal
    0.81.1 factory has them with fp32 accumulation (the CB the reload copies through is
    UnpackToDestFp32, docs/reference/provenance.md N8; ``golden_from_plan`` takes it from the plan);
    False: through SrcA, truncated to TF32. ``untilize_unpack_to_dest``: the same for untilize_out's
    copy out of the partials CB (default: as the reload without a bias; with one only the reload's
    alias is UnpackToDestFp32 and the copy goes through SrcA). ``bfp_pack_src``: packer intermediate
    for block-float outputs, ``Float16_b`` (§8.1) or ``Bfp8_b`` (E8M6). ``mode``: ``exact`` or ``fast``.
    """
    a = np.asarray(in0, dtype=np.float32)
    b = np.asarray(in1, dtype=np.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"in0 {a.shape} and in1 {b.shape} are not (M, K) and (K, N)")
    m, k = a.shape
    n = b.shape[1]
    for name, dim in (("M", m), ("K", k), ("N", n)):
        if dim % tl.TILE:
            raise ValueError(f"{name} = {dim} is not a multiple of 32")
    kt = k // tl.TILE
    w = kt if in0_block_w is None else int(in0_block_w)
    if w <= 0 or kt % w:
        raise ValueError(f"in0_block_w = {w} does not divide Kt = {kt}")
    nb = kt // w
    if num_k_blocks is not None and num_k_blocks != nb:
        raise ValueError(f"num_k_blocks = {num_k_blocks} but Kt / in0_block_w = {kt} / {w} = {nb}")
    out_format = tl.canonical_format(out_format)
    cfg = MatmulConfig(
        fidelity=fidelity, fp32_dest_acc=bool(fp32_dest_acc), packer_l1_acc=bool(packer_l1_acc),
        in0_format=tl.canonical_format(in0_format), in1_format=tl.canonical_format(in1_format),
        out_format=out_format,
        partials_format=tl.canonical_format(partials_format) if partials_format else
        default_partials_format(out_format, fp32_dest_acc, packer_l1_acc),
        bias_format=tl.canonical_format(bias_format) if bias_format else out_format,
        in0_block_w=w, num_k_blocks=nb, relu=bool(relu), fused_bias=bias is not None,
        untilize_out=bool(untilize_out), wormhole_bug=load_arch(arch).behaviour.fpu_renormalisation_quirk,
        reload_unpack_to_dest=bool(reload_unpack_to_dest), bfp_pack_src=bfp_pack_src,
        untilize_unpack_to_dest=bool(reload_unpack_to_dest and bias is None if untilize_unpack_to_dest is None
                                     else untilize_unpack_to_dest),
        activation=tuple(activation) if activation else None, arch=load_arch(arch).name,
        math_approx=bool(math_approx))
    nx.phases_of(fidelity)
    if cfg.packer_l1_acc and cfg.partials_format not in ("Float32", "Float16_b"):
        raise ValueError(f"the packer cannot L1-accumulate into {cfg.partials_format} (§7.4)")
    bias_row = None
    if bias is not None:
        bias_row = np.asarray(bias, dtype=np.float32).reshape(-1)
        if bias_row.shape[0] != n:
            raise ValueError(f"bias has {bias_row.shape[0]} values, N = {n}")
    if mode not in ("exact", "fast"):
        raise ValueError(f"mode must be 'exact' or 'fast', not {mode!r}")
    return _computed(cfg, mode, a, b, bias_row)


# port-check emulates three programs of one plan on the same inputs, and the float64 check asks for
# the plain matmul again: the same golden matmul, computed once (keyed by the inputs' bytes)
_RECENT: OrderedDict[tuple, GoldenResult] = OrderedDict()
_RECENT_SIZE = 4


def _computed(cfg: MatmulConfig, mode: str, a, b, bias_row) -> GoldenResult:
    key = (cfg, mode, _digest(a), _digest(b), None if bias_row is None else _digest(bias_row))
    if key in _RECENT:
        _RECENT.move_to_end(key)
        return _RECENT[key]
    data = _exact(a, b, bias_row, cfg) if mode == "exact" else _fast(a, b, bias_row, cfg)
    for arr in (data.bits, data.exps):
        if arr is not None:
            arr.setflags(write=False)       # shared by every caller of the same matmul
    result = _RECENT[key] = GoldenResult(data, mode)
    while len(_RECENT) > _RECENT_SIZE:
        _RECENT.popitem(last=False)
    return result


def _digest(values: np.ndarray) -> tuple:
    data = np.ascontiguousarray(values)
    return data.shape, hashlib.blake2b(memoryview(data).cast("B"), digest_size=16).digest()


def golden_from_plan(plan, in0, in1, bias=None, *, mode: str = "exact", plain: bool = False,
                     **overrides) -> GoldenResult:
    """:func:`golden_matmul` with everything taken from a :class:`kgen.gen.plan.Plan`.

    ``in0``: (batch*M, K) or (batch, M, K) (batch is fused into M, as the plan does); ``in1``
    (K, N), or (batch, K, N) for one in1 per batch: then each batch is its own matmul (np.matmul's
    semantics), the outputs stacked as (batch*M, N); ``bias`` (N,) when the plan fuses a bias.
    ``plain``: the plan's matmul alone, through the same flow, with a zero bias row in place of the
    bias (a fused bias changes how the last K-block reaches the partials), without ReLU, activation
    or untilize_out's copy: the float64 oracle's measure of the matmul's own error. ``overrides``
    replace any keyword."""
    a = np.asarray(in0, dtype=np.float32)
    b = np.asarray(in1, dtype=np.float32)
    if b.ndim == 3:
        rows = a.reshape(b.shape[0], -1, a.shape[-1])
        parts = [golden_from_plan(plan, rows[i], b[i], bias, mode=mode, plain=plain, **overrides).data
                 for i in range(b.shape[0])]
        exps = None if parts[0].exps is None else np.concatenate([d.exps for d in parts])
        return GoldenResult(nx.L1Data(parts[0].format, np.concatenate([d.bits for d in parts]), exps), mode)
    if a.ndim == 3:
        a = a.reshape(-1, a.shape[-1])
    if getattr(plan, "transpose_a", False):
        a = in0_transpose_stage(a, plan.in0_format, plan.compute.fp32_dest_acc)
    in1_format = plan.in1_format
    if getattr(plan, "transpose_b", False):
        b, in1_format = in1_transposed_operand(b, in1_format, plan.compute.fp32_dest_acc)
    if plan.fuse_bias and bias is None and not plain:
        raise ValueError("the plan fuses a bias: pass bias")
    kw = dict(
        fidelity=plan.compute.math_fidelity, fp32_dest_acc=plan.compute.fp32_dest_acc,
        packer_l1_acc=plan.l1_acc_enabled, in0_format=plan.in0_format, in1_format=in1_format,
        out_format=plan.out_format, partials_format=plan.partials_format,
        in0_block_w=plan.in0_block_w, num_k_blocks=plan.num_blocks,
        bias=bias if plan.fuse_bias else None, bias_format=plan.bias_format, relu=plan.pack_relu,
        untilize_out=plan.untilize_out, arch=plan.arch.name, mode=mode, math_approx=plan.compute.math_approx,
        activation=_activation_of(plan),
        # TT-Metal's UnpackToDestFp32 on the CB the reload copies through, and on the partials CB itself
        reload_unpack_to_dest=plan.reload_to_dest, untilize_unpack_to_dest=plan.untilize_copy_to_dest)
    if plain:
        # and without untilize_out's copy through the partials CB: TT's kernel applies the activation
        # before it, so the oracle adds the copy's rounding after the activation
        kw.update(bias=np.zeros(b.shape[-1], np.float32) if plan.fuse_bias else None, relu=False, activation=None,
                  untilize_out=False)
    kw.update(overrides)
    return golden_matmul(a, b, **kw)


def _activation_of(plan) -> tuple[str, int, int, int] | None:
    act = plan.sfpu_activation
    return None if act is None else (act.kind, act.p0, act.p1, act.p2)


def _activate(dst, cfg: MatmulConfig):
    """The fused SFPU activation on DST (fp32 patterns, in DST's format), where TT's kernel runs it:
    apply_activation_from_pack before the last K-block's pack, or before the bias stage's pack.
    `dst` is rows x columns of the output from a tile boundary on; the values go to the model as
    the 32 x 32 tiles they lie in (padded with zeros to whole tiles, the padding dropped after)."""
    if cfg.activation is None:
        return dst
    from kgen.proof.sfpu_golden import apply_activation     # NumPy-heavy: only activation specs load it

    bits = np.asarray(dst, dtype=np.uint32)
    kind, p0, p1, p2 = cfg.activation
    if bits.ndim != 2:
        raise ValueError(f"the activation runs on DST rows x columns, not shape {bits.shape}")
    # DST order: row-major tiles, each tile's datums face by face (sigmoid's vector modes pick faces);
    # the rows start on a tile boundary (the flows' row chunks are whole tiles), the padding is dropped
    rows, cols = bits.shape
    padded = np.zeros((-(-rows // tl.TILE) * tl.TILE, -(-cols // tl.TILE) * tl.TILE), np.uint32)
    padded[:rows, :cols] = bits
    faces = tl.tilize(tl.to_tiles(padded))
    out = apply_activation(tl.bits_f32(faces.reshape(-1, tl.TILE, tl.TILE)), kind, p0, p1, p2, arch=cfg.arch,
                           fp32_dest=cfg.fp32_dest_acc, approx=cfg.math_approx).reshape(faces.shape)
    return tl.f32_bits(tl.from_tiles(tl.untilize(np.asarray(out, np.float32))))[:rows, :cols]


def _whole_tiles(rows: int) -> int:
    """A row chunk of whole tile rows (at least one), so that an activation that covers part of
    each tile (sigmoid's vector modes) sees every row at its place in its tile."""
    return max(tl.TILE, rows - rows % tl.TILE)


# ---------------------------------------------------------------------------------------------
# the TT-Metal flow (§7), shared by both modes

class _Flow:
    """The K-block flow for one set of output rows, one K-block at a time: ``step`` per block in
    order, then ``finish``. Fast mode keeps one per row chunk and steps them all through each
    block, so that one matmul per block serves every chunk and the conversions stay in cache."""

    def __init__(self, cfg: MatmulConfig, bias_src19, bias_values):
        self.cfg, self.bias_src19, self.bias_values = cfg, bias_src19, bias_values
        self.partials: nx.L1Data | None = None
        self.reload_next = False
        self.dst = None

    def _pack(self, dst, fmt, relu=False):
        return nx.pack(dst, fmt, self.cfg.fp32_dest_acc, relu=relu, bfp_pack_src=self.cfg.bfp_pack_src)

    def _reload(self, data):
        return nx.reload_to_dst(data, self.cfg.fp32_dest_acc, self.cfg.reload_unpack_to_dest)

    def step(self, blk: int, accumulate) -> None:
        """``accumulate(dst)``: Dst after the block's MVMULs from ``dst`` (None: a cleared Dst);
        Dst values are fp32 patterns."""
        cfg = self.cfg
        last = cfg.num_k_blocks - 1
        dst = self._reload(self.partials) if blk > 0 and self.reload_next else None   # else cleared by the packer
        dst = accumulate(dst)
        if cfg.packer_l1_acc:                                    # §7.3
            if blk < last or cfg.fused_bias:                     # the last block without bias packs to out below
                packed = self._pack(dst, cfg.partials_format)
                self.partials = packed if blk == 0 else nx.l1_accumulate(self.partials, packed)
            self.reload_next = (not cfg.fused_bias) and blk + 1 == last
        else:                                                    # §7.2
            if blk < last:
                self.partials = self._pack(dst, cfg.partials_format)
            self.reload_next = True
        self.dst = dst if blk == last else None

    def finish(self) -> nx.L1Data:
        cfg, dst = self.cfg, self.dst
        if cfg.fused_bias:
            if not cfg.packer_l1_acc:
                self.partials = self._pack(dst, cfg.partials_format)   # last block packs into partials
            dst = _bias_add(cfg, self.partials, self.bias_src19, self.bias_values)
        dst = _activate(dst, cfg)
        if cfg.untilize_out:                                     # docs/reference/matmul.md §1.11
            staged = self._pack(dst, cfg.partials_format, relu=cfg.relu)
            copied = nx.reload_to_dst(staged, cfg.fp32_dest_acc, cfg.untilize_unpack_to_dest)
            return self._pack(copied, cfg.out_format)
        return self._pack(dst, cfg.out_format, relu=cfg.relu)


def _flow(cfg: MatmulConfig, accumulate_block, bias_src19, bias_values) -> nx.L1Data:
    """Run the K-block flow for one set of output rows. ``accumulate_block(dst, block)`` returns Dst
    after the block's MVMULs; Dst values are fp32 patterns."""
    flow = _Flow(cfg, bias_src19, bias_values)
    for blk in range(cfg.num_k_blocks):
        flow.step(blk, lambda dst, blk=blk: accumulate_block(dst, blk))
    return flow.finish()


def _bias_add(cfg: MatmulConfig, partials: nx.L1Data, bias_src19, bias_values):
    """Fused-bias stage (§7.3): ``add_tiles_bcast_rows(partials on SrcA, bias row on SrcB)``."""
    a = nx.unpack_to_src(partials, cfg.fp32_dest_acc)
    if bias_values is None:                                       # exact
        return nx.elwadd(a, bias_src19[None, :], cfg.fp32_dest_acc, wormhole_bug=cfg.wormhole_bug)
    v = tl.bits_f32(nx.src19_to_fp32(a)) + bias_values[None, :]   # fast: float32 add
    return _round_dst(tl.f32_bits(v), cfg.fp32_dest_acc)


def _round_dst(bits32, fp32_dest_acc: bool) -> np.ndarray:
    """fast mode: a float32 result as Dst holds it (bf16 Dst: half away from zero)."""
    if fp32_dest_acc:
        return np.asarray(bits32, dtype=np.uint32)
    return nx.pack_early(bits32, True, "Float16_b")


def _bias_operands(bias_row, cfg: MatmulConfig):
    if bias_row is None:
        return None
    return nx.values_to_src19(bias_row, cfg.bias_format, cfg.fp32_dest_acc)


# ---------------------------------------------------------------------------------------------
# exact mode

def in0_transpose_stage(a, in0_format: str, fp32_dest_acc: bool) -> np.ndarray:
    """transpose_a: the values the matmul reads out of c_10 for A (M, K), whose device tensor holds A^T.
    TT's compute kernel (bmm_large_block_zm_fused_bias_activation.cpp, in0_transpose_tile) unpacks each
    stored tile through SrcA with the transpose (transpose_tile: Float32 truncated to TF32, or to bf16 without
    fp32 accumulation), copies it into DST and packs it into c_10 in in0's format: exact for bfloat16, but a
    block float's shared exponents are taken again over the transposed rows, and a Float32 A arrives as SrcA
    and DST hold it. `a` is A's values (A^T quantised as stored, transposed)."""
    stored = nx.L1Data.from_values(np.ascontiguousarray(np.asarray(a, np.float32).T), in0_format)
    dst = nx.reload_to_dst(stored, fp32_dest_acc)            # SrcA, datacopy: DST values as fp32 patterns
    return nx.pack(np.ascontiguousarray(dst.T), in0_format, fp32_dest_acc).values()


def in1_transposed_operand(b, in1_format: str, fp32_dest_acc: bool) -> tuple[np.ndarray, str]:
    """transpose_b: B (K, N) as SrcA receives it, and the format to read it in. matmul_block's transpose
    (IN1_TRANSPOSE_TILE) moves each stored tile's datums, unchanged, to their transposed places; a block
    float's shared exponents belong to the stored rows (B^T's, along K), so its datums are taken as the
    unpacker delivers them from the stored tiles (bf16-exact) and read as Float16_b. Other formats are
    element-wise: B as it is."""
    fmt = tl.canonical_format(in1_format)
    if fmt in ("Float32", "Float16_b"):
        return b, in1_format
    stored = nx.L1Data.from_values(np.ascontiguousarray(np.asarray(b, np.float32).T), fmt)
    src = nx.src19_to_fp32(nx.unpack_to_src(stored, fp32_dest_acc))
    return np.ascontiguousarray(tl.bits_f32(src).T), "Float16_b"


def _exact(a, b, bias_row, cfg: MatmulConfig) -> nx.L1Data:
    fp32 = cfg.fp32_dest_acc
    phases = nx.phases_of(cfg.fidelity)
    src_b = nx.values_to_src19(a, cfg.in0_format, fp32)          # in0 -> SrcB (§1)
    src_a = nx.values_to_src19(b, cfg.in1_format, fp32)          # in1 -> SrcA
    bias_src = _bias_operands(bias_row, cfg)
    m, n = a.shape[0], b.shape[1]
    opa = nx.prepare_srca(src_a)
    opb = nx.prepare_srcb(src_b)
    rows = _whole_tiles(min(m, (1 << 14) // n))                   # ~16K outputs per chunk
    w = cfg.in0_block_w
    parts = []
    for r0 in range(0, m, rows):
        sub = opb.take(rows=slice(r0, min(m, r0 + rows)))
        zero = np.zeros((sub.exp.shape[2], n), dtype=np.uint32)

        def accumulate_block(dst, blk, sub=sub, zero=zero):
            groups = slice(4 * w * blk, 4 * w * (blk + 1))          # 4 groups of 8 lanes per K-tile
            sums, emax = nx.matmul_group_sums(opa.take(groups), sub.take(groups), phases)
            d = zero if dst is None else dst
            for kt in range(w):
                for pi, p in enumerate(phases):                      # §6: phase loop outside K-faces
                    for face in (0, 1):
                        g = 4 * kt + 2 * face
                        t0 = nx.group_term(sums[pi, g], emax[g], p)
                        t1 = nx.group_term(sums[pi, g + 1], emax[g + 1], p)
                        d = nx.fpu_accumulate(d, *t0, *t1, fp32, cfg.wormhole_bug)
            return d

        parts.append(_flow(cfg, accumulate_block, bias_src, None))
    return _concat_rows(parts)


def _concat_rows(parts: list[nx.L1Data]) -> nx.L1Data:
    fmt = parts[0].format
    bits = np.concatenate([p.bits for p in parts], axis=0)
    exps = np.concatenate([p.exps for p in parts], axis=0) if parts[0].exps is not None else None
    return nx.L1Data(fmt, bits, exps)


# ---------------------------------------------------------------------------------------------
# fast mode

def _fidelity_operands(src_b19, src_a19, fidelity: str):
    """float32 operands whose products are the summed fidelity phases (§3.1): SrcA (in1) keeps
    5 significant bits in its high slice and never uses its last TF32 bit; SrcB (in0) keeps 7."""
    ab = nx.src19_to_fp32(src_a19)
    bb = nx.src19_to_fp32(src_b19)
    a_full = tl.bits_f32(ab & np.uint32(0xFFFFC000))
    a_hi = tl.bits_f32(ab & np.uint32(0xFFF80000))
    b_full = tl.bits_f32(bb)
    b_hi = tl.bits_f32(bb & np.uint32(0xFFFE0000))
    phases = nx.phases_of(fidelity)
    terms = []                                                    # (in0 operand, in1 operand)
    if phases == (0,):
        terms = [(b_hi, a_hi)]
    elif phases == (0, 1):
        terms = [(b_hi, a_full)]
    elif phases == (0, 1, 2):
        terms = [(b_hi, a_full), (b_full - b_hi, a_hi)]
    else:
        terms = [(b_full, a_full)]
    return terms


FAST_CHUNK_ELEMENTS = 1 << 18    # outputs per row chunk of the conversions: ~1 MB of uint32, in cache


def _fast(a, b, bias_row, cfg: MatmulConfig) -> nx.L1Data:
    fp32 = cfg.fp32_dest_acc
    src_b = nx.values_to_src19(a, cfg.in0_format, fp32)
    src_a = nx.values_to_src19(b, cfg.in1_format, fp32)
    terms = _fidelity_operands(src_b, src_a, cfg.fidelity)
    kb = cfg.in0_block_w * tl.TILE
    bias_vals = None
    if bias_row is not None:
        bias_vals = tl.bits_f32(nx.src19_to_fp32(_bias_operands(bias_row, cfg)))
    m, n = a.shape[0], b.shape[1]
    rows = _whole_tiles(min(m, FAST_CHUNK_ELEMENTS // n))
    chunks = [slice(r0, min(m, r0 + rows)) for r0 in range(0, m, rows)]
    flows = [_Flow(cfg, None, bias_vals) for _ in chunks]
    for blk in range(cfg.num_k_blocks):
        # One float32 matmul per term over all rows (BLAS's summation order is that of the whole
        # product; row chunks of the matmul itself could change bits), then the Dst rounding and
        # the pack / L1-acc / reload conversions chunk by chunk.
        ks = slice(blk * kb, (blk + 1) * kb)
        product = None
        for x, y in terms:
            p = x[:, ks] @ y[ks, :]
            product = p if product is None else product + p
        for rs, flow in zip(chunks, flows):
            def accumulate(dst, acc=product[rs]):
                if dst is not None:
                    acc = acc + tl.bits_f32(dst)
                return _round_dst(tl.f32_bits(acc), fp32)
            flow.step(blk, accumulate)
    return _concat_rows([flow.finish() for flow in flows])
