"""The manifest format of a `kgen build` folder: its version, the loader, and how core ranges expand.

`kgen build` writes manifest.json (kgen.gen.render); the device loader (kgen.device.runtime), the
emulator, port-check and TT-Metal's readers on kgen's plan (kgen.proof) read it through here, so
the format has one owner and one version number. It lives in core, not device, because gen writes
it and device and proof read it: core is the layer all three import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from kgen.core.errors import KgenError

# 1: the first format; 2: compute_config.packer_l1_acc (the decision) renamed l1_acc_enabled.
FORMAT_VERSION = 2


class ManifestError(KgenError):
    """A build folder or manifest kgen cannot load."""


def load_manifest(folder: str | Path) -> tuple[Path, dict[str, Any]]:
    """The build folder (absolute) and its manifest, or a ManifestError saying why not."""
    folder = Path(folder)
    path = folder / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{folder} is not a kgen build folder: it has no manifest.json") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from None
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        raise ManifestError(f"{path}: manifest format_version {version!r}; this kgen reads version "
                            f"{FORMAT_VERSION} (rebuild the folder with `kgen build`)")
    return folder.resolve(), data


def cores_of(ranges: Iterable[Mapping[str, Sequence[int]]]) -> list[tuple[int, int]]:
    """Every logical (x, y) core of a manifest's core ranges (inclusive corners), row by row."""
    out: list[tuple[int, int]] = []
    for r in ranges:
        (x0, y0), (x1, y1) = r["start"], r["end"]
        out += [(x, y) for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)]
    return out
