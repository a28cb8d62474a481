"""The transposed-input args of TT-Metal 0.81.1's reuse and 2D multicast factories (ttnn.matmul's
transpose_a / transpose_b), for port-check: the readers' tile strides as the factories compute them,

    in0_tensor_stride_w = transpose_a ? Mt : 1      in0_tensor_stride_h = transpose_a ? 1 : Kt
    in1_tensor_stride_w = transpose_b ? Kt : 1      in1_tensor_stride_h = transpose_b ? 1 : Nt

(matmul_multicore_reuse_mcast_2d_program_factory.cpp, reuse_optimized_descriptor.cpp, matmul_multicore_
reuse_program_factory.cpp at 0.81.1: in tiles), each block stride the block's width or height in tiles
times the stride along it, and each core's first tile per_core_M x stride_h (in1: per_core_N x stride_w).
The compute kernel's in0_transpose_tile arg, IN1_TRANSPOSE_TILE and c_10 are kgen's own (lower.py,
blocking.py): TT's compute kernel takes them as kgen's does."""

from __future__ import annotations

from typing import Any

from kgen.core.types import TILE_HW


def in0_strides(p: Any) -> tuple[int, int]:
    """(in0_tensor_stride_w, in0_tensor_stride_h): one tile along K, one along M."""
    return (p.mt, 1) if p.transpose_a else (1, p.kt)


def in1_strides(p: Any) -> tuple[int, int]:
    """(in1_tensor_stride_w, in1_tensor_stride_h): one tile along N, one along K."""
    return (p.kt, 1) if p.transpose_b else (1, p.nt)


def in0_last_ktile(p: Any) -> tuple[int, int]:
    """(in0_last_ktile_w, in0_last_ktile_h) of the 2D in0 sender: the logical K's remainder in the last
    K tile, across the stored tile's columns, or its rows when A is stored transposed (the reader's
    pad_last_ktile / pad_last_transposed_ktile)."""
    rest = p.spec.k % TILE_HW
    return (0, rest) if p.transpose_a else (rest, 0)
