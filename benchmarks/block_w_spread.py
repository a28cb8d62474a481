"""in0_block_w sweeps at a fixed placement, out block and subblock, on both archs, by hand:

    python3 benchmarks/block_w_spread.py            # predicted spreads of full-size configs
    python3 benchmarks/block_w_spread.py --emulate  # ... and small configs predicted and emulated

For each config only in0_block_w changes (over the divisors of Kt that kgen plans): the spread is the
narrowest K-block's time over the widest one's, minus one. Every figure is predicted (the model) or
emulated (the emulator's modelled cycles); the silicon spreads that are public are printed by
benchmarks/bh_sweep.py (the Blackhole 12 x 10 sweep's pairs) and quoted in docs/perf-model.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.core.errors import KgenError  # noqa: E402
from kgen.gen.pipeline import run  # noqa: E402
from kgen.gen.spec import parse_text, resolve  # noqa: E402
from kgen.perf.model import predict  # noqa: E402

# (label, arch, M x N x K, grid, per_core, out_block, subblock, compute block, widths)
BH_SWEEP_COMPUTE = ("math_fidelity = HiFi4  fp32_dest_acc = true  packer_l1_acc = false  math_approx = false  "
                    "dst_full_sync = false")
GEMM_COMPUTE = "math_fidelity = HiFi2  fp32_dest_acc = false  packer_l1_acc = true  math_approx = true  dst_full_sync = false"
FULL = (
    ("BH sweep 4096x8192x2048 (dgrad), blk 13x3 sb 1x3", "blackhole", "4096 x 2048 x 8192", "12 x 10", "13 x 6",
     "13 x 3", "1 x 3", BH_SWEEP_COMPUTE, (2, 4, 8, 16, 32)),
    ("BH sweep 1024x16032x8192 (dgrad), blk 4x11 sb 4x1", "blackhole", "1024 x 8192 x 16032", "12 x 10", "4 x 22",
     "4 x 11", "4 x 1", BH_SWEEP_COMPUTE, (1, 3)),
    ("n150 3072x3072x4096 bf16 HiFi2 DRAM, blk 12x16 sb 4x2", "wormhole_b0", "3072 x 4096 x 3072", "8 x 8",
     "12 x 16", "12 x 16", "4 x 2", GEMM_COMPUTE, (1, 2, 3, 4, 6, 12)),
    ("p150 3840x4992x4992 bf16 HiFi2 DRAM, blk 12x12 sb 4x2", "blackhole", "3840 x 4992 x 4992", "13 x 10",
     "12 x 12", "12 x 12", "4 x 2", GEMM_COMPUTE, (1, 2, 3, 6, 13)),
)
SMALL = (
    ("small BH fp32 spill, 2x2 grid, blk 4x4 sb 4x1", "blackhole", "256 x 256 x 768", "2 x 2", "4 x 4", "4 x 4",
     "4 x 1", BH_SWEEP_COMPUTE, (2, 3, 6, 12)),
    ("small WH bf16 L1-acc, 2x2 grid, blk 4x4 sb 4x2", "wormhole_b0", "256 x 256 x 512", "2 x 2", "4 x 4", "4 x 4",
     "4 x 2", GEMM_COMPUTE, (1, 2, 4, 8)),
)


def spec_text(arch: str, shape: str, grid: str, per_core: str, out_block: str, subblock: str, compute: str,
              width: int) -> str:
    return f"""matmul spread {{
    arch = {arch}
    shape = {shape}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    memory {{ in0 = dram  in1 = dram  out = dram }}
    grid = {grid}
    dataflow = mcast_2d
    block {{ in0_block_w = {width}  out_subblock = {subblock}  per_core = {per_core}  out_block = {out_block} }}
    compute {{ {compute} }}
}}
"""


def sweep(config, emulate: bool) -> None:
    label, arch, shape, grid, per_core, out_block, subblock, compute, widths = config
    times: dict[int, tuple[float, float | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for w in widths:
            try:
                artifacts = run(resolve(parse_text(spec_text(arch, shape, grid, per_core, out_block, subblock,
                                                             compute, w), "spread.kspec")),
                                "rendered" if emulate else "verified")
            except KgenError as exc:
                print(f"  {label}: in0_block_w {w} not planned: {str(exc).splitlines()[0]}")
                continue
            predicted = predict(artifacts.verified).cycles
            emulated = None
            if emulate:
                from kgen.gen.build import write_artifacts
                from kgen.proof.emulate import emulate_folder
                folder = write_artifacts(artifacts, Path(tmp)).path
                emulated = emulate_folder(folder, artifacts.plan, seed=0, numerics="fast").cycles
            times[w] = (predicted, emulated)
    if len(times) < 2:
        return
    line = "  ".join(f"w {w}: {p:,.0f}" + (f" / emu {e:,.0f}" if e is not None else "") for w, (p, e) in times.items())
    narrow, wide = times[min(times)], times[max(times)]
    spread = f"predicted {narrow[0] / wide[0] - 1:+.1%}"
    if narrow[1] is not None:
        spread += f", emulated {narrow[1] / wide[1] - 1:+.1%}"
    print(f"{label}\n  cycles {line}\n  spread w {min(times)} over w {max(times)}: {spread}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulate", action="store_true", help="also the small configs, predicted and emulated")
    args = ap.parse_args(argv)
    for config in FULL:
        sweep(config, emulate=False)
    if args.emulate:
        for config in SMALL:
            sweep(config, emulate=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
