"""`kgen ab`'s values, every one frozen: a variant's row (its plan's facts, op counts, predicted
speed, numerics, emulated and measured runs), what the rows conclude (abverdict.py computes it) and
the whole comparison (ab.py builds it; abreport.py prints it). The `same` fields of the verdicts are
within abverdict.RESOLUTION."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.device.measure import Measured
from kgen.perf.abbase import BASE
from kgen.proof.numerics import REL_ERR_FLOOR
from kgen.proof.oracle import Float64Check


@dataclass(frozen=True)
class CbUse:
    index: int
    role: str
    data_format: str
    bytes: int
    region: str


@dataclass(frozen=True)
class RegionUse:
    name: str
    cb_indices: tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class PlanFacts:
    policy: str
    policy_reason: str
    partials_format: str
    partials_reason: str
    math_fidelity: str
    fp32_dest_acc: bool
    l1_acc_enabled: bool
    grid: tuple[int, int]
    blocking: str                     # per core, out block, in0_block_w, subblock
    num_blocks: int                   # K-blocks
    subblocks: int                    # in0_num_subblocks x in1_num_subblocks, per out block
    out_blocks: int                   # batch x num_blocks_h_dim x num_blocks_w_dim, per core
    dst_capacity: int
    dst_used: int                     # tiles of one subblock
    cbs: tuple[CbUse, ...]
    regions: tuple[RegionUse, ...]
    l1_bytes: int
    l1_usable: int
    l1_margin: int

    @property
    def dst_headroom(self) -> int:
        return self.dst_capacity - self.dst_used


@dataclass(frozen=True)
class Speed:
    microseconds: float
    cycles: float
    tflops: float
    utilization: float
    bottleneck: str
    processors: tuple[tuple[str, float], ...]          # busy cycles per processor of the critical core
    reload_cycles: float
    partials_pack_cycles: float
    l1_acc_surcharge: float


# Every accuracy figure below is defined where it is defined:
#   ULPs      against the float64 result rounded to the output's grid (0 = correctly rounded), in
#             the grid's spacing at max(|reference|, ULP_FLOOR x the largest |reference|): a result
#             that cancels to near zero is not counted in the ULPs of a tiny number. The one error
#             scale of `kgen ab`: per variant and between variants.
#   max rel   over the outputs with |reference| >= REL_FLOOR x the largest |reference| only.
#   PCC       only where neither the output nor the reference is constant (else it is undefined),
#             and the reference's spread is at least PCC_MIN_SPREAD of its RMS.
ULP_FLOOR = 1e-3
REL_FLOOR = REL_ERR_FLOOR          # emulate's and port-check's max_rel_err too
PCC_MIN_SPREAD = 0.1


@dataclass(frozen=True)
class ErrorStats:
    """Error of one distribution's output against float64 of the same (quantised) inputs."""
    distribution: str
    max_abs: float
    max_rel: float | None             # None: no output at or above the floor
    rel_floor: float                  # |reference| a relative error is taken over (REL_FLOOR of the largest)
    rel_outputs: int                  # how many outputs that is
    pcc: float | None                 # None: a constant output or reference, where PCC is undefined
    max_ulp: int
    ulp_histogram: tuple[tuple[str, int], ...]
    first_value: float                # output[0, 0]: all_ones shows the #8449 sum here


@dataclass(frozen=True)
class Numerics:
    mode: str                         # exact (bit-level golden model)
    rows: int                         # outputs computed per distribution
    cols: int
    k: int
    proxy: bool
    ulp_format: str                   # the grid ULPs are counted on
    note: str
    errors: tuple[ErrorStats, ...]
    # every proxy output against float64 of the math within its bound (kgen.proof.oracle): the
    # numerics verdict; None only for a Numerics built by hand
    float64: Float64Check | None = None
    float64_at: str = ""              # the input distribution of its worst output, e.g. "random [3, 5]"

    def of(self, distribution: str) -> ErrorStats:
        return next(e for e in self.errors if e.distribution == distribution)


@dataclass(frozen=True)
class Emulated:
    numerics: str
    status: str
    ok: bool
    exact_match: bool
    mismatched: int
    max_abs: float
    pcc: float
    seconds: float
    float64: Float64Check | None = None      # the emulated output against float64 of the math (kgen.proof.oracle)


@dataclass(frozen=True)
class Row:
    variant: str                      # `base`, a spec variant, or `field=value,...` from --vary
    sweep: int | None                 # the swept field's value
    overrides: tuple[tuple[str, str], ...]
    kernel_id: str | None
    illegal: str | None = None        # why the variant does not plan (the rule and the message)
    rule: str | None = None
    plan: PlanFacts | None = None
    ops: tuple[tuple[str, int], ...] = ()
    speed: Speed | None = None
    numerics: Numerics | None = None
    emulated: Emulated | None = None
    measured: Measured | None = None
    same_as: str | None = None        # an earlier variant with the same kernel id (at the same sweep value)

    @property
    def label(self) -> str:
        return self.variant if self.sweep is None else f"{self.variant} @ {self.sweep}"

    def op(self, kind: str) -> int:
        return dict(self.ops)[kind]


@dataclass(frozen=True)
class Difference:
    """Element-wise difference of two variants' outputs on the same inputs (the `random` proxy), on
    the per-variant scale: |ULPs of b - ULPs of a|, each against the float64 result rounded to the
    output's grid (ULP_FLOOR), so it is never more than the two variants' own max ULP added."""
    a: str
    b: str
    sweep: int | None
    distribution: str
    elements: int
    differing: int
    max_ulp: int
    ulp_histogram: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Effect:
    """One varied field's effect with the other varied fields held at `held`: its fastest level
    against its slowest (predicted)."""
    field: str
    held: tuple[tuple[str, str], ...]
    faster: str                       # the field's value
    slower: str
    speedup: float                    # slower's time / faster's time
    same: bool                        # within RESOLUTION
    sentence: str


@dataclass(frozen=True)
class AgainstBase:
    """One variant against the base (the spec as written), predicted."""
    variant: str
    speedup: float                    # base's predicted time / this variant's (above 1: faster than base)
    same: bool                        # within RESOLUTION of base
    max_ulp: int                      # on the random inputs, the one ULP scale


@dataclass(frozen=True)
class Verdict:
    """The answer at one sweep value, against the base (the spec as written): the fastest variant,
    whether it beats base beyond the model's resolution, why, its error against base's, each variant
    against base, and (with several --vary fields) each field's effect with the others held fixed."""
    sweep: int | None
    base: str                         # the row the spec as written made
    fastest: str                      # the fastest variant, predicted (base itself, maybe)
    winner: str | None                # the fastest when it beats base (or, base fastest, the next) beyond RESOLUTION
    against: str                      # what the fastest is compared with: base, or when base is fastest the next
    speedup: float                    # against's predicted time / fastest's
    same: bool                        # fastest and `against` within RESOLUTION: nothing is crowned
    ties: tuple[str, ...]             # other variants within RESOLUTION of the fastest
    cause: str                        # why the fastest beats `against` ("" when the same)
    fastest_max_ulp: int
    base_max_ulp: int
    against_base: tuple[AgainstBase, ...]
    effects: tuple[Effect, ...]
    emulation: str
    headline: str                     # the fastest against base, with their predicted times and the error cost
    error_text: str                   # their max error, in words
    sentence: str                     # everything above in one sentence

    @property
    def ulp_difference(self) -> int:
        """The fastest's max ULP - base's (negative: the fastest is more accurate)."""
        return self.fastest_max_ulp - self.base_max_ulp


@dataclass(frozen=True)
class Comparison:
    spec_path: str
    spec_name: str
    arch: str
    spec_text: str
    command: str
    vary: tuple[tuple[str, tuple[str, ...]], ...]
    sweep_field: str | None
    sweep_values: tuple[int, ...]
    seed: int
    rows: tuple[Row, ...]
    differences: tuple[Difference, ...]
    verdict_facts: tuple[Verdict, ...]
    base: str = BASE                  # the row of the spec as written, which every variant is compared with
    base_note: str = ""               # with --vary: which row that is, or that it was added

    def base_at(self, sweep: int | None) -> Row:
        """The base's row at a sweep value; the first legal row there when the base is illegal."""
        at = [r for r in self.legal if r.sweep == sweep]
        return next((r for r in at if r.variant == self.base), at[0])

    @property
    def verdicts(self) -> tuple[str, ...]:
        return tuple(v.sentence for v in self.verdict_facts)

    @property
    def legal(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.illegal is None)
