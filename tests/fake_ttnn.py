"""A stand-in for the parts of ttnn 0.81.1 that kgen.device.runtime uses, strict where ttnn is strict.

Field names, required arguments, accepted types and enum values follow the 0.81.1 nanobind
bindings as introspected from the wheel's `_ttnn` extension (see the issue #3 notes): for example
`KernelDescriptor` requires `config` and a `CoreRangeSet`; `defines` is a list of (str, str) pairs
and a dict is rejected; compile-time and runtime args are uint32; `CBFormatDescriptor.data_format`
takes a `DataType`; `SemaphoreDescriptor.id` is required and read-only; `NOC.NOC_0` and
`NOC.RISCV_0_default` are distinct members; `custom_program_hash` is a uint64.
"""

from __future__ import annotations

import enum
from typing import Any

_UINT32 = 1 << 32


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise TypeError(message)


def _uint32_list(values: Any, what: str) -> list[int]:
    _require(isinstance(values, (list, tuple)), f"{what}: expected a sequence of uint32, got {type(values).__name__}")
    for v in values:
        _require(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _UINT32,
                 f"{what}: {v!r} is not a uint32")
    return list(values)


class MathFidelity(enum.Enum):
    LoFi = 0
    HiFi2 = 2
    HiFi3 = 3
    HiFi4 = 4
    Invalid = 255


class NOC(enum.Enum):
    RISCV_0_default = 0
    RISCV_1_default = 1
    NOC_0 = "0"          # distinct members in ttnn 0.81.1, not aliases of RISCV_*_default
    NOC_1 = "1"



class UnpackToDestMode(enum.Enum):
    UnpackToDestFp32 = 0     # values as 0.81.1's _ttnn has them
    Default = 1


class DataMovementProcessor(enum.Enum):
    RISCV_0 = 0
    RISCV_1 = 1


class CoreType(enum.Enum):
    TENSIX = 5
    WORKER = 12


class DataType(enum.Enum):
    BFLOAT16 = 0
    FLOAT32 = 1
    UINT32 = 2
    BFLOAT8_B = 3
    BFLOAT4_B = 4


bfloat16, float32, bfloat8_b, bfloat4_b = DataType.BFLOAT16, DataType.FLOAT32, DataType.BFLOAT8_B, DataType.BFLOAT4_B
# ttnn converts a DataType to the tt::DataFormat it stores (data_format_as_uint8).
_DATAFORMAT_OF = {DataType.BFLOAT16: 5, DataType.FLOAT32: 0, DataType.BFLOAT8_B: 6, DataType.BFLOAT4_B: 7,
                  DataType.UINT32: 24}


class CoreCoord:
    def __init__(self, x: int, y: int):
        _require(isinstance(x, int) and isinstance(y, int) and x >= 0 and y >= 0, f"CoreCoord({x!r}, {y!r})")
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CoreCoord) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))


class CoreRange:
    def __init__(self, start: CoreCoord, end: CoreCoord):
        _require(isinstance(start, CoreCoord) and isinstance(end, CoreCoord), "CoreRange takes two CoreCoords")
        _require(start.x <= end.x and start.y <= end.y, "CoreRange start must not exceed end")
        self.start, self.end = start, end


class CoreRangeSet:
    def __init__(self, core_ranges):
        _require(isinstance(core_ranges, (list, tuple, set)) and all(isinstance(r, CoreRange) for r in core_ranges),
                 "CoreRangeSet takes a sequence of CoreRange")
        self._ranges = list(core_ranges)

    def ranges(self) -> list[CoreRange]:
        return list(self._ranges)

    def cores(self) -> set[tuple[int, int]]:
        return {(x, y) for r in self._ranges for x in range(r.start.x, r.end.x + 1)
                for y in range(r.start.y, r.end.y + 1)}


class TileDescriptor:
    def __init__(self, height: int = 32, width: int = 32, transpose: bool = False):
        _require(isinstance(height, int) and isinstance(width, int) and isinstance(transpose, bool), "TileDescriptor")
        self.height, self.width, self.transpose = height, width, transpose


class CBFormatDescriptor:
    def __init__(self, buffer_index: int, data_format: DataType, page_size: int, tile: TileDescriptor | None = None):
        _require(isinstance(buffer_index, int) and 0 <= buffer_index < 256, "buffer_index: uint8")
        _require(isinstance(data_format, DataType), f"data_format must be a ttnn.DataType, got {data_format!r}")
        _require(isinstance(page_size, int) and page_size > 0, "page_size")
        _require(tile is None or isinstance(tile, TileDescriptor), "tile: TileDescriptor or None")
        self.buffer_index, self.page_size, self.tile = buffer_index, page_size, tile
        self._dtype = data_format

    @property
    def data_format(self):
        raise TypeError("Unable to convert function return value to a Python object")   # as in 0.81.1

    @property
    def data_format_as_uint8(self) -> int:
        return _DATAFORMAT_OF[self._dtype]


class CBDescriptor:
    def __init__(self, total_size: int, core_ranges: CoreRangeSet, format_descriptors, buffer=None):
        _require(isinstance(total_size, int) and total_size > 0, "total_size")
        _require(isinstance(core_ranges, CoreRangeSet), "core_ranges must be a CoreRangeSet")
        _require(all(isinstance(f, CBFormatDescriptor) for f in format_descriptors), "format_descriptors")
        self.total_size, self.core_ranges, self.format_descriptors = total_size, core_ranges, list(format_descriptors)
        self.buffer = buffer        # CBDescriptor.buffer: a globally allocated CB's tensor buffer


class ComputeConfigDescriptor:
    def __init__(self, math_fidelity: MathFidelity = MathFidelity.HiFi4, math_approx_mode: bool = False,
                 fp32_dest_acc_en: bool = False, dst_full_sync_en: bool = False, bfp8_pack_precise: bool = False):
        _require(isinstance(math_fidelity, MathFidelity), "math_fidelity: MathFidelity")
        for name, v in (("math_approx_mode", math_approx_mode), ("fp32_dest_acc_en", fp32_dest_acc_en),
                        ("dst_full_sync_en", dst_full_sync_en), ("bfp8_pack_precise", bfp8_pack_precise)):
            _require(isinstance(v, bool), f"{name}: bool")
        self.math_fidelity, self.math_approx_mode = math_fidelity, math_approx_mode
        self.fp32_dest_acc_en, self.dst_full_sync_en, self.bfp8_pack_precise = fp32_dest_acc_en, dst_full_sync_en, bfp8_pack_precise
        self._unpack_to_dest_mode: list = []

    # an attribute, not a constructor argument, in 0.81.1 (a VectorUnpackToDestMode, empty by default)
    @property
    def unpack_to_dest_mode(self) -> list:
        return list(self._unpack_to_dest_mode)

    @unpack_to_dest_mode.setter
    def unpack_to_dest_mode(self, modes) -> None:
        _require(isinstance(modes, (list, tuple)) and all(isinstance(m, UnpackToDestMode) for m in modes),
                 "unpack_to_dest_mode: a list of UnpackToDestMode")
        self._unpack_to_dest_mode = list(modes)


class DataMovementConfigDescriptor:
    def __init__(self, processor: DataMovementProcessor = DataMovementProcessor.RISCV_0, noc: NOC = NOC.RISCV_0_default):
        _require(isinstance(processor, DataMovementProcessor), "processor: DataMovementProcessor")
        _require(isinstance(noc, NOC), "noc: NOC")
        self.processor, self.noc = processor, noc


class RuntimeArgs:
    """rt[x][y] = [uint32, ...] upserts the args of CoreCoord(x, y)."""

    def __init__(self):
        self._entries: list[tuple[CoreCoord, list[int]]] = []

    def __getitem__(self, x: int):
        rt = self

        class _Col:
            def __setitem__(self, y: int, values) -> None:
                values = _uint32_list(values, f"runtime args of core ({x},{y})")
                for i, (c, _) in enumerate(rt._entries):
                    if (c.x, c.y) == (x, y):
                        rt._entries[i] = (c, values)
                        return
                rt._entries.append((CoreCoord(x, y), values))

            def __getitem__(self, y: int) -> list[int]:
                for c, v in rt._entries:
                    if (c.x, c.y) == (x, y):
                        return v
                raise IndexError(f"No runtime args found for CoreCoord({x}, {y})")
        return _Col()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)


class KernelDescriptor:
    class SourceType(enum.Enum):
        FILE_PATH = 0
        SOURCE_CODE = 1

    def __init__(self, kernel_source: str, source_type: "KernelDescriptor.SourceType" = None, *,
                 core_ranges: CoreRangeSet, compile_time_args=(), named_compile_time_args=(), defines=(),
                 runtime_args=(), common_runtime_args=(), opt_level=None, config=None, compiler_include_paths=()):
        _require(isinstance(kernel_source, str), "kernel_source: str")
        _require(source_type is None or isinstance(source_type, KernelDescriptor.SourceType), "source_type")
        _require(isinstance(core_ranges, CoreRangeSet), "core_ranges must be a CoreRangeSet")
        _require(config is not None, "config is required")
        _require(isinstance(config, (ComputeConfigDescriptor, DataMovementConfigDescriptor)), "config type")
        _require(isinstance(defines, (list, tuple)), "defines: a list of (str, str) pairs, not a dict")
        for d in defines:
            _require(isinstance(d, tuple) and len(d) == 2 and all(isinstance(s, str) for s in d), f"define {d!r}")
        _require(isinstance(named_compile_time_args, (list, tuple)), "named_compile_time_args: list of pairs")
        for n in named_compile_time_args:
            _require(isinstance(n, tuple) and len(n) == 2 and isinstance(n[0], str) and isinstance(n[1], int)
                     and 0 <= n[1] < _UINT32, f"named compile-time arg {n!r}")
        _require(isinstance(runtime_args, (RuntimeArgs, list, tuple)) and not isinstance(runtime_args, dict),
                 "runtime_args: RuntimeArgs or a list of (CoreCoord, list) pairs")
        self.kernel_source = kernel_source
        self.source_type = source_type or KernelDescriptor.SourceType.FILE_PATH
        self.core_ranges = core_ranges
        self.compile_time_args = _uint32_list(compile_time_args, "compile_time_args")
        self.named_compile_time_args = list(named_compile_time_args)
        self.defines = list(defines)
        self.runtime_args = runtime_args
        self.common_runtime_args = _uint32_list(common_runtime_args, "common_runtime_args")
        self.config = config


class SemaphoreDescriptor:
    def __init__(self, *, id: int, core_type: CoreType = CoreType.WORKER, core_ranges: CoreRangeSet,
                 initial_value: int):
        _require(isinstance(id, int) and id >= 0, "id")
        _require(isinstance(core_type, CoreType), "core_type: CoreType")
        _require(isinstance(core_ranges, CoreRangeSet), "core_ranges must be a CoreRangeSet")
        _require(isinstance(initial_value, int) and 0 <= initial_value < _UINT32, "initial_value: uint32")
        self._id, self.core_type, self.core_ranges, self.initial_value = id, core_type, core_ranges, initial_value

    @property
    def id(self) -> int:           # read-only in 0.81.1
        return self._id


class ProgramDescriptor:
    def __init__(self, kernels=(), semaphores=(), cbs=()):
        _require(all(isinstance(k, KernelDescriptor) for k in kernels), "kernels")
        _require(all(isinstance(s, SemaphoreDescriptor) for s in semaphores), "semaphores")
        _require(all(isinstance(c, CBDescriptor) for c in cbs), "cbs")
        self._kernels, self._semaphores, self._cbs = list(kernels), list(semaphores), list(cbs)
        self._hash = None

    # the list getters return a new list each time in 0.81.1
    kernels = property(lambda self: list(self._kernels))
    semaphores = property(lambda self: list(self._semaphores))
    cbs = property(lambda self: list(self._cbs))

    @property
    def custom_program_hash(self):
        return self._hash

    @custom_program_hash.setter
    def custom_program_hash(self, value) -> None:
        _require(value is None or (isinstance(value, int) and 0 <= value < 1 << 64), "custom_program_hash: uint64")
        self._hash = value


class FakeTensor:
    def __init__(self, address: int):
        self._address = address

    def buffer_address(self) -> int:
        return self._address


class FakeDevice:
    """NoC coordinates of a Wormhole-like worker grid: column x -> x + 1, row y -> y + 1 (skipping
    nothing); any monotonic map serves the test."""

    def worker_core_from_logical_core(self, coord: CoreCoord) -> CoreCoord:
        return CoreCoord(coord.x + 1, coord.y + 1)


generic_op_calls: list[tuple[list, ProgramDescriptor]] = []


def generic_op(io_tensors, program_descriptor: ProgramDescriptor):
    _require(isinstance(io_tensors, list) and io_tensors, "io_tensors: list of tensors, output last")
    _require(isinstance(program_descriptor, ProgramDescriptor), "program_descriptor")
    generic_op_calls.append((io_tensors, program_descriptor))
    return io_tensors[-1]
