"""`kgen tune`'s command: search (kgen/perf/tune/), the database (tunedb.py), verification on
an engine, TT-Metal's own choices beside the pick (ttchoice.py), the table and the written spec."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

from kgen.core.errors import SpecError
from kgen.core.resources import output_file, write_whole
from kgen.gen.ttnn_defaults import TT_METAL_SOURCE
from kgen.perf.tune.verify import steps_text
from kgen.perf.tune import (Engine, Scored, TuneError, TuneResult, predicted_error, spec_text,
                            target_of, tune)


PLAIN_PROGRESS_AFTER = 3.0      # seconds: with no terminal, a run this long says where it is on stderr


@dataclass(frozen=True)
class TuneOptions:
    """What `kgen tune` was asked to do, one field per flag (kgen/cli.py's `tune` parser, which holds
    the defaults and makes the paths absolute)."""

    spec: str | None                 # the .kspec; None only with --report
    variant: str | None
    space: str                       # auto | all
    allow_precision: bool
    padded: bool
    top: int
    verify: bool
    numerics: str                    # --verify's emulation: auto | exact | fast
    output: str | None               # -o: where the winner is written as a .kspec
    db_file: str | None              # --db; None: the default database
    no_db: bool
    report: bool
    engine: str                      # local | ray
    ray_address: str | None
    ray_workers: int | None
    budget: int
    seed: int
    jobs: int
    as_json: bool                    # --json
    min_pcc: float | None = None     # an accuracy target (kgen/perf/accuracycmd.py)
    max_rel_error: float | None = None
    allow_dtype: tuple[str, ...] = ()
    inputs: tuple[str, ...] | None = None
    html: str | None = None


def _progress_bar(enabled: bool):
    """tqdm on stderr at a terminal, with the best so far; with none, a plain line on stderr every
    few seconds once the search has run that long."""
    from tqdm import tqdm

    bar = tqdm(total=0, unit="cand", desc="kgen tune", file=sys.stderr, disable=not enabled, leave=False,
               dynamic_ncols=True, mininterval=0.2)
    start = time.monotonic()
    last = [start]

    def update(done: int, total: int, best: Scored | None = None) -> None:
        so_far = f"best so far {best.microseconds:,.2f} us predicted" if best is not None else ""
        if not enabled:
            now = time.monotonic()
            if now - last[0] >= PLAIN_PROGRESS_AFTER:
                last[0] = now
                _say(f"search: {done:,} of {total:,} candidates decided, {now - start:.0f} s"
                     + (f"; {so_far}" if so_far else ""))
            return
        if bar.total != total:
            bar.total = total
        bar.n = done
        if so_far:
            bar.set_postfix_str(so_far, refresh=False)
        bar.refresh() if done >= total else bar.update(0)
    return bar, update


def _say(text: str) -> None:
    """One progress line on stderr (stdout stays the report)."""
    print(f"kgen tune: {text}", file=sys.stderr, flush=True)


def _db_path(db: str | None) -> Path:
    from kgen.perf.tunedb import default_db_path

    return Path(db) if db else default_db_path()


def run_tune(options: TuneOptions) -> int:
    from kgen.gen.spec import load_file, resolve
    from kgen.perf.tunedb import TuneDb, TuneDbError

    if options.report and not options.spec:
        path = _db_path(options.db_file)
        if path.is_dir():
            raise TuneDbError(f"--db {path} is a folder; pass a database file such as tune.sqlite")
        if not path.exists():
            print(f"kgen tune database: {path}\n  nothing known yet: no database there (`kgen tune SPEC --db {path}` "
                  f"makes one)")
            return 0
        with TuneDb(path) as db:
            sys.stdout.write(db.report())
        return 0
    if not options.spec:
        raise SpecError("kgen tune needs a spec file (or --report to print what the database knows)",
                        hint="kgen tune examples/peak_bf16.kspec")
    if options.no_db and (options.db_file or options.report):
        raise SpecError("--no-db cannot go with --db or --report")
    if options.min_pcc is not None or options.max_rel_error is not None:
        return _run_accuracy(options)
    from kgen.perf.accuracycmd import check_flags
    check_flags(options)
    output = output_file("-o", Path(options.output)) if options.output else None
    engine = None
    if options.engine == "ray":
        from kgen.perf.tune import require_ray

        require_ray()                   # before the search: a missing Ray is the user's to fix (exit 2)
        if options.verify:
            engine = Engine(options.engine, options.ray_address, options.ray_workers)
    spec = resolve(load_file(options.spec), options.variant)

    db = None if options.no_db else TuneDb(_db_path(options.db_file))
    try:
        target_id = db.target_id(target_of(spec)) if db else None
        known = db.known(target_id) if db else {}
        bar, update = _progress_bar(sys.stderr.isatty())
        with bar:
            result = tune(spec, space=options.space, allow_precision=options.allow_precision, padded=options.padded,
                          top=options.top, budget=options.budget, seed=options.seed, known=known, progress=update,
                          jobs=options.jobs)
        if db:
            db.record(target_id, result.outcomes)
        if not result.ranked:
            raise TuneError(f"no legal configuration of {spec.name} in this space ({result.stats.illegal} candidates, "
                            f"every one rejected by the planner); `kgen check {options.spec}` names the rule")
        verdicts: dict[int, dict] = {}
        if options.verify:
            verdicts = _verify(spec, result, engine or Engine("local"), options.numerics, db, target_id)
        winner = _winner(spec, result, verdicts if options.verify else None)
        errors = {i: predicted_error(spec, s.candidate) for i, s in enumerate(result.ranked)} \
            if options.allow_precision else {}
        comparison = _comparison(spec, result.ranked[0] if winner is None else winner, result.space)
        if output is not None:
            if winner is None:
                raise TuneError("no candidate to write: none passed verification")
            write_whole("-o", output, spec_text(spec, winner.candidate,
                                            f"{winner.microseconds:,.2f} us predicted; from {options.spec}"))
        if options.as_json:
            print(json.dumps(_as_json(spec, result, verdicts, errors, comparison, winner, output, db), indent=2,
                             default=str))
        else:
            sys.stdout.write(format_tune(spec, result, verdicts, errors, comparison, winner, output,
                                         db.path if db else None, options.jobs))
        if options.report and db:
            sys.stdout.write("\n" + db.report())
    finally:
        if db:
            db.close()
    if options.verify and winner is None:
        from kgen.proof.chain import EXIT_INCOMPLETE
        # no candidate failed, but a check could not run here (a missing tool): not a verdict
        incomplete = verdicts and all(v.get("status") == "incomplete" for v in verdicts.values())
        return EXIT_INCOMPLETE if incomplete else 1
    return 0


def _run_accuracy(options: TuneOptions) -> int:
    """`--min-pcc` / `--max-rel-error`: kgen/perf/accuracycmd.py."""
    from kgen.perf.accuracycmd import AccuracyRequest, run_accuracy
    from kgen.perf.tune.accuracy import AccuracyTarget

    target = AccuracyTarget(options.min_pcc, options.max_rel_error)     # a bad value: exit 2 before any work
    if options.report or options.engine != "local":
        raise SpecError(f"{'--report' if options.report else '--engine ' + options.engine} does not go with an "
                        f"accuracy target (--min-pcc, --max-rel-error): its verification runs here")
    return run_accuracy(AccuracyRequest(
        spec=options.spec, variant=options.variant, target=target, allow_dtype=options.allow_dtype,
        inputs=options.inputs, space=options.space, padded=options.padded, verify=options.verify, top=options.top,
        output=options.output, html=options.html, db_file=None if options.no_db else _db_path(options.db_file),
        budget=options.budget, seed=options.seed, jobs=options.jobs, as_json=options.as_json))


def _verify(spec, result: TuneResult, engine: Engine, numerics: str, db, target_id) -> dict[int, dict]:
    """Verification verdict per rank; known verdicts come from the database (not re-run). Each job
    says on stderr when it starts and ends (candidate, checks, time), with the best verified so far."""
    from kgen.perf.tune import verify_numerics

    verdicts: dict[int, dict] = {}
    texts: list[str] = []
    index: list[int] = []
    mode = numerics if numerics != "auto" else verify_numerics(spec.m, spec.n, spec.k, spec.batch)
    for i, s in enumerate(result.ranked):
        stored = db.verification(target_id, s.candidate) if db else None
        if stored is not None and stored[0] != "incomplete":      # a check that could not run: try again
            verdicts[i] = {"status": stored[0], "errors": list(stored[1]), "kernel_id": stored[2],
                           "steps": _stored_steps(db, stored[2]), "reused": True}
            _say(f"verify #{i + 1}: {stored[0]}, known, not re-run (the database's verdict; --no-db re-runs it)")
            continue
        texts.append(spec_text(spec, s.candidate))
        index.append(i)

    def started(j: int) -> None:
        s = result.ranked[index[j]]
        _say(f"verify #{index[j] + 1} ({s.candidate.short(s.policy)}): started: build, type-check, "
             f"emulate {mode}, port-check")

    # the local engine runs one job at a time, lazily: job j + 1 starts when the loop asks for it
    sequential = engine.name == "local"
    for j in range(min(1, len(texts)) if sequential else len(texts)):
        started(j)
    arriving = engine.run(texts, numerics)
    for j, verdict in arriving:
        i = index[j]
        verdicts[i] = verdict
        if db:
            db.record_verification(target_id, result.ranked[i].candidate, verdict.get("kernel_id"), verdict["status"],
                                   verdict["errors"], verdict)
        best = min((k for k, v in verdicts.items() if v.get("status") == "passed"), default=None)
        _say(f"verify #{i + 1}: {verdict['status']} in {verdict.get('seconds', 0):.1f} s "
             f"({steps_text(verdict.get('steps') or {}) or '; '.join(verdict['errors'])}); best verified so far: "
             + (f"#{best + 1}, {result.ranked[best].microseconds:,.2f} us predicted" if best is not None else "none"))
        if sequential and j + 1 < len(texts):
            started(j + 1)
    return verdicts


def _stored_steps(db, kernel_id: str | None) -> dict:
    """The steps of the database's verdict on `kernel_id` (which emulation, which checks), {} when
    it kept none."""
    from kgen.perf.tunedb import checker_digest

    if kernel_id is None:
        return {}
    row = db.conn.execute("SELECT detail FROM verdicts WHERE kernel_id = ? AND checker = ?",
                          (kernel_id, checker_digest())).fetchone()
    try:
        detail = json.loads(row[0]) if row and row[0] else {}
    except ValueError:
        return {}
    steps = detail.get("steps") if isinstance(detail, dict) else None
    return steps if isinstance(steps, dict) else {}


def _winner(spec, result: TuneResult, verdicts: Mapping[int, dict] | None) -> Scored | None:
    """The best candidate and, with --verify, the best that passed."""
    for i, s in enumerate(result.ranked):
        if verdicts is not None and verdicts.get(i, {}).get("status") != "passed":
            continue
        return s
    return None


def _comparison(spec, pick: Scored, space=None) -> list[dict]:
    """kgen's pick, TT's automatic choice and (benchmark shapes) TT's manual one, each predicted by
    the same model with DRAM-interleaved tensors. Each row names the fidelity, the accumulation
    request and policy, the dataflow and the grid it assumed; `like_for_like` lists what differs from
    kgen's pick in a way kgen's search did not also offer TT."""
    from kgen.core.errors import KgenError
    from kgen.gen.pipeline import run
    from kgen.perf.model import predict
    from kgen.perf.ttchoice import tt_auto, tt_manual

    c = pick.candidate
    rows = [{"who": "kgen tune", "microseconds": pick.microseconds, "config": pick.candidate.short(pick.policy),
             "note": "padded" if pick.candidate.padded(spec) else "", "fidelity": c.math_fidelity,
             "fp32_dest_acc": c.fp32_dest_acc, "packer_l1_acc": c.packer_l1_acc, "policy": pick.policy,
             "dataflow": c.dataflow, "grid": list(c.grid), "compute_from": "kgen's search over the spec",
             "like_for_like": []}]
    auto = tt_auto(spec)
    manual = tt_manual(spec)
    searched = set(space.searched) if space is not None else set()
    for who, choice in (("TT auto", auto), ("TT manual", manual[0] if manual else None)):
        if choice is None:
            rows.append({"who": who, "microseconds": None, "config": "", "note": "not a benchmark shape"})
            continue
        if choice.spec is None:
            rows.append({"who": who, "microseconds": None, "config": "", "note": choice.note})
            continue
        try:
            built = run(choice.spec, "ir")
            us = predict(built.ir).microseconds
            p = built.plan
            cc = p.compute
            config = (f"grid {p.grid_requested[0]}x{p.grid_requested[1]} per_core {p.per_core_m}x{p.per_core_n} "
                      f"block {p.out_block_h}x{p.out_block_w} w {p.in0_block_w} "
                      f"sb {p.out_subblock_h}x{p.out_subblock_w} {p.policy} {p.spec.dataflow} "
                      f"{cc.math_fidelity}{' fp32' if cc.fp32_dest_acc else ''}")
            unlike = []
            if (cc.math_fidelity, cc.fp32_dest_acc) != (c.math_fidelity, c.fp32_dest_acc):
                unlike.append(f"TT runs {cc.math_fidelity}{' fp32' if cc.fp32_dest_acc else ''}, kgen's pick "
                              f"{c.math_fidelity}{' fp32' if c.fp32_dest_acc else ''}")
            if "packer_l1_acc" in searched and cc.packer_l1_acc != c.packer_l1_acc and who == "TT auto" \
                    and choice.compute_from.startswith("the spec"):
                unlike.append(f"kgen searched packer_l1_acc; TT auto is held at the spec's "
                              f"{'true' if cc.packer_l1_acc else 'false'}")
            rows.append({"who": who, "microseconds": us, "config": config, "note": choice.note,
                         "fidelity": cc.math_fidelity, "fp32_dest_acc": cc.fp32_dest_acc,
                         "packer_l1_acc": cc.packer_l1_acc, "policy": p.policy, "dataflow": p.spec.dataflow,
                         "grid": list(p.grid_requested),
                         "compute_from": choice.compute_from or "TT's benchmark config",
                         "like_for_like": unlike})
        except KgenError as exc:
            rows.append({"who": who, "microseconds": None, "config": "",
                         "note": f"kgen cannot plan it: {getattr(exc, 'message', str(exc))}"})
    return rows


def _space_line(result: TuneResult) -> str:
    sp = result.space
    fixed = ", ".join(f"{k} {_fmt(v)}" for k, v in sp.fixed.items())
    return (f"{sp.mode}{' + padded per_core' if sp.padded else ''}: searched {', '.join(sp.searched) or 'nothing'}"
            + (f"; fixed {fixed}" if fixed else ""))


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return " x ".join(str(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _x(pair) -> str:
    return f"{pair[0]}x{pair[1]}"


def _fidelity(fidelity: str, fp32: bool) -> str:
    return fidelity + ("+fp32" if fp32 else "")


CHECKS = ("build, type-check against TT-Metal's headers, emulate (exact: bit-for-bit equal to the golden "
          "model; fast: float32, within tolerance of the fast golden model; both: no hazards, every schedule "
          "the same) and port-check (TT-Metal's own compute kernel, and its whole program where it has one, "
          "give kgen's bits)")

LEGEND = ("grid: cores x by y; per core, out block: per_core and out_block, tiles of M x N per core and per "
          "block; w: in0_block_w, tiles of K per block; sb: out_subblock, tiles of M x N per DST section; policy: "
          "packer_l1_acc accumulates partials in L1 by the packer, spill_reload spills and reloads them, "
          "dst_only keeps them in DST (one K block); fidelity: math_fidelity (+fp32: fp32_dest_acc); "
          "same policy either way: candidates that request packer_l1_acc where the planner takes the same "
          "policy without it, kept once")


UTILIZATION_NOTE_TUNE = ("util %: predicted utilization against the full card grid at each candidate's own "
                         "fidelity's peak rate: the ideal time (M*K*N/32^3 tile products at that fidelity's "
                         "cycles per tile, spread over every core of the card) over the predicted time; so a "
                         "smaller grid shows lower utilization, and so can a faster fidelity (HiFi2 against "
                         "HiFi4) while it delivers more TFLOPS")


def format_tune(spec, result: TuneResult, verdicts, errors, comparison, winner, output, db_path, jobs,
                width: int | None = None) -> str:
    """The terminal report at `width` (the terminal's): the search, the K best (predicted) and the
    legend of their table, their verification, TT-Metal's own choices beside the pick, and the
    winner last, where the terminal leaves the eye."""
    from kgen.core import terminal

    width = width or terminal.width()
    lines = _search_lines(spec, result, db_path, jobs, width)
    lines += _ranked_lines(spec, result.ranked, verdicts, errors, width)
    lines += _legend_lines(spec, result.ranked, verdicts, errors, width)
    if verdicts:
        lines += _verdict_lines(result.ranked, verdicts, width)
    lines += [""] + _comparison_lines(comparison, width)
    lines += _winner_lines(winner, verdicts, output, width)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _search_lines(spec, result: TuneResult, db_path, jobs, width: int) -> list[str]:
    """What was searched, how, and how fast."""
    from kgen.perf.abreport import _wrap

    st = result.stats
    how = (f"sampled {st.candidates:,} of {st.space_size:,} (seed)" if st.sampled
           else f"{st.space_size:,} candidates, exhaustive")
    lines = _wrap(f"kgen tune: {spec.name} ({spec.arch} {spec.m} x {spec.n} x {spec.k}"
                  f"{' batch ' + str(spec.batch) if spec.batch != 1 else ''}, {spec.dtype_in0} x {spec.dtype_in1} "
                  f"-> {spec.dtype_out}, {spec.compute.math_fidelity})", width, indent="", more="  ")
    lines += _wrap(f"space     {_space_line(result)}", width, more=" " * 12)
    lines += _wrap(f"search    {how}: {st.predicted:,} predicted, {st.reused:,} from the database, "
                   f"{st.illegal:,} rejected by the planner, {st.duplicates:,} same policy either way, "
                   f"{st.pruned:,} pruned by the lower bound; {st.seconds:.2f} s, {st.rate:,.0f} candidates/s "
                   f"({jobs} process{'es' if jobs > 1 else ''})", width, more=" " * 12)
    if db_path:
        lines += _wrap(f"database  {db_path}", width, more=" " * 12)
    return lines


def _ranked_lines(spec, ranked, verdicts, errors, width: int) -> list[str]:
    """The K best as one table, one row per candidate."""
    from kgen.core.terminal import fitted_table

    keys = [("#", [str(i + 1) for i in range(len(ranked))], True)]
    cols: list[tuple[str, list[str], bool]] = [
        ("predicted us", [f"{s.microseconds:,.2f}" for s in ranked], True),
        ("predicted TFLOPS", [f"{s.tflops:,.1f}" for s in ranked], True),
        ("util % (a)", [f"{100 * s.utilization:.1f}" for s in ranked], True),
        ("policy", [s.policy for s in ranked], False),
        ("grid", [_x(s.candidate.grid) for s in ranked], False),
        ("per core", [_x(s.candidate.per_core) for s in ranked], False),
        ("out block", [_x(s.candidate.out_block) for s in ranked], False),
        ("w", [str(s.candidate.in0_block_w) for s in ranked], True),
        ("sb", [_x(s.candidate.out_subblock) for s in ranked], False),
        ("dataflow", [s.candidate.dataflow for s in ranked], False),
        ("fidelity", [_fidelity(s.candidate.math_fidelity, s.candidate.fp32_dest_acc) for s in ranked], False),
    ]
    if any(s.candidate.padded(spec) for s in ranked):
        cols.append(("padded (b)", ["yes" if s.candidate.padded(spec) else "" for s in ranked], False))
    if errors:
        cols.append(("error (c)", [f"{errors[i]:.2e}" for i in range(len(ranked))], True))
    if verdicts:
        cols.append(("verify (d)", [_verify_cell(verdicts.get(i)) for i in range(len(ranked))], False))
    return [""] + fitted_table(f"the {len(ranked)} best, predicted by kgen's model", keys + cols, width)


def _verdict_lines(ranked, verdicts, width: int) -> list[str]:
    """What each verification ran and found."""
    from kgen.perf.abreport import _wrap

    lines = [""] + _wrap(f"verified (d): {CHECKS}", width, more="    ")
    for i in range(len(ranked)):
        v = verdicts.get(i)
        if v is None:
            continue
        detail = steps_text(v.get("steps") or {})
        text = f"#{i + 1} {v['status']}" + (f": {detail}" if detail else "")
        if v.get("reused"):
            text += "; known, not re-run (the database's verdict on this kernel; --no-db re-runs it)"
        elif isinstance(v.get("seconds"), (int, float)):
            text += f"; {v['seconds']:.1f} s"
        lines += _wrap(text, width, indent="    ", more="      ")
        # an incomplete job's steps already say what did not run and why
        if v["status"] == "failed" or (v["status"] == "incomplete" and not detail):
            lines += _wrap(f"{'dropped' if v['status'] == 'failed' else 'not verified'}: {'; '.join(v['errors'])}",
                           width, indent="      ", more="        ")
    return lines


def _winner_lines(winner, verdicts, output, width: int) -> list[str]:
    from kgen.perf.abreport import _wrap

    lines = [""]
    if winner is None:
        unverified = [v for v in (verdicts or {}).values() if v.get("status") == "incomplete"]
        if verdicts and len(unverified) == len(verdicts):
            lines += _wrap(f"winner    none: INCOMPLETE, a check could not run here: {unverified[0]['errors'][0]} "
                           "(kgen doctor)", width, more=" " * 12)
        else:
            lines.append("  winner    none: no candidate passed verification")
    else:
        lines += _wrap(f"winner    {winner.candidate.short(winner.policy)}: {winner.microseconds:,.2f} us predicted"
                       + (" (verified, see above)" if verdicts else " (not verified: --verify runs the checks)"),
                       width, more=" " * 12)
    if output is not None and winner is not None:
        lines += _wrap(f"wrote     {output} (kgen check / kgen build take it)", width, more=" " * 12)
    return lines


def _legend_lines(spec, ranked, verdicts, errors, width: int) -> list[str]:
    from kgen.perf.abreport import _wrap

    lines = [""] + _wrap(f"legend: {LEGEND}", width, more="    ")
    lines += _wrap(f"(a) {UTILIZATION_NOTE_TUNE}", width, more="    ")
    if any(s.candidate.padded(spec) for s in ranked):
        lines += _wrap("(b) padded: per_core does not divide the tiles; the last block of cores holds fewer "
                       "real tiles (TT-Metal's padded last block)", width, more="    ")
    if errors:
        lines += _wrap("(c) error: max |golden - exact| / max |exact| of the golden model on a 32 x K x 32 proxy "
                       "with the candidate's K, formats, fidelity and accumulation path", width, more="    ")
    if verdicts:
        lines += _wrap("(d) verify: passed = every check ran and passed (the list above); incomplete = a check "
                       "could not run here (kgen doctor says why), never a pass; known = the database's verdict on "
                       "the same kernel, not re-run (--no-db re-runs it)", width, more="    ")
    return lines


def _verify_cell(v: Mapping | None) -> str:
    if v is None:
        return "-"
    mode = (v.get("steps") or {}).get("emulate")
    mode = f" {mode['numerics']}" if isinstance(mode, Mapping) and mode.get("numerics") else ""
    return v["status"] + mode + (" known" if v.get("reused") else "")


def _comparison_lines(comparison: list[dict], width: int) -> list[str]:
    """kgen's pick beside TT-Metal's choices: one table row each (predicted time, the ratio, grid,
    fidelity, dataflow, the config), then what makes a comparison not like for like."""
    from kgen.core.terminal import fitted_table
    from kgen.perf.abreport import _wrap

    base = comparison[0]
    rows = comparison
    keys = [("", [r["who"] for r in rows], False)]

    def ratio(r) -> str:
        if r["who"] == "kgen tune" or not r["microseconds"]:
            return ""
        return f"{r['microseconds'] / base['microseconds']:.2f}x"

    cols = [
        ("predicted us", [f"{r['microseconds']:,.2f}" if r["microseconds"] is not None else "n/a"
                                 for r in rows], True),
        ("kgen speed-up", [ratio(r) for r in rows], True),
        ("grid", [_x(r["grid"]) if r.get("grid") else "" for r in rows], False),
        ("fidelity", [_fidelity(r["fidelity"], r["fp32_dest_acc"]) if r.get("fidelity") else "" for r in rows],
         False),
        ("dataflow", [r.get("dataflow", "") for r in rows], False),
        ("policy", [r.get("policy", "") for r in rows], False),
    ]
    out = fitted_table(f"against TT-Metal ({TT_METAL_SOURCE}), each predicted by the same model with "
                       f"DRAM-interleaved tensors", keys + cols, width)
    for r in rows:
        notes = []
        if r["config"]:
            notes.append(r["config"].replace(" w ", " in0_block_w ").replace(" sb ", " out_subblock "))
        if r.get("grid") and r["who"] != "kgen tune" and list(r["grid"]) != list(base.get("grid") or []):
            g, b = r["grid"], base["grid"]
            notes.append(f"not the same grid: kgen's pick uses {_x(b)} = {b[0] * b[1]} cores, {r['who']} "
                         f"{_x(g)} = {g[0] * g[1]}; the ratio compares them as they are")
        if r.get("compute_from") and r["who"] != "kgen tune":
            notes.append(f"compute: {r['compute_from']}")
        notes += [f"not like for like: {why}" for why in r.get("like_for_like", ())]
        if r["note"]:
            notes.append(r["note"])
        for j, note in enumerate(notes):         # one line each, so that no note runs into the next
            out += _wrap(f"{r['who'] + ':' if j == 0 else '':<10} {note}", width, indent="    ", more=" " * 15)
    return out


def _as_json(spec, result: TuneResult, verdicts, errors, comparison, winner, output, db) -> dict:
    st = result.stats
    return {
        "spec": spec.name, "space": {"mode": result.space.mode, "searched": list(result.space.searched),
                                     "padded": result.space.padded},
        "stats": {**asdict(st), "rate": st.rate},
        "ranked": [{**asdict(s), "padded": s.candidate.padded(spec),
                    "error": errors.get(i), "verify": verdicts.get(i)} for i, s in enumerate(result.ranked)],
        "comparison": comparison,
        "winner": asdict(winner) if winner else None,
        "output": str(output) if output else None,
        "db": str(db.path) if db else None,
    }
