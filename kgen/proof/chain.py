"""The steps after `rendered`: built -> typechecked -> emulated -> portchecked, one ordered table
and one loop, driven as kgen/gen/pipeline.run drives the stages before them.

`kgen build`, `emulate`, `port-check`, `fuzz`, `tune --verify` and `ab --emulate` each make one
call to `run_chain`. Each step returns a `Step`: ok (with what ran), skipped (with the reason) or
failed (with the detail); a failed step stops the chain.

A `Target` (the runtime the kernels are for: TT-Metal, the default, or an export target; the
registry is kgen/proof/targets.py) says what `built` writes for it and how each later step runs for
it: one loop runs every target's steps, under one policy.

The one policy for a missing tool (TT-Metal headers, the host checker, a host g++): each step
declares what it needs (`ChainStep.needs`), the chain asks before running it, and a step whose tool
is missing is *skipped*, with the missing piece and how to get it as its reason; the chain's
verdict is then *incomplete*, never passed. Every caller prints `ChainResult.last_line` (or the
reasons) as its last line and exits with `ChainResult.exit_code`: 0 passed, 1 failed,
EXIT_INCOMPLETE when a step it asked for could not run. A step the caller did not ask for (`skip`,
e.g. `kgen build --no-compile`) is not run and not reported.

A tool the user named (--headers, --sfpi, --firmware, $KGEN_SFPI_ROOT) that holds nothing usable
is an error (exit 2), not a skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from kgen.core.errors import EXIT_INCOMPLETE, Incomplete, KgenError  # noqa: F401 (re-exported)

if TYPE_CHECKING:                 # annotations only: importing the chain loads no stage
    from kgen.gen.pipeline import Artifacts
    from kgen.gen.render import SourceFile
    from kgen.gen.targets import PortPlan

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
    notes: tuple[str, ...] = ()       # what the target says of the spec (Target.check_supported)

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
STEP_NAMES: tuple[str, ...] = tuple(STEP_WORDS)


@dataclass(frozen=True)
class ChainState:
    """What a step is given: the rendered artifacts, the options, the target and the steps done so far."""

    artifacts: Artifacts
    options: ChainOptions
    target: Target
    done: dict[str, Step]


# Why a tool a step needs is missing here (what it is and how to get it), or None when it is there.
Need = Callable[[ChainOptions], "str | None"]


@dataclass(frozen=True)
class ChainStep:
    """One step as a target runs it. The chain asks each of `needs` first: the first that names a
    missing tool skips the step with that reason (the missing-tool policy); else `run` does it."""

    run: Callable[[ChainState], Step]
    needs: tuple[Need, ...] = ()


@dataclass(frozen=True)
class Outputs:
    """What `built` writes for a target: the folder's name under the root, and its files."""

    folder: str
    files: tuple[SourceFile, ...]


@dataclass(frozen=True)
class CommandRequest:
    """`kgen build|emulate|port-check` as plain values, for a target that reports them itself."""

    command: Literal["build", "emulate", "port-check"]
    options: ChainOptions
    render_only: bool = False           # build --no-compile
    as_json: bool = False
    verbose: bool = False


def _no_objections(artifacts: Artifacts) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Target:
    """A runtime kgen's kernels are for, as the chain and the commands see it.

    `outputs`: the folder and files `built` writes. `steps`: how each step after `built` runs for
    it (the chain runs them in its own order). `check_supported`: exit 2 (SpecError) naming why the target cannot run
    the spec, else the notes its build prints. `refuses`: ChainOptions fields it has no use for
    (exit 2 when set). `command`: its own report of `kgen build|emulate|port-check` (None: the
    CLI's). `port_plan`: the stages `kgen ab --target` compares (None: ab compares variants)."""

    name: str
    outputs: Callable[[Artifacts], Outputs]
    steps: Mapping[str, ChainStep]
    check_supported: Callable[[Artifacts], tuple[str, ...]] = _no_objections
    refuses: tuple[str, ...] = ()
    command: Callable[[CommandRequest, Artifacts], int] | None = None
    port_plan: PortPlan | None = None


# ----------------------------------------------------------------------------------------------
# the steps
# ----------------------------------------------------------------------------------------------

def _built(s: ChainState) -> Step:
    """Every target's first step: its outputs written (whole) into their folder under the root."""
    from kgen.core.resources import cache_root
    from kgen.gen.build import BuildResult, write_build

    root = s.options.root if s.options.root is not None else cache_root() / "builds"
    out = s.target.outputs(s.artifacts)
    path = write_build(Path(root), out.folder, out.files)
    r = s.artifacts.rendered
    return Step.ok("built", str(path), BuildResult(r.kernel_id, path, tuple(f.path for f in out.files), r.manifest))


def _kgen_build_folder(artifacts: Artifacts) -> Outputs:
    """TT-Metal's outputs: kgen's own build folder, <kernel-id>/ with every rendered file."""
    return Outputs(artifacts.rendered.kernel_id, artifacts.rendered.files)


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


def _compile_mode(tc, options: ChainOptions) -> str:
    return "sfpi" if options.compile == "auto" and tc.sfpi is not None else "check"


def needs_kernel_compiler(options: ChainOptions) -> str | None:
    """TT-Metal's `typechecked`: the headers, and SFPI or the host checker as options.compile asks."""
    tc = toolchain(options)
    return missing_for_typecheck(tc, _compile_mode(tc, options))


def needs_host_checker(options: ChainOptions) -> str | None:
    """A host type-check only: the headers and the host checker."""
    return missing_for_typecheck(toolchain(options), "check")


def typecheck_folder(folder: Path, options: ChainOptions) -> Step:
    """The `typechecked` step on a build folder. Its value, when it ran: (toolchain, mode, report)."""
    from kgen.toolchain.compile import compile_folder, failure_text, write_compile_report

    tc = toolchain(options)
    mode = _compile_mode(tc, options)
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


def _typechecked(s: ChainState) -> Step:
    return typecheck_folder(s.done["built"].value.path, s.options)


def missing_for_emulation() -> str | None:
    from kgen.proof.emulate import find_host_compiler

    if find_host_compiler() is None:
        return ("no host C++17 compiler for the emulator: install g++ (Debian: apt-get install g++) "
                "or point KGEN_HOST_CXX at one")
    return None


def needs_host_compiler(options: ChainOptions) -> str | None:
    """The emulator's host C++17 compiler."""
    return missing_for_emulation()


def needs_tt_metal_kernels(options: ChainOptions) -> str | None:
    """TT-Metal's kernels to compare with: --reference, or the headers' tree."""
    from kgen.toolchain.headers import find_headers

    if options.reference is not None:
        return None
    tree, note = find_headers(options.headers)
    return None if tree is not None else f"no TT-Metal headers, so no TT-Metal kernels to compare with ({note})"


def emulation_detail(e) -> str:
    """An emulation that passed, in the words of the `emulated` step."""
    word = "bit-exact" if e.exact_match else "within the fast-mode tolerance"
    return f"{e.numerics} numerics, {word}; {e.float64.line()}"


def _emulated(s: ChainState) -> Step:
    from kgen.proof.emulate import emulate_folder, format_report

    o = s.options
    e = emulate_folder(s.done["built"].value.path, s.artifacts.plan, seed=o.seed, numerics=o.numerics,
                       schedules=o.schedules, trace=o.trace, parallel=o.parallel, progress=o.progress)
    if not e.ok:
        return Step.failed("emulated", format_report(e, per_processor=False), e)
    return Step.ok("emulated", emulation_detail(e), e)


def _portchecked(s: ChainState) -> Step:
    from kgen.proof.portcheck import format_port_check, port_check

    o = s.options
    ours = s.done.get("emulated")
    pc = port_check(s.done["built"].value.path, s.artifacts.plan, reference=o.reference, seed=o.seed,
                    numerics=o.numerics, parallel=o.parallel, progress=o.progress,
                    ours=ours.value if ours is not None and ours.status == "ok" and o.schedules == 0 else None)
    if not pc.passed:
        return Step.failed("portchecked", format_port_check(pc), pc)
    whole = "TT-Metal's compute kernel" + (" and whole program" if pc.program is not None else "")
    return Step.ok("portchecked", f"{whole} give kgen's bits", pc)


TT_METAL = Target("tt-metal", outputs=_kgen_build_folder, steps=MappingProxyType({
    "typechecked": ChainStep(_typechecked, needs=(needs_kernel_compiler,)),
    "emulated": ChainStep(_emulated, needs=(needs_host_compiler,)),
    "portchecked": ChainStep(_portchecked, needs=(needs_host_compiler, needs_tt_metal_kernels)),
}))


def _refuse_options(target: Target, options: ChainOptions) -> None:
    """Exit 2 when an option the target has no use for is set."""
    from kgen.core.errors import SpecError

    if any(getattr(options, name) for name in target.refuses):
        flags = [f"--{name}" for name in target.refuses]
        listed = flags[0] if len(flags) == 1 else ", ".join(flags[:-1]) + " and " + flags[-1]
        raise SpecError(f"{listed} {'is' if len(flags) == 1 else 'are'} for the default target",
                        hint=f"drop {'it' if len(flags) == 1 else 'them'}, or drop --target {target.name}")


def run_chain(artifacts: Artifacts, until: str = "portchecked", *, skip: Collection[str] = (),
              options: ChainOptions = ChainOptions(), target: Target = TT_METAL) -> ChainResult:
    """Run the target's steps after `rendered` in order up to and including `until`, leaving out
    `skip` (`built` cannot be left out). Before any: the target's objections to the spec (exit 2).
    Stops at the first failed step; a skipped one (a tool it needs is missing) does not stop it."""
    names = ["built", *(n for n in STEP_NAMES if n in target.steps)]
    if until not in names:
        raise ValueError(f"until must be one of {names}, not {until!r}")
    unknown = set(skip) - set(names)
    if unknown or "built" in skip:
        raise ValueError(f"cannot skip {sorted(unknown | ({'built'} & set(skip)))}; the steps are {names}")
    if artifacts.rendered is None:
        raise ValueError("run_chain needs artifacts run until 'rendered'")
    _refuse_options(target, options)
    notes = target.check_supported(artifacts)
    state = ChainState(artifacts, options, target, {})
    for name in names[: names.index(until) + 1]:
        if name in skip:
            continue
        step = _built(state) if name == "built" else _run_step(name, target.steps[name], state)
        state.done[name] = step
        if step.status == "failed":
            break
    return ChainResult(artifacts, tuple(state.done.values()), notes)


def _run_step(name: str, step: ChainStep, state: ChainState) -> Step:
    """The missing-tool policy, for every target's every step: a need that names a missing tool
    skips the step with that reason; else the step runs."""
    for need in step.needs:
        missing = need(state.options)
        if missing is not None:
            return Step.skipped(name, missing)
    return step.run(state)
