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
_NUMBER = re.compile(r"(0x[0-9a-fA-F]+)u?|(-?\d+\.?\d*(?:[eE][-+]?\d+)?)f")


def literal_value(literal: str) -> float:
    """The float a C literal such as `r = 1.37805939e-3f` or `0x40c00000u` denotes (FP32)."""
    match = _NUMBER.search(literal)
    if match is None:
        raise ValueError(f"no float literal in {literal!r}")
    if match.group(1):
        return float(np.uint32(int(match.group(1), 16)).view(np.float32))
    return float(np.float32(match.group(2)))


@cache
def coefficient(name: str) -> float:
    return literal_value(config_table(TABLE)[name]["literal"])


def entries() -> dict[str, dict]:
    return dict(config_table(TABLE))
