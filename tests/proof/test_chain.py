"""The chain after rendering: its step table, the missing-tool policy every caller applies, and
temporary folders that go away on every kind of exit (the signals tested on a real `python -m
kgen` process, as a user's Ctrl-C or a batch system's SIGTERM / SIGHUP reaches it)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import last_paragraph
from kgen.core.interrupts import scratch, sweep_stale
from kgen.gen.pipeline import run
from kgen.gen.spec import load_file, resolve
from kgen.proof import chain
from kgen.proof.chain import EXIT_INCOMPLETE, ChainOptions, ChainStep, Step, run_chain
from tests.conftest import ROOT, example


def _artifacts(name: str = "peak_small"):
    return run(resolve(load_file(example(name))), "rendered")


def test_the_steps_are_one_ordered_table_after_rendered():
    assert chain.STEP_NAMES == ("built", "typechecked", "emulated", "portchecked")
    assert list(chain.TT_METAL.steps) == ["typechecked", "emulated", "portchecked"]
    with pytest.raises(ValueError):
        run_chain(_artifacts(), "linked")
    with pytest.raises(ValueError):
        run_chain(_artifacts(), skip={"built"})


def test_a_step_is_a_frozen_value():
    s = Step.skipped("typechecked", "no headers")
    with pytest.raises(AttributeError):
        s.status = "ok"  # type: ignore[misc]
    assert (s.status, s.detail) == ("skipped", "no headers")


def test_a_missing_tool_is_skipped_and_makes_the_verdict_incomplete(tmp_path, monkeypatch):
    """The one policy: the step that needs a missing tool is skipped with the reason, and the chain
    is then incomplete (EXIT_INCOMPLETE), never passed; a step not asked for is not reported."""
    monkeypatch.setattr(chain, "missing_for_emulation", lambda: "no host g++ (test)")
    result = run_chain(_artifacts(), "emulated", skip={"typechecked"}, options=ChainOptions(root=tmp_path))
    assert [s.name for s in result.steps] == ["built", "emulated"]
    assert result.step("built").status == "ok" and result.step("emulated").status == "skipped"
    assert result.verdict == "incomplete" and result.exit_code == EXIT_INCOMPLETE
    last = result.last_line("kgen emulate")
    assert "INCOMPLETE" in last and "not emulated: no host g++ (test)" in last


def test_a_failed_step_stops_the_chain(tmp_path):
    calls = []
    target = dataclasses.replace(chain.TT_METAL, steps={
        "typechecked": ChainStep(lambda s: calls.append("t") or Step.failed("typechecked", "bad")),
        "emulated": ChainStep(lambda s: calls.append("e") or Step.ok("emulated", "fine"))})
    result = run_chain(_artifacts(), "emulated", options=ChainOptions(root=tmp_path), target=target)
    assert calls == ["t"] and result.verdict == "failed" and result.exit_code == 1
    assert result.last_line("kgen build") == "kgen build: FAILED at type-checked"


def test_scratch_folders_go_on_error_and_stale_ones_are_swept(tmp_path):
    with pytest.raises(RuntimeError):
        with scratch("kgen-test", tmp_path) as path:
            (path / "x").write_text("x")
            raise RuntimeError
    assert not path.exists()
    # a folder of a process that no longer exists (killed with SIGKILL) is removed by the next run
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"kgen-emulate-p{dead.pid}-abc"
    stale.mkdir()
    mine = tmp_path / f"kgen-emulate-p{os.getpid()}-abc"
    mine.mkdir()
    sweep_stale(tmp_path)
    assert not stale.exists() and mine.exists()


def test_a_signal_that_arrives_as_the_scratch_folder_is_made_removes_it(tmp_path, monkeypatch):
    """A signal right after the folder's mkdir (a busy machine's window) must take the folder with it."""
    from kgen.core.interrupts import Terminated, terminating_as_exception

    made = []
    real_mkdir = os.mkdir

    def mkdir_then_signalled(path, mode=0o777, **kwargs):
        real_mkdir(path, mode, **kwargs)
        made.append(Path(path))
        os.kill(os.getpid(), signal.SIGTERM)          # delivered before mkdir returns to scratch
        time.sleep(1)

    monkeypatch.setattr(os, "mkdir", mkdir_then_signalled)
    with terminating_as_exception(), pytest.raises(Terminated):
        with scratch("kgen-test", tmp_path):
            time.sleep(5)                             # not reached: the signal unwinds first
    monkeypatch.undo()
    assert made and not made[0].exists()
    assert not list(tmp_path.iterdir())


def _as_in_a_terminal() -> None:
    """Give the child the signal dispositions of a command typed at a terminal. A test runner started
    in the background (`cmd &`, nohup) ignores SIGINT, its children inherit that, and Python then
    installs no KeyboardInterrupt handler: kgen would rightly ignore the Ctrl-C these tests send."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _kgen(args, tmpdir: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmpdir))
    return subprocess.Popen([sys.executable, "-m", "kgen", *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)


def _wait_for(tmpdir: Path, pattern: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not list(tmpdir.glob(pattern)):
        assert proc.poll() is None, f"kgen ended before {pattern} appeared: {proc.communicate()}"
        assert time.monotonic() < end, f"no {pattern} in {timeout} s"
        time.sleep(0.01)


SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]


def _signal_leaves_nothing(tmp_path, argv, folders, signum, code):
    """Run kgen, send `signum` once each of `folders` exists, and check the exit code, that no
    traceback was printed and that no kgen-* folder is left."""
    proc = _kgen(argv, tmp_path)
    try:
        for pattern in folders:
            _wait_for(tmp_path, pattern, proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, (out, err)
    assert "Traceback" not in err, err
    assert not list(tmp_path.glob("kgen-*")), list(tmp_path.iterdir())


@pytest.mark.parametrize("signum,code", SIGNALS, ids=[s.name for s, _ in SIGNALS])
def test_emulate_removes_its_temporary_folder_on_a_signal(tmp_path, host_cxx, signum, code):
    # Many schedules keep the run going well past the moment its folder appears.
    _signal_leaves_nothing(tmp_path, ["emulate", example("peak_small"), "--schedules", "200", "-j", "1"],
                           ["kgen-emulate-*"], signum, code)


@pytest.mark.parametrize("signum,code", SIGNALS, ids=[s.name for s, _ in SIGNALS])
def test_fuzz_removes_its_temporary_folders_on_a_signal(tmp_path, host_cxx, signum, code):
    # the fuzz folder, then a case's emulation inside it
    _signal_leaves_nothing(tmp_path, ["fuzz", "--count", "50", "--seed", "7", "--no-typecheck", "-j", "1"],
                           ["kgen-fuzz-*", "kgen-emulate-*"], signum, code)


def test_ctrl_c_during_a_parallel_tune_prints_one_line_not_a_traceback_per_worker(tmp_path):
    """A terminal's Ctrl-C reaches the whole foreground process group, the pool workers too: only
    the parent reports it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    # a search of ~20 s on two processes: a million candidates sampled, and the 256 best kept, so
    # the bound prunes little (with the default 5 it can end within the 4 s below on a quiet machine)
    proc = subprocess.Popen([sys.executable, "-m", "kgen", "tune", example("wh_mlp_11008"), "--space", "all",
                             "--allow-precision", "-j", "2", "--no-db", "--top", "256"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_as_in_a_terminal)
    try:
        time.sleep(4)
        assert proc.poll() is None, "the search ended before the interrupt"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    # the parent's one line, after the search's own progress lines (stderr is no terminal here)
    lines = err.strip().splitlines()
    assert lines[-1] == "kgen: interrupted", err
    assert all(line.startswith("kgen tune: search: ") for line in lines[:-1]), err


def test_doctor_ends_with_whether_build_emulate_and_port_check_can_run(host_toolchain, host_cxx, capsys):
    from kgen.cli import main

    assert main(["doctor"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "kgen doctor: kgen build, emulate and port-check can all run here"


def test_fuzz_without_headers_says_so_in_its_last_line(host_cxx, capsys, monkeypatch):
    from kgen.cli import main

    monkeypatch.setattr(chain, "missing_for_typecheck", lambda tc, mode: "no TT-Metal headers (test)")
    assert main(["fuzz", "--count", "1", "--seed", "3"]) == EXIT_INCOMPLETE
    last = last_paragraph(capsys.readouterr().out)
    assert "INCOMPLETE" in last and "type-check not run: no TT-Metal headers (test)" in last, last
    assert "passed" not in last
