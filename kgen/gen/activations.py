"""The fused activations: one table from a spec's spelling to what TT-Metal 0.81.1's matmul compute
kernel receives.

`fuse { activation = NAME }` names one row. `relu` is the packer's ReLU (the `PACK_RELU` define);
every other row but `none` is an SFPU activation: the factory sets `SFPU_ACTIVATION` and the named
compile-time args `activation_type` (the position of `ttnn::operations::matmul::KernelActivation`,
ttnn/cpp/ttnn/operations/matmul/shared_with_host/activation_type.hpp) and `activation_param0..2`,
which `bmm_fused_activation.hpp` (ttnn/cpp/ttnn/operations/matmul/device/kernels/compute/) reads.

The parameters are encoded as TT's factory encodes a `UnaryWithParam` (`get_activation_params`,
ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.hpp, read from its machine code in
the ttnn 0.81.1 wheel's `_ttnncpp.so`; tests/gen/test_activation_wheel.py checks every default bit
pattern below occurs there): fast flags as 0/1, sigmoid's vector mode, float parameters as their
float32 bit patterns, softplus's 1/beta (a float32 division) in param2, TT's defaults where a
parameter is left out. The spec checker, the lowering, the renderer, the golden model, the
performance model and the fuzzer read this table; the float64 oracle (kgen.proof.oracle) does not.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable

# ttnn::operations::matmul::KernelActivation, in declaration order (its value is the position)
KERNEL_ACTIVATIONS = ("none", "gelu", "gelu_tanh", "tanh", "silu", "relu6", "sigmoid", "hardsigmoid",
                      "hardtanh", "selu", "softplus")
NONE, PACKER_RELU = "none", "relu"
_ONE, _SIX = 0x3F800000, 0x40C00000
# get_activation_params' SELU defaults in the 0.81.1 wheel: param0 the scale, param1 alpha
# (float32 nearest the published 1.0507009873554805 and 1.6732632423543772)
_SELU_SCALE, _SELU_ALPHA = 0x3F867D5F, 0x3FD62D7D
# sigmoid's VectorMode as bmm_fused_activation.hpp reads param0: 1 rows (faces 0, 1), 2 columns
# (faces 0, 2), any other value the whole tile; TT's string "sigmoid" passes 4
_SIGMOID_WHOLE_TILE = 4


class ActivationError(ValueError):
    """A spelling or parameter TT-Metal would refuse; the message names TT's rule."""


def f32_bits(x: float) -> int:
    """The float32 bit pattern of x (round to nearest, as C++'s float conversion of a double)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def f32_result_bits(x: float) -> int:
    """The float32 bits of an arithmetic result computed in double: as f32_bits, but a value past
    float32's range is infinity, as IEEE float32 arithmetic gives (C++'s `1.0f / beta` for a tiny beta)."""
    try:
        return f32_bits(x)
    except OverflowError:
        return 0x7F800000 | (0x80000000 if x < 0 else 0)


def format_f32(x: float) -> str:
    """The shortest decimal that reads back as the same float32, without an exponent (the .kspec
    grammar has none): 1.0 -> `1`, -0.5 -> `-0.5`."""
    target = f32_bits(x)
    for digits in range(1, 18):
        text = f"{x:.{digits}g}"
        try:
            if f32_bits(float(text)) == target:
                break
        except OverflowError:       # near float32's largest, a short decimal can round past it
            continue
    out = format(Decimal(text), "f")
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return "-0" if target == 0x80000000 else out


@dataclass(frozen=True)
class Row:
    """One spelling: the kernel activation it selects, its parameter names, how TT's factory turns
    the parameters into (param0, param1, param2), and the LLK SFPU function the kernel reaches."""

    spelling: str
    kind: str                                         # NONE, PACKER_RELU or a KERNEL_ACTIVATIONS name
    params: tuple[str, ...] = ()                      # names of the spec's parameters, in order
    defaults: tuple[float, ...] = ()                  # TT's defaults when the call form is left out
    encode: Callable[[tuple[float, ...]], tuple[int, int, int]] = lambda ps: (0, 0, 0)
    llk: str = ""                                     # the LLK function (ckernel_sfpu_*.h) it runs
    init: str = ""                                    # the compute API's init on the pack thread
    apply: str = ""                                   # the compute API's call on the pack thread
    # the spelling keeps the bare name when no parameter is written (TT's string form)
    bare_default: bool = False
    # what TT accepts but computes other than asked: (parameters -> a warning or "")
    caution: Callable[[tuple[float, ...]], str] = lambda ps: ""


def _softplus(ps: tuple[float, ...]) -> tuple[int, int, int]:
    beta, threshold = ps
    if beta == 0:
        raise ActivationError("softplus: beta must be non-zero (TT-Metal's get_activation_params: "
                              "\"SOFTPLUS activation beta parameter cannot be zero\"; the kernel divides by it)")
    reciprocal = bits_f32(_ONE) / bits_f32(f32_bits(beta))       # 1.0f / beta, in float32
    return f32_bits(beta), f32_bits(threshold), f32_result_bits(reciprocal)


def _relu6(ps: tuple[float, ...]) -> tuple[int, int, int]:
    (top,) = ps
    if f32_bits(top) == 0:
        raise ActivationError("relu6: a maximum of 0 is not what TT-Metal computes: bmm_fused_activation.hpp "
                              "passes relu_max_tile_pack `PARAM0 ? PARAM0 : 6.0f`, so its kernel clamps at 6; "
                              "write relu6 for 6, or a non-zero maximum")
    return f32_bits(top), 0, 0


def _sigmoid(fast: int) -> Callable[[tuple[float, ...]], tuple[int, int, int]]:
    def encode(ps: tuple[float, ...]) -> tuple[int, int, int]:
        (mode,) = ps
        if mode != int(mode) or not 0 <= mode <= 4:
            raise ActivationError(f"sigmoid: the vector mode is a whole number from 0 to 4, not {format_f32(mode)} "
                                  "(TT-Metal's get_activation_params requires at most 4; bmm_fused_activation.hpp "
                                  "applies 1 to faces 0 and 1 (the top 16 rows of each tile), 2 to faces 0 and 2 "
                                  "(the left 16 columns), any other to the whole tile)")
        return int(mode), fast, 0
    return encode


def _clamp_caution(name: str) -> Callable[[tuple[float, ...]], str]:
    def caution(ps: tuple[float, ...]) -> str:
        lo, hi = (0.0, ps[0]) if len(ps) == 1 else ps
        if lo <= hi:
            return ""
        return (f"{name}: the minimum {format_f32(lo)} is above the maximum {format_f32(hi)}; TT-Metal 0.81.1 "
                f"accepts it (get_activation_params checks nothing) and its kernel's clamp returns "
                f"{'0' if name == 'relu6' else 'the maximum'} for every element: a constant output")
    return caution


_ROWS: tuple[Row, ...] = (
    Row("none", NONE),
    Row("relu", PACKER_RELU),
    Row("silu", "silu", llk="calculate_silu", init="silu_tile_init_pack", apply="silu_tile_pack"),
    Row("gelu", "gelu", encode=lambda ps: (0, 0, 0), llk="calculate_gelu", init="gelu_tile_init_pack",
        apply="gelu_tile_pack"),
    Row("gelu_fast", "gelu", encode=lambda ps: (1, 0, 0), llk="calculate_gelu", init="gelu_tile_init_pack",
        apply="gelu_tile_pack"),
    Row("gelu_tanh", "gelu_tanh", encode=lambda ps: (0, 0, 0), llk="calculate_gelu_tanh",
        init="gelu_tanh_tile_init_pack", apply="gelu_tanh_tile_pack"),
    Row("gelu_tanh_fast", "gelu_tanh", encode=lambda ps: (1, 0, 0), llk="calculate_gelu_tanh_fast",
        init="gelu_tanh_tile_init_pack", apply="gelu_tanh_tile_pack"),
    Row("tanh", "tanh", encode=lambda ps: (0, 0, 0), llk="calculate_tanh", init="tanh_tile_init_pack",
        apply="tanh_tile_pack"),
    Row("tanh_fast", "tanh", encode=lambda ps: (1, 0, 0), llk="calculate_tanh", init="tanh_tile_init_pack",
        apply="tanh_tile_pack"),
    # param0 is the vector mode (4 as TT's string form passes it: the whole tile), param1 the fast flag
    Row("sigmoid", "sigmoid", ("vector_mode",), (_SIGMOID_WHOLE_TILE,), encode=_sigmoid(0), llk="calculate_sigmoid",
        init="sigmoid_tile_init_pack", apply="sigmoid_tile_pack", bare_default=True),
    Row("sigmoid_fast", "sigmoid", ("vector_mode",), (_SIGMOID_WHOLE_TILE,), encode=_sigmoid(1),
        llk="calculate_sigmoid", init="sigmoid_tile_init_pack", apply="sigmoid_tile_pack", bare_default=True),
    # param0: the clamp's maximum, 6.0f (the factory's default when no parameter is given)
    Row("relu6", "relu6", ("max",), (bits_f32(_SIX),), encode=_relu6, llk="_relu_max_",
        init="relu_max_tile_init_pack", apply="relu_max_tile_pack", bare_default=True,
        caution=_clamp_caution("relu6")),
    Row("hardsigmoid", "hardsigmoid", llk="calculate_activation<Hardsigmoid>", init="hardsigmoid_tile_init_pack",
        apply="hardsigmoid_tile_pack"),
    Row("hardtanh", "hardtanh", ("min", "max"), (-1.0, 1.0),
        encode=lambda ps: (f32_bits(ps[0]), f32_bits(ps[1]), 0), llk="calculate_hardtanh",
        init="hardtanh_tile_init_pack", apply="hardtanh_tile_pack", caution=_clamp_caution("hardtanh")),
    # param0 the scale, param1 alpha: bmm_fused_activation.hpp calls selu_tile_pack(i, PARAM0, PARAM1),
    # "PARAM0 is the scale, PARAM1 is alpha"
    Row("selu", "selu", ("scale", "alpha"), (bits_f32(_SELU_SCALE), bits_f32(_SELU_ALPHA)),
        encode=lambda ps: (f32_bits(ps[0]), f32_bits(ps[1]), 0), llk="calculate_selu",
        init="selu_tile_init_pack", apply="selu_tile_pack", bare_default=True),
    Row("softplus", "softplus", ("beta", "threshold"), (1.0, 20.0), encode=_softplus, llk="calculate_softplus",
        init="softplus_tile_init_pack", apply="softplus_tile_pack"),
)
ROWS = {row.spelling: row for row in _ROWS}
SPELLINGS = tuple(ROWS)
SFPU_SPELLINGS = tuple(s for s, row in ROWS.items() if row.kind in KERNEL_ACTIVATIONS[1:])


@dataclass(frozen=True)
class Activation:
    """A planned activation: what the kernel receives. `spelling` is the canonical spec text."""

    spelling: str
    kind: str
    p0: int = 0
    p1: int = 0
    p2: int = 0

    @property
    def row(self) -> Row:
        return ROWS[self.spelling.split("(")[0]]

    @property
    def sfpu(self) -> bool:
        """Run on the SFPU by bmm_fused_activation.hpp (SFPU_ACTIVATION)."""
        return self.kind in KERNEL_ACTIVATIONS[1:]

    @property
    def packer_relu(self) -> bool:
        return self.kind == PACKER_RELU

    @property
    def type_value(self) -> int:
        """activation_type: the KernelActivation enum's value."""
        return KERNEL_ACTIVATIONS.index(self.kind) if self.kind in KERNEL_ACTIVATIONS else 0

    @property
    def named_args(self) -> tuple[tuple[str, int], ...]:
        """The named compile-time args TT's factory adds for an SFPU activation."""
        if not self.sfpu:
            return ()
        return (("activation_type", self.type_value), ("activation_param0", self.p0),
                ("activation_param1", self.p1), ("activation_param2", self.p2))


_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?$")


def parse(text: str) -> Activation:
    """A spelling (`gelu_fast`, `hardtanh(-2, 2)`) -> the planned activation; ActivationError says why not."""
    m = _CALL.match(text)
    if m is None:
        raise ActivationError(f"`{text}` is not an activation name or call like `hardtanh(-1, 1)`")
    name, args = m.group(1), m.group(2)
    row = ROWS.get(name)
    if row is None:
        raise ActivationError(f"unknown activation `{name}`")
    if args is None:
        values = row.defaults
    else:
        if not row.params:
            raise ActivationError(f"{name} takes no parameters (TT-Metal's factory passes none for it); "
                                  f"write `{name}`")
        parts = [a.strip() for a in args.split(",")] if args.strip() else []
        if len(parts) != len(row.params):
            raise ActivationError(f"{name} takes {len(row.params)} parameters ({', '.join(row.params).upper()}), "
                                  f"found {len(parts)}")
        values = tuple(_number(name, pname, part) for pname, part in zip(row.params, parts))
    p0, p1, p2 = row.encode(values)
    bare = not row.params or (args is None and row.bare_default)
    spelling = name if bare else f"{name}({', '.join(format_f32(v) for v in values)})"
    return Activation(spelling, row.kind, p0, p1, p2)


def caution(spelling: str) -> str:
    """What TT-Metal accepts in this (checked) spelling but computes other than the name says, or ""."""
    act = parse(spelling)
    m = _CALL.match(spelling)
    values = (tuple(float(v) for v in m.group(2).split(",")) if m and m.group(2) else act.row.defaults)
    return act.row.caution(values)


def _number(name: str, pname: str, text: str) -> float:
    if not _NUMBER.match(text):
        raise ActivationError(f"{name}: {pname.upper()} = `{text}` is not a number (write it like -1 or 0.5)")
    value = float(text)
    try:
        f32 = bits_f32(f32_bits(value))
    except OverflowError:
        f32 = math.inf
    if math.isinf(f32):
        raise ActivationError(f"{name}: {pname.upper()} = {text} does not fit a float32 (TT-Metal passes the "
                              "parameter to the kernel as a float32 bit pattern)")
    return f32


def planned(spelling: str) -> Activation:
    """The planned activation of a spec's (already checked) spelling."""
    return parse(spelling)
