#!/usr/bin/env python3
"""Validate `kgen tune --min-pcc`'s error prediction (kgen/perf/tune/precision.py) against exact
emulation (kgen/proof/emulate.py: the kernels on the emulator, bit-exact to the golden model).

The grid: both archs; K = 1,024 / 4,096 / 16,384; in1 bfloat16 / bfloat8_b / bfloat4_b (in0
bfloat16); LoFi, HiFi2, HiFi3, HiFi4; fp32 dest accumulation off and on; packer L1 accumulation
requested or not; in0_block_w = 4 (K / 128 K-blocks, so both policies run), a 256 x 256 output,
the rest of the blocking the planner's.
Every point is emulated exact on the whole output where it is at most 2^28 multiply-accumulates,
else (K = 16,384) on a 128 x 128 sub-block over the full K, as `--verify` does. Inputs: seeded
N(0, 1) float32 draws, the reference float64 of them before conversion. The growth set: a
1,024 x 1,024 output at K = 1,024 emulated whole (2^30 multiply-accumulates), where the relative
error's maximum over a million elements tests the extrapolation from the proxy's.

Each point's emulation is appended to a JSON-lines file (a rerun skips the points it holds);
`--table` predicts every point with today's proxy and prints the tables of docs/tune.md.

    nice -n 10 python3 benchmarks/tune_precision.py                 # the grid and the growth set
    python3 benchmarks/tune_precision.py --table                     # the tables
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.gen.plan import plan  # noqa: E402
from kgen.gen.spec import parse_text, resolve  # noqa: E402
from kgen.perf.tune.accuracy import AccuracyTarget, Judged  # noqa: E402
from kgen.perf.tune.accuracy_verify import emulate_accuracy  # noqa: E402
from kgen.perf.tune.candidate import Scored  # noqa: E402
from kgen.perf.tune.precision import REL_ERROR_SCALE, RANDOM_INPUTS, NumericsPath, predict_accuracy  # noqa: E402
from kgen.perf.tune.space import candidate_of  # noqa: E402

OUT = ROOT / "benchmarks" / "data" / "tune_precision.jsonl"
ARCHS = ("wormhole_b0", "blackhole")
KS = (1024, 4096, 16384)
DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")
FIDELITIES = ("LoFi", "HiFi2", "HiFi3", "HiFi4")
EXACT_BUDGET = 1 << 28
GROWTH = [("blackhole", 1024, 1024, d, f, fp32, l1) for d in DTYPES
          for f, fp32, l1 in (("LoFi", False, False), ("HiFi2", False, True), ("HiFi4", True, True))]

SPEC = """matmul point {{
    arch  = {arch}
    shape = {m} x {n} x {k}
    dtype {{ in0 = bfloat16  in1 = {in1}  out = bfloat16 }}
    block {{ in0_block_w = 4 }}
    compute {{ math_fidelity = {fidelity}  fp32_dest_acc = {fp32}  packer_l1_acc = {l1} }}
}}
"""


def grid() -> list[tuple]:
    return [(arch, 256, k, d, f, fp32, l1) for arch, k, d, f, fp32, l1 in
            itertools.product(ARCHS, KS, DTYPES, FIDELITIES, (False, True), (True, False))]


def _spec(arch: str, mn: int, k: int, in1: str, fidelity: str, fp32: bool, l1: bool):
    return resolve(parse_text(SPEC.format(arch=arch, m=mn, n=mn, k=k, in1=in1, fidelity=fidelity,
                                          fp32=str(fp32).lower(), l1=str(l1).lower()), "<point>"))


def point(arch: str, mn: int, k: int, in1: str, fidelity: str, fp32: bool, l1: bool, budget: int) -> dict:
    """One grid point emulated exact (whole, or a sub-block over the full K): what the emulation gave."""
    spec = _spec(arch, mn, k, in1, fidelity, fp32, l1)
    p = plan(spec)
    path = NumericsPath.of_plan(p)
    judged = Judged(Scored(candidate_of(p), 0.0, 0.0, 0.0, 0.0, "", p.policy), (spec.dtype_in0, spec.dtype_in1),
                    path, None, 0.0)
    t0 = time.perf_counter()
    measured, block, is_whole = emulate_accuracy(spec, judged, AccuracyTarget(min_pcc=0.5), RANDOM_INPUTS,
                                                 budget=budget)
    return {"arch": arch, "m": mn, "n": mn, "k": k, "in1": in1, "fidelity": fidelity, "fp32": fp32,
            "l1_request": l1, "policy": p.policy, "in0_block_w": p.in0_block_w, "partials": p.partials_format,
            "emu_pcc": measured.pcc, "emu_rel": measured.rel_error, "emulated": list(block), "whole": is_whole,
            "emulate_seconds": round(time.perf_counter() - t0, 2)}


def predicted(r: dict) -> dict:
    """The row with the prediction of today's proxy: at the whole output, at the emulated block's
    size (what the emulated relative error is compared with), and the proxy's own maximum."""
    spec = _spec(r["arch"], r["m"], r["k"], r["in1"], r["fidelity"], r["fp32"], r["l1_request"])
    p = plan(spec)
    t0 = time.perf_counter()
    whole = predict_accuracy(p, spec.m, spec.n, RANDOM_INPUTS)
    at_block = predict_accuracy(p, r["emulated"][0], r["emulated"][1], RANDOM_INPUTS)
    proxy_only = predict_accuracy(p, *whole.proxy, RANDOM_INPUTS)     # the proxy's own max, not extrapolated
    return {**r, "proxy": list(whole.proxy), "pred_pcc": whole.pcc, "pred_rel": whole.rel_error,
            "pred_rel_at_block": at_block.rel_error, "proxy_rel": proxy_only.rel_error / REL_ERROR_SCALE,
            "predict_seconds": round(time.perf_counter() - t0, 2)}


def run(points: list[tuple], out: Path, budget: int) -> None:
    done = set()
    if out.is_file():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["arch"], r["m"], r["k"], r["in1"], r["fidelity"], r["fp32"], r["l1_request"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    todo = [p for p in points if p not in done]
    for i, args in enumerate(todo):
        r = point(*args, budget=budget)
        with out.open("a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"[{i + 1}/{len(todo)}] {args}: emulated PCC {r['emu_pcc']:.6f}, rel {r['emu_rel']:.3g} "
              f"({r['emulate_seconds']:.0f} s)", flush=True)


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def table(rows: list[dict]) -> str:
    grid_rows = [r for r in rows if r["m"] == 256]
    growth = [r for r in rows if r["m"] != 256]
    out = ["| in1 | points | median abs dPCC | max abs dPCC | (1 - PCC) pred / emu: median [p10, p90] | "
           "rel error pred / emu: median [p10, p90] | proxy's own, unscaled / emu: median |", "|---|---|---|---|---|---|---|"]
    for d in DTYPES + ("all",):
        rs = [r for r in grid_rows if d in ("all", r["in1"])]
        if not rs:
            continue
        dp = [abs(r["pred_pcc"] - r["emu_pcc"]) for r in rs]
        pr = [(1 - r["pred_pcc"]) / (1 - r["emu_pcc"]) for r in rs if r["emu_pcc"] < 1]
        rr = [r["pred_rel_at_block"] / r["emu_rel"] for r in rs if r["emu_rel"] > 0]
        raw = [r["proxy_rel"] / r["emu_rel"] for r in rs if r["emu_rel"] > 0]
        out.append(f"| {d} | {len(rs)} | {_median(dp):.1e} | {max(dp):.1e} | {_median(pr):.2f} [{_quantile(pr, 0.1):.2f}, "
                   f"{_quantile(pr, 0.9):.2f}] | {_median(rr):.2f} [{_quantile(rr, 0.1):.2f}, {_quantile(rr, 0.9):.2f}] | "
                   f"{_median(raw):.2f} |")
    out += ["", "| arch | K | in1 | fidelity | fp32 | policy | w | PCC pred | PCC emu | rel pred | rel emu | emulated |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(grid_rows, key=lambda r: (r["arch"], r["k"], DTYPES.index(r["in1"]), FIDELITIES.index(r["fidelity"]),
                                              r["fp32"], r["policy"])):
        out.append(_row(r))
    if growth:
        out += ["", "Growth with M x N (1,024 x 1,024 output, K = 1,024, whole, exact):", "",
                "| in1 | fidelity | fp32 | policy | PCC pred | PCC emu | rel pred | rel emu | proxy's own max |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in growth:
            out.append(f"| {r['in1']} | {r['fidelity']} | {'yes' if r['fp32'] else 'no'} | {r['policy']} | "
                       f"{r['pred_pcc']:.6f} | {r['emu_pcc']:.6f} | {r['pred_rel']:.3g} | {r['emu_rel']:.3g} | "
                       f"{r['proxy_rel']:.3g} |")
    return "\n".join(out) + "\n"


def _row(r: dict) -> str:
    where = "whole" if r["whole"] else f"{r['emulated'][0]} x {r['emulated'][1]}"
    return (f"| {r['arch']} | {r['k']:,} | {r['in1']} | {r['fidelity']} | {'yes' if r['fp32'] else 'no'} | "
            f"{r['policy']} | {r['in0_block_w']} | {r['pred_pcc']:.6f} | {r['emu_pcc']:.6f} | "
            f"{r['pred_rel_at_block']:.3g} | {r['emu_rel']:.3g} | {where} |")


# tenstorrent/tt-metal#32584: ttnn.matmul with its default config of torch.rand bf16 inputs (uniform
# [0, 1): every product positive, the sums large), M = 128, N = 768, measured on a card: PCC 0.99,
# 0.98 and 0.95 at K = 512, 1,024 and 2,048 (against torch.matmul of the same bf16 tensors).
SILICON = [(512, 0.99), (1024, 0.98), (2048, 0.95)]
SILICON_SPEC = """matmul tt_32584 {{
    arch  = wormhole_b0
    shape = 128 x 768 x {k}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
}}
"""


def silicon() -> list[dict]:
    """tt-metal#32584 against kgen: TT's automatic config (kgen/perf/ttchoice.py) with ttnn.matmul's
    default compute config, predicted on uniform [0, 1) bf16 inputs and emulated exact whole."""
    import numpy as np

    from kgen.perf.ttchoice import tt_auto
    from kgen.perf.tune.precision import InputSource, OperandData
    from kgen.proof.tiles import quantize

    rows = []
    for k, measured in SILICON:
        spec = tt_auto(resolve(parse_text(SILICON_SPEC.format(k=k), "<tt_32584>"))).spec
        p = plan(spec)
        rng = np.random.default_rng(0)
        a = quantize(rng.random((128, k), np.float32), "Float16_b")       # torch.rand(..., dtype=bfloat16)
        b = quantize(rng.random((k, 768), np.float32), "Float16_b")
        source = InputSource(OperandData.of(a, "rand_a"), OperandData.of(b, "rand_b"))
        pred = predict_accuracy(p, 128, 768, source)
        judged = Judged(Scored(candidate_of(p), 0.0, 0.0, 0.0, 0.0, "", p.policy), ("bfloat16", "bfloat16"),
                        NumericsPath.of_plan(p), pred, 0.0)
        emu, block, whole = emulate_accuracy(spec, judged, AccuracyTarget(min_pcc=0.5), source)
        c = p.compute
        rows.append({"k": k, "silicon_pcc": measured, "pred_pcc": pred.pcc, "emu_pcc": emu.pcc, "whole": whole,
                     "config": f"{c.math_fidelity}{' fp32' if c.fp32_dest_acc else ''} {p.policy} w {p.in0_block_w} "
                               f"partials {p.partials_format}"})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table", action="store_true", help="print the tables from --out")
    ap.add_argument("--growth-only", action="store_true")
    ap.add_argument("--grid-only", action="store_true")
    ap.add_argument("--silicon", action="store_true", help="tt-metal#32584's silicon PCC against kgen's")
    args = ap.parse_args()
    if args.silicon:
        print("| K | TT auto's config (ttnn.matmul default compute) | silicon PCC | predicted | emulated exact |")
        print("|---|---|---|---|---|")
        for r in silicon():
            print(f"| {r['k']:,} | {r['config']} | {r['silicon_pcc']} | {r['pred_pcc']:.4f} | {r['emu_pcc']:.4f} |")
        return 0
    if args.table:
        sys.stdout.write(table([predicted(json.loads(line)) for line in args.out.read_text().splitlines()]))
        return 0
    if not args.growth_only:
        run(grid(), args.out, EXACT_BUDGET)
    if not args.grid_only:
        run(GROWTH, args.out, 1 << 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
