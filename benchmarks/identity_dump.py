"""Dump what kgen makes of fuzz-drawn specs, to compare two checkouts byte for byte.

A refactor that must not change behaviour runs this on the commit before it and on its own code,
then compares the two dumps:

    PYTHONPATH=/path/to/old python3 benchmarks/identity_dump.py --out /tmp/old.json
    PYTHONPATH=$PWD         python3 benchmarks/identity_dump.py --out /tmp/new.json
    python3 benchmarks/identity_dump.py --compare /tmp/old.json /tmp/new.json

Each case is a fuzz-drawn spec, and the same spec under each of the other dataflows (the error
paths of each factory's layout count too). Per case it records a digest of: the spec text, the
plan (`kgen check --json`'s dict and the derived per-core terms), the IR before and after
verification, the manifest, every rendered file, TT-Metal's program args for port-check, the
model's predicted cycles, and any kgen error with its stage and message.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys

DATAFLOW_SPELLINGS = ("mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1")


def _texts(count: int, seeds: tuple[int, ...]) -> list[tuple[str, str]]:
    from kgen.proof.fuzz import generate_case
    out = []
    for seed in seeds:
        for i in range(count):
            case = generate_case(seed, i)
            out.append((case.name, case.text))
            m = re.search(r"^\s*dataflow = (\w+)", case.text, re.M)
            for df in DATAFLOW_SPELLINGS:
                if m and m.group(1) == df:
                    continue
                text = (case.text[:m.start(1)] + df + case.text[m.end(1):]) if m else \
                    case.text.replace("    arch", f"    dataflow = {df}\n    arch", 1)
                out.append((f"{case.name}@{df}", text))
    return out


def _record(name: str, text: str) -> dict:
    from kgen.core.errors import KgenBug, KgenError
    from kgen.gen.ir import format_program
    from kgen.gen.pipeline import run
    from kgen.gen.plan_report import plan_to_dict
    from kgen.gen.spec import parse_text, resolve

    rec: dict = {"text": text}
    try:
        spec = resolve(parse_text(text, name + ".kspec"))
        a = run(spec)
    except (KgenError, KgenBug) as exc:
        rec["error"] = [type(exc).__name__, getattr(exc, "stage", None), str(exc)]
        return rec
    p = a.plan
    rec["plan"] = json.dumps(plan_to_dict(p), sort_keys=True, default=str)
    rec["terms"] = [p.core_m_terms, p.core_n_terms, p.in0_reader_cores, p.is_1d, p.padding_notes,
                    p.shard_specs, p.in0_shard_w, p.warnings, p.choices]
    rec["ir"] = format_program(a.ir)
    rec["verified"] = format_program(a.verified)
    rec["manifest"] = json.dumps(a.rendered.manifest, sort_keys=True, default=str)
    rec["files"] = {f.path: f.text for f in a.rendered.files}
    rec["kernel_id"] = a.rendered.kernel_id
    from kgen.proof.ttdataflow import DataflowSwapError, tt_kernel_args, unsupported_reason
    rec["tt_unsupported"] = unsupported_reason(p, a.rendered.manifest)
    if rec["tt_unsupported"] is None:
        try:
            rec["tt_args"] = repr(sorted(tt_kernel_args(p, a.rendered.manifest).items()))
        except DataflowSwapError as exc:
            rec["tt_args"] = "error: " + str(exc)
    from kgen.perf.model import predict
    pred = predict(a.verified)
    rec["predict"] = repr(pred)
    return rec


def _digest(rec: dict) -> dict[str, str]:
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, default=repr).encode()).hexdigest()[:16]
            for k, v in rec.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--compare", nargs=2)
    args = ap.parse_args(argv)
    if args.compare:
        old, new = (json.load(open(f)) for f in args.compare)
        differ = [k for k in old if old[k] != new.get(k)] + [k for k in new if k not in old]
        errors = sum(1 for v in old.values() if "error" in v)
        print(f"{len(old)} cases ({len(old) - errors} built, {errors} kgen errors): "
              f"{len(old) - len(differ)} identical, {len(differ)} differ")
        for k in differ[:20]:
            fields = sorted(f for f in set(old.get(k, {})) | set(new.get(k, {}))
                            if old.get(k, {}).get(f) != new.get(k, {}).get(f))
            print(f"  {k}: {', '.join(fields)}")
        return 1 if differ else 0
    seeds = tuple(int(s) for s in args.seeds.split(","))
    dump = {name: _digest(_record(name, text)) for name, text in _texts(args.count, seeds)}
    with open(args.out, "w") as f:
        json.dump(dump, f, indent=0, sort_keys=True)
    print(f"{len(dump)} cases -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
