"""Prove a seeded sample of TT-Metal's corpus of real matmul calls: build, type-check, emulate and
port-check each case (issue #39's acceptance item). A benchmark run by hand, not a test.

The cases are benchmarks/tt_corpus.py's: each row of benchmarks/data/tt_matmul_oob_cases.csv mapped
to a spec holding only what the case fixes (its docstring gives the mapping), once as it is (kgen's
default, `dataflow = auto`: TT's own choice of factory, grid and blocking) and once with
`dataflow = mcast_2d` (kgen's peak factory, whatever TT would pick). The ones that plan on --arch are the population; one candidate is (case, mode).

The sample (--seed, --count). Each candidate has a form: its memory placements (memory.in0 / in1 /
out: dram, l1 interleaved, l1_*_sharded), its transpose (none, transpose_a, transpose_b, both), its
factory (the planned dataflow) and its mode (auto or mcast_2d). The strata are every value of: the
mode, the whole placement triple, each tensor's placement, the transpose form, the factory, and the
factory under `auto`. First, one random candidate for every stratum value that occurs among the
planned candidates (one within --fast-macs preferred); then candidates drawn at
random from all the rest until --count of the sample can run. A case is in the sample once (in
one mode). Cases drawn that are too large are listed as "not run: too large", never as passed.

Each case: its spec is written to --keep DIR, then
    kgen build SPEC -o DIR/build       renders and compiles, i.e. type-checks every kernel against
                                       the TT-Metal 0.81.1 headers (no SFPI here)
    kgen port-check SPEC --json        kgen's program emulated against the golden model, TT-Metal's
                                       compute kernel beside kgen's, and TT-Metal's whole program
                                       (its factory's readers and writers from the 0.81.1 wheel)
port-check runs with `--numerics exact` (bit-level Tensix arithmetic) up to --exact-macs multiply-adds
(batch * M * N * K over tiles) and `--numerics fast` (float32 math, the same data movement) up to
--fast-macs; above that a case is not run. A case is not run either when kgen's own estimate of its
port-check CPU time (kgen/proof/emulate.py's expected_seconds, three programs: it also counts the
elements of the inputs and output, which dominate a tall, thin case) is over --max-seconds, or when
it needs more than --max-gib of host memory. The defaults keep one case to about a minute of CPU on
a 2-core machine (SECONDS_PER_MAC: exact ~25 ns a MAC, fast ~1 ns a MAC).

    python3 benchmarks/tt_corpus_proof.py [--arch blackhole] [--seed 1] [--count 60] [--keep DIR]
                                          [--json FILE] [--limit N]

Prints one row per case as it finishes, then the table and a summary (coverage per form, counts,
total time). --json is rewritten after every case. Exit 1 if any case fails (or times out).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import tt_corpus  # noqa: E402
from kgen.gen.plan import plan as make_plan  # noqa: E402
from kgen.gen.spec import parse_text, resolve  # noqa: E402
from kgen.proof.emulate import available_host_memory, expected_seconds, host_memory_need  # noqa: E402

EXACT_MACS = 1 << 30           # ~1.07 G multiply-adds: about 30 s of exact port-check
FAST_MACS = 32 << 30           # ~34 G: about 40-60 s of fast port-check
MAX_SECONDS = 75               # kgen's estimate of one port-check's CPU seconds
MAX_GIB = 8                    # host memory of one case (the machine is shared)
MODES = {"auto": None, "mcast_2d": "mcast_2d"}      # no dataflow line is TT's choice
PLACES = {"dram": "D", "l1": "L", "l1_block_sharded": "Sb", "l1_height_sharded": "Sh", "l1_width_sharded": "Sw"}
FACTORIES = {"mcast_2d": "2d", "mcast_1d_in0": "1d_in0", "mcast_1d_in1": "1d_in1", "reuse": "reuse",
             "dram_sharded": "dram_sh", "multi_core": "multi"}
WIDTH = 100


@dataclass
class Case:
    case: str
    mode: str                                  # default | auto
    memory: tuple[str, str, str]               # in0, in1, out
    transpose: str                             # none | transpose_a | transpose_b | both
    factory: str
    grid: str
    macs: int
    numerics: str                              # exact | fast | "" (too many MACs)
    spec: str = ""
    why_not: str = ""                          # of a case not run
    # results
    result: str = ""                           # passed | FAILED | TIMEOUT | not run
    error: str = ""
    program_ran: bool | None = None
    seconds: float = 0.0
    build_seconds: float = 0.0

    @property
    def runs(self) -> bool:
        return bool(self.numerics) and not self.why_not

    def strata(self) -> list[tuple[str, str]]:
        out = [("mode", self.mode), ("memory", "/".join(self.memory)), ("transpose", self.transpose),
               ("factory", self.factory)]
        out += [(f"memory.{t}", p) for t, p in zip(("in0", "in1", "out"), self.memory)]
        if self.mode == "auto":
            out.append(("auto factory", self.factory))
        return out

    def form(self) -> str:
        tr = {"none": "-", "transpose_a": "tA", "transpose_b": "tB", "both": "tAB"}[self.transpose]
        mem = "/".join(PLACES.get(p, p) for p in self.memory)
        return f"{mem} {tr} {'auto:' if self.mode == 'auto' else ''}{FACTORIES.get(self.factory, self.factory)}"


def memory_of(spec_text: str) -> tuple[str, str, str]:
    """The spec's memory.* values (dram when not written)."""
    places = {"in0": "dram", "in1": "dram", "out": "dram"}
    for line in spec_text.splitlines():
        line = line.strip()
        if line.startswith("memory {"):
            words = line[len("memory {"):].rstrip("}").split()
            for i, w in enumerate(words):
                if w in places and i + 2 < len(words) and words[i + 1] == "=":
                    places[w] = words[i + 2]
    return places["in0"], places["in1"], places["out"]


def candidates(arch: str, exact_macs: float, fast_macs: float, max_seconds: float = MAX_SECONDS,
               max_gib: float = MAX_GIB) -> tuple[list[Case], Counter]:
    rows = tt_corpus.read_cases(tt_corpus.CSV_PATH)
    by_name = {r["case"]: r for r in rows}
    have = available_host_memory()
    out, planned = [], Counter()
    for mode, dataflow in MODES.items():
        for r in tt_corpus.run(rows, arch, dataflow):
            if r.status != "planned":
                continue
            planned[mode] += 1
            row = by_name[r.case]
            ta, tb = row["transpose_a"] == "1", row["transpose_b"] == "1"
            transpose = "both" if ta and tb else "transpose_a" if ta else "transpose_b" if tb else "none"
            p = make_plan(resolve(parse_text(r.spec, f"<{r.case}>")))
            macs = p.batch_ct * p.mt * p.nt * p.kt * 32 ** 3
            numerics, why = ("exact", "") if macs <= exact_macs else ("fast", "") if macs <= fast_macs \
                else ("", f"too large ({macs / 1e9:.1f} G MACs)")
            gib = host_memory_need(p) / (1 << 30)
            # the caps on time and memory keep `numerics` (the draw's preference is by MACs alone) and
            # mark the case not run
            if numerics and (gib > max_gib or (have is not None and gib * (1 << 30) > have)):
                why = f"too large ({gib:.0f} GiB of host memory)"
            elif numerics and (est := expected_seconds(p, 3, numerics)) > max_seconds:
                why = f"too large (~{est:.0f} s {numerics} estimated)"
            out.append(Case(r.case, mode, memory_of(r.spec), transpose, r.dataflow, r.grid, macs, numerics,
                            r.spec, why))
    return out, planned


def draw(cands: list[Case], seed: int, count: int) -> list[Case]:
    """Every stratum value first (a runnable case preferred), then at random until `count` can run."""
    rng = random.Random(seed)
    taken: set[str] = set()
    sample: list[Case] = []
    values = sorted({s for c in cands for s in c.strata()})
    for stratum in values:
        if any(stratum in c.strata() for c in sample):
            continue
        pool = [c for c in cands if stratum in c.strata() and c.case not in taken]
        runnable = [c for c in pool if c.numerics]
        pool = runnable or pool
        if not pool:
            continue
        pick = rng.choice(pool)
        sample.append(pick)
        taken.add(pick.case)
    rest = [c for c in cands if c.case not in taken]
    rng.shuffle(rest)
    for c in rest:
        if sum(1 for s in sample if s.runs) >= count:
            break
        if c.case in taken:
            continue
        sample.append(c)
        taken.add(c.case)
    return sample


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() or "fail" in ln.lower() or "mismatch" in ln.lower():
            return ln
    return lines[-1] if lines else "(no output)"


def run_case(c: Case, keep: Path, jobs: int, timeout: float) -> None:
    spec = keep / f"{tt_corpus.spec_name(c.case)}__{c.mode}.kspec"
    spec.write_text(c.spec)
    start = time.perf_counter()
    if not c.runs:
        c.result, c.error = "not run", c.why_not
        return
    env = {**os.environ, "COLUMNS": "100"}
    try:
        build = subprocess.run(["kgen", "build", str(spec), "-o", str(keep / "build"), "-j", str(jobs)],
                               capture_output=True, text=True, timeout=timeout, env=env)
        c.build_seconds = time.perf_counter() - start
        if build.returncode != 0:
            c.result, c.error = "FAILED", "build: " + _first_error(build.stderr + "\n" + build.stdout)
            return
        pc = subprocess.run(["kgen", "port-check", str(spec), "--json", "--numerics", c.numerics, "-j", str(jobs)],
                            capture_output=True, text=True, timeout=max(1.0, timeout - c.build_seconds), env=env)
    except subprocess.TimeoutExpired:
        c.result, c.error = "TIMEOUT", f"over {timeout:.0f} s"
        return
    finally:
        c.seconds = time.perf_counter() - start
    try:
        report = json.loads(pc.stdout)
    except json.JSONDecodeError:
        c.result, c.error = "FAILED", f"port-check exit {pc.returncode}: " + _first_error(pc.stderr + "\n" + pc.stdout)
        return
    c.program_ran = bool(report.get("program", {}).get("ran"))
    if report.get("passed") and pc.returncode == 0:
        c.result = "passed"
    else:
        failures = report.get("failures") or []
        c.result = "FAILED"
        c.error = f"port-check exit {pc.returncode}: " + (str(failures[0]) if failures else _first_error(pc.stderr))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


HEADER = f"{'case':<26} {'form':<26} {'num':<5} {'s':>6}  result"


def row_line(c: Case) -> str:
    result = c.result
    if c.result == "passed" and c.program_ran is False:
        result = "passed (compute kernel only)"
    elif c.result in ("FAILED", "TIMEOUT"):
        result = f"{c.result}: {c.error}"
    elif c.result == "not run":
        result = f"not run: {c.error}"
    line = f"{_cut(c.case, 26):<26} {_cut(c.form(), 26):<26} {c.numerics if c.runs else '-':<5} {c.seconds:>6.1f}  {result}"
    return _cut(line, WIDTH)


def summary_lines(sample: list[Case], cands: list[Case], planned: Counter, args, total: float) -> list[str]:
    done = [c for c in sample if c.result]
    res = Counter(c.result for c in done)
    out = ["", f"arch {args.arch}, seed {args.seed}: {len(sample)} cases drawn from {len(cands)} planned "
               f"candidates (default {planned['default']}, auto {planned['auto']}); numerics exact up to "
               f"{args.exact_macs / 1e9:.2f} G MACs, fast up to {args.fast_macs / 1e9:.1f} G, else not run (nor over "
               f"~{args.max_seconds:.0f} s estimated or {args.max_gib:.0f} GiB)",
           f"ran {sum(res[k] for k in ('passed', 'FAILED', 'TIMEOUT'))}: passed {res['passed']}, FAILED "
           f"{res['FAILED']}, timed out {res['TIMEOUT']}; not run: too large {res['not run']}; "
           f"not reached {len(sample) - len(done)}",
           f"numerics of the passed: exact {sum(c.numerics == 'exact' for c in done if c.result == 'passed')}, "
           f"fast {sum(c.numerics == 'fast' for c in done if c.result == 'passed')}; TT's whole program ran in "
           f"{sum(bool(c.program_ran) for c in done if c.result == 'passed')} of the passed",
           f"total {total:.0f} s ({total / 60:.1f} min)", "",
           f"{'coverage: form':<46} {'planned':>8} {'sample':>7} {'passed':>7}"]
    keys = sorted({s for c in cands for s in c.strata()})
    for key in keys:
        n_pop = sum(key in c.strata() for c in cands)
        n_s = sum(key in c.strata() for c in sample)
        n_p = sum(key in c.strata() for c in sample if c.result == "passed")
        out.append(f"{_cut(key[0] + ' = ' + key[1], 46):<46} {n_pop:>8} {n_s:>7} {n_p:>7}")
    for t in ("transpose_a", "transpose_b", "both"):
        if ("transpose", t) not in keys:
            out.append(f"{'transpose = ' + t:<46} {0:>8} {0:>7} {0:>7}  (no planned case)")
    return out


def write_json(path: Path | None, sample: list[Case], args, total: float, done: bool) -> None:
    if path is None:
        return
    data = {"arch": args.arch, "seed": args.seed, "count": args.count, "exact_macs": args.exact_macs,
            "fast_macs": args.fast_macs, "finished": done, "seconds": round(total, 1),
            "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip(),
            "cases": [{**asdict(c), "form": c.form()} for c in sample]}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tt_corpus_proof.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", choices=tt_corpus.ARCHS, default="wormhole_b0")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60, help="cases of the sample that can run (default 60)")
    ap.add_argument("--keep", type=Path, help="folder for the specs and builds (default: a new temporary one)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="per-case results, rewritten after every case")
    ap.add_argument("--resume", type=Path, metavar="FILE",
                    help="take the results already in this --json file (same arch and seed) and run the rest")
    ap.add_argument("--limit", type=int, help="run only the first N cases of the sample (a quick check)")
    ap.add_argument("--exact-macs", type=float, default=EXACT_MACS)
    ap.add_argument("--fast-macs", type=float, default=FAST_MACS)
    ap.add_argument("--max-seconds", type=float, default=MAX_SECONDS,
                    help="not run above kgen's estimate of the port-check's CPU seconds (default 75)")
    ap.add_argument("--max-gib", type=float, default=MAX_GIB, help="not run above this host memory (default 8)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per case (default 900)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    keep = args.keep or Path(tempfile.mkdtemp(prefix="tt_corpus_proof_"))
    keep.mkdir(parents=True, exist_ok=True)
    cands, planned = candidates(args.arch, args.exact_macs, args.fast_macs, args.max_seconds, args.max_gib)
    sample = draw(cands, args.seed, args.count)
    before = 0.0
    if args.resume is not None and args.resume.exists():
        old = json.loads(args.resume.read_text())
        if (old["arch"], old["seed"]) != (args.arch, args.seed):
            ap.error(f"--resume {args.resume}: arch {old['arch']} seed {old['seed']}, not this run's")
        done = {(c["case"], c["mode"]): c for c in old["cases"] if c["result"]}
        for c in sample:
            if (c.case, c.mode) in done:
                for k in ("result", "error", "program_ran", "seconds", "build_seconds"):
                    setattr(c, k, done[(c.case, c.mode)][k])
        before = float(old["seconds"])
        print(f"--resume: {len(done)} results taken from {args.resume} ({before:.0f} s)", flush=True)
    todo = [c for c in (sample[:args.limit] if args.limit is not None else sample)]
    print(f"{len(sample)} cases drawn ({sum(c.runs for c in sample)} to run); specs and builds "
          f"in {keep}; exact <= {args.exact_macs / 1e9:.2f} G MACs < fast <= {args.fast_macs / 1e9:.1f} G MACs",
          flush=True)
    print(HEADER + "\n" + "-" * WIDTH, flush=True)
    start = time.perf_counter()
    for c in todo:
        if c.result:                                  # from --resume
            continue
        run_case(c, keep, args.jobs, args.timeout)
        print(row_line(c), flush=True)
        write_json(args.json, sample, args, before + time.perf_counter() - start, False)
    total = before + time.perf_counter() - start
    write_json(args.json, sample, args, total, True)
    print("\n" + HEADER + "\n" + "-" * WIDTH)
    print("\n".join(row_line(c) for c in todo))
    print("\n".join(summary_lines(sample, cands, planned, args, total)))
    failed = [c for c in todo if c.result in ("FAILED", "TIMEOUT")]
    for c in failed:
        print(f"\n{c.result}: {c.case} ({c.mode}): {c.error}\nspec {keep / (tt_corpus.spec_name(c.case) + '__' + c.mode + '.kspec')}:\n{c.spec}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
