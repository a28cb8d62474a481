"""`kgen tune SPEC --min-pcc P / --max-rel-error E`'s command: the inputs, the accuracy search
(kgen/perf/tune/accuracy.py), `--verify` (a pick whose exact emulation misses the target is
dropped and the next one verified), the database, the report (accuracyreport.py) and the written
spec."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from kgen.core.errors import EXIT_INCOMPLETE
from kgen.core.resources import output_file, write_whole
from kgen.perf.accuracyreport import Verified, as_json, format_accuracy, html_text
from kgen.perf.tune.accuracy import (AccuracyResult, AccuracyTarget, Judged, parse_allow_dtype, tune_for_accuracy,
                                     with_dtypes)
from kgen.perf.tune.accuracy_verify import verify_accuracy
from kgen.perf.tune.inputs import load_inputs
from kgen.perf.tune.space import TuneError, spec_text, target_of


@dataclass(frozen=True)
class AccuracyRequest:
    """What `kgen tune` was asked with an accuracy target (tunecmd.TuneOptions' fields it reads)."""

    spec: str
    variant: str | None
    target: AccuracyTarget
    allow_dtype: tuple[str, ...]
    inputs: tuple[str, ...] | None
    space: str
    padded: bool
    verify: bool
    top: int                         # with --verify: at most this many picks verified
    output: str | None
    html: str | None
    db_file: Path | None             # None: no database
    budget: int
    seed: int
    jobs: int
    as_json: bool


def _say(text: str) -> None:
    print(f"kgen tune: {text}", file=sys.stderr, flush=True)


def run_accuracy(r: AccuracyRequest) -> int:
    from kgen.gen.spec import load_file, resolve

    allow = parse_allow_dtype(r.allow_dtype)
    output = output_file("-o", Path(r.output)) if r.output else None
    html = output_file("--html", Path(r.html)) if r.html else None
    spec = resolve(load_file(r.spec), r.variant)
    source = load_inputs(spec, r.inputs, r.seed)
    db = None
    if r.db_file is not None:
        from kgen.perf.tunedb import TuneDb
        db = TuneDb(r.db_file)
    try:
        known, ids = _known(db, spec, allow)
        search = dict(allow_dtype=allow, source=source, space=r.space, padded=r.padded, budget=r.budget, seed=r.seed,
                      jobs=r.jobs, say=_say)
        result = tune_for_accuracy(spec, r.target, known=known, **search)
        _record(db, ids, result)
        final, verified = result, []
        if r.verify and result.pick is not None:
            final, verified = _verify(spec, r, result, known, search)
            _record(db, ids, final)
        pick = final.pick if not r.verify else next((v.judged for v in verified if v.check.status == "passed"), None)
    finally:
        if db:
            db.close()
    if output is not None and pick is not None:
        write_whole("-o", output, spec_text(with_dtypes(spec, pick.dtypes), pick.scored.candidate,
                                            f"{pick.microseconds:,.2f} us predicted, {r.target.text()}; from {r.spec}"))
    if html is not None:
        write_whole("--html", html, html_text(result, verified, final, pick))
    if r.as_json:
        print(json.dumps(as_json(result, verified, final, pick, output, html), indent=2, default=str))
    else:
        sys.stdout.write(format_accuracy(result, verified, final, pick, output, html))
    if pick is not None:
        return 0
    incomplete = verified and all(v.check.status == "incomplete" for v in verified)
    return EXIT_INCOMPLETE if incomplete else 1


def _known(db, spec, allow) -> tuple[dict, dict]:
    """Per dtype pair, the database's outcomes and the target's id."""
    from kgen.perf.tune.accuracy import dtype_choices

    known, ids = {}, {}
    if db is None:
        return known, ids
    for dtypes in dtype_choices(spec, allow):
        ids[dtypes] = db.target_id(target_of(with_dtypes(spec, dtypes)))
        known[dtypes] = db.known(ids[dtypes])
    return known, ids


def _record(db, ids: dict, result: AccuracyResult) -> None:
    if db is None:
        return
    for dtypes, outcomes in result.outcomes.items():
        if outcomes:
            db.record(ids[dtypes], outcomes)


def _verify(spec, r: AccuracyRequest, result: AccuracyResult, known: dict,
            search: dict) -> tuple[AccuracyResult, list[Verified]]:
    """Verify the pick; a pick that fails is dropped and the search run again without it, at most
    `r.top` times. A check that cannot run here (a missing tool) stops: it is no verdict."""
    verified: list[Verified] = []
    dropped: set = set()
    current = result
    # the predictions made so far, reused by every search again
    known = {d: {**known.get(d, {}), **{o.candidate.key(): o for o in result.outcomes.get(d, ())}}
             for d in result.dtype_options}
    while current.pick is not None and len(verified) < r.top:
        j: Judged = current.pick
        _say(f"verify #{len(verified) + 1}: exact emulation of the pick ({j.scored.candidate.short(j.scored.policy)}"
             f"), then build, type-check, emulate and port-check it")
        check = verify_accuracy(with_dtypes(spec, j.dtypes), j, r.target, result.source, seed=r.seed)
        verified.append(Verified(j, check))
        _say(f"verify #{len(verified)}: {check.status} in {check.seconds:.1f} s"
             + (f" ({'; '.join(check.errors)})" if check.errors else ""))
        if check.status != "failed":
            break
        dropped.add(j.key())
        current = tune_for_accuracy(spec, r.target, known=known, exclude=frozenset(dropped), judge=result.judge,
                                    **search)
    return current, verified


def check_flags(options) -> None:
    """The accuracy flags without a target are bad input: they change nothing without one."""
    given = [flag for flag, value in (("--allow-dtype", options.allow_dtype), ("--inputs", options.inputs),
                                      ("--html", options.html)) if value]
    if given:
        raise TuneError(f"{' and '.join(given)} {'go' if len(given) > 1 else 'goes'} with an accuracy target: add "
                        f"--min-pcc P (such as 0.999) or --max-rel-error E (such as 0.01)")
