"""The TT-Metal version kgen targets, and what `ttnn.matmul` runs with when it is given no compute
kernel config.

**The source read.** kgen targets ttnn 0.81.1. The public index of tenstorrent/tt-metal does not
name the commit of the v0.81.1 tag, and the 0.81.1 wheel carries no git hash. The commit below is
the stored version whose matmul sources agree with what the 0.81.1 wheel
(`ttnn-0.81.1-cp310-cp310-manylinux_2_34_x86_64.whl`, `ttnn/build/lib/_ttnncpp.so`) was compiled
from: the same function signatures in its symbol table (create_matmul_1d_systolic_array_program_config
without an L1 safety margin, get_program_config taking the bias tile size, bmm_op_utils::
get_matmul_subblock_params(uint, uint, bool, bool, bool), init_device_compute_kernel_config with a
throttle level), the same assertion texts, no auto-tuner, and a create_matmul_attributes whose
machine code takes HiFi3 for two float32 inputs on Wormhole. Every TT rule kgen restates
(kgen/perf/ttchoice.py and the default below) is read from this one commit.
"""

from __future__ import annotations

from typing import Any

TTNN_VERSION = "0.81.1"
TT_METAL_COMMIT = "001cea9a149df28de134c87b5324972bf4308d48"
TT_METAL_FILES = (
    "ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp",
    "ttnn/cpp/ttnn/operations/matmul/device/matmul_device_operation.cpp",
    "ttnn/cpp/ttnn/operations/matmul/device/utilities/matmul_utilities.cpp",
)
TT_METAL_SOURCE = f"tenstorrent/tt-metal@{TT_METAL_COMMIT[:8]} (ttnn {TTNN_VERSION})"

BLOCK_FLOATS = ("bfloat8_b", "bfloat4_b")

# The name a matmul's compute config carries when it has no `compute` line and no compute.* key,
# and the source its fields name (ComputeConfig.sources).
MATMUL_DEFAULT = "ttnn_matmul_default"
MATMUL_DEFAULT_SOURCE = f"ttnn.matmul's default at {TTNN_VERSION}"


def is_matmul_default(compute) -> bool:
    """Whether every field of a ComputeConfig is ttnn.matmul's default (the spec left compute to it),
    as opposed to a config the spec gives, whatever its name."""
    return bool(compute.sources) and all(src.startswith(MATMUL_DEFAULT_SOURCE) for _, src in compute.sources)


def matmul_default_compute(arch: str, dtype_in0: str, dtype_in1: str, dtype_out: str, *,
                           user_grid: bool, program_config: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """ttnn.matmul's compute config when the call passes none (create_matmul_attributes, then
    init_device_compute_kernel_config with defaults approx false, fp32 accumulation and packer L1
    accumulation by the output dtype): the values and, per field, why.

    Fidelity: HiFi2 only when the call gives neither a program config nor a core grid and the inputs
    are not both block floats; LoFi otherwise. Two float32 inputs: HiFi3 on Wormhole B0 (its HiFi4
    with fp32 accumulation bug), HiFi4 elsewhere."""
    fp32_in = dtype_in0 == dtype_in1 == "float32"
    block_floats = dtype_in0 in BLOCK_FLOATS and dtype_in1 in BLOCK_FLOATS
    if fp32_in:
        fidelity = "HiFi3" if arch == "wormhole_b0" else "HiFi4"
        why = f"two float32 inputs on {arch}"
    elif program_config:
        fidelity, why = "LoFi", "the spec fixes the program config (block / dataflow), as a program_config argument"
    elif user_grid:
        fidelity, why = "LoFi", "the spec fixes the grid, as a core_grid argument"
    elif block_floats:
        fidelity, why = "LoFi", "both inputs block floats"
    else:
        fidelity, why = "HiFi2", "no program config, no core grid, not both inputs block floats"
    fp32_out = dtype_out == "float32"
    out = "a float32 output" if fp32_out else "output not float32"
    values = {"math_fidelity": fidelity, "fp32_dest_acc": fp32_out, "packer_l1_acc": not fp32_out,
              "math_approx": False, "dst_full_sync": False}
    reasons = {"math_fidelity": why, "fp32_dest_acc": out, "packer_l1_acc": out,
               "math_approx": "matmul's default", "dst_full_sync": "matmul's default"}
    return values, reasons
