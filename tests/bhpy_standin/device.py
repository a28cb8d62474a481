"""A fake of blackhole-py's `device.Device` for kgen's tests of the exported module's `main`: the
calls examples/matmul_peak.py (commit 010a2823354953e6ddbaa556fd1a479b3befa4af) makes
(cores, alloc_write, dram.alloc, queue, dram_read, close). No card: `queue` checks the Program against
the dispatch stand-in and computes the product in numpy from the written buffers, so the module's
host side (bfloat16 conversion, padding, bias, ReLU, PCC and relative L2) runs end to end."""

from __future__ import annotations

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

    def alloc(self, tiles, dtype, name, shape):
        assert isinstance(dtype, Dtype) and tiles * 1024 == shape[0] * shape[1]
        return self.device._new(shape, None, name)


class Device:
    relu = False
    queued = 0

    def __init__(self):
        self.cores = [(x, y) for x in WORKER_COLUMNS for y in WORKER_ROWS]
        self.dram = _Dram(self)
        self._buffers = []

    def _new(self, shape, data, name):
        b = _Buffer(0x1000 * (len(self._buffers) + 1), tuple(shape), data, name)
        self._buffers.append(b)
        return b

    def alloc_write(self, data, dtype, shape, name):
        assert isinstance(data, bytes) and len(data) == 2 * shape[0] * shape[1]
        return self._new(shape, data, name)

    def queue(self, program):
        assert isinstance(program, Program)
        Device.queued += 1
        self._program = program

    def dram_read(self, buffer):
        vals = {b.name: b for b in self._buffers}

        def f32(b):
            return (np.frombuffer(b.data, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)
        out = f32(vals["in0"]) @ f32(vals["in1"])
        if "bias" in vals:
            out = out + f32(vals["bias"])[0]
        if Device.relu:
            out = np.maximum(out, 0)
        assert vals["out"] is buffer and out.shape == buffer.shape
        return (out.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()

    def close(self):
        pass
