"""TT-Metal kernel headers: find a tree ($TT_METAL_HOME or kgen's cache) or fetch one from the ttnn wheel.

`kgen headers fetch` downloads the ttnn wheel with pip (or takes a local one), extracts only what
kernels need (configs/toolchain.toml [headers]), checks every extracted file against the wheel's
own RECORD hashes, writes kgen's stand-ins for the SFPI headers the wheel lacks, records the
version in `kgen-headers.json`, and renames the finished tree into place, so a tree in the cache
is always complete.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable

from kgen.core.errors import KgenError
from kgen.core.resources import cache_root, config_table, env_path, user_path, writable_dir

STAMP = "kgen-headers.json"
STUBS = "kgen-stubs"


class HeadersError(KgenError):
    """The headers cannot be fetched or used (no network, a bad wheel, a wrong version)."""


def toolchain_config() -> dict:
    """configs/toolchain.toml: the JIT flags, the processor roles, the wheel extraction (read-only)."""
    return config_table("toolchain.toml")


@dataclass(frozen=True)
class HeaderTree:
    root: Path              # holds tt_metal/, ttnn/cpp/ (and runtime/hw/ when present)
    version: str            # TT-Metal version, "unknown" when the tree does not say
    origin: str             # how it was found: "--headers", "$TT_METAL_HOME", "kgen cache"

    @property
    def tt_metal(self) -> Path:
        return self.root / "tt_metal"

    @property
    def runtime_hw(self) -> Path | None:
        path = self.root / "runtime" / "hw"
        return path if path.is_dir() else None

    @property
    def reference_kernel(self) -> Path:
        return self.root / toolchain_config()["headers"]["reference_kernel"]


def default_version() -> str:
    return toolchain_config()["headers"]["version"]


def cache_dir(version: str | None = None) -> Path:
    return cache_root() / "headers" / (version or default_version())


def missing_files(root: Path) -> list[str]:
    """Required files (configs/toolchain.toml) that the tree at root lacks."""
    return [rel for rel in toolchain_config()["headers"]["required"] if not (root / rel).is_file()]


def _version_of(root: Path) -> str:
    try:
        return json.loads((root / STAMP).read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "unknown"


def find_headers(explicit: str | os.PathLike | None = None) -> tuple[HeaderTree | None, str]:
    """The header tree to use and a one-line account of the search: an explicit path (flag),
    else $TT_METAL_HOME, then kgen's cache. A candidate missing required files is passed over."""
    candidates: list[tuple[Path, str]] = []
    if explicit:                          # a path the user gave is the only candidate
        candidates.append((user_path(explicit), "--headers"))
    else:
        if tt_home := env_path("TT_METAL_HOME"):
            candidates.append((tt_home, "$TT_METAL_HOME"))
        candidates.append((cache_dir(), "kgen cache"))
    notes = []
    for root, origin in candidates:
        missing = missing_files(root)
        if not missing:
            return HeaderTree(root.resolve(), _version_of(root), origin), f"{origin}: {root}"
        notes.append(f"{origin} {root}: " + ("not found" if not root.exists() else f"lacks {missing[0]}"))
    return None, "; ".join(notes)


# ----------------------------------------------------------------------------------------------
# Fetch
# ----------------------------------------------------------------------------------------------

def _download_wheel(version: str, into: Path, log: Callable[[str], None]) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", f"ttnn=={version}", "--dest", str(into),
           "--disable-pip-version-check", "--quiet", *toolchain_config()["headers"]["pip_download"]]
    log(f"downloading ttnn {version} with pip (about 100 MB) ...")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(into.glob(f"ttnn-{version}-*.whl"))
    if proc.returncode != 0 or not wheels:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise HeadersError(
            f"pip could not download ttnn=={version}: {' / '.join(tail) or 'no wheel'}. "
            f"Offline, pass a wheel you have: kgen headers fetch --from-wheel PATH "
            f"(get one with: pip download ttnn=={version} "
            + " ".join(toolchain_config()["headers"]["pip_download"]) + ")")
    return wheels[0]


def _record_hashes(wheel: zipfile.ZipFile) -> dict[str, str]:
    """member -> sha256 hex, from the wheel's *.dist-info/RECORD (PEP 376/427)."""
    records = [n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        raise HeadersError("the wheel has no single .dist-info/RECORD; it is not a complete ttnn wheel")
    hashes = {}
    for line in wheel.read(records[0]).decode().splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256="):
            digest = base64.urlsafe_b64decode(parts[1][7:] + "=" * (-len(parts[1][7:]) % 4))
            hashes[parts[0]] = digest.hex()
    return hashes


def _selected(name: str) -> str | None:
    """Where a wheel member goes in the tree, or None when kgen does not keep it."""
    cfg = toolchain_config()["headers"]
    if name.endswith("/") or any(name.startswith(s) for s in cfg["skip"]):
        return None
    for prefix, dest in cfg["extract"]:
        if name.startswith(prefix):
            rel = dest + name[len(prefix):]
            parts = Path(rel).parts
            if ".." in parts or Path(rel).is_absolute():
                raise HeadersError(f"the wheel member {name!r} would land outside the header tree")
            return rel
    return None


def _wheel_version(path: Path) -> str:
    m = re.match(r"ttnn-([^-]+)-", path.name)
    if not m:
        raise HeadersError(f"{path} is not a ttnn wheel (expected a file named ttnn-<version>-...whl)")
    return m.group(1)


def _extract(wheel_path: Path, into: Path, log: Callable[[str], None]) -> dict:
    try:
        wheel = zipfile.ZipFile(wheel_path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise HeadersError(f"{wheel_path} is not a readable wheel: {exc}") from None
    with wheel:
        hashes = _record_hashes(wheel)
        digest = hashlib.sha256()
        count = size = 0
        library = toolchain_config()["headers"]["facts_library"]
        for info in wheel.infolist():
            if info.filename == library:
                _keep_facts(wheel, info, hashes, into, log)
                continue
            rel = _selected(info.filename)
            if rel is None:
                continue
            try:
                data = wheel.read(info)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                raise HeadersError(f"{wheel_path.name}: {info.filename} cannot be read ({exc}); the wheel "
                                   f"is corrupt. Download it again.") from None
            actual = hashlib.sha256(data).hexdigest()
            if hashes.get(info.filename) != actual:
                raise HeadersError(f"{wheel_path.name}: {info.filename} does not match the wheel's RECORD "
                                   f"hash; the wheel is corrupt or was altered. Download it again.")
            target = into / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except OSError as exc:
                raise HeadersError(f"cannot write {target}: {exc.strerror or exc}") from None
            digest.update(f"{rel}\0{actual}\n".encode())
            count += 1
            size += len(data)
    log(f"extracted {count} files ({size / 1e6:.1f} MB), each checked against the wheel's RECORD")
    return {"files": count, "bytes": size, "tree_sha256": digest.hexdigest()}


def _keep_facts(wheel: zipfile.ZipFile, info: zipfile.ZipInfo, hashes: dict[str, str], into: Path,
                log: Callable[[str], None]) -> None:
    """Cut the functions configs/toolchain.toml names out of the wheel's compiled library
    (kgen.toolchain.wheelfacts), after checking the library against the wheel's RECORD."""
    from kgen.toolchain.wheelfacts import FACTS, cut_functions, write_facts

    data = wheel.read(info)
    if hashes.get(info.filename) != hashlib.sha256(data).hexdigest():
        raise HeadersError(f"{info.filename} does not match the wheel's RECORD hash; the wheel is corrupt or "
                           f"was altered. Download it again.")
    cut = cut_functions(data, toolchain_config()["headers"]["facts_functions"])
    write_facts(cut, into / FACTS, info.filename)
    log(f"kept the machine code of {', '.join(cut) or 'no function'} from {info.filename}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_headers(version: str | None = None, from_wheel: str | os.PathLike | None = None,
                  log: Callable[[str], None] = lambda s: None, force: bool = False) -> HeaderTree:
    """Download (or take) the ttnn wheel, extract and verify the kernel headers into the cache.
    A complete tree of that version already in the cache is kept unless force is set."""
    if from_wheel is not None:
        wheel_path = Path(from_wheel)
        if not wheel_path.is_file():
            raise HeadersError(f"--from-wheel {wheel_path}: no such file")
        found = _wheel_version(wheel_path)
        if version is not None and version != found:
            raise HeadersError(f"--from-wheel {wheel_path.name} is ttnn {found}, but --version {version} was asked for")
        version = found
    version = version or default_version()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)", version):
        raise HeadersError(f"--version {version!r} is not a version number (e.g. {default_version()})")
    target = cache_dir(version)
    if not force and _complete(target, version, Path(from_wheel) if from_wheel is not None else None):
        log(f"TT-Metal {version} kernel headers already in {target} (--force fetches them again)")
        return HeaderTree(target.resolve(), version, "kgen cache")
    work = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".tmp", dir=writable_dir(target.parent)))
    try:
        tree = work / "tree"
        wheel_path = Path(from_wheel) if from_wheel is not None else _download_wheel(version, work, log)
        stats = _extract(wheel_path, tree, log)
        missing = missing_files(tree)
        if missing:
            raise HeadersError(f"{wheel_path.name} lacks files kernels need ({', '.join(missing[:3])}); "
                               f"kgen {version} expects a TT-Metal wheel with kernel sources")
        count = write_stubs(tree, tree / STUBS)
        log(f"wrote kgen's stand-in sfpi.h ({count} SFPI constants) and lltt.h")
        stamp = {"version": version, "wheel": wheel_path.name, "wheel_sha256": sha256_file(wheel_path),
                 **stats, "sfpi_constants": count}
        (tree / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        _replace(tree, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"TT-Metal {version} kernel headers ready in {target}")
    return HeaderTree(target.resolve(), version, "kgen cache")


def _complete(target: Path, version: str, wheel: Path | None) -> bool:
    """A finished tree of this version (from this very wheel, when one is given)."""
    try:
        stamp = json.loads((target / STAMP).read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("version") != version or missing_files(target):
        return False
    return wheel is None or stamp.get("wheel_sha256") == sha256_file(wheel)


def _replace(tree: Path, target: Path) -> None:
    """Rename a finished folder into target. Writers are serialised by a lock file beside it, so
    concurrent fetches never interleave their swaps; readers only ever see a complete folder or
    (for the instant between the two renames of a replacement) none."""
    with open(writable_dir(target.parent) / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.rename(target, old / "x")
        try:
            os.rename(tree, target)
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# Stand-ins for the SFPI headers (sfpi.h, lltt.h)
# ----------------------------------------------------------------------------------------------

# SFPI hardware constant names as the LLK spells them (docs/reference/toolchain.md §3.1 step 5).
_SFPI_NAME = re.compile(r"\b(SFP[A-Z0-9]+_(?:MOD[01]|IMM12|RND|ADDR_MODE)_[A-Z0-9_]+|SFPCONFIG_[A-Z0-9_]+|"
                        r"SFP_(?:LREG_COUNT|DESTREG_[A-Z]+|SRCSREG_[A-Z]+)|CREG_IDX_[A-Z0-9_]+)\b")
_SCAN_DIRS = ("tt_metal/hw/inc", "tt_metal/hw/ckernels/wormhole_b0", "tt_metal/hw/ckernels/blackhole",
              "tt_metal/hw/firmware/src/tt-1xx", "tt_metal/tt-llk/tt_llk_wormhole_b0",
              "tt_metal/tt-llk/tt_llk_blackhole", "tt_metal/tt-llk/common", "ttnn/cpp")
_SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".inl")
_DEFINED = re.compile(r"#\s*define\s+(\w+)|\bconst(?:expr)?\b[^;\n(]*?\b(\w+)\s*[={]")


def _sfpi_constants(root: Path) -> list[dict]:
    known = config_table("sfpi_constants.toml")["constants"]
    texts = []
    for d in _SCAN_DIRS:
        for dirpath, _, names in os.walk(root / d):
            texts.extend(Path(dirpath, n).read_text(errors="replace") for n in names if n.endswith(_SOURCE_SUFFIXES))
    text = "\n".join(texts)
    qualified = set(re.findall(r"sfpi::(\w+)", text))
    # A name the tree defines itself (a macro or a constant) is TT-Metal's, not SFPI's.
    self_defined = {a or b for a, b in _DEFINED.findall(text)}
    out = []
    for name in sorted(set(_SFPI_NAME.findall(text))):
        if name in self_defined and name not in qualified and name not in known:
            continue
        value = known.get(name, 0)
        wh, bh = (value if isinstance(value, list) else (value, None))
        out.append({"name": name, "wormhole": wh, "blackhole": bh})
    return out


def write_stubs(root: Path, into: Path) -> int:
    """Write sfpi.h, sfpi_constants.h and lltt.h stand-ins for the tree at root; returns the
    number of SFPI constants declared."""
    from kgen.gen.render import render_template

    constants = _sfpi_constants(root)
    into.mkdir(parents=True, exist_ok=True)
    (into / "sfpi.h").write_text(render_template("toolchain/sfpi.h.j2", constants=constants))
    (into / "sfpi_constants.h").write_text(render_template("toolchain/sfpi_constants.h.j2"))
    (into / "lltt.h").write_text(render_template("toolchain/lltt.h.j2"))
    return len(constants)


def stubs_for(tree: HeaderTree) -> Path:
    """The stand-in folder for a tree: written at fetch time for kgen's cache, else generated once
    into the cache, keyed by the tree's path."""
    own = tree.root / STUBS
    if (own / "sfpi.h").is_file():
        return own
    # Keyed by the tree's place and its pinned SFPI release, so a checkout of another version
    # gets its own constants.
    try:
        pinned = (tree.tt_metal / "sfpi-version").read_bytes()
    except OSError:
        pinned = b""
    key = hashlib.sha256(str(tree.root).encode() + b"\0" + pinned).hexdigest()[:16]
    path = cache_root() / "stubs" / key
    if not (path / "sfpi.h").is_file():
        tmp = Path(tempfile.mkdtemp(prefix=".stubs.", dir=writable_dir(cache_root() / "stubs")))
        try:
            write_stubs(tree.root, tmp)
            if not (path / "sfpi.h").is_file():     # a concurrent kgen may have finished first
                _replace(tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return path
