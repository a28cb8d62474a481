"""`kgen build`: spec -> plan -> IR -> rendered sources, written atomically to <root>/<kernel-id>/.

Everything is rendered in memory first; the files then go into a temporary folder beside the
target, which is renamed into place. An error at any point leaves no half-written folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kgen.errors import KgenError
from kgen.ir import format_program
from kgen.lower import lower
from kgen.plan import plan
from kgen.render import SourceFile, kernel_id, manifest, manifest_body, render_readme, render_sources
from kgen.report import plan_to_dict
from kgen.spec import MatmulSpec

DEFAULT_ROOT = "build"


class OutputError(KgenError):
    """The output folder cannot be used (a bad -o, a file in the way, no permission)."""


@dataclass(frozen=True)
class BuildResult:
    kernel_id: str
    path: Path
    files: tuple[str, ...]        # relative paths, in write order
    manifest: dict


def _json(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"


def render_build(spec: MatmulSpec, variants: dict[str, str] | None = None) -> tuple[str, tuple[SourceFile, ...], dict]:
    """Everything a build folder holds, rendered in memory: (kernel id, files, manifest)."""
    the_plan = plan(spec)
    program = lower(the_plan)
    sources = render_sources(program)
    body = manifest_body(program)
    kid = kernel_id(program, sources, body)
    data = manifest(body, kid)
    plan_json = plan_to_dict(the_plan, variants)
    plan_json["spec"] = None     # the folder is content-addressed: it must not depend on where the spec lives
    files = sources + (
        SourceFile("manifest.json", _json(data)),
        SourceFile("plan.json", _json(plan_json)),
        SourceFile("ir.txt", format_program(program)),
        SourceFile("README.md", render_readme(program, kid, data)),
    )
    return kid, files, data


def _prepare_root(root: Path) -> Path:
    if root.exists() and not root.is_dir():
        raise OutputError(f"output folder {root} exists and is not a folder; pass -o a folder path")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create output folder {root}: {exc.strerror or exc}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise OutputError(f"output folder {root} is not writable; pass -o a folder you can write to")
    return root


def write_build(root: Path, kid: str, files: tuple[SourceFile, ...]) -> Path:
    """Write files into root/kid atomically (temporary sibling folder, then rename)."""
    root = _prepare_root(root)
    target = root / kid
    if _same_content(target, files):
        # The id hashes every byte, so an identical folder is this build: leave it in place (a
        # concurrent build of the same spec may be compiling in it; compile outputs survive).
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
            # Same id, same content: swap the folders so readers never see a partial one.
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


def build(spec: MatmulSpec, root: Path | str = DEFAULT_ROOT, variants: dict[str, str] | None = None) -> BuildResult:
    kid, files, data = render_build(spec, variants)
    path = write_build(Path(root), kid, files)
    return BuildResult(kid, path, tuple(f.path for f in files), data)
