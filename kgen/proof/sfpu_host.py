"""TT-Metal 0.81.1's fused matmul activations, run on kgen's host SFPU model.

`run_activation` builds (once per activation, parameters and compute configuration; cached like the
emulator's kernels) a small host program around TT's own ``bmm_fused_activation.hpp``: it loads the
tiles into DST, calls the kernel's ``ActivationInitHelper<...>::init()`` and, per tile,
``ActivationApplyHelper<...>::apply(i)`` -- the calls TT's matmul kernel makes on its pack thread --
which run TT's LLK SFPU functions (``ckernel_sfpu_*.h``) unchanged on the host SFPU model
(``kgen/proof/emu/include/sfpi.h``), and returns DST.

The activation is TT's kernel ABI: ``kind`` is ttnn's ``KernelActivation`` name in lower case, ``p0``
to ``p2`` are the named compile-time args ``activation_param0..2`` exactly as TT's factory sets them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from kgen.core.errors import KgenError
from kgen.core.interrupts import scratch
from kgen.core.resources import cache_root, writable_dir
from kgen.gen.activations import KERNEL_ACTIVATIONS

# ttnn::operations::matmul::KernelActivation, in order (the activation table keeps it)
KINDS = KERNEL_ACTIVATIONS
HARNESS = Path(__file__).resolve().parent / "emu" / "harness" / "sfpu_harness.cpp"
HARNESS_FLAGS = ("-std=c++17", "-O1", "-fno-strict-aliasing")
# Where TT's fused-activation header lives in the header tree.
MATMUL_COMPUTE_KERNELS = "ttnn/cpp/ttnn/operations/matmul/device/kernels/compute"


def _descriptor(fp32_dest: bool, approx: bool) -> str:
    """The chlkc_descriptors.h of the pack build, as the JIT writes the compute config into it."""
    return ("#pragma once\n#include \"llk_defs.h\"\n"
            "constexpr ckernel::MathFidelity MATH_FIDELITY = ckernel::MathFidelity::HiFi4;\n"
            f"constexpr bool APPROX = {str(approx).lower()};\n"
            f"constexpr bool DST_ACCUM_MODE = {str(fp32_dest).lower()};\n"
            "#define DST_SYNC_MODE DstSync::SyncHalf\n"
            "constexpr unsigned char pack_dst_format[1] = {0};\n")


def _check(kind: str, arch: str, params: tuple[int, int, int]) -> int:
    if kind not in KINDS or kind == "none":
        raise KgenError(f"unknown activation {kind!r}: one of {', '.join(KINDS[1:])}")
    if arch not in ("wormhole_b0", "blackhole"):
        raise KgenError(f"arch must be wormhole_b0 or blackhole, not {arch!r}")
    if any(not 0 <= p < 2 ** 32 for p in params):
        raise KgenError(f"activation params must be uint32 bit patterns, not {params}")
    return KINDS.index(kind)


def harness_binary(kind: str, p0: int, p1: int, p2: int, *, arch: str, fp32_dest: bool, approx: bool) -> Path:
    """The harness for one activation and configuration, compiled once (kgen's cache)."""
    from kgen.proof.emu_build import (EMU_DIR, _atomic_install, _compile, _digest, _emu_sources_digest, header_tree,
                                      llk_sfpu_include_dirs, require_host_compiler)

    value = _check(kind, arch, (p0, p1, p2))
    hc = require_host_compiler()
    tree = header_tree()
    dirs = [*llk_sfpu_include_dirs(arch, tree), tree.root / MATMUL_COMPUTE_KERNELS]
    arch_define = "-DARCH_WORMHOLE" if arch == "wormhole_b0" else "-DARCH_BLACKHOLE"
    defines = [arch_define, "-DTRISC_PACK", "-DUCK_CHLKC_PACK", f"-DKEMU_ACT={value}",
               f"-DKEMU_P0={p0}u", f"-DKEMU_P1={p1}u", f"-DKEMU_P2={p2}u"]
    descriptor = _descriptor(fp32_dest, approx)
    key = _digest(hc.version, " ".join(HARNESS_FLAGS), " ".join(defines), descriptor, str(tree.root), tree.version,
                  _emu_sources_digest())
    target = writable_dir(cache_root() / "emu" / "sfpu") / f"sfpu-{kind}-{key}"
    if target.is_file():
        return target
    with scratch("kgen-sfpu") as tmp:
        gen = Path(tmp)
        (gen / "chlkc_descriptors.h").write_text(descriptor)
        out = gen / "sfpu_harness"
        _compile([hc.cxx, *HARNESS_FLAGS, *defines, "-I", str(gen), "-I", str(EMU_DIR / "include"),
                  *(a for d in dirs for a in ("-I", str(d))), str(HARNESS), "-o", str(out)],
                 f"the SFPU harness for {kind}")
        _atomic_install(out, target)
    return target


def run_activation(dst: np.ndarray, kind: str, p0: int, p1: int, p2: int, *, arch: str, fp32_dest: bool,
                   approx: bool) -> np.ndarray:
    """DST after TT's fused activation `kind` (its LLK SFPU code on the host SFPU model).

    `dst`: float32, shape (..., 32, 32) of whole tiles, each tile's 1024 values in the emulator's
    DST order (face-major); with ``fp32_dest`` off DST holds BF16 (the high half of each value).
    Returns a new float32 array of the same shape."""
    src = np.ascontiguousarray(dst, dtype=np.float32)
    if src.ndim < 2 or src.shape[-2:] != (32, 32):
        raise KgenError(f"dst must be whole 32x32 tiles, not shape {src.shape}")
    binary = harness_binary(kind, p0, p1, p2, arch=arch, fp32_dest=fp32_dest, approx=approx)
    tiles = src.size // 1024
    with scratch("kgen-sfpu-run") as tmp:
        inp, out = Path(tmp) / "in.bin", Path(tmp) / "out.bin"
        inp.write_bytes(src.astype("<f4").tobytes())
        proc = subprocess.run([str(binary), str(inp), str(out), str(tiles), "1" if fp32_dest else "0"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            from kgen.proof.emu_build import EmulatorCrash

            raise EmulatorCrash(f"the SFPU harness for {kind} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        result = np.frombuffer(out.read_bytes(), dtype="<f4").astype(np.float32)
    return result.reshape(src.shape)
