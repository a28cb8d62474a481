"""Enumerations shared by every stage, with TT-Metal's names and values."""

from __future__ import annotations

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
DATAFLOWS = ("mcast_2d", "reuse")
ACTIVATIONS = ("none", "relu")

TILE_HW = 32  # TILE_HEIGHT = TILE_WIDTH = 32 (constants.hpp); kgen plans 32x32 tiles only
