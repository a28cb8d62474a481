"""What `kgen emulate` reports: the `Emulation` value, its text report, and the op counts summed over
its processors."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgen.core import terminal
from kgen.core.terminal import Column, keep_together
from kgen.proof.numerics import REL_ERR_FLOOR
from kgen.proof.oracle import Float64Check


@dataclass(frozen=True)
class ErrorStats:
    max_abs_err: float
    max_rel_err: float
    pcc: float


@dataclass(frozen=True)
class Emulation:
    """Everything `kgen emulate` reports."""

    kernel_id: str
    folder: Path
    numerics: str
    seed: int
    status: str
    exact_match: bool
    mismatched: int                  # output elements that differ from the golden model
    errors: ErrorStats
    seconds: float                   # wall time of the whole command
    emulate_seconds: float           # the emulator's run alone (first schedule)
    schedules: int
    schedules_identical: bool
    hazards: tuple[dict, ...]
    deadlock: str
    processors: tuple[dict, ...]
    cycles: int
    macs: int
    out_bytes: bytes = field(repr=False, default=b"")

    golden_close: bool = False       # fast numerics: within FAST_TOLERANCE of the fast golden model
    float64: Float64Check | None = None   # the output against float64 of the math (kgen.proof.oracle)

    @property
    def ok(self) -> bool:
        agrees = self.exact_match if self.numerics == "exact" else self.golden_close
        return (self.status == "ok" and not self.hazards and agrees and self.schedules_identical
                and self.float64 is not None and self.float64.within)

    def summary(self) -> dict:
        return {
            "kernel_id": self.kernel_id, "numerics": self.numerics, "seed": self.seed, "status": self.status,
            "exact_match": self.exact_match, "mismatched_elements": self.mismatched, "ok": self.ok,
            "max_abs_err": self.errors.max_abs_err, "max_rel_err": self.errors.max_rel_err, "pcc": self.errors.pcc,
            "float64": None if self.float64 is None else self.float64.summary(),
            "seconds": round(self.seconds, 4), "emulate_seconds": round(self.emulate_seconds, 4),
            "macs": self.macs, "mac_per_second": round(self.macs / self.emulate_seconds) if self.emulate_seconds else None,
            "schedules": self.schedules, "schedules_identical": self.schedules_identical,
            "hazards": list(self.hazards), "deadlock": self.deadlock or None, "cycles": self.cycles,
            "processors": list(self.processors),
        }


def emulated_op_totals(processors) -> dict[str, int]:
    """Op name -> calls, summed over the emulated processors' reports (not verify.op_totals, which
    counts the IR)."""
    totals: dict[str, int] = {}
    for p in processors:
        for k, v in p["ops"].items():
            totals[k] = totals.get(k, 0) + v
    return dict(sorted(totals.items()))


def format_report(e: Emulation, *, per_processor: bool = True, verbose: bool = False, width: int | None = None) -> str:
    """The report at `width` columns (the terminal's); `per_processor` adds a summary of the cores
    and processors (the slowest core, the busiest processor, the stalls, one row per role),
    `verbose` a row per core and processor in its place."""
    width = width or terminal.width()

    def row(key: str, value: str) -> list[str]:
        return _row(key, value, width)

    lines = terminal.hanging(f"kgen emulate: {e.kernel_id} ({e.numerics} numerics, seed {e.seed})", width)
    verdict = {"ok": "finished", "deadlock": "DEADLOCK", "stopped": "STOPPED"}.get(e.status, e.status)
    lines += row("run", f"{verdict}; {len(e.processors)} processors on "
                        f"{len({tuple(p['core']) for p in e.processors})} cores; {e.cycles} modelled cycles")
    if e.status == "ok":
        golden = "bit-exact" if e.exact_match else f"DIFFERS in {e.mismatched} element(s)"
        if e.numerics == "fast" and not e.exact_match:
            golden += " (within the fast-mode tolerance)" if e.golden_close else " (BEYOND the fast-mode tolerance)"
        lines += row("golden", f"{golden} against the {e.numerics} golden model")
        if e.float64 is not None:
            lines += row("float64", e.float64.line())
        lines += row("vs float64", f"max_abs_err {e.errors.max_abs_err:.4g}  max_rel_err {e.errors.max_rel_err:.4g} "
                                   f"(where |float64| >= {REL_ERR_FLOOR:.0%} of its max, as kgen ab)  "
                                   f"pcc {e.errors.pcc:.6f}".replace("%", " %"))
    if e.schedules:
        lines += row("schedules", f"{e.schedules} random interleaving(s): "
                                  f"{'identical output' if e.schedules_identical else 'OUTPUT DIFFERS between schedules'}")
    rate = f", {e.macs / max(e.emulate_seconds, 1e-9) / 1e6:.1f} M MAC/s" if e.status == "ok" else ""
    lines += row("time", f"{e.seconds:.2f} s: {e.emulate_seconds:.2f} s emulating{rate}; the rest compiling "
                         "the kernels for the host (cached) and computing the golden models")
    if e.deadlock:
        lines += [""] + _indented_lines(e.deadlock.rstrip(), width)
    for h in e.hazards:
        lines += terminal.hanging(f"HAZARD {h['kind']}: {h['file']}:{h['line']} core ({h['core'][0]},{h['core'][1]}) "
                                  f"{h['processor']}: {h['message']}", width, "  ")
    if per_processor and e.processors:
        lines += [""] + (_per_processor_table(e.processors, width) if verbose else _summary(e.processors, width))
        totals = emulated_op_totals(e.processors)
        # each `name count` one word, so that a line never ends between the two
        items = ", ".join(keep_together(f"{k} {v}") for k, v in totals.items())
        lines += terminal.hanging("op counts (all cores): " + items, width, "  ")
    return "\n".join(lines)


def _row(key: str, value: str, width: int) -> list[str]:
    """`  key        value`, the value wrapped under itself: every key of the report in one column."""
    return terminal.key_value(key, value, width, key_width=10, gap=1)


def _indented_lines(text: str, width: int) -> list[str]:
    """Lines of a report made elsewhere (the emulator's deadlock report), each wrapped at its own
    indent with its further lines a little further in."""
    out = []
    for line in text.splitlines():
        indent = line[:len(line) - len(line.lstrip(" "))]
        out += terminal.hanging(line.strip(), width, indent, "    ")
    return out


def _where(p) -> str:
    return f"({p['core'][0]},{p['core'][1]}) {p['processor']} {p['kernel']}"


def _summary(processors, width: int) -> list[str]:
    """A few lines that fit `width` whatever the grid: the slowest core, the busiest processor,
    the stalls, and one row per role (processor and kernel) over the cores running it."""
    cores: dict[tuple[int, int], int] = {}
    for p in processors:
        core = (p["core"][0], p["core"][1])
        cores[core] = max(cores.get(core, 0), p["cycles"])     # a core is done when its last processor is
    slowest = max(cores, key=lambda c: (cores[c], c))
    fastest = min(cores, key=lambda c: (cores[c], c))
    busiest = max(processors, key=lambda p: p["busy_cycles"])
    waiting = max(processors, key=lambda p: p["stall_cycles"])
    stalls = sum(p["stalls"] for p in processors)
    stall_cycles = sum(p["stall_cycles"] for p in processors)
    all_cycles = sum(p["cycles"] for p in processors)
    lines = [line for key, value in [
        ("slowest", f"core ({slowest[0]},{slowest[1]}) at {cores[slowest]} cycles; fastest core "
                    f"({fastest[0]},{fastest[1]}) at {cores[fastest]} (of {len(cores)} cores)"),
        ("busiest", f"{_where(busiest)}: {busiest['busy_cycles']} busy cycles of {busiest['cycles']}"),
        ("stalls", f"{stalls} stalls, {stall_cycles} stall cycles ({_share(stall_cycles, all_cycles)} of all "
                   f"processor cycles)"),
        ("most wait", f"{_where(waiting)}: {waiting['stall_cycles']} stall cycles of {waiting['cycles']}"),
    ] for line in _row(key, value, width)] + [""]
    roles: dict[tuple[str, str], list] = {}
    for p in processors:
        roles.setdefault((p["processor"], p["kernel"]), []).append(p)
    rows = []
    for (processor, kernel), ps in roles.items():
        ops = sorted({sum(p["ops"].values()) for p in ps})
        ops_text = str(ops[0]) if len(ops) == 1 else f"{ops[0]}-{ops[-1]}"
        stall_range = f"{min(p['stall_cycles'] for p in ps)}-{max(p['stall_cycles'] for p in ps)}"
        rows.append((processor, kernel, str(len(ps)), ops_text, str(sum(p["stalls"] for p in ps)), stall_range,
                     str(max(p["cycles"] for p in ps))))
    headers = ("processor", "kernel", "cores", "ops/core", "stalls", "stall cycles", "max cycles")
    lines += terminal.table([Column(h, [r[i] for r in rows], numeric=i >= 2) for i, h in enumerate(headers)], width,
                            keys=2)
    lines += terminal.hanging("(stalls: summed over the cores; stall cycles: their range over the cores)", width, "  ")
    lines.append("  every core and processor: --verbose, or --json")
    return lines


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "0%"


def _per_processor_table(processors, width: int) -> list[str]:
    headers = ("core", "processor", "kernel", "ops", "stalls", "stall cycles", "cycles")
    rows = [(f"({p['core'][0]},{p['core'][1]})", p["processor"], p["kernel"], str(sum(p["ops"].values())),
             str(p["stalls"]), str(p["stall_cycles"]), str(p["cycles"])) for p in processors]
    return terminal.table([Column(h, [r[i] for r in rows], numeric=i >= 3) for i, h in enumerate(headers)], width,
                          keys=3)
