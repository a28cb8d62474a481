"""How much of TT-Metal's corpus of real matmul calls does kgen plan, and why not the rest?

Source. `benchmarks/data/tt_matmul_oob_cases.csv` is a verbatim copy (CRLF line ends kept) of
    tenstorrent/tt-metal tests/ttnn/unit_tests/benchmarks/matmul_oob/cases.csv
    @ c9482b1ca67da3f62e2cf8dee66f694d703d7e8e
TT-Metal's validation corpus for its default matmul config selection (#57884): 539 ttnn.matmul /
ttnn.linear calls in five tiers (issues, models, generic, sharded, and 304 calls traced from real
models). benchmarks/data/SOURCES.md says how it was copied and checked. The meaning of its columns
was read from the same folder:
    tenstorrent/tt-metal tests/ttnn/unit_tests/benchmarks/matmul_oob/suite.py
    @ 4b385bbeaceb0f8365edb1c3c7be221c1403b03e   (the `Case` fields, `cases_from_csv`)
    tenstorrent/tt-metal tests/ttnn/unit_tests/benchmarks/matmul_oob/run_suite.py
    @ 2cb6eb386ba751994009e155aeac99f5de1ffb76   (how a case becomes one ttnn call)
    tenstorrent/tt-metal tests/ttnn/unit_tests/benchmarks/matmul_oob/README.md
    @ 0c423233e44ba5f996447632a9b032dd65529e13

Every case is run there without a program config (so TT picks the blocking), and with an explicit
compute kernel config. A case maps to a kgen spec holding only what the case fixes; everything
else (dataflow, grid unless `core_grid` is given, every block value) is left to kgen's defaults, and
with no dataflow line that is TT's own choice (`dataflow = auto`, the default):

    a_shape, b_shape   A is [..., M, K], B is [..., K, N] (after transpose_a / transpose_b).
                       `shape = M x N x K` (kgen's order). The leading dims are the batch:
                       B with no batch (2-D, or leading 1s) is broadcast: `batch = prod(A's
                       leading dims)`, or A's dims as they are for a rank-4/5 A (`batch = 1 x
                       32`; kgen folds them into their product as ttnn does); B with the same
                       leading dims as A is one B per batch: `batch = ...` and `broadcast_in1 =
                       false`. A batch both have but that broadcasts along some dims only has no
                       spec syntax (refused), nor has an A of rank 6 or more.
    a/b/out_dtype      dtype.in0 / in1 / out (bf16 bfloat16, bfp8 bfloat8_b, bfp4 bfloat4_b,
                       fp32 float32); an empty out_dtype is ttnn's default, A's dtype.
    a/b/out_mem        memory.in0 / in1 / out: dram -> dram (kgen's default, left unwritten),
                       l1_block / l1_height / l1_width -> l1_*_sharded (with no shard spec in the
                       case, the shard is left to the op: kgen lays it out), l1 (interleaved) -> l1;
                       in1 l1_height has no spec syntax.
    a/out_shard        `(x0,y0)-(x1,y1):HxW:row` -> `memory.in0_shard = H x W on X x Y` (X = x1 + 1 columns by
                       Y = y1 + 1 rows of cores from (0, 0)); `col` -> `memory.orientation = col_major` (in0's).
                       A core range not at (0, 0), or a COL_MAJOR output shard, has no spec syntax; nor has a
                       height-sharded in1 (b_mem l1_height) or its b_shard: no factory kgen builds takes in1
                       sharded in L1 (TT's MatmulMultiCoreReuseProgramConfig does, beside a sharded in0).
    transpose_a/_b     `transpose_a = true` / `transpose_b = true` (A stored [..., K, M], B [..., N, K]).
    op, bias           linear with bias=1 -> `fuse { bias = true }`; run_suite.py makes the bias
                       a (1, N) tensor in B's dtype -> `dtype.bias = <B's dtype>`.
    activation         linear's string -> fuse.activation: relu, silu, gelu (TT's GELU, fast
                       off) -> gelu, gelu_approx (GELU, fast on) -> gelu_fast.
    core_grid          "device" -> `grid = ` the arch's whole worker grid; "(x, y)" ->
                       `grid = x x y` (ttnn.CoreGrid(x=..., y=...): x columns, y rows).
    fidelity, fp32_acc, packer_l1_acc
                       `compute { math_fidelity  fp32_dest_acc  packer_l1_acc }`, plus
                       `math_approx = false`, which run_suite.py passes for every case.
    case, tier, source, tags   names and grouping only.

The arch is not in the CSV (TT's reference results are Wormhole n150 runs): `--arch` picks it,
wormhole_b0 by default. Each spec is parsed and planned as `kgen check` does (parse_text, resolve,
plan) -- planning only, nothing is built. A case is `planned`, or refused by the first of:
no spec syntax for something the case fixes (origin `spec language`), the spec checker (`kgen
spec check`), or a planner rule (PlanError: origin `kgen` for kgen's own rules, whose rule text
starts with `kgen:` or ends `(kgen)`, else `TT-Metal`).

With no dataflow line (or `--dataflow auto`, which writes `dataflow = auto`) the planner takes TT's
own choice of factory, grid and blocking (kgen/gen/ttauto.py), the choice these calls were run with;
a `--dataflow NAME` writes that factory into every spec (`--dataflow mcast_2d`: kgen's peak factory
for every case, whatever TT would pick).

    python3 benchmarks/tt_corpus.py [--arch blackhole] [--dataflow auto] [--json FILE] [--out FILE.md]
                                    [--csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kgen.core.arch import load_arch
from kgen.core.errors import KgenError, SpecError
from kgen.gen import dataflow as dataflows
from kgen.gen.plan import BATCHED_IN1_RULE, SHARDED_PLACEMENT_RULE, plan
from kgen.gen.ttauto import AUTO_RULE
from kgen.gen.spec import parse_text, resolve

CSV_PATH = ROOT / "benchmarks" / "data" / "tt_matmul_oob_cases.csv"
TT_SOURCE = ("tenstorrent/tt-metal tests/ttnn/unit_tests/benchmarks/matmul_oob/cases.csv "
             "@ c9482b1ca67da3f62e2cf8dee66f694d703d7e8e")
COLUMNS = ("case", "tier", "source", "tags", "a_shape", "b_shape", "a_dtype", "b_dtype", "out_dtype",
           "a_mem", "b_mem", "out_mem", "a_shard", "b_shard", "out_shard", "transpose_a", "transpose_b",
           "op", "bias", "activation", "core_grid", "fidelity", "fp32_acc", "packer_l1_acc")
ARCHS = ("wormhole_b0", "blackhole")

DTYPES = {"bf16": "bfloat16", "bfp8": "bfloat8_b", "bfp4": "bfloat4_b", "fp32": "float32"}
# (tensor, suite.py placement) -> kgen memory.* value; a placement missing here has no spec syntax
MEMORY = {
    ("in0", "dram"): "dram", ("in0", "l1"): "l1", ("in0", "l1_block"): "l1_block_sharded",
    ("in0", "l1_height"): "l1_height_sharded", ("in0", "l1_width"): "l1_width_sharded",
    ("in1", "dram"): "dram", ("in1", "l1"): "l1",
    ("out", "dram"): "dram", ("out", "l1"): "l1", ("out", "l1_block"): "l1_block_sharded",
    ("out", "l1_width"): "l1_width_sharded", ("out", "l1_height"): "l1_height_sharded",
}
# suite.py's shard column: `(x0,y0)-(x1,y1):HxW:row|col`, a ttnn.ShardSpec on one core range
SHARD = re.compile(r"\((\d+),\s*(\d+)\)-\((\d+),\s*(\d+)\):(\d+)x(\d+):(row|col)")
PLACEMENT_WORDS = {"l1": "L1-interleaved", "l1_block": "block-sharded", "l1_height": "height-sharded",
                   "l1_width": "width-sharded"}
# linear's activation string (run_suite.py's golden: "gelu" exact, "gelu_approx" the tanh form,
# i.e. TT's GELU with the fast flag) -> kgen's spelling (kgen/gen/activations.py)
ACTIVATIONS = {"relu": "relu", "silu": "silu", "gelu": "gelu", "gelu_approx": "gelu_fast"}
FIDELITIES = ("LoFi", "HiFi2", "HiFi3", "HiFi4")
MAX_BATCH = 4096                                    # kgen's `batch` range (docs/spec.md)
MAX_BATCH_DIMS = 3                                  # `batch = B1 x B2 x B3`: an in0 of rank 5 at most

# Short names for the planner rules the corpus runs into (the full rule is in --json's `rule`);
# a rule not listed here is shown by its own text, cut to fit the table.
SHORT_RULES = {
    BATCHED_IN1_RULE: "B batched: fuse_batch (mcast_2d) needs B's batch == 1",
    SHARDED_PLACEMENT_RULE: "a sharded placement the default mcast_2d does not take",
    "grid within compute_with_storage_grid_size": "core_grid larger than the arch's worker grid",
    "CBs fit the usable L1 of the core": "CBs do not fit L1",
    AUTO_RULE: "dataflow = auto: TT's choice not reconstructed",
}


class InputError(Exception):
    """Bad input to the script (a file, a flag or the CSV): one line, exit 2."""


@dataclass(frozen=True)
class Mapped:
    """One case as a spec: its text, or what it fixes that the spec language cannot say."""

    spec_text: str | None
    missing: tuple[str, ...]                   # features with no spec syntax, in the CSV's column order
    batch: int
    m: int
    n: int
    k: int


@dataclass
class Result:
    case: str
    tier: str
    status: str                                # "planned" or "refused"
    origin: str = ""                           # spec language | kgen spec check | kgen | TT-Metal
    cause: str = ""                            # the short cause the table groups by
    rule: str = ""                             # the planner's rule, in full
    message: str = ""                          # the refusal's message, in full
    missing: list[str] = field(default_factory=list)
    batch: int = 1
    m: int = 0
    n: int = 0
    k: int = 0
    spec: str | None = None
    dataflow: str = ""                         # of a planned case: what kgen chose
    grid: str = ""


# ------------------------------------------------------------------------------------------------
# reading


def read_cases(path: Path) -> list[dict[str, str]]:
    """The CSV's rows, as dicts by column; InputError for a missing file or a wrong header."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({exc})") from None
    reader = csv.DictReader(text.splitlines())
    header = tuple(reader.fieldnames or ())
    absent = [c for c in COLUMNS if c not in header]
    if absent:
        raise InputError(f"{path}: not TT's matmul_oob cases.csv (no column {', '.join(absent)})")
    rows = list(reader)
    if not rows:
        raise InputError(f"{path}: no cases")
    return rows


def _dims(text: str, what: str) -> list[int]:
    try:
        dims = [int(d) for d in text.split("x")]
    except ValueError:
        raise InputError(f"{what} = {text!r}: expected dimensions like 32x1024") from None
    if not dims or any(d <= 0 for d in dims):
        raise InputError(f"{what} = {text!r}: expected positive dimensions")
    return dims


# ------------------------------------------------------------------------------------------------
# one case -> one spec


def spec_name(case: str) -> str:
    """A case name as a spec NAME ([A-Za-z_][A-Za-z0-9_]*)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", case)
    return name if re.match(r"[A-Za-z_]", name) else f"c_{name}"


def map_case(row: dict[str, str], arch: str, dataflow: str | None = None) -> Mapped:
    """The spec of one CSV row (see the module docstring), or the features it lacks; `dataflow`
    (auto or a factory's name) is written into the spec when given."""
    missing: list[str] = []
    a = _dims(row["a_shape"], f"{row['case']}: a_shape")
    b = _dims(row["b_shape"], f"{row['case']}: b_shape")
    if len(a) < 2 or len(b) < 2:
        missing.append("a 1-D operand")
        a, b = [1] * (2 - len(a)) + a, [1] * (2 - len(b)) + b
    # transposes are read first (they decide M, K and N) but listed after the placements: `missing`
    # follows the CSV's column order
    transposes = [f"transpose_{t}" for t in "ab" if row[f"transpose_{t}"] == "1"]
    if "transpose_a" in transposes:
        a[-2], a[-1] = a[-1], a[-2]
    if "transpose_b" in transposes:
        b[-2], b[-1] = b[-1], b[-2]
    m, k, n = a[-2], a[-1], b[-1]
    if b[-2] != k:
        raise InputError(f"{row['case']}: A's K {k} is not B's K {b[-2]}")

    lead_a, lead_b = a[:-2], b[:-2]
    batch_a, batch_b = math.prod(lead_a), math.prod(lead_b)
    broadcast_in1 = batch_b == 1
    width = max(len(lead_a), len(lead_b))
    same_lead = [1] * (width - len(lead_a)) + lead_a == [1] * (width - len(lead_b)) + lead_b
    if not broadcast_in1 and not same_lead:
        missing.append("a batch broadcast along some dims only")
    batch = max(batch_a, batch_b)
    if batch > MAX_BATCH:
        missing.append(f"batch > {MAX_BATCH}")
    if len(lead_a) > MAX_BATCH_DIMS:
        missing.append(f"an in0 of rank {len(a)}")

    memory: dict[str, str] = {}
    for tensor, column in (("in0", "a_mem"), ("in1", "b_mem"), ("out", "out_mem")):
        place = row[column]
        value = MEMORY.get((tensor, place))
        if value is None:
            missing.append(f"{PLACEMENT_WORDS.get(place, place)} {tensor}")
        elif value != "dram":
            memory[tensor] = value
    if row["b_shard"]:                  # in1 is interleaved on every factory kgen builds: no L1-sharded in1
        missing.append("an explicit shard spec (in1)")
    for tensor, column in (("in0", "a_shard"), ("out", "out_shard")):
        if row[column]:
            written = shard_text(row[column], tensor, row["case"], missing)
            if written:
                memory.update(written)

    activation = row["activation"]
    if activation and activation not in ACTIVATIONS:
        missing.append(f"activation {activation}")
    for column in ("a_dtype", "b_dtype"):
        if row[column] not in DTYPES:
            raise InputError(f"{row['case']}: {column} = {row[column]!r}: expected one of {', '.join(DTYPES)}")
    out_dtype = row["out_dtype"] or row["a_dtype"]
    if out_dtype not in DTYPES:
        raise InputError(f"{row['case']}: out_dtype = {out_dtype!r}: expected one of {', '.join(DTYPES)}")
    if row["fidelity"] not in FIDELITIES:
        raise InputError(f"{row['case']}: fidelity = {row['fidelity']!r}: expected one of {', '.join(FIDELITIES)}")
    if missing:
        return Mapped(None, tuple(missing), batch, m, n, k)

    bias = row["bias"] == "1"
    lines = [f"matmul {spec_name(row['case'])} {{",
             f"    arch = {arch}",
             f"    shape = {m} x {n} x {k}"]
    if dataflow is not None:
        lines.append(f"    dataflow = {dataflow}")
    if batch > 1 or len(lead_a) > 1:
        # A's leading dims as the case gives them (rank 4 and 5: `batch = B1 x B2`), folded by kgen as by ttnn
        lines.append(f"    batch = {' x '.join(map(str, lead_a)) if len(lead_a) > 1 else batch}")
        if not broadcast_in1:
            lines.append("    broadcast_in1 = false")
    dtype = (f"in0 = {DTYPES[row['a_dtype']]}  in1 = {DTYPES[row['b_dtype']]}  out = {DTYPES[out_dtype]}"
             + (f"  bias = {DTYPES[row['b_dtype']]}" if bias else ""))
    lines.append(f"    dtype {{ {dtype} }}")
    lines += [f"    {t} = true" for t in transposes]      # A stored K x M, B stored N x K, as the case gives them
    if memory:
        lines.append("    memory { " + "  ".join(f"{t} = {v}" for t, v in memory.items()) + " }")
    grid = row["core_grid"]
    if grid == "device":
        gx, gy = load_arch(arch).worker_grid
        lines.append(f"    grid = {gx} x {gy}")
    elif grid:
        found = re.fullmatch(r"\((\d+),\s*(\d+)\)", grid)
        if not found:
            raise InputError(f"{row['case']}: core_grid = {grid!r}: expected device or (x, y)")
        lines.append(f"    grid = {found[1]} x {found[2]}")
    fuse = (["bias = true"] if bias else []) + ([f"activation = {ACTIVATIONS[activation]}"] if activation else [])
    if fuse:
        lines.append("    fuse { " + "  ".join(fuse) + " }")
    flag = {"1": "true", "0": "false"}
    lines.append(f"    compute {{ math_fidelity = {row['fidelity']}  fp32_dest_acc = {flag[row['fp32_acc']]}  "
                 f"packer_l1_acc = {flag[row['packer_l1_acc']]}  math_approx = false }}")
    lines.append("}")
    return Mapped("\n".join(lines) + "\n", (), batch, m, n, k)


def shard_text(text: str, tensor: str, case: str, missing: list[str]) -> dict[str, str]:
    """The memory keys of one shard column (`memory.<tensor>_shard`, and in0's orientation), or {} with
    what has no spec syntax added to `missing`."""
    found = SHARD.fullmatch(text.replace(" ", ""))
    if not found:
        raise InputError(f"{case}: {tensor} shard = {text!r}: expected (x0,y0)-(x1,y1):HxW:row|col")
    x0, y0, x1, y1, h, w = (int(v) for v in found.groups()[:6])
    if (x0, y0) != (0, 0):
        missing.append(f"a shard grid not at core (0, 0) ({tensor})")
        return {}
    keys = {f"{tensor}_shard": f"{h} x {w} on {x1 + 1} x {y1 + 1}"}
    if found[7] == "col":
        if tensor != "in0":
            missing.append(f"a COL_MAJOR shard ({tensor})")
            return {}
        keys["orientation"] = "col_major"
    return keys


# ------------------------------------------------------------------------------------------------
# planning and classifying


def rule_origin(rule: str) -> str:
    """kgen's own rules are tagged in their rule text: `kgen: ...` or `... (kgen)`."""
    return "kgen" if rule.startswith("kgen:") or rule.endswith("(kgen)") else "TT-Metal"


def auto_cause(message: str) -> str:
    """What TT's choice kgen does not reconstruct (kgen/gen/ttauto.py's refusals), in short."""
    for words, cause in (("separate ttnn::add", "MatmulMultiCore, bias as a separate ttnn::add"),
                         ("MatmulMultiCoreProgramConfig", "TT picks MatmulMultiCore (no kgen port)"),
                         ("one in1 matrix per batch", "batched in1, no grid: fuse_batch = false"),
                         ("fuse_batch = false", "batch > 1, no grid: fuse_batch = false"),
                         ("reading in0 from its shards", "width-sharded in0: TT's 1D in0 config"),
                         ("from in0's shard", "sharded in0, batched in1: TT's reuse config"),
                         ("takes its tensors", "TT's choice, a placement its kgen factory lacks"),
                         ("no subblock", "TT finds no subblock")):
        if words in message:
            return cause
    return "TT's choice not reconstructed"


def short_cause(rule: str, width: int = 60) -> str:
    text = SHORT_RULES.get(rule, rule)
    return text if len(text) <= width else text[:width - 3].rstrip() + "..."


def classify(row: dict[str, str], arch: str, dataflow: str | None = None) -> Result:
    """Plan one case: planned, or the first refusal's origin and cause."""
    mapped = map_case(row, arch, dataflow)
    result = Result(row["case"], row["tier"], "refused", batch=mapped.batch, m=mapped.m, n=mapped.n,
                    k=mapped.k, spec=mapped.spec_text, missing=list(mapped.missing))
    if mapped.spec_text is None:
        result.origin, result.cause = "spec language", f"no spec syntax: {mapped.missing[0]}"
        result.message = "no spec syntax for " + ", ".join(mapped.missing)
        return result
    try:
        planned = plan(resolve(parse_text(mapped.spec_text, f"<{row['case']}>")))
    except SpecError as exc:
        rule = getattr(exc, "rule", None)
        result.message = exc.message
        if rule is None:
            result.origin, result.cause = "kgen spec check", short_cause(re.sub(r"\d+", "N", exc.message))
        else:
            result.origin, result.rule, result.cause = rule_origin(rule), rule, short_cause(rule)
            if rule == AUTO_RULE:
                result.cause = "dataflow = auto: " + auto_cause(exc.message)
        return result
    except KgenError as exc:                      # not a rule: e.g. a missing tool; say so
        result.origin, result.cause, result.message = "kgen", type(exc).__name__, str(exc)
        return result
    result.status = "planned"
    result.dataflow = planned.spec.dataflow
    result.grid = f"{planned.grid[0]}x{planned.grid[1]}"
    return result


def run(rows: list[dict[str, str]], arch: str, dataflow: str | None = None) -> list[Result]:
    return [classify(row, arch, dataflow) for row in rows]


def summary(results: list[Result]) -> tuple[int, int, list[tuple[str, str, int]]]:
    """(cases, planned, [(origin, cause, count)] most frequent first)."""
    planned = sum(r.status == "planned" for r in results)
    causes = Counter((r.origin, r.cause) for r in results if r.status != "planned")
    rows = sorted(((o, c, n) for (o, c), n in causes.items()), key=lambda t: (-t[2], t[0], t[1]))
    return len(results), planned, rows


def gaps(results: list[Result]) -> list[tuple[str, int]]:
    """Each feature with no spec syntax and every case that fixes it (first cause or not)."""
    count = Counter(f for r in results for f in r.missing)
    return sorted(count.items(), key=lambda t: (-t[1], t[0]))


# ------------------------------------------------------------------------------------------------
# output


def table_lines(results: list[Result], arch: str, markdown: bool, dataflow: str | None = None) -> list[str]:
    cases, planned, causes = summary(results)
    where = arch if dataflow is None else f"{arch}, dataflow = {dataflow}"
    used = Counter(r.dataflow for r in results if r.status == "planned")
    by_dataflow = ", ".join(f"{d} {n}" for d, n in sorted(used.items(), key=lambda t: (-t[1], t[0])))
    pct = 100.0 * planned / cases
    tiers = Counter(r.tier for r in results)
    tier_planned = Counter(r.tier for r in results if r.status == "planned")
    by_tier = ", ".join(f"{t} {tier_planned[t]}/{n}" for t, n in tiers.items())
    if markdown:
        out = ["| | cases | % |", "| --- | ---: | ---: |",
               f"| TT's corpus ({where}) | {cases} | 100 |", f"| planned | {planned} | {pct:.1f} |", "",
               f"Planned by tier: {by_tier}.", "",
               f"Planned by dataflow: {by_dataflow}.", "",
               "| refused: first cause | origin | cases |", "| --- | --- | ---: |"]
        out += [f"| {c} | {o} | {n} |" for o, c, n in causes]
        out += ["", "| no spec syntax for (every case that fixes it) | cases |", "| --- | ---: |"]
        out += [f"| {f} | {n} |" for f, n in gaps(results)]
        return out
    out = [f"TT-Metal matmul_oob corpus on {where}: {cases} cases, {planned} planned ({pct:.1f} %)",
           f"planned by tier: {by_tier}",
           f"planned by dataflow: {by_dataflow}", "",
           f"{'refused: first cause':<64} {'origin':<16} {'cases':>5}", "-" * 87]
    out += [f"{c:<64} {o:<16} {n:>5}" for o, c, n in causes]
    out += ["", f"{'no spec syntax for (every case that fixes it)':<81} {'cases':>5}", "-" * 87]
    out += [f"{f:<81} {n:>5}" for f, n in gaps(results)]
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:          # one line, exit 2
        self.exit(2, f"tt_corpus.py: error: {message}\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="tt_corpus.py", description="Plan TT-Metal's matmul_oob corpus with kgen.")
    parser.add_argument("--arch", choices=ARCHS, default="wormhole_b0", help="the arch every spec names")
    parser.add_argument("--dataflow", choices=(dataflows.AUTO,) + dataflows.NAMES, metavar="DATAFLOW",
                        help="write `dataflow = DATAFLOW` into every spec (default: no dataflow line, "
                             "which is TT's own choice, as `auto`)")
    parser.add_argument("--csv", type=Path, default=CSV_PATH, help="the cases (default: the stored copy)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write per-case results as JSON")
    parser.add_argument("--out", type=Path, metavar="FILE.md", help="write the table as markdown")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        results = run(read_cases(args.csv), args.arch, args.dataflow)
        for path in (args.json, args.out):
            if path is not None and not path.parent.is_dir():
                raise InputError(f"{path}: no such directory {path.parent}")
    except InputError as exc:
        print(f"tt_corpus.py: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(table_lines(results, args.arch, markdown=False, dataflow=args.dataflow)))
    if args.json is not None:
        args.json.write_text(json.dumps({"source": TT_SOURCE, "arch": args.arch, "dataflow": args.dataflow,
                                         "cases": [asdict(r) for r in results]}, indent=1) + "\n")
    if args.out is not None:
        args.out.write_text("\n".join(table_lines(results, args.arch, markdown=True, dataflow=args.dataflow)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
