"""TT-Metal's own program on a kgen plan, as values: the kernels a TT-Metal program factory puts where
kgen's data-movement kernels are, each with what the factory gives it (compile-time args, named args,
defines, per-core runtime args), for the legacy kernels (:class:`TtKernelArgs`) and for those that read
Metal 2.0 named bindings (:class:`Metal2Kernel`); a program is the factory's set of them (:class:`TtProgram`).

Port-check runs these kernels, from the fetched 0.81.1 headers, in the places of kgen's. Each factory
derives its program (`Dataflow.tt_program`, from tt_mcast.py, tt_reuse.py, tt_dram_sharded.py) and
kgen/proof/ttdataflow.py writes it into a build folder. This module is below both: it names no plan and
no factory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kgen.core.errors import KgenError
from kgen.gen.rules import ceil_div

# tensor_accessor::ArgConfig bits (tensor_accessor_args.h)
SHARDED, IS_DRAM = 1 << 0, 1 << 1
# ArgConfig of an interleaved DRAM TensorAccessorArgs (tensor_accessor_args.h: IsDram = 1 << 1).
INTERLEAVED_DRAM = IS_DRAM
# ... and of an L1 buffer. For an L1-sharded in0 or output kgen passes this interleaved-L1 form: the
# factory's sharded TensorAccessorArgs carry the shard layout too, but neither kernel addresses those
# tensors through an accessor (the block-sharded reader builds none; under OUT_SHARDED the writers
# construct one and never use it), so only their positions in the CT args matter.
INTERLEAVED_L1 = 0


def accessor_config(where: str) -> int:
    """The ArgConfig word the factory's TensorAccessorArgs(*buffer) writes for a tensor placed `where`
    (a spec placement): IsDram for a DRAM buffer, 0 for one in L1, interleaved over the L1 banks or
    sharded (see INTERLEAVED_L1). TT-Metal 0.81.1's matmul readers and writers read an L1-interleaved
    tensor with the same code as a DRAM one: `TensorAccessor(args, addr)` resolves a page to an L1 bank
    when IsDram is clear (ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow/
    reader_bmm_tile_layout_in0_sender_padding.cpp `TensorAccessorArgs<28>()`, reader_bmm_tile_layout.cpp,
    writer_bmm_tile_layout.cpp, tt-metal v0.81.1)."""
    return INTERLEAVED_DRAM if where == "dram" else INTERLEAVED_L1


class DataflowSwapError(KgenError):
    """TT-Metal's data-movement kernels cannot be put in this plan's place."""


@dataclass(frozen=True)
class TtKernelArgs:
    """What TT-Metal's factory gives one data-movement kernel."""

    name: str                                   # kgen's kernel it replaces
    source: str                                 # TT-Metal's kernel file (the headers' dataflow kernel folder)
    compile_time_args: tuple[int, ...]
    named_compile_time_args: dict[str, int]
    defines: dict[str, str]
    runtime_args: tuple[tuple[tuple[int, int], tuple[Any, ...]], ...]   # (core, args) per core


@dataclass(frozen=True)
class TensorBinding:
    name: str                       # the accessor name: tensor::<name>
    sharded: bool
    dram: bool
    page_size: int                  # aligned page size
    address: Any                    # the base address as a runtime-arg lookup ({"buffer_address": ...})

    @property
    def cta_words(self) -> tuple[int, int]:
        return ((SHARDED if self.sharded else 0) | (IS_DRAM if self.dram else 0), self.page_size)


@dataclass(frozen=True)
class Metal2Kernel:
    """One Metal 2.0 kernel's bindings and args, as its factory's KernelSpec and KernelRunArgs give them."""

    name: str                                       # kgen's kernel it replaces
    source: str                                     # TT-Metal's kernel file
    named_cta: Mapping[str, int]
    rta_names: tuple[str, ...]
    runtime: tuple[tuple[tuple[int, int], Mapping[str, Any], tuple[Any, ...]], ...]   # (core, named RTAs, varargs)
    dfbs: Mapping[str, int] = field(default_factory=dict)
    sems: Mapping[str, int] = field(default_factory=dict)
    tensors: tuple[TensorBinding, ...] = ()
    defines: Mapping[str, str] = field(default_factory=dict)

    @property
    def compile_time_args(self) -> tuple[int, ...]:
        return tuple(w for t in self.tensors for w in t.cta_words)

    @property
    def common_runtime_args(self) -> tuple[Any, ...]:
        return tuple(t.address for t in self.tensors)

    def runtime_args(self) -> list[dict]:
        """Each core's runtime args: the named RTAs in schema order, then its varargs."""
        out = []
        for core, named, varargs in self.runtime:
            missing = [n for n in self.rta_names if n not in named]
            assert not missing, f"{self.name} on {core}: no value for runtime arg(s) {missing}"
            out.append({"core": list(core), "args": [named[n] for n in self.rta_names] + list(varargs)})
        return out


# (op, TT-Metal's count minus kgen's, why): where the two programs count an op differently by design
ExpectedDifference = tuple[str, int, str]


@dataclass(frozen=True)
class TtProgram:
    """TT-Metal's program on a kgen plan as its factory builds it: TT's data-movement kernels, each in the
    place of one of kgen's, and the compute kernel the factory binds where port-check runs TT's own."""

    readers_writers: str                                  # how port-check names them ("2D multicast", ...)
    kernels: Mapping[str, TtKernelArgs | Metal2Kernel]    # kgen's kernel -> TT-Metal's kernel in its place
    compute: Metal2Kernel | None = None                   # the factory's compute kernel (the headers' compute
                                                          # folder), where it is not the legacy one
    # kgen's further compute kernels -> the factory's in their places, where it binds one per group of cores
    computes: Mapping[str, Metal2Kernel] = field(default_factory=dict)


def untiled_tensor(manifest: Mapping[str, Any]) -> str | None:
    """Why no factory's program runs a build with a tensor in row-major layout, None when every one is tiled."""
    for t in manifest["io_tensors"]:
        if t["layout"] != "TILE":
            return f"tensor {t['name']} is {t['layout']}; TT-Metal's writers write tiles"
    return None


def aligned_pages(manifest: Mapping[str, Any], alignment: int) -> dict[str, int]:
    """Each tensor's page size rounded up to the DRAM alignment, as the factories size their pages."""
    return {t["name"]: ceil_div(t["page_size"], alignment) * alignment for t in manifest["io_tensors"]}


def noc_index(kernel: Mapping[str, Any]) -> int:
    """The NoC a manifest kernel runs on (0 or 1)."""
    return int((kernel.get("noc") or "NOC_0").rsplit("_", 1)[1])
