"""Stage 2, plan: `MatmulSpec` + arch facts -> `Plan`.

Fills every `auto`, checks every rule TT-Metal's matmul validation checks
(matmul_device_operation.cpp; docs/reference/matmul.md §2.2, §2.8, §3.3) plus the L1 budget (but for
the DST bound under dst_full_sync, which kgen warns of: `factory_departures`), and takes
the accumulation-policy and CB decisions exactly as the 2D multicast factory does
(matmul_multicore_reuse_mcast_2d_program_factory.cpp). What differs by factory (the layout of the
cores, the L1-accumulation threshold, the placements taken) is the dataflow module's
(kgen/gen/dataflow/).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.errors import SpecError
# re-exported: the CB indices, the CB table's types and TT-Metal's subblock table are the plan's vocabulary
from kgen.gen.blocking import (POLICY_DST, POLICY_L1_ACC, POLICY_SPILL, SUBBLOCK_HW_CHOICES,  # noqa: F401
                               Blocking, CircularBuffer, L1Region, accumulation_policy, l1_offers,
                               partials_format)
from kgen.gen.rules import (CB_BIAS, CB_IN0, CB_IN1, CB_OUT, CB_PARTIALS,  # noqa: F401
                            Offer, PlanError, divisors, fmt_pair, round_up_tiles, suggestion)
from kgen.gen import activations
from kgen.gen.matmul_spec import ComputeConfig, MatmulSpec
from kgen.core.types import DTYPE_TO_FORMAT, TILE_HW, Placement, is_sharded
from kgen.gen.dataflow import AUTO, REGISTRY, Dataflow, accepts, get as dataflow_of
from kgen.gen.shards import check_shards, with_shard_defaults
from kgen.gen.ttauto import resolve_auto
# re-exported: the plan and its factory interface are the planner's product
from kgen.gen.planned import Plan, factory_departures  # noqa: F401

# ----------------------------------------------------------------------------------------------

def dst_capacity(arch: ArchFacts, compute: ComputeConfig) -> int:
    return arch.dst_tiles(compute.dst_full_sync, compute.fp32_dest_acc)


def plan(spec: MatmulSpec, arch: ArchFacts | None = None) -> Plan:
    """Fill every auto and take every decision the 2D multicast factory takes, in its order: the grid,
    per-core M/N, the blocking that fits L1, the accumulation policy and the CB table.

    A refused spec raises PlanError, whose hint offers only values with which the spec plans (each
    re-planned when the hint is read: `refusal`), or says that none does."""
    arch = arch or load_arch(spec.arch)
    try:
        return _plan(spec, arch)
    except PlanError as exc:
        exc.bind(lambda edits: refusal(edited(spec, edits), arch))
        raise


def refusal(spec: MatmulSpec, arch: ArchFacts | None = None) -> SpecError | None:
    """The error the planner refuses the spec with, or None when every rule passes."""
    try:
        _plan(spec, arch or load_arch(spec.arch))
    except SpecError as exc:
        return exc
    return None


def is_legal(spec: MatmulSpec, arch: ArchFacts | None = None) -> bool:
    """Whether the planner takes the spec: every rule passes."""
    return refusal(spec, arch) is None


def edited(spec: MatmulSpec, edits: tuple[tuple[str, Any], ...]) -> MatmulSpec:
    """The spec with the keys a hint's value sets (`Suggestion.edits`): `block.*`, `memory.*`, `grid`,
    `dataflow`, `fuse.bias`, `dtype.out` (and the bias's dtype with it when the spec leaves it to the
    output's), `untilize_out`, `transpose_mcast`, `broadcast_in1`. The compute config stays as resolved:
    ttnn's default math fidelity depends on whether the spec sets block values, which no rule reads."""
    block: dict[str, Any] = {}
    memory: dict[str, Any] = {}
    top: dict[str, Any] = {}
    for key, value in edits:
        group, _, name = key.partition(".")
        if group == "block":
            block[name] = value
        elif group == "memory":
            memory[name] = value
        elif key == "fuse.bias":
            top["fuse_bias"] = value
        elif key == "dtype.out":
            top["dtype_out"] = value
            if "dtype.bias" not in spec.spans:
                top["dtype_bias"] = value
        elif key in ("grid", "dataflow", "untilize_out", "transpose_mcast", "broadcast_in1", "fuse_batch"):
            top[key] = value
        else:
            raise KeyError(f"a hint edits {key}, which kgen.gen.plan.edited does not know")
    return replace(spec, block=replace(spec.block, **block), memory=replace(spec.memory, **memory), **top)


def _plan(spec: MatmulSpec, arch: ArchFacts) -> Plan:
    spec, tt_choice = _resolved(spec, arch)
    c = spec.compute
    choices: list[str] = []

    # ttnn pads each tensor to whole tiles (tilize pads with zeros); batch is fused into M after padding,
    # unless not fused (fuse_batch = false, check_batch): then the kernels loop over the batch (TT's B)
    mt, nt, kt = spec.batch * round_up_tiles(spec.m), round_up_tiles(spec.n), round_up_tiles(spec.k)
    batch_ct = 1
    check_batch(dataflow_of(spec.dataflow), spec)
    if not spec.fuses_batch:
        mt, batch_ct = round_up_tiles(spec.m), spec.batch

    in0_fmt, in1_fmt, out_fmt = (DTYPE_TO_FORMAT[d] for d in (spec.dtype_in0, spec.dtype_in1, spec.dtype_out))
    bias_fmt = DTYPE_TO_FORMAT[spec.dtype_bias] if spec.fuse_bias else None

    grid_req = _requested_grid(spec, arch, choices)
    _check_transpose_mcast(spec)
    _check_transposed_inputs(spec)
    _check_placements(spec)
    layout = dataflow_of(spec.dataflow).layout(spec, mt, nt, grid_req, choices)
    per_core_m, per_core_n, grid, n_blocks = layout.per_core_m, layout.per_core_n, layout.grid, layout.n_blocks
    in0_shard_w = _check_memory(spec, mt, nt, kt, per_core_m, per_core_n, n_blocks)
    if layout.in0_shards:
        in0_shard_w = kt // layout.in0_shards

    # DST capacity of the sync mode and accumulation format kgen emits
    capacity = dst_capacity(arch, c)
    dst_sync = "SyncFull" if c.dst_full_sync else "SyncHalf"
    dst_accum = "Float32" if c.fp32_dest_acc else "Float16_b"

    # a factory that chooses its own subblock (and pads the N it computes for it) fixes the out block
    df = dataflow_of(spec.dataflow)
    fixed, n_compute = None, per_core_n
    if (own := df.factory_blocking(spec, per_core_m, per_core_n, c.fp32_dest_acc, choices)) is not None:
        ob, sb, n_compute = own
        fixed = (ob, sb)
    separate_shard = df.separate_out_shard
    l1_held = _l1_interleaved_bytes(spec, arch, (batch_ct * mt, nt, kt), (in0_fmt, in1_fmt, out_fmt))
    blocking = Blocking(spec, arch, kt, per_core_m, n_compute, capacity, dst_sync, dst_accum, batch_ct,
                        in0_fmt, in1_fmt, out_fmt, bias_fmt, mt, nt, in0_shard_w,
                        in1_w=per_core_n if n_compute != per_core_n else 0,
                        out_shard_w=per_core_n if separate_shard else 0,
                        l1_tensor_bytes=sum(l1_held.values()))
    (obh, obw), in0_block_w, (sbh, sbw) = blocking.choose(choices, fixed)

    num_blocks = kt // in0_block_w
    l1acc, policy_reason = accumulation_policy(spec, c, num_blocks)
    partials_fmt, partials_reason = partials_format(c, l1acc, out_fmt)
    if l1acc and partials_fmt not in arch.packer_l1_acc_formats:
        raise PlanError("packer L1 accumulation format in PACK_L1_ACC_FORMATS",
                        f"partials format {partials_fmt} cannot be L1-accumulated", spec.span("compute"))
    policy = POLICY_L1_ACC if l1acc else (POLICY_SPILL if num_blocks > 1 else POLICY_DST)
    cbs, regions, sharing = blocking.cbs_for((obh, obw), in0_block_w, (sbh, sbw))
    total = sum(r.bytes for r in regions)
    _check_l1_interleaved_fit(spec, arch, total, l1_held)
    if total > arch.usable_cb_bytes:
        raise PlanError("CBs fit the usable L1 of the core",
                        f"CBs need {total} bytes per core but {arch.name} has {arch.usable_cb_bytes} "
                        f"usable L1 bytes (over by {total - arch.usable_cb_bytes})",
                        spec.span("block"), l1_offers(blocking, (obh, obw), in0_block_w, (sbh, sbw)),
                        otherwise="a smaller per_core block or a larger grid")
    _check_untilized_output(spec, out_fmt, partials_fmt, partials_reason)
    _check_untilized_padding(spec, mt, nt, per_core_m, per_core_n)

    chosen = Plan(
        spec=spec, dataflow=dataflow_of(spec.dataflow), arch=arch, compute=c, mt=mt, nt=nt, kt=kt, batch_ct=batch_ct, grid_requested=grid_req,
        grid=grid, per_core_m=per_core_m, per_core_n=per_core_n, out_block_h=obh, out_block_w=obw,
        in0_block_w=in0_block_w, out_subblock_h=sbh, out_subblock_w=sbw, num_blocks=num_blocks,
        num_blocks_h_dim=per_core_m // obh, num_blocks_w_dim=n_compute // obw, policy=policy,
        policy_reason=policy_reason, l1_acc_enabled=l1acc, partials_format=partials_fmt,
        partials_reason=partials_reason, out_format=out_fmt, in0_format=in0_fmt, in1_format=in1_fmt,
        bias_format=bias_fmt, dst_sync=dst_sync, dst_capacity=capacity, dst_accum_format=dst_accum,
        cbs=cbs, regions=regions, warnings=(), choices=tuple(choices), out_partials_sharing=sharing,
        in0_shards=layout.in0_shards, per_core_n_compute=n_compute, cores_with_work=layout.cores,
    )
    check_shards(chosen)                # the shards the spec gives are the ones the factory reads and writes
    return replace(chosen, warnings=_warnings(chosen), tt_choice=tt_choice)


def _resolved(spec: MatmulSpec, arch: ArchFacts) -> tuple[MatmulSpec, tuple[str, ...]]:
    """The spec the planner lays out: with `dataflow = auto`, TT's own choice of factory, grid and
    blocking but for the fields the spec fixes (ttauto.py; its lines); then the grid and per_core a
    shard the spec gives implies where it leaves them out (shards.py)."""
    tt_choice: tuple[str, ...] = ()
    if spec.dataflow == AUTO:
        spec, tt_choice = resolve_auto(spec, arch)
    return with_shard_defaults(spec, dataflow_of(spec.dataflow).is_1d), tt_choice


def _requested_grid(spec: MatmulSpec, arch: ArchFacts, choices: list[str]) -> tuple[int, int]:
    """The grid the spec asks for (x, y), or the whole worker grid for `auto`."""
    gx, gy = arch.worker_grid
    if spec.grid is None:
        choices.append(f"grid auto -> {fmt_pair((gx, gy))}: the whole {arch.name} worker grid")
        return gx, gy
    grid_req = spec.grid
    if grid_req[0] > gx or grid_req[1] > gy:
        raise PlanError("grid within compute_with_storage_grid_size",
                        f"grid {fmt_pair(grid_req)} exceeds the {arch.name} worker grid {gx} x {gy}",
                        spec.span("grid"), Offer((suggestion(f"{min(grid_req[0], gx)} x {min(grid_req[1], gy)}",
                                                             ("grid", (min(grid_req[0], gx), min(grid_req[1], gy)))),),
                                                 f"grid within {gx} x {gy}"))
    return grid_req


def _check_untilized_output(spec: MatmulSpec, out_fmt: str, partials_fmt: str, partials_reason: str) -> None:
    if spec.untilize_out and out_fmt.startswith("Bfp"):
        raise PlanError("row-major (untilized) output needs a non-block-float dtype",
                        f"untilize_out with out = {spec.dtype_out}: block-float formats exist only as tiles",
                        spec.span("untilize_out"),
                        Offer(tuple(suggestion(d, ("dtype.out", d)) for d in ("bfloat16", "float32")),
                              "row-major output dtype", prefix="dtype out = ", sep=" or "))

    # The bias stage packs into the partials CB when the output is untilized, after the kernel has
    # set the packer to the output format (bmm_large_block_zm_fused_bias_activation.cpp:
    # pack_reconfig_data_format(out) then pack_tile(i, untilize_mode_out = mm_partials)): the two
    # formats must agree, or the packer writes output-format tiles into partials-sized pages.
    if spec.untilize_out and spec.fuse_bias and partials_fmt != out_fmt:
        raise PlanError("with a fused bias, untilize_out needs the partials in the output format",
                        f"untilize_out with a fused bias packs the biased result into the partials CB "
                        f"({partials_fmt}: {partials_reason}) with the packer set to the output format {out_fmt}",
                        spec.span("untilize_out"), _untilize_false(),
                        also="dtype out = the partials' dtype, or a compute config whose partials format is the "
                             "output format (see `kgen check`: partials)")


def _check_memory(spec: MatmulSpec, mt: int, nt: int, kt: int, per_core_m: int, per_core_n: int,
                  n_blocks: int) -> int:
    """TT's validation of sharded operands for the 2D multicast program config
    (matmul_device_operation.cpp @001cea9a) and kgen's own limits; returns the K tiles of a
    block-sharded in0's shard (0 when in0 is not block-sharded). Batch fusion, which TT requires for a
    sharded in0, is always on in kgen."""
    mem = spec.memory
    if not mem.sharded:
        if mem.orientation is not None:
            raise PlanError("a shard orientation needs a sharded tensor", "memory.orientation is given but no tensor "
                            "is sharded", spec.span("memory.orientation"), _no_orientation())
        return 0
    if mem.orientation is not None and mem.in0 != Placement.L1_BLOCK_SHARDED:
        raise PlanError("memory.orientation is a block-sharded in0's",
                        f"memory.orientation = {mem.orientation} with in0 = {mem.in0}: only a block-sharded in0 takes "
                        f"an orientation (the output's shards follow the grid with work, as TT-Metal computes them)",
                        spec.span("memory.orientation"), _no_orientation())
    required = "col_major" if spec.transpose_mcast else "row_major"
    if mem.in0 == Placement.L1_BLOCK_SHARDED and mem.orientation not in (None, required):
        raise PlanError("BLOCK_SHARDED in0: COL_MAJOR orientation with transpose_mcast, else ROW_MAJOR",
                        f"memory.orientation = {mem.orientation} with transpose_mcast = "
                        f"{str(spec.transpose_mcast).lower()}: in0's shards must be laid {required.upper()} so that "
                        f"each core's K slice lies along its in0 multicast", spec.span("memory.orientation"),
                        Offer((suggestion(f"memory.orientation = {required}", ("memory.orientation", required)),
                               suggestion("leave memory.orientation out", ("memory.orientation", None))),
                              "memory.orientation", sep=", or "))
    if mem.in0 == Placement.L1_HEIGHT_SHARDED and spec.transpose_mcast:
        raise PlanError("HEIGHT_SHARDED in0 needs !transpose_mcast",
                        "in0 = l1_height_sharded with transpose_mcast = true (TT-Metal: \"Transpose MCAST not "
                        "supported with HEIGHT_SHARDED layout\")", spec.span("memory.in0"),
                        Offer((suggestion("transpose_mcast = false", ("transpose_mcast", False)),
                               suggestion("in0 = l1_block_sharded", ("memory.in0", Placement.L1_BLOCK_SHARDED))),
                              "change of transpose_mcast or in0", sep=", or "))
    # (the 1D factory reads a height shard in several K-blocks: extract_shard_sub_blocks)
    if mem.in0 == Placement.L1_HEIGHT_SHARDED and spec.block.in0_block_w not in (None, kt) and \
            not dataflow_of(spec.dataflow).is_1d:
        raise PlanError("HEIGHT_SHARDED in0: K == in0_block_w == shard width",
                        f"in0 = l1_height_sharded holds all Kt = {kt} tiles of a row per core and TT-Metal reads "
                        f"them as one K-block, but in0_block_w = {spec.block.in0_block_w}",
                        spec.span("block.in0_block_w"),
                        Offer((suggestion(f"in0_block_w = {kt}", ("block.in0_block_w", kt)),
                               suggestion("leave in0_block_w out", ("block.in0_block_w", None))),
                              "in0_block_w", sep=", or "))
    if spec.untilize_out and is_sharded(mem.out):
        raise PlanError("a sharded output is tiles", "untilize_out with out = l1_block_sharded: the output CB is "
                        "the shard itself, packed as tiles", spec.span("untilize_out"), _untilize_false())
    # kgen's limits (not TT's): whole shards, one per core with work
    sharded = [t for t, where in (("in0", mem.in0), ("out", mem.out)) if is_sharded(where)]
    # a factory that pads the last N shard itself (its in1 and output shards) takes any Nt; the 1D one reads
    # a height-sharded in0 whole, whatever its last shard holds (ttnn pads the tensor per batch and the last
    # shard to the shard shape), and writes an interleaved output's real rows only
    n_uneven = nt % per_core_n and not dataflow_of(spec.dataflow).pads_last_n_shard
    m_any = sharded == ["in0"] and dataflow_of(spec.dataflow).is_1d
    # the 1D in0 multicast's width shards (ttnn pads tensors to whole tiles, a last shard to the shard shape): any shape
    width_1d = dataflow_of(spec.dataflow).is_1d and Placement.L1_WIDTH_SHARDED in (mem.in0, mem.out)
    if sharded and not width_1d and ((spec.m % TILE_HW or mt % per_core_m) and not m_any or spec.n % TILE_HW
                                     or spec.k % TILE_HW or n_uneven):
        raise PlanError("kgen: sharded tensors in whole shards",
                        f"{' and '.join(sharded)} sharded with a shape short of whole tiles or per_core not dividing "
                        f"Mt x Nt = {mt} x {nt}: kgen shards only evenly divided tensors",
                        spec.span("memory"), "tile-multiple M, N, K and per_core dividing Mt and Nt")
    if mem.in0 == Placement.L1_HEIGHT_SHARDED and spec.block.out_block not in (None,) and \
            spec.block.out_block[0] != per_core_m:
        raise PlanError("kgen: a height-sharded in0 needs out_block_h == per_core_M",
                        f"in0 = l1_height_sharded with out_block_h = {spec.block.out_block[0]} < per_core_M = "
                        f"{per_core_m}: TT-Metal's c_0, globally allocated on the shard, holds out_block_h x K tiles, "
                        f"so the shard's later rows would never reach the compute kernel",
                        spec.span("block.out_block"),
                        Offer((suggestion(f"out_block = {per_core_m} x {spec.block.out_block[1]}",
                                          ("block.out_block", (per_core_m, spec.block.out_block[1]))),
                               suggestion("leave out_block out", ("block.out_block", None))),
                              "out_block with out_block_h == per_core_M", sep=", or "))
    if mem.in0 == Placement.L1_BLOCK_SHARDED:
        if kt % n_blocks:
            raise PlanError("kgen: in0's shard grid is the grid with work",
                            f"in0 = l1_block_sharded splits Kt = {kt} over the {n_blocks} cores along each in0 "
                            f"multicast, which does not divide it", spec.span("memory.in0"),
                            _shard_grid_offer(spec, mt, nt, kt, per_core_m, n_blocks))
        return kt // n_blocks
    return 0


def _l1_interleaved_bytes(spec: MatmulSpec, arch, tiles: tuple[int, int, int],
                          formats: tuple[str, str, str]) -> dict[str, int]:
    """Bytes of each core's L1 bank an L1-interleaved tensor holds: TT-Metal's allocator deals its
    pages round-robin over the L1 banks (one per worker core, NUM_L1_BANKS). `tiles`: the tile rows
    of in0 and the output (batch fused), N and K tiles."""
    rows, nt, kt = tiles
    mem = {"in0": spec.memory.in0, "in1": spec.memory.in1, "out": spec.memory.out}
    tensors = {"in0": (rows * kt, formats[0]),
               "in1": (kt * nt * (1 if spec.broadcast_in1 else spec.batch), formats[1]),
               "out": (rows * nt, formats[2])}
    return {name: -(-tiles // arch.toolchain.num_l1_banks) * arch.tile_bytes[fmt]
            for name, (tiles, fmt) in tensors.items() if mem[name] == Placement.L1}


def _check_l1_interleaved_fit(spec: MatmulSpec, arch, cb_bytes: int, held: dict[str, int]) -> None:
    """The CBs end below the L1-interleaved tensors, which the allocator places from the top of each
    bank down (0.81.1's libtt_metal.so: "Out of Memory: Not enough space to allocate {} B {} buffer
    across {} banks..." and "Statically allocated circular buffers in program {} clash with L1
    buffers on core range {}...")."""
    need = cb_bytes + sum(held.values())
    if held and need > arch.usable_cb_bytes:
        tensors = ", ".join(f"{name} {b:,} B" for name, b in held.items())
        alone = sum(held.values()) > arch.usable_cb_bytes
        what = f"{sum(held.values()):,} B without a CB" if alone else f"and the CBs {cb_bytes:,} B: {need:,} B"
        raise PlanError("CBs and L1-interleaved tensors fit each core's L1 bank (TT-Metal's allocator)",
                        f"the L1-interleaved tensors take {tensors} of each of the {arch.toolchain.num_l1_banks} "
                        f"L1 banks {what}, but {arch.name} has {arch.usable_cb_bytes:,} usable bytes per core; "
                        f"ttnn would fail to allocate them",
                        spec.span("memory"), otherwise="memory.in0/in1/out = dram for the largest tensor")


# each factory reads and writes sharded tensors as its TT-Metal factory does (mcast_2d: in0 block- or
# height-sharded, the output block-sharded; mcast_1d_in1: in0 and the output height-sharded; dram_sharded: its own)
SHARDED_PLACEMENT_RULE = "a sharded L1 placement is taken by the factories whose TT-Metal program reads it so"


def _check_placements(spec: MatmulSpec) -> None:
    """The factory takes each tensor where the spec puts it (checked before its layout rules)."""
    mem, df = spec.memory, dataflow_of(spec.dataflow)
    if accepts(df, mem):
        return
    if not any(is_sharded(w) for w in (mem.in0, mem.in1, mem.out)):    # interleaved, in DRAM or L1
        where = ", ".join(f"{t} = {'|'.join(sorted(w))}" for t, w in df.placements.items())
        raise PlanError(f"{df.factory} takes its tensors sharded",
                        f"memory {{ in0 = {mem.in0}  in1 = {mem.in1}  out = {mem.out} }} with dataflow = "
                        f"{spec.dataflow}, which takes {where}", spec.span("dataflow"),
                        Offer((suggestion(f"memory {{ {'  '.join(f'{t} = {sorted(w)[0]}' for t, w in df.placements.items())} }}",
                                          *((f"memory.{t}", sorted(w)[0]) for t, w in df.placements.items())),),
                              f"memory placement of {df.name}"))
    where = ", ".join(f"{t} = {'|'.join(sorted(w))}" for t, w in df.placements.items())
    raise PlanError(SHARDED_PLACEMENT_RULE,
                    f"memory {{ in0 = {mem.in0}  in1 = {mem.in1}  out = {mem.out} }} with dataflow = "
                    f"{spec.dataflow}, which takes {where} (TT-Metal's {df.factory} and its validation)",
                    spec.span("memory"),
                    Offer(tuple(suggestion(f"dataflow = {d.name}", ("dataflow", d.name)) for d in REGISTRY
                                if accepts(d, mem)), "dataflow taking these placements", count=len(REGISTRY)))


def _check_transposed_inputs(spec: MatmulSpec) -> None:
    """transpose_a / transpose_b: TT-Metal 0.81.1's reuse, 2D and 1D factories read the stored tensor
    transposed; bound_matmul runs a separate ttnn::transpose before the others. TT's own refusals, quoted
    from the wheel's _ttnncpp.so (matmul_device_operation.cpp): transpose_a with a fused batch. A sharded
    in0 with transpose_a: :func:`_check_transpose_a_sharded`."""
    if not (spec.transpose_a or spec.transpose_b):
        return
    key = "transpose_a" if spec.transpose_a else "transpose_b"
    df = dataflow_of(spec.dataflow)
    if not df.transposes_inside:
        takers = [d.name for d in REGISTRY if d.transposes_inside]
        raise PlanError("transposed inputs are read inside the reuse and multicast factories",
                        f"{key} = true with dataflow = {spec.dataflow}: {df.transpose_refusal}", spec.span(key),
                        Offer(tuple(suggestion(f"dataflow = {n}", ("dataflow", n)) for n in takers),
                              "dataflow reading transposed inputs", count=len(takers)))
    if spec.transpose_a and spec.batch > 1 and spec.fuses_batch:       # unfused, each batch's K x M is read
        raise PlanError("transpose_a with fuse_batch needs M_per_batch = 1 (TT-Metal: \"transpose_a with fuse_batch "
                        "is not supported when batch dimensions exist and M_per_batch > 1\"; \"cannot transpose A "
                        "in batched matmul\")",
                        f"transpose_a = true with batch = {spec.batch}: A is stored as {spec.batch} K x M matrices, "
                        f"which TT-Metal 0.81.1 does not read transposed across a fused batch (kgen neither, at M = 1)",
                        spec.span("transpose_a"), "fuse_batch = false (each batch's K x M read transposed), batch = 1, "
                        "or transpose_a = false")
    _check_transpose_a_sharded(spec)


# The sharded in0 readers of TT-Metal 0.81.1's multicast factories (the wheel's kernels)
TT_SHARDED_IN0_READERS = ("reader_bmm_tile_layout_in0_sender_padding.cpp (IN0_SHARDED)",
                          "reader_bmm_tile_layout_in0_sender_receiver_padding_block_sharded.cpp")


def _check_transpose_a_sharded(spec: MatmulSpec) -> None:
    """transpose_a with an L1-sharded in0. ttnn.matmul 0.81.1 does not refuse it (matmul_device_operation.cpp
    @001cea9a validates a sharded in0's stored shard shape against per_core_M and in0_block_w, and nothing
    about transpose_a; bound_matmul runs no ttnn::transpose before the 2D and 1D factories), but the
    factories' sharded in0 readers take the shard as it is stored, K x M, tile after tile, without the
    in0_tensor_stride_w / _h that walk an interleaved in0 transposed; the compute kernel then transposes
    each tile where it lies. TT's program multiplies A~ with A~[i][j] = A[j][i] tile by tile, not A
    (tests/gen/test_transpose_sharded.py runs TT's program there)."""
    if spec.transpose_a and is_sharded(spec.memory.in0):
        raise PlanError("transpose_a reads in0 interleaved: TT-Metal's sharded in0 readers copy the stored shard "
                        "untransposed (kgen)",
                        f"transpose_a = true with memory.in0 = {spec.memory.in0}: ttnn.matmul 0.81.1 runs it, but "
                        f"its sharded in0 readers ({', '.join(TT_SHARDED_IN0_READERS)}) hand the compute kernel "
                        f"the stored K x M shard tile by tile in its stored order, without the transposed strides, "
                        f"and the compute kernel transposes each tile in place: TT's program multiplies A's tiles "
                        f"mirrored across the diagonal, each left untransposed (A~[i][j] = A[j][i] per tile), not "
                        f"A; kgen builds transpose_a for an interleaved in0 only",
                        spec.span("memory.in0"), "memory.in0 = dram or l1")


def _check_transpose_mcast(spec: MatmulSpec) -> None:
    """transpose_mcast is a field of the 2D multicast program config only
    (MatmulMultiCoreReuseMultiCastProgramConfig, matmul_program_config_types.hpp)."""
    if spec.transpose_mcast and not dataflow_of(spec.dataflow).transpose_mcast:
        takers = ", ".join(d.name for d in REGISTRY if d.transpose_mcast)
        raise PlanError("transpose_mcast belongs to the 2D multicast factory",
                        f"transpose_mcast = true with dataflow = {spec.dataflow}: only {takers} multicasts in0 "
                        f"and in1, so only it can swap their directions", spec.span("transpose_mcast"),
                        f"dataflow = {takers}, or transpose_mcast = false")


def _check_untilized_padding(spec: MatmulSpec, mt: int, nt: int, per_core_m: int, per_core_n: int) -> None:
    if spec.untilize_out and (mt % per_core_m or nt % per_core_n or spec.m % TILE_HW or spec.n % TILE_HW
                              or spec.k % TILE_HW):
        raise PlanError("untilize_out needs tile-multiple shapes and per_core dividing Mt and Nt",
                        "untilize_out with a padded shape or a padded last block: kgen's row-major writer "
                        "writes whole out blocks (and TT-Metal's 2D multicast writers write tiles only)",
                        spec.span("untilize_out"), _untilize_false(), also="or per_core dividing Mt x Nt")


# TT-Metal's rule behind a refused batched in1 with the batch fused (tenstorrent/tt-metal@001cea9a, ttnn
# 0.81.1): with fuse_batch, matmul_device_operation.cpp's validation requires
# `get_batch_size(b_shape_padded) == 1` ("Matmul with fused batch requires input tensors of shapes
# BCMK*11KN=BCMN"). With fuse_batch = false the 2D and 1D multicast factories loop over the batch
# (bcast_batch = false), as the reuse factory always does.
BATCHED_IN1_RULE = ("matmul_device_operation.cpp @001cea9a: with fuse_batch, "
                    "get_batch_size(b_shape_padded) == 1 (BCMK*11KN=BCMN)")
# TT's rules for fuse_batch = false, quoted from the 0.81.1 wheel's _ttnncpp.so (matmul_device_operation.cpp)
UNFUSED_SHARDED_IN0_RULE = "matmul_device_operation.cpp (0.81.1): fuse_batch must be enabled when input A is sharded"
UNFUSED_SHARDED_OUT_RULE = ("matmul_device_operation.cpp (0.81.1): a block-sharded output is incompatible with "
                            "batch > 1 when batch fusion is disabled")


def check_batch(df: Dataflow, spec: MatmulSpec) -> None:
    """The batch's form: a batched in1 needs it unfused; an unfused batch needs a factory that loops over
    it (reuse, mcast_2d, mcast_1d_*; TT's fuse_batch = false) and interleaved in0 and output."""
    if spec.batch == 1:
        return
    if spec.fuses_batch and not spec.broadcast_in1:
        raise PlanError(BATCHED_IN1_RULE,
                        f"broadcast_in1 = false with batch = {spec.batch} and fuse_batch = true: one in1 matrix per "
                        f"batch cannot be fused into M", spec.span("fuse_batch"),
                        Offer((suggestion("fuse_batch = false", ("fuse_batch", False)),
                               suggestion("broadcast_in1 = true", ("broadcast_in1", True))),
                              "change of fuse_batch or broadcast_in1", sep=", or "))
    if spec.fuses_batch:
        return
    what = ("broadcast_in1 = false" if spec.fuse_batch is None else "fuse_batch = false") + f" with batch = {spec.batch}"
    if not df.loops_batch:
        takers = [d.name for d in REGISTRY if d.loops_batch]
        raise PlanError(BATCHED_IN1_RULE if not spec.broadcast_in1 else "fuse_batch = false is a reuse or multicast "
                        "program config's", f"{what} loops every core over the batch, but dataflow {df.name} "
                        f"({df.factory}) fuses the batch into M and takes one in1 shared by every batch",
                        spec.span("fuse_batch" if spec.fuse_batch is not None else "broadcast_in1"),
                        Offer(tuple(suggestion(f"dataflow = {t}", ("dataflow", t)) for t in takers)
                              + (suggestion("broadcast_in1 = true", ("broadcast_in1", True)),),
                              "change of dataflow or broadcast_in1", count=len(takers) + 1, sep=", or "))
    for tensor, rule in (("in0", UNFUSED_SHARDED_IN0_RULE), ("out", UNFUSED_SHARDED_OUT_RULE)):
        if is_sharded(getattr(spec.memory, tensor)):
            raise PlanError(rule, f"{what} with memory.{tensor} = {getattr(spec.memory, tensor)}: TT-Metal refuses "
                            f"a sharded {tensor} when every core loops over the batch", spec.span(f"memory.{tensor}"),
                            f"memory.{tensor} = dram or l1"
                            + (", or broadcast_in1 = true" if not spec.broadcast_in1 else ", or fuse_batch = true"))


def _untilize_false() -> Offer:
    return Offer((suggestion("untilize_out = false", ("untilize_out", False)),), "change of untilize_out")


def _no_orientation() -> Offer:
    return Offer((suggestion("leave memory.orientation out", ("memory.orientation", None)),),
                 "change of memory.orientation")


def _shard_grid_offer(spec: MatmulSpec, mt: int, nt: int, kt: int, per_core_m: int, n_blocks: int) -> Offer:
    """per_core values whose cores along the in0 multicast (Nt / per_core_N of them) divide Kt, the count
    of cores nearest the spec's first."""
    widths = sorted((d for d in divisors(nt) if kt % (nt // d) == 0), key=lambda d: (abs(nt // d - n_blocks), d))
    return Offer(tuple(suggestion(f"per_core = {per_core_m} x {d}", ("block.per_core", (per_core_m, d)))
                       for d in widths), "per_core_N whose cores along N divide Kt")


def _warnings(p: Plan) -> tuple[str, ...]:
    """What `kgen check` warns of in a legal plan; each warning cites its source."""
    c, spec = p.compute, p.spec
    warnings: list[str] = []
    if p.arch.behaviour.hifi4_fp32_dest_accuracy_bug and c.fp32_dest_acc and c.math_fidelity == "HiFi4":
        warnings.append("Wormhole + HiFi4 + fp32 dest accumulation: output accuracy can be worse with HiFi4 "
                        "than HiFi3 due to a hardware bug; prefer HiFi3 (TT-Metal verify_numerical_configuration, "
                        "tt-metal#38306)")
    if p.l1_acc_enabled and c.fp32_dest_acc:
        warnings.append("packer L1 accumulation with fp32 dest accumulation: known hardware limitation "
                        "tt-metal#28800 (format conversion ordering around the L1-acc adder); TT-Metal's "
                        "DRAM-sharded factory turns L1 acc off here (PR #38066), the 2D factory kgen mirrors "
                        "does not")
    if p.policy == POLICY_SPILL and not c.fp32_dest_acc:
        warnings.append(f"spill/reload without fp32 dest: partials round-trip through {p.partials_format} "
                        f"{p.num_blocks - 1} time(s); precision loss grows with K (tt-metal#5729, #8449)")
    warnings += factory_departures(p)
    if caution := activations.caution(spec.activation):
        warnings.append(f"fuse.activation = {spec.activation} ({spec.span('fuse.activation')}): {caution}")
    if "dtype.bias" in spec.spans and not spec.fuse_bias:
        warnings.append(f"dtype bias = {spec.dtype_bias} ({spec.span('dtype.bias')}) has no effect: there is no "
                        f"bias without fuse {{ bias = true }}")
    if p.grid != p.grid_requested:
        warnings.append(f"only {p.grid[0]} x {p.grid[1]} of the {fmt_pair(p.grid_requested)} grid have work "
                        f"(per_core {p.per_core_m} x {p.per_core_n} over Mt x Nt = {p.mt} x {p.nt})")
    return tuple(warnings)
