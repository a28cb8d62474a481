"""TT-Metal's whole program on a kgen plan, as a build folder the emulator runs: :func:`with_tt_program`
copies a build folder and puts TT-Metal's own data-movement kernels (from the fetched headers, unchanged)
in the places of kgen's, with the compile-time args, named args, defines and per-core runtime args the
factory computes for the same blocking. With TT-Metal's compute kernel swapped in too
(:func:`kgen.gen.pipeline.with_compute_kernel`) the folder is TT-Metal's whole program on kgen's plan, CB
table and inputs, which `kgen port-check` runs beside kgen's.

What the program is (TT's kernel files and their args) the plan's factory says (`Dataflow.tt_program`,
derived in kgen/gen/dataflow/tt_*.py); this module only writes it into a folder: a legacy kernel's
include and named-arg map, a Metal 2.0 kernel's binding headers as TT-Metal's JIT would generate them
(ttmetal2.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from kgen.gen.dataflow.tt_program import DataflowSwapError, Metal2Kernel, TtKernelArgs, TtProgram
from kgen.proof.emu_build import emulator_config
from kgen.proof.ttmetal2 import args_header, bindings_header, kernel_includes, trisc_source
from kgen.toolchain.headers import toolchain_config


def tt_dataflow_dir(tree) -> Path:
    return tree.root / toolchain_config()["headers"]["reference_dataflow_dir"]


def ttnn_include_dir(tree) -> Path:
    return tree.root / toolchain_config()["headers"]["ttnn_include_dir"]


def tt_program_of(plan, folder: Path) -> TtProgram:
    """The plan's factory's program for build folder `folder`, on the emulator's NoC coordinates."""
    manifest = json.loads((folder / "manifest.json").read_text())
    return plan.dataflow.tt_program(plan, manifest, emulator_config()["noc"])


def tt_compute_kernel(program: TtProgram, kernels_dir: Path) -> Path | None:
    """The factory's own compute kernel where the program names one and the tree has it (the dataflow
    kernels' sibling compute/ folder); None: the folder keeps the compute kernel it was built with."""
    if program.compute is None:
        return None
    source = kernels_dir.parent / "compute" / program.compute.source
    return source if source.is_file() else None


def with_tt_program(folder: Path, program: TtProgram, kernels_dir: Path, into: Path, *, ttnn_include: Path) -> Path:
    """A copy of build folder `folder` whose data-movement kernels are TT-Metal's of `program` (from
    `kernels_dir`), with the compute kernel the factory binds where the tree has it. `ttnn_include` is the
    tree's ttnn/cpp folder, for the ttnn helpers those kernels include (pad_tile.hpp); Metal 2.0 kernels
    also take the tree's tt_metal/hw/inc after the emulator's headers, for TT-Metal's own
    experimental/kernel_args.h and binding tokens."""
    for kernel in program.kernels.values():
        if not (kernels_dir / kernel.source).is_file():
            raise DataflowSwapError(f"{kernels_dir / kernel.source}: no such TT-Metal kernel "
                                    f"(fetch the headers with: kgen headers fetch)")
    manifest = json.loads((folder / "manifest.json").read_text())
    shutil.copytree(folder, into, ignore=shutil.ignore_patterns("obj", "elf", "compile.json"))
    include_dirs = [str(ttnn_include.resolve())]
    if any(isinstance(k, Metal2Kernel) for k in program.kernels.values()):
        include_dirs.append(str((ttnn_include.parents[1] / "tt_metal" / "hw" / "inc").resolve()))
    compute = tt_compute_kernel(program, kernels_dir)
    for k in manifest["kernels"]:
        gen, tt = into / "jit" / k["name"], program.kernels.get(k["name"])
        if k["name"] == "compute" and compute is not None:
            _write_metal2_compute(k, program.compute, compute.resolve(), gen, include_dirs)
        elif k["name"] in program.computes and compute is not None:
            # the factory's compute kernel of another group of cores (its own CT args), the same source
            _write_metal2_compute(k, program.computes[k["name"]], compute.resolve(), gen, include_dirs)
        elif isinstance(tt, Metal2Kernel):
            _write_metal2(k, tt, (kernels_dir / tt.source).resolve(), gen, include_dirs)
        elif tt is not None:
            _write_legacy(k, tt, (kernels_dir / tt.source).resolve(), gen, include_dirs)
    (into / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return into


def _write_legacy(k: dict[str, Any], tt: TtKernelArgs, source: Path, gen: Path, include_dirs: list[str]) -> None:
    """A legacy kernel: positional and named compile-time args, per-core runtime args."""
    k.update(compile_time_args=list(tt.compile_time_args),
             compile_time_arg_names=[f"tt_ct_{i}" for i in range(len(tt.compile_time_args))],
             named_compile_time_args=tt.named_compile_time_args, defines=tt.defines,
             runtime_args=[{"core": list(c), "args": list(v)} for c, v in tt.runtime_args],
             runtime_arg_names=[], common_runtime_args=[], common_runtime_arg_names=[],
             include_dirs=include_dirs, tt_metal_source=str(source))
    (gen / "kernel_includes.hpp").write_text(f'#include "{source}"\n')
    pairs = ",".join(f'{{"{n}",{v}}}' for n, v in tt.named_compile_time_args.items())
    (gen / "named_ct_arg_map_generated.h").write_text(f"#define KERNEL_COMPILE_TIME_ARG_MAP {pairs}\n")


def _bind_metal2(k: dict[str, Any], m: Metal2Kernel, source: Path, gen: Path, include_dirs: list[str]) -> None:
    """A Metal 2.0 kernel's args in the manifest and the binding headers TT-Metal's JIT generates."""
    k.update(compile_time_args=list(m.compile_time_args),
             compile_time_arg_names=[f"tt_ct_{i}" for i in range(len(m.compile_time_args))],
             named_compile_time_args={}, defines=dict(m.defines), runtime_args=m.runtime_args(),
             runtime_arg_names=[], common_runtime_args=list(m.common_runtime_args),
             common_runtime_arg_names=[], include_dirs=include_dirs, tt_metal_source=str(source))
    (gen / "kernel_bindings_generated.h").write_text(bindings_header(m))
    (gen / "kernel_args_generated.h").write_text(args_header(m))


def _write_metal2(k: dict[str, Any], m: Metal2Kernel, source: Path, gen: Path, include_dirs: list[str]) -> None:
    """A Metal 2.0 data-movement kernel: included after the firmware's dataflow API and its bindings."""
    _bind_metal2(k, m, source, gen, include_dirs)
    (gen / "kernel_includes.hpp").write_text(kernel_includes(str(source)))
    (gen / "named_ct_arg_map_generated.h").write_text("#define KERNEL_COMPILE_TIME_ARG_MAP\n")


def _write_metal2_compute(k: dict[str, Any], m: Metal2Kernel, source: Path, gen: Path, include_dirs: list[str]) -> None:
    """A Metal 2.0 compute kernel: one TRISC source per thread, each with the JIT's prolog."""
    _bind_metal2(k, m, source, gen, include_dirs)
    for role in ("unpack", "math", "pack"):
        (gen / f"chlkc_{role}.cpp").write_text(trisc_source(role, str(source)))
    (gen / "defines_generated.h").write_text("".join(f"#define {n} {v}\n" for n, v in m.defines.items()))
