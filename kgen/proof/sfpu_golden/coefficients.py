"""The LLK SFPU constants the golden model uses, from configs/sfpu/llk_coefficients.toml.

Each entry holds the C++ literal as TT-Metal v0.81.1's header spells it; the value is parsed from
that literal, so the table and the header cannot disagree on a digit (a test greps the headers
for every literal)."""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from kgen.core.resources import config_table

TABLE = "sfpu/llk_coefficients.toml"
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.?\d*(?:[eE][-+]?\d+)?")


def literal_value(literal: str) -> float:
    """The FP32 value a C expression such as `r = 1.37805939e-3f`, `2.0f * 1.442695f` (the
    product, rounded to FP32 like the compiler's float arithmetic) or `0x40c00000u` (the float
    with those bits) denotes."""
    hexes = _HEX.findall(literal)
    if hexes:
        return float(np.uint32(int(hexes[0], 16)).view(np.float32))
    numbers = _FLOAT.findall(literal)
    if not numbers:
        raise ValueError(f"no float literal in {literal!r}")
    value = np.float32(numbers[0])
    for factor in numbers[1:]:
        value = np.float32(value * np.float32(factor))
    return float(value)


def literal_int(literal: str) -> int:
    """The integer a hexadecimal C literal (`kC231Bias = 0x4B3FFF81`) denotes."""
    return int(_HEX.findall(literal)[0], 16)


@cache
def coefficient(name: str) -> float:
    return literal_value(config_table(TABLE)[name]["literal"])


@cache
def coefficient_int(name: str) -> int:
    return literal_int(config_table(TABLE)[name]["literal"])


@cache
def coefficient_pair(name: str) -> tuple[float, float]:
    """The two float arguments of a `vLut8si(a, b)` / `vLut16ss(a, b)` literal, as written (the
    SFPI library encodes them; isa.sfpi_lut_code)."""
    literal = config_table(TABLE)[name]["literal"]
    numbers = _FLOAT.findall(literal[literal.index("("):])
    return float(numbers[0]), float(numbers[1])


def entries() -> dict[str, dict]:
    return dict(config_table(TABLE))
