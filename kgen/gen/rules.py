"""What every planning module shares: the rule error, TT-Metal's CB indices, and the arithmetic
of tiles and of the nearest legal values a rule error suggests."""

from __future__ import annotations

from typing import Iterable

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


class PlanError(SpecError):
    """A spec that breaks one of TT-Metal's rules (or kgen's): names the rule, the values, and the
    nearest legal values."""

    def __init__(self, rule: str, message: str, span: Span | None, nearest: str | None = None):
        super().__init__(f"{message} [rule: {rule}]", span,
                         hint=f"nearest legal values: {nearest}" if nearest else None)
        self.rule = rule


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
