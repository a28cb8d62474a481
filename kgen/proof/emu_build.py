"""The emulator's build: its C++ runtime and the kernels of a build folder compiled with the host
g++ against kgen's host model of the kernel API (kgen/proof/emu), cached by their sources."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kgen.core.arch import ArchFacts, load_arch
from kgen.core.costs import load_costs
from kgen.core.types import MATH_FIDELITY_VALUE
from kgen.toolchain.compile import KernelInfo, jit_defines, read_kernels, toolchain_config
from kgen.core.errors import Incomplete, KgenError
from kgen.core.interrupts import scratch
from kgen.core.resources import cache_root, config_table, writable_dir

EMU_DIR = Path(__file__).resolve().parent / "emu"
ROLE_SOURCES = {"unpack": "chlkc_unpack.cpp", "math": "chlkc_math.cpp", "pack": "chlkc_pack.cpp"}
RUNTIME_SOURCES = ("runtime_machine.cpp", "runtime_api.cpp", "runtime_driver.cpp", "tensix_math.cpp")
# The emulator's flags: -O3 -march=native for its arithmetic (the emulator is built on the machine
# that runs it; the cache key includes the CPU, and tensix_math's bits do not depend on the flags,
# see tests/proof/test_tensix_math.py); it exports its API to the kernels' objects.
RUNTIME_FLAGS = ("-std=c++17", "-O3", "-march=native", "-g", "-rdynamic", "-Wall", "-Wextra")
BUILD_PREFIX = "kgen-build"       # what a build folder's path reads as in kernel source locations
# -Wno-int-to-pointer-cast: kernels turn 32-bit L1 addresses into pointers with C casts (TT-Metal's
# experimental/kernel_args.h does); exact on the device's 32-bit pointers and on the emulator's L1,
# which is mapped below 4 GiB, but a warning on a 64-bit host.
KERNEL_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing",
                "-Wno-int-to-pointer-cast")


class EmulatorError(KgenError):
    """The emulator cannot run this (no host compiler, a kernel that does not compile for the host)."""


class EmulatorCrash(KgenError):
    """The emulated program crashed or the emulator failed: a kgen or kernel bug, exit 1."""

    exit_code = 1


def modelled_cycles(arch: ArchFacts) -> dict[str, float]:
    """Cycles the emulator charges per API call: the performance model's cost tables (configs/perf,
    kgen.core.costs), one table for both, so that the emulator's timeline and `kgen perf` price every
    op alike. Curves go as "<name>@<x>" keys."""
    c = load_costs(arch.name)
    cycles = {
        "matmul_call": c.math.overhead_per_call,
        "datacopy_tile": c.math.datacopy_cycles_per_tile, "eltwise_tile": c.math.eltwise_cycles_per_tile,
        "pack_call": c.pack.overhead_per_call, "untilize_tile": c.pack.untilize_cycles_per_tile,
        "untilize_block": c.pack.untilize_cycles_per_block,
        "cb_op": c.sync.cb_op, "cfg_op": c.sync.reconfig, "dst_section_half": c.sync.dst_section / 2,
        "dram_read_bytes_per_cycle": c.dram.read_bytes_per_cycle, "dram_read_request": c.dram.cycles_per_read_request,
        "dram_bank_read_bytes_per_cycle": c.dram_bank_read_bytes_per_cycle(),
        "dram_read_latency": c.dram.read_latency, "dram_write_bytes_per_cycle": c.dram.write_bytes_per_cycle,
        "dram_write_latency": c.dram.write_latency,
        "l1_read_bytes_per_cycle": c.l1.read_bytes_per_cycle, "l1_read_latency": c.l1.read_latency, "l1_local_read_latency": c.l1.local_read_latency,
        "l1_write_bytes_per_cycle": c.l1.write_bytes_per_cycle, "l1_write_latency": c.l1.write_latency,
        "sem_latency": c.multicast.semaphore_latency, "unpack_held_per_pass": c.unpack.held_tiles_per_pass,
    }
    for fmt in arch.tile_bytes:
        cycles[f"unpack_tile.{fmt}"] = c.unpack_tile(fmt)
        cycles[f"unpack_shared_tile.{fmt}"] = c.unpack_shared_tile(fmt)
        cycles[f"pack_tile.{fmt}"] = c.pack_tile(fmt, False)
        cycles[f"pack_tile_l1acc.{fmt}"] = c.pack_tile(fmt, True)
    for fidelity, value in MATH_FIDELITY_VALUE.items():      # keyed by ckernel::MathFidelity
        cycles[f"matmul_tile.{value}"] = c.matmul_tile_cycles(fidelity, False)
        cycles[f"matmul_tile_fp32.{value}"] = c.matmul_tile_cycles(fidelity, True)
    columns, rows = arch.worker_grid
    for destinations in range(1, columns * rows + 1):
        cycles[f"mcast_issue.{destinations}"] = c.multicast_issue(destinations)
        cycles[f"mcast_landing.{destinations}"] = c.multicast_landing(destinations)
    for x, y in c.multicast.bandwidth.points:
        cycles[f"mcast_bw@{x:g}"] = y
    return cycles


# Where the activation enum the kernel includes lives in the header tree.
TTNN_CPP = "ttnn/cpp"


def _missing(what: str) -> KgenError:
    return Incomplete(what)


def header_tree():
    """The TT-Metal header tree (kgen.toolchain.headers), or the missing-tool error."""
    from kgen.toolchain.headers import find_headers

    tree, note = find_headers()
    if tree is None:
        raise _missing(f"the SFPU activations need TT-Metal's LLK SFPU headers and none were found ({note}); "
                       "fetch them with `kgen headers fetch` or point --headers / $TT_METAL_HOME at a tree")
    return tree


def llk_sfpu_include_dirs(arch_name: str, tree=None) -> list[Path]:
    """The folders a kernel with a fused activation needs from the header tree, searched after the
    host model's headers: TT-Metal's ``hw/ckernels/<arch>/metal/llk_api/llk_sfpu``, tt-llk's
    ``common/inc`` and ttnn's ``cpp`` (the activation enum the kernel includes)."""
    tree = tree or header_tree()
    tc = load_arch(arch_name).toolchain
    dirs = [tree.tt_metal / "hw" / "ckernels" / tc.ckernels_dir / "metal" / "llk_api" / "llk_sfpu",
            tree.tt_metal / "tt-llk" / tc.llk_dir / "common" / "inc", tree.root / TTNN_CPP]
    for d in dirs:
        if not d.is_dir():
            raise _missing(f"the header tree {tree.root} lacks {d} (the LLK SFPU functions)")
    return dirs


def emulator_config() -> dict:
    """configs/emulator.toml: modelled cycles, L1/DRAM placement, NoC coordinates (read-only)."""
    return config_table("emulator.toml")


# ----------------------------------------------------------------------------------------------
# host compiler and the cached pieces

@dataclass(frozen=True)
class HostCompiler:
    cxx: str
    version: str


@cache
def find_host_compiler() -> HostCompiler | None:
    """The host C++ compiler: $KGEN_HOST_CXX, else g++ on PATH."""
    cxx = os.environ.get("KGEN_HOST_CXX") or shutil.which("g++")
    if not cxx:
        return None
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return HostCompiler(cxx, out.splitlines()[0] if out else cxx)


def require_host_compiler() -> HostCompiler:
    hc = find_host_compiler()
    if hc is None:
        raise EmulatorError("kgen emulate needs a host C++17 compiler: install g++ (Debian: apt-get install g++) "
                            "or point KGEN_HOST_CXX at one")
    return hc


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:32]


@cache
def _emu_sources_digest() -> str:
    files = sorted(p for p in EMU_DIR.rglob("*") if p.is_file() and p.suffix in (".h", ".hpp", ".cpp"))
    return _digest(*(str(p.relative_to(EMU_DIR)) + "\n" + p.read_text() for p in files))


def _atomic_install(produced: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.copyfile(produced, tmp)
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)


def _compile(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise EmulatorError(f"{what} does not compile for the host emulator:\n{proc.stderr.strip()[-4000:]}\n"
                            f"command: {' '.join(argv)}")


@cache
def _host_cpu() -> str:
    """What -march=native depends on: the CPU model and its feature flags."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return os.uname().machine
    wanted = [line for line in info.splitlines() if line.startswith(("model name", "flags"))][:2]
    return "\n".join(wanted) or os.uname().machine


def emulator_binary(hc: HostCompiler) -> Path:
    """The emulator executable (runtime + tile arithmetic), built once per source digest."""
    src = EMU_DIR / "src"
    key = _digest(hc.version, " ".join(RUNTIME_FLAGS), _host_cpu(), _emu_sources_digest())
    target = writable_dir(cache_root() / "emu" / "bin") / f"kgen-emu-{key}"
    if target.is_file():
        return target
    with scratch("kgen-emu") as tmp:
        out = Path(tmp) / "kgen-emu"
        _compile([hc.cxx, *RUNTIME_FLAGS, "-I", str(EMU_DIR / "include"), "-I", str(src),
                  *(str(src / name) for name in RUNTIME_SOURCES), "-ldl", "-o", str(out)], "the emulator runtime")
        _atomic_install(out, target)
    return target


@dataclass(frozen=True)
class KernelBuild:
    kernel: KernelInfo
    role: str
    argv: tuple[str, ...]
    key: str
    target: Path


def _kernel_source(kernel: KernelInfo, role: str) -> Path:
    if role in ROLE_SOURCES:
        return kernel.gen_dir / ROLE_SOURCES[role]
    return kernel.gen_dir / "kernel_includes.hpp"


def _folder_digest(folder: Path, kernel: KernelInfo) -> str:
    files = sorted([*(folder / "kernels").glob("*"), *kernel.gen_dir.glob("*")])
    texts = [str(p.relative_to(folder)) + "\n" + p.read_text() for p in files if p.is_file()]
    # A kernel put in kgen's place (port-check) is included by absolute path: hash its text too.
    outside = sorted({m for t in texts for m in re.findall(r'#include "(/[^"]+)"', t)})
    return _digest(*texts, *(p + "\n" + Path(p).read_text() for p in outside if Path(p).is_file()))


def emulator_arch_defines(arch: ArchFacts) -> list[str]:
    """The arch facts the host model's headers need as constants (the device headers hard-code them)."""
    return [f"-DKEMU_DRAM_ALIGNMENT={arch.dram_alignment}", f"-DKEMU_L1_ALIGNMENT={arch.l1_alignment}",
            f"-DKEMU_NOC_MAX_BURST_SIZE={arch.noc_max_burst_bytes}"]


def kernel_argv(hc: HostCompiler, arch: ArchFacts, k: KernelInfo, role: str, folder: Path) -> list[str]:
    """The host compile of one (kernel, role) against the host model, as the JIT compiles it for
    the device: its JIT folder, defines, compile-time args and warning policy. Without `-o`."""
    # Source locations the kernels record name the folder as BUILD_PREFIX, so one cached object
    # serves every copy of the same folder (port-check, tests) with the right paths.
    # A compute kernel with a fused SFPU activation also reaches TT's LLK SFPU functions: the
    # arch's folders from the header tree, after the host model's headers (which stand in for the
    # rest of the ckernel headers); a missing tree is the missing-tool error (INCOMPLETE).
    sfpu_dirs: list[Path] = []
    if role in ROLE_SOURCES and any(name == "SFPU_ACTIVATION" for name, _ in k.defines):

        sfpu_dirs = llk_sfpu_include_dirs(arch.name)
    argv = [hc.cxx, *KERNEL_FLAGS, *toolchain_config()["jit"]["warnings"],
            f"-fmacro-prefix-map={folder}={BUILD_PREFIX}", "-I", str(k.gen_dir), "-I", str(EMU_DIR / "include"),
            *(a for d in [*k.include_dirs, *sfpu_dirs] for a in ("-I", str(d))),
            *("-D" + d for d in jit_defines(arch, role, k)), *emulator_arch_defines(arch)]
    named = k.gen_dir / "named_ct_arg_map_generated.h"
    if named.is_file():
        argv += ["-include", str(named)]
    return argv + ["-x", "c++", str(_kernel_source(k, role))]


def kernel_builds(folder: Path, arch: ArchFacts, hc: HostCompiler) -> list[KernelBuild]:
    _, kernels = read_kernels(folder)
    out = []
    sodir = cache_root() / "emu" / "kernels"
    for k in kernels:
        digest = _folder_digest(folder, k)
        for role in k.roles:
            argv = kernel_argv(hc, arch, k, role, folder)
            key = _digest(hc.version, " ".join(argv).replace(str(folder), "<build>"), digest, _emu_sources_digest())
            out.append(KernelBuild(k, role, tuple(argv), key, sodir / f"{k.name}-{role}-{key}.so"))
    return out


def compile_kernels(builds: list[KernelBuild], parallel: int) -> None:
    todo = [b for b in builds if not b.target.is_file()]
    if not todo:
        return
    writable_dir(todo[0].target.parent)

    def one(b: KernelBuild) -> None:
        with scratch("kgen-emu-k") as tmp:
            out = Path(tmp) / "k.so"
            _compile([*b.argv, "-o", str(out)], f"kernel {b.kernel.name} ({b.role})")
            _atomic_install(out, b.target)

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for f in [pool.submit(one, b) for b in todo]:
            f.result()


# ----------------------------------------------------------------------------------------------
# the program: cores, CBs, semaphores, tensors, runtime args
