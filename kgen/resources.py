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
