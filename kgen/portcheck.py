"""Port check: TT-Metal's own compute kernel beside kgen's, on the same plan, inputs and machine.

The reference kernel (default: 0.81.1's ``bmm_large_block_zm_fused_bias_activation.cpp`` from the
fetched headers) is put in place of kgen's compute kernel in a copy of the build folder
(:func:`kgen.compile.with_compute_kernel`): same compile-time args, named args, defines and CB
table, same data-movement kernels. Both folders are emulated with the same inputs; the check
reports whether the outputs are bit-identical and the compute op counts of both, per kind.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from kgen.emulate import Emulation, emulate_folder, make_inputs, op_totals
from kgen.errors import KgenError

COMPUTE_PROCESSORS = ("trisc0/unpack", "trisc1/math", "trisc2/pack")

# Why an op count may differ between kgen's kernel and TT-Metal's, by op name. kgen's kernel is
# TT-Metal's lifecycle unrolled for one plan; these are the places where unrolling changes how
# often a call is made without changing what reaches the hardware.
EXPLANATIONS = {
    "matmul_block_init": "TT-Metal re-runs matmul_block_init after every reload and after each output block; "
                         "kgen emits it where the plan needs it",
    "copy_tile_init": "copy_init runs once per reload in both; a count differs only if reloads differ",
    "reconfig_srca": "kgen reconfigures SrcA only around a reload it actually makes",
    "reconfig_srcb": "kgen reconfigures SrcB only where the bias stage needs it",
    "reconfig_pack": "TT-Metal calls pack_reconfig_data_format before every last-block pack under "
                     "PACKER_L1_ACC / FP32_DEST_ACC_EN; kgen only when the format changes",
    "pack_reconfig_l1_acc(0)": "TT-Metal turns L1 accumulation off before every final pack; kgen only when it is on",
    "pack_reconfig_l1_acc(1)": "TT-Metal re-enables L1 accumulation per subblock from block 1; kgen once per block",
    "hw_configure": "start-up configuration calls",
    "hw_configure_math": "start-up configuration calls",
}


class PortCheckError(KgenError):
    """The reference kernel cannot be used."""


@dataclass(frozen=True)
class PortCheck:
    reference: Path
    ours: Emulation
    theirs: Emulation

    @property
    def bit_identical(self) -> bool:
        return self.ours.status == "ok" and self.theirs.status == "ok" and self.ours.out_bytes == self.theirs.out_bytes

    def op_counts(self, which: Emulation) -> dict[str, int]:
        return op_totals(p for p in which.processors if p["processor"] in COMPUTE_PROCESSORS)

    def differences(self) -> dict[str, dict[str, object]]:
        ours, theirs = self.op_counts(self.ours), self.op_counts(self.theirs)
        out = {}
        for name in sorted(set(ours) | set(theirs)):
            a, b = ours.get(name, 0), theirs.get(name, 0)
            if a != b:
                out[name] = {"kgen": a, "tt_metal": b,
                             "explanation": EXPLANATIONS.get(name, "unexplained: a real difference in the kernels")}
        return out

    @property
    def unexplained(self) -> list[str]:
        return [k for k, v in self.differences().items() if str(v["explanation"]).startswith("unexplained")]

    def summary(self) -> dict:
        return {
            "reference": str(self.reference),
            "bit_identical": self.bit_identical,
            "kgen": {"status": self.ours.status, "exact_match": self.ours.exact_match,
                     "hazards": list(self.ours.hazards), "op_counts": self.op_counts(self.ours)},
            "tt_metal": {"status": self.theirs.status, "exact_match": self.theirs.exact_match,
                         "hazards": list(self.theirs.hazards), "op_counts": self.op_counts(self.theirs)},
            "op_count_differences": self.differences(),
            "unexplained_differences": self.unexplained,
        }


def default_reference() -> Path:
    from kgen.headers import find_headers

    tree, note = find_headers()
    if tree is None:
        raise PortCheckError(f"port-check needs TT-Metal's reference kernel from the headers ({note}); "
                             f"get them with: kgen headers fetch, or pass --reference PATH")
    return tree.reference_kernel


def port_check(folder: Path, plan, *, reference: Path | None = None, seed: int = 0, numerics: str = "exact",
               parallel: int = 2) -> PortCheck:
    from kgen.compile import with_compute_kernel
    from kgen.runtime import load_manifest

    ref = Path(reference) if reference is not None else default_reference()
    if not ref.is_file():
        raise PortCheckError(f"--reference {ref}: no such kernel source")
    folder, manifest = load_manifest(folder)
    inputs = make_inputs(manifest, seed)
    ours = emulate_folder(folder, plan, seed=seed, numerics=numerics, parallel=parallel, inputs=inputs)
    with tempfile.TemporaryDirectory(prefix="kgen-portcheck-") as tmp:
        ref_folder = with_compute_kernel(folder, ref, Path(tmp) / folder.name)
        theirs = emulate_folder(ref_folder, plan, seed=seed, numerics=numerics, parallel=parallel, inputs=inputs)
    return PortCheck(ref, ours, theirs)


def format_port_check(pc: PortCheck) -> str:
    lines = [f"kgen port-check: {pc.ours.kernel_id}",
             f"  reference  {pc.reference}",
             f"  output     {'bit-identical' if pc.bit_identical else 'DIFFERENT'} "
             f"(kgen {pc.ours.status}, exact vs golden {pc.ours.exact_match}; "
             f"TT-Metal {pc.theirs.status}, exact vs golden {pc.theirs.exact_match})"]
    ours, theirs = pc.op_counts(pc.ours), pc.op_counts(pc.theirs)
    diffs = pc.differences()
    lines.append(f"  {'compute op':<28} {'kgen':>8} {'TT-Metal':>9}")
    for name in sorted(set(ours) | set(theirs)):
        mark = "  *" if name in diffs else ""
        lines.append(f"  {name:<28} {ours.get(name, 0):>8} {theirs.get(name, 0):>9}{mark}")
    for name, d in diffs.items():
        lines.append(f"  * {name}: {d['explanation']}")
    for h in [*pc.ours.hazards, *pc.theirs.hazards]:
        lines.append(f"  HAZARD {h['kind']}: {h['file']}:{h['line']}: {h['message']}")
    return "\n".join(lines)
