"""`kgen emulate --target blackhole-py` and `kgen port-check --target blackhole-py`: the exported
program run in kgen's emulator under blackhole-py's conventions.

The view of kgen.gen.targets.blackhole_py is what runs: the adapted kernel sources (no compile-time
args, common args or defines from outside), each core's args read from its slice of the runtime-arg
blob (writer || reader, padded to the longest, semaphores at their aligned offset), the semaphores at
that offset, the CBs where the CB blob puts them (16 and 24 at one address), the reader on NOC 0 and
the writer on NOC 1, and the cores at Blackhole NoC coordinates with the non-worker tiles of columns 8-9
as cores that run nothing, so a multicast not split around them counts them and is reported."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kgen.core.arch import load_arch
from kgen.core.types import DATA_FORMAT_VALUE
from kgen.gen.targets import blackhole_py as bh

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


def run_command(args, artifacts) -> int:
    """`kgen build|emulate|port-check SPEC --target blackhole-py`."""
    import sys

    from kgen.gen.build import write_build
    from kgen.gen.targets import bhpy_export

    from kgen.core.errors import SpecError

    if getattr(args, "schedules", 0) or getattr(args, "trace", None) or getattr(args, "reference", None):
        raise SpecError("--schedules, --trace and --reference are for the default target",
                        hint="drop them, or drop --target blackhole-py")
    notes = bh.check_supported(artifacts.spec, artifacts.plan)
    say = sys.stdout.write
    if args.command == "build":
        p = bh.view(artifacts.plan, artifacts.rendered)
        folder = write_build(Path(args.output), f"{p.name}-blackhole-py", bhpy_export.files(p, artifacts.plan))
        say(f"kgen build --target blackhole-py: {folder}\n  module   {folder / bhpy_export.MODULE} "
            f"(imports blackhole-py and numpy)\n  readme   {folder / 'README.md'}\n  target   {bh.source_line()}\n")
        say("".join(f"  note     {n}\n" for n in notes))
        say("  api      the kernels use TT-Metal 0.81.1's kernel API; blackhole-py bundles an older tree "
            "(compute_kernel_api/*.h): see docs/blackhole-py.md\n")
        if args.no_compile:
            return 0
        from kgen.proof.bhpy_typecheck import typecheck
        from kgen.proof.chain import EXIT_INCOMPLETE, ChainOptions

        status, detail, _ = typecheck(artifacts, ChainOptions(sfpi=args.sfpi, headers=args.headers, firmware=args.firmware,
                                                              parallel=args.jobs, force=args.force))
        say(f"  check    {status}: {detail}\n" if status != "failed" else "  check    FAILED\n")
        if status == "failed":
            sys.stderr.write(f"kgen: {detail}\n")
        return {"ok": 0, "failed": 1}.get(status, EXIT_INCOMPLETE)
    if args.command == "emulate":
        from kgen.proof.emulate import format_report

        result, p, rec = emulate(artifacts, seed=args.seed, numerics=args.numerics, parallel=args.jobs)
        lay = bh.rta_layout(p)
        if args.json:
            say(json.dumps({**result.summary(), "target": bh.NAME, "rta_bytes": [lay.writer_bytes, lay.reader_bytes],
                            "sem_offset": lay.sem_offset, "cbs": [list(e) for e in rec.cbs]}, indent=2) + "\n")
        else:
            say(format_report(result, verbose=args.verbose) + "\n")
            say(f"  target     blackhole-py ({bh.source_line()}): reader NCRISC/NOC 0, writer BRISC/NOC 1; "
                f"args writer {lay.writer_bytes} B + reader {lay.reader_bytes} B, {p.semaphores} semaphores at "
                f"+{lay.sem_offset}; CB 16 and 24 at {hex(next(e[1] for e in rec.cbs if e[0] == 16))}\n")
        return 0 if result.ok else 1
    tt, ours, identical = port_check(artifacts, seed=args.seed, numerics=args.numerics, parallel=args.jobs)
    if args.json:
        say(json.dumps({"target": bh.NAME, "identical": identical, "tt_metal": tt.summary(),
                        "blackhole_py": ours.summary()}, indent=2) + "\n")
    else:
        verdict = "bit-identical" if identical else "DIFFERENT"
        say(f"kgen port-check --target blackhole-py: {tt.kernel_id}\n"
            f"  tt-metal      {tt.status}, {'bit-exact' if tt.exact_match else 'not bit-exact'} vs the golden model\n"
            f"  blackhole-py  {ours.status}, {'bit-exact' if ours.exact_match else 'not bit-exact'} vs the golden model\n"
            f"  output        {verdict} ({len(ours.out_bytes)} bytes, seed {args.seed}, {args.numerics} numerics)\n")
    return 0 if identical and tt.ok and ours.ok else 1
