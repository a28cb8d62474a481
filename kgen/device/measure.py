"""Measuring a `kgen build` folder on a Tenstorrent card: the timed runs (host timing to the
device's completion, a replayed trace where ttnn has one, or TT-Metal's device profiler), the io
tensors on the card, and opening it. ttnn, torch and TT-Metal's profiler tools are imported only
when used."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from kgen.core.errors import KgenError

@dataclass(frozen=True)
class Measured:
    """On a card: the median device time over `runs` after `warmup`, and the output's PCC."""
    microseconds: float
    runs: int
    warmup: int
    timing: str                       # how the time was taken
    pcc: float | None                 # None: a constant output (undefined)


@dataclass(frozen=True)
class DeviceProfiler:
    """TT-Metal's device profiler, read the way TT's GEMM benchmark reads it (test_benchmark.py,
    get_profiler_data): with TT_METAL_DEVICE_PROFILER set, `ttnn.ReadDeviceProfiler(device)` writes
    the device-side log, tracy's `import_log_run_stats` digests it, and the figure is the mean TRISC1
    (math) kernel duration in cycles (`device_trisc1_kernel_duration`, stats "Average") at the clock
    the log records (`deviceInfo.freq`, MHz)."""

    log_path: Path
    default_setup: Callable[[], Any]
    import_log_run_stats: Callable[[Any], Mapping[str, Any]]

    def clear(self, ttnn, device) -> None:
        """Flush what the warm-up runs left in the profiler and drop the log, so that only the
        timed runs are profiled."""
        ttnn.ReadDeviceProfiler(device)
        self.log_path.unlink(missing_ok=True)

    def trisc1_microseconds(self, ttnn, device) -> float:
        ttnn.ReadDeviceProfiler(device)
        setup = self.default_setup()
        setup.deviceInputLog = self.log_path
        data = self.import_log_run_stats(setup)
        cycles = data["devices"][0]["cores"]["DEVICE"]["analysis"]["device_trisc1_kernel_duration"]["stats"]["Average"]
        return float(cycles) / float(data["deviceInfo"]["freq"])


def device_profiler(environ: Mapping[str, str] | None = None) -> DeviceProfiler | None:
    """The device profiler when it is on (TT_METAL_DEVICE_PROFILER set, as TT's benchmark checks)
    and tracy, TT-Metal's profiler tools, imports; else None (host timing)."""
    environ = os.environ if environ is None else environ
    if environ.get("TT_METAL_DEVICE_PROFILER") is None:
        return None
    try:
        from tracy import device_post_proc_config  # noqa: PLC0415 - TT-Metal's tools, device-only
        from tracy.common import PROFILER_DEVICE_SIDE_LOG, PROFILER_LOGS_DIR  # noqa: PLC0415
        from tracy.process_device_log import import_log_run_stats  # noqa: PLC0415
    except ImportError:
        return None
    return DeviceProfiler(Path(PROFILER_LOGS_DIR) / PROFILER_DEVICE_SIDE_LOG, device_post_proc_config.default_setup,
                          import_log_run_stats)


def measure_on_device(folder, tensors: Mapping[str, Any], *, device, ttnn, reference: np.ndarray,
                      read_output: Callable[[Any], np.ndarray], runs: int = 10, warmup: int = 2,
                      clock: Callable[[], float] = time.perf_counter,
                      synchronize: Callable[[], None] | None = None, trace: bool = True,
                      profiler: DeviceProfiler | None = None,
                      pcc_of: Callable[[np.ndarray, np.ndarray], float | None]) -> Measured:
    """Run a build folder with `ttnn.generic_op` (kgen.device.runtime.run) `warmup` times, then
    `runs` timed times, each timed on the host to the device's completion (`synchronize`): the
    median, and the output's PCC against the host reference (`pcc_of`, the caller's rule: None
    where it is undefined). With `trace` (and a ttnn that has the
    trace API) the program is captured once into a trace and the timed runs replay it, which takes
    the host's dispatch out of the figure (TT's GEMM benchmark measures with trace too). With the
    device `profiler` on, the figure is instead its mean TRISC1 kernel duration over the timed runs,
    the device time TT's GEMM report's device-based utilization divides by."""
    from kgen.device.runtime import run as run_on_device

    if runs < 1 or warmup < 0:
        raise ValueError("runs >= 1 and warmup >= 0")
    sync = synchronize or (lambda: ttnn.synchronize_device(device))
    out = None
    for _ in range(warmup):
        out = run_on_device(folder, device, tensors, ttnn=ttnn)
    if profiler is not None:
        profiler.clear(ttnn, device)
    sync()
    traced = trace and all(hasattr(ttnn, f) for f in ("begin_trace_capture", "end_trace_capture", "execute_trace",
                                                      "release_trace"))
    if traced:
        trace_id = ttnn.begin_trace_capture(device, cq_id=0)
        out = run_on_device(folder, device, tensors, ttnn=ttnn)
        ttnn.end_trace_capture(device, trace_id, cq_id=0)
        sync()
    times = []
    try:
        for _ in range(runs):
            start = clock()
            if traced:
                ttnn.execute_trace(device, trace_id, cq_id=0, blocking=False)
            else:
                out = run_on_device(folder, device, tensors, ttnn=ttnn)
            sync()
            times.append(clock() - start)
    finally:
        if traced:
            ttnn.release_trace(device, trace_id)
    how = "host timing of a replayed trace to synchronize" if traced else "host timing of generic_op to synchronize"
    microseconds = float(np.median(times)) * 1e6
    if profiler is not None:
        microseconds = profiler.trisc1_microseconds(ttnn, device)
        how = "device profiler: mean TRISC1 kernel duration" + (" of a replayed trace" if traced else "")
    return Measured(microseconds, runs, warmup, how, pcc_of(read_output(out), reference))


# Trace buffer the device is opened with: one traced generic_op needs a few KiB of commands.
TRACE_REGION_BYTES = 1 << 20


class NoDevice(KgenError):
    """`kgen ab --device` on a machine without a Tenstorrent card (exit 2)."""

    def __init__(self, why: str):
        super().__init__(f"--device: no Tenstorrent card to run on here ({why}); kgen ab without --device "
                         "gives the predictions and the golden model's numerics")
        self.message = str(self)


def open_device():
    """(ttnn, device), or NoDevice: ttnn not importable or no card found."""
    try:
        import ttnn  # noqa: PLC0415 - optional, device-only dependency
    except ImportError as exc:
        raise NoDevice(f"ttnn is not importable: {exc}") from None
    try:
        device = ttnn.open_device(device_id=0, trace_region_size=TRACE_REGION_BYTES)
    except Exception as exc:  # noqa: BLE001 - whatever ttnn raises when no card answers
        raise NoDevice(f"ttnn.open_device(0) failed: {exc}") from None
    return ttnn, device



def device_tensors(ttnn, device, tensors: Sequence[Any], host: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The build's io tensors (name, shape, data_format, layout, as the manifest lists them) on the
    card in their formats: `host`'s values where it has them, zeros elsewhere (the output)."""
    from kgen.device.runtime import DATA_FORMAT_TO_DTYPE

    try:
        import torch  # noqa: PLC0415 - ttnn's own dependency, present wherever ttnn is
    except ImportError as exc:
        raise NoDevice(f"torch is not importable: {exc}") from None
    out = {}
    for t in tensors:
        dtype = getattr(ttnn, DATA_FORMAT_TO_DTYPE[t.data_format])
        layout = ttnn.TILE_LAYOUT if t.layout == "TILE" else ttnn.ROW_MAJOR_LAYOUT
        data = host.get(t.name, np.zeros((int(np.prod(t.shape[:-1])), t.shape[-1]), np.float32))
        out[t.name] = ttnn.from_torch(torch.from_numpy(np.ascontiguousarray(data)), dtype=dtype, layout=layout,
                                      device=device)
    return out
