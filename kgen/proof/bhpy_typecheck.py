"""Type-check the blackhole-py export: the adapted kernels with blackhole-py's defines per processor
(compiler.py; recorded in configs/targets/blackhole_py.toml) against the TT-Metal 0.81.1 headers.

blackhole-py compiles against its own trimmed tree (tt-metal-deps), which this machine does not have;
the check shows the sources are well formed for the 0.81.1 API with exactly the defines blackhole-py's
compiler passes (no KERNEL_COMPILE_TIME_ARGS, no kernel defines), on kgen's host type-checker (its
SFPI -O and -mcpu flags do not apply to a host syntax check)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from kgen.core.arch import load_arch
from kgen.gen.targets import blackhole_py as bh
from kgen.proof.chain import ChainState, Step, toolchain

# kgen's processor roles -> blackhole-py compiler.py targets
_TARGET = {"brisc": "brisc", "ncrisc": "ncrisc", "unpack": "trisc0", "math": "trisc1", "pack": "trisc2"}


def profile_defines(role: str) -> list[str]:
    """compiler.py's -D list for one processor, with this arch's bank counts as its _device_defines."""
    f = bh.facts()["flags"]
    tc = load_arch("blackhole").toolchain
    banks = [f"NUM_DRAM_BANKS={tc.num_dram_banks}", f"NUM_L1_BANKS={tc.num_l1_banks}",
             "LOG_BASE_2_OF_NUM_DRAM_BANKS=3" if tc.num_dram_banks == 8 else "IS_NOT_POW2_NUM_DRAM_BANKS=1"]
    return [*f["common_defines"], *banks, *f[_TARGET[role]]["defines"], *f["headers_0811_extra_defines"]]


def _with_profile(job):
    argv = [a for a in job.argv if not a.startswith("-D")]
    source = argv.pop()                                    # the firmware stub is the last argument
    return dataclasses.replace(job, argv=tuple([*argv, *("-D" + d for d in profile_defines(job.role)), source]))


def typechecked(state: ChainState) -> Step:
    """blackhole-py's `typechecked` step: its view's kernels, each with blackhole-py's defines for its
    processor, on the host checker (the chain has asked for it and the headers: needs_host_checker).
    Its value: the compile results."""
    from kgen.gen.build import write_build
    from kgen.toolchain.compile import failure_text, plan_jobs, run_jobs

    artifacts, options = state.artifacts, state.options
    tc = toolchain(options)
    p = bh.view(artifacts.plan, artifacts.rendered)
    with tempfile.TemporaryDirectory(prefix="kgen-bhpy-check-") as tmp:
        folder = write_build(Path(tmp), artifacts.rendered.kernel_id, bh.view_files(p, artifacts.rendered))
        jobs = [_with_profile(j) for j in plan_jobs(folder.resolve(), tc, "check")]
        results = tuple(run_jobs(jobs, tc.headers, parallel=options.parallel, force=options.force))
        failures = [r for r in results if not r.ok]
        if failures:
            return Step.failed("typechecked", "\n".join(failure_text(r, None) for r in failures), results)
    extra = ", ".join(bh.facts()["flags"]["headers_0811_extra_defines"])
    return Step.ok("typechecked", (
        f"type-checked {len(results)} kernel builds with blackhole-py's defines per processor (+ {extra}, "
        f"which the {tc.headers.version} headers read and blackhole-py's own tree does not) against "
        f"TT-Metal {tc.headers.version} headers; blackhole-py bundles {bh.facts()['source']['bundled_headers']}"), results)
