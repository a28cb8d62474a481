"""Dump what kgen makes of fuzz-drawn specs, to compare two checkouts byte for byte.

A refactor that must not change behaviour runs this on the commit before it and on its own code,
then compares the two dumps (the checkout on PYTHONPATH is the one dumped; stderr names it):

    PYTHONPATH=/path/to/old nice -n 10 python3 benchmarks/identity_dump.py --count 210 --out /tmp/old.json
    PYTHONPATH=$PWD         nice -n 10 python3 benchmarks/identity_dump.py --count 210 --out /tmp/new.json
    PYTHONPATH=$PWD         python3 benchmarks/identity_dump.py --compare /tmp/old.json /tmp/new.json

Each case is a fuzz-drawn spec (`--count` cases of each of `--seeds`), the same spec under each of the
other dataflows (the error paths of each factory's layout count too), and the spec rewritten to
Blackhole, bfloat16 and at most HiFi2 (`@blackhole_bf16`: few drawn specs are ones the blackhole-py
target runs). Per case it records a digest of: the spec text, the plan (`kgen check --json`'s dict and
the derived per-core terms), the IR before and after verification, the manifest, every rendered file,
TT-Metal's program for port-check (`_tt_reference`), the files `kgen build --target blackhole-py` writes
and the view its emulator runs (`_bhpy`), the model's predicted cycles, and any kgen error with its
stage and message. An exception other than a kgen error in the port-check or blackhole-py steps is
recorded as `crash <type>: <message>` and listed on stderr, with the counts per dataflow, target,
activation, bias and batched in1. `--compare` names the fields that differ and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import Counter
from typing import Any, Callable

DATAFLOW_SPELLINGS = ("mcast_2d", "reuse", "mcast_1d_in0", "mcast_1d_in1", "dram_sharded")
# The rewrite of a drawn spec into one the blackhole-py target may run (`<name>@blackhole_bf16`).
BLACKHOLE_BF16 = ((r"^(\s*arch\s*=\s*)\w+", r"\1blackhole"), (r"(math_fidelity\s*=\s*)HiFi[34]", r"\1HiFi2"),
                  (r"^\s*dtype \{[^}]*\}", lambda m: re.sub(r"= \w+", "= bfloat16", m.group(0))))


def _texts(count: int, seeds: tuple[int, ...]) -> list[tuple[str, str, bool]]:
    """(name, spec text, fuzz-drawn) per case: each drawn case, then it under the other dataflows and
    rewritten for blackhole-py."""
    from kgen.proof.fuzz import generate_case
    out = []
    for seed in seeds:
        for i in range(count):
            case = generate_case(seed, i)
            out.append((case.name, case.text, True))
            m = re.search(r"^\s*dataflow = (\w+)", case.text, re.M)
            for df in DATAFLOW_SPELLINGS:
                if m and m.group(1) == df:
                    continue
                text = (case.text[:m.start(1)] + df + case.text[m.end(1):]) if m else \
                    case.text.replace("    arch", f"    dataflow = {df}\n    arch", 1)
                out.append((f"{case.name}@{df}", text, False))
            text = case.text
            for pattern, repl in BLACKHOLE_BF16:
                text = re.sub(pattern, repl, text, flags=re.M)
            out.append((f"{case.name}@blackhole_bf16", text, False))
    return out


def _call(f: Callable[..., Any], *args: Any) -> Any:
    """f(*args), or what it raised as text: `refused <type>: <message>` for a kgen error, else
    `crash <type>: <message>` (a kgen bug)."""
    from kgen.core.errors import KgenError
    try:
        return f(*args)
    except Exception as exc:
        return f"{'refused' if isinstance(exc, KgenError) else 'crash'} {type(exc).__name__}: {exc}"


# TtKernelArgs's fields before it carried its kernel file (#38): its args are recorded as it printed then.
_TT_KERNEL_ARGS_FIELDS = ("name", "compile_time_args", "named_compile_time_args", "defines", "runtime_args")


def _tt_reference(plan, manifest: dict) -> dict:
    """TT-Metal's program for `kgen port-check`, obtained as kgen/proof/portcheck.py obtains it: why the
    whole-program check would not run, the factory's departures, the op-count differences port-check
    expects, and where it would run, the factory's args per kgen kernel with its TT-Metal kernel file (the
    Metal 2.0 bindings of a DRAM-sharded plan, compute kernel included). Each value that raises is recorded
    as text (`_call`). The factory answers through its Dataflow members (tt_unsupported, tt_program,
    tt_expected_differences); before #38 proof/ttdataflow.py, ttreuse.py and ttdramsharded.py did
    (`_tt_reference_before_38`). Either way the record has the same shape and values."""
    # THE ONE PLACE TO ADAPT when these functions move: change the calls below so that each value still
    # comes from the code port-check runs. An import that fails is meant to stop the dump rather than be
    # recorded.
    from kgen.gen import dataflow as dataflows
    from kgen.gen.dataflow.tt_program import Metal2Kernel
    from kgen.proof import portcheck
    from kgen.proof.emu_build import emulator_config

    df = plan.dataflow
    if not hasattr(df, "tt_program"):
        return _tt_reference_before_38(plan, manifest)

    def args() -> dict:
        program = df.tt_program(plan, manifest, emulator_config()["noc"])
        kernels = dict(program.kernels)
        if program.compute is not None:
            kernels["compute"] = program.compute
        if any(isinstance(k, Metal2Kernel) for k in kernels.values()):
            return {n: (repr(m), m.compile_time_args, m.common_runtime_args, m.runtime_args())
                    for n, m in sorted(kernels.items())}
        return {n: (a.source, f"TtKernelArgs({', '.join(f'{f}={getattr(a, f)!r}' for f in _TT_KERNEL_ARGS_FIELDS)})")
                for n, a in sorted(kernels.items())}

    # the record keeps the pre-#38 slots: the block-sharded in0's differences (the 2D factory's; none
    # for the others, which take in0 in DRAM or width-sharded), the reuse factory's, the DRAM-sharded one's
    dram_sharded, reuse = df is dataflows.DRAM_SHARDED, df is dataflows.REUSE

    def expected() -> tuple:
        diffs = () if dram_sharded else df.tt_expected_differences(plan)
        return portcheck._ktile_padding_barriers(plan), () if reuse else diffs, diffs if reuse else ()

    out = {"unsupported": _call(df.tt_unsupported, plan, manifest),
           "departures": _call(lambda: plan.factory_departures),
           "expected": _call(expected)}
    if out["unsupported"] is None:
        out["args"] = _call(args)
        if dram_sharded:
            out["expected_dram_sharded"] = _call(df.tt_expected_differences, plan)
    return out


def _tt_reference_before_38(plan, manifest: dict) -> dict:
    """`_tt_reference` on a tree before #38: ttdataflow.unsupported_reason (which asks ttreuse.py for a
    reuse plan); for a DRAM-sharded plan the Metal 2.0 bindings of ttdramsharded.py (the path of
    ttdataflow.with_tt_dataflow -> _with_metal2_program -> ttdramsharded.write_program, compute kernel
    included), else ttdataflow.tt_kernel_args (the 2D/1D multicast factories, and the reuse factory's
    through ttreuse.kernel_args), each with its TT-Metal kernel file."""
    from kgen.gen.dataflow import DRAM_SHARDED
    from kgen.proof import portcheck
    from kgen.proof import ttdramsharded as ds
    from kgen.proof.emu_build import emulator_config
    from kgen.proof.emulate import round_up
    from kgen.proof.ttdataflow import tt_kernel_args, tt_kernel_file, unsupported_reason

    def metal2() -> dict:
        page = {t["name"]: round_up(t["page_size"], plan.arch.dram_alignment) for t in manifest["io_tensors"]}
        bound = ds.metal2_kernels(plan, manifest, emulator_config()["noc"], page)
        (k,) = [k for k in manifest["kernels"] if k["name"] == "compute"]
        bound["compute"] = ds.compute(plan, k)
        return {n: (repr(m), m.compile_time_args, m.common_runtime_args, m.runtime_args())
                for n, m in sorted(bound.items())}

    dram_sharded = plan.dataflow.factory == DRAM_SHARDED.factory
    out = {"unsupported": _call(unsupported_reason, plan, manifest),
           "departures": _call(lambda: plan.factory_departures),
           "expected": _call(lambda: (portcheck._ktile_padding_barriers(plan), portcheck._sharded_differences(plan),
                                      portcheck._reuse_differences(plan)))}
    if out["unsupported"] is None and dram_sharded:
        out["args"] = _call(metal2)
        out["expected_dram_sharded"] = _call(lambda: ds.expected_differences(plan, ds.in1_pages(plan)[1]))
    elif out["unsupported"] is None:
        out["args"] = _call(lambda: {n: (tt_kernel_file(n), a) for n, a in sorted(tt_kernel_args(plan, manifest).items())})
    return out


def _bhpy(a) -> dict:
    """What `kgen build --target blackhole-py` writes (kgen/proof/bhpy.py run_command) and the build
    folder `kgen emulate --target blackhole-py` runs, or why check_supported refuses the spec; nothing
    for a dataflow the target does not support. (The place to adapt if the target's module moves.)"""
    from kgen.gen.targets import blackhole_py as bh
    from kgen.gen.targets import bhpy_export

    view_files = getattr(bh, "view_files", None)
    if view_files is None:          # before #38's move: kgen/proof/bhpy.py
        from kgen.proof.bhpy import view_files
    if a.spec.dataflow not in bh.SUPPORTED_DATAFLOWS:
        return {}
    notes = _call(bh.check_supported, a.spec, a.plan)
    if isinstance(notes, str):
        return {"bhpy": notes}
    p = _call(bh.view, a.plan, a.rendered)
    if isinstance(p, str):
        return {"bhpy": p}
    return {"bhpy": [notes, _call(lambda: {f.path: f.text for f in bhpy_export.files(p, a.plan)})],
            "bhpy_view": _call(lambda: {f.path: f.text for f in view_files(p, a.rendered)})}


def _record(name: str, text: str) -> tuple[dict, dict]:
    """(the case's fields, its facts for the summary)."""
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
        return rec, {}
    p = a.plan
    rec["plan"] = json.dumps(plan_to_dict(p), sort_keys=True, default=str)
    rec["terms"] = [p.core_m_terms, p.core_n_terms, p.in0_reader_cores, p.is_1d, p.padding_notes,
                    p.shard_specs, p.in0_shard_w, p.warnings, p.choices]
    rec["ir"] = format_program(a.ir)
    rec["verified"] = format_program(a.verified)
    rec["manifest"] = json.dumps(a.rendered.manifest, sort_keys=True, default=str)
    rec["files"] = {f.path: f.text for f in a.rendered.files}
    rec["kernel_id"] = a.rendered.kernel_id
    rec.update({f"tt_{k}": v for k, v in _tt_reference(p, a.rendered.manifest).items()})
    rec.update(_bhpy(a))
    from kgen.perf.model import predict
    rec["predict"] = repr(predict(a.verified))
    bhpy = rec.get("bhpy")
    facts = {"dataflow": p.spec.dataflow, "arch": p.arch.name, "activation": p.activation.row.spelling,
             "bias": p.fuse_bias, "batched in1": p.batched_in1,
             "target": "tt-metal + blackhole-py" if isinstance(bhpy, list) else
                       "tt-metal" + (" (blackhole-py refused)" if bhpy else ""),
             "tt program": p.spec.dataflow + (
                 " crash" if any(isinstance(v, str) and v.startswith("crash") for k, v in rec.items() if k[:3] == "tt_")
                 else " not run" if rec["tt_unsupported"] is not None else
                 " refused" if isinstance(rec.get("tt_args"), str) else " recorded")}
    crashes = [f"{k}: {v}" for k, v in rec.items() if isinstance(v, str) and v.startswith("crash")]
    crashes += [f"{k}: {v}" for k, vs in rec.items() if isinstance(vs, list) for v in vs
                if isinstance(v, str) and v.startswith("crash")]
    return rec, {**facts, "crashes": crashes}


def _digest(rec: dict) -> dict[str, str]:
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, default=repr).encode()).hexdigest()[:16]
            for k, v in rec.items()}


def _summary(facts: dict[str, tuple[bool, dict]]) -> None:
    """Counts per dataflow, target, activation, bias and batched in1 (stderr), and the crashes."""
    say = lambda s: print(s, file=sys.stderr)
    for title, only_drawn in (("fuzz-drawn cases that built", True), ("all cases that built", False)):
        built = [f for drawn, f in facts.values() if f and (drawn or not only_drawn)]
        say(f"{title}: {len(built)}")
        for key in ("dataflow", "arch", "target", "activation", "bias", "batched in1", "tt program"):
            counts = Counter(f[key] for f in built)
            say(f"  {key + ':':<12} " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items(), key=str)))
    crashes = [(name, c) for name, (_, f) in facts.items() for c in f.get("crashes", ())]
    say(f"crashes (not kgen errors) in the port-check / blackhole-py steps: {len(crashes)}")
    for text, n in Counter(c for _, c in crashes).most_common():
        say(f"  {n} x {text[:300]} (first: {next(name for name, c in crashes if c == text)})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="where to write the dump (JSON)")
    ap.add_argument("--count", type=int, default=50, help="fuzz cases per seed (default 50)")
    ap.add_argument("--seeds", default="1,2,3,4", help="comma-separated fuzz seeds (default 1,2,3,4)")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two dumps; exit 1 if they differ")
    args = ap.parse_args(argv)
    if args.compare:
        old, new = (json.load(open(f)) for f in args.compare)
        differ = [k for k in old if old[k] != new.get(k)] + [k for k in new if k not in old]
        errors = sum(1 for v in old.values() if "error" in v)
        print(f"{len(old)} cases ({len(old) - errors} built, {errors} kgen errors): "
              f"{len(old) - len(differ)} identical, {len(differ)} differ")
        fields: Counter = Counter()
        for i, k in enumerate(differ):
            which = sorted(f for f in set(old.get(k, {})) | set(new.get(k, {}))
                           if old.get(k, {}).get(f) != new.get(k, {}).get(f))
            fields.update(which)
            if i < 20:
                print(f"  {k}: {', '.join(which) if k in old and k in new else 'only in ' + ('old' if k in old else 'new')}")
        if fields:
            print("fields that differ (cases): " + ", ".join(f"{f} {n}" for f, n in fields.most_common()))
        return 1 if differ else 0
    if not args.out:
        ap.error("--out is required (or --compare OLD NEW)")
    seeds = tuple(int(s) for s in args.seeds.split(","))
    started = time.perf_counter()
    dump, facts = {}, {}
    texts = _texts(args.count, seeds)
    for name, text, drawn in texts:
        rec, f = _record(name, text)
        dump[name], facts[name] = _digest(rec), (drawn, f)
    with open(args.out, "w") as f:
        json.dump(dump, f, indent=0, sort_keys=True)
    import kgen
    drawn = sum(d for _, _, d in texts)
    print(f"{len(dump)} cases ({drawn} fuzz-drawn, {len(dump) - drawn} dataflow swaps and blackhole_bf16 rewrites, "
          f"{sum(1 for d in dump.values() if 'error' in d)} kgen errors) -> {args.out} "
          f"in {time.perf_counter() - started:.0f} s; kgen from {kgen.__file__}", file=sys.stderr)
    _summary(facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
