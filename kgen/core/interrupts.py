"""Stopping cleanly: SIGINT, SIGTERM and SIGHUP unwind the stack like Ctrl-C, so that every
`with` block (temporary folders, open devices, pools) runs its exit, and scratch folders carry
their owner's pid so that one left by a killed process (SIGKILL, a Ray worker torn down) is
removed by the next run.

- `terminating_as_exception()`: in the CLI's main, SIGTERM and SIGHUP raise `Terminated`, which,
  like KeyboardInterrupt, is no `Exception`: no `except Exception` swallows it.
- `worker_signals()`: the initializer of a pool worker. The parent alone handles Ctrl-C (a
  worker that raised KeyboardInterrupt too prints a "Process ForkPoolWorker" traceback), and
  SIGTERM is the pool's own way to stop a worker, so it keeps its default action there.
- `scratch(prefix)`: a temporary folder removed on success, failure and every signal above.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

# The conventional exit status of a process stopped by a signal: 128 + its number.
EXIT_INTERRUPTED = 128 + signal.SIGINT       # 130
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived; unwinds the stack as KeyboardInterrupt does for SIGINT."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raise_terminated(signum: int, frame) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminating_as_exception() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Terminated` inside the block (main thread only; elsewhere a no-op)."""
    try:
        previous = {s: signal.signal(s, _raise_terminated) for s in TERMINATING}
    except ValueError:                 # not the main thread: signals are not ours to take
        yield
        return
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def worker_signals() -> None:
    """For a pool worker: ignore SIGINT (the parent handles Ctrl-C), default SIGTERM/SIGHUP."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for s in TERMINATING:
        signal.signal(s, signal.SIG_DFL)


_SCRATCH = re.compile(r"kgen-[a-z]+(?:-[a-z]+)*-p(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:            # someone else's live process
        return True
    return True


def sweep_stale(parent: Path | None = None) -> None:
    """Remove the scratch folders of processes that no longer exist (killed before they could)."""
    parent = Path(parent or tempfile.gettempdir())
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        m = _SCRATCH.match(entry.name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Signals that arrive inside the block are delivered when it ends: a folder is made and
    recorded, or removed, whole (a handler raising halfway would leave it behind)."""
    held = {signal.SIGINT, *TERMINATING}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def remove_tree(path: Path) -> None:
    """shutil.rmtree that a signal cannot cut short."""
    with _signals_held():
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A temporary folder `<prefix>-p<pid>-XXXX`, removed when the block ends however it ends."""
    sweep_stale(parent)
    base = Path(parent or tempfile.gettempdir())
    path: Path | None = None
    try:
        # the name is recorded before the folder is made, so that a signal raising at any point
        # after the mkdir still finds it here (masking the signal does not hold it off in a process
        # with other threads: one of them takes it, and the main thread raises at once)
        for _ in range(100):
            path = base / f"{prefix}-p{os.getpid()}-{os.urandom(4).hex()}"
            try:
                path.mkdir(mode=0o700)
                break
            except FileExistsError:
                path = None
        else:
            raise FileExistsError(f"no free name for a {prefix} folder in {base}")
        yield path
    finally:
        if path is not None:
            remove_tree(path)
