"""Type-check benchmark (issue #4): the peak example's kernels against the real 0.81.1 headers.

    python3 benchmarks/typecheck.py [--repeat 3] [--spec examples/peak_bf16.kspec]

Reports the median wall time of `kgen build --check` on the rendered folder's kernels (every
kernel on every processor it runs on), cold (empty compile cache) with --jobs 1 and --jobs 2, and
warm (everything cached). Needs the host checker and `kgen headers fetch`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.gen.build import build  # noqa: E402
from kgen.toolchain.compile import compile_folder  # noqa: E402
from kgen.gen.spec import load  # noqa: E402
from kgen.toolchain.discovery import build_mode_text, discover  # noqa: E402


def timed(folder: Path, tc, jobs: int, cache: Path) -> tuple[float, int]:
    start = time.perf_counter()
    report = compile_folder(folder, tc, "check", parallel=jobs, cache=cache)
    elapsed = time.perf_counter() - start
    if report.failures:
        raise SystemExit(f"type-check failed: {report.failures[0].output[:2000]}")
    return elapsed, report.compiled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spec", default=str(ROOT / "examples" / "peak_bf16.kspec"))
    args = parser.parse_args()
    tc = discover()
    if tc.headers is None or tc.host is None:
        print(f"cannot type-check here: {build_mode_text(tc)}; {tc.note('headers')}; {tc.note('host checker')}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = build(load(args.spec), Path(tmp) / "out").path
        rows = {}
        for jobs in (1, 2):
            times = []
            for i in range(args.repeat):
                t, compiled = timed(folder, tc, jobs, Path(tmp) / f"cold-{jobs}-{i}")
                times.append(t)
            rows[f"cold, --jobs {jobs}"] = (statistics.median(times), compiled)
        warm_cache = Path(tmp) / "warm"
        timed(folder, tc, 2, warm_cache)
        times = [timed(folder, tc, 2, warm_cache) for _ in range(args.repeat)]
        rows["warm (cached), --jobs 2"] = (statistics.median([t for t, _ in times]), times[0][1])
    print(f"type-check of {Path(args.spec).name}: median of {args.repeat}, {os.cpu_count()} CPUs, "
          f"{tc.host.cxx} {tc.host.version}, TT-Metal {tc.headers.version} headers")
    for name, (seconds, compiled) in rows.items():
        print(f"  {name:<26} {seconds * 1000:8.1f} ms   ({compiled} compiler runs)")
    one, two = rows["cold, --jobs 1"][0], rows["cold, --jobs 2"][0]
    warm = rows["warm (cached), --jobs 2"][0]
    print(f"  --jobs 2 speed-up over --jobs 1: {one / two:.2f}x;  warm over cold (--jobs 2): {two / warm:.0f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
