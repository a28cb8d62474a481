"""Compile stage: a build folder's kernels -> objects/ELFs with SFPI, or a type-check without it.

Every kernel is compiled once per processor it runs on (TRISC unpack/math/pack, BRISC, NCRISC),
through TT-Metal's own firmware wrappers (trisck.cc, brisck.cc, ncrisck.cc) with the generated
JIT files of its folder, exactly as TT-Metal 0.81.1's JIT does (docs/reference/toolchain.md §1, §3;
docs/reference/matmul.md §4.3). Command lines are pure functions of (toolchain, arch, role, kernel).

Results are cached by content: the key covers the command line, the compiler and every file the
compiler read (its own dependency list, re-hashed on lookup, as ccache's direct mode does), so a
second identical build compiles nothing. Cache entries and outputs are written to a temporary
name and renamed, so concurrent kgen processes building the same kernel each see one intact result.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from kgen.core.version import __version__
from kgen.core.arch import ArchFacts, load_arch
from kgen.toolchain.elfreport import ElfSizes, elf_sizes, format_sizes
from kgen.core.errors import KgenBug, KgenError
from kgen.toolchain.headers import HeaderTree, sha256_file, stubs_for, toolchain_config
from kgen.core.resources import cache_root, writable_dir
from kgen.toolchain.discovery import HostChecker, Sfpi, Toolchain

Mode = Literal["check", "sfpi"]
PROCESSOR_ROLES = {"TRISC": ("unpack", "math", "pack"), "RISCV_0": ("brisc",), "RISCV_1": ("ncrisc",)}


class CompileError(KgenError):
    """A kernel does not compile (or does not fit): the build failed."""

    exit_code = 1


class ToolchainMissing(KgenError):
    """What a requested build mode needs is not installed."""


@dataclass(frozen=True)
class KernelInfo:
    """What the compile stage needs of one manifest kernel."""

    name: str
    processor: str                      # TRISC | RISCV_0 | RISCV_1
    noc_index: int
    compile_time_args: tuple[int, ...]
    defines: tuple[tuple[str, str], ...]
    source: Path                        # the kernel's .cpp in the build folder
    gen_dir: Path                       # its jit/<name>/ folder
    # Include folders the kernel needs beyond the API's (a TT-Metal kernel put in kgen's place
    # includes ttnn helpers from its own tree); searched after the API headers.
    include_dirs: tuple[Path, ...] = ()

    @property
    def roles(self) -> tuple[str, ...]:
        return PROCESSOR_ROLES[self.processor]


@dataclass(frozen=True)
class Job:
    kernel: KernelInfo
    role: str
    arch: str
    mode: Mode
    argv: tuple[str, ...]               # compile (or type-check) command
    link_argv: tuple[str, ...] | None   # link command (SFPI with firmware present)
    link_inputs: tuple[Path, ...]       # files the link reads besides the object
    compiler_version: str

    @property
    def label(self) -> str:
        return f"{self.kernel.name}:{self.role}"


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    column: int
    severity: str                       # error | warning | note | fatal error
    message: str


@dataclass(frozen=True)
class JobResult:
    job: Job
    ok: bool
    cached: bool
    seconds: float
    output: str                         # compiler output, paths as the user sees them
    diagnostics: tuple[Diagnostic, ...] = ()
    allowed: int = 0                    # GCC-12 diagnostics ignored by the allow-list
    object_path: Path | None = None     # in the cache (SFPI)
    elf_path: Path | None = None


# ----------------------------------------------------------------------------------------------
# Command lines (pure)
# ----------------------------------------------------------------------------------------------

def role_config(role: str) -> dict:
    return toolchain_config()["roles"][role]


def _pow2_define(kind: str, count: int) -> str:
    """LOG_BASE_2_OF_NUM_<kind>_BANKS for a power of two, else IS_NOT_POW2_NUM_<kind>_BANKS, as
    TT-Metal's device kernel defines give them (noc addressing picks shifts or divisions)."""
    if count > 0 and count & (count - 1) == 0:
        return f"LOG_BASE_2_OF_NUM_{kind}_BANKS={count.bit_length() - 1}"
    return f"IS_NOT_POW2_NUM_{kind}_BANKS=1"


def jit_defines(arch: ArchFacts, role: str, kernel: KernelInfo) -> list[str]:
    """-D values for one (kernel, role), in the JIT's order: arch, global, device, per-kernel, role."""
    tc = arch.toolchain
    pcie_x, pcie_y = tc.pcie_noc
    defines = [tc.arch_define, *toolchain_config()["jit"]["defines"],
               f"NOC_INDEX={kernel.noc_index}",
               f"NUM_DRAM_BANKS={tc.num_dram_banks}", f"NUM_L1_BANKS={tc.num_l1_banks}",
               _pow2_define("DRAM", tc.num_dram_banks), _pow2_define("L1", tc.num_l1_banks),
               f"PCIE_NOC_X={pcie_x}", f"PCIE_NOC_Y={pcie_y}",
               "KERNEL_COMPILE_TIME_ARGS=" + ",".join(str(v) for v in kernel.compile_time_args),
               *role_config(role)["defines"]]
    if kernel.processor != "TRISC":
        # Data-movement kernels get their defines on the command line; compute kernels read
        # them from defines_generated.h (docs/reference/matmul.md §4.2).
        defines += [f"{name}={value}" for name, value in kernel.defines]
    return defines


def include_dirs(tree: HeaderTree, arch: ArchFacts, role: str) -> list[Path]:
    jit = toolchain_config()["jit"]
    tc = arch.toolchain
    names = {"ck": tc.ckernels_dir, "llk": tc.llk_dir, "hw": tc.hw_dir, "hwdefs": tc.hw_defines_dir}
    rels = list(jit["includes"])
    if role_config(role)["processor"] == "TRISC":
        rels += jit["compute_only_includes"]
    rels.append(jit["firmware_src"])
    # An arch without one of the folders (Blackhole has no *_defines folder) skips that entry.
    rels = [rel for rel in rels if not any(f"{{{k}}}" in rel and not v for k, v in names.items())]
    return [tree.root / rel.format(**names) if rel else tree.root for rel in rels]


def _firmware_source(tree: HeaderTree, role: str) -> Path:
    return tree.root / toolchain_config()["jit"]["firmware_src"] / role_config(role)["firmware_source"]


def _forced_includes(kernel: KernelInfo) -> list[str]:
    named = kernel.gen_dir / "named_ct_arg_map_generated.h"
    return ["-include", str(named)] if named.is_file() else []


def host_check_command(host: HostChecker, tree: HeaderTree, stubs: Path, overlay: Path, arch: ArchFacts,
                       role: str, kernel: KernelInfo) -> list[str]:
    """The -fsyntax-only compile of docs/reference/toolchain.md §3.3 for one (kernel, role)."""
    cfg = toolchain_config()
    return [host.cxx, *cfg["host_check"]["flags"],
            "-isystem", str(overlay), "-isystem", str(host.libstdcxx_include),
            "-isystem", str(host.picolibc_include),
            *cfg["jit"]["warnings"],
            "-I" + str(stubs), "-I" + str(kernel.gen_dir), *("-I" + str(p) for p in include_dirs(tree, arch, role)),
            *("-D" + d for d in jit_defines(arch, role, kernel)),
            *_forced_includes(kernel), str(_firmware_source(tree, role))]


def _sfpi_arch_flags(arch: ArchFacts, role: str) -> list[str]:
    cfg = toolchain_config()["sfpi"]
    if role_config(role)["processor"] == "TRISC":
        return [cfg["opt_compute"], f"-mcpu={arch.toolchain.sfpi_mcpu_compute}", *cfg["cxxflags"]]
    return [cfg["opt_dm"], f"-mcpu={arch.toolchain.sfpi_mcpu_dm}", *cfg["cxxflags"], *cfg["dm_cxxflags"]]


def sfpi_compile_command(sfpi: Sfpi, tree: HeaderTree, arch: ArchFacts, role: str, kernel: KernelInfo,
                         obj: Path) -> list[str]:
    """TT-Metal 0.81.1's JIT compile of one (kernel, role) with SFPI (docs/reference/matmul.md §4.3)."""
    cfg = toolchain_config()
    sfpi_include = ["-I" + str(sfpi.root / "include")] if role_config(role)["processor"] == "TRISC" else []
    return [str(sfpi.cxx), *_sfpi_arch_flags(arch, role), *cfg["jit"]["warnings"],
            "-I" + str(kernel.gen_dir), *("-I" + str(p) for p in include_dirs(tree, arch, role)), *sfpi_include,
            *("-D" + d for d in jit_defines(arch, role, kernel)),
            *_forced_includes(kernel), "-c", "-o", str(obj), str(_firmware_source(tree, role))]


def link_inputs(runtime_hw: Path, firmware: Path, arch: ArchFacts, role: str) -> tuple[Path, Path, list[Path]]:
    """(linker script, weakened firmware ELF, extra objects) for one role."""
    cfg = toolchain_config()["sfpi"]
    elf = role_config(role)["elf"]
    rdir = arch.toolchain.runtime_dir
    objs = list(cfg["link_objects"]) + (cfg["brisc_link_objects"] if role == "brisc" else [])
    return (runtime_hw / "toolchain" / rdir / f"kernel_{elf}.ld", firmware / elf / f"{elf}_weakened.elf",
            [runtime_hw / "lib" / rdir / o for o in objs])


def sfpi_link_command(sfpi: Sfpi, runtime_hw: Path, firmware: Path, arch: ArchFacts, role: str,
                      obj: Path, out: Path) -> list[str]:
    """Link a kernel object against the weakened firmware ELF (kernels are relocatable)."""
    script, fw_elf, objs = link_inputs(runtime_hw, firmware, arch, role)
    return [str(sfpi.cxx), *_sfpi_arch_flags(arch, role), *toolchain_config()["sfpi"]["ldflags"],
            f"-T{script}", f"-Wl,--just-symbols={fw_elf}", str(obj), *map(str, objs), "-o", str(out)]


# ----------------------------------------------------------------------------------------------
# Jobs of a build folder
# ----------------------------------------------------------------------------------------------

def read_kernels(folder: Path) -> tuple[str, list[KernelInfo]]:
    """(arch, kernels) from a build folder's manifest.json."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise CompileError(f"{folder} is not a kgen build folder (manifest.json: {exc})") from None
    kernels = []
    for k in manifest["kernels"]:
        noc = k.get("noc") or "NOC_0"
        kernels.append(KernelInfo(
            name=k["name"], processor=k["processor"], noc_index=int(noc.rsplit("_", 1)[1]),
            compile_time_args=tuple(k["compile_time_args"]),
            defines=tuple((n, str(v)) for n, v in k["defines"].items()),
            source=folder / k["source"], gen_dir=folder / "jit" / k["name"],
            include_dirs=tuple(Path(d) for d in k.get("include_dirs", ()))))
    return manifest["arch"], kernels


def host_overlay(host: HostChecker) -> Path:
    """The host libstdc++ config folder made bare-metal (docs/reference/toolchain.md §3.1 step 3), once per GCC."""
    cfg = toolchain_config()["host_check"]
    path = cache_root() / "host-overlay" / host.version
    if (path / "bits" / "c++config.h").is_file():
        return path
    tmp = Path(tempfile.mkdtemp(prefix=".overlay.", dir=writable_dir(path.parent)))
    bits = tmp / "bits"
    shutil.copytree(host.libstdcxx_config, bits)
    (bits / "os_defines.h").write_text(
        "// kgen: bare-metal os_defines.h (the host one pulls in glibc's <features.h>)\n"
        "#ifndef _GLIBCXX_OS_DEFINES\n#define _GLIBCXX_OS_DEFINES 1\n#endif\n")
    shutil.copyfile(bits / "gthr-single.h", bits / "gthr-default.h")
    with open(bits / "c++config.h", "a") as f:
        f.write("\n// kgen: a bare-metal RISC-V target has no futex, pthreads or TLS\n")
        f.writelines(f"#undef {m}\n" for m in cfg["overlay_undef"])
    try:
        os.rename(tmp, path)
    except OSError:                          # a concurrent kgen made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def plan_jobs(folder: Path, tc: Toolchain, mode: Mode) -> list[Job]:
    arch_name, kernels = read_kernels(folder)
    arch = load_arch(arch_name)
    if tc.headers is None:
        raise ToolchainMissing(f"no TT-Metal headers: {tc.note('headers')}")
    jobs = []
    if mode == "check":
        if tc.host is None:
            raise ToolchainMissing(f"no host checker: {tc.note('host checker')}")
        stubs, overlay = stubs_for(tc.headers), host_overlay(tc.host)
        for k in kernels:
            for role in k.roles:
                argv = host_check_command(tc.host, tc.headers, stubs, overlay, arch, role, k)
                jobs.append(Job(k, role, arch_name, mode, tuple(argv), None, (), f"{tc.host.cxx} {tc.host.version}"))
        return jobs
    if tc.sfpi is None:
        raise ToolchainMissing(f"no SFPI compiler: {tc.note('sfpi')}")
    link = tc.link_dirs(arch.toolchain.runtime_dir)
    for k in kernels:
        for role in k.roles:
            obj = Path("@OBJ@")              # placeholder: the real path is inside the cache entry
            argv = sfpi_compile_command(tc.sfpi, tc.headers, arch, role, k, obj)
            link_argv, inputs = None, ()
            if link is not None:
                link_argv = tuple(sfpi_link_command(tc.sfpi, link[0], link[1], arch, role, obj, Path("@ELF@")))
                script, fw_elf, objs = link_inputs(link[0], link[1], arch, role)
                inputs = (script, fw_elf, *objs)
            jobs.append(Job(k, role, arch_name, mode, tuple(argv), link_argv, inputs, tc.sfpi.version))
    return jobs


# ----------------------------------------------------------------------------------------------
# Running, with a content-addressed cache
# ----------------------------------------------------------------------------------------------

_DIAG = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): "
                   r"(?P<msg>.*)$", re.M)
_hash_memo: dict[tuple[str, int, int], str] = {}


def _file_hash(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _hash_memo:
        _hash_memo[key] = sha256_file(Path(path))
    return _hash_memo[key]


def _job_key(job: Job) -> str:
    """Hash of what the compiler is asked to do: the command (build-folder path left out, so a
    moved folder still hits), compiler, kgen version, and the folder's generated files."""
    folder = _build_folder(job)
    if not os.path.isabs(folder):
        # Leaving a relative folder out of the key would let a command that cannot work from the
        # compiler's working folder hit the entry of one that did.
        raise KgenBug(f"compile job for {job.kernel.name} names a relative build folder {folder}")
    h = hashlib.sha256()
    for part in (job.mode, job.compiler_version, __version__, *job.argv, "--link--", *(job.link_argv or ())):
        h.update(part.replace(folder + os.sep, "@BUILD@/").encode() + b"\0")
    for path in sorted(job.kernel.gen_dir.iterdir()) + [job.kernel.source, *job.link_inputs]:
        h.update(f"{path.name}\0{_file_hash(str(path))}\n".encode())
    return h.hexdigest()


def _build_folder(job: Job) -> str:
    return str(job.kernel.gen_dir.parent.parent)


def _parse_deps(text: str) -> list[str]:
    body = text.replace("\\\n", " ").split(":", 1)[1] if ":" in text else ""
    return [p.replace("\\ ", " ") for p in re.split(r"(?<!\\)\s+", body) if p]


def _lookup(entry: Path, folder: str) -> dict | None:
    """A cache entry whose recorded dependencies all still hash the same; files of the build
    folder are recorded relative to it, so a moved or second build folder still hits."""
    try:
        meta = json.loads((entry / "result.json").read_text())
    except (OSError, ValueError):
        return None
    for path, digest in meta["deps"]:
        if _file_hash(path.replace("@BUILD@/", folder + os.sep, 1)) != digest:
            return None
    return meta


def _display_path(path: str, cwd: Path) -> str:
    norm = os.path.normpath(path)
    try:
        return os.path.relpath(norm, cwd) if Path(norm).is_relative_to(cwd) else norm
    except ValueError:
        return norm


def _diagnostics(output: str, cwd: Path) -> tuple[str, list[Diagnostic]]:
    """Normalise every path (jit/x/../../kernels/y.cpp -> kernels/y.cpp) and parse diagnostics."""
    paths = {m.group("path") for m in _DIAG.finditer(output)}
    paths |= set(re.findall(r"(?:In file included from|from) ([^:\s]+):\d+", output))
    for p in sorted(paths, key=len, reverse=True):
        output = output.replace(p + ":", _display_path(p, cwd) + ":")
    diags = [Diagnostic(m.group("path"), int(m.group("line")), int(m.group("col") or 0), m.group("sev"),
                        m.group("msg")) for m in _DIAG.finditer(output)]
    return output, diags


def _allowed(diag: Diagnostic, tree_root: Path, cwd: Path) -> bool:
    """A known GCC-12-vs-GCC-15 difference inside TT-Metal's own headers (docs/reference/toolchain.md §4 #11)."""
    path = Path(diag.path if os.path.isabs(diag.path) else cwd / diag.path).resolve()
    if not path.is_relative_to(tree_root):
        return False
    try:
        line = path.read_text(errors="replace").splitlines()[diag.line - 1]
    except (OSError, IndexError):
        return False
    for rule in toolchain_config()["host_check"]["allow"]:
        if diag.message.strip() == rule["message"] and re.search(rule["line_pattern"], line):
            return True
    return False


def _from_entry(job: Job, entry: Path, cached: bool, seconds: float, output: str,
                diags: tuple[Diagnostic, ...], allowed: int) -> JobResult:
    """A successful result whose object (and ELF, when linked) live in the cache entry."""
    return JobResult(job, True, cached, seconds, output, diags, allowed,
                     entry / "out.o" if job.mode == "sfpi" else None,
                     entry / "out.elf" if (entry / "out.elf").is_file() else None)


def _run_job(job: Job, cache: Path, force: bool, tree_root: Path, cwd: Path) -> JobResult:
    key = _job_key(job)
    entry = cache / key[:2] / key
    if not force:
        meta = _lookup(entry, _build_folder(job))
        if meta is not None:
            return _from_entry(job, entry, True, 0.0, meta["output"], (), meta["allowed"])
    work = Path(tempfile.mkdtemp(prefix=f".{key[:12]}.", dir=writable_dir(cache / key[:2])))
    try:
        start = time.perf_counter()
        obj, elf, dep = work / "out.o", work / "out.elf", work / "out.d"
        argv = [a.replace("@OBJ@", str(obj)) for a in job.argv]
        proc = subprocess.run([*argv[:-1], "-MD", "-MF", str(dep), argv[-1]], capture_output=True, text=True,
                              cwd=job.kernel.gen_dir)
        output, diags = _diagnostics(proc.stdout + proc.stderr, cwd)
        errors = [d for d in diags if d.severity in ("error", "fatal error")]
        allowed = sum(1 for d in errors if _allowed(d, tree_root, cwd))
        # Every error line must be a located diagnostic that is allow-listed ("cc1plus: error:"
        # and the like are never benign).
        error_lines = sum(1 for ln in output.splitlines() if re.search(r"\b(fatal )?error: ", ln))
        ok = proc.returncode == 0 or (job.mode == "check" and errors and allowed == len(errors) == error_lines)
        if ok and job.link_argv is not None:
            link = [a.replace("@OBJ@", str(obj)).replace("@ELF@", str(elf)) for a in job.link_argv]
            lproc = subprocess.run(link, capture_output=True, text=True, cwd=job.kernel.gen_dir)
            loutput, ldiags = _diagnostics(lproc.stdout + lproc.stderr, cwd)
            output, diags, ok = output + loutput, diags + ldiags, lproc.returncode == 0
        seconds = time.perf_counter() - start
        if not ok:
            return JobResult(job, False, False, seconds, output, tuple(diags), allowed)
        deps = _parse_deps(dep.read_text()) if dep.is_file() else []
        deps = [os.path.normpath(os.path.join(job.kernel.gen_dir, p)) for p in deps]
        result = JobResult(job, True, False, seconds, output, tuple(diags), allowed)
        if not deps:                         # no dependency list (the compiler stopped early): nothing
            return result                    # to validate a cache entry against, so keep none
        prefix = _build_folder(job) + os.sep
        meta = {"output": output, "allowed": allowed,
                "deps": [[("@BUILD@/" + p[len(prefix):]) if p.startswith(prefix) else p, _file_hash(p)]
                         for p in deps]}
        (work / "result.json").write_text(json.dumps(meta))
        dep.unlink(missing_ok=True)
        try:
            os.rename(work, entry)
        except OSError:                      # another kgen stored this entry first: theirs is
            pass                             # equivalent (same key, same dependencies)
        return _from_entry(job, entry, False, seconds, output, tuple(diags), allowed)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_jobs(jobs: list[Job], tree: HeaderTree, *, parallel: int = 1, force: bool = False,
             cache: Path | None = None, cwd: Path | None = None) -> list[JobResult]:
    """Run every job (in parallel threads, each one compiler process) and return results in order."""
    cache = cache or cache_root() / "compile"
    cwd = (cwd or Path.cwd()).resolve()
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return list(pool.map(lambda j: _run_job(j, cache, force, tree.root, cwd), jobs))


def repro_command(job: Job) -> str:
    """One line that reruns this compile by hand (an SFPI object goes to the current folder)."""
    argv = [a.replace("@OBJ@", f"{job.kernel.name}_{job.role}.o") for a in job.argv]
    return f"cd {shlex.quote(str(job.kernel.gen_dir))} && " + " ".join(shlex.quote(a) for a in argv)


def failure_text(result: JobResult, spec: str | None, max_lines: int = 40) -> str:
    job = result.job
    what = "type-check" if job.mode == "check" else "compile"
    origin = f", generated from {spec}" if spec else ""
    lines = [f"{what} of kernel '{job.kernel.name}' for {job.role.upper() if job.role in ('brisc', 'ncrisc') else 'TRISC ' + job.role}"
             f" ({job.arch}) failed{origin}:"]
    body = [ln for ln in result.output.splitlines() if ln.strip()]
    lines += ["  " + ln for ln in body[:max_lines]]
    if len(body) > max_lines:
        lines.append(f"  ... {len(body) - max_lines} more lines")
    lines.append(f"repro: {repro_command(job)}")
    return "\n".join(lines)


@dataclass(frozen=True)
class CompileReport:
    mode: Mode
    results: tuple[JobResult, ...]
    seconds: float
    elfs: tuple[tuple[str, ElfSizes], ...] = ()     # (kernel, sizes) of every linked ELF

    @property
    def elf_problems(self) -> list[str]:
        return [f"kernel '{k}': {p}" for k, s in self.elfs for p in s.problems()]

    @property
    def elf_table(self) -> str:
        return format_sizes(list(self.elfs)) if self.elfs else ""

    @property
    def failures(self) -> list[JobResult]:
        return [r for r in self.results if not r.ok]

    @property
    def compiled(self) -> int:
        return sum(1 for r in self.results if not r.cached)


def compile_folder(folder: Path, tc: Toolchain, mode: Mode, *, parallel: int = 1, force: bool = False,
                   cache: Path | None = None, log: Callable[[str], None] = lambda s: None) -> CompileReport:
    """Compile or type-check every kernel of a build folder for every processor it runs on."""
    start = time.perf_counter()
    # The compilers run inside jit/<kernel>/, so every path on their command lines is absolute.
    jobs = plan_jobs(Path(os.path.abspath(folder)), tc, mode)
    assert tc.headers is not None
    results = run_jobs(jobs, tc.headers, parallel=parallel, force=force, cache=cache)
    elfs = []
    if mode == "sfpi":
        _copy_outputs(folder, results)
        arch = load_arch(results[0].job.arch) if results else None
        for r in results:
            if r.ok and r.elf_path is not None and arch is not None:
                elf = role_config(r.job.role)["elf"]
                elfs.append((r.job.kernel.name, elf_sizes(folder / "elf" / r.job.kernel.name / f"{elf}.elf", elf, arch)))
    return CompileReport(mode, tuple(results), time.perf_counter() - start, tuple(elfs))


def write_compile_report(folder: Path, tc: Toolchain, report: CompileReport) -> Path:
    """compile.json beside the manifest: how each kernel was built, and ELF sizes when linked."""
    assert tc.headers is not None
    data = {
        "mode": report.mode,
        "compiler": tc.sfpi.version if report.mode == "sfpi" and tc.sfpi else
                    (f"{tc.host.cxx} {tc.host.version}" if tc.host else None),
        "headers": {"root": str(tc.headers.root), "version": tc.headers.version},
        "seconds": round(report.seconds, 3),
        "builds": [{"kernel": r.job.kernel.name, "role": r.job.role, "ok": r.ok, "cached": r.cached,
                    "seconds": round(r.seconds, 3), "allow_listed_diagnostics": r.allowed}
                   for r in report.results],
        "elfs": [{"kernel": k, "elf": s.processor, "text": s.text, "data": s.data, "bss": s.bss,
                  "text_limit": s.text_limit, "local_limit": s.local_limit, "fits": s.fits,
                  "symbols": [{"name": n, "address": a, "size": z} for n, a, z in s.symbols]}
                 for k, s in report.elfs],
    }
    path = folder / "compile.json"
    fd, tmp = tempfile.mkstemp(prefix=".compile.json.", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def _atomic_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", dir=dst.parent)
    os.close(fd)
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o644)                     # mkstemp makes 0600; the build folder is world-readable
    os.replace(tmp, dst)


def _copy_outputs(folder: Path, results: list[JobResult]) -> None:
    """Objects to obj/<kernel>/<role>.o and ELFs to elf/<kernel>/<elf>.elf inside the build folder."""
    for r in results:
        if r.object_path is not None and r.object_path.is_file():
            _atomic_copy(r.object_path, folder / "obj" / r.job.kernel.name / f"{r.job.role}.o")
        if r.elf_path is not None:
            elf = role_config(r.job.role)["elf"]
            _atomic_copy(r.elf_path, folder / "elf" / r.job.kernel.name / f"{elf}.elf")
