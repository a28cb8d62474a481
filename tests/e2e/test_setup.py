""".ci/setup, the README's first step, run against stand-ins for python3, apt-get and kgen: on a fresh
machine (kgen not installed, so `pip show kgen` exits 1) it installs kgen and fetches the headers;
an editable kgen of another existing clone is repointed only when the user or CI says so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import ROOT

STUB_PYTHON = """#!/bin/sh
echo "python3 $*" >> "$STUB_LOG"
if [ "$1" = "-c" ]; then echo /stub/prefix; exit 0; fi
if [ "$1 $2 $3" = "-m pip show" ]; then
  if [ -z "$STUB_KGEN_AT" ]; then echo "WARNING: Package(s) not found: kgen" >&2; exit 1; fi
  printf 'Name: kgen\\nEditable project location: %s\\n' "$STUB_KGEN_AT"; exit 0
fi
exit 0
"""
STUB_RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$STUB_LOG"
"""


def _setup(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("python3", STUB_PYTHON), ("kgen", STUB_RECORDER), ("apt-get", STUB_RECORDER),
                       ("sudo", STUB_RECORDER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    log.write_text("")
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "KGEN_SETUP_REPOINT")}
    full_env = {**base, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log), "STUB_KGEN_AT": "", **env}
    run = subprocess.run(["bash", str(ROOT / ".ci" / "setup")], capture_output=True, text=True, env=full_env,
                         stdin=subprocess.DEVNULL, timeout=120)
    return run, log.read_text().splitlines()


def test_fresh_machine_installs_kgen_and_fetches_headers(tmp_path):
    run, calls = _setup(tmp_path)
    assert run.returncode == 0, run.stderr
    assert any(c.startswith("python3 -m pip install") and "-e .[test]" in c for c in calls), calls
    assert "kgen headers fetch" in calls and "kgen doctor" in calls


def test_another_existing_clone_is_not_repointed_silently(tmp_path):
    other = tmp_path / "other-clone"
    other.mkdir()
    run, calls = _setup(tmp_path, STUB_KGEN_AT=str(other))
    assert run.returncode == 1
    assert str(other) in run.stderr and "KGEN_SETUP_REPOINT=1" in run.stderr
    assert not any("pip install" in c for c in calls)


def test_repointed_when_asked_or_in_ci_or_when_the_clone_is_gone(tmp_path):
    other = tmp_path / "other-clone"
    other.mkdir()
    for env in ({"STUB_KGEN_AT": str(other), "KGEN_SETUP_REPOINT": "1"}, {"STUB_KGEN_AT": str(other), "CI": "true"},
                {"STUB_KGEN_AT": str(tmp_path / "deleted-clone")}):
        run, calls = _setup(tmp_path, **env)
        assert run.returncode == 0, (env, run.stderr)
        assert "repointing" in run.stdout and any("pip install" in c for c in calls)


def test_already_installed_here_is_no_repoint(tmp_path):
    run, calls = _setup(tmp_path, STUB_KGEN_AT=str(ROOT))
    assert run.returncode == 0 and "repointing" not in run.stdout
    assert any("pip install" in c for c in calls)
