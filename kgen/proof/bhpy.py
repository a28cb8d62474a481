"""The blackhole-py target (`TARGET`, registered in kgen/proof/targets.py): what `built` writes for it
(the module kgen.gen.targets.bhpy_export prints, and a README) and how the proof chain type-checks
(kgen.proof.bhpy_typecheck), emulates and port-checks it: the exported program run in kgen's emulator
under blackhole-py's conventions.

The view of kgen.gen.targets.blackhole_py is what runs: the adapted kernel sources (no compile-time
args, common args or defines from outside), each core's args read from its slice of the runtime-arg
blob (writer || reader, padded to the longest, semaphores at their aligned offset), the semaphores at
that offset, the CBs where the CB blob puts them (16 and 24 at one address), the reader on NOC 0 and
the writer on NOC 1, and the cores at Blackhole NoC coordinates with the non-worker tiles of columns 8-9
as cores that run nothing, so a multicast not split around them counts them and is reported."""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from kgen.core.arch import load_arch
from kgen.core.types import DATA_FORMAT_VALUE
from kgen.gen.targets import blackhole_py as bh
from kgen.proof.bhpy_typecheck import needs_checker, typechecked
from kgen.proof.chain import (ChainOptions, ChainResult, ChainState, ChainStep, CommandRequest, Outputs, Step, Target,
                              emulation_detail, needs_host_compiler, run_chain)

if TYPE_CHECKING:
    from kgen.proof.emulate import Emulation

# where the emulated runtime-arg blob (KERNEL_CONFIG_BASE) sits: below the CBs, clear of them
CONFIG_BYTES = 4096


@dataclass(frozen=True)
class Recorded:
    """What the emulator ran: each core's runtime-arg blob (words; ("addr", name) for a buffer), the
    CB blob entries and the semaphore addresses."""
    rta: dict
    cbs: tuple
    sem_addresses: tuple[int, ...]
    config_base: int
    # what the emulator's run lines gave each (logical core, processor role): its runtime args
    run_args: dict
    addresses: dict                  # tensor name -> DRAM address the emulator put it at


def program_hook(p: bh.BhpyProgram, recorded: list):
    """Rewrite the emulator's core, CB and semaphore lines to blackhole-py's layout."""
    arch = load_arch("blackhole")
    phys = bh.physical(p)
    lay = bh.rta_layout(p)
    config_base = arch.l1_unreserved_base - CONFIG_BYTES
    sem_addresses = tuple(config_base + lay.sem_offset + 16 * i for i in range(p.semaphores))
    entries = bh.cb_entries(p, arch.l1_unreserved_base)
    if lay.sem_offset + 16 * p.semaphores > CONFIG_BYTES:
        raise ValueError("the runtime-arg blob does not fit the emulated kernel config area")

    def hook(program):
        lines, core_id = [], {}
        for line in program.text.splitlines():
            parts = line.split()
            if parts and parts[0] == "core":
                x, y = int(parts[2]), int(parts[3])
                core_id[(x, y)] = parts[1]
                nx, ny = phys[(x, y)]
                line = f"core {parts[1]} {x} {y} {nx} {ny}"
            elif parts and parts[0] in ("cb", "sem"):
                continue
            lines.append(line)
        extra = []
        for core, cid in core_id.items():
            for index, addr, total, pages, page in entries:
                dtype = next(d for i, d, _ in p.cbs if i == index)
                extra.append(f"cb {cid} {index} {DATA_FORMAT_VALUE[bh.FORMAT_OF_DTYPE[dtype]]} {page} {pages} {addr}")
            extra += [f"sem {cid} {i} {a} 0" for i, a in enumerate(sem_addresses)]
        extra += _gap_tiles(phys, len(core_id))
        at = next(i for i, line in enumerate(lines) if line.split()[0] == "dram")
        recorded.append(Recorded({c: bh.rta_words(p, c) for c in p.cores}, entries, sem_addresses, config_base,
                                 _run_args(lines, core_id), {t.name: t.address for t in program.tensors}))
        return dataclasses.replace(program, text="\n".join(lines[:at] + extra + lines[at:]) + "\n")
    return hook


def _gap_tiles(phys: dict, first_id: int) -> list[str]:
    """The non-worker tiles of columns 8-9 inside the grid's span, as cores that run nothing: a multicast
    rectangle drawn across them counts them, so its num_dests no longer matches and the emulator
    reports it (Blackhole has no Tensix core there; blackhole-py's reader multicasts around them)."""
    gap = bh.facts()["placement"]["gap_columns"]
    xs, ys = sorted({c[0] for c in phys.values()}), sorted({c[1] for c in phys.values()})
    tiles = [(x, y) for x in gap if xs[0] < x < xs[-1] for y in ys]
    return [f"core {first_id + i} {1000 + x} {y} {x} {y}" for i, (x, y) in enumerate(tiles)]


def _run_args(lines: list[str], core_id: dict) -> dict:
    """(logical core, role) -> the runtime args of the emulator's `run` lines."""
    role_of = {parts[1]: parts[3] for parts in (line.split() for line in lines) if parts and parts[0] == "kernel"}
    core_of = {cid: core for core, cid in core_id.items()}
    out = {}
    for parts in (line.split() for line in lines):
        if parts and parts[0] == "run":
            n = int(parts[3])
            out[(core_of[parts[1]], role_of[parts[2]])] = [int(v) for v in parts[4:4 + n]]
    return out


def emulate(artifacts, *, seed: int = 0, numerics: str = "exact", parallel: int = 2, progress=lambda phase: None,
            golden: bytes | None = None):
    """Run the blackhole-py view; returns (Emulation, BhpyProgram, Recorded)."""
    from kgen.gen.build import write_build
    from kgen.proof.emulate import emulate_folder

    plan, rendered = artifacts.plan, artifacts.rendered
    p = bh.view(plan, rendered)
    recorded: list[Recorded] = []
    with tempfile.TemporaryDirectory(prefix="kgen-bhpy-") as tmp:
        folder = write_build(Path(tmp), rendered.kernel_id, bh.view_files(p, rendered))
        result = emulate_folder(folder, plan, seed=seed, numerics=numerics, parallel=parallel, progress=progress,
                                program_hook=program_hook(p, recorded), golden=golden)
    return result, p, recorded[0] if recorded else None


def port_check(artifacts, *, seed: int = 0, numerics: str = "exact", parallel: int = 2, progress=lambda phase: None):
    """kgen's TT-Metal program and its blackhole-py export on the same inputs: (tt, bhpy, identical)."""
    from kgen.gen.build import write_build
    from kgen.proof.emulate import emulate_folder

    with tempfile.TemporaryDirectory(prefix="kgen-bhpy-tt-") as tmp:
        folder = write_build(Path(tmp), artifacts.rendered.kernel_id, artifacts.rendered.files)
        tt = emulate_folder(folder, artifacts.plan, seed=seed, numerics=numerics, parallel=parallel, progress=progress)
    # the same plan and inputs: a TT-Metal run that matched the golden model's bits hands them on
    golden = tt.out_bytes if tt.status == "ok" and tt.exact_match and numerics == "exact" else None
    ours, _, _ = emulate(artifacts, seed=seed, numerics=numerics, parallel=parallel, progress=progress, golden=golden)
    return tt, ours, tt.out_bytes == ours.out_bytes and tt.status == ours.status == "ok"


# ----------------------------------------------------------------------------------------------
# the target: what `built` writes for it and the chain's steps for it

@dataclass(frozen=True)
class ExportEmulation:
    """The `emulated` step's value: the emulation, the program it ran and the layout it ran under."""
    emulation: Emulation
    program: bh.BhpyProgram
    recorded: Recorded | None


@dataclass(frozen=True)
class ExportPortCheck:
    """The `portchecked` step's value: kgen's TT-Metal program and the export, on the same inputs."""
    tt: Emulation
    ours: Emulation
    identical: bool

    @property
    def passed(self) -> bool:
        return self.identical and self.tt.ok and self.ours.ok


def _outputs(artifacts) -> Outputs:
    """<kernel-id>-blackhole-py/: the module blackhole-py runs, and its README."""
    from kgen.gen.targets import bhpy_export

    p = bh.view(artifacts.plan, artifacts.rendered)
    return Outputs(f"{p.name}-{bh.NAME}", bhpy_export.files(p, artifacts.plan))


def _check_supported(artifacts) -> tuple[str, ...]:
    return bh.check_supported(artifacts.spec, artifacts.plan)


def _emulated(s: ChainState) -> Step:
    from kgen.proof.emulate import format_report

    o = s.options
    result, p, rec = emulate(s.artifacts, seed=o.seed, numerics=o.numerics, parallel=o.parallel, progress=o.progress)
    value = ExportEmulation(result, p, rec)
    if not result.ok:
        return Step.failed("emulated", format_report(result, per_processor=False), value)
    return Step.ok("emulated", emulation_detail(result), value)


def _portchecked(s: ChainState) -> Step:
    o = s.options
    pc = ExportPortCheck(*port_check(s.artifacts, seed=o.seed, numerics=o.numerics, parallel=o.parallel,
                                     progress=o.progress))
    if not pc.passed:
        return Step.failed("portchecked", _port_check_text(pc, o), pc)
    return Step.ok("portchecked", "the export gives the bytes of kgen's TT-Metal program", pc)


# ----------------------------------------------------------------------------------------------
# `kgen build|emulate|port-check --target blackhole-py`: the chain's steps in this target's words

def run_command(request: CommandRequest, artifacts) -> int:
    """`kgen build|emulate|port-check SPEC --target blackhole-py`: one run of the chain for this target,
    reported in its words; the exit code is the chain's (a missing tool: EXIT_INCOMPLETE)."""
    command = f"kgen {request.command} --target {bh.NAME}"
    if request.command == "build":
        chain = run_chain(artifacts, "typechecked", skip={"typechecked"} if request.render_only else (),
                          options=request.options, target=TARGET)
        return _report_build(chain, command, request.render_only)
    port = request.command == "port-check"
    chain = run_chain(artifacts, "portchecked" if port else "emulated",
                      skip={"typechecked", "emulated"} if port else {"typechecked"}, options=request.options,
                      target=TARGET)
    step = chain.steps[-1]
    if step.status == "skipped":
        sys.stdout.write(chain.last_line(command) + "\n")
    elif port:
        pc = step.value
        sys.stdout.write(_port_check_json(pc) if request.as_json else _port_check_text(pc, request.options))
    else:
        sys.stdout.write(_emulation_text(step.value, request))
    return chain.exit_code


def _report_build(chain: ChainResult, command: str, render_only: bool) -> int:
    from kgen.core import terminal
    from kgen.gen.targets import bhpy_export

    width = terminal.width()

    def say(key: str, value: str) -> None:
        sys.stdout.write("\n".join(terminal.key_value(key, value, width, key_width=6, gap=3)) + "\n")

    folder = chain.value("built").path
    sys.stdout.write("\n".join(terminal.hanging(f"{command}: {terminal.shown_path(folder)}", width)) + "\n")
    say("module", f"{terminal.shown_path(folder / bhpy_export.MODULE)} (imports blackhole-py and numpy)")
    say("readme", terminal.shown_path(folder / "README.md"))
    say("target", bh.source_line())
    for note in chain.notes:
        say("note", note)
    say("api", "the kernels use TT-Metal 0.81.1's kernel API; blackhole-py compiles against its own, older "
               "bundle (tt-metal-deps/): see docs/blackhole-py.md")
    if render_only:
        return chain.exit_code
    step = chain.step("typechecked")
    if step.status == "failed":
        say("check", "FAILED")
        sys.stderr.write(f"kgen: {step.detail}\n")
    else:
        say("check", f"{step.status}: {step.detail}")
    if step.status == "skipped":
        sys.stdout.write("\n".join(terminal.hanging(chain.last_line(command)
                                                    + "   (kgen doctor; --no-compile renders only)", width)) + "\n")
    return chain.exit_code


def _emulation_text(value: ExportEmulation, request: CommandRequest) -> str:
    from kgen.core import terminal
    from kgen.proof.emulate import format_report

    result, p, rec = value.emulation, value.program, value.recorded
    lay = bh.rta_layout(p)
    if request.as_json:
        return json.dumps({**result.summary(), "target": bh.NAME, "rta_bytes": [lay.writer_bytes, lay.reader_bytes],
                           "sem_offset": lay.sem_offset, "cbs": [list(e) for e in rec.cbs]}, indent=2) + "\n"
    width = terminal.width()
    target = terminal.key_value(
        "target", f"blackhole-py ({bh.source_line()}): reader NCRISC/NOC 0, writer BRISC/NOC 1; "
                  f"args writer {lay.writer_bytes} B + reader {lay.reader_bytes} B, {p.semaphores} semaphores at "
                  f"+{lay.sem_offset}; CB 16 and 24 at {hex(next(e[1] for e in rec.cbs if e[0] == 16))}",
        width, key_width=10, gap=1)
    return format_report(result, verbose=request.verbose, width=width) + "\n" + "\n".join(target) + "\n"


def _port_check_json(pc: ExportPortCheck) -> str:
    return json.dumps({"target": bh.NAME, "identical": pc.identical, "tt_metal": pc.tt.summary(),
                       "blackhole_py": pc.ours.summary()}, indent=2) + "\n"


def _port_check_text(pc: ExportPortCheck, options: ChainOptions) -> str:
    from kgen.core import terminal

    tt, ours = pc.tt, pc.ours
    verdict = "bit-identical" if pc.identical else "DIFFERENT"
    width = terminal.width()
    lines = terminal.hanging(f"kgen port-check --target blackhole-py: {tt.kernel_id}", width)
    lines += terminal.key_values([
        ("tt-metal", f"{tt.status}, {'bit-exact' if tt.exact_match else 'not bit-exact'} vs the golden model"),
        ("blackhole-py", f"{ours.status}, {'bit-exact' if ours.exact_match else 'not bit-exact'} vs the golden model"),
        ("output", f"{verdict} ({len(ours.out_bytes)} bytes, seed {options.seed}, {options.numerics} numerics)"),
    ], width)
    return "\n".join(lines) + "\n"


TARGET = Target(bh.NAME, outputs=_outputs, check_supported=_check_supported, steps=MappingProxyType({
    "typechecked": ChainStep(typechecked, needs=(needs_checker,)),
    "emulated": ChainStep(_emulated, needs=(needs_host_compiler,)),
    "portchecked": ChainStep(_portchecked, needs=(needs_host_compiler,)),
}), refuses=("schedules", "trace", "reference"), command=run_command, port_plan=bh.PORT_PLAN)
