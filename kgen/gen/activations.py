"""The fused activations: one table from a spec's spelling to what TT-Metal 0.81.1's matmul compute
kernel receives.

`fuse { activation = NAME }` names one row. `relu` is the packer's ReLU (the `PACK_RELU` define);
every other row but `none` is an SFPU activation: the factory sets `SFPU_ACTIVATION` and the named
compile-time args `activation_type` (the position of `ttnn::operations::matmul::KernelActivation`,
ttnn/cpp/ttnn/operations/matmul/shared_with_host/activation_type.hpp) and `activation_param0..2`,
which `bmm_fused_activation.hpp` (ttnn/cpp/ttnn/operations/matmul/device/kernels/compute/) reads.

The parameters are encoded as TT's factory encodes a `UnaryWithParam` (`get_activation_params`,
ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.hpp, tenstorrent/tt-metal@fcff0cab,
the stored version nearest the targeted commit 001cea9a): fast flags as 0/1, float parameters as
their float32 bit patterns, softplus's 1/beta (a float32 division) in param2, TT's defaults where a
parameter is left out. The spec checker, the lowering, the renderer, the golden model, the
performance model and the fuzzer read this table; nothing else spells an activation's name.
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
_ONE, _TWENTY, _SIX = 0x3F800000, 0x41A00000, 0x40C00000


class ActivationError(ValueError):
    """A spelling or parameter TT-Metal would refuse; the message names TT's rule."""


def f32_bits(x: float) -> int:
    """The float32 bit pattern of x (round to nearest, as C++'s float conversion of a double)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def format_f32(x: float) -> str:
    """The shortest decimal that reads back as the same float32, without an exponent (the .kspec
    grammar has none): 1.0 -> `1`, -0.5 -> `-0.5`."""
    target = f32_bits(x)
    for digits in range(1, 18):
        text = f"{x:.{digits}g}"
        if f32_bits(float(text)) == target:
            break
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


def _softplus(ps: tuple[float, ...]) -> tuple[int, int, int]:
    beta, threshold = ps
    if beta == 0:
        raise ActivationError("softplus: beta must be non-zero (TT-Metal's get_activation_params: "
                              "\"SOFTPLUS activation beta parameter cannot be zero\"; the kernel divides by it)")
    reciprocal = bits_f32(_ONE) / bits_f32(f32_bits(beta))       # 1.0f / beta, in float32
    return f32_bits(beta), f32_bits(threshold), f32_bits(reciprocal)


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
    # param0 is the vector mode (0: all of the tile, VectorMode::RC), param1 the fast flag
    Row("sigmoid", "sigmoid", encode=lambda ps: (0, 0, 0), llk="calculate_sigmoid", init="sigmoid_tile_init_pack",
        apply="sigmoid_tile_pack"),
    Row("sigmoid_fast", "sigmoid", encode=lambda ps: (0, 1, 0), llk="calculate_sigmoid",
        init="sigmoid_tile_init_pack", apply="sigmoid_tile_pack"),
    # param0: the clamp's maximum, 6.0f (the factory's default when no parameter is given)
    Row("relu6", "relu6", encode=lambda ps: (_SIX, 0, 0), llk="_relu_max_", init="relu_max_tile_init_pack",
        apply="relu_max_tile_pack"),
    Row("hardsigmoid", "hardsigmoid", llk="calculate_activation<Hardsigmoid>", init="hardsigmoid_tile_init_pack",
        apply="hardsigmoid_tile_pack"),
    Row("hardtanh", "hardtanh", ("min", "max"), (-1.0, 1.0),
        encode=lambda ps: (f32_bits(ps[0]), f32_bits(ps[1]), 0), llk="calculate_hardtanh",
        init="hardtanh_tile_init_pack", apply="hardtanh_tile_pack"),
    # The factory's defaults: param0 = 0x3fd637bd (1.67326, its comment says alpha), param1 =
    # 0x3f8674f5 (1.0507, lambda); the kernel passes param0 as selu_tile_pack's `scale` and param1
    # as its `alpha`. kgen passes the factory's bits, so it computes what TT's matmul computes.
    Row("selu", "selu", encode=lambda ps: (0x3FD637BD, 0x3F8674F5, 0), llk="calculate_selu",
        init="selu_tile_init_pack", apply="selu_tile_pack"),
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
    spelling = name if not row.params else f"{name}({', '.join(format_f32(v) for v in values)})"
    return Activation(spelling, row.kind, p0, p1, p2)


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


def reference_f64(act: Activation, x):
    """The activation in float64 as torch defines it (erf-based GELU, exact sigmoid, torch's SELU
    constants), the error reference of `kgen ab` and `kgen emulate`; `x` a float64 array."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    if act.kind == NONE:
        return x
    if act.kind == PACKER_RELU:
        return np.maximum(x, 0.0)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    with np.errstate(over="ignore", invalid="ignore"):
        sigmoid = lambda v: 1.0 / (1.0 + np.exp(-v))                      # noqa: E731
        if act.kind == "softplus":
            beta, threshold = bits_f32(act.p0), bits_f32(act.p1)
            return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)
        formulas = {
            "silu": lambda: x * sigmoid(x),
            "sigmoid": lambda: sigmoid(x),
            "tanh": lambda: np.tanh(x),
            "gelu": lambda: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
            "gelu_tanh": lambda: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
            "relu6": lambda: np.clip(x, 0.0, 6.0),
            "hardsigmoid": lambda: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
            "hardtanh": lambda: np.clip(x, bits_f32(act.p0), bits_f32(act.p1)),
            # torch.nn.SELU: scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))
            "selu": lambda: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
        }
        return formulas[act.kind]()
