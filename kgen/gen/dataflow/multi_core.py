"""The multi_core dataflow, TT-Metal's MatmulMultiCoreProgramFactory (matmul_multicore_program_factory.cpp,
`create_program_artifacts`, ttnn 0.81.1; the kernels are the wheel's own): no blocking and no reuse. The
B x Mt x Nt output tiles, numbered row-major over the batch, are split over the cores by
tt::tt_metal::split_work_to_cores; each core reads, for every output tile of its run, the Kt tiles of its
in0 row and in1 column one tile at a time (reader_bmm_8bank_output_tiles_partitioned_metal2.cpp),
accumulates them in DST (bmm_metal2.cpp: acquire, Kt x matmul_tiles, pack one tile) and writes the tile
(writer_unary_interleaved_start_id.cpp). TT's program config, MatmulMultiCoreProgramConfig, is
create_simple_matmul_program_config's last resort (kgen/gen/ttauto.py, `_multicore`).

The work split (split_work_to_cores(grid, units), column-major over the grid): with fewer units than
cores, the first `units` cores take one tile each; otherwise every core of the grid works, the first
`units % cores` of them ("core_group_1") one tile more than the others ("core_group_2"). Core i of that
order takes the run of tiles after those of cores 0..i-1 (the factory's `num_tiles_written`). The
factory binds one compute kernel per group, with the group's tile count as its CT arg `Nt`
(`batch = Mt = 1`: "B, Mt, Nt are just 3 for loops that act as 1 large loop").

kgen's port: kgen's core j (row-major over the grid) takes TT's core j's run, which moves no tile (TT numbers
its cores column-major). A run crosses output rows (and batches) at places that differ by core, and kgen's
IR addresses tiles affinely in loop variables and core coordinates only, so kgen writes one reader and one
writer per core (each a few loop nests: a partial row, whole rows of one batch, a partial row), and one
compute kernel per rectangle of cores with the same tile count (a group is a row-major run of cores: up
to two rectangles). The CB table is the factory's: c_0 and c_1 two tiles each, the output (TT's c_16,
kgen's c_4) two tiles; kgen's planner keeps its one-tile partials buffer beside them, which no kernel uses.

In kgen's plan the factory's compute kernel is one K-block of in0_block_w = Kt (all of K accumulated in DST,
no spill, no L1 accumulation: `packer_l1_acc` is read and dropped by the factory), out block and subblock
1 x 1; per_core 1 x 1 names the unit of work, a tile. The factory takes no bias (TT_FATAL "Bias is not
supported for matmul multi core"), no fused activation and writes tiles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.types import Placement
from kgen.gen.dataflow.base import INTERLEAVED, Dataflow, Layout
from kgen.gen.dataflow.kernels import dm_kernel, tensors_of
from kgen.gen.tt_bound_matmul import SOURCE as BOUND_MATMUL
from kgen.gen.ir import Affine, CircularBuffer, CoreRange, Kernel, Loop, Node, Semaphore, op
from kgen.gen.rules import CB_IN0, CB_IN1, CB_OUT, PlanError, ceil_div

if TYPE_CHECKING:
    from kgen.gen.dataflow.tt_program import ExpectedDifference, TtProgram
    from kgen.gen.matmul_spec import MatmulSpec
    from kgen.gen.planned import Plan

A = Affine.of
FACTORY_CPP = "matmul_multicore_program_factory.cpp"
# the factory's CBs: num_input_tiles = 2 (c_0, c_1), num_output_tiles = 2 (its c_16, kgen's c_4)
CB_TILES = MappingProxyType({CB_IN0: 2, CB_IN1: 2, CB_OUT: 2})


@dataclass(frozen=True)
class Split:
    """split_work_to_cores(grid, units): `cores` with work, the first `group_1` of them `tiles_1` tiles each,
    the rest `tiles_2` (0 when there is no second group)."""

    units: int
    cores: int
    group_1: int
    tiles_1: int
    tiles_2: int

    def run(self, core: int) -> tuple[int, int]:
        """(first tile, tiles) of core `core` in the split's order (the factory's num_tiles_written)."""
        if core < self.group_1:
            return core * self.tiles_1, self.tiles_1
        return self.group_1 * self.tiles_1 + (core - self.group_1) * self.tiles_2, self.tiles_2

    @property
    def groups(self) -> tuple[tuple[int, int, int], ...]:
        """(first core, past the last core, tiles per core) of each group with cores."""
        out = [(0, self.group_1, self.tiles_1)]
        if self.cores > self.group_1:
            out.append((self.group_1, self.cores, self.tiles_2))
        return tuple(out)


def split_work_to_cores(grid: tuple[int, int], units: int) -> Split:
    """tt_metal/common/work_split.cpp `split_work_to_cores(grid_size, units_to_divide)` (row_wise false)."""
    most = grid[0] * grid[1]
    cores = min(units, most)
    per, extra = divmod(units, cores)
    if not extra:
        return Split(units, cores, cores, per, 0)
    return Split(units, cores, extra, per + 1, per)


def runs(first: int, stop: int, width: int) -> tuple[CoreRange, ...]:
    """Cores first..stop-1 of a row-major numbering `width` wide, as CoreRanges: the rest of the first
    core's row (when it does not start one), then a run of whole rows whose last may be partial."""
    out = []
    if first % width and first < stop:
        end = min(stop, (first // width + 1) * width)
        out.append(CoreRange(first % width, first // width, (end - 1) % width, first // width))
        first = end
    if first < stop:
        y0, y1 = first // width, (stop - 1) // width
        count = stop - first
        out.append(CoreRange(0, y0, width - 1, y1, 0 if count == (y1 - y0 + 1) * width else count))
    return tuple(out)


class MultiCore(Dataflow):
    name = "multi_core"
    factory = FACTORY_CPP
    label = "multi-core"
    placements: Mapping[str, frozenset[Placement]] = INTERLEAVED   # TensorAccessor(in0/in1/output): DRAM or L1
    shared_axis: int | None = None
    batched_in1 = True              # bcast_B = 0: one in1 per batch
    loops_batch = True              # the run of tiles goes over the batch (MtKt, KtNt, MtNt)
    transpose_refusal = ("TT-Metal's multi-core factory reads A and B as stored (no transposed strides); ttnn "
                         "transposes them first")
    reference_compute = "bmm.cpp"
    draws_blocks = False            # no blocks to draw: fuzz and tune leave it out
    # no partials: bmm_metal2.cpp's KernelSpec unpacks in0 and in1 UnpackToSrc and marks nothing
    partials_unpack_to_dest = False

    def layout(self, spec: MatmulSpec, mt: int, nt: int, grid_req: tuple[int, int], choices: list[str]) -> Layout:
        _check_spec(spec)
        # the planner's Mt is one batch's when it keeps the batch out of M (a batched in1, fuse_batch = false)
        units = mt * nt * (spec.batch if spec.batch > 1 and mt == ceil_div(spec.m, 32) else 1)
        split = split_work_to_cores(grid_req, units)
        width = grid_req[0]
        rows = ceil_div(split.cores, width)
        partial = split.cores % width and rows > 1
        grid = (min(split.cores, width), rows)
        choices.append(f"cores: {units} output tiles over {split.cores} of the {grid_req[0]} x {grid_req[1]} grid's "
                       f"cores (split_work_to_cores): {_groups_text(split)}")
        return Layout(1, 1, grid, grid[0], cores=split.cores if partial else 0)

    def fixed_in0_block_w(self, kt: int) -> int | None:
        return kt                    # bmm.cpp accumulates all of K in DST before it packs

    def factory_cbs(self, cbs: tuple[CircularBuffer, ...]) -> tuple[CircularBuffer, ...]:
        # each its own L1 (the factory has no partials; kgen's one-tile buffer shares none of it)
        return tuple(replace(c, pages=CB_TILES.get(c.index, c.pages), region=c.role) for c in cbs)

    def core_m_terms(self, p: Plan) -> dict[str, int]:
        return {}

    def core_n_terms(self, p: Plan) -> dict[str, int]:
        return {}

    def in0_reader_cores(self, p: Plan) -> int:
        return p.num_cores

    def padding_notes(self, p: Plan) -> tuple[str, ...]:
        s = split_of(p)
        return (f"{s.units} output tiles split over {s.cores} cores: {_groups_text(s)}",)

    def compute_kernels(self, p: Plan, all_cores: CoreRange) -> tuple[Kernel, ...] | None:
        return tuple(_compute(p, name, cores, tiles) for name, cores, tiles in compute_ranges(p))

    def kernels(self, p: Plan, all_cores: CoreRange) -> tuple[tuple[Kernel, ...], tuple[Semaphore, ...]]:
        split, width = split_of(p), p.grid[0]
        readers, writers = [], []
        for j in range(split.cores):
            core = CoreRange(j % width, j // width, j % width, j // width)
            first, tiles = split.run(j)
            readers.append(_reader(p, f"reader_{j}", core, first, tiles))
            writers.append(_writer(p, f"writer_{j}", core, first, tiles))
        return tuple(readers + writers), ()

    def tt_unsupported(self, p: Plan, manifest: Mapping[str, Any]) -> str | None:
        from kgen.gen.dataflow import tt_multi_core
        return tt_multi_core.unsupported_reason(p, manifest)

    def tt_program(self, p: Plan, manifest: Mapping[str, Any], noc: Mapping[str, int]) -> TtProgram:
        from kgen.gen.dataflow import tt_multi_core
        return tt_multi_core.program(p, manifest, f"{self.label} factory's", split_of(p).run)

    def tt_expected_differences(self, p: Plan) -> tuple[ExpectedDifference, ...]:
        return ()


MULTI_CORE = MultiCore()


def split_of(p: Plan) -> Split:
    """The factory's split of this plan's output tiles over the requested grid."""
    return split_work_to_cores(p.grid_requested, p.batch_ct * p.mt * p.nt)


def compute_ranges(p: Plan) -> tuple[tuple[str, CoreRange, int], ...]:
    """(kgen kernel name, cores, tiles per core) of each compute kernel: one per rectangle of each group."""
    out = []
    for first, stop, tiles in split_of(p).groups:
        for cores in runs(first, stop, p.grid[0]):
            out.append(("compute" if not out else f"compute_{len(out)}", cores, tiles))
    return tuple(out)


def _groups_text(s: Split) -> str:
    if s.cores == s.group_1:
        return f"{s.tiles_1} each"
    return f"{s.group_1} cores {s.tiles_1} each (core_group_1), {s.cores - s.group_1} cores {s.tiles_2} each (core_group_2)"


def _check_spec(spec: MatmulSpec) -> None:
    """What TT's multi-core factory and its kernels run, each rule with its source."""
    if spec.fuse_bias:
        raise PlanError(f"{FACTORY_CPP}: TT_FATAL \"Bias is not supported for matmul multi core\"",
                        "fuse { bias = true } with dataflow = multi_core: TT-Metal's multi-core factory takes no bias "
                        "(ttnn.linear with this program config adds it after the matmul in a ttnn::add of its own, "
                        "bound_matmul's post-processed bias, which kgen does not build)",
                        spec.span("fuse.bias"), "fuse { bias = false }, or another dataflow")
    if spec.activation not in (None, "", "none"):
        raise PlanError(f"{FACTORY_CPP}: its compute kernel bmm.cpp fuses no activation",
                        f"fuse {{ activation = {spec.activation} }} with dataflow = multi_core: TT-Metal's multi-core "
                        f"factory applies none", spec.span("fuse.activation"), "no fused activation, or another dataflow")
    if spec.untilize_out:
        raise PlanError(f"{FACTORY_CPP}: writer_unary_interleaved_start_id.cpp writes tiles",
                        "untilize_out = true with dataflow = multi_core: the factory's writer writes tiles",
                        spec.span("untilize_out"), "untilize_out = false")
    b = spec.block
    kt = ceil_div(spec.k, 32)
    for field, value, want in (("per_core", b.per_core, (1, 1)), ("out_block", b.out_block, (1, 1)),
                               ("out_subblock", b.out_subblock, (1, 1)), ("in0_block_w", b.in0_block_w, kt)):
        if value is not None and value != want:
            shown = f"{want[0]} x {want[1]}" if isinstance(want, tuple) else str(want)
            raise PlanError(f"{FACTORY_CPP}: one output tile at a time, all of K in DST (bmm.cpp)",
                            f"block.{field} = {value} with dataflow = multi_core: the factory's kernels compute one "
                            f"output tile at a time over all Kt = {kt} K tiles ({field} = {shown})",
                            spec.span(f"block.{field}"), f"{field} = {shown}, or leave it out")


def _reader(p: Plan, name: str, core: CoreRange, first: int, tiles: int) -> Kernel:
    """reader_bmm_8bank_output_tiles_partitioned.cpp's reads for the run `first`..`first + tiles - 1`: per
    output tile, Kt pairs of one in0 tile (its row) and one in1 tile (its column), each read, waited for and
    pushed alone."""
    kt, nt = p.kt, p.nt
    nests: list[Node] = []
    for row0, row1, n0, n1 in row_pieces(first, first + tiles, nt, p.mt if p.batched_in1 else 0):
        batch_in1 = (row0 // p.mt) * kt * nt if p.batched_in1 else 0
        reads = (op("cb_reserve_back", CB_IN0, 1), op("read_tiles", "in0", CB_IN0, A(0, m=kt, k=1), 1, 1, kt,
                                                       None, None, None),
                 op("noc_read_barrier"), op("cb_push_back", CB_IN0, 1),
                 op("cb_reserve_back", CB_IN1, 1), op("read_tiles", "in1", CB_IN1, A(batch_in1, k=nt, n=1), 1, 1, nt,
                                                       None, None, None),
                 op("noc_read_barrier"), op("cb_push_back", CB_IN1, 1))
        nests.append(Loop("m", row0, row1, (Loop("n", n0, n1, (Loop("k", 0, kt, reads),)),),
                          f"output rows {row0}..{row1 - 1}, columns {n0}..{n1 - 1}"))
    t = tensors_of(p)
    kernel = dm_kernel(name, "NCRISC", 1, core, tuple(nests), (t["in0"], t["in1"]), (("cb_in0", CB_IN0), ("cb_in1", CB_IN1)))
    return replace(kernel, role="reader")         # one role, one kernel per core


def _writer(p: Plan, name: str, core: CoreRange, first: int, tiles: int) -> Kernel:
    """writer_unary_interleaved_start_id.cpp: each output tile of the run as it comes, flushed, then one
    barrier."""
    body = (Loop("i", first, first + tiles, (
        op("cb_wait_front", CB_OUT, 1), op("write_tiles", "out", CB_OUT, A(0, i=1), 1, 1, p.nt, None, None, None),
        op("noc_writes_flushed"), op("cb_pop_front", CB_OUT, 1))), op("noc_write_barrier"))
    return replace(dm_kernel(name, "BRISC", 0, core, body, (tensors_of(p)["out"],), (("cb_out", CB_OUT),)), role="writer")


def row_pieces(first: int, stop: int, nt: int, rows_per_batch: int) -> tuple[tuple[int, int, int, int], ...]:
    """Output tiles first..stop-1 (row-major, Nt a row) as (row0, row1, n0, n1) loop nests: a partial row, or
    whole rows, never crossing a batch when `rows_per_batch` (a batched in1) is given."""
    out = []
    g = first
    while g < stop:
        row, n = divmod(g, nt)
        if n or stop - g < nt:
            n1 = min(nt, n + stop - g)
            out.append((row, row + 1, n, n1))
            g += n1 - n
            continue
        whole = (stop - g) // nt
        if rows_per_batch:
            whole = min(whole, rows_per_batch - row % rows_per_batch)
        out.append((row, row + whole, 0, nt))
        g += whole * nt
    return tuple(out)


def _compute(p: Plan, name: str, cores: CoreRange, tiles: int) -> Kernel:
    """bmm.cpp on a group's cores: per output tile, acquire DST, Kt single-tile matmuls, pack one tile."""
    k_loop = Loop("k", 0, p.kt, (
        op("cb_wait_front", CB_IN0, 1), op("cb_wait_front", CB_IN1, 1),
        op("matmul_block", CB_IN0, CB_IN1, A(0), A(0), 0, False, 1, 1, 1, note="matmul_tiles: one tile"),
        op("cb_pop_front", CB_IN0, 1), op("cb_pop_front", CB_IN1, 1)))
    body = (op("hw_startup", CB_IN0, CB_IN1, CB_OUT, note="SrcOrder::Reverse: in0 -> SrcB, in1 -> SrcA"),
            op("matmul_init", CB_IN0, CB_IN1, False, 1, 1, 1, note="matmul_init: the block init of one tile"),
            Loop("t", 0, tiles, (op("tile_regs_acquire"), k_loop, op("tile_regs_commit"),
                                 op("cb_reserve_back", CB_OUT, 1), op("tile_regs_wait"),
                                 op("pack_tile", A(0), CB_OUT), op("tile_regs_release"),
                                 op("cb_push_back", CB_OUT, 1)), "this core's output tiles"))
    return Kernel(name, "compute", "TRISC", None, cores, body,
                  compile_time_args=(("batch", 1), ("Mt", 1), ("Kt", p.kt), ("Nt", tiles)),
                  named_compile_time_args=(("cb_in0", CB_IN0), ("cb_in1", CB_IN1), ("cb_out", CB_OUT)),
                  # kgen's flag define of fp32 DST accumulation (its verifier ties the two); bmm.cpp reads no
                  # define and TT's factory sets none (its DST mode is the compute config's)
                  defines=(("FP32_DEST_ACC_EN", "1"),) if p.compute.fp32_dest_acc else ())


# ----------------------------------------------------------------------------------------------
# `dataflow = auto` (kgen/gen/ttauto.py, _multicore): what TT's MatmulMultiCoreProgramConfig is in kgen's terms
# ----------------------------------------------------------------------------------------------

def auto_refusal(spec: MatmulSpec) -> str | None:
    """Why kgen does not build TT's whole call for this spec, or None. With no program config ttnn.matmul's
    bound_matmul (kgen.gen.tt_bound_matmul) adds a bias the multi-core config cannot fuse in a ttnn::add of
    its own, and applies an activation without a core grid in a unary op of its own; kgen builds the
    matmul's program only, and the multi-core factory has no bias or activation stage to fuse them into."""
    if spec.fuse_bias:
        return ("a fused bias with ttnn.matmul's automatic MatmulMultiCoreProgramConfig: TT runs the matmul without "
                f"it (MatmulMultiCoreProgramFactory takes none) and adds it in a separate ttnn::add ({BOUND_MATMUL}, "
                "get_post_process_bias); kgen builds no separate op")
    if spec.activation not in (None, "", "none"):
        return (f"fuse {{ activation = {spec.activation} }} with ttnn.matmul's automatic MatmulMultiCoreProgramConfig: "
                f"TT applies it after the matmul in a unary op of its own ({BOUND_MATMUL}, no core grid); kgen builds "
                f"no separate op")
    return None


def auto_rules(chooser: str) -> tuple[tuple[str, str], ...]:
    """Which TT rule chose each field of the multi-core config (TTConfig.rules)."""
    grid = ("normalize_program_config (matmul_program_config_types.hpp, 0.81.1): allowed_worker_cores = the "
            "device's compute grid")
    kernels = f"{FACTORY_CPP}: bmm.cpp computes one output tile at a time, all of K in DST"
    return (("dataflow", f"{chooser}: MatmulMultiCoreProgramFactory, kgen's multi_core"), ("grid", grid),
            ("per_core", f"{FACTORY_CPP}: split_work_to_cores over the output tiles (one tile the unit)"),
            ("in0_block_w", f"{kernels} (Kt)"), ("out_block", kernels), ("out_subblock", kernels))
