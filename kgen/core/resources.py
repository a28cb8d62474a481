"""Locate kgen's data folders (the repository's configs/ and templates/, or their copies in the wheel),
read configs/ through one loader, and resolve the user's paths and the cache."""

from __future__ import annotations

import os
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent      # kgen/ (this module is kgen/core/resources.py)


@cache
def data_dir(name: str) -> Path:
    """`configs` or `templates`: the top-level folder of a source checkout, else the wheel's copy."""
    for candidate in (_PACKAGE.parent / name, _PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kgen installation is missing its {name}/ folder")


@cache
def config_table(relative: str) -> dict[str, Any]:
    """configs/<relative> (a TOML fact table, e.g. "arch/blackhole.toml"), parsed once per process.
    Every reader of configs/ comes through here; the value is shared, so callers must not mutate it."""
    with open(data_dir("configs") / relative, "rb") as f:
        return tomllib.load(f)


def config_files(folder: str, pattern: str) -> list[Path]:
    """The files of configs/<folder> matching pattern (e.g. the compute presets), in name order."""
    return sorted((data_dir("configs") / folder).glob(pattern))


def user_path(text: str | os.PathLike[str]) -> Path:
    """A path the user typed, made absolute against the folder kgen was started in. Every path
    from a flag or an environment variable goes through here once, so that nothing downstream
    (a compiler run in another folder, a cache key) ever sees a relative path."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(text))))


def env_path(name: str) -> Path | None:
    """The folder an environment variable names (absolute), or None when it is unset or empty."""
    value = os.environ.get(name)
    return user_path(value) if value else None


def cache_root() -> Path:
    """kgen's cache folder: $KGEN_CACHE_DIR, else ~/.cache/kgen (templates, headers, builds).
    Always absolute; a cache that can never be a folder is the user's error (exit 2)."""
    from kgen.core.errors import KgenError

    root = env_path("KGEN_CACHE_DIR")
    source = "KGEN_CACHE_DIR"
    if root is None:
        home = os.environ.get("HOME")
        if home is not None and not os.path.isabs(home):
            # HOME='' would put the cache at /.cache/kgen (or under the current folder).
            raise KgenError(f"HOME is {home!r}, not an absolute folder, so kgen has no cache folder; "
                            f"set HOME, or set KGEN_CACHE_DIR to a folder kgen may write to")
        root, source = Path(home or Path.home()) / ".cache" / "kgen", "HOME"
    for parent in (root, *root.parents):
        if parent.exists():
            if not parent.is_dir():
                raise KgenError(f"kgen's cache folder {root} cannot be created: {parent} is not a folder "
                                f"(from {source}); set KGEN_CACHE_DIR to a folder kgen may write to")
            break
    return root


def usable_dir(path: Path, label: str, remedy: str, error: type[Exception] | None = None) -> Path:
    """Create the folder kgen is about to write into, or raise `error` (a KgenError: exit 2) in one
    sentence: `label` names the folder for the user, `remedy` says what to do instead."""
    from kgen.core.errors import KgenError

    error = error or KgenError
    if _in_cache(path):
        # kgen chose this folder (e.g. the builds of `kgen emulate`), so a flag of the caller's
        # command is no remedy: the cache location is.
        label, remedy = "kgen's cache folder", "set KGEN_CACHE_DIR to a folder you can write to"
    if path.exists() and not path.is_dir():
        raise error(f"{label} {path} exists and is not a folder; {remedy}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"cannot create {label} {path}: {exc.strerror or exc}; {remedy}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise error(f"{label} {path} is not writable; {remedy}")
    return path


def _in_cache(path: Path) -> bool:
    from kgen.core.errors import KgenError

    try:
        root = cache_root()
    except KgenError:
        return False
    return path == root or root in path.parents


def output_file(flag: str, path: Path) -> Path:
    """A file the user asked kgen to write (`--html FILE`, `-o best.kspec`): checked before any work,
    so a bad path is an exit-2 error up front, not a traceback at the end."""
    from kgen.core.errors import SpecError

    if path.is_dir():
        raise SpecError(f"{flag} {path} is a folder", hint="pass a file path")
    if not path.parent.is_dir():
        raise SpecError(f"{flag} {path}: the folder {path.parent} does not exist", hint="create it first")
    if not os.access(path.parent, os.W_OK):
        raise SpecError(f"{flag} {path}: cannot write into {path.parent}", hint="pass a path in a folder you can write to")
    return path


def write_whole(flag: str, path: Path, text: str) -> None:
    """Write under a temporary name in the same folder, then rename: never half a file on disk."""
    from kgen.core.errors import SpecError

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SpecError(f"{flag} {path}: cannot write it: {exc.strerror or exc}") from None


def writable_dir(path: Path) -> Path:
    """Create a folder of kgen's cache, or say clearly (exit 2) that the cache is unusable."""
    return usable_dir(path, "kgen's cache folder", "set KGEN_CACHE_DIR to a writable folder")
