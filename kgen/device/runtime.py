"""Load a `kgen build` folder into ttnn objects and run it with `ttnn.generic_op`.

ttnn is imported only when a function here is called without an explicit `ttnn` module, so kgen
itself never needs it. The mapping follows ttnn 0.81.1's Python bindings: `ProgramDescriptor`,
`KernelDescriptor` (FILE_PATH source, `CoreRangeSet`, `RuntimeArgs` set as `rt[x][y]`),
`ComputeConfigDescriptor` (its `unpack_to_dest_mode` set as an attribute, as the binding has it) /
`DataMovementConfigDescriptor`, `CBDescriptor` with one
`CBFormatDescriptor` per CB index sharing the allocation, `SemaphoreDescriptor`, and
`custom_program_hash`. Values only known on the device (buffer addresses, NoC coordinates) are
resolved here from the tensors and the device.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kgen.core.manifest import ManifestError, load_manifest
from kgen.core.types import DTYPE_TO_FORMAT

# tt::DataFormat of a manifest -> the ttnn.DataType that ttnn converts to it (ttnn/core/tensor/types.cpp).
DATA_FORMAT_TO_DTYPE = {fmt: dtype for dtype, fmt in DTYPE_TO_FORMAT.items()}     # the inverse of types.py's table


def _import_ttnn():
    try:
        import ttnn  # noqa: PLC0415 - optional, heavy, device-only dependency
    except ImportError:
        raise ManifestError("kgen.device.runtime needs ttnn (TT-Metal's Python package) to build ttnn objects; "
                            "install ttnn==0.81.1 on a machine with a Tenstorrent card") from None
    return ttnn


def _core_range_set(ttnn, ranges: Sequence[Mapping[str, Sequence[int]]]):
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(*r["start"]), ttnn.CoreCoord(*r["end"])) for r in ranges])


def device_noc_coordinates(device, ttnn) -> Callable[[str, int], int]:
    """NoC coordinate of a logical worker column (`noc_x`) or row (`noc_y`) on this device."""
    def noc(axis: str, logical: int) -> int:
        if axis == "noc_x":
            return device.worker_core_from_logical_core(ttnn.CoreCoord(logical, 0)).x
        return device.worker_core_from_logical_core(ttnn.CoreCoord(0, logical)).y
    return noc


def _resolve(value: Any, noc: Callable[[str, int], int], addresses: Mapping[str, int], where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, dict)):
        raise ManifestError(f"{where}: runtime arg {value!r} is neither an int nor a lookup")
    if isinstance(value, int):
        return value
    if len(value) != 1:
        raise ManifestError(f"{where}: runtime arg lookup {value!r} must have exactly one key")
    (kind, arg), = value.items()
    if kind in ("noc_x", "noc_y"):
        return int(noc(kind, arg))
    if kind == "buffer_address":
        if arg not in addresses:
            raise ManifestError(f"{where}: needs the address of tensor `{arg}`, which was not given")
        return int(addresses[arg])
    raise ManifestError(f"{where}: unknown runtime arg lookup {kind!r}")


def _check_compute_config(kernel: Mapping[str, Any]) -> None:
    # ttnn's ComputeConfigDescriptor has no packer_l1_acc field: the define carries it, so they must agree.
    l1acc = bool(kernel["compute_config"].get("l1_acc_enabled"))
    if l1acc != ("PACKER_L1_ACC" in kernel["defines"]):
        raise ManifestError(f"kernel {kernel['name']}: compute_config.l1_acc_enabled = {l1acc} but "
                            f"PACKER_L1_ACC is {'not ' if l1acc else ''}defined")
    fp32 = bool(kernel["compute_config"]["fp32_dest_acc_en"])
    if fp32 != ("FP32_DEST_ACC_EN" in kernel["defines"]):
        raise ManifestError(f"kernel {kernel['name']}: fp32_dest_acc_en = {fp32} disagrees with FP32_DEST_ACC_EN")


def _unpack_to_dest_mode(ttnn, marked: Mapping[str, str], arch: str, where: str) -> list:
    """ComputeConfigDescriptor.unpack_to_dest_mode: one ttnn.UnpackToDestMode per CB index of the arch
    (NUM_CIRCULAR_BUFFERS: TT's JIT requires them all), Default but where the manifest marks a CB."""
    from kgen.core.arch import load_arch

    modes = [ttnn.UnpackToDestMode.Default] * load_arch(arch).max_cbs
    for index, mode in marked.items():
        if not index.isdigit() or int(index) >= len(modes) or not hasattr(ttnn.UnpackToDestMode, mode):
            raise ManifestError(f"{where}: unpack_to_dest_mode {{{index!r}: {mode!r}}} is not a CB index of {arch} "
                                f"and a ttnn.UnpackToDestMode")
        modes[int(index)] = getattr(ttnn.UnpackToDestMode, mode)
    return modes


def program_descriptor(folder: str | Path, *, addresses: Mapping[str, int],
                       noc: Callable[[str, int], int], ttnn=None, buffers: Mapping[str, Any] | None = None):
    """The build folder as a `ttnn.ProgramDescriptor`. `addresses` maps io tensor names (in0, in1,
    bias, out) to buffer addresses; `noc(axis, logical)` gives NoC coordinates; `buffers` maps the
    sharded tensors to their buffers, on which the CBs the manifest marks `globally_allocated` sit."""
    ttnn = ttnn or _import_ttnn()
    root, m = load_manifest(folder)
    kernels = []
    for k in m["kernels"]:
        where = f"{root / 'manifest.json'}: kernel {k['name']}"
        crs = _core_range_set(ttnn, k["core_ranges"])
        if k["processor"] == "TRISC":
            _check_compute_config(k)
            cc = k["compute_config"]
            config = ttnn.ComputeConfigDescriptor(
                math_fidelity=getattr(ttnn.MathFidelity, cc["math_fidelity"]),
                math_approx_mode=bool(cc["math_approx_mode"]), fp32_dest_acc_en=bool(cc["fp32_dest_acc_en"]),
                dst_full_sync_en=bool(cc["dst_full_sync_en"]))
            if cc.get("unpack_to_dest_mode"):
                config.unpack_to_dest_mode = _unpack_to_dest_mode(ttnn, cc["unpack_to_dest_mode"], m["arch"], where)
        else:
            config = ttnn.DataMovementConfigDescriptor(
                processor=getattr(ttnn.DataMovementProcessor, k["processor"]), noc=getattr(ttnn.NOC, k["noc"]))
        runtime_args = ttnn.RuntimeArgs()
        for entry in k["runtime_args"]:
            x, y = entry["core"]
            runtime_args[x][y] = [_resolve(v, noc, addresses, where) for v in entry["args"]]
        kernels.append(ttnn.KernelDescriptor(
            kernel_source=str(root / k["source"]),
            source_type=ttnn.KernelDescriptor.SourceType.FILE_PATH,
            core_ranges=crs,
            compile_time_args=[int(v) for v in k["compile_time_args"]],
            named_compile_time_args=[(name, int(v)) for name, v in k["named_compile_time_args"].items()],
            defines=[(name, str(v)) for name, v in k["defines"].items()],
            runtime_args=runtime_args,
            common_runtime_args=[_resolve(v, noc, addresses, where) for v in k["common_runtime_args"]],
            config=config,
        ))
    cbs = []
    for cb in m["cbs"]:
        formats = [ttnn.CBFormatDescriptor(
            buffer_index=f["buffer_index"], data_format=getattr(ttnn, DATA_FORMAT_TO_DTYPE[f["data_format"]]),
            page_size=f["page_size"],
            tile=ttnn.TileDescriptor(f["tile"]["height"], f["tile"]["width"], f["tile"]["transpose"]))
            for f in cb["format_descriptors"]]
        on = cb.get("globally_allocated")
        if on is not None and (buffers is None or on not in buffers):
            raise ManifestError(f"{root / 'manifest.json'}: CB {cb['name']} is globally allocated on the {on} "
                                f"shard: its buffer is needed")
        cbs.append(ttnn.CBDescriptor(total_size=cb["total_size"], core_ranges=_core_range_set(ttnn, cb["core_ranges"]),
                                     format_descriptors=formats,
                                     **({"buffer": buffers[on]} if on is not None else {})))
    semaphores = [ttnn.SemaphoreDescriptor(id=s["id"], core_type=getattr(ttnn.CoreType, s["core_type"]),
                                           core_ranges=_core_range_set(ttnn, s["core_ranges"]),
                                           initial_value=s["initial_value"]) for s in m["semaphores"]]
    program = ttnn.ProgramDescriptor(kernels=kernels, semaphores=semaphores, cbs=cbs)
    program.custom_program_hash = int(m["custom_program_hash"])
    return program


def io_tensor_names(folder: str | Path) -> list[str]:
    """The order `ttnn.generic_op` takes the tensors in: inputs, then the output."""
    return [t["name"] for t in load_manifest(folder)[1]["io_tensors"]]


def load_program(folder: str | Path, device, tensors: Mapping[str, Any], ttnn=None):
    """`program_descriptor` with addresses from the tensors and NoC coordinates from the device."""
    ttnn = ttnn or _import_ttnn()
    addresses = {name: t.buffer_address() for name, t in tensors.items()}
    buffers = {name: t.buffer() for name, t in tensors.items() if hasattr(t, "buffer")}
    return program_descriptor(folder, addresses=addresses, noc=device_noc_coordinates(device, ttnn), ttnn=ttnn,
                              buffers=buffers)


def run(folder: str | Path, device, tensors: Mapping[str, Any], ttnn=None):
    """Run the build on a device: `tensors` maps in0, in1, [bias,] out to allocated DRAM tensors."""
    ttnn = ttnn or _import_ttnn()
    names = io_tensor_names(folder)
    missing = [n for n in names if n not in tensors]
    if missing:
        raise ManifestError(f"run needs tensors {names}; missing {missing}")
    program = load_program(folder, device, tensors, ttnn)
    return ttnn.generic_op([tensors[n] for n in names], program)
