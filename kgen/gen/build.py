"""`kgen build`: the stages' rendered files (kgen/gen/pipeline.py), written atomically to
<root>/<kernel-id>/.

Everything is rendered in memory first; the files then go into a temporary folder beside the
target, which is renamed into place. An error at any point leaves no half-written folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kgen.core.errors import KgenError
from kgen.core.resources import usable_dir
from kgen.gen.pipeline import Artifacts, run
from kgen.gen.render import SourceFile
from kgen.gen.spec import MatmulSpec

DEFAULT_ROOT = "build"


class OutputError(KgenError):
    """The output folder cannot be used (a bad -o, a file in the way, no permission)."""


@dataclass(frozen=True)
class BuildResult:
    kernel_id: str
    path: Path
    files: tuple[str, ...]        # relative paths, in write order
    manifest: dict


def write_build(root: Path, kid: str, files: tuple[SourceFile, ...]) -> Path:
    """Write files into root/kid atomically (temporary sibling folder, then rename)."""
    root = usable_dir(root, "output folder", "pass -o a folder you can write to", OutputError)
    target = root / kid
    if _same_content(target, files):
        # An identical folder is this build: leave it in place (a concurrent build of the same
        # spec may be compiling in it; compile outputs survive).
        return target
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{kid}.", suffix=".tmp", dir=root))
    except OSError as exc:
        raise OutputError(f"cannot write into {root}: {exc.strerror or exc}") from None
    try:
        for f in files:
            path = tmp / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f.text, encoding="utf-8", newline="\n")
        os.chmod(tmp, 0o755)
        if target.exists():
            # Same id, so the same kernel, but other bytes (comments, the variant's name, an edit):
            # swap the folders so readers never see a partial one.
            old = Path(tempfile.mkdtemp(prefix=f".{kid}.", suffix=".old", dir=root))
            os.rename(target, old / "x")
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write the build into {root}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _same_content(target: Path, files: tuple[SourceFile, ...]) -> bool:
    try:
        return target.is_dir() and all((target / f.path).read_bytes() == f.text.encode() for f in files)
    except OSError:
        return False


def write_artifacts(artifacts: Artifacts, root: Path | str = DEFAULT_ROOT) -> BuildResult:
    """Write the rendered stage of `artifacts` into root/<kernel id>."""
    r = artifacts.rendered
    path = write_build(Path(root), r.kernel_id, r.files)
    return BuildResult(r.kernel_id, path, tuple(f.path for f in r.files), r.manifest)


def build(spec: MatmulSpec, root: Path | str = DEFAULT_ROOT, variants: Mapping[str, str] | None = None) -> BuildResult:
    return write_artifacts(run(spec, variants=variants), root)
