"""What every planning module shares: the rule error, TT-Metal's CB indices, and the arithmetic
of tiles and of the nearest legal values a rule error suggests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from kgen.core.errors import SpecError, Span
from kgen.core.types import TILE_HW

# TT-Metal CB indices and named compile-time args of the matmul compute kernel (docs/reference/matmul.md §1.2).
CB_IN0, CB_IN1, CB_BIAS, CB_OUT, CB_PARTIALS = 0, 1, 3, 4, 5
# The block-sharded in0 shard, globally allocated on the in0 buffer (matmul_multicore_reuse_mcast_2d_program_
# factory.cpp @0000d49e: `src2_cb_config ... set_globally_allocated_address(*in0_buffer)`). That factory also
# made a 64-byte c_6 `cb_for_l1_array_config(32 * 2, Float16_b)` beside it; the 2D builder ttnn.matmul 0.81.1
# reaches allocates none (only the legacy ccl_fusion builder still does) and no kernel reads it, so kgen
# makes none (docs/reference/provenance.md R3).
CB_IN0_SHARD = 2
# The output tensor's own L1 shard when the compute's out CB is a separate buffer the writer copies from
# (the DRAM-sharded factory: `out_reshard` / tensor::out_shard, matmul_multicore_reuse_mcast_dram_sharded_
# program_factory.cpp, tenstorrent/tt-metal@01502698)
CB_OUT_SHARD = 7
# A second CB index over the partials' L1 that the K-block reload copies through, carrying
# UnpackToDestFp32, when a fused bias reads the partials themselves through SrcA. 0.81.1's legacy builders
# hand the compute kernel this index as the define MM_PARTIALS_RELOAD_ALIAS_CB = "7" (_ttnncpp.so,
# process_mcast_in0_program_and_create_override_variables at 0x11e9797; its Metal 2.0 builders name the
# buffer intermed0_reload_alias and number it themselves; docs/reference/provenance.md N8). The DRAM-sharded
# factory's c_7 (CB_OUT_SHARD) never meets it: kgen fuses no bias there.
CB_PARTIALS_RELOAD_ALIAS = 7
# transpose_a: the compute kernel transposes each in0 tile of a K-block into this CB and multiplies from it
# (bmm_large_block_zm_fused_bias_activation.cpp's cb_in0_transposed; the factories size it as c_0, in in0's
# format: reuse_optimized_descriptor.cpp, matmul_multicore_reuse_mcast_2d_program_factory.cpp, 0.81.1)
CB_IN0_TRANSPOSED = 10

# SUBBLOCK_HW_CHOICES (matmul_program_config.cpp), read as (h, w) the way
# bmm_op_utils::get_matmul_subblock_params and TT's peak benchmark read it (docs/reference/matmul.md §3.4).
SUBBLOCK_HW_CHOICES: tuple[tuple[int, int], ...] = (
    (4, 2), (2, 4), (8, 1), (1, 8),
    (7, 1), (1, 7),
    (3, 2), (2, 3), (6, 1), (1, 6),
    (5, 1), (1, 5),
    (2, 2), (4, 1), (1, 4),
    (3, 1), (1, 3),
    (2, 1), (1, 2),
    (1, 1),
)


def matmul_subblock_params(per_core_m: int, per_core_n: int, fp32_dest_acc: bool) -> tuple[int, int]:
    """bmm_op_utils::get_matmul_subblock_params(per_core_M, per_core_N, false, false, fp32_dest_acc_en)
    (matmul_program_config.cpp): the first of SUBBLOCK_HW_CHOICES, read as (h, w), dividing the block, at
    most 4 tiles under fp32 dest accumulation; 1 x 1 divides every block."""
    for h, w in SUBBLOCK_HW_CHOICES:
        if fp32_dest_acc and h * w > 4:
            continue
        if per_core_m % h == 0 and per_core_n % w == 0:
            return h, w
    return 1, 1


@dataclass(frozen=True)
class Suggestion:
    """One value a rule error offers: how its hint writes it, and the spec keys it sets (`edits`, as
    `kgen.gen.plan.edited` applies them), so that the planner can re-plan the spec with it before
    offering it."""

    text: str
    edits: tuple[tuple[str, Any], ...]
    order: float = 0                    # where it is shown among the values taken (Offer.ascending)


@dataclass(frozen=True)
class Offer:
    """Values for one key (or one kind of change), most preferred first. The hint shows the first
    `count` that pass every rule when the spec is re-planned with them: `prefix` then the values
    joined by `sep`; `what` names them when none passes. Made when the error is raised, which tune
    and fuzz do by the thousand, so the candidates are best a generator, ranked when read."""

    candidates: Iterable[Suggestion]    # read once, when the hint is first read: a generator is welcome
    what: str
    count: int = 4
    prefix: str = ""
    sep: str = ", "
    ascending: bool = False             # show the values taken in ascending `order` (nearest())


def suggestion(text: str, *edits: tuple[str, Any], order: float = 0) -> Suggestion:
    return Suggestion(text, tuple(edits), order)


def nearest_offer(values: Iterable[int], target: int, what: str, edit: Callable[[int], tuple[str, Any]],
                  count: int = 4, prefix: str = "") -> Offer:
    """The values nearest `target` first (as `nearest` ranks them), each setting one key through `edit`;
    shown in ascending order, as `nearest` shows them."""
    def ranked() -> Iterator[Suggestion]:
        for v in sorted(set(values), key=lambda v: (abs(v - target), v)):
            yield Suggestion(str(v), (edit(v),), v)
    return Offer(ranked(), what, count, prefix, ascending=True)


# the most re-plans one hint may spend before it settles on what it has (a hint is made only when an
# error is shown, and each re-plan is one plan() of the spec)
MAX_REPLANS = 400


class PlanError(SpecError):
    """A spec that breaks one of TT-Metal's rules (or kgen's): names the rule, the values, and the
    nearest legal values.

    `nearest` is the hint's text, or the Offers it is made from. Offers are checked lazily, when the
    hint is read (an error shown, not one of the thousands tune and fuzz count): `kgen.gen.plan.plan`
    binds the error to its spec, and the hint then offers only values with which the spec re-plans
    without any error, or says that none does and what the nearest one runs into (`otherwise` then
    adds what else to try). `also` follows the values: a change that is not one value ("or per_core
    dividing Mt x Nt")."""

    def __init__(self, rule: str, message: str, span: Span | None,
                 nearest: str | Offer | Sequence[Offer] | None = None, *, also: str | None = None,
                 otherwise: str | None = None):
        text = nearest if isinstance(nearest, str) else None
        super().__init__(f"{message} [rule: {rule}]", span, hint=f"nearest legal values: {text}" if text else None)
        self.rule = rule
        if isinstance(nearest, Offer):
            self.offers = (nearest,)
        elif nearest is not None and not isinstance(nearest, str):
            self.offers = tuple(nearest)
        self.also = also
        self.otherwise = otherwise
        self._replan: Callable[[tuple[tuple[str, Any], ...]], SpecError | None] | None = None
        self._taken: tuple[tuple[Suggestion, ...], ...] | None = None
        self._first_refused: tuple[Suggestion, SpecError] | None = None

    def bind(self, replan: Callable[[tuple[tuple[str, Any], ...]], SpecError | None]) -> None:
        """Check the offered values with `replan(edits)` (the error of the spec so edited, None when
        it plans) when the hint is read. The first binding holds (the plan() that raised this error)."""
        if self._replan is None:
            self._replan = replan

    @property
    def taken(self) -> tuple[tuple[Suggestion, ...], ...]:
        """Per offer, the values the hint shows: each one the spec re-plans with (unbound: the first
        `count` of each offer, unchecked)."""
        if self._taken is None:
            budget = MAX_REPLANS
            taken = []
            for offer in self.offers:
                chosen: list[Suggestion] = []
                for candidate in offer.candidates:
                    if len(chosen) >= offer.count or budget <= 0:
                        break
                    if self._replan is not None:
                        budget -= 1
                        refusal = self._replan(candidate.edits)
                        if refusal is not None:
                            self._first_refused = self._first_refused or (candidate, refusal)
                            continue
                    chosen.append(candidate)
                taken.append(tuple(sorted(chosen, key=lambda c: c.order) if offer.ascending else chosen))
            self._taken = tuple(taken)
        return self._taken

    @property
    def hint(self) -> str | None:
        if not self.offers:
            return self._hint_text
        parts = [offer.prefix + offer.sep.join(c.text for c in chosen)
                 for offer, chosen in zip(self.offers, self.taken) if chosen]
        if parts:
            none = [offer.what for offer, chosen in zip(self.offers, self.taken) if not chosen and offer.what]
            text = "nearest legal values: " + "; ".join(parts)
            if self.also:
                text += f", {self.also}"
            if none:
                text += f" (no {' or '.join(none)} passes every rule)"
            return text
        text = f"no {' or '.join(o.what for o in self.offers)} passes every rule"
        if self._first_refused is not None:
            candidate, refusal = self._first_refused
            rule = getattr(refusal, "rule", None)
            broken = "this rule still" if rule == self.rule else f"[rule: {rule}]" if rule else refusal.message
            text += f" (with {edits_text(candidate.edits)} it breaks {broken})"
        if self.also:
            text += f"; {self.also.removeprefix('or ')}"
        elif self.otherwise:
            text += f"; {self.otherwise}"
        return text

    @hint.setter
    def hint(self, value: str | None) -> None:     # SpecError's own: a text, no offers
        self._hint_text = value
        self.offers: tuple[Offer, ...] = ()


def edits_text(edits: tuple[tuple[str, Any], ...]) -> str:
    """Spec edits as the spec writes them: `per_core = 4 x 1`, `dataflow = reuse`, `out_block = auto`."""
    def one(key: str, v: Any) -> str:
        name = key.removeprefix("block.")
        if v is None:
            return f"{name} = auto" if key.startswith("block.") else f"{name} left out"
        if isinstance(v, bool):
            return f"{name} = {str(v).lower()}"
        return f"{name} = {fmt_pair(v) if isinstance(v, tuple) else v}"
    return ", ".join(one(key, v) for key, v in edits)


def round_up_tiles(elements: int) -> int:
    """Tiles of a dimension, padded up to whole tiles as ttnn's tilize does."""
    return -(-elements // TILE_HW)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def nearest(values: Iterable[int], target: int, count: int = 4) -> str:
    ordered = sorted(set(values), key=lambda v: (abs(v - target), v))[:count]
    return ", ".join(str(v) for v in sorted(ordered)) if ordered else "none"


def fmt_pair(p: tuple[int, int]) -> str:
    return f"{p[0]} x {p[1]}"
