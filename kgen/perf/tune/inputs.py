"""`kgen tune --inputs A.npy B.npy`: the user's operands in place of seeded N(0, 1) draws, in the
accuracy proxy and in verification. Each file is checked before anything runs: a NumPy .npy
array (no pickles), real numbers, finite, not all zero, of the spec's shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kgen.gen.spec import MatmulSpec
from kgen.perf.tune.candidate import batched_in1
from kgen.perf.tune.precision import InputSource, OperandData
from kgen.perf.tune.space import TuneError

NO_FILE = "-"                    # `--inputs - B.npy`: in0 stays random
CHUNK_ROWS = 4096                # rows checked for finite values at a time (a memory-mapped file stays on disk)


def _fail(path: str, why: str) -> TuneError:
    return TuneError(f"--inputs {path}: {why}")


def _load(path: str) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise _fail(path, "no such file" if not p.exists() else "not a file")
    try:
        return np.load(p, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise _fail(path, f"not a NumPy .npy array of numbers ({exc}); save one with numpy.save") from None
    except OSError as exc:
        raise _fail(path, f"cannot read it: {exc.strerror or exc}") from None


def _check_values(path: str, values: np.ndarray) -> None:
    if not isinstance(values, np.ndarray):
        raise _fail(path, "holds several arrays (an .npz archive); save the operand alone with numpy.save")
    if values.dtype.kind not in "fiu":
        raise _fail(path, f"holds {values.dtype} values; the operand must be real numbers (float16, float32, "
                          f"float64 or integers)")
    flat = values.reshape(values.shape[0], -1) if values.ndim else values.reshape(1, 1)
    nonzero = False
    for start in range(0, flat.shape[0], CHUNK_ROWS):
        chunk = np.asarray(flat[start:start + CHUNK_ROWS])
        bad = ~np.isfinite(chunk) if values.dtype.kind == "f" else np.zeros(chunk.shape, bool)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            where = np.unravel_index(int((start + row) * flat.shape[1] + col), values.shape)
            raise _fail(path, f"holds a value that is not finite ({chunk[row, col]} at index "
                              f"{tuple(int(i) for i in where)}); the accuracy of a matmul of it is undefined")
        nonzero = nonzero or bool(np.any(chunk != 0))
        if chunk.size and np.abs(chunk.astype(np.float64)).max() > np.finfo(np.float32).max:
            raise _fail(path, "holds values beyond float32's range; the device formats cannot hold them")
    if not nonzero:
        raise _fail(path, "every value is zero: the output is zero and its PCC undefined")


def load_operand(path: str, operand: str, spec: MatmulSpec) -> OperandData:
    """One operand file, checked against the spec: in0 (M, K) (or (batch, M, K), or (batch * M,
    K)), in1 (K, N) (one per batch, (batch, K, N), where the spec has one in1 per batch; the proxy
    and the verification read batch 0's)."""
    values = _load(path)
    m, n, k, batch = spec.m, spec.n, spec.k, spec.batch
    if operand == "in0":
        shapes = [(batch * m, k)] + ([(batch, m, k)] if batch > 1 else [])
        words = f"(M, K) = ({m}, {k})" if batch == 1 else f"(batch, M, K) = ({batch}, {m}, {k}) or ({batch * m}, {k})"
    else:
        shapes = [(batch, k, n)] if batched_in1(spec) else [(k, n)]
        words = f"(batch, K, N) = ({batch}, {k}, {n})" if batched_in1(spec) else f"(K, N) = ({k}, {n})"
    if tuple(values.shape) not in shapes:
        raise _fail(path, f"has shape {tuple(values.shape)}; {spec.name}'s {operand} is {words}")
    _check_values(path, values)
    v = values.reshape(batch * m, k) if operand == "in0" else (values[0] if values.ndim == 3 else values)
    return OperandData.of(np.asarray(v, np.float32), path)


def load_inputs(spec: MatmulSpec, paths: tuple[str, str] | None, seed: int = 0) -> InputSource:
    """The `--inputs` pair ('-' for an operand left random) as an InputSource."""
    if not paths:
        return InputSource(seed=seed)
    if len(paths) != 2:
        raise TuneError(f"--inputs takes two files, A.npy (in0) and B.npy (in1), '-' for one left random; "
                        f"got {len(paths)}")
    in0, in1 = (None if p == NO_FILE else load_operand(p, name, spec) for p, name in zip(paths, ("in0", "in1")))
    if in0 is None and in1 is None:
        raise TuneError("--inputs - -: give at least one file (A.npy for in0, B.npy for in1)")
    return InputSource(in0, in1, seed)
