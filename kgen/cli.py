"""The `kgen` command line: a thin layer over the stage functions."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from kgen.core.version import __version__
from kgen.core.errors import KgenBug, KgenError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one paragraph, exit 2
        self.print_usage(sys.stderr)
        sys.stderr.write(f"kgen: error: {message}\n")
        sys.exit(2)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kgen", description="Tensix matmul kernel generator (TT-Metal 0.81.1).")
    parser.add_argument("--version", action="version", version=f"kgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    _inspection_parsers(sub)
    _tune_parser(sub)
    _build_parsers(sub)
    _emulation_parsers(sub)
    _ab_parser(sub)
    _fuzz_parser(sub)
    _setup_parsers(sub)
    return parser


def _inspection_parsers(sub) -> None:
    """`kgen check` and `kgen perf`: a spec's plan and its predicted time."""
    check = sub.add_parser("check", help="plan a spec and print the plan (CBs, policy, L1, DST, warnings)")
    check.add_argument("spec", help="path to a .kspec file")
    check.add_argument("--variant", help="plan one of the spec's variants")
    check.add_argument("--json", action="store_true", help="print the plan as JSON")

    perf = sub.add_parser("perf", help="predicted device time, TFLOPS, utilization, bottleneck and policy cost")
    perf.add_argument("spec", help="path to a .kspec file")
    perf.add_argument("--variant", help="predict one of the spec's variants")
    perf.add_argument("--json", action="store_true", help="print the prediction as JSON")


def _build_parsers(sub) -> None:
    """`kgen ir` and `kgen build`: the lowered IR and the rendered kernels."""
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
    how = build.add_mutually_exclusive_group()
    how.add_argument("--check", action="store_true",
                     help="type-check only, against the real TT-Metal headers (even where SFPI exists)")
    how.add_argument("--no-compile", action="store_true", help="render only")
    build.add_argument("-j", "--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                       help="compile N kernels at once (default: the number of CPUs)")
    build.add_argument("--force", action="store_true", help="recompile even what the cache holds")
    _target_flag(build)
    _toolchain_flags(build)


def _emulation_parsers(sub) -> None:
    """`kgen emulate` and `kgen port-check`: the kernels run on the host."""
    emulate = sub.add_parser("emulate", help="run the kernels on every core on the host and compare with the golden model")
    emulate.add_argument("spec", help="path to a .kspec file")
    emulate.add_argument("--variant", help="emulate one of the spec's variants")
    _emulation_flags(emulate)
    emulate.add_argument("--schedules", type=_count, default=0, metavar="N",
                         help="also run N seeded random interleavings; their output must be identical")
    emulate.add_argument("--trace", metavar="PATH", help="write a Chrome/Perfetto trace (one track per core x processor)")
    emulate.add_argument("-v", "--verbose", action="store_true",
                         help="a row per core and processor in place of the summary (--json always has them)")
    _target_flag(emulate)

    port = sub.add_parser(
        "port-check", help="TT-Metal's compute kernel, and its whole multicast, reuse or DRAM-sharded program, beside kgen's "
                           "on the same plan: outputs and op counts",
        description="Runs TT-Metal's own kernels beside kgen's on the same plan, inputs and emulated machine. "
                    "(1) compute: TT-Metal's compute kernel in place of kgen's, with kgen's data movement; "
                    "(2) program, for mcast_2d, mcast_1d_in0, mcast_1d_in1, reuse and dram_sharded plans: "
                    "TT-Metal's whole program, its compute kernel and the readers and writers with the arguments "
                    "TT-Metal's 2D, 1D, reuse or DRAM-sharded matmul factory gives them. Each reports bit-identity with kgen's "
                    "output and the op counts of both.")
    port.add_argument("spec", help="path to a .kspec file")
    port.add_argument("--variant", help="check one of the spec's variants")
    port.add_argument("--reference", metavar="PATH",
                      help="the reference compute kernel (default: TT-Metal's bmm_large_block_zm_fused_bias_activation.cpp "
                           "from the fetched headers)")
    _emulation_flags(port)
    _target_flag(port)


def _ab_parser(sub) -> None:
    """`kgen ab`: the base and its variants side by side."""
    ab = sub.add_parser("ab", help="the base and variants side by side: plan, op counts, predicted speed, numerics")
    ab.add_argument("spec", help="path to a .kspec file")
    ab.add_argument("--vary", action="append", default=[], metavar="FIELD=V1,V2",
                    help="variants from the command line (e.g. compute.packer_l1_acc=false,true); "
                         "several --vary form their cross product, in place of the spec's variants")
    ab.add_argument("--sweep", action="append", default=[], metavar="DIM=V1,V2",
                    help="repeat the comparison over K, M, N or a numeric field (e.g. K=1024,4096)")
    ab.add_argument("--emulate", action="store_true", help="also run each variant in the host emulator")
    ab.add_argument("--numerics", choices=("exact", "fast"), default="exact",
                    help="--emulate's arithmetic: exact (bit-level, small shapes) or fast")
    ab.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs (default: 0)")
    ab.add_argument("--json", action="store_true", help="print everything as JSON, one row per kernel id")
    _target_flag(ab)
    ab.add_argument("--csv", metavar="FILE", help="write one line per variant (CUTLASS-profiler style)")
    ab.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with charts")
    ab.add_argument("--device", action="store_true", help="also run each variant on the card (needs ttnn)")
    ab.add_argument("--runs", type=_positive_int, default=10, metavar="N", help="--device: timed runs (default: 10)")
    ab.add_argument("--warmup", type=_count, default=2, metavar="N", help="--device: untimed runs first (default: 2)")
    ab.add_argument("-j", "--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                    help="--emulate: compile N kernels at once")


def _fuzz_parser(sub) -> None:
    """`kgen fuzz`: random valid specs through the whole chain."""
    fuzz = sub.add_parser("fuzz", help="random valid specs: build, type-check, emulate each; stop at the first failure")
    fuzz.add_argument("--count", type=_count, default=20, metavar="N", help="number of specs (default: 20)")
    fuzz.add_argument("--seed", type=_seed, default=1, help="generator seed (default: 1)")
    fuzz.add_argument("--start", type=_count, default=0, metavar="I", help="first case index (default: 0)")
    fuzz.add_argument("--keep", metavar="DIR", help="write every generated spec into DIR")
    fuzz.add_argument("--no-typecheck", action="store_true", help="skip the type-check against the TT-Metal headers")
    fuzz.add_argument("--port-check", action="store_true",
                      help="also run each case's port check (TT-Metal's compute kernel and, where its factory's kernels run the plan, its whole program)")
    fuzz.add_argument("-j", "--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                      help="compile N kernels at once")


def _setup_parsers(sub) -> None:
    """`kgen doctor` and `kgen headers`: what kgen found and the headers it compiles against."""
    doctor = sub.add_parser("doctor", help="what kgen found: SFPI, TT-Metal headers, firmware, host checker")
    _toolchain_flags(doctor)

    headers = sub.add_parser("headers", help="the TT-Metal kernel headers kgen compiles against")
    headers_sub = headers.add_subparsers(dest="headers_command", metavar="{fetch,path}", required=True,
                                         parser_class=_Parser)
    fetch = headers_sub.add_parser("fetch", help="get the TT-Metal kernel headers from the ttnn wheel")
    fetch.add_argument("--version", dest="tt_version", metavar="V", help="ttnn version (default: 0.81.1)")
    fetch.add_argument("--from-wheel", metavar="PATH", help="use this wheel instead of downloading one (offline)")
    fetch.add_argument("--force", action="store_true", help="fetch again even if the cache has this version")
    headers_sub.add_parser("path", help="print the header tree kgen would use")


def _tune_parser(sub) -> None:
    tune = sub.add_parser("tune", help="the fastest legal configuration under the performance model; verify the "
                                       "winners; keep every result in a database")
    tune.add_argument("spec", nargs="?", help="path to a .kspec file (not needed with --report)")
    tune.add_argument("--variant", help="tune one of the spec's variants")
    tune.add_argument("--space", choices=("auto", "all"), default="auto",
                      help="auto: what the spec leaves open (auto values, an absent dataflow line, packer_l1_acc "
                           "from TTNN's defaults); all: grid, every block field, dataflow and policy (default: auto)")
    tune.add_argument("--allow-precision", action="store_true",
                      help="also search math fidelity and fp32 dest accumulation; shows each pick's predicted error")
    tune.add_argument("--padded", action=argparse.BooleanOptionalAction, default=True,
                      help="per_core values that do not divide the tiles are searched too (TT's padded last "
                           "block, which kgen builds and port-checks); --no-padded keeps to the divisors "
                           "(default: padded)")
    tune.add_argument("--top", type=_positive_int, default=5, metavar="K", help="show (and verify) the K best (default: 5)")
    tune.add_argument("--verify", action="store_true",
                      help="build, type-check, emulate and port-check the top K; a failing one is dropped; a "
                           "verdict the database holds for the same kernel is shown as known, not re-run "
                           "(--no-db runs the checks again)")
    tune.add_argument("--numerics", choices=("auto", "exact", "fast"), default="auto",
                      help="emulation numerics of --verify (auto: exact up to 2^28 MACs, else fast)")
    tune.add_argument("-o", "--output", metavar="FILE", help="write the winner as a .kspec")
    tune.add_argument("--db", metavar="PATH", help="the SQLite database (default: $KGEN_CACHE_DIR/tune/tune.sqlite)")
    tune.add_argument("--no-db", action="store_true", help="neither read nor write a database")
    tune.add_argument("--report", action="store_true", help="print what the database knows, per target")
    tune.add_argument("--engine", choices=("local", "ray"), default="local",
                      help="where verification jobs run: this process, or Ray (RAY_ADDRESS / --ray-address, "
                           "else a local Ray)")
    tune.add_argument("--ray-address", metavar="ADDR", help="the Ray cluster (default: $RAY_ADDRESS, else local)")
    tune.add_argument("--ray-workers", type=_positive_int, metavar="N", help="CPUs of a local Ray (default: all)")
    tune.add_argument("--budget", type=_positive_count, default=1_000_000, metavar="N",
                      help="candidates searched at most; a larger space is sampled, seeded (default: 1000000)")
    tune.add_argument("--seed", type=_seed, default=0, help="sampling seed (default: 0)")
    tune.add_argument("-j", "--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                      help="processes that plan and predict (default: the number of CPUs)")
    tune.add_argument("--json", action="store_true", help="print the result as JSON")
    accuracy = tune.add_argument_group("accuracy target", "the fastest configuration accurate enough: precision "
                                       "searched with the blocking, each candidate's error predicted by the golden "
                                       "model against float64 (docs/tune.md)")
    accuracy.add_argument("--min-pcc", type=_number, metavar="P",
                          help="the output's PCC against float64 must reach P, in (0, 1] (such as 0.999)")
    accuracy.add_argument("--max-rel-error", type=_number, metavar="E",
                          help="max |error| over the output's max magnitude must stay at most E (such as 0.01)")
    accuracy.add_argument("--allow-dtype", action="append", default=[], metavar="OPERAND",
                          help="let the search choose in0's or in1's format (bfloat16, bfloat8_b, bfloat4_b); "
                               "repeat or comma-separate for both")
    accuracy.add_argument("--inputs", nargs=2, metavar=("A.npy", "B.npy"),
                          help="the operands (.npy) in place of seeded N(0, 1) inputs, in the prediction and "
                               "in --verify; '-' leaves one random")
    accuracy.add_argument("--html", metavar="FILE", help="write the speed-accuracy front as an HTML page")


def _number(text: str) -> float:
    """An argparse type: a number (its range is the command's to check), else one clear error."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _whole_number(low: int, high: int):
    """An argparse type: a whole number from `low` to `high`, else one clear error (exit 2)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {low} to {high}, got {value}")
        return value
    return parse


_positive_count = _whole_number(1, 100_000_000)
_positive_int = _whole_number(1, 256)
_count = _whole_number(0, 100_000)
_seed = _whole_number(0, (1 << 32) - 1)      # numpy's generators take non-negative seeds; 32 bits are plenty


def _target_flag(parser: argparse.ArgumentParser) -> None:
    from kgen.proof.targets import DEFAULT, NAMES
    parser.add_argument("--target", choices=NAMES, default=DEFAULT,
                        help=f"the runtime the program is for (default: {DEFAULT}; docs/blackhole-py.md)")


def _emulation_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs (default: 0)")
    parser.add_argument("--numerics", choices=("exact", "fast"), default="exact",
                        help="exact: bit-level Tensix arithmetic (default); fast: float32 math, same data movement")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("-j", "--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                        help="compile N kernels at once (default: the number of CPUs)")


def _toolchain_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sfpi", metavar="DIR", help="SFPI root (default: $KGEN_SFPI_ROOT, "
                        "$TT_METAL_HOME/runtime/sfpi, /opt/tenstorrent/sfpi)")
    parser.add_argument("--headers", metavar="DIR", help="TT-Metal root with tt_metal/ and ttnn/cpp/ "
                        "(default: $TT_METAL_HOME, else kgen's cache)")
    parser.add_argument("--firmware", metavar="DIR", help="weakened firmware ELFs, <DIR>/<arch>/<proc>/ "
                        "(default: $KGEN_FIRMWARE_DIR)")


def _variant_summaries(spec_file, current: str | None) -> dict[str, str]:
    from kgen.gen.plan import plan
    from kgen.gen.spec import resolve

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


def _shown(path: Path) -> str:
    """A path as the user would type it: relative when it lies under the current folder."""
    from kgen.core.terminal import shown_path
    return shown_path(path)


def _print_wrapped(text: str, first: str = "", rest: str = "  ") -> None:
    """A report line at the terminal's width, its further lines `rest` in."""
    from kgen.core import terminal
    sys.stdout.write("\n".join(terminal.wrap(text, terminal.width(), first, rest)) + "\n")


def _build_summary(result) -> str:
    from kgen.core import terminal
    from kgen.core.terminal import keep_together

    width = terminal.width()
    m = result.manifest
    rows = [("folder", _shown(result.path))]
    for k in m["kernels"]:
        where = "TRISC unpack/math/pack" if k["processor"] == "TRISC" else f"{k['processor']} {k['noc']}"
        rows.append(("kernel", f"{k['source']:<32} {where}"))
    rows.append(("CBs", ", ".join(keep_together(f"c_{f['buffer_index']} {f['data_format']}") for cb in m["cbs"]
                                  for f in cb["format_descriptors"])))
    rows.append(("policy", m["policy"]))
    tensors = ", ".join(keep_together(f'"{t["name"]}": {t["name"]}_tensor') for t in m["io_tensors"])
    # wrapped between its arguments (after `(` when the folder would not fit beside the call) and
    # with its comment whole, the call pasted back is still Python
    call = f'kgen.device.runtime.run("{_shown(result.path)}",'
    call = call.replace("(", "(\n", 1) if len(call) + 11 > width else call
    rows.append(("run", f"{call} device, {{{tensors}}})   " + keep_together("# on a machine with a card")))
    lines = terminal.hanging(f"kgen build: {result.kernel_id}", width)
    lines += terminal.key_values(rows, width, gap=3)
    return "\n".join(lines) + "\n"


# Flags that name a path, and what each names. The CLI makes every one absolute here, once: the
# compilers run inside the build folder, so a relative path must never travel past this point.
_PATH_FLAGS = {"output": ("-o", "an output folder"), "trace": ("--trace", "a trace file"),
               "keep": ("--keep", "a folder for the generated specs"),
               "reference": ("--reference", "a reference compute kernel"), "sfpi": ("--sfpi", "the SFPI folder"),
               "headers": ("--headers", "a TT-Metal header tree"), "firmware": ("--firmware", "a firmware folder"),
               "from_wheel": ("--from-wheel", "a ttnn wheel"), "db": ("--db", "a database file")}


def _resolve_user_paths(args: argparse.Namespace) -> None:
    from kgen.core.errors import SpecError
    from kgen.core.resources import user_path

    for attr, (flag, what) in _PATH_FLAGS.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        if not value.strip():
            raise SpecError(f"{flag} {value!r}: an empty path", hint=f"pass {what}")
        setattr(args, attr, str(user_path(value)))
    if getattr(args, "trace", None):
        _check_trace_path(args.trace)
    if args.command not in ("check", "ir", "perf"):
        # Every other command uses kgen's cache: an unusable one is reported before anything runs
        # or is written.
        from kgen.core.resources import cache_root
        cache_root()


def _check_trace_path(trace: str) -> None:
    """Before a long emulation: the trace must be a file kgen can create or replace."""
    from kgen.core.errors import SpecError

    path, parent = Path(trace), Path(trace).parent
    if path.is_dir():
        raise SpecError(f"--trace {trace} is a folder", hint="pass a file path such as run.json")
    if not parent.is_dir():
        raise SpecError(f"--trace {trace}: the folder {parent} does not exist", hint="create it first")
    # Ask the file system itself (os.access says yes to root everywhere): open the existing file
    # without truncating it, or create a new one and remove it again.
    try:
        if path.exists():
            with open(path, "r+b"):
                pass
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            path.unlink()
    except OSError as exc:
        raise SpecError(f"--trace {trace}: cannot write it: {exc.strerror or exc}",
                        hint="pass a path in a folder you can write to") from None


def _run(args: argparse.Namespace) -> int:
    # Stage modules are imported here, not at the top, so `kgen --help` starts instantly.
    from kgen.gen.pipeline import run
    from kgen.gen.spec import load_file, resolve

    _resolve_user_paths(args)
    if os.environ.get("KGEN_CACHE_DIR") and args.command != "doctor":
        # a cache folder the user names and kgen cannot use is bad input, whatever the command needs
        # of it (headers, builds, the template cache): one error now, not an INCOMPLETE later
        from kgen.core.resources import cache_root, writable_dir
        writable_dir(cache_root())
    if args.command in ("doctor", "headers"):
        return _run_toolchain(args)
    if args.command == "tune":
        from kgen.perf.tunecmd import TuneOptions, run_tune
        return run_tune(TuneOptions(
            spec=args.spec, variant=args.variant, space=args.space, allow_precision=args.allow_precision,
            padded=args.padded, top=args.top, verify=args.verify, numerics=args.numerics, output=args.output,
            db_file=args.db, no_db=args.no_db, report=args.report, engine=args.engine, ray_address=args.ray_address,
            ray_workers=args.ray_workers, budget=args.budget, seed=args.seed, jobs=args.jobs, as_json=args.json,
            min_pcc=args.min_pcc, max_rel_error=args.max_rel_error, allow_dtype=tuple(args.allow_dtype),
            inputs=tuple(args.inputs) if args.inputs else None, html=args.html))
    if args.command == "fuzz":
        from kgen.proof.fuzz import run_fuzz
        return run_fuzz(count=args.count, seed=args.seed, start=args.start, keep=args.keep,
                        typecheck=not args.no_typecheck, port_check=args.port_check, parallel=args.jobs,
                        out=sys.stdout)
    if args.command == "ab":
        return _ab(args)
    spec_file = load_file(args.spec)
    spec = resolve(spec_file, args.variant)
    if args.command == "ir" and args.stage == "spec":
        from kgen.gen.pipeline import dump_files
        sys.stdout.write(dump_files("spec", spec)["spec.json"])
        return 0
    if hasattr(args, "target"):
        from kgen.proof.targets import get as get_target

        target = get_target(args.target)
        if target.command is not None:             # a target that reports its chain in its own words
            return target.command(_command_request(args), run(spec, "rendered"))
    if args.command in ("build", "emulate", "port-check"):
        # plan.json lists the variants (build); the emulated folder is the same content-addressed build
        variants = _variant_summaries(spec_file, args.variant) if args.command == "build" else None
        artifacts = run(spec, "rendered", variants=variants)
        if args.command == "build":
            return _build(args, artifacts)
        return _emulate(args, artifacts)
    # check, perf and ir verify the IR: every check also proves the kernels balance
    artifacts = run(spec, "verified")
    if args.command == "check":
        from kgen.gen.plan_report import format_plan, plan_to_dict
        from kgen.perf.model import predict
        from kgen.perf.prediction_report import one_line

        variants = _variant_summaries(spec_file, args.variant)
        predicted = one_line(predict(artifacts.verified))
        if args.json:
            print(json.dumps({**plan_to_dict(artifacts.plan, variants), "predicted": predicted}, indent=2))
        else:
            sys.stdout.write(format_plan(artifacts.plan, variants, predicted=predicted))
        return 0
    if args.command == "perf":
        from kgen.perf.model import predict
        from kgen.perf.prediction_report import compare_policies, format_prediction, prediction_to_dict

        prediction = predict(artifacts.verified)
        comparison = compare_policies(artifacts.plan, prediction)
        if args.json:
            print(json.dumps(prediction_to_dict(prediction, comparison), indent=2))
        else:
            sys.stdout.write(format_prediction(prediction, comparison, spec.name + (f" (variant {spec.variant})" if spec.variant else "")))
        return 0
    if args.stage == "plan":
        from kgen.gen.plan_report import format_plan
        sys.stdout.write(format_plan(artifacts.plan))
        return 0
    from kgen.gen.ir import format_program
    sys.stdout.write(format_program(artifacts.verified))
    return 0


def _chain_options(args: argparse.Namespace, progress, **more):
    from kgen.proof.chain import ChainOptions

    return ChainOptions(sfpi=getattr(args, "sfpi", None), headers=getattr(args, "headers", None),
                        firmware=getattr(args, "firmware", None), parallel=getattr(args, "jobs", 1), progress=progress,
                        **more)


def _command_request(args: argparse.Namespace):
    """`kgen build|emulate|port-check`'s flags as plain values, for a target with its own report."""
    from kgen.proof.chain import CommandRequest

    build = args.command == "build"
    options = _chain_options(args, lambda phase: None, root=_path_flag(args, "output") if build else None,
                             force=getattr(args, "force", False), seed=getattr(args, "seed", 0),
                             numerics=getattr(args, "numerics", "exact"), schedules=getattr(args, "schedules", 0),
                             trace=_path_flag(args, "trace"), reference=_path_flag(args, "reference"))
    return CommandRequest(args.command, options, render_only=build and args.no_compile,
                          as_json=getattr(args, "json", False), verbose=getattr(args, "verbose", False))


def _path_flag(args: argparse.Namespace, name: str) -> Path | None:
    value = getattr(args, name, None)
    return Path(value) if value else None


def _port_plan_ab(args: argparse.Namespace, target) -> int:
    """`kgen ab --target T` for a target with its own port plan: its fixed stages, none of the flags
    that shape the default target's comparison."""
    from kgen.core.errors import SpecError
    from kgen.perf.bhpy_ab import run_ab

    if args.vary or args.sweep or args.emulate or args.device or args.csv or args.html:
        raise SpecError(f"kgen ab --target {target.name} compares the port plan's fixed stages; --vary, --sweep, "
                        "--emulate, --device, --csv and --html are for the default target",
                        hint="drop those flags, or drop --target")
    return run_ab(args.spec, target, seed=args.seed, as_json=args.json)


def _build(args: argparse.Namespace, artifacts) -> int:
    """`kgen build`: write the folder, then compile (SFPI) or type-check it. A build that could not
    be compiled or type-checked says so in its last line and exits non-zero, unless --no-compile
    asked for rendering only."""
    from kgen.proof.chain import run_chain

    options = _chain_options(args, lambda phase: None, root=Path(args.output), compile="check" if args.check else "auto",
                             force=args.force, compile_report=True)
    chain = run_chain(artifacts, "typechecked", skip={"typechecked"} if args.no_compile else (), options=options)
    sys.stdout.write(_build_summary(chain.value("built")))
    if args.no_compile:
        return 0
    step = chain.step("typechecked")
    _print_compile(step, args)
    if step.status == "skipped":
        _print_wrapped(chain.last_line("kgen build") + "   (kgen doctor; --no-compile renders only)")
    return chain.exit_code


def _compile(folder, args: argparse.Namespace) -> int:
    """Compile (SFPI) or type-check the kernels of a build folder and report."""
    from kgen.proof.chain import typecheck_folder

    options = _chain_options(args, lambda phase: None, compile="check" if args.check else "auto",
                             force=args.force, compile_report=True)
    step = typecheck_folder(Path(folder), options)
    _print_compile(step, args)
    return {"ok": 0, "failed": 1}.get(step.status, 0)


def _print_compile(step, args: argparse.Namespace) -> None:
    from kgen.toolchain.compile import failure_text

    if step.status == "skipped":
        _print_wrapped(f"compile  skipped: {step.detail}", "  ", " " * 11)
        return
    tc, mode, report = step.value
    if mode == "check" and not args.check:
        _print_wrapped("compile  no SFPI found, so type-checking against the real headers instead "
                       "(kgen doctor says how to get SFPI)", "  ", " " * 11)
    what = "type-checked" if mode == "check" else "compiled"
    total, failed = len(report.results), len(report.failures)
    verdict = f"{what:<8} {total} kernel builds" if not failed else \
        f"{'type-check' if mode == 'check' else 'compile':<8} FAILED for {failed} of {total} kernel builds"
    _print_wrapped(f"{verdict} ({report.compiled} run, {total - report.compiled} from cache) in "
                   f"{report.seconds:.2f} s against TT-Metal {tc.headers.version} headers ({tc.headers.root})",
                   "  ", " " * 11)
    for r in report.failures:
        sys.stderr.write(f"kgen: {failure_text(r, args.spec)}\n")
    if report.failures:
        return
    if report.elf_problems:
        sys.stderr.write("kgen: " + "\nkgen: ".join(report.elf_problems) + "\n")
        return
    if report.elf_table:
        sys.stdout.write(report.elf_table)
    elif mode == "sfpi":
        _print_wrapped(f"link     skipped: {tc.note('firmware')}", "  ", " " * 11)


def _emulate(args: argparse.Namespace, artifacts) -> int:
    """`kgen emulate` / `kgen port-check`: write the rendered build into kgen's cache, run, report.
    Exit 1 when the run shows a problem (a deadlock, a hazard, output that is not the golden
    model's); EXIT_INCOMPLETE when a tool it needs is missing (the last line says which)."""
    from kgen.proof.chain import run_chain
    from kgen.proof.emulate import check_host_memory, duration_notice

    check_host_memory(artifacts.plan)          # before the build and any allocation
    port = args.command == "port-check"
    if notice := duration_notice(artifacts.plan, f"kgen {args.command}", programs=3 if port else 1,
                                 numerics=args.numerics):
        sys.stderr.write(notice + "\n")            # a long run says so before it starts
    trace = Path(args.trace) if getattr(args, "trace", None) else None
    with _progress() as progress:
        progress("building")
        options = _chain_options(args, progress, seed=args.seed, numerics=args.numerics,
                                 schedules=getattr(args, "schedules", 0), trace=trace,
                                 reference=Path(args.reference) if port and args.reference else None)
        # port-check runs kgen's own emulation inside it, with the same inputs
        chain = run_chain(artifacts, "portchecked" if port else "emulated",
                          skip={"typechecked", "emulated"} if port else {"typechecked"}, options=options)
    step = chain.steps[-1]
    command = f"kgen {args.command}"
    if step.status == "skipped":
        print(chain.last_line(command))
        return chain.exit_code
    if port:
        from kgen.proof.portcheck import format_port_check

        pc = step.value
        print(json.dumps(pc.summary(), indent=2) if args.json else format_port_check(pc))
        return chain.exit_code
    from kgen.proof.emulate import format_report

    result = step.value
    print(json.dumps(result.summary(), indent=2) if args.json else format_report(result, verbose=args.verbose))
    if trace is not None and not args.json:
        _print_wrapped(f"trace      {_shown(trace)} (open in https://ui.perfetto.dev or chrome://tracing)", "  ",
                       " " * 13)
    return chain.exit_code


def _ab(args: argparse.Namespace) -> int:
    """`kgen ab`: flags are checked (and output paths tried) before anything is computed; the files
    are written whole or not at all."""
    from kgen.proof.targets import get as get_target

    target = get_target(args.target)
    if target.port_plan is not None:
        return _port_plan_ab(args, target)
    from kgen.core.resources import output_file, user_path, write_whole
    from kgen.gen.spec import load_file, read_source
    from kgen.perf.ab import compare, device_measure_with, emulate_with, open_device, parse_sweep, parse_vary

    spec_file = load_file(args.spec)
    vary, sweep = parse_vary(args.vary), parse_sweep(args.sweep)
    outputs = {flag: user_path(value) for flag, value in (("--csv", args.csv), ("--html", args.html)) if value}
    for flag, path in outputs.items():
        output_file(flag, path)
    measure, opened = None, None
    if args.device:
        opened = open_device()
        measure = device_measure_with(*opened, runs=args.runs, warmup=args.warmup, seed=args.seed)
    emulate = emulate_with(args.numerics, args.seed, args.jobs) if args.emulate else None
    command = " ".join(["kgen ab", _shown(Path(args.spec).resolve()) if Path(args.spec).is_absolute() else args.spec,
                        *(f"--vary {v}" for v in args.vary), *(f"--sweep {v}" for v in args.sweep),
                        *(["--emulate", f"--numerics {args.numerics}"] if args.emulate else []), f"--seed {args.seed}"])
    try:
        with _progress() as progress:
            comparison = compare(spec_file, read_source(args.spec), vary=vary, sweep=sweep, seed=args.seed,
                                 command=command, emulate=emulate, measure=measure, numerics=args.numerics,
                                 progress=progress, log=_log_line)
    finally:
        if opened is not None:
            opened[0].close_device(opened[1])
    from kgen.perf import abreport

    for flag, path in outputs.items():
        text = abreport.csv_text(comparison) if flag == "--csv" else abreport.html_text(comparison)
        write_whole(flag, path, text)
    if args.json:
        print(json.dumps(abreport.comparison_to_dict(comparison), indent=2))
    else:
        sys.stdout.write(abreport.format_text(comparison))
        for flag, path in outputs.items():
            _print_wrapped(f"wrote     {_shown(path)} ({flag[2:]})", "  ", " " * 12)
    # as kgen emulate: an emulated variant that is not its golden model's bits is a failure
    return 1 if any(r.emulated is not None and not r.emulated.ok for r in comparison.legal) else 0


def _log_line(line: str) -> None:
    """One progress line of a long job on stderr (stdout may be --json): with or without a terminal,
    each line as it happens, so a log shows what ran and when."""
    print(f"kgen: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _progress():
    """A spinner on stderr with the phase and the time so far, for runs that take a while; nothing
    when stderr is not a terminal (stdout may be --json, and logs stay clean)."""
    if not sys.stderr.isatty():
        yield lambda phase: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("kgen: {task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("starting", total=None)
        yield lambda phase: bar.update(task, description=phase)


def _doctor(args: argparse.Namespace) -> int:
    """What kgen found, and as its last line whether build, emulate and port-check can run here:
    EXIT_INCOMPLETE when one cannot (the chain's missing-tool policy)."""
    from kgen.proof.chain import EXIT_INCOMPLETE, check_tool_folders, missing_for_emulation, missing_for_typecheck
    from kgen.toolchain.discovery import discover, doctor_text

    check_tool_folders(args.sfpi, args.headers, args.firmware)
    tc = discover(args.sfpi, args.headers, args.firmware)
    sys.stdout.write(doctor_text(tc))
    missing = [f"kgen build cannot type-check: {why}" for why in
               [missing_for_typecheck(tc, "sfpi" if tc.sfpi is not None else "check")] if why]
    missing += [f"kgen emulate cannot run: {why}" for why in [missing_for_emulation()] if why]
    if missing:
        _print_wrapped("kgen doctor: INCOMPLETE; " + "; ".join(missing))
        return EXIT_INCOMPLETE
    _print_wrapped("kgen doctor: kgen build, emulate and port-check can all run here")
    return 0


def _run_toolchain(args: argparse.Namespace) -> int:
    from kgen.toolchain.headers import fetch_headers, find_headers

    if args.command == "doctor":
        return _doctor(args)
    if args.headers_command == "path":
        tree, note = find_headers()
        if tree is None:
            from kgen.toolchain.headers import HeadersError
            raise HeadersError(f"no TT-Metal headers ({note}); get them with: kgen headers fetch")
        print(tree.root)
        return 0
    fetch_headers(args.tt_version, args.from_wheel, log=lambda line: print(f"kgen headers: {line}", flush=True),
                  force=args.force)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from kgen.core.interrupts import EXIT_INTERRUPTED, Terminated, terminating_as_exception

    parser = _build_parser()
    if not (sys.argv[1:] if argv is None else list(argv)):
        parser.print_help()                   # bare `kgen`: what it can do, not an error
        return 0
    args = parser.parse_args(argv)
    try:
        # SIGTERM and SIGHUP unwind the stack as Ctrl-C does: every temporary folder is removed
        with terminating_as_exception():
            return _run(args)
    except KgenError as exc:
        text = exc.render() if hasattr(exc, "render") else f"error: {exc}"
        sys.stderr.write(f"kgen: {text}\n")
        return exc.exit_code
    except KgenBug as exc:
        sys.stderr.write(f"kgen: internal error (a bug in kgen, please report it): {exc}\n")
        return 3
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        # Every writer of kgen writes to a temporary name and renames, so nothing is half-written.
        sys.stderr.write("kgen: interrupted\n")
        return EXIT_INTERRUPTED
    except Terminated as exc:
        sys.stderr.write(f"kgen: {exc}\n")
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
