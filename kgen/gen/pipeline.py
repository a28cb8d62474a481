"""The stage driver: spec -> plan -> ir -> verified -> rendered, one ordered table and one loop
(after Triton's `compile()`).

Every command runs its stages through `run`: `kgen check` and `kgen ir` until `verified`, `kgen
build`, `emulate`, `port-check` and `fuzz` until `rendered`, and then write the folder
(kgen/gen/build.py) and compile it (the toolchain layer, kgen/toolchain/compile.py). The chain is written here
once.

- `until`: the last stage to run.
- `overrides`: a stage name -> a function of the artefacts so far that replaces the stage (a
  user-edited kernel, port-check's reference compute kernel). An overridden `ir` is still verified.
- `dump`: a folder (or `KGEN_DUMP=dir`) that receives every stage's artefact as it is made:
  spec.json, plan.json, ir.txt, verified.txt, rendered/ (the build folder's files).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgen.core.errors import KgenBug, KgenError
from kgen.gen.spec import MatmulSpec

if TYPE_CHECKING:  # stage modules are imported when their stage runs: `kgen check` stays quick
    from kgen.gen.ir import Program
    from kgen.gen.plan import Plan
    from kgen.gen.render import SourceFile


@dataclass(frozen=True)
class Rendered:
    """Everything a build folder holds, in memory."""

    kernel_id: str
    files: tuple[SourceFile, ...]
    manifest: dict


@dataclass(frozen=True)
class Artifacts:
    """What the stages have made so far; a stage not run yet is None."""

    spec: MatmulSpec
    plan: Plan | None = None
    ir: Program | None = None
    verified: Program | None = None
    rendered: Rendered | None = None
    variants: Mapping[str, str] | None = None      # the spec's variants, one line each, for plan.json


def _plan(a: Artifacts) -> Plan:
    from kgen.gen.plan import plan
    return plan(a.spec)


def _lower(a: Artifacts) -> Program:
    from kgen.gen.lower import lower
    return lower(a.plan)


def _verify(a: Artifacts) -> Program:
    from kgen.gen.verify import verify
    return verify(a.ir)


def _render(a: Artifacts) -> Rendered:
    from kgen.gen.plan_report import plan_to_dict
    from kgen.gen.render import render_folder
    plan_json = plan_to_dict(a.plan, dict(a.variants) if a.variants is not None else None)
    plan_json["spec"] = None     # the folder is content-addressed: it must not depend on where the spec lives
    kid, files, manifest = render_folder(a.verified, plan_json)
    return Rendered(kid, files, manifest)


Stage = Callable[[Artifacts], Any]
STAGES: dict[str, Stage] = {"plan": _plan, "ir": _lower, "verified": _verify, "rendered": _render}


class KernelSourceError(KgenError):
    """A replacement kernel source cannot be used."""


def with_compute_kernel(source: Path) -> Stage:
    """A `rendered` override: kgen's build with `source` (TT-Metal's reference kernel, or a kernel
    the user edited) as its compute kernel, with the same CT args, named args, defines and CB
    descriptors. Each TRISC thread's JIT file includes the source from where it lives, so that its
    own relative includes resolve."""
    from kgen.gen.render import TRISC_THREADS

    source = Path(source).resolve()
    if not source.is_file():
        raise KernelSourceError(f"{source}: no such kernel source")

    def rendered(a: Artifacts) -> Rendered:
        r = _render(a)
        # every compute kernel (a factory may bind one per group of cores, each with its own CT args)
        computes = [k["name"] for k in r.manifest["kernels"] if k["processor"] == "TRISC"]
        if not computes:
            raise KgenBug("the build has no compute kernel")
        threads = {f"jit/{c}/chlkc_{thread}.cpp" for c in computes for thread, _ in TRISC_THREADS}
        files = []
        for f in r.files:
            if f.path in threads:
                text = re.sub(r'#include "[^"]*kernels/[^"]+\.cpp"', f'#include "{source}"', f.text)
                if text == f.text:
                    raise KgenBug(f"{f.path} does not include a kernel source kgen can replace")
                f = replace(f, text=text)
            files.append(f)
        return Rendered(r.kernel_id, tuple(files), r.manifest)
    return rendered


class DumpError(KgenError):
    """KGEN_DUMP (or a dump folder) cannot be written."""


def dump_files(stage: str, value: Any) -> dict[str, str]:
    """The files a stage's artefact dumps as: relative path -> text."""
    if stage == "spec":
        data = asdict(replace(value, spans={}))
        data["spans"] = {k: str(v) for k, v in value.spans.items()}
        return {"spec.json": json.dumps(data, indent=2) + "\n"}
    if stage == "plan":
        from kgen.gen.plan_report import plan_to_dict
        return {"plan.json": json.dumps(plan_to_dict(value), indent=2) + "\n"}
    if stage in ("ir", "verified"):
        from kgen.gen.ir import format_program
        return {f"{stage}.txt": format_program(value)}
    return {f"rendered/{f.path}": f.text for f in value.files}


def dump_folder(dump: Path | str | None) -> Path | None:
    """The dump folder: `dump`, else $KGEN_DUMP, else None; made and checked before any stage."""
    if dump is None:
        dump = os.environ.get("KGEN_DUMP") or None
        what = "KGEN_DUMP"
    else:
        what = "the dump folder"
    if dump is None:
        return None
    from kgen.core.resources import usable_dir, user_path
    if not str(dump).strip():
        raise DumpError(f"{what} is {str(dump)!r}, an empty path; name a folder, or unset it")
    label = "the KGEN_DUMP folder" if what == "KGEN_DUMP" else what
    return usable_dir(user_path(str(dump)), label, "name a folder for the stages' artefacts", DumpError)


def _write_dump(folder: Path, stage: str, value: Any) -> None:
    for rel, text in dump_files(stage, value).items():
        path = folder / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8", newline="\n")
            os.replace(tmp, path)
        except OSError as exc:
            raise DumpError(f"cannot write the {stage} dump {path}: {exc.strerror or exc}") from None


def run(spec: MatmulSpec, until: str = "rendered", *, overrides: Mapping[str, Stage] | None = None,
        dump: Path | str | None = None, variants: Mapping[str, str] | None = None) -> Artifacts:
    """Run the stages in order up to and including `until`."""
    names = list(STAGES)
    if until not in names:
        raise ValueError(f"until must be one of {names}, not {until!r}")
    unknown = set(overrides or ()) - set(names)
    if unknown:
        raise ValueError(f"no stage named {sorted(unknown)}; the stages are {names}")
    folder = dump_folder(dump)
    if folder is not None:
        folder = folder / spec.name
        _write_dump(folder, "spec", spec)
    artifacts = Artifacts(spec, variants=variants)
    for name in names[: names.index(until) + 1]:
        stage = (overrides or {}).get(name, STAGES[name])
        try:
            value = stage(artifacts)
        except (KgenError, KgenBug) as exc:
            exc.stage, exc.artifacts = name, artifacts    # where the chain stopped (fuzz reports it)
            raise
        artifacts = replace(artifacts, **{name: value})
        if folder is not None:
            _write_dump(folder, name, getattr(artifacts, name))
    return artifacts
