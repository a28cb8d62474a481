"""Locate kgen's data folders: the repository's configs/ and templates/, or their copies in the wheel."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """`configs` or `templates`: the top-level folder of a source checkout, else the wheel's copy."""
    for candidate in (_PACKAGE.parent / name, _PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kgen installation is missing its {name}/ folder")


def cache_root() -> Path:
    """kgen's cache folder: $KGEN_CACHE_DIR, else ~/.cache/kgen (templates, headers, builds)."""
    return Path(os.environ.get("KGEN_CACHE_DIR") or Path.home() / ".cache" / "kgen")


def writable_dir(path: Path) -> Path:
    """Create a folder of kgen's cache, or say clearly (exit 2) that the cache is unusable."""
    from kgen.errors import KgenError

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KgenError(f"cannot use kgen's cache folder {path}: {exc.strerror or exc}; "
                        f"set KGEN_CACHE_DIR to a writable folder") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise KgenError(f"kgen's cache folder {path} is not writable; set KGEN_CACHE_DIR to a writable folder")
    return path
