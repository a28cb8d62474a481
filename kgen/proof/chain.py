"""The steps after `rendered`: built -> typechecked -> emulated -> portchecked, one ordered table
and one loop, driven as kgen/gen/pipeline.run drives the stages before them.

`kgen build`, `emulate`, `port-check`, `fuzz`, `tune --verify` and `ab --emulate` each make one
call to `run_chain`. Each step returns a `Step`: ok (with what ran), skipped (with the reason) or
failed (with the detail); a failed step stops the chain.

The one policy for a missing tool (TT-Metal headers, the host checker, a host g++): the step that
needs it is *skipped*, with the missing piece and how to get it as its reason, and the chain's
verdict is then *incomplete*, never passed. Every caller prints `ChainResult.last_line` (or the
reasons) as its last line and exits with `ChainResult.exit_code`: 0 passed, 1 failed,
EXIT_INCOMPLETE when a step it asked for could not run. A step the caller did not ask for (`skip`,
e.g. `kgen build --no-compile`) is not run and not reported.

A tool the user named (--headers, --sfpi, --firmware, $KGEN_SFPI_ROOT) that holds nothing usable
is an error (exit 2), not a skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kgen.core.errors import EXIT_INCOMPLETE, Incomplete, KgenError  # noqa: F401 (re-exported)
from kgen.gen.pipeline import Artifacts

Status = Literal["ok", "skipped", "failed"]


@dataclass(frozen=True)
class Step:
    """What one step did: ok (`detail` says what ran), skipped (`detail` is the reason) or failed
    (`detail` is what failed). `value` is the step's product (BuildResult, CompileReport,
    Emulation, PortCheck) when it ran."""

    name: str
    status: Status
    detail: str
    value: Any = field(default=None, compare=False, repr=False)

    @staticmethod
    def ok(name: str, detail: str, value: Any = None) -> Step:
        return Step(name, "ok", detail, value)

    @staticmethod
    def skipped(name: str, reason: str) -> Step:
        return Step(name, "skipped", reason)

    @staticmethod
    def failed(name: str, detail: str, value: Any = None) -> Step:
        return Step(name, "failed", detail, value)


@dataclass(frozen=True)
class ChainOptions:
    """How the steps run. `root`: where the build folder goes (None: kgen's cache of builds).
    `compile`: "check" type-checks against the real headers; "auto" compiles with SFPI where it
    is found and type-checks otherwise (`kgen build`)."""

    root: Path | None = None
    compile: Literal["check", "auto"] = "check"
    sfpi: str | None = None
    headers: str | None = None
    firmware: str | None = None
    force: bool = False
    compile_report: bool = False          # write the compile report into the build folder
    seed: int = 0
    numerics: str = "exact"
    schedules: int = 0
    trace: Path | None = None
    reference: Path | None = None         # port-check's reference compute kernel
    parallel: int = 1
    progress: Callable[[str], None] = field(default=lambda phase: None, compare=False)


@dataclass(frozen=True)
class ChainResult:
    artifacts: Artifacts
    steps: tuple[Step, ...]

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    def value(self, name: str) -> Any:
        s = self.step(name)
        return None if s is None else s.value

    @property
    def verdict(self) -> Literal["passed", "failed", "incomplete"]:
        if any(s.status == "failed" for s in self.steps):
            return "failed"
        return "incomplete" if any(s.status == "skipped" for s in self.steps) else "passed"

    @property
    def exit_code(self) -> int:
        return {"passed": 0, "failed": 1, "incomplete": EXIT_INCOMPLETE}[self.verdict]

    @property
    def skipped(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.status == "skipped")

    def last_line(self, command: str) -> str:
        """The caller's last line: what passed, or what failed, or what could not run and why."""
        if self.verdict == "failed":
            bad = next(s for s in self.steps if s.status == "failed")
            return f"{command}: FAILED at {STEP_WORDS[bad.name]}"
        ran = ", ".join(STEP_WORDS[s.name] for s in self.steps if s.status == "ok")
        if self.verdict == "passed":
            return f"{command}: passed ({ran})"
        why = "; ".join(f"not {STEP_WORDS[s.name]}: {s.detail}" for s in self.skipped)
        return f"{command}: INCOMPLETE ({ran or 'nothing'} ran); {why}"


    def require_complete(self, command: str) -> ChainResult:
        """This result, or Incomplete (exit EXIT_INCOMPLETE) when a step could not run: for callers
        that report a failed step themselves but have no line of their own for a missing tool."""
        if self.verdict == "incomplete":
            raise Incomplete(self.last_line(command) + " (kgen doctor)")
        return self


STEP_WORDS = {"built": "built", "typechecked": "type-checked", "emulated": "emulated", "portchecked": "port-checked"}


@dataclass(frozen=True)
class _State:
    artifacts: Artifacts
    options: ChainOptions
    done: dict[str, Step]


# ----------------------------------------------------------------------------------------------
# the steps
# ----------------------------------------------------------------------------------------------

def _built(s: _State) -> Step:
    from kgen.core.resources import cache_root
    from kgen.gen.build import write_artifacts

    root = s.options.root if s.options.root is not None else cache_root() / "builds"
    result = write_artifacts(s.artifacts, root)
    return Step.ok("built", str(result.path), result)


def check_tool_folders(sfpi: str | None, headers: str | None, firmware: str | None) -> None:
    """A --sfpi, --headers or --firmware that is no folder: a clear error (exit 2)."""
    from kgen.core.errors import SpecError

    for flag, value in (("sfpi", sfpi), ("headers", headers), ("firmware", firmware)):
        if value is not None and not os.path.isdir(value):
            raise SpecError(f"--{flag} {value}: no such folder", hint=f"pass the folder that holds the {flag}")


def toolchain(options: ChainOptions):
    """The toolchain the options name; a place the user named that holds nothing usable is an
    error (exit 2), not a quiet fallback to something else."""
    from kgen.toolchain.compile import ToolchainMissing
    from kgen.toolchain.discovery import discover

    check_tool_folders(options.sfpi, options.headers, options.firmware)
    tc = discover(options.sfpi, options.headers, options.firmware)
    if options.headers and tc.headers is None:
        raise ToolchainMissing(tc.note("headers"))      # the note names `--headers DIR` already
    if (options.sfpi or os.environ.get("KGEN_SFPI_ROOT")) and tc.sfpi is None and options.compile == "auto":
        raise ToolchainMissing(f"no SFPI compiler where you pointed: {tc.note('sfpi')}")
    if options.firmware and tc.firmware is None:
        raise ToolchainMissing(f"--firmware {options.firmware}: {tc.note('firmware')}")
    return tc


def missing_for_typecheck(tc, mode: str) -> str | None:
    """Why the kernels cannot be type-checked (or compiled) here, or None."""
    if tc.headers is None:
        return tc.note("headers")
    if mode == "check" and tc.host is None:
        return tc.note("host checker")
    return None


def typecheck_folder(folder: Path, options: ChainOptions) -> Step:
    """The `typechecked` step on a build folder. Its value, when it ran: (toolchain, mode, report)."""
    from kgen.toolchain.compile import compile_folder, failure_text, write_compile_report

    tc = toolchain(options)
    mode = "sfpi" if options.compile == "auto" and tc.sfpi is not None else "check"
    missing = missing_for_typecheck(tc, mode)
    if missing is not None:
        return Step.skipped("typechecked", missing)
    options.progress("type-checking the kernels" if mode == "check" else "compiling the kernels")
    report = compile_folder(folder, tc, mode, parallel=options.parallel, force=options.force)
    if options.compile_report:
        write_compile_report(folder, tc, report)
    total, failed = len(report.results), len(report.failures)
    if report.failures:
        detail = "\n".join(failure_text(r, None) for r in report.failures)
        return Step.failed("typechecked", f"{failed} of {total} kernel builds fail:\n{detail}", (tc, mode, report))
    if report.elf_problems:
        return Step.failed("typechecked", "\n".join(report.elf_problems), (tc, mode, report))
    what = "type-checked" if mode == "check" else "compiled"
    return Step.ok("typechecked", f"{total} kernel builds {what}", (tc, mode, report))


def _typechecked(s: _State) -> Step:
    return typecheck_folder(s.done["built"].value.path, s.options)


def missing_for_emulation() -> str | None:
    from kgen.proof.emulate import find_host_compiler

    if find_host_compiler() is None:
        return ("no host C++17 compiler for the emulator: install g++ (Debian: apt-get install g++) "
                "or point KGEN_HOST_CXX at one")
    return None


def _emulated(s: _State) -> Step:
    from kgen.proof.emulate import emulate_folder, format_report

    missing = missing_for_emulation()
    if missing is not None:
        return Step.skipped("emulated", missing)
    o = s.options
    e = emulate_folder(s.done["built"].value.path, s.artifacts.plan, seed=o.seed, numerics=o.numerics,
                       schedules=o.schedules, trace=o.trace, parallel=o.parallel, progress=o.progress)
    if not e.ok:
        return Step.failed("emulated", format_report(e, per_processor=False), e)
    word = "bit-exact" if e.exact_match else "within the fast-mode tolerance"
    return Step.ok("emulated", f"{e.numerics} numerics, {word}; {e.float64.line()}", e)


def _portchecked(s: _State) -> Step:
    from kgen.proof.portcheck import format_port_check, port_check
    from kgen.toolchain.headers import find_headers

    missing = missing_for_emulation()
    if missing is None and s.options.reference is None:
        tree, note = find_headers(s.options.headers)
        if tree is None:
            missing = f"no TT-Metal headers, so no TT-Metal kernels to compare with ({note})"
    if missing is not None:
        return Step.skipped("portchecked", missing)
    o = s.options
    ours = s.done.get("emulated")
    pc = port_check(s.done["built"].value.path, s.artifacts.plan, reference=o.reference, seed=o.seed,
                    numerics=o.numerics, parallel=o.parallel, progress=o.progress,
                    ours=ours.value if ours is not None and ours.status == "ok" and o.schedules == 0 else None)
    if not pc.passed:
        return Step.failed("portchecked", format_port_check(pc), pc)
    whole = "TT-Metal's compute kernel" + (" and whole program" if pc.program is not None else "")
    return Step.ok("portchecked", f"{whole} give kgen's bits", pc)


StepFn = Callable[[_State], Step]
STEPS: dict[str, StepFn] = {"built": _built, "typechecked": _typechecked, "emulated": _emulated,
                            "portchecked": _portchecked}


def run_chain(artifacts: Artifacts, until: str = "portchecked", *, skip: Collection[str] = (),
              options: ChainOptions = ChainOptions()) -> ChainResult:
    """Run the steps after `rendered` in order up to and including `until`, leaving out `skip`
    (`built` cannot be left out). Stops at the first failed step; a skipped one does not stop it."""
    names = list(STEPS)
    if until not in names:
        raise ValueError(f"until must be one of {names}, not {until!r}")
    unknown = set(skip) - set(names)
    if unknown or "built" in skip:
        raise ValueError(f"cannot skip {sorted(unknown | ({'built'} & set(skip)))}; the steps are {names}")
    if artifacts.rendered is None:
        raise ValueError("run_chain needs artifacts run until 'rendered'")
    state = _State(artifacts, options, {})
    for name in names[: names.index(until) + 1]:
        if name in skip:
            continue
        step = STEPS[name](state)
        state.done[name] = step
        if step.status == "failed":
            break
    return ChainResult(artifacts, tuple(state.done.values()))


