"""Type-check the blackhole-py export: the adapted kernels as blackhole-py's compiler builds them.

blackhole-py (compiler.py at the commit configs/targets/blackhole_py.toml pins) compiles a kernel with its
own bundle, `tt-metal-deps/` in its checkout (downloaded by its ./setup-deps.sh; not a TT-Metal release):
that bundle's riscv-tt-elf-g++, its include folders, its firmware stub per processor (the kernel source
as kernel_includes.hpp beside it) and the compute headers it generates from the Program's fields. When
$BLACKHOLE_PY names a checkout holding that bundle, this step runs exactly that compiler, those flags,
includes and defines with -fsyntax-only, once per processor a kernel runs on: a check against the tree
blackhole-py's compiler uses.

Without $BLACKHOLE_PY the step falls back to kgen's host type-check against the TT-Metal 0.81.1
headers with blackhole-py's defines per processor, and says that it is that and not blackhole-py's
tree (whose layout and API are older: see docs/blackhole-py.md). $BLACKHOLE_PY set to a place without
the bundle leaves the step not run (INCOMPLETE), naming what is missing, rather than checking against
something else."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kgen.core.arch import load_arch
from kgen.gen.targets import blackhole_py as bh
from kgen.gen.targets.blackhole_py import CHECKOUT_ENV
from kgen.proof import chain
from kgen.proof.chain import ChainOptions, ChainState, Step, toolchain

# kgen's processor roles -> blackhole-py compiler.py targets
_TARGET = {"brisc": "brisc", "ncrisc": "ncrisc", "unpack": "trisc0", "math": "trisc1", "pack": "trisc2"}
_STAGES = ("unpack", "math", "pack")
_TIMEOUT = 300                           # seconds per compiler run


def _device_defines() -> list[str]:
    """compiler.py's _device_defines for kgen's Blackhole (8 DRAM banks, 140 L1 banks: a P150)."""
    f = bh.facts()
    tc = load_arch("blackhole").toolchain
    (px, py), (dx, dy) = f["tree"]["prefetch_core"], f["tree"]["dispatch_core"]
    return [f"NUM_DRAM_BANKS={tc.num_dram_banks}", f"NUM_L1_BANKS={tc.num_l1_banks}",
            f"PREFETCH_NOC_X={px}", f"PREFETCH_NOC_Y={py}", f"DISPATCH_NOC_X={dx}", f"DISPATCH_NOC_Y={dy}",
            "LOG_BASE_2_OF_NUM_DRAM_BANKS=3" if tc.num_dram_banks == 8 else "IS_NOT_POW2_NUM_DRAM_BANKS=1"]


def bhpy_defines(target: str) -> list[str]:
    """compiler.py's -D list for one of its targets (brisc, ncrisc, trisc0-2)."""
    f = bh.facts()["flags"]
    return [*f["common_defines"], *_device_defines(), *f[target]["defines"]]


def profile_defines(role: str) -> list[str]:
    """The -D list of the stand-in check against the 0.81.1 headers for one kgen processor role:
    blackhole-py's, plus what the 0.81.1 headers read and blackhole-py does not pass."""
    return [*bhpy_defines(_TARGET[role]), *bh.facts()["flags"]["headers_0811_extra_defines"]]


# ----------------------------------------------------------------------------------------------
# blackhole-py's own tree

@dataclass(frozen=True)
class BhpyTree:
    checkout: Path              # the blackhole-py checkout ($BLACKHOLE_PY)
    deps: Path                  # <checkout>/tt-metal-deps

    @property
    def compiler(self) -> Path:
        return self.deps / bh.facts()["tree"]["compiler"]

    @property
    def includes(self) -> list[Path]:
        t = bh.facts()["tree"]
        inc = self.deps / t["include_root"]
        return [self.checkout, inc, *(inc / p for p in t["include_paths"])]

    def stub(self, target: str) -> Path:
        t = bh.facts()["tree"]
        return self.deps / t["firmware_src"] / t["stubs"]["trisc" if target.startswith("trisc") else target]


def find_tree(environ=os.environ) -> tuple[BhpyTree | None, str]:
    """blackhole-py's tree from $BLACKHOLE_PY, and a one-line account: (None, why) when the variable
    is unset or names no checkout holding the bundle."""
    given = environ.get(CHECKOUT_ENV)
    if not given:
        return None, f"${CHECKOUT_ENV} is not set"
    checkout = Path(given).expanduser()
    t = bh.facts()["tree"]
    deps = checkout / t["deps"]
    missing = [rel for rel in t["required"] if not (deps / rel).exists()]
    if missing:
        return None, (f"${CHECKOUT_ENV}={given} holds no {t['deps']}/{missing[0]} (run ./setup-deps.sh in the "
                      f"blackhole-py checkout)")
    tree = BhpyTree(checkout.resolve(), deps.resolve())
    if not os.access(tree.compiler, os.X_OK):
        return None, f"{tree.compiler} is not executable"
    return tree, f"blackhole-py's tree {tree.deps}"


def needs_checker(options: ChainOptions) -> str | None:
    """blackhole-py's tree when $BLACKHOLE_PY is set (else why not); without it, the stand-in check's
    0.81.1 headers and host checker."""
    if os.environ.get(CHECKOUT_ENV):
        tree, why = find_tree()
        return None if tree is not None else why
    return chain.needs_host_checker(options)


def compute_headers(p: bh.BhpyProgram) -> dict[str, str]:
    """The compute headers compiler.py generates from a Program (32 CB entries each: the CB's Dtype code
    and tile size, Float16_b for an unused index; 32 x 32 tiles of 4 faces)."""
    codes = bh.facts()["dtype"]
    fmt, size = [codes["Float16_b"]] * 32, [bh.tile_bytes("Float16_b")] * 32
    for index, dtype, _ in p.cbs:
        fmt[index], size[index] = codes[dtype], bh.tile_bytes(dtype)

    def array(ctype: str, name: str, values) -> str:
        return f"constexpr {ctype} {name}[32] = {{{', '.join(str(v) for v in values)}}};\n"

    def header(*lines: str) -> str:
        return "#pragma once\n#include <cstdint>\n" + "".join(lines)

    # (name after the stage prefix, C type, value per CB index)
    dims = (("tile_num_faces", "uint8_t", 4), ("partial_face", "uint8_t", 0), ("tile_face_r_dim", "uint8_t", 16),
            ("narrow_tile", "uint8_t", 0), ("tile_r_dim", "uint8_t", 32), ("tile_c_dim", "uint8_t", 32))
    out = {}
    for stage, ctype in (("unpack", "std::int32_t"), ("pack", "unsigned char")):
        out[f"chlkc_{stage}_data_format.h"] = header(array(ctype, f"{stage}_src_format", fmt),
                                                     array(ctype, f"{stage}_dst_format", fmt))
        out[f"chlkc_{stage}_tile_dims.h"] = header(*(array(c, f"{stage}_{d}", [v] * 32) for d, c, v in dims),
                                                   array("uint16_t", f"{stage}_tile_size", size))
    flag = lambda v: "true" if v else "false"
    out["chlkc_dst_accum_mode.h"] = f"#pragma once\nconstexpr bool DST_ACCUM_MODE = {flag(p.dst_accum_mode)};\n"
    out["chlkc_dst_sync_mode.h"] = ("#pragma once\n#define DST_SYNC_MODE DstSync::"
                                    f"{'SyncFull' if p.dst_full_sync else 'SyncHalf'}\n")
    out["chlkc_math_fidelity.h"] = header(f"constexpr std::int32_t MATH_FIDELITY = "
                                          f"{bh.facts()['math_fidelity'][p.math_fidelity]};\n")
    out["chlkc_math_approx_mode.h"] = f"#pragma once\nconstexpr bool APPROX = {flag(p.approx)};\n"
    return out


@dataclass(frozen=True)
class TreeJob:
    role: str                   # the Program's kernel: reader, writer_recv, compute, ...
    target: str                 # compiler.py's: brisc, ncrisc, trisc0-2
    argv: tuple[str, ...]
    cwd: Path


@dataclass(frozen=True)
class TreeResult:
    job: TreeJob
    ok: bool
    output: str


def tree_jobs(p: bh.BhpyProgram, tree: BhpyTree, into: Path) -> list[TreeJob]:
    """One compiler run per kernel and processor, each in its own folder holding what compiler.py's
    _build writes there (the kernel as kernel_includes.hpp, the compute headers, for a TRISC the
    chlkc_<stage>.cpp files and an empty defines_generated.h)."""
    f, t = bh.facts()["flags"], bh.facts()["tree"]
    headers = compute_headers(p)
    jobs = []
    for role, k in p.kernels.items():
        targets = [f"trisc{i}" for i in range(3)] if k.noc is None else ["brisc" if k.processor == "RISCV_0" else "ncrisc"]
        for target in targets:
            cwd = into / f"{role}-{target}"
            cwd.mkdir(parents=True)
            (cwd / t["kernel_file"]).write_text(k.source)
            for name, text in headers.items():
                (cwd / name).write_text(text)
            if k.noc is None:
                (cwd / t["defines_file"]).write_text("")
                for stage in _STAGES:
                    (cwd / f"chlkc_{stage}.cpp").write_text(
                        f'#define TRISC_{stage.upper()}\n#include "{t["defines_file"]}"\n#include <{t["kernel_file"]}>\n')
            argv = (str(tree.compiler), f[target]["opt"], *f["cflags"], *f[target]["mcpu"], "-I.",
                    *(f"-I{d}" for d in tree.includes), *(f"-D{d}" for d in bhpy_defines(target)),
                    "-fsyntax-only", str(tree.stub(target)))
            jobs.append(TreeJob(role, target, argv, cwd))
    return jobs


def _run(job: TreeJob) -> TreeResult:
    try:
        r = subprocess.run(job.argv, cwd=job.cwd, capture_output=True, text=True, timeout=_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return TreeResult(job, False, f"{job.argv[0]} did not run: {exc}")
    return TreeResult(job, r.returncode == 0, (r.stderr + r.stdout).strip())


def _failure(r: TreeResult, max_lines: int = 40) -> str:
    lines = r.output.splitlines()
    more = f"\n... ({len(lines) - max_lines} more lines)" if len(lines) > max_lines else ""
    return (f"{r.job.role} ({r.job.target}) does not compile against blackhole-py's tree:\n"
            + "\n".join(lines[:max_lines]) + more)


def check_against_tree(p: bh.BhpyProgram, tree: BhpyTree, parallel: int = 1) -> tuple[TreeResult, ...]:
    with tempfile.TemporaryDirectory(prefix="kgen-bhpy-tree-") as tmp:
        jobs = tree_jobs(p, tree, Path(tmp))
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            return tuple(pool.map(_run, jobs))


# ----------------------------------------------------------------------------------------------
# the step

def typechecked(state: ChainState) -> Step:
    """blackhole-py's `typechecked` step (the chain has asked needs_checker). Its value: the results."""
    artifacts, options = state.artifacts, state.options
    p = bh.view(artifacts.plan, artifacts.rendered)
    tree, _ = find_tree()
    if tree is not None:
        results = check_against_tree(p, tree, options.parallel)
        failures = [r for r in results if not r.ok]
        if failures:
            return Step.failed("typechecked", "\n".join(_failure(r) for r in failures), results)
        return Step.ok("typechecked", (
            f"type-checked {len(results)} kernel builds against blackhole-py's own tree ({tree.deps}) with "
            f"its compiler, flags and generated headers (compiler.py @ {bh.facts()['source']['compiler_commit'][:7]})"),
            results)
    return _typecheck_0811(state, p)


def _with_profile(job):
    argv = [a for a in job.argv if not a.startswith("-D")]
    source = argv.pop()                                    # the firmware stub is the last argument
    return dataclasses.replace(job, argv=tuple([*argv, *("-D" + d for d in profile_defines(job.role)), source]))


def _typecheck_0811(state: ChainState, p: bh.BhpyProgram) -> Step:
    """The stand-in: kgen's host type-check of the view's kernels against the 0.81.1 headers, each
    with blackhole-py's defines for its processor."""
    from kgen.gen.build import write_build
    from kgen.toolchain.compile import failure_text, plan_jobs, run_jobs

    artifacts, options = state.artifacts, state.options
    tc = toolchain(options)
    with tempfile.TemporaryDirectory(prefix="kgen-bhpy-check-") as tmp:
        folder = write_build(Path(tmp), artifacts.rendered.kernel_id, bh.view_files(p, artifacts.rendered))
        jobs = [_with_profile(j) for j in plan_jobs(folder.resolve(), tc, "check")]
        results = tuple(run_jobs(jobs, tc.headers, parallel=options.parallel, force=options.force))
        failures = [r for r in results if not r.ok]
        if failures:
            return Step.failed("typechecked", "\n".join(failure_text(r, None) for r in failures), results)
    extra = ", ".join(bh.facts()["flags"]["headers_0811_extra_defines"])
    return Step.ok("typechecked", (
        f"type-checked {len(results)} kernel builds against TT-Metal {tc.headers.version}'s headers, not "
        f"blackhole-py's own tree (${CHECKOUT_ENV} is not set; see docs/blackhole-py.md), with blackhole-py's "
        f"defines per processor (+ {extra}, which those headers read)"), results)
