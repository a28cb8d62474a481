"""kgen's activation parameters against TT-Metal 0.81.1 itself: the machine code of the factory's
get_activation_params (ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.hpp),
cut from the ttnn 0.81.1 wheel's _ttnncpp.so by `kgen headers fetch` (kgen.toolchain.wheelfacts).

A default parameter that is a float32 bit pattern must occur in that code as an immediate; a
parameter the user writes must be the float32 bits of the user's number, as TT's factory stores
it (std::bit_cast of the float)."""

from __future__ import annotations

import struct

import pytest

from kgen.gen import activations as A
from kgen.toolchain.wheelfacts import function_code, immediates32


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


@pytest.fixture(scope="module")
def code(host_toolchain):
    found = function_code(host_toolchain.headers.root, "get_activation_params")
    if found is None:
        pytest.fail(f"{host_toolchain.headers.root} holds no machine code of get_activation_params: "
                    "fetch the headers again (kgen headers fetch --force)")
    return found


def test_the_kept_code_is_get_activation_params(code):
    # the soft-plus check's 1.0f (the division 1/beta) and the clamp defaults are among its immediates
    assert {0x3F800000, 0xBF800000, 0x41A00000, 0x40C00000} <= immediates32(code)


@pytest.mark.parametrize("spelling", [s for s in A.SFPU_SPELLINGS])
def test_every_default_bit_pattern_occurs_in_the_wheels_factory(code, spelling):
    act = A.parse(spelling)
    floats = [p for p in (act.p0, act.p1, act.p2) if p >= 0x00800000]     # flags and modes are small integers
    missing = [hex(p) for p in floats if p not in immediates32(code)]
    assert not missing, f"{spelling}: {missing} do not occur in 0.81.1's get_activation_params"


def test_the_old_selu_constants_are_not_0_81_1s(code):
    # tenstorrent/tt-metal@fcff0cab's factory had 0x3FD637BD / 0x3F8674F5; 0.81.1 has neither
    assert not {0x3FD637BD, 0x3F8674F5} & immediates32(code)
    assert {0x3F867D5F, 0x3FD62D7D} <= immediates32(code)


@pytest.mark.parametrize("spelling, values", [
    ("hardtanh(-2, 0.5)", (-2.0, 0.5)), ("selu(1.25, 1.5)", (1.25, 1.5)), ("relu6(3.5)", (3.5,)),
    ("softplus(2, 10)", (2.0, 10.0)),
])
def test_user_parameters_are_their_float32_bits(spelling, values):
    act = A.parse(spelling)
    assert [act.p0, act.p1][: len(values)] == [bits(v) for v in values]
