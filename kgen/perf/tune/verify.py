"""Verification of `kgen tune`'s winners: one job per candidate, a pure function of its spec text,
which is the chain after rendering (kgen/proof/chain.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from kgen.core.errors import KgenError


# Exact (bit-level) emulation up to this many multiply-accumulates, float32 (`--numerics fast`)
# beyond: the exact emulator runs ~600 M MAC/s here (README figures), fast ~9x numpy.
EXACT_MAX_MACS = 1 << 28


def verify_numerics(m: int, n: int, k: int, batch: int = 1) -> str:
    return "exact" if batch * m * n * k <= EXACT_MAX_MACS else "fast"


def verify_spec_text(text: str, numerics: str = "auto", seed: int = 0) -> dict:
    """The chain after rendering (kgen/proof/chain.py: build, type-check against the real TT-Metal
    headers, emulate, port-check) on the matmul of a spec text. Returns {"status": passed | failed |
    incomplete, "errors": [...], "kernel_id", "steps": {...}, "seconds"}: incomplete when a check
    could not run here (a missing tool; the errors say which), which is never a pass. Never raises
    for a failing candidate (an exception is an error). Pure in its inputs: Ray ships it to any
    worker."""
    from kgen.gen.pipeline import run
    from kgen.gen.spec import parse_text, resolve
    from kgen.proof.chain import ChainOptions, run_chain

    start = time.perf_counter()
    errors: list[str] = []
    steps: dict[str, object] = {}
    kernel_id = None
    status = "failed"
    try:
        spec = resolve(parse_text(text, "<tune candidate>"))
        artifacts = run(spec, "rendered")          # plan, lower, verify the IR, render
        kernel_id = artifacts.rendered.kernel_id
        mode = numerics if numerics != "auto" else verify_numerics(spec.m, spec.n, spec.k, spec.batch)
        chain = run_chain(artifacts, "portchecked", options=ChainOptions(seed=seed, numerics=mode, parallel=1))
        for step in chain.steps:
            if step.status != "ok":
                errors.append(f"{step.name} {'not run' if step.status == 'skipped' else 'failed'}: {step.detail}")
        steps.update(_step_summaries(chain, mode))
        status = chain.verdict
    except KgenError as exc:
        errors.append(f"{type(exc).__name__}: {getattr(exc, 'message', str(exc))}")
    except Exception as exc:  # noqa: BLE001 - a verification job reports, it does not crash the search
        errors.append(f"{type(exc).__name__}: {exc}")
    return {"status": status, "errors": errors, "kernel_id": kernel_id,
            "steps": steps, "seconds": round(time.perf_counter() - start, 3)}


def _step_summaries(chain, mode: str) -> dict[str, object]:
    """What each step of the chain did, in the form the database keeps (`verify_detail`)."""
    keys = {"built": "build", "typechecked": "typecheck", "emulated": "emulate", "portchecked": "port_check"}
    out: dict[str, object] = {}
    for step in chain.steps:
        if step.status == "skipped":
            out[keys[step.name]] = f"not run: {step.detail}"
        elif step.name == "built":
            out["build"] = "ok"
        elif step.name == "typechecked":
            report = step.value[2]
            out["typecheck"] = f"{len(report.results) - len(report.failures)}/{len(report.results)} kernel builds"
        elif step.name == "emulated":
            emu = step.value
            out["emulate"] = {"numerics": mode, "ok": emu.ok, "status": emu.status, "exact_match": emu.exact_match,
                              "max_abs_err": emu.errors.max_abs_err, "pcc": emu.errors.pcc,
                              "float64": None if emu.float64 is None else emu.float64.summary(),
                              "seconds": round(emu.seconds, 3)}
        else:
            out["port_check"] = {"passed": step.value.passed, "failures": list(step.value.failures)}
    return out


def steps_text(steps: Mapping) -> str:
    """A verification's steps in a few words: build ok, type-check 7/7 kernel builds, emulate exact
    ok, port-check passed."""
    parts = []
    if "build" in steps:
        parts.append(f"build {steps['build']}")
    if "typecheck" in steps:
        parts.append(f"type-check {steps['typecheck']}")
    emu = steps.get("emulate")
    if isinstance(emu, str):
        parts.append(f"emulate {emu}")
    elif isinstance(emu, Mapping):
        f64 = emu.get("float64") or {}
        ok = (("bit-exact" if emu.get("exact_match") else "ok") + " and within its float64 bound" if emu.get("ok")
              else f"BEYOND its float64 bound in {f64.get('culprit')}" if f64 and not f64.get("within")
              else f"failed ({emu.get('status')})")
        parts.append(f"emulate {emu.get('numerics')} {ok}"
                     + (f" in {emu['seconds']:.1f} s" if isinstance(emu.get("seconds"), (int, float)) else ""))
    pc = steps.get("port_check")
    if isinstance(pc, Mapping):
        parts.append("port-check " + ("passed" if pc.get("passed") else "failed"))
    elif pc:
        parts.append(f"port-check {pc}")
    return ", ".join(parts)
