"""TT-Metal's reuse program for a kgen `reuse` plan: the reader and writer TT-Metal's reuse factory binds,
with the args it computes (matmul_multicore_reuse_program_factory.cpp, tenstorrent/tt-metal@1e768b71
and @be663def, which compute the same args; the kernels are the 0.81.1 wheel's own). A pass shows that
kgen's args mean what these wheel kernels read; ttnn.matmul 0.81.1 itself runs the optimized reuse
factory's kernels instead (docs/reference/provenance.md, F11):

    reader   reader_bmm_tile_layout.cpp    in0 and in1 of the core's output block, NCRISC
    writer   writer_bmm_tile_layout.cpp    the output block, subblock by subblock, BRISC

The factory gives every core one output block, `output_idx_y` along M and `output_idx_x` along N, and
the kernels loop over the B batches of it: the reader steps in0 by `MtKt` and in1 by `KtNt` unless
`bcast_B`, the writer steps the output by `MtNt`. kgen's reuse plan holds the same blocks: core (x, y)
computes block (output_idx_x, output_idx_y) = (x, y) (TT numbers the cores row-major over the device
grid instead, which moves no tile). With in1 broadcast kgen fuses the batch into M, so the factory's
values are those of B = 1 over the fused Mt; with one in1 per batch B = batch and bcast_B = 0.

What the factory's kernels cannot run (they have no padding path, no bias and read one output block per
core per batch) is said by :func:`unsupported_reason`; port-check then runs TT's compute kernel only.
The reuse factory (kgen/gen/dataflow/reuse.py) answers port-check with :func:`program`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from kgen.core.manifest import cores_of
from kgen.core.types import is_sharded
from kgen.gen.dataflow import tt_transpose
from kgen.gen.dataflow.tt_program import (DataflowSwapError, accessor_config, ExpectedDifference, TtKernelArgs,
                                         TtProgram, aligned_pages, untiled_tensor)

if TYPE_CHECKING:
    from kgen.gen.planned import Plan

# kgen kernel name -> TT-Metal 0.81.1 kernel file (the headers' dataflow kernel folder)
REUSE_KERNELS: Mapping[str, str] = {"reader": "reader_bmm_tile_layout.cpp", "writer": "writer_bmm_tile_layout.cpp"}


def unsupported_reason(plan: Plan, manifest: Mapping[str, Any]) -> str | None:
    """Why TT-Metal's reuse reader/writer cannot run this plan, or None when they can."""
    p = plan
    untiled = untiled_tensor(manifest)
    if untiled:
        return untiled
    if p.mt % p.per_core_m or p.nt % p.per_core_n:
        return (f"per_core {p.per_core_m} x {p.per_core_n} leaves padded blocks of Mt x Nt = {p.mt} x {p.nt}: the reuse "
                f"factory requires Mt % per_core_M == 0 and Nt % per_core_N == 0 and its reader has no padding args")
    if (p.out_block_h, p.out_block_w) != (p.per_core_m, p.per_core_n):
        return (f"out_block {p.out_block_h} x {p.out_block_w} is not per_core {p.per_core_m} x {p.per_core_n}: TT-Metal's "
                f"reuse reader reads per_core_M x in0_block_w tiles of in0 per K-block (one output block per core)")
    if p.fuse_bias:
        return "a fused bias: TT-Metal's reuse factory reads no bias (reader_bmm_tile_layout.cpp reads in0 and in1 only)"
    if any(is_sharded(where) for where in (p.memory.in0, p.memory.in1, p.memory.out)):
        return "a sharded tensor: kgen runs TT-Metal's reuse factory on interleaved tensors (DRAM or L1) only"
    return None


def factory_values(plan) -> dict[str, int]:
    """The factory's shapes for kgen's plan: Mt per batch and B (1 with the batch fused into M), bcast_B."""
    return {"Mt": plan.mt, "Nt": plan.nt, "Kt": plan.kt, "B": plan.batch_ct, "bcast_B": 0 if plan.batched_in1 else 1}


def reader_args(plan, core: tuple[int, int]) -> tuple[Any, ...]:
    """The reader's 21 runtime args for the core computing output block (x, y) (the factory's
    reader_desc.emplace_runtime_args)."""
    p, v = plan, factory_values(plan)
    ox, oy = core
    ibw = p.in0_block_w
    (w0, h0), (w1, h1) = tt_transpose.in0_strides(p), tt_transpose.in1_strides(p)   # swapped when transposed
    return ({"buffer_address": "in0"}, h0 * p.per_core_m * oy, w0, h0, ibw * w0,   # start, stride w / h, next block
            ibw, p.per_core_m, ibw * p.per_core_m,                                 # in0 block w, h, tiles
            {"buffer_address": "in1"}, p.per_core_n * w1 * ox, w1, h1, ibw * h1,
            p.per_core_n, ibw, p.per_core_n * ibw,                                 # in1 block w, h, tiles
            v["Kt"] // ibw,                                                        # num_blocks
            v["Mt"] * v["Kt"], v["Kt"] * v["Nt"], v["B"], v["bcast_B"])            # MtKt, KtNt, batch, bcast_B


def writer_args(plan, core: tuple[int, int]) -> tuple[Any, ...]:
    """The writer's 13 runtime args (the factory's writer_desc.emplace_runtime_args)."""
    p, v = plan, factory_values(plan)
    ox, oy = core
    sbh, sbw = p.out_subblock_h, p.out_subblock_w
    return ({"buffer_address": "out"}, ox * p.per_core_n + oy * p.per_core_m * v["Nt"], 1, v["Nt"],
            sbw, sbh * v["Nt"],                                                    # next subblock stride w, h
            sbw, sbh, sbw * sbh, p.per_core_n // sbw, p.per_core_m // sbh,
            v["Mt"] * v["Nt"], v["B"])                                             # MtNt, batch


def program(plan: Plan, manifest: Mapping[str, Any], readers_writers: str) -> TtProgram:
    """TT-Metal's reader and writer in the places of kgen's `reader` and `writer`."""
    reason = unsupported_reason(plan, manifest)
    if reason:
        raise DataflowSwapError(reason)
    page = aligned_pages(manifest, plan.arch.dram_alignment)
    return TtProgram(readers_writers, {k["name"]: kernel_args(plan, k, page) for k in manifest["kernels"]
                                       if k["name"] in REUSE_KERNELS})


def kernel_args(plan: Plan, kernel: dict, page: Mapping[str, int]) -> TtKernelArgs:
    """TT-Metal's kernel in place of kgen's `reader` or `writer`: CT args TensorAccessorArgs (in0, in1) or
    (out), named CB args from kgen's CB table, per-core runtime args."""
    name, named = kernel["name"], kernel["named_compile_time_args"]
    cores = cores_of(kernel["core_ranges"])
    if name == "reader":
        # TensorAccessorArgs(in0), (in1): IsDram per buffer (an L1-interleaved one reads through the same code)
        return TtKernelArgs(name, REUSE_KERNELS[name], (accessor_config(plan.memory.in0), page["in0"],
                                                        accessor_config(plan.memory.in1), page["in1"]),
                            {"cb_in0": named["cb_in0"], "cb_in1": named["cb_in1"]}, {},
                            tuple((c, reader_args(plan, c)) for c in cores))
    return TtKernelArgs(name, REUSE_KERNELS[name], (accessor_config(plan.memory.out), page["out"]), {"cb_out": named["cb_out"]}, {},
                        tuple((c, writer_args(plan, c)) for c in cores))


def expected_differences(plan: Plan) -> tuple[ExpectedDifference, ...]:
    """Where TT-Metal's reuse reader and kgen's count differently by design: TT's reader reserves both
    CBs, reads in0 and in1 and waits once per K-block; kgen's reader waits after each of the two reads."""
    blocks = plan.num_cores * plan.batch_ct * plan.num_blocks_h_dim * plan.num_blocks_w_dim * plan.num_blocks
    return (("noc_async_read_barrier", -blocks,
             "TT-Metal's reuse reader (reader_bmm_tile_layout.cpp) reads a K-block of in0 and of in1 behind one "
             "barrier; kgen's reader waits for each block read, one barrier more per K-block"),)
