#!/usr/bin/env python3
"""Peer timing: a tile-granular multi-core matmul on tt-lang-sim (PyPI `tt-lang-sim`).

tt-lang-sim is Tenstorrent's pure-Python functional simulator of the TT-Lang DSL
(github: tenstorrent/tt-lang). This script writes a matmul for it at
the same granularity as a tile-level emulator: every dataflow-buffer (DFB) block is
one 32x32 tile, and compute does one tile matmul per step, looping over the K tiles.
The output is split over an X x Y grid of cores (X splits N, Y splits M, the same
(x, y) order as `ttl.operation(grid=(x, y))` and `ttl.node(dims=2)`); each core has a
reader (in0/in1 tiles from DRAM), a compute kernel and a writer (out tiles to DRAM).

It needs a Python that has tt-lang-sim, torch and numpy; kgen's own environment does
not, on purpose (torch is a hard dependency of tt-lang-sim). Set up once with:

    python3 -m venv /tmp/ttlsim
    /tmp/ttlsim/bin/pip install torch==2.13.0      # the CPU wheel on disk; never plain `torch`
    /tmp/ttlsim/bin/pip install tt-lang-sim numpy

Command line (run with the venv's python):

    /tmp/ttlsim/bin/python benchmarks/ttlang_peer.py --M 256 --N 256 --K 1024 \
        --grid 2x2 [--dtype bfloat16|float32] [--repeat 1] [--acc dst|dfb] \
        [--bf16-native] [--dry-run] [--threads 1] [--buffers 2] [--seed 0] [--json]

With --json, stdout carries exactly one JSON object (the last line):
    {"seconds": median wall time of the kernel call over --repeat runs (no imports,
                no input creation, no reference check),
     "seconds_all": [...], "import_seconds": numpy+torch+ttl.sim import time,
     "max_abs_err": max |C - A@B| against numpy float64 on the same (bf16-rounded)
                    inputs (null with --dry-run), "max_abs_ref": max |A@B|,
     "ok": error within tolerance, "shape": [M, N, K], "grid": [x, y],
     "dtype", "acc", "bf16_native", "dry_run", "tile_steps": number of tile matmuls,
     "ttlang_sim_version": "1.1.6", ...}
Human-readable lines (and anything the simulator prints) go to stderr in that mode.
Exit status 0 if the check passed, 1 if not, 2 on bad arguments.

From another process (e.g. benchmarks/emulate.py, which runs in kgen's environment):
set the environment variable KGEN_TTLANG_PYTHON to the venv's python
(e.g. KGEN_TTLANG_PYTHON=/tmp/ttlsim/bin/python); the caller then runs
`$KGEN_TTLANG_PYTHON benchmarks/ttlang_peer.py ... --json` as a subprocess and parses
the last stdout line. `run_peer_subprocess()` below does exactly that and only uses
the standard library, so this module can be imported without torch; `run_peer()` is
the in-process function (it imports numpy/torch/ttl lazily, so call it only from a
Python that has them).

Notes on what the numbers mean (details in the reference doc):
- The sim runs every grid node as a greenlet on one OS thread, so grid size does not
  give parallel speed-up; the cost is roughly per tile step (reserve/copy/wait/matmul/
  push/pop bookkeeping plus a 32x32 torch matmul).
- By default (float32 promotion) "bfloat16" tensors are stored and computed in fp32,
  so the result is an fp32 golden, not bf16 numerics. --bf16-native disables the
  promotion (torch bf16, RNE per op); neither models Tensix fidelity or rounding.
- --acc dst (default) keeps the K accumulator in a temporary block, like matmul_tiles
  accumulating in DST; --acc dfb round-trips the partial sum through an accumulator
  DFB every K step, like the tt-lang tutorials (and the "per-tile" row of the doc).
- torch runs with 1 intra-op thread by default (--threads): a 32x32 matmul gains
  nothing from threads, and with torch's default OpenMP pool (2 threads here) the
  first kernel call of a process intermittently took 1-15 s instead of ~0.17 s for
  256x256x1024 (single 32x32 matmuls stalling for milliseconds inside the greenlets).
- Importing ttl.sim rebinds torch.bfloat16 to torch.float32 for the whole process;
  the inputs are therefore rounded to bf16 with numpy bit arithmetic, not torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TILE = 32
ENV_PYTHON = "KGEN_TTLANG_PYTHON"
SCRIPT = Path(__file__).resolve()
DTYPES = ("bfloat16", "float32")
ACC_MODES = ("dst", "dfb")


def parse_grid(text: str) -> tuple[int, int]:
    """'2x2' -> (2, 2); also accepts '2,2'. Returns (x, y): x splits N, y splits M."""
    parts = text.lower().replace(",", "x").split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"grid must look like XxY (e.g. 2x2), got {text!r}")
    gx, gy = int(parts[0]), int(parts[1])
    if gx < 1 or gy < 1:
        raise ValueError(f"grid dimensions must be >= 1, got {text!r}")
    return gx, gy


def check_shape(m: int, n: int, k: int, gx: int, gy: int) -> None:
    for name, v in (("M", m), ("N", n), ("K", k)):
        if v <= 0 or v % TILE:
            raise ValueError(f"{name}={v} must be a positive multiple of {TILE}")
    if (m // TILE) % gy or (n // TILE) % gx:
        raise ValueError(
            f"grid {gx}x{gy} must divide the tile grid: M/32={m // TILE} by y={gy}, "
            f"N/32={n // TILE} by x={gx}"
        )


def _round_to_bf16(x: Any) -> Any:
    """fp32 numpy array -> fp32 array holding the nearest bf16 values (RNE)."""
    import numpy as np

    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    bias = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    return ((bits + bias) & np.uint32(0xFFFF0000)).view(np.float32)


def _build_operation(ttl: Any, gx: int, gy: int, m_tiles: int, n_tiles: int,
                     k_tiles: int, acc: str, buffers: int):
    """Return a ttl operation computing y = a @ b, one 32x32 tile per DFB block.

    Core (x, y) owns output tile rows [y*rows, (y+1)*rows) and columns
    [x*cols, (x+1)*cols). Names avoid `grid` and `_node`: ttl.node() and
    ttl.grid_size() find those by walking the caller's frames.
    """
    rows = m_tiles // gy
    cols = n_tiles // gx
    out_tiles = rows * cols

    @ttl.operation(grid=(gx, gy))
    def tile_matmul(a, b, y):
        in0 = ttl.make_dataflow_buffer_like(a, shape=(1, 1), block_count=buffers)
        in1 = ttl.make_dataflow_buffer_like(b, shape=(1, 1), block_count=buffers)
        out = ttl.make_dataflow_buffer_like(y, shape=(1, 1), block_count=buffers)
        if acc == "dfb":
            part = ttl.make_dataflow_buffer_like(y, shape=(1, 1), block_count=2)

        @ttl.datamovement()
        def reader():
            cx, cy = ttl.node(dims=2)
            for i in range(rows):
                mt = cy * rows + i
                for j in range(cols):
                    nt = cx * cols + j
                    for kt in range(k_tiles):
                        with in0.reserve() as t0, in1.reserve() as t1:
                            tx0 = ttl.copy(a[mt:mt + 1, kt:kt + 1], t0)
                            tx1 = ttl.copy(b[kt:kt + 1, nt:nt + 1], t1)
                            tx0.wait()
                            tx1.wait()

        if acc == "dst":
            @ttl.compute()
            def compute():
                for _ in range(out_tiles):
                    total = ttl.block.fill(0, shape=(1, 1))
                    for _ in range(k_tiles):
                        with in0.wait() as t0, in1.wait() as t1:
                            total += t0 @ t1
                    with out.reserve() as to:
                        to.store(total)
        else:
            @ttl.compute()
            def compute():
                for _ in range(out_tiles):
                    with part.reserve() as tp:
                        tp.store(ttl.block.fill(0, shape=(1, 1)))
                    for _ in range(k_tiles):
                        # reserve() is entered after the three waits, so the
                        # accumulator's next slot frees up as the last one is read.
                        with (in0.wait() as t0, in1.wait() as t1, part.wait() as prev,
                              part.reserve() as tp):
                            tp.store(prev + t0 @ t1)
                    with part.wait() as prev, out.reserve() as to:
                        to.store(prev)

        @ttl.datamovement()
        def writer():
            cx, cy = ttl.node(dims=2)
            for i in range(rows):
                mt = cy * rows + i
                for j in range(cols):
                    nt = cx * cols + j
                    with out.wait() as to:
                        ttl.copy(to, y[mt:mt + 1, nt:nt + 1]).wait()

    return tile_matmul


def run_peer(m: int, n: int, k: int, grid: tuple[int, int] = (1, 1), *,
             dtype: str = "bfloat16", repeat: int = 1, acc: str = "dst",
             bf16_native: bool = False, dry_run: bool = False, buffers: int = 2,
             threads: int = 1, seed: int = 0, log=None) -> dict[str, Any]:
    """Run the tile matmul on tt-lang-sim in this process and return the result dict.

    Needs numpy, torch and tt-lang-sim importable. Side effect: imports ttl.sim, which
    rebinds torch.bfloat16 (see module docstring).
    """
    gx, gy = grid
    check_shape(m, n, k, gx, gy)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if acc not in ACC_MODES:
        raise ValueError(f"acc must be one of {ACC_MODES}, got {acc!r}")
    if repeat < 1 or buffers < 1:
        raise ValueError("repeat and buffers must be >= 1")
    log = log or (lambda msg: print(msg, file=sys.stderr))

    t0 = time.perf_counter()
    import numpy as np
    import torch
    from ttl.sim import ttl, ttnn
    import_seconds = time.perf_counter() - t0

    from importlib.metadata import version

    from ttl.sim import context as sim_context
    from ttl.sim import ttnnsim

    if threads > 0:
        torch.set_num_threads(threads)
    ttnnsim.set_disable_float32_promotion(bf16_native)
    sim_context.set_dry_run(dry_run)

    # Inputs: standard normal, rounded to bf16 values for dtype=bfloat16 so that every
    # engine compared with this one can start from the same numbers.
    rng = np.random.default_rng(seed)
    a_np = rng.standard_normal((m, k), dtype=np.float32)
    b_np = rng.standard_normal((k, n), dtype=np.float32)
    if dtype == "bfloat16":
        a_np, b_np = _round_to_bf16(a_np), _round_to_bf16(b_np)
    tt_dtype = ttnn.bfloat16 if dtype == "bfloat16" else ttnn.float32

    def to_device(arr):
        return ttnn.from_torch(torch.from_numpy(arr), dtype=tt_dtype,
                               layout=ttnn.TILE_LAYOUT)

    a_t, b_t = to_device(a_np), to_device(b_np)
    y_t = to_device(np.zeros((m, n), dtype=np.float32))

    t0 = time.perf_counter()
    op = _build_operation(ttl, gx, gy, m // TILE, n // TILE, k // TILE, acc, buffers)
    build_seconds = time.perf_counter() - t0

    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        op(a_t, b_t, y_t)
        times.append(time.perf_counter() - t0)

    result: dict[str, Any] = {
        "seconds": statistics.median(times),
        "seconds_all": times,
        "build_seconds": build_seconds,
        "import_seconds": import_seconds,
        "max_abs_err": None,
        "max_abs_ref": None,
        "ok": True,
        "shape": [m, n, k],
        "grid": [gx, gy],
        "dtype": dtype,
        "acc": acc,
        "bf16_native": bf16_native,
        "dry_run": dry_run,
        "repeat": repeat,
        "torch_threads": torch.get_num_threads(),
        "tile_steps": (m // TILE) * (n // TILE) * (k // TILE),
        "ttlang_sim_version": version("tt-lang-sim"),
        "torch_version": torch.__version__,
    }
    if not dry_run:
        got = ttnn.to_torch(y_t).float().numpy().astype(np.float64)
        ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
        err = float(np.max(np.abs(got - ref)))
        scale = float(np.max(np.abs(ref)))
        # fp32 math: ~1e-7 relative; bf16-native: bf16 rounding per K step, ~1e-2.
        tol = (5e-2 if bf16_native else 1e-4) * scale
        result.update(max_abs_err=err, max_abs_ref=scale, tolerance=tol, ok=err <= tol)
        log(f"max abs err {err:.3g} (max |ref| {scale:.3g}, tolerance {tol:.3g})"
            f" -> {'ok' if err <= tol else 'MISMATCH'}")
    log(f"tt-lang-sim {result['ttlang_sim_version']}: {m}x{n}x{k} on {gx}x{gy}, "
        f"acc={acc}, {result['tile_steps']} tile steps: {result['seconds']:.3f} s "
        f"(median of {repeat}; import {import_seconds:.2f} s)")
    return result


def peer_python() -> str | None:
    """The python named by KGEN_TTLANG_PYTHON, or None if unset or empty."""
    return os.environ.get(ENV_PYTHON) or None


def run_peer_subprocess(m: int, n: int, k: int, grid: tuple[int, int] = (1, 1), *,
                        python: str | None = None, dtype: str = "bfloat16",
                        repeat: int = 1, acc: str = "dst", bf16_native: bool = False,
                        dry_run: bool = False, threads: int = 1,
                        timeout: float | None = None) -> dict[str, Any]:
    """Run this script under `python` (default: $KGEN_TTLANG_PYTHON) and return its JSON.

    Standard library only, so it can be called from kgen's environment. Raises
    RuntimeError if no python is configured or the run fails.
    """
    python = python or peer_python()
    if not python:
        raise RuntimeError(f"set {ENV_PYTHON} to a python that has tt-lang-sim")
    cmd = [python, str(SCRIPT), "--M", str(m), "--N", str(n), "--K", str(k),
           "--grid", f"{grid[0]}x{grid[1]}", "--dtype", dtype, "--repeat", str(repeat),
           "--acc", acc, "--threads", str(threads), "--json"]
    if bf16_native:
        cmd.append("--bf16-native")
    if dry_run:
        cmd.append("--dry-run")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode not in (0, 1) or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed (rc={proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--M", type=int, required=True)
    parser.add_argument("--N", type=int, required=True)
    parser.add_argument("--K", type=int, required=True)
    parser.add_argument("--grid", default="1x1", help="XxY cores; X splits N, Y splits M")
    parser.add_argument("--dtype", choices=DTYPES, default="bfloat16")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--acc", choices=ACC_MODES, default="dst",
                        help="K accumulator: temporary block (dst) or DFB round trip (dfb)")
    parser.add_argument("--buffers", type=int, default=2, help="blocks per in/out DFB")
    parser.add_argument("--bf16-native", action="store_true",
                        help="disable tt-lang-sim's float32 promotion (torch bf16 math)")
    parser.add_argument("--dry-run", action="store_true",
                        help="sim bookkeeping only, no torch payload (no result check)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (default 1; 0 = torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        gx, gy = parse_grid(args.grid)
        check_shape(args.M, args.N, args.K, gx, gy)
    except ValueError as exc:
        parser.error(str(exc))

    real_stdout = sys.stdout
    if args.json:
        sys.stdout = sys.stderr  # keep simulator chatter off the JSON channel
    try:
        result = run_peer(args.M, args.N, args.K, (gx, gy), dtype=args.dtype,
                          repeat=args.repeat, acc=args.acc, bf16_native=args.bf16_native,
                          dry_run=args.dry_run, buffers=args.buffers,
                          threads=args.threads, seed=args.seed,
                          log=(lambda msg: print(msg, file=sys.stderr)) if args.json
                          else print)
    finally:
        sys.stdout = real_stdout
    if args.json:
        print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
