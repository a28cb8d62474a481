"""Discovery: what kgen can build with on this machine (`kgen doctor`).

SFPI (the only compiler that makes loadable Tensix ELFs), the TT-Metal kernel headers, the
runtime pieces a link needs (linker scripts, substitutes.o / noc.o, the weakened firmware ELFs),
and the host checker (Debian's bare-metal RISC-V g++ with the host libstdc++ headers and
picolibc) that type-checks kernels where SFPI is absent. Each missing piece comes with the one
command that gets it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kgen.toolchain.headers import HeaderTree, default_version, find_headers, toolchain_config
from kgen.core.resources import env_path, user_path


@dataclass(frozen=True)
class Sfpi:
    root: Path
    cxx: Path
    version: str             # first line of `g++ --version`


@dataclass(frozen=True)
class HostChecker:
    cxx: str
    version: str             # e.g. 12.2.0
    libstdcxx_include: Path
    libstdcxx_config: Path
    picolibc_include: Path


@dataclass(frozen=True)
class Toolchain:
    sfpi: Sfpi | None
    headers: HeaderTree | None
    host: HostChecker | None
    firmware: Path | None                # folder with <arch>/<elf>/<elf>_weakened.elf, or None
    notes: tuple[tuple[str, str], ...]   # (piece, what was found or how to get it)

    def note(self, piece: str) -> str:
        return dict(self.notes).get(piece, "")

    def link_dirs(self, arch_runtime_dir: str) -> tuple[Path, Path] | None:
        """(runtime/hw, firmware/<arch>) when everything a link needs is present."""
        hw = self.headers.runtime_hw if self.headers else None
        if self.sfpi is None or hw is None or self.firmware is None:
            return None
        fw = self.firmware / arch_runtime_dir
        return (hw, fw) if fw.is_dir() else None


def _run_version(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def find_sfpi(explicit: str | os.PathLike | None = None) -> tuple[Sfpi | None, str]:
    cfg = toolchain_config()["sfpi"]
    roots: list[tuple[Path, str]] = []
    if explicit:
        roots.append((user_path(explicit), "--sfpi"))
    else:
        if sfpi_root := env_path("KGEN_SFPI_ROOT"):
            roots.append((sfpi_root, "$KGEN_SFPI_ROOT"))
        if tt_home := env_path("TT_METAL_HOME"):
            roots.append((tt_home / "runtime" / "sfpi", "$TT_METAL_HOME/runtime/sfpi"))
        roots.append((Path("/opt/tenstorrent/sfpi"), "/opt/tenstorrent/sfpi"))
    for root, origin in roots:
        for rel in cfg["compilers"]:
            cxx = root / rel
            if cxx.is_file() and os.access(cxx, os.X_OK):
                version = _run_version([str(cxx), "--version"]) or "unknown version"
                return Sfpi(root.resolve(), cxx.resolve(), version), f"{origin}: {cxx}"
    where = ", ".join(str(r) for r, _ in roots)
    return None, (f"not found in {where}. SFPI {cfg['pinned_version']} (pinned by TT-Metal {default_version()}) "
                  f"ships only from GitHub: {sfpi_install_command()}")


def sfpi_install_command() -> str:
    cfg = toolchain_config()["sfpi"]
    return cfg["install"].format(version=cfg["pinned_version"])


def host_checker_install_command() -> str:
    return "apt-get install -y " + " ".join(toolchain_config()["host_check"]["apt_packages"])


def find_host_checker() -> tuple[HostChecker | None, str]:
    cfg = toolchain_config()["host_check"]
    apt = host_checker_install_command()
    cxx = shutil.which(cfg["compiler"])
    if cxx is None:
        return None, f"{cfg['compiler']} not found; get it with: {apt}"
    version = _run_version([cxx, "-dumpfullversion"])
    if version is None:
        return None, f"{cxx} does not run; reinstall it with: {apt}"
    major = version.split(".")[0]
    lib = Path(cfg["libstdcxx_include"].format(major=major))
    conf = Path(cfg["libstdcxx_config"].format(major=major))
    pico = Path(cfg["picolibc_include"])
    for path, what in ((lib, f"libstdc++-{major} headers"), (conf, f"libstdc++-{major} config headers"),
                       (pico, "picolibc headers")):
        if not path.is_dir():
            return None, f"{what} missing at {path}; get them with: {apt}"
    return HostChecker(cxx, version, lib, conf, pico), f"{cxx} {version} + libstdc++-{major} + picolibc"


def _firmware_archs(path: Path) -> list[str]:
    """Arch folders (runtime_dir names) holding every processor's weakened firmware ELF."""
    from kgen.core.arch import load_arch

    found = []
    for arch in ("wormhole_b0", "blackhole"):
        facts = load_arch(arch)
        rdir = path / facts.toolchain.runtime_dir
        if all((rdir / elf / f"{elf}_weakened.elf").is_file() for elf in facts.processors):
            found.append(facts.toolchain.runtime_dir)
    return found


def find_firmware(explicit: str | os.PathLike | None, headers: HeaderTree | None) -> tuple[Path | None, str]:
    """Weakened firmware ELFs, one folder per arch: <dir>/<wormhole|blackhole>/<elf>/<elf>_weakened.elf
    for elf in brisc, ncrisc, trisc0..2 (the layout of one TT-Metal firmware build per arch)."""
    candidates = []
    if explicit:
        candidates.append(user_path(explicit))
    elif fw_dir := env_path("KGEN_FIRMWARE_DIR"):
        candidates.append(fw_dir)
    if headers is not None and headers.runtime_hw is not None and not explicit:
        candidates.append(headers.runtime_hw / "firmware")
    for path in candidates:
        archs = _firmware_archs(path)
        if archs:
            return path.resolve(), f"{path} ({', '.join(archs)})"
    return None, ("no weakened firmware ELFs (<dir>/<wormhole|blackhole>/<proc>/<proc>_weakened.elf) under "
                  + (", ".join(map(str, candidates)) or "any known place")
                  + "; objects compile but do not link. Copy the firmware folders TT-Metal built for your card "
                  "into that layout and set KGEN_FIRMWARE_DIR")


@cache
def discover(sfpi: str | None = None, headers: str | None = None, firmware: str | None = None) -> Toolchain:
    """Find every piece; flags (the arguments) override the environment, which overrides defaults."""
    tree, tree_note = find_headers(headers)
    if tree is None:
        tree_note += f"; get them with: kgen headers fetch   (offline: kgen headers fetch --from-wheel PATH)"
    found_sfpi, sfpi_note = find_sfpi(sfpi)
    host, host_note = find_host_checker()
    fw, fw_note = find_firmware(firmware, tree)
    hw_note = (str(tree.runtime_hw) if tree is not None and tree.runtime_hw is not None
               else "no runtime/hw (linker scripts, substitutes.o, noc.o) in the header tree; "
                    "kgen headers fetch provides it")
    notes = (("sfpi", sfpi_note), ("headers", tree_note), ("runtime", hw_note), ("firmware", fw_note),
             ("host checker", host_note))
    return Toolchain(found_sfpi, tree, host, fw, notes)


def doctor_text(tc: Toolchain, width: int | None = None) -> str:
    """What was found, one piece a line (its note wrapped under itself), at `width` columns."""
    from kgen.core import terminal

    width = width or terminal.width()

    commands = (sfpi_install_command(), host_checker_install_command())

    def line(piece: str, ok: bool, optional: bool = False, more: str = "") -> list[str]:
        mark = "ok  " if ok else ("--  " if optional else "MISSING")
        label, note = f"  {mark:<8}{piece:<14}", tc.note(piece) + more
        # a note that ends with a shell command shows it on lines of its own that paste back whole
        command = next((c for c in commands if note.endswith(c) and len(label) + len(note) > width), None)
        if command is None:
            return terminal.wrap(note, width, label)
        return (terminal.wrap(note[:-len(command)].rstrip(), width, label)
                + terminal.command(command, width, " " * (len(label) + 2)))

    lines = ["kgen doctor: what this machine can build with", ""]
    lines += line("sfpi", tc.sfpi is not None, optional=True)
    lines += line("headers", tc.headers is not None,
                  more=f"  (TT-Metal {tc.headers.version})" if tc.headers is not None else "")
    lines += line("runtime", tc.headers is not None and tc.headers.runtime_hw is not None, optional=True)
    lines += line("firmware", tc.firmware is not None, optional=True)
    lines += line("host checker", tc.host is not None)
    lines.append("")
    lines += terminal.wrap("kgen build will: " + build_mode_text(tc), width, "  ", "    ")
    return "\n".join(lines) + "\n"


def build_mode_text(tc: Toolchain) -> str:
    if tc.sfpi is not None and tc.headers is not None:
        return "compile with SFPI" + (", link and report ELF sizes" if tc.firmware is not None
                                      else " (objects only: no firmware ELFs to link against)")
    if tc.host is not None and tc.headers is not None:
        return "type-check every kernel against the real headers (no SFPI: no ELFs)"
    return "render only (no headers or no compiler: run the commands above)"
