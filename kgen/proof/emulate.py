"""Emulate a build folder on the host: the rendered C++ kernels, every core, bit-level numerics.

How it works:

* **Host model of the kernel API** (``kgen/proof/emu/include``): headers with TT-Metal 0.81.1's include
  names (``api/compute/matmul.h``, ``api/dataflow/dataflow_api.h``, ...). Each kernel is compiled
  unchanged with the host ``g++``, once per processor role exactly as the JIT splits it: a compute
  kernel three times through its ``jit/<kernel>/chlkc_{unpack,math,pack}.cpp`` (``UNPACK/MATH/PACK``
  keep only that thread's code), a data-movement kernel through ``kernel_includes.hpp``, with the
  JIT's defines and compile-time args. Each becomes a shared object exporting ``kernel_main``.
* **The machine** (``kgen/proof/emu/src/runtime_*.cpp``): L1 of every core as bytes, DRAM banks holding the
  tensors interleaved by pages, CBs as FIFOs over L1 with TT-Metal's shared counters and each
  processor's local pointers (two CB indices may share one region), semaphores in L1, the NoC
  (unicast, multicast, semaphore increments), DST with its math/pack sections, and the unpacker ->
  math source registers. The tile arithmetic (``tensix_math.cpp``) is bit-exact to the NumPy
  golden model (:mod:`kgen.proof.golden`), a separate implementation: the two agreeing is the check.
* **Scheduling**: one coroutine per core x processor in one OS thread; a processor runs until an
  API call must wait, then the scheduler picks another whose wait is satisfied. This is
  deterministic, reproducible by seed, lock-free, and makes deadlock exact (nobody can run). The
  default schedule runs processors in modelled-time order; ``--schedules N`` adds N seeded random
  interleavings, which must all give the same output bits.

This module prepares the program (CB and semaphore addresses, tensors in DRAM, runtime args),
has :mod:`kgen.proof.emu_build` compile and cache the pieces, runs the emulator executable, and compares the output with the
golden model and with numpy float64.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kgen.proof import tiles as tl
# the values `kgen emulate` reports (re-exported: importers read them here)
from kgen.proof.emulate_report import Emulation, ErrorStats, emulated_op_totals, format_report  # noqa: F401
from kgen.proof.numerics import error_figures
from kgen.proof.oracle import Float64Check
from kgen.core.arch import ArchFacts, load_arch
from kgen.core.costs import load_costs
from kgen.core.errors import KgenError
from kgen.core.interrupts import scratch
from kgen.core.manifest import cores_of, load_manifest
from kgen.core.types import DATA_FORMAT_VALUE, TILE_HW
from kgen.proof.emu_build import (  # noqa: F401 (importers read find_host_compiler and kernel_argv here)
    BUILD_PREFIX, EmulatorCrash, EmulatorError, KernelBuild, compile_kernels, emulator_binary, emulator_config,
    find_host_compiler, kernel_argv, kernel_builds, modelled_cycles, require_host_compiler)

# Fast numerics sum in float32 in another order than the fast golden model; the output may differ
# by a rounding step of its format. Tolerance relative to the largest output magnitude.
FAST_TOLERANCE = {"Float32": 2.0 ** -9, "Float16_b": 2.0 ** -6, "Bfp8_b": 2.0 ** -4, "Bfp4_b": 2.0 ** -1}


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    data_format: str
    layout: str
    page_size: int
    num_pages: int
    address: int = 0


@dataclass(frozen=True)
class Inputs:
    in0: np.ndarray                  # (batch*M, K) float32, quantised to its format
    in1: np.ndarray                  # (K, N), or (batch, K, N) when in1 is not broadcast
    bias: np.ndarray | None          # (N,)
    # Shapes that are not tile multiples: the arrays above are ttnn's padded tensors (zeros past the
    # logical shape, as tilize pads), and these say which output elements are real: (batch, M, N).
    logical: tuple[int, int, int] | None = None
    # (in0, in1) stored transposed (transpose_a / transpose_b): in0 and in1 above are the matrices the matmul
    # multiplies (A, B); the device tensors hold their transposes (encoded so)
    transposed: tuple[bool, bool] = (False, False)
    # each tensor's tile images, once per Inputs (every shard and every program of a port-check reads them)
    encoded: dict[tuple[str, str], bytes] = field(default_factory=dict, init=False, compare=False, repr=False)

    def logical_bias(self) -> np.ndarray:
        """The real (N,) part of the padded bias row."""
        return self.bias if self.logical is None else self.bias[: self.logical[2]]

    def logical_output(self, values: np.ndarray) -> np.ndarray:
        """The real (batch*M, N) part of a padded (batch*Mp, Np) output: the output sliced back."""
        if self.logical is None:
            return values
        batch, m, n = self.logical
        mp = values.shape[0] // batch
        return values.reshape(batch, mp, -1)[:, :m, :n].reshape(batch * m, n)


def round_up(v: int, a: int) -> int:
    return (v + a - 1) // a * a


def tensors_of(manifest: dict) -> list[Tensor]:
    out = []
    for t in manifest["io_tensors"]:
        shape = tuple(t.get("padded_shape", t["shape"]))     # the device tensor: padded to whole tiles
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        fmt = t["data_format"]
        if t["layout"] == "TILE":
            rows = round_up(rows, TILE_HW)
            pages = rows // TILE_HW * (cols // TILE_HW)
        else:
            pages = rows
        out.append(Tensor(t["name"], shape, fmt, t["layout"], int(t["page_size"]), pages))
    return out


def make_inputs(manifest: dict, seed: int) -> Inputs:
    """Seeded random inputs, quantised to the tensors' formats (standard normal values)."""
    rng = np.random.default_rng(seed)
    by_name = {t.name: t for t in tensors_of(manifest)}
    a, b = by_name["in0"], by_name["in1"]
    raw0 = rng.standard_normal((int(np.prod(a.shape[:-1])), a.shape[-1]), dtype=np.float32)
    raw1 = rng.standard_normal(b.shape, dtype=np.float32)
    if raw1.ndim > 3:       # a rank-4/5 in1 [B1, B2, (B3,) K, N]: ttnn's batch is their product, in order
        raw1 = raw1.reshape(-1, *raw1.shape[-2:])
    raw_bias = rng.standard_normal((1, by_name["bias"].shape[-1]), dtype=np.float32) if "bias" in by_name else None
    logical = {t["name"]: t["shape"] for t in manifest["io_tensors"]}
    flags = tuple(bool(next(t for t in manifest["io_tensors"] if t["name"] == n).get("transposed"))
                  for n in ("in0", "in1"))
    dims = None
    if any("padded_shape" in t for t in manifest["io_tensors"]):
        # zeros past the logical shape, as ttnn's tilize pads (so a padded K adds nothing), before
        # quantising, so the padding plays no part in a block float's shared exponent. Rows and columns
        # as stored: a transposed tensor's are the matmul's columns and rows.
        *lead, r0, c0 = logical["in0"]       # leading dims of a rank-4/5 in0 fold into one batch
        r1, c1 = logical["in1"][-2:]
        batch = int(np.prod(lead))
        padded0 = raw0.reshape(batch, -1, a.shape[-1])
        padded0[:, r0:, :] = 0.0
        padded0[:, :, c0:] = 0.0
        raw1[..., r1:, :] = 0.0
        raw1[..., c1:] = 0.0
        m, n = (c0 if flags[0] else r0), (r1 if flags[1] else c1)
        if raw_bias is not None:
            raw_bias[:, n:] = 0.0
        dims = (batch, m, n)
    in0 = np.asarray(tl.quantize(raw0, a.data_format), np.float32)     # quantised as stored
    in1 = np.asarray(tl.quantize(raw1, b.data_format), np.float32)
    if flags[0]:                             # A of each batch, (B*M, K), from its stored (B*K, M)
        kp, mp = a.shape[-2:]
        in0 = np.ascontiguousarray(in0.reshape(-1, kp, mp).swapaxes(-1, -2).reshape(-1, kp))
    if flags[1]:
        in1 = np.ascontiguousarray(np.swapaxes(in1, -1, -2))
    bias = None if raw_bias is None else tl.quantize(raw_bias, by_name["bias"].data_format)[0]
    return Inputs(in0, in1, None if bias is None else np.asarray(bias, np.float32), dims, flags)


def _tensor_bytes(t: Tensor, inputs: Inputs) -> bytes:
    key = (t.name, t.data_format)
    if key not in inputs.encoded:
        inputs.encoded[key] = _encode_tensor(t, inputs)
    return inputs.encoded[key]


def _encode_tensor(t: Tensor, inputs: Inputs) -> bytes:
    if t.name == "in0":
        kp, mp = t.shape[-2:]                # stored K x M per batch when transposed
        m = inputs.in0.reshape(-1, mp, kp).swapaxes(-1, -2).reshape(-1, mp) if inputs.transposed[0] else inputs.in0
    elif t.name == "in1":
        b = np.swapaxes(inputs.in1, -1, -2) if inputs.transposed[1] else inputs.in1
        m = b.reshape(-1, b.shape[-1])     # one in1 per batch: batch b's tiles from b*Kt*Nt
    elif t.name == "bias":
        m = np.zeros((TILE_HW, inputs.bias.shape[0]), np.float32)   # [1, N] padded to a tile row
        m[0] = inputs.bias
    else:
        raise ValueError(t.name)
    return tl.encode_matrix(m, t.data_format).tobytes()


@dataclass(frozen=True)
class ProgramFile:
    """The emulator's input: the machine, cores, CBs, semaphores, tensors and kernels as text (not
    kgen's IR `ir.Program`)."""

    text: str
    tensors: tuple[Tensor, ...]
    output: Tensor
    # an L1-sharded output: (file of one core's shard, first tile row, first tile column, rows, columns
    # inside the tensor, the shard's width in tiles: its row stride, padding included)
    out_shards: tuple[tuple[Path, int, int, int, int, int], ...] = ()


def shard_placement(spec: dict, rows: int, cols: int) -> list[tuple[tuple[int, int], int, int, int, int]]:
    """ttnn's placement of a 2D-sharded tensor of `rows` x `cols` tiles: shard i (in row-major order over
    the tensor's grid of shards) on the i-th core of the shard grid, in ROW_MAJOR or COL_MAJOR order.
    Returns (core, first tile row, first tile column, tile rows, tile columns) per shard; a last shard
    past the tensor's edge (ttnn pads it to the shard shape) reports the rows and columns inside it."""
    x0, y0, x1, y1 = spec["grid"]
    gx, gy = x1 - x0 + 1, y1 - y0 + 1
    sh, sw = spec["shape"][0] // TILE_HW, spec["shape"][1] // TILE_HW
    per_row = -(-cols // sw)
    out = []
    for i in range(-(-rows // sh) * per_row):
        core = (x0 + i % gx, y0 + i // gx) if spec["orientation"] == "ROW_MAJOR" else (x0 + i // gy, y0 + i % gy)
        r0, c0 = (i // per_row) * sh, (i % per_row) * sw
        out.append((core, r0, c0, min(sh, rows - r0), min(sw, cols - c0)))
    return out


def _shard_bytes(data: bytes, page: int, cols: int, spec: dict, r0: int, c0: int, rows: int, ncols: int) -> bytes:
    """One shard as ttnn lays it in its bank or core: the shard shape's tile rows back to back, each
    shard-width pages long; the pages of a last shard past the tensor's edge are padding (zeros here,
    whatever the buffer held on a card: the kernels compute on them, and they lie outside the tensor)."""
    sh, sw = spec["shape"][0] // TILE_HW, spec["shape"][1] // TILE_HW
    pad = bytes((sw - ncols) * page)
    body = b"".join(_pages(data, page, cols, r0 + r, c0, 1, ncols) + pad for r in range(rows))
    return body + bytes((sh - rows) * sw * page)


def _shard_pages(spec: dict) -> int:
    return (spec["shape"][0] // TILE_HW) * (spec["shape"][1] // TILE_HW)


def _dram_shard_lines(t, shard_specs: dict, inputs, workdir: Path, core_id: dict, cols: int,
                      rows: int) -> list[str]:
    """A tensor width-sharded over the DRAM banks (the DRAM-sharded factory's in1): shard i, its tile
    rows back to back, at the tensor's address in bank i; and the worker each bank pairs with, the
    output's shard i (worker i reads bank i), for the cost of a bank-local read."""
    lines = []
    spec = shard_specs[t.name]
    data = _tensor_bytes(t, inputs)
    for i, (_, r0, c0, nr, nc) in enumerate(shard_placement(spec, rows, cols)):
        path = workdir / f"{t.name}_bank{i}.bin"
        path.write_bytes(_shard_bytes(data, t.page_size, cols, spec, r0, c0, nr, nc))
        lines.append(f"dram_shard_input {i} {t.address} {_shard_pages(spec) * t.page_size} {path}")
    out = shard_specs.get("out")
    if out is not None:
        x0, y0, x1, _ = out["grid"]
        for i in range(spec["grid"][2] - spec["grid"][0] + 1):
            lines.append(f"bank_worker {i} {core_id[(x0 + i % (x1 - x0 + 1), y0 + i // (x1 - x0 + 1))]}")
    return lines


def _pages(data: bytes, page: int, cols: int, r0: int, c0: int, rows: int, ncols: int) -> bytes:
    """The tiles (r0.., c0..) of a row-major tile-paged tensor of `cols` tiles per row, in order."""
    return b"".join(data[((r0 + r) * cols + c0) * page:((r0 + r) * cols + c0 + ncols) * page] for r in range(rows))


def _resolve_arg(v: Any, addresses: dict[str, int], noc: dict, l1_shards: dict[str, int] | None = None) -> int | str:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    (kind, arg), = v.items()
    if kind == "noc_x":
        return int(arg) + noc["worker_x_offset"]
    if kind == "noc_y":
        return int(arg) + noc["worker_y_offset"]
    if kind == "buffer_address":
        return addresses[arg]
    if kind == "l1_shard_address" and l1_shards and arg in l1_shards:
        return f"L{l1_shards[arg]}"      # a sharded tensor's L1 offset, the same on every core: the runtime adds the core's L1
    raise ValueError(f"unknown runtime arg lookup {v!r}")


def _l1_lines(manifest: dict, arch: ArchFacts, core_id: dict, layout: dict) -> tuple[list[str], dict[str, int]]:
    """The program's CB and semaphore lines, and the L1 address of each sharded tensor's CB."""
    lines: list[str] = []
    # CBs: regions in manifest order from the unreserved base, the same address on every core. A CB
    # globally allocated on a sharded tensor's buffer is where that tensor's shards live.
    align = max(arch.l1_alignment, arch.dram_alignment)
    address = arch.l1_unreserved_base
    shard_address: dict[str, int] = {}
    for cb in manifest["cbs"]:
        if cb.get("globally_allocated"):
            shard_address[cb["globally_allocated"]] = address
        for c in cores_of(cb["core_ranges"]):
            for fd in cb["format_descriptors"]:
                pages = cb["total_size"] // fd["page_size"]
                lines.append(f"cb {core_id[c]} {fd['buffer_index']} {DATA_FORMAT_VALUE[fd['data_format']]} "
                             f"{fd['page_size']} {pages} {address}")
        address = round_up(address + cb["total_size"], align)
    if address > arch.l1_bytes:
        raise EmulatorError(f"the CBs need {address - arch.l1_unreserved_base} bytes of L1; "
                            f"{arch.usable_cb_bytes} are usable")
    sem_base = arch.l1_unreserved_base - layout["semaphore_bytes"] * layout["max_semaphores"]
    for s in manifest["semaphores"]:
        for c in cores_of(s["core_ranges"]):
            if c in core_id:
                lines.append(f"sem {core_id[c]} {s['id']} {sem_base + layout['semaphore_bytes'] * s['id']} "
                             f"{s['initial_value']}")
    return lines, shard_address


def _kernel_lines(manifest: dict, builds: list[KernelBuild], core_id: dict, addresses: dict[str, int],
                  noc: dict, l1_shards: dict[str, int]) -> list[str]:
    """The program's kernel lines and what runs where, with each core's runtime args resolved."""
    lines: list[str] = []
    kid = {}
    for i, b in enumerate(builds):
        kid[(b.kernel.name, b.role)] = i
        lines.append(f"kernel {i} {b.kernel.name} {b.role} {b.target}")
    for k in manifest["kernels"]:
        common = [_resolve_arg(v, addresses, noc, l1_shards) for v in k["common_runtime_args"]]
        per_core = {tuple(r["core"]): [_resolve_arg(v, addresses, noc, l1_shards) for v in r["args"]]
                    for r in k["runtime_args"]}
        roles = ("unpack", "math", "pack") if k["processor"] == "TRISC" else (
            ("brisc",) if k["processor"] == "RISCV_0" else ("ncrisc",))
        for c in cores_of(k["core_ranges"]):
            args = per_core.get(c, [])
            for role in roles:
                lines.append(f"run {core_id[c]} {kid[(k['name'], role)]} {len(args)} {' '.join(map(str, args))} "
                             f"{len(common)} {' '.join(map(str, common))}")
    return lines


def _cycle_table(manifest: dict, arch: ArchFacts, core_id: dict, plan) -> dict[str, float]:
    """The cost table of this program, with the card's DRAM shared as kgen perf shares it: where the
    output is interleaved in DRAM, every compute core writes its out blocks at the same time as the
    others; the kernels that read interleaved DRAM tensors (the plan's, lowered: TT's kernels for it read
    the same blocks) share it max-min fair, each processor's rate under `...core<id>.<processor>`."""
    table = modelled_cycles(arch)
    costs = load_costs(arch.name)
    out = next((t for t in manifest["io_tensors"] if t["name"] == "out"), None)
    from kgen.gen.lower import lower

    program = lower(plan)
    if out is not None and "memory" not in out:
        # the card's share and the NoC links into the DRAM columns, and the barrier's wait beyond the
        # shared writes, as kgen perf prices the output writer (kgen.proof.write_share)
        from kgen.proof.write_share import write_terms

        table["dram_write_bytes_per_cycle"], table["dram_write_latency"] = write_terms(program, costs)
    # the readers share the card's bandwidth and its endpoints' request rate (kgen.proof.read_share)
    from kgen.proof.read_share import read_rates

    rates = read_rates(program, costs)
    for k in program.kernels:
        rate = rates.get(k.name)
        if rate is None:
            continue
        for c in k.cores.cores():
            if c in core_id:
                table[f"dram_read_bytes_per_cycle.core{core_id[c]}.{k.processor.lower()}"] = rate
    return table


def _program_cores(manifest: dict) -> set[tuple[int, int]]:
    """The worker cores the program reaches: those its kernels run on and the rest of their bounding box,
    which a multicast to it lands on (TT-Metal's 1D factory multicasts to the bounding box of a run of
    cores whose last row may be partial; its cores without work run nothing and only receive)."""
    cores = {c for k in manifest["kernels"] for c in cores_of(k["core_ranges"])}
    if not cores:
        return cores
    x0, x1 = min(x for x, _ in cores), max(x for x, _ in cores)
    y0, y1 = min(y for _, y in cores), max(y for _, y in cores)
    return cores | {(x, y) for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)}


def _past_the_end(plan, banks: int, tensors: list, arch: ArchFacts) -> int:
    """Bytes of each bank past the last tensor that a reader may reach: TT-Metal's _padding readers read a
    last core's whole out blocks past the tensor (tt_mcast.padded_block_reads), up to the pages of the
    padded rows (in0) or columns (in1, the bias) past its end. On silicon that is other DRAM; here it is
    zeros, never another tensor's pages the program writes (nothing written is read)."""
    if plan is None or not tensors:
        return 0
    rows = plan.m_blocks * plan.per_core_m - plan.mt
    cols = plan.n_blocks * plan.per_core_n - plan.nt
    pages = max(rows * plan.kt * plan.batch_ct, cols)
    page = max(round_up(t.page_size, arch.dram_alignment) for t in tensors)
    return round_up((-(-pages // banks) + 1) * page, 64) if pages > 0 else 0


def build_program(manifest: dict, arch: ArchFacts, builds: list[KernelBuild], *, numerics: str, workdir: Path,
                  inputs: Inputs, plan) -> ProgramFile:
    """The program file (all but the schedule and trace lines, which run_program adds per run);
    writes the input tensors into `workdir`. The math configuration (fidelity, fp32 Dst, sync mode)
    is not in it: each core takes it from its compiled compute kernel (chlkc_descriptors.h, as
    hw_startup configures the hardware), its one source."""
    cfg = emulator_config()
    noc = cfg["noc"]
    layout = cfg["layout"]
    cores = sorted(_program_cores(manifest), key=lambda c: (c[1], c[0]))
    core_id = {c: i for i, c in enumerate(cores)}
    lines = ["kgen-emu 1",
             f"arch {arch.name} {int(arch.behaviour.fpu_renormalisation_quirk)}",
             f"l1 {arch.l1_bytes}",
             f"numerics {numerics}",
             f"dst_tiles {arch.dst_tiles(True, False)}",
             f"clock_mhz {arch.clock_mhz}",
             "cycles " + " ".join(f"{k} {v!r}" for k, v in _cycle_table(manifest, arch, core_id, plan).items())]
    for (x, y), i in core_id.items():
        lines.append(f"core {i} {x} {y} {x + noc['worker_x_offset']} {y + noc['worker_y_offset']}")
    l1_lines, shard_address = _l1_lines(manifest, arch, core_id, layout)
    lines += l1_lines
    # DRAM: every tensor at one base address in all banks (a DRAM-sharded one: its shard i in bank i).
    banks = arch.toolchain.num_dram_banks
    addr = layout["dram_first_address"]
    tensors = []
    shard_specs = {t["name"]: t["memory"]["shard_spec"] for t in manifest["io_tensors"]
                   if "shard_spec" in t.get("memory", {})}
    in_dram_shards = {t["name"] for t in manifest["io_tensors"] if t.get("memory", {}).get("buffer_type") == "DRAM"}
    for t in tensors_of(manifest):
        tensors.append(Tensor(t.name, t.shape, t.data_format, t.layout, t.page_size, t.num_pages, addr))
        per_bank = (_shard_pages(shard_specs[t.name]) if t.name in in_dram_shards else -(-t.num_pages // banks))
        addr = round_up(addr + per_bank * round_up(t.page_size, arch.dram_alignment), 64)
    lines.append(f"dram {banks} {addr + _past_the_end(plan, banks, tensors, arch)} {arch.dram_alignment}")
    addresses = {t.name: t.address for t in tensors}
    output = next(t for t in tensors if t.name == "out")
    in_l1 = {t["name"] for t in manifest["io_tensors"] if t.get("memory", {}).get("memory_layout") == "INTERLEAVED"}
    out_shards = []
    for t in tensors:
        cols = t.shape[-1] // TILE_HW
        rows = t.num_pages // max(cols, 1)
        if t.name in in_dram_shards:
            lines += _dram_shard_lines(t, shard_specs, inputs, workdir, core_id, cols, rows)
        elif t.name in shard_specs:
            # sharded in L1: no DRAM copy; each core's shard at its CB's address
            spec = shard_specs[t.name]
            size = _shard_pages(spec) * t.page_size
            for core, r0, c0, nr, nc in shard_placement(spec, rows, cols):
                path = workdir / f"{t.name}_{core[0]}_{core[1]}.bin"
                if t.name == "out":
                    lines.append(f"l1_output {core_id[core]} {shard_address['out']} {size} {path}")
                    out_shards.append((path, r0, c0, nr, nc, spec["shape"][1] // TILE_HW))
                else:
                    path.write_bytes(_shard_bytes(_tensor_bytes(t, inputs), t.page_size, cols, spec, r0, c0, nr, nc))
                    lines.append(f"l1_input {core_id[core]} {shard_address[t.name]} {size} {path}")
        elif t.name == "out":
            kind = "l1_interleaved_output" if t.name in in_l1 else "output"  # over the L1 banks or DRAM's
            lines.append(f"{kind} out {t.address} {t.page_size} {t.num_pages} {workdir / 'out.bin'}")
        else:
            path = workdir / f"{t.name}.bin"
            path.write_bytes(_tensor_bytes(t, inputs))
            kind = "l1_interleaved_input" if t.name in in_l1 else "input"    # interleaved over L1 banks or DRAM's
            lines.append(f"{kind} {t.address} {t.page_size} {t.num_pages} {path}")
    lines += _kernel_lines(manifest, builds, core_id, addresses, noc, shard_address)
    return ProgramFile("\n".join(lines) + "\n", tuple(tensors), output, tuple(out_shards))


# ----------------------------------------------------------------------------------------------
# running and comparing

@dataclass(frozen=True)
class RunResult:
    status: str                      # ok | deadlock | stopped
    seconds: float
    out_bytes: bytes
    raw: dict


def run_program(binary: Path, program: ProgramFile, workdir: Path, *, schedule: str = "time", schedule_seed: int = 0,
                trace: Path | None = None) -> RunResult:
    prog = workdir / "program.txt"
    prog.write_text(program.text + f"schedule {schedule} {schedule_seed}\n" + (f"trace {trace}\n" if trace else ""))
    result = workdir / "result.json"
    proc = subprocess.run([str(binary), str(prog), str(result)], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not result.is_file():
        raise EmulatorCrash(f"the emulated program failed (exit {proc.returncode}): {proc.stderr.strip()[-3000:]}")
    raw = json.loads(result.read_text())
    if program.out_shards:      # gather the output's shards back into one tensor, tile rows in order
        t = program.output
        cols = t.shape[-1] // TILE_HW
        pages: dict[int, bytes] = {}
        for path, r0, c0, nr, nc, stride in program.out_shards:
            data = path.read_bytes()
            for r in range(nr):          # the columns inside the tensor; a padded last shard's rest is dropped
                for c in range(nc):
                    at = (r * stride + c) * t.page_size
                    pages[(r0 + r) * cols + c0 + c] = data[at:at + t.page_size]
        (workdir / "out.bin").write_bytes(b"".join(pages[i] for i in range(t.num_pages)))
    out = (workdir / "out.bin").read_bytes()
    return RunResult(raw["status"], float(raw["seconds"]), out, raw)


def decode_output(t: Tensor, data: bytes) -> np.ndarray:
    """Output bytes -> (batch*M, N) float32 values."""
    rows = int(np.prod(t.shape[:-1]))
    cols = t.shape[-1]
    buf = np.frombuffer(data, dtype=np.uint8)
    if t.layout == "TILE":
        return tl.decode_matrix(buf, t.data_format, round_up(rows, 32), cols)[:rows]
    if t.data_format == "Float32":
        return buf.view("<f4").reshape(rows, cols).astype(np.float32)
    return tl.bf16_values(buf.view("<u2")).reshape(rows, cols)


def golden_bytes(plan, inputs: Inputs, out: Tensor, mode: str) -> bytes:
    """The output tensor's bytes as the golden model predicts them."""
    from kgen.proof.golden import golden_from_plan

    g = golden_from_plan(plan, inputs.in0, inputs.in1, inputs.bias, mode=mode)
    if out.layout == "TILE":
        return np.ascontiguousarray(g.tile_bytes()).tobytes()
    if g.format == "Float32":
        return np.ascontiguousarray(g.bits.astype("<u4")).tobytes()
    return np.ascontiguousarray(g.bits.astype("<u2")).tobytes()


def reference_product(inputs: Inputs) -> np.ndarray:
    """in0 x in1 in float64 as (batch*M, N): np.matmul over the batch when in1 holds one matrix per batch."""
    a, b = inputs.in0.astype(np.float64), inputs.in1.astype(np.float64)
    if b.ndim == 3:
        return np.matmul(a.reshape(b.shape[0], -1, a.shape[-1]), b).reshape(-1, b.shape[-1])
    return a @ b


def error_stats(values: np.ndarray, inputs: Inputs, activation: str, product: np.ndarray | None = None) -> ErrorStats:
    """Error of the output against numpy float64 of the same (quantised) inputs, then the spec's
    `fuse.activation` text (the packer's ReLU or an SFPU activation) as the float64 oracle defines
    it. max_rel_err is taken as numerics.error_figures takes it (relative error near zero is noise).
    `product`: reference_product(inputs), when the caller has it."""
    from kgen.proof.oracle import fused

    ref = reference_product(inputs) if product is None else product
    if inputs.bias is not None:
        ref = ref + inputs.bias.astype(np.float64)[None, :]
    rows, cols = np.indices(ref.shape)          # the padded output: whole tiles per batch
    ref = fused(activation)(ref, rows % TILE_HW, cols % TILE_HW)
    # the padding is no output: compare the logical part only (the output sliced back)
    ref, values = inputs.logical_output(ref), inputs.logical_output(values)
    return ErrorStats(*error_figures(values, ref))


def float64_check(values: np.ndarray, inputs: Inputs, plan, numerics: str, golden_values: np.ndarray,
                  product: np.ndarray, *, slack: float = 0.0) -> Float64Check:
    """The output against float64 of the math (kgen.proof.oracle), for values decoded from the
    output; `golden_values` the golden model's output of the same plan (reused as the plain
    matmul's when nothing is fused); `product` reference_product(inputs)."""
    from kgen.proof.golden import golden_from_plan
    from kgen.proof.oracle import Datapath, check

    n = Datapath.of_plan(plan)
    plain = golden_values
    if n.fused_bias or n.activation != "none":
        plain = golden_from_plan(plan, inputs.in0, inputs.in1, mode=numerics, plain=True).values
    return check(inputs.logical_output(values), inputs.logical_output(product), inputs.logical_output(plain),
                 None if inputs.bias is None else inputs.logical_bias(), n, golden_slack=slack)


def _source_path(path: str, folder: Path) -> str:
    """A kernel source path as the compiler saw it (kgen-build/jit/<k>/../../kernels/x.cpp) ->
    kernels/x.cpp; a source outside the folder (a TT-Metal kernel) keeps its absolute path."""
    norm = os.path.normpath(path)
    if norm.startswith(BUILD_PREFIX + os.sep):
        return norm[len(BUILD_PREFIX) + 1:]
    try:
        return str(Path(norm).relative_to(folder))
    except ValueError:
        return norm


def _shorten_paths(text: str, folder: Path) -> str:
    return re.sub(r"((?:/|%s/)[^\s:]+\.(?:cpp|hpp|h)):" % BUILD_PREFIX,
                  lambda m: _source_path(m.group(1), folder) + ":", text)


def available_host_memory() -> int | None:
    """Bytes the kernel says a new allocation can get (MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def host_memory_need(plan) -> int:
    """A lower bound on the host memory one emulation needs, in bytes: the inputs as float32 with
    their quantisation and tile-encoding copies (~20 B per input element), the output as tiles,
    decoded, golden and float64 error terms (~44 B per output element), and every core's L1."""
    tiles = 32 * 32
    batches = plan.batch_ct                  # 1 with the batch fused into mt; B when in1 is one per batch
    a = batches * plan.mt * plan.kt * tiles
    b = batches * plan.kt * plan.nt * tiles
    c = batches * plan.mt * plan.nt * tiles
    return (a + b) * 20 + c * 44 + plan.num_cores * plan.arch.l1_bytes


# CPU seconds of one `kgen emulate` or `kgen port-check` run, measured on a 2-core x86 machine with the
# kernels' host builds cached: per input/output element (making the inputs, encoding them as tiles
# and DRAM lines, the golden model's quantisation) and per multiply-add of the golden model, once per
# run (port-check's three programs share one golden model and one set of inputs), and per multiply-add
# of each emulated program. Solved from examples/wh_decode_dram_sharded_11008 (45.6 M elements,
# 1.44 G MACs: 27.6 s, 2.6 s of it emulating) and wh_fp32_hifi4 (5.2 M, 2.1 G: 36.7 s, 8.8 s
# emulating); port-check of the 11008 example took 36 s.
# --numerics fast (float32 arithmetic): examples/peak_bf16_sharded (37.5 M elements, 63.8 G MACs)
# emulated in 24.5 s, 12.9 s of it emulating; its port-check took 73 s.
SECONDS_PER_ELEMENT = 0.14e-6
SECONDS_PER_MAC = {"exact": 13e-9, "fast": 0.1e-9}              # the golden model
EMULATED_SECONDS_PER_MAC = {"exact": 4e-9, "fast": 0.3e-9}      # each emulated program
LONG_RUN_SECONDS = 20                    # from here on, a command says up front how long it will take


def expected_seconds(plan, programs: int = 1, numerics: str = "exact") -> float:
    """Roughly the CPU time of emulating `programs` programs of the plan on one set of inputs (with
    one golden model), from the plan's size: the elements of the inputs and the output, and the
    multiply-adds."""
    tiles = 32 * 32
    batches = plan.batch_ct
    elements = batches * (plan.mt * plan.kt + plan.kt * plan.nt + plan.mt * plan.nt) * tiles
    macs = batches * plan.mt * plan.nt * plan.kt * tiles * 32
    return elements * SECONDS_PER_ELEMENT + macs * (SECONDS_PER_MAC[numerics] + programs * EMULATED_SECONDS_PER_MAC[numerics])


def duration_notice(plan, command: str, programs: int = 1, numerics: str = "exact") -> str | None:
    """What `kgen emulate` / `kgen port-check` says on stderr before a run that takes a while: how long,
    roughly, and why (None for a quick one), wrapped at the terminal's width ($COLUMNS, at most 100)."""
    import shutil
    import textwrap

    seconds = expected_seconds(plan, programs, numerics)
    if seconds < LONG_RUN_SECONDS:
        return None
    if seconds < 45:
        about = f"about {round(seconds, -1):.0f} seconds"
    elif seconds < 90:
        about = "about a minute"
    else:
        about = f"about {round(seconds / 60):.0f} minutes"
    m, n, k = plan.batch_ct * plan.mt * 32, plan.nt * 32, plan.kt * 32
    what = f"{programs} programs emulated" if programs > 1 else "the emulation"
    text = (f"{command}: expect {about} of CPU time, longer on a busy machine: {what} and a golden model "
            f"over {'batch * ' if plan.spec.batch > 1 else ''}M x N x K = {m} x {n} x {k}, "
            f"{m * n * k / 1e9:.1f} G multiply-adds")
    width = max(40, min(100, shutil.get_terminal_size().columns))
    return textwrap.fill(text, width, subsequent_indent="  ", break_on_hyphens=False)


def check_host_memory(plan) -> None:
    """Refuse, before anything is allocated, an emulation this machine cannot hold."""
    need, have = host_memory_need(plan), available_host_memory()
    if have is not None and need > have:
        gib = 1 << 30
        raise KgenError(f"emulating {plan.spec.name} ({plan.batch_ct * plan.mt * 32} x {plan.nt * 32} x {plan.kt * 32}, "
                        f"batch * M x N x K) "
                        f"needs at least {need / gib:.1f} GiB of host memory (inputs, output, golden model and "
                        f"{plan.num_cores} cores' L1), but {have / gib:.1f} GiB are available; emulate the same "
                        f"blocking on fewer rows or columns (K sets the accumulation path), or use a larger machine")


def emulate_folder(folder: Path, plan, *, seed: int = 0, numerics: str = "exact", schedules: int = 0,
                   trace: Path | None = None, parallel: int = 2, inputs: Inputs | None = None,
                   progress: Callable[[str], None] = lambda phase: None,
                   program_hook: Callable[[ProgramFile], ProgramFile] | None = None,
                   golden: bytes | None = None) -> Emulation:
    """Run the build folder's kernels on every core and compare with the golden model.

    ``schedules``: extra seeded random interleavings after the default (time-ordered) run; their
    output must be bit-identical to it. ``golden``: the golden model's output bytes for these inputs,
    when the caller already has them (the same plan and inputs emulated before)."""

    if numerics not in ("exact", "fast"):
        raise KgenError(f"--numerics must be exact or fast, not {numerics!r}")
    check_host_memory(plan)
    start = time.perf_counter()
    folder, manifest = load_manifest(folder)
    arch = load_arch(manifest["arch"])
    hc = require_host_compiler()
    binary = emulator_binary(hc)
    builds = kernel_builds(folder, arch, hc)
    progress("compiling the kernels for the host")
    compile_kernels(builds, parallel)
    progress("generating the inputs")
    inputs = inputs or make_inputs(manifest, seed)
    runs: list[RunResult] = []
    with scratch("kgen-emulate") as tmp:
        work = Path(tmp)
        program = build_program(manifest, arch, builds, numerics=numerics, workdir=work, inputs=inputs, plan=plan)
        if program_hook is not None:        # an export target's L1 layout and NoC coordinates (kgen.proof.bhpy)
            program = program_hook(program)
        for i in range(schedules + 1):
            progress(f"running {plan.num_cores} core(s)" + (f", schedule {i + 1} of {schedules + 1}" if schedules else ""))
            runs.append(run_program(binary, program, work, schedule="time" if i == 0 else "random",
                                    schedule_seed=seed * 1000 + i, trace=trace if i == 0 else None))
            if runs[-1].status != "ok" or runs[-1].raw["hazards"]:
                break
    first = runs[0]
    out = program.output
    identical = all(r.out_bytes == first.out_bytes and r.status == first.status for r in runs)
    if first.status == "ok":
        progress(f"the {numerics} golden model")
        want = golden if golden is not None else golden_bytes(plan, inputs, out, numerics)
        exact = want == first.out_bytes
        values = decode_output(out, first.out_bytes)
        gv = decode_output(out, want)
        mismatched = 0 if exact else int(np.count_nonzero(~((values == gv) | (np.isnan(values) & np.isnan(gv)))))
        product = reference_product(inputs)
        errors = error_stats(values, inputs, plan.spec.activation, product)
        slack = FAST_TOLERANCE[out.data_format] * max(float(np.abs(gv).max(initial=0.0)), 1e-30)
        with np.errstate(invalid="ignore", over="ignore"):
            close = bool(np.abs(values.astype(np.float64) - gv).max(initial=0.0) <= slack)
        float64 = float64_check(values, inputs, plan, numerics, gv, product, slack=0.0 if numerics == "exact" else slack)
    else:
        exact, mismatched, close, float64 = False, -1, False, None
        errors = ErrorStats(float("nan"), float("nan"), float("nan"))
    hazards = tuple({**h, "file": _source_path(h["file"], folder)} for r in runs for h in r.raw["hazards"])
    deadlock = next((r.raw["deadlock"] for r in runs if r.raw["deadlock"]), "")
    deadlock = _shorten_paths(deadlock, folder)
    macs = plan.mt * plan.nt * plan.kt * 32 ** 3
    return Emulation(manifest["kernel_id"], folder, numerics, seed, next((r.status for r in runs if r.status != "ok"), "ok"),
                     exact, mismatched, errors, time.perf_counter() - start, first.seconds, len(runs) - 1, identical,
                     hazards, deadlock,
                     tuple(first.raw["processors"]), int(first.raw["cycles"]), macs, first.out_bytes, close, float64)
