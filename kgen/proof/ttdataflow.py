"""TT-Metal's whole program on a kgen plan, as a build folder the emulator runs: :func:`with_tt_dataflow`
copies a build folder and puts TT-Metal's own data-movement kernels (from the fetched headers, unchanged)
in the places of kgen's, with the compile-time args, named args, defines and per-core runtime args the
factory computes for the same blocking. With TT-Metal's compute kernel swapped in too
(:func:`kgen.gen.pipeline.with_compute_kernel`) the folder is TT-Metal's whole program on kgen's plan, CB
table and inputs, which `kgen port-check` runs beside kgen's.

What each factory's program is (TT's kernel files and args) is derived beside the factory, in
kgen/gen/dataflow/ (tt_mcast.py for the 2D and 1D multicast factories, tt_reuse.py, tt_dram_sharded.py);
this module writes it into a folder: the legacy kernels' includes and named-arg maps, and for the Metal 2.0
kernels of the DRAM-sharded factory the binding headers TT-Metal's JIT would generate (ttmetal2.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Mapping

from kgen.core.types import Placement
from kgen.gen import dataflow as dataflows
from kgen.gen.dataflow import Factory
from kgen.gen.dataflow import tt_dram_sharded, tt_mcast, tt_reuse
from kgen.gen.dataflow.tt_program import DataflowSwapError, TtKernelArgs, aligned_pages
from kgen.proof.emu_build import emulator_config
from kgen.proof.ttmetal2 import args_header, bindings_header, kernel_includes, trisc_source
from kgen.toolchain.headers import toolchain_config


def tt_kernel_file(name: str) -> str:
    if name in tt_reuse.REUSE_KERNELS:
        return tt_reuse.REUSE_KERNELS[name]
    if tt_dram_sharded.tt_kernel_file(name):
        return tt_dram_sharded.tt_kernel_file(name)
    return tt_mcast.TT_BLOCK_SHARDED_IN0 if name.startswith("in0_sharded_") else tt_mcast.TT_KERNELS[name]


def unsupported_reason(plan, manifest: dict) -> str | None:
    """Why TT-Metal's 2D multicast readers cannot run this plan, or None when they can."""
    if plan.spec.dataflow not in DATAFLOWS_WITH_TT_PROGRAM:
        return (f"dataflow {plan.spec.dataflow}: kgen runs TT-Metal's readers/writers of "
                f"{', '.join(DATAFLOWS_WITH_TT_PROGRAM)} only")
    for t in manifest["io_tensors"]:
        if t["layout"] != "TILE":
            return f"tensor {t['name']} is {t['layout']}; TT-Metal's writers write tiles"
    if plan.dataflow.factory == Factory.REUSE:
        return tt_reuse.unsupported_reason(plan)
    if plan.dataflow.factory in METAL2_PROGRAMS:
        return None
    names = {k["name"] for k in manifest["kernels"]}
    senders = {"in1_sender_writer"} | ({"in0_sharded_0"} if plan.memory.in0 == Placement.L1_BLOCK_SHARDED else {"in0_sender"})
    missing = sorted(senders - names)
    if missing:
        return f"the build folder lacks kgen kernels {', '.join(missing)}"
    return None


def _reuse_args(f: tt_mcast.FactoryValues, k: dict) -> TtKernelArgs:
    return tt_reuse.kernel_args(f.plan, k, f.page)


_ARGS_OF_REUSE = {"reader": _reuse_args, "writer": _reuse_args}       # kgen/gen/dataflow/tt_reuse.py
# The factories whose program port-check runs: TT-Metal's reader/writer kernels of the 2D and 1D
# multicast factories and of the reuse factory.
TT_PROGRAMS: Mapping[Factory, Mapping[str, Callable[[tt_mcast.FactoryValues, dict], TtKernelArgs]]] = {
    Factory.MCAST_2D: tt_mcast.ARGS_2D, Factory.MCAST_1D: tt_mcast.ARGS_1D, Factory.REUSE: _ARGS_OF_REUSE}
# The factories whose kernels take Metal 2.0 named bindings (kgen/proof/ttmetal2.py): the DRAM-sharded one.
METAL2_PROGRAMS = (Factory.DRAM_SHARDED,)
DATAFLOWS_WITH_TT_PROGRAM = tuple(d.name for d in dataflows.REGISTRY
                                  if d.factory in TT_PROGRAMS or d.factory in METAL2_PROGRAMS)


def tt_kernel_args(plan, manifest: dict) -> dict[str, TtKernelArgs]:
    """The factory's args for each of kgen's data-movement kernels present in the manifest."""
    reason = unsupported_reason(plan, manifest)
    if reason:
        raise DataflowSwapError(reason)
    values = tt_mcast.FactoryValues.of(plan, manifest)
    kernels = {k["name"]: k for k in manifest["kernels"]}
    table = TT_PROGRAMS[plan.dataflow.factory]
    args = {name: args_of(values, kernels[name]) for name, args_of in table.items() if name in kernels}
    args.update({name: tt_mcast.in0_block_sharded(values, k) for name, k in kernels.items()
                 if name.startswith("in0_sharded_")})
    return args


def tt_dataflow_dir(tree) -> Path:
    return tree.root / toolchain_config()["headers"]["reference_dataflow_dir"]


def ttnn_include_dir(tree) -> Path:
    return tree.root / toolchain_config()["headers"]["ttnn_include_dir"]


def with_tt_dataflow(folder: Path, plan, kernels_dir: Path, into: Path, *, ttnn_include: Path) -> Path:
    """A copy of build folder `folder` whose data-movement kernels are TT-Metal's (from
    `kernels_dir`) with the factory's args. `ttnn_include` is the tree's ttnn/cpp folder, for the
    ttnn helpers those kernels include (pad_tile.hpp)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    if plan.dataflow.factory in METAL2_PROGRAMS:
        return _with_metal2_program(folder, manifest, plan, kernels_dir, into, ttnn_include)
    args = tt_kernel_args(plan, manifest)
    for name in args:
        if not (kernels_dir / tt_kernel_file(name)).is_file():
            raise DataflowSwapError(f"{kernels_dir / tt_kernel_file(name)}: no such TT-Metal kernel "
                                    f"(fetch the headers with: kgen headers fetch)")
    shutil.copytree(folder, into, ignore=shutil.ignore_patterns("obj", "elf", "compile.json"))
    for k in manifest["kernels"]:
        a = args.get(k["name"])
        if a is None:
            continue
        source = (kernels_dir / tt_kernel_file(k["name"])).resolve()
        k.update(compile_time_args=list(a.compile_time_args),
                 compile_time_arg_names=[f"tt_ct_{i}" for i in range(len(a.compile_time_args))],
                 named_compile_time_args=a.named_compile_time_args, defines=a.defines,
                 runtime_args=[{"core": list(c), "args": list(v)} for c, v in a.runtime_args],
                 runtime_arg_names=[], common_runtime_args=[], common_runtime_arg_names=[],
                 include_dirs=[str(ttnn_include.resolve())], tt_metal_source=str(source))
        gen = into / "jit" / k["name"]
        (gen / "kernel_includes.hpp").write_text(f'#include "{source}"\n')
        pairs = ",".join(f'{{"{n}",{v}}}' for n, v in a.named_compile_time_args.items())
        (gen / "named_ct_arg_map_generated.h").write_text(f"#define KERNEL_COMPILE_TIME_ARG_MAP {pairs}\n")
    (into / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return into


def _with_metal2_program(folder: Path, manifest: dict, plan, kernels_dir: Path, into: Path, ttnn_include: Path) -> Path:
    """The DRAM-sharded factory's program (kgen/gen/dataflow/tt_dram_sharded.py): its kernels read Metal 2.0
    named bindings, so the tree's tt_metal/hw/inc follows the emulator's headers on their include path (for
    TT-Metal's own experimental/kernel_args.h and binding tokens)."""
    for name in (tt_dram_sharded.IN0_KERNEL, tt_dram_sharded.IN1_KERNEL):
        if not (kernels_dir / name).is_file():
            raise DataflowSwapError(f"{kernels_dir / name}: no such TT-Metal kernel (fetch the headers with: kgen headers fetch)")
    shutil.copytree(folder, into, ignore=shutil.ignore_patterns("obj", "elf", "compile.json"))
    hw_inc = ttnn_include.parents[1] / "tt_metal" / "hw" / "inc"
    compute_dir = kernels_dir.parent / "compute"
    program = _write_metal2_program(manifest, plan, kernels_dir, into,
                                    include_dirs=[str(ttnn_include.resolve()), str(hw_inc.resolve())],
                                    compute_dir=compute_dir)
    (into / "manifest.json").write_text(json.dumps(program, indent=2) + "\n")
    return into


def _write_metal2_program(folder_manifest: dict, plan, kernels_dir, into, *, include_dirs: list[str],
                          compute_dir=None) -> dict:
    """Put TT's two Metal 2.0 readers in kgen's places in the copied build folder `into`: each kernel's
    source, its generated binding headers, its args; returns the program's manifest (not yet written)."""
    manifest = folder_manifest          # kgen's CB table is TT's: c_4 its own buffer, c_7 the output shard
    page = aligned_pages(manifest, plan.arch.dram_alignment)
    bound = tt_dram_sharded.metal2_kernels(plan, manifest, emulator_config()["noc"], page)
    if compute_dir is not None and (compute_dir / tt_dram_sharded.COMPUTE_KERNEL).is_file():
        (k,) = [k for k in manifest["kernels"] if k["name"] == "compute"]
        bound["compute"] = tt_dram_sharded.compute(plan, k)
    for k in manifest["kernels"]:
        m = bound.get(k["name"])
        if m is None:
            continue
        source = ((compute_dir if m.name == "compute" else kernels_dir) / m.source).resolve()
        k.update(compile_time_args=list(m.compile_time_args),
                 compile_time_arg_names=[f"tt_ct_{i}" for i in range(len(m.compile_time_args))],
                 named_compile_time_args={}, defines=dict(m.defines), runtime_args=m.runtime_args(),
                 runtime_arg_names=[], common_runtime_args=list(m.common_runtime_args),
                 common_runtime_arg_names=[], include_dirs=include_dirs, tt_metal_source=str(source))
        gen = into / "jit" / k["name"]
        (gen / "kernel_bindings_generated.h").write_text(bindings_header(m))
        (gen / "kernel_args_generated.h").write_text(args_header(m))
        if m.name == "compute":
            k["named_compile_time_args"] = {}
            for role in ("unpack", "math", "pack"):
                (gen / f"chlkc_{role}.cpp").write_text(trisc_source(role, str(source)))
                (gen / "defines_generated.h").write_text("".join(f"#define {n} {v}\n" for n, v in m.defines.items()))
            continue
        (gen / "kernel_includes.hpp").write_text(kernel_includes(str(source)))
        (gen / "named_ct_arg_map_generated.h").write_text("#define KERNEL_COMPILE_TIME_ARG_MAP\n")
    return manifest
