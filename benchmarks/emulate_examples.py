"""Every example and variant in exact numerics, by hand: `python3 benchmarks/emulate_examples.py [NAME...]`.

The test run emulates the small examples exactly and the large ones (2-69 G multiply-accumulates)
in fast mode; this script runs them all bit-exact against the golden model and prints one line
each (emulation time, golden-model time, verdict). peak_bf16 (68.7 G MAC) takes about 12 minutes a
variant on a 2-core machine: 3 minutes of emulation, the rest the NumPy golden model. The padded
examples of issue #17, measured on the shared 2-core machine: bh_4096_full_grid (68.7 G MAC) 34 minutes
and wh_mlp_11008 (92.3 G MAC) 16 minutes, both bit-exact without a hazard.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(names: list[str]) -> int:
    from kgen.gen.build import build
    from kgen.proof.emulate import emulate_folder
    from kgen.gen.plan import plan
    from kgen.gen.spec import load_file, resolve

    names = names or sorted(p.stem for p in (ROOT / "examples").glob("*.kspec"))
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            spec_file = load_file(ROOT / "examples" / f"{name}.kspec")
            for variant in [None, *spec_file.variants]:
                spec = resolve(spec_file, variant)
                p = plan(spec)
                folder = build(spec, Path(tmp)).path
                t = time.perf_counter()
                e = emulate_folder(folder, p, seed=0)
                failed += not e.ok
                print(f"{name:<22} {variant or '-':<8} {p.policy:<14} {e.macs / 1e9:6.2f} G MAC  "
                      f"emulate {e.emulate_seconds:7.1f} s ({e.macs / e.emulate_seconds / 1e6:5.0f} M MAC/s)  "
                      f"total {time.perf_counter() - t:7.1f} s  "
                      f"{'bit-exact' if e.exact_match else 'NOT bit-exact'}  hazards {len(e.hazards)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
