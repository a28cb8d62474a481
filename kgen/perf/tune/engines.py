"""Where `kgen tune`'s jobs run: the candidates of a group in this process or a pool of forked
workers (`CandidatePool`), and the verification jobs locally or on Ray (`Engine`)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from kgen.gen.spec import MatmulSpec
from kgen.perf.tune.space import TuneError
from kgen.perf.tune.verify import verify_spec_text


# the forked workers' state: the spec and the evaluation every chunk of candidates gets
_WORKER: dict[str, object] = {}


def _worker_init(spec: MatmulSpec, evaluate: Callable) -> None:
    from kgen.core.interrupts import worker_signals

    worker_signals()          # Ctrl-C is the parent's: no "Process ForkPoolWorker" traceback per worker
    _WORKER["spec"] = spec
    _WORKER["evaluate"] = evaluate


def _evaluate_chunk(chunk: list) -> list:
    spec, evaluate = _WORKER["spec"], _WORKER["evaluate"]
    return [evaluate(spec, c) for c in chunk]


class CandidatePool:
    """`evaluate(spec, candidate)` over chunks of candidates: in this process, or with `jobs` > 1 in
    as many forked workers (fork: the spec and `evaluate` reach them without pickling). A context
    manager: an exception (an interrupt among them) stops the workers at once."""

    def __init__(self, spec: MatmulSpec, evaluate: Callable, jobs: int = 1):
        self._spec = spec
        self._evaluate = evaluate
        self._pool = None
        if jobs > 1:
            import multiprocessing
            self._pool = multiprocessing.get_context("fork").Pool(jobs, _worker_init, (spec, evaluate))

    def map(self, chunks: list[list]) -> Iterable[list]:
        """Each chunk's outcomes, in the order of the chunks."""
        if self._pool is not None:
            return self._pool.imap(_evaluate_chunk, chunks)
        return ([self._evaluate(self._spec, c) for c in chunk] for chunk in chunks)

    def __enter__(self) -> "CandidatePool":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._pool is None:
            return
        if exc_type is not None:
            self._pool.terminate()            # an interrupt stops the workers now
        else:
            self._pool.close()
            self._pool.join()
        self._pool = None


def require_ray():
    """The ray module, or exit 2 saying how to get it."""
    try:
        import ray
    except ImportError:
        raise TuneError("--engine ray needs Ray, which is not installed; install it with "
                        "pip install 'kgen[ray]' (or pip install ray), or use --engine local") from None
    return ray


def cluster_runtime_env() -> dict:
    """What a Ray cluster's workers need to import this kgen: an installed kgen ships its package
    (its configs/ and templates/ are inside, kgen/_data); a source checkout ships the checkout's
    kgen/, configs/ and templates/ as the job's working_dir (Ray puts it on the workers' path).
    The C++ toolchain and TT-Metal headers are each node's own (`bash .ci/setup`)."""
    from kgen.core.resources import data_dir

    package = Path(__file__).resolve().parents[2]     # kgen/
    if (package / "_data").is_dir():
        return {"py_modules": [str(package)]}
    root = data_dir("configs").parent
    return {"working_dir": str(root),
            "excludes": [".git", ".hypothesis", ".pytest_cache", "build", "benchmarks", "tests", "examples",
                         "**/__pycache__"]}


class Engine:
    """Runs verification jobs: `local` (in this process, one after another) or `ray`."""

    def __init__(self, name: str = "local", address: str | None = None, workers: int | None = None):
        self.name = name
        if name == "ray":
            ray = require_ray()
            import os
            address = address or os.environ.get("RAY_ADDRESS") or None
            try:
                if not ray.is_initialized():
                    if address:
                        ray.init(address=address, log_to_driver=False, runtime_env=cluster_runtime_env())
                    else:
                        # address="local": a new local Ray of its own, even when a cluster already
                        # runs on this machine (ray.init would join it, and refuse num_cpus)
                        ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                                 log_to_driver=False)
            except Exception as exc:  # noqa: BLE001 - Ray's own connection errors
                where = f"the Ray cluster at {address}" if address else "a local Ray"
                raise TuneError(f"cannot start or reach {where}: {exc}") from None
            self._ray = ray
            self._remote = ray.remote(verify_spec_text)
        elif name != "local":
            raise TuneError(f"--engine {name!r}: expected local or ray")

    def run(self, texts: list[str], numerics: str = "auto") -> Iterator[tuple[int, dict]]:
        """(index, result) for every text, as results arrive."""
        if self.name == "local":
            for i, t in enumerate(texts):
                yield i, verify_spec_text(t, numerics)
            return
        ray = self._ray
        futures = {self._remote.remote(t, numerics): i for i, t in enumerate(texts)}
        pending = list(futures)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for f in ready:
                yield futures[f], ray.get(f)
