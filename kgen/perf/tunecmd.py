"""`kgen tune`'s command: search (kgen/perf/tune.py), the database (tunedb.py), verification on
an engine, TT-Metal's own choices beside the pick (ttchoice.py), the table and the written spec."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Mapping

from kgen.core.errors import SpecError
from kgen.core.resources import output_file, write_whole
from kgen.gen.ttnn_defaults import TT_METAL_SOURCE
from kgen.perf.tune import (Engine, Scored, TuneError, TuneResult, predicted_error, spec_text,
                            target_of, tune)


def _progress_bar(enabled: bool):
    """tqdm on stderr; silent when stderr is not a terminal."""
    from tqdm import tqdm

    bar = tqdm(total=0, unit="cand", desc="kgen tune", file=sys.stderr, disable=not enabled, leave=False,
               dynamic_ncols=True, mininterval=0.2)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.n = done
        bar.refresh() if done >= total else bar.update(0)
    return bar, update


def _db_path(args) -> Path:
    from kgen.perf.tunedb import default_db_path

    return Path(args.db) if args.db else default_db_path()


def run_tune(args) -> int:
    from kgen.gen.spec import load_file, resolve
    from kgen.perf.tunedb import TuneDb, TuneDbError

    if args.report and not args.spec:
        path = _db_path(args)
        if path.is_dir():
            raise TuneDbError(f"--db {path} is a folder; pass a database file such as tune.sqlite")
        if not path.exists():
            print(f"kgen tune database: {path}\n  nothing known yet: no database there (`kgen tune SPEC --db {path}` "
                  f"makes one)")
            return 0
        with TuneDb(path) as db:
            sys.stdout.write(db.report())
        return 0
    if not args.spec:
        raise SpecError("kgen tune needs a spec file (or --report to print what the database knows)",
                        hint="kgen tune examples/peak_bf16.kspec")
    if args.no_db and (args.db or args.report):
        raise SpecError("--no-db cannot go with --db or --report")
    output = output_file("-o", Path(args.output)) if args.output else None
    engine = None
    if args.engine == "ray":
        from kgen.perf.tune import require_ray

        require_ray()                   # before the search: a missing Ray is the user's to fix (exit 2)
        if args.verify:
            engine = Engine(args.engine, args.ray_address, args.ray_workers)
    spec = resolve(load_file(args.spec), args.variant)

    db = None if args.no_db else TuneDb(_db_path(args))
    try:
        target_id = db.target_id(target_of(spec)) if db else None
        known = db.known(target_id) if db else {}
        bar, update = _progress_bar(sys.stderr.isatty())
        with bar:
            result = tune(spec, space=args.space, allow_precision=args.allow_precision, padded=args.padded,
                          top=args.top, budget=args.budget, seed=args.seed, known=known, progress=update,
                          jobs=args.jobs)
        if db:
            db.record(target_id, result.outcomes)
        if not result.ranked:
            raise TuneError(f"no legal configuration of {spec.name} in this space ({result.stats.illegal} candidates, "
                            f"every one rejected by the planner); `kgen check {args.spec}` names the rule")
        verdicts: dict[int, dict] = {}
        if args.verify:
            verdicts = _verify(spec, result, engine or Engine("local"), args.numerics, db, target_id)
        winner = _winner(spec, result, verdicts if args.verify else None)
        errors = {i: predicted_error(spec, s.candidate) for i, s in enumerate(result.ranked)} \
            if args.allow_precision else {}
        comparison = _comparison(spec, result.ranked[0] if winner is None else winner, result.space)
        if output is not None:
            if winner is None:
                raise TuneError("no candidate to write: none passed verification")
            write_whole("-o", output, spec_text(spec, winner.candidate,
                                            f"{winner.microseconds:,.2f} us predicted; from {args.spec}"))
        if args.json:
            print(json.dumps(_as_json(spec, result, verdicts, errors, comparison, winner, output, db), indent=2,
                             default=str))
        else:
            sys.stdout.write(format_tune(spec, result, verdicts, errors, comparison, winner, output,
                                         db.path if db else None, args.jobs))
        if args.report and db:
            sys.stdout.write("\n" + db.report())
    finally:
        if db:
            db.close()
    if args.verify and winner is None:
        from kgen.proof.chain import EXIT_INCOMPLETE
        # no candidate failed, but a check could not run here (a missing tool): not a verdict
        incomplete = verdicts and all(v.get("status") == "incomplete" for v in verdicts.values())
        return EXIT_INCOMPLETE if incomplete else 1
    return 0


def _verify(spec, result: TuneResult, engine: Engine, numerics: str, db, target_id) -> dict[int, dict]:
    """Verification verdict per rank; known verdicts come from the database."""
    verdicts: dict[int, dict] = {}
    texts: list[str] = []
    index: list[int] = []
    for i, s in enumerate(result.ranked):
        stored = db.verification(target_id, s.candidate) if db else None
        if stored is not None and stored[0] != "incomplete":      # a check that could not run: try again
            verdicts[i] = {"status": stored[0], "errors": list(stored[1]), "kernel_id": stored[2], "steps": {},
                           "reused": True}
            continue
        texts.append(spec_text(spec, s.candidate))
        index.append(i)
    for j, verdict in engine.run(texts, numerics):
        i = index[j]
        verdicts[i] = verdict
        if db:
            db.record_verification(target_id, result.ranked[i].candidate, verdict.get("kernel_id"), verdict["status"],
                                   verdict["errors"], verdict)
    return verdicts


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
            ir = run(choice.spec, "ir").ir
            us = predict(ir).microseconds
            p = ir.plan
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


def format_tune(spec, result: TuneResult, verdicts, errors, comparison, winner, output, db_path, jobs) -> str:
    st = result.stats
    how = (f"sampled {st.candidates:,} of {st.space_size:,} (seed)" if st.sampled
           else f"{st.space_size:,} candidates, exhaustive")
    lines = [f"kgen tune: {spec.name} ({spec.arch} {spec.m} x {spec.n} x {spec.k}"
             f"{' batch ' + str(spec.batch) if spec.batch != 1 else ''}, {spec.dtype_in0} x {spec.dtype_in1} -> "
             f"{spec.dtype_out}, {spec.compute.math_fidelity})",
             f"  space     {_space_line(result)}",
             f"  search    {how}: {st.predicted:,} predicted, {st.reused:,} from the database, {st.illegal:,} "
             f"rejected by the planner, {st.duplicates:,} same policy either way, {st.pruned:,} pruned by the "
             f"lower bound; {st.seconds:.2f} s, {st.rate:,.0f} candidates/s ({jobs} process{'es' if jobs > 1 else ''})"]
    if db_path:
        lines.append(f"  database  {db_path}")
    lines += ["", "   #   time us   TFLOPS   util  policy          grid   per_core  out_block   w  subblock  dataflow"
                  "  fidelity" + ("   error" if errors else "") + ("  verify" if verdicts else "")]
    for i, s in enumerate(result.ranked):
        c = s.candidate
        row = (f"  {i + 1:>2} {s.microseconds:>9,.2f} {s.tflops:>8,.1f} {s.utilization:>6.1%}  {s.policy:<14} "
               f"{c.grid[0]:>2}x{c.grid[1]:<3} {c.per_core[0]:>3}x{c.per_core[1]:<4} {c.out_block[0]:>4}x{c.out_block[1]:<4}"
               f" {c.in0_block_w:>3}  {c.out_subblock[0]:>3}x{c.out_subblock[1]:<4} {c.dataflow:<9} "
               f"{c.math_fidelity}{'+fp32' if c.fp32_dest_acc else '':<5}")
        if errors:
            row += f" {errors[i]:>7.2e}"
        if verdicts:
            v = verdicts.get(i)
            row += "  " + (v["status"] + (" (known)" if v.get("reused") else "") if v else "-")
        if c.padded(spec):
            row += "  (padded)"
        lines.append(row)
        if verdicts and verdicts.get(i, {}).get("status") == "failed":
            lines.append(f"      dropped: {'; '.join(verdicts[i]['errors'])}")
        if verdicts and verdicts.get(i, {}).get("status") == "incomplete":
            lines.append(f"      not verified: {'; '.join(verdicts[i]['errors'])}")
    if errors:
        lines.append("  error: max |golden - exact| / max |exact| of the golden model on a 32 x K x 32 proxy with the "
                     "candidate's K, formats, fidelity and accumulation path")
    lines += ["", f"  against TT-Metal ({TT_METAL_SOURCE}; the same model, DRAM-interleaved tensors)"]
    base = comparison[0]["microseconds"]
    for r in comparison:
        us = f"{r['microseconds']:>10,.2f} us" if r["microseconds"] is not None else f"{'n/a':>13}"
        ratio = f"  kgen x{r['microseconds'] / base:.2f}" if r["microseconds"] and r["who"] != "kgen tune" else ""
        lines.append(f"    {r['who']:<10} {us}  {r['config']}{ratio}{'  (' + r['note'] + ')' if r['note'] else ''}")
        if r.get("compute_from") and r["who"] != "kgen tune":
            lines.append(f"    {'':<10} {'':>13}  compute: {r['compute_from']}")
        for why in r.get("like_for_like", ()):
            lines.append(f"    {'':<10} {'':>13}  not like for like: {why}")
    lines.append("")
    if winner is None:
        unverified = [v for v in (verdicts or {}).values() if v.get("status") == "incomplete"]
        if verdicts and len(unverified) == len(verdicts):
            lines.append(f"  winner    none: INCOMPLETE, a check could not run here: {unverified[0]['errors'][0]} "
                         "(kgen doctor)")
        else:
            lines.append("  winner    none: no candidate passed verification")
    else:
        lines.append(f"  winner    {winner.candidate.short(winner.policy)}: {winner.microseconds:,.2f} us"
                     + (" (verified)" if verdicts else ""))
    if output is not None and winner is not None:
        lines.append(f"  wrote     {output} (kgen check / kgen build take it)")
    return "\n".join(lines) + "\n"


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
