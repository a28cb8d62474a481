"""Enumerations shared by every stage, with TT-Metal's names and values."""

from __future__ import annotations

from enum import StrEnum

# ttnn dtype name -> TT-Metal tt::DataFormat name (tt_backend_api_types.hpp).
DTYPE_TO_FORMAT: dict[str, str] = {
    "bfloat16": "Float16_b",
    "bfloat8_b": "Bfp8_b",
    "bfloat4_b": "Bfp4_b",
    "float32": "Float32",
}

# enum class MathFidelity : uint8_t { LoFi = 0, HiFi2 = 2, HiFi3 = 3, HiFi4 = 4 } (base_types.hpp);
# there is no value 1.
MATH_FIDELITY_VALUE: dict[str, int] = {"LoFi": 0, "HiFi2": 2, "HiFi3": 3, "HiFi4": 4}

ARCHS = ("wormhole_b0", "blackhole")
ACTIVATIONS = ("none", "relu")


class Placement(StrEnum):
    """Where a tensor lives (ttnn MemoryConfig), spelled as the spec's `memory { }` spells it:
    interleaved in DRAM, interleaved in L1, sharded in L1 by blocks, by rows or by columns of tiles, or
    sharded by columns over the DRAM banks (the DRAM-sharded factory's in1)."""

    DRAM = "dram"
    L1 = "l1"
    L1_BLOCK_SHARDED = "l1_block_sharded"
    L1_HEIGHT_SHARDED = "l1_height_sharded"
    L1_WIDTH_SHARDED = "l1_width_sharded"
    DRAM_WIDTH_SHARDED = "dram_width_sharded"


def is_sharded(where: str) -> bool:
    """Whether a placement shards the tensor (in L1 or over the DRAM banks); `dram` and `l1` are
    interleaved: pages dealt round-robin over the DRAM banks or the L1 banks, read and written through the
    same TensorAccessor, its ArgConfig's IsDram bit telling which."""
    return str(where).endswith("_sharded")


# the short names of the data formats, in kernel ids and reports
FORMAT_SHORT = {"Float16_b": "bf16", "Bfp8_b": "bfp8", "Bfp4_b": "bfp4", "Float32": "fp32"}

TILE_HW = 32  # TILE_HEIGHT = TILE_WIDTH = 32 (constants.hpp); kgen plans 32x32 tiles only

# tt::DataFormat values (tt_backend_api_types.hpp) of the formats kgen emits into the JIT
# descriptor arrays; Invalid marks an unused CB index (hlk_desc.hpp).
DATA_FORMAT_VALUE: dict[str, int] = {
    "Float32": 0, "Float16": 1, "Bfp8": 2, "Bfp4": 3, "Tf32": 4, "Float16_b": 5, "Bfp8_b": 6, "Bfp4_b": 7,
    "Invalid": 255,
}
