"""`kgen ab SPEC --target blackhole-py`: the stages of the target's own port plan (its `PortPlan`:
blackhole-py's, for TT-Metal's peak matmul, in kgen/gen/targets/blackhole_py.py), side by side on
one spec, so a porter sees what each step buys.

  1. matmul_tiles in place of matmul_block: kgen renders matmul_block only (its op table has no
     matmul_tiles), so this stage is listed with the reason and no figures;
  2. matmul_block with spill/reload: every K-block's partials packed out and reloaded into DST
     (compute.packer_l1_acc = false);
  3. the full L1-accumulation lifecycle: the packer adds into the partials in L1 from the second
     K-block on, and one reload before the last block (compute.packer_l1_acc = true).

Each stage is kgen's `ab` row for that configuration: the predicted time (the performance model,
labelled predicted), the reloads (copy ops into DST), and the numerics of the golden model."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgen.proof.chain import Target


@dataclass(frozen=True)
class Stage:
    name: str
    kernel_id: str | None
    why_not: str | None
    microseconds: float | None = None
    tflops: float | None = None
    reloads: int | None = None             # kgen ab's 'reload tiles' op count
    l1_acc_switches: int | None = None
    reload_cycles: float | None = None
    partials_pack_cycles: float | None = None
    max_rel: float | None = None
    pcc: float | None = None
    max_ulp: int | None = None


def stages(spec_file, spec_text: str, target: Target, seed: int = 0) -> tuple[Stage, ...]:
    """The target's port-plan stages on `spec_file`'s base; the target must take the base (else exit 2)."""
    from kgen.gen.pipeline import run
    from kgen.gen.spec import resolve
    from kgen.perf.ab import compare

    plan = target.port_plan
    base = resolve(spec_file, None)
    target.check_supported(run(base, "plan"))
    comparison = compare(spec_file, spec_text, vary=((plan.field, tuple(v for _, v in plan.stages)),), seed=seed)
    out = [Stage(name, None, why) for name, why in plan.not_rendered]
    # the --vary rows come first, in the order of the values (an added base row, if any, after them)
    for (name, _), row in zip(plan.stages, comparison.rows):
        if row.illegal is not None:
            out.append(Stage(name, None, row.illegal))
            continue
        ops = dict(row.ops)
        random = next((e for e in row.numerics.errors if e.distribution == "random"), row.numerics.errors[0])
        out.append(Stage(name, row.kernel_id, None, row.speed.microseconds, row.speed.tflops,
                         ops["reload tiles"], ops["L1-acc switches"], row.speed.reload_cycles,
                         row.speed.partials_pack_cycles, random.max_rel, random.pcc, random.max_ulp))
    return tuple(out)


def format_stages(spec_name: str, rows: tuple[Stage, ...], target_name: str) -> str:
    lines = [f"kgen ab --target {target_name}: {spec_name}, {target_name}'s port plan stage by stage "
             "(time predicted by kgen's model, not measured; numerics from the golden model)",
             f"  {'stage':<32} {'predicted us':>12} {'TFLOPS':>7} {'reload t':>8} {'reload cyc':>11} "
             f"{'pack cyc':>10} {'L1acc sw':>8} {'max rel':>9} {'PCC':>9} {'max ULP':>8}"]
    for s in rows:
        if s.why_not is not None:
            lines.append(f"  {s.name:<32} {s.why_not}")
            continue
        lines.append(f"  {s.name:<32} {s.microseconds:>12.1f} {s.tflops:>7.1f} {s.reloads:>8d} "
                     f"{s.reload_cycles:>11.0f} {s.partials_pack_cycles:>10.0f} {s.l1_acc_switches:>8d} "
                     f"{_num(s.max_rel, '.2e'):>9} {_num(s.pcc, '.6f'):>9} {s.max_ulp:>8d}")
    done = [s for s in rows if s.why_not is None]
    if len(done) == 2 and done[1].microseconds:
        a, b = done
        lines.append(f"  L1 accumulation: {a.microseconds / b.microseconds:.2f}x predicted speed-up, reloads "
                     f"tiles {a.reloads} -> {b.reloads}, L1-acc switches {a.l1_acc_switches} -> {b.l1_acc_switches}")
    return "\n".join(lines) + "\n"


def _num(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def run_ab(spec_path: str, target: Target, *, seed: int = 0, as_json: bool = False) -> int:
    """`kgen ab SPEC --target T` for a target with a port plan (the CLI refuses the default target's flags)."""
    from kgen.gen.spec import load_file, read_source

    spec_file = load_file(spec_path)
    rows = stages(spec_file, read_source(spec_path), target, seed=seed)
    if as_json:
        import json
        sys.stdout.write(json.dumps({"target": target.name, "predicted": True,
                                     "stages": [s.__dict__ for s in rows]}, indent=2) + "\n")
    else:
        sys.stdout.write(format_stages(spec_file.matmul_name, rows, target.name))
    return 0
