"""The `kgen` command line: a thin layer over the stage functions."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from kgen import __version__
from kgen.errors import KgenBug, KgenError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one paragraph, exit 2
        self.print_usage(sys.stderr)
        sys.stderr.write(f"kgen: error: {message}\n")
        sys.exit(2)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kgen", description="Tensix matmul kernel generator (TT-Metal 0.81.1).")
    parser.add_argument("--version", action="version", version=f"kgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    check = sub.add_parser("check", help="plan a spec and print the plan (CBs, policy, L1, DST, warnings)")
    check.add_argument("spec", help="path to a .kspec file")
    check.add_argument("--variant", help="plan one of the spec's variants")
    check.add_argument("--json", action="store_true", help="print the plan as JSON")

    ir = sub.add_parser("ir", help="print the block-lifecycle IR of every kernel")
    ir.add_argument("spec", help="path to a .kspec file")
    ir.add_argument("--variant", help="lower one of the spec's variants")
    ir.add_argument("--stage", choices=("spec", "plan", "ir"), default="ir",
                    help="print the output of an earlier stage instead")
    build = sub.add_parser("build", help="render the kernels, JIT files and manifest into <root>/<kernel-id>/")
    build.add_argument("spec", help="path to a .kspec file")
    build.add_argument("--variant", help="build one of the spec's variants")
    build.add_argument("-o", "--output", default="build", metavar="DIR",
                       help="output root; the build goes to DIR/<kernel-id>/ (default: build)")
    return parser


def _variant_summaries(spec_file, current: str | None) -> dict[str, str]:
    from kgen.plan import plan
    from kgen.spec import resolve

    out: dict[str, str] = {}
    for name in spec_file.variants:
        try:
            vp = plan(resolve(spec_file, name))
            out[name] = f"{vp.policy} (partials {vp.partials_format}, {vp.num_blocks} K-blocks)"
        except KgenError as exc:
            out[name] = f"invalid: {getattr(exc, 'message', str(exc))}"
        if name == current:
            out[name] += "  <- shown"
    return out


def _build_summary(result) -> str:
    m = result.manifest
    lines = [f"kgen build: {result.kernel_id}", f"  folder   {result.path}"]
    for k in m["kernels"]:
        where = "TRISC unpack/math/pack" if k["processor"] == "TRISC" else f"{k['processor']} {k['noc']}"
        lines.append(f"  kernel   {k['source']:<32} {where}")
    lines.append("  CBs      " + ", ".join(f"c_{f['buffer_index']} {f['data_format']}" for cb in m["cbs"]
                                          for f in cb["format_descriptors"]))
    lines.append(f"  policy   {m['policy']}; load with kgen.runtime.load_program(\"{result.path}\")")
    return "\n".join(lines) + "\n"


def _run(args: argparse.Namespace) -> int:
    # Stage modules are imported here, not at the top, so `kgen --help` starts instantly.
    from kgen.lower import lower  # lowering verifies the IR: every check also proves the kernels balance
    from kgen.plan import plan
    from kgen.spec import load_file, resolve

    spec_file = load_file(args.spec)
    spec = resolve(spec_file, args.variant)
    if args.command == "ir" and args.stage == "spec":
        from dataclasses import asdict, replace
        data = asdict(replace(spec, spans={}))  # spans print as file:line:col
        data["spans"] = {k: str(v) for k, v in spec.spans.items()}
        print(json.dumps(data, indent=2))
        return 0
    if args.command == "build":
        from kgen.build import build
        result = build(spec, args.output, _variant_summaries(spec_file, args.variant))
        sys.stdout.write(_build_summary(result))
        return 0
    the_plan = plan(spec)
    program = lower(the_plan)
    if args.command == "check":
        from kgen.report import format_plan, plan_to_dict

        variants = _variant_summaries(spec_file, args.variant)
        if args.json:
            print(json.dumps(plan_to_dict(the_plan, variants), indent=2))
        else:
            sys.stdout.write(format_plan(the_plan, variants))
        return 0
    if args.stage == "plan":
        from kgen.report import format_plan
        sys.stdout.write(format_plan(the_plan))
        return 0
    from kgen.ir import format_program
    sys.stdout.write(format_program(program))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return _run(args)
    except KgenError as exc:
        text = exc.render() if hasattr(exc, "render") else str(exc)
        sys.stderr.write(f"kgen: {text}\n")
        return exc.exit_code
    except KgenBug as exc:
        sys.stderr.write(f"kgen: internal error (a bug in kgen, please report it): {exc}\n")
        return 3
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
