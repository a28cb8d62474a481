"""TT-Metal's multi-core program for a kgen `multi_core` plan: the three Metal 2.0 kernels
MatmulMultiCoreProgramFactory::create_program_artifacts binds (matmul_multicore_program_factory.cpp, ttnn
0.81.1: the wheel's _ttnncpp.so names exactly these three paths beside the factory's strings), with the
named args and bindings its KernelSpecs declare:

    reader       reader_bmm_8bank_output_tiles_partitioned_metal2.cpp   RISCV_1; CTA in0_last_ktile_w/h;
                 RTAs Mt, Kt, Nt, MtKt, KtNt, batch, bcast_B, output_tile_start_id, num_output_tiles, MtNt
    writer       writer_unary_interleaved_start_id.cpp (matmul's)         RISCV_0; RTAs num_pages, start_id
    compute_g1/2 bmm_metal2.cpp                                           CTA batch = 1, Mt = 1, Kt, Nt =
                                                                          the group's tiles per core

The factory's values: B = in0's batch, Mt, Kt, Nt of one batch (padded), bcast_B = bcast_batch (in1 has one
matrix), the run of core i of split_work_to_cores's order (its output_tile_start_id and tiles). kgen's core
j (row-major) runs TT's core j's run: each of kgen's per-core readers and writers gets TT's kernel with
that core's args, each of kgen's compute kernels the compute kernel of its group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from kgen.core.manifest import cores_of
from kgen.gen.dataflow.tt_program import (DataflowSwapError, Metal2Kernel, TensorBinding, TtProgram, aligned_pages,
                                         untiled_tensor)
from kgen.gen.rules import CB_IN0, CB_IN1, CB_OUT, ceil_div

if TYPE_CHECKING:
    from kgen.gen.planned import Plan

READER = "reader_bmm_8bank_output_tiles_partitioned_metal2.cpp"
WRITER = "writer_unary_interleaved_start_id.cpp"
COMPUTE = "bmm_metal2.cpp"
READER_RTAS = ("Mt", "Kt", "Nt", "MtKt", "KtNt", "batch", "bcast_B", "output_tile_start_id", "num_output_tiles", "MtNt")
WRITER_RTAS = ("num_pages", "start_id")


def unsupported_reason(plan: Plan, manifest: Mapping[str, Any]) -> str | None:
    """Why TT-Metal's multi-core kernels cannot run this plan, or None when they can."""
    return untiled_tensor(manifest)


def factory_values(plan: Plan) -> dict[str, int]:
    """The factory's shapes: B = get_batch_size(in0), Mt, Kt, Nt of one (padded) batch, bcast_B."""
    s = plan.spec
    mt, kt, nt = ceil_div(s.m, 32), plan.kt, plan.nt
    return {"Mt": mt, "Kt": kt, "Nt": nt, "MtKt": mt * kt, "KtNt": kt * nt, "batch": s.batch,
            "bcast_B": int(s.broadcast_in1 or s.batch == 1), "MtNt": mt * nt}


def _binding(plan: Plan, name: str, tensor: str, page: Mapping[str, int]) -> TensorBinding:
    return TensorBinding(name, False, getattr(plan.memory, tensor) == "dram", page[tensor], {"buffer_address": tensor})


def program(plan: Plan, manifest: Mapping[str, Any], readers_writers: str,
            run_of: Callable[[int], tuple[int, int]]) -> TtProgram:
    """TT-Metal's reader, writer and compute kernels in the places of kgen's; `run_of(i)`: the first tile and
    the tiles of core i of split_work_to_cores's order."""
    reason = unsupported_reason(plan, manifest)
    if reason:
        raise DataflowSwapError(reason)
    page = aligned_pages(manifest, plan.arch.dram_alignment)
    width, v = plan.grid[0], factory_values(plan)
    kernels: dict[str, Metal2Kernel] = {}
    computes: dict[str, Metal2Kernel] = {}
    for k in manifest["kernels"]:
        cores = cores_of(k["core_ranges"])
        if k["processor"] == "TRISC":
            tiles = k["compile_time_args"][k["compile_time_arg_names"].index("Nt")]
            computes[k["name"]] = Metal2Kernel(
                k["name"], COMPUTE, {"batch": 1, "Mt": 1, "Kt": v["Kt"], "Nt": tiles}, (),
                tuple((c, {}, ()) for c in cores), dfbs={"in0": CB_IN0, "in1": CB_IN1, "out": CB_OUT})
            continue
        (core,) = cores
        first, tiles = run_of(core[1] * width + core[0])
        if k["name"].startswith("reader"):
            named = {**{n: v[n] for n in READER_RTAS if n in v}, "output_tile_start_id": first,
                     "num_output_tiles": tiles}
            kernels[k["name"]] = Metal2Kernel(
                k["name"], READER, {"in0_last_ktile_w": plan.spec.k % 32, "in0_last_ktile_h": 0}, READER_RTAS,
                ((core, named, ()),), dfbs={"in0": CB_IN0, "in1": CB_IN1},
                tensors=(_binding(plan, "in0", "in0", page), _binding(plan, "in1", "in1", page)))
        else:
            kernels[k["name"]] = Metal2Kernel(
                k["name"], WRITER, {}, WRITER_RTAS, ((core, {"num_pages": tiles, "start_id": first}, ()),),
                dfbs={"out": CB_OUT}, tensors=(_binding(plan, "output", "out", page),))
    first = computes.pop("compute")
    return TtProgram(readers_writers, kernels, first, computes)
