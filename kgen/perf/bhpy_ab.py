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


def format_stages(spec_name: str, rows: tuple[Stage, ...], target_name: str, width: int | None = None) -> str:
    """The stages at `width` columns (the terminal's): one row per rendered stage (in as many
    tables as it takes to fit), then each stage kgen cannot render, with the reason."""
    from kgen.core import terminal
    from kgen.core.terminal import fitted_table

    width = width or terminal.width()
    done = [s for s in rows if s.why_not is None]
    lines = terminal.hanging(f"kgen ab --target {target_name}: {spec_name}, {target_name}'s port plan stage by "
                             "stage (time predicted by kgen's model, not measured; numerics from the golden model)",
                             width)
    if done:
        lines += fitted_table("stages", [("stage", [s.name for s in done], False),
                                         ("predicted us", [f"{s.microseconds:.1f}" for s in done], True),
                                         ("TFLOPS", [f"{s.tflops:.1f}" for s in done], True),
                                         ("reload t", [f"{s.reloads:d}" for s in done], True),
                                         ("reload cyc", [f"{s.reload_cycles:.0f}" for s in done], True),
                                         ("pack cyc", [f"{s.partials_pack_cycles:.0f}" for s in done], True),
                                         ("L1acc sw", [f"{s.l1_acc_switches:d}" for s in done], True),
                                         ("max rel", [_num(s.max_rel, ".2e") for s in done], True),
                                         ("PCC", [_num(s.pcc, ".6f") for s in done], True),
                                         ("max ULP", [f"{s.max_ulp:d}" for s in done], True)], width)
    for s in rows:
        if s.why_not is not None:
            lines += terminal.hanging(f"{s.name}: {s.why_not}", width, "  ", "    ")
    if len(done) == 2 and done[1].microseconds:
        a, b = done
        lines += terminal.hanging(f"L1 accumulation: {a.microseconds / b.microseconds:.2f}x predicted speed-up, "
                                  f"reloads tiles {a.reloads} -> {b.reloads}, L1-acc switches {a.l1_acc_switches} "
                                  f"-> {b.l1_acc_switches}", width, "  ", "    ")
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
