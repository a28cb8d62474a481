"""Port check: TT-Metal's own kernels beside kgen's, on the same plan, inputs and machine.

Two comparisons, each emulated with the same inputs as kgen's own program:

- **compute**: the reference compute kernel (default: 0.81.1's
  ``bmm_large_block_zm_fused_bias_activation.cpp`` from the fetched headers) in place of kgen's
  (the `rendered` override :func:`kgen.gen.pipeline.with_compute_kernel`): same compile-time args, named args, defines and CB
  table, kgen's data-movement kernels. Reports bit-identity and the compute op counts per kind.
- **program** (where the plan's factory says TT-Metal's program can run: `Dataflow.tt_unsupported`):
  TT-Metal's whole program: that compute kernel (or the factory's own) plus TT-Metal's readers/writers with
  the args the factory gives them (`Dataflow.tt_program`, derived in kgen/gen/dataflow/tt_*.py, put in a
  build folder by :mod:`kgen.proof.ttdataflow`). Reports bit-identity and the data-movement op counts of
  both, explaining the differences the factory expects (`Dataflow.tt_expected_differences`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable
from pathlib import Path

from kgen.proof.emulate import Emulation, check_host_memory, emulate_folder, emulated_op_totals, make_inputs
from kgen.core.errors import KgenError
from kgen.core.interrupts import scratch
from kgen.core.manifest import load_manifest
from kgen.gen.dataflow.tt_program import ExpectedDifference

COMPUTE_PROCESSORS = ("trisc0/unpack", "trisc1/math", "trisc2/pack")
DATAFLOW_PROCESSORS = ("brisc", "ncrisc")

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


# The same for the data-movement kernels of TT-Metal's whole 2D multicast program
# (reader_bmm_tile_layout_in0_sender_padding, _in0_receiver, _in1_sender_writer_padding,
# _in1_receiver_writer_padding in the 0.81.1 wheel) against kgen's.
DATAFLOW_EXPLANATIONS = {
    "noc_semaphore_set": "TT-Metal's senders set their local VALID word once before the block loop; kgen sets it "
                         "before every flag multicast (one per sender per K-block), so kgen counts more",
    "cb_wait_front": "TT-Metal's writers also wait for the padded-tile skips (padded_block_tiles_w_skip / _h_skip), "
                     "zero tiles when nothing is padded; kgen emits no padding path",
    "cb_pop_front": "TT-Metal's writers also pop the padded-tile skips, zero tiles when nothing is padded",
    "noc_async_atomic_barrier": "TT-Metal's in0 receiver and in1 sender/writer end with noc.async_atomic_barrier(); "
                                "kgen's kernels return without one (to check on silicon)",
    "noc_async_write_barrier": "TT-Metal's in0 sender and writers end with one more noc.async_write_barrier()",
}


class PortCheckError(KgenError):
    """The reference kernel cannot be used."""


def _same_output(a: Emulation, b: Emulation) -> bool:
    return a.status == "ok" and b.status == "ok" and a.out_bytes == b.out_bytes


@dataclass(frozen=True)
class PortCheck:
    reference: Path
    ours: Emulation
    theirs: Emulation                        # TT-Metal's compute kernel, kgen's data movement
    program: Emulation | None                # TT-Metal's compute and data-movement kernels
    program_note: str                        # where they come from, or why the program check did not run
    departures: tuple[str, ...] = ()         # how TT's kernel ran where ttnn.matmul 0.81.1 would not run it
    # read barriers TT-Metal's in0 sender adds where K is not a tile multiple: one before zeroing the
    # tail of each row's last K tile (pad_last_ktile, when in0_last_ktile_w > 0); kgen's inputs are
    # zero-padded by the host as ttnn's tilize pads, so its reader has nothing to zero
    ktile_padding_barriers: int = 0
    # (op, TT-Metal's count minus kgen's, why) where the plan's placement makes the programs differ by design
    expected_differences: tuple[ExpectedDifference, ...] = ()

    @property
    def bit_identical(self) -> bool:
        return _same_output(self.ours, self.theirs)

    @property
    def program_bit_identical(self) -> bool | None:
        return None if self.program is None else _same_output(self.ours, self.program)

    @property
    def failures(self) -> list[str]:
        """Every condition that fails the port check: each program that ran must
        finish, agree with the golden model (bit-exact, or within tolerance in fast numerics) and
        show no hazard, and TT-Metal's outputs must be kgen's bit for bit. Op-count differences
        must be explained."""
        out = []
        runs = [("kgen's program", self.ours), ("TT-Metal's compute kernel", self.theirs)]
        if self.program is not None:
            runs.append(("TT-Metal's whole program", self.program))
        for name, e in runs:
            if e.status != "ok":
                out.append(f"{name} did not finish ({e.status})")
            elif not (e.exact_match if e.numerics == "exact" else e.golden_close):
                out.append(f"{name} is not the golden model's result ({e.mismatched} element(s) differ)")
            elif e.float64 is not None and not e.float64.within:
                out.append(f"{name}'s output is {e.float64.line()}")
            if e.hazards:
                out.append(f"{name} shows {len(e.hazards)} hazard(s)")
            if not e.schedules_identical:
                out.append(f"{name} gives different bits under different schedules")
        if not self.bit_identical:
            out.append("TT-Metal's compute kernel does not give kgen's bits")
        if self.program_bit_identical is False:
            out.append("TT-Metal's whole program does not give kgen's bits")
        if self.unexplained:
            out.append(f"unexplained compute op-count differences: {', '.join(self.unexplained)}")
        if self.unexplained_dataflow:
            out.append(f"unexplained data-movement op-count differences: {', '.join(self.unexplained_dataflow)}")
        return out

    @property
    def passed(self) -> bool:
        return not self.failures

    def op_counts(self, which: Emulation) -> dict[str, int]:
        return emulated_op_totals(p for p in which.processors if p["processor"] in COMPUTE_PROCESSORS)

    def dataflow_op_counts(self, which: Emulation) -> dict[str, int]:
        return emulated_op_totals(p for p in which.processors if p["processor"] in DATAFLOW_PROCESSORS)

    def differences(self) -> dict[str, dict[str, object]]:
        ours, theirs = self.op_counts(self.ours), self.op_counts(self.theirs)
        out = {}
        for name in sorted(set(ours) | set(theirs)):
            a, b = ours.get(name, 0), theirs.get(name, 0)
            if a != b:
                out[name] = {"kgen": a, "tt_metal": b,
                             "explanation": EXPLANATIONS.get(name, "unexplained: a real difference in the kernels")}
        return out

    def dataflow_differences(self) -> dict[str, dict[str, object]]:
        if self.program is None:
            return {}
        ours, theirs = self.dataflow_op_counts(self.ours), self.dataflow_op_counts(self.program)
        explanations = dict(DATAFLOW_EXPLANATIONS)
        extra = self.ktile_padding_barriers
        if extra and theirs.get("noc_async_read_barrier", 0) - ours.get("noc_async_read_barrier", 0) == extra:
            explanations["noc_async_read_barrier"] = (
                f"TT-Metal's in0 sender waits for its reads once more before zeroing each row's last K tile past "
                f"the logical K (pad_last_ktile, in0_last_ktile_w > 0): {extra} more; kgen's inputs are zero-padded")
        for name, diff, why in self.expected_differences:
            if theirs.get(name, 0) - ours.get(name, 0) == diff:
                explanations[name] = why
        return {name: {"kgen": ours.get(name, 0), "tt_metal": theirs.get(name, 0),
                       "explanation": explanations.get(name, "unexplained: a real difference in the kernels")}
                for name in sorted(set(ours) | set(theirs)) if ours.get(name, 0) != theirs.get(name, 0)}

    @property
    def unexplained(self) -> list[str]:
        return [k for k, v in self.differences().items() if str(v["explanation"]).startswith("unexplained")]

    @property
    def unexplained_dataflow(self) -> list[str]:
        return [k for k, v in self.dataflow_differences().items() if str(v["explanation"]).startswith("unexplained")]

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
            "program": self._program_summary(),
            "factory_departures": list(self.departures),
            "passed": self.passed,
            "failures": self.failures,
        }

    def _program_summary(self) -> dict:
        if self.program is None:
            return {"ran": False, "note": self.program_note}
        return {"ran": True, "note": self.program_note, "bit_identical": self.program_bit_identical,
                "status": self.program.status, "exact_match": self.program.exact_match,
                "hazards": list(self.program.hazards),
                "dataflow_op_counts": {"kgen": self.dataflow_op_counts(self.ours),
                                       "tt_metal": self.dataflow_op_counts(self.program)},
                "dataflow_op_count_differences": self.dataflow_differences()}


def default_reference(name: str = "") -> Path:
    """TT-Metal's legacy compute kernel from the headers: `name` in its compute folder (the factory's
    Dataflow.reference_compute), or the large-block one."""
    from kgen.toolchain.headers import find_headers

    tree, note = find_headers()
    if tree is None:
        raise PortCheckError(f"port-check needs TT-Metal's reference kernel from the headers ({note}); "
                             f"get them with: kgen headers fetch, or pass --reference PATH")
    return tree.reference_kernel.parent / name if name else tree.reference_kernel


def port_check(folder: Path, plan, *, reference: Path | None = None, seed: int = 0, numerics: str = "exact",
               parallel: int = 2, ours: Emulation | None = None,
               progress: Callable[[str], None] = lambda phase: None) -> PortCheck:
    """`ours`: kgen's own emulation of `folder` with the same seed and numerics, when already run."""
    from kgen.gen.build import write_artifacts
    from kgen.toolchain.headers import find_headers
    from kgen.gen.pipeline import run, with_compute_kernel
    from kgen.proof.ttdataflow import (tt_compute_kernel, tt_dataflow_dir, tt_program_of, ttnn_include_dir,
                                       with_tt_program)

    check_host_memory(plan)             # three emulations of this size follow
    ref = Path(reference) if reference is not None else default_reference(plan.dataflow.reference_compute)
    if not ref.is_file():
        raise PortCheckError(f"--reference {ref}: no such kernel source")
    folder, manifest = load_manifest(folder)
    inputs = make_inputs(manifest, seed)
    if ours is None:
        ours = emulate_folder(folder, plan, seed=seed, numerics=numerics, parallel=parallel, inputs=inputs,
                              progress=lambda phase: progress(f"kgen's program: {phase}"))
    tree, tree_note = find_headers()
    note = plan.dataflow.tt_unsupported(plan, manifest) or (None if tree else f"no TT-Metal headers ({tree_note})")
    program, expected = None, ()
    with scratch("kgen-portcheck") as tmp:
        swap = with_compute_kernel(ref)              # kgen's build, TT-Metal's compute kernel
        ref_folder = write_artifacts(run(plan.spec, overrides={"rendered": swap}), Path(tmp) / "compute").path
        theirs = emulate_folder(ref_folder, plan, seed=seed, numerics=numerics, parallel=parallel, inputs=inputs,
                                progress=lambda phase: progress(f"TT-Metal's compute kernel: {phase}"))
        if note is None:
            kernels = tt_dataflow_dir(tree)
            tt = tt_program_of(plan, ref_folder)
            program_folder = with_tt_program(ref_folder, tt, kernels, Path(tmp) / "program" / folder.name,
                                             ttnn_include=ttnn_include_dir(tree))
            program = emulate_folder(program_folder, plan, seed=seed, numerics=numerics, parallel=parallel,
                                     inputs=inputs, progress=lambda phase: progress(f"TT-Metal's program: {phase}"))
            compute = tt_compute_kernel(tt, kernels) or ref
            note = f"{compute.name} with TT-Metal's {tt.readers_writers} readers/writers from {kernels}"
            expected = plan.dataflow.tt_expected_differences(plan)
    return PortCheck(ref, ours, theirs, program, note, plan.factory_departures, _ktile_padding_barriers(plan),
                     expected)


def _ktile_padding_barriers(plan) -> int:
    """TT-Metal's in0 sender (one per row of cores in 2D, one in mcast_1d_in0, one per core in mcast_1d_in1)
    barriers once per row of every out block's last K-block when in0_last_ktile_w > 0
    (reader_bmm_tile_layout_in0_sender_padding.cpp)."""
    if not plan.in0_last_ktile_w:
        return 0
    return plan.in0_reader_cores * plan.batch_ct * plan.num_blocks_h_dim * plan.num_blocks_w_dim * plan.out_block_h


def format_port_check(pc: PortCheck, width: int | None = None) -> str:
    """The report at `width` columns (the terminal's): every value wrapped under itself."""
    from kgen.core import terminal

    width = width or terminal.width()

    def row(key: str, value: str) -> list[str]:
        return terminal.key_value(key, value, width, key_width=9)

    def starred(name: str, d: dict) -> list[str]:
        return terminal.wrap(f"{name}: {d['explanation']}", width, "  * ", "    ")

    lines = terminal.hanging(f"kgen port-check: {pc.ours.kernel_id}", width)
    lines += row("reference", str(pc.reference))
    lines += row("output", f"{'bit-identical to kgen' if pc.bit_identical else 'DIFFERENT from kgen'} "
                           f"(kgen {pc.ours.status}, exact vs golden {pc.ours.exact_match}; "
                           f"TT-Metal {pc.theirs.status}, exact vs golden {pc.theirs.exact_match})")
    for d in pc.departures:
        lines += row("departs", f"TT-Metal's kernel ran as ttnn.matmul 0.81.1 would not run it: {d}")
    ours, theirs = pc.op_counts(pc.ours), pc.op_counts(pc.theirs)
    diffs = pc.differences()
    lines.append(f"  {'compute op':<28} {'kgen':>8} {'TT-Metal':>9}")
    for name in sorted(set(ours) | set(theirs)):
        mark = "  *" if name in diffs else ""
        lines.append(f"  {name:<28} {ours.get(name, 0):>8} {theirs.get(name, 0):>9}{mark}")
    for name, d in diffs.items():
        lines += starred(name, d)
    if pc.program is None:
        lines += row("program", f"not run: {pc.program_note}")
    else:
        lines += row("program", f"{'bit-identical' if pc.program_bit_identical else 'DIFFERENT'} (TT-Metal's whole "
                                f"program {pc.program.status}, exact vs golden {pc.program.exact_match})")
        lines += terminal.paragraph(pc.program_note, width, " " * 13)
        ours_dm, theirs_dm = pc.dataflow_op_counts(pc.ours), pc.dataflow_op_counts(pc.program)
        lines.append(f"  {'data-movement op':<28} {'kgen':>8} {'TT-Metal':>9}")
        dm_diffs = pc.dataflow_differences()
        for name in sorted(set(ours_dm) | set(theirs_dm)):
            mark = "  *" if name in dm_diffs else ""
            lines.append(f"  {name:<28} {ours_dm.get(name, 0):>8} {theirs_dm.get(name, 0):>9}{mark}")
        for name, d in dm_diffs.items():
            lines += starred(name, d)
    for h in [*pc.ours.hazards, *pc.theirs.hazards, *(pc.program.hazards if pc.program else ())]:
        lines += terminal.hanging(f"HAZARD {h['kind']}: {h['file']}:{h['line']}: {h['message']}", width, "  ", "    ")
    if pc.passed:
        agreement = ("bit-exact against the golden model" if pc.ours.numerics == "exact" else
                     "within the fast-numerics tolerance of the fast golden model (not a bit-exact check)")
        lines += row("float64", pc.ours.float64.line())
        lines += row("verdict", f"PASS: every program finished {agreement} and within its float64 bound, "
                                "without a hazard, and TT-Metal's output is kgen's bit for bit")
    else:
        lines += row("verdict", "FAIL:")
        lines += [line for f in pc.failures for line in terminal.bullet(f, width, " " * 13)]
    return "\n".join(lines)
