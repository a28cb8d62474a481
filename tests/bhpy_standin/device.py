"""A fake of blackhole-py's `device.Device` for kgen's tests of the exported module's `main`, with the
calls and the queue semantics of device.py at commit fedecbd83736607f0f563ba87956e92cdd7ad392 (the
C++-kernel runtime examples/matmul_peak.py at 010a2823354953e6ddbaa556fd1a479b3befa4af runs on): `cores`,
`alloc_write`, `dram.alloc`, `queue` (only queues), `run` (runs what is queued and returns one timing
dict per program, "us" among its keys), `dram_read` (runs what is still queued, then reads) and `close`.

No card: a run checks its Program against the dispatch stand-in and computes the product in numpy from
the written buffers into the output buffer, so the module's host side (bfloat16 conversion, padding,
bias, ReLU, PCC and relative L2) runs end to end. Every call is appended to `Device.calls` and, when
$BHPY_STANDIN_LOG names a file, to that file (one word a line), so a test run as a subprocess can see
the order of the calls. $BHPY_STANDIN_READ_SECONDS makes each read-back take that long and
$BHPY_STANDIN_RUN_SECONDS each program run, for tests of what the module times. The bias is added when
a buffer is named bias, and ReLU applied when the compute kernel defines PACK_RELU, as kgen's adapted
kernels do."""

from __future__ import annotations

import os
import time

import numpy as np

from dispatch import Dtype, Program

WORKER_COLUMNS = [1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16]
WORKER_ROWS = list(range(2, 12))


class _Buffer:
    def __init__(self, addr, shape, data, name):
        self.addr, self.shape, self.data, self.name = addr, shape, data, name


class _Dram:
    def __init__(self, device):
        self.device = device

    def alloc(self, tiles, dtype, name="", shape=None):
        assert isinstance(dtype, Dtype) and tiles * 1024 == shape[0] * shape[1]
        return self.device._new(shape, None, name)


def _seconds(name: str) -> float:
    return float(os.environ.get(name, "0") or 0)


class Device:
    calls: list[str] = []

    def __init__(self, device=None):
        self.cores = [(x, y) for x in WORKER_COLUMNS for y in WORKER_ROWS]
        self.dram = _Dram(self)
        self._buffers = []
        self._programs = []
        Device.calls = []
        self._log("open")

    def _log(self, word: str) -> None:
        Device.calls.append(word)
        if log := os.environ.get("BHPY_STANDIN_LOG"):
            with open(log, "a") as f:
                f.write(word + "\n")

    def _new(self, shape, data, name):
        b = _Buffer(0x1000 * (len(self._buffers) + 1), tuple(shape), data, name)
        self._buffers.append(b)
        return b

    def alloc_write(self, data, dtype, shape, name=""):
        assert isinstance(data, bytes) and len(data) == 2 * shape[0] * shape[1]
        return self._new(shape, data, name)

    def queue(self, program):
        assert isinstance(program, Program)
        rows, cols = program.grid
        assert all((x, y) in self.cores for x in cols for y in rows), "the Program's grid is not on this card"
        self._log("queue")
        self._programs.append(program)

    def run(self):
        self._log(f"run {len(self._programs)}")
        timings = []
        for program in self._programs:
            start = time.perf_counter()
            self._compute(program)
            time.sleep(_seconds("BHPY_STANDIN_RUN_SECONDS"))
            timings.append({"cycles": 0, "us": (time.perf_counter() - start) * 1e6, "freq_mhz": 1350,
                            "name": program.name})
        self._programs.clear()
        return timings

    def _compute(self, program):
        vals = {b.name: b for b in self._buffers}

        def f32(b):
            return (np.frombuffer(b.data, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)
        out = f32(vals["in0"]) @ f32(vals["in1"])
        if "bias" in vals:
            out = out + f32(vals["bias"])[0]
        if "#define PACK_RELU 1" in program.compute_kernel:
            out = np.maximum(out, 0)
        assert out.shape == vals["out"].shape
        vals["out"].data = (out.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()

    def dram_read(self, buffer):
        if self._programs:
            self.run()
        self._log("dram_read")
        time.sleep(_seconds("BHPY_STANDIN_READ_SECONDS"))
        assert buffer.data is not None, "read before any program wrote the output"
        return buffer.data

    def close(self):
        self._log("close")
