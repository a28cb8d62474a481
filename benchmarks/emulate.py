"""Emulation speed, by hand: `python3 benchmarks/emulate.py [--repeat N]`.

Runs, in one process and against the same shapes:
  * exact numerics: 256 x 256 x 1024 bfloat16 on a 2 x 2 grid (target >= 20 M multiply-accumulates/s);
  * fast numerics: 1024 x 1024 x 1024 bfloat16 on a 4 x 4 grid (target <= 20x numpy's float32
    matmul of the same shape, peak memory <= 2 GB);
  * numpy float32 matmul of each shape;
  * the peer simulator tt-lang-sim, one tile per step (benchmarks/ttlang_peer.py), when
    $KGEN_TTLANG_PYTHON names a python that has it (target: kgen fast / tt-lang-sim <= 0.1).
kgen's time is the emulator run (every core, every processor, data movement and arithmetic); the
kernels and the emulator are compiled (and cached) first, and the inputs and golden comparison
are outside the timed part, as tt-lang-sim's figure excludes its imports and input creation.
Compute config: TT-Metal's peak bf16 config (HiFi2, packer L1 accumulation).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

SPEC = """matmul bench_{name} {{
    arch     = wormhole_b0
    shape    = {m} x {n} x {k}
    dtype {{ in0 = bfloat16  in1 = bfloat16  out = bfloat16 }}
    grid     = {gx} x {gy}
    dataflow = mcast_2d
    compute  = peak_hifi2
}}
"""

CASES = [("exact", 256, 256, 1024, (2, 2)), ("fast", 1024, 1024, 1024, (4, 4))]


def numpy_seconds(m: int, n: int, k: int, repeat: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    a @ b
    times = []
    for _ in range(max(repeat, 5)):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def kgen_run(numerics: str, m: int, n: int, k: int, grid, repeat: int, root: Path) -> dict:
    from kgen.gen.build import build
    from kgen.proof.emulate import emulate_folder
    from kgen.gen.plan import plan
    from kgen.gen.spec import parse_text, resolve

    spec = resolve(parse_text(SPEC.format(name=numerics, m=m, n=n, k=k, gx=grid[0], gy=grid[1]), f"bench_{numerics}.kspec"))
    p = plan(spec)
    folder = build(spec, root).path
    emulate_folder(folder, p, numerics=numerics)                # compile and cache; warm up
    runs = [emulate_folder(folder, p, numerics=numerics, seed=i) for i in range(repeat)]
    emu = statistics.median(r.emulate_seconds for r in runs)
    total = statistics.median(r.seconds for r in runs)
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"numerics": numerics, "shape": [m, n, k], "grid": list(grid), "fidelity": p.compute.math_fidelity,
            "policy": p.policy, "emulate_seconds": emu, "command_seconds": total,
            "macs": runs[0].macs, "mac_per_second": runs[0].macs / emu,
            "exact_match": all(r.exact_match for r in runs), "ok": all(r.ok for r in runs),
            "emulator_peak_rss_bytes": child_rss, "python_peak_rss_bytes": self_rss}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import ttlang_peer

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for numerics, m, n, k, grid in CASES:
            r = kgen_run(numerics, m, n, k, grid, args.repeat, Path(tmp))
            r["numpy_seconds"] = numpy_seconds(m, n, k, args.repeat)
            r["over_numpy"] = r["emulate_seconds"] / r["numpy_seconds"]
            try:
                peer = ttlang_peer.run_peer_subprocess(m, n, k, grid, repeat=args.repeat)
                r["ttlang_sim_seconds"] = peer["seconds"]
                r["over_ttlang_sim"] = r["emulate_seconds"] / peer["seconds"]
            except RuntimeError as exc:
                r["ttlang_sim_seconds"] = None
                r["ttlang_sim_note"] = str(exc)
            results.append(r)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        m, n, k = r["shape"]
        print(f"{r['numerics']:5} {m}x{n}x{k} on {r['grid'][0]}x{r['grid'][1]} ({r['fidelity']}, {r['policy']}): "
              f"emulator {r['emulate_seconds']*1e3:.1f} ms ({r['mac_per_second']/1e6:.0f} M MAC/s), "
              f"command {r['command_seconds']*1e3:.0f} ms, numpy float32 {r['numpy_seconds']*1e3:.2f} ms "
              f"-> {r['over_numpy']:.1f}x numpy; {'bit-exact' if r['exact_match'] else 'not bit-exact'}, ok={r['ok']}")
        print(f"      peak RSS: emulator {r['emulator_peak_rss_bytes']/2**20:.0f} MiB, "
              f"python {r['python_peak_rss_bytes']/2**20:.0f} MiB")
        if r["ttlang_sim_seconds"] is not None:
            print(f"      tt-lang-sim {r['ttlang_sim_seconds']*1e3:.0f} ms -> kgen / tt-lang-sim = {r['over_ttlang_sim']:.3f}")
        else:
            print(f"      tt-lang-sim not run: {r['ttlang_sim_note']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
