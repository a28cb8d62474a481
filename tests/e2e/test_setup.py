""".ci/setup, the README's first step.

Most tests run it against stand-ins for python3, apt-get, sudo, id and kgen: on a fresh machine
(kgen not installed, so `pip show kgen` exits 1) it makes the virtualenv, installs kgen and fetches
the headers; an editable kgen of another existing clone is repointed only when the user or CI says
so. The last test runs the README's first line for real under an externally-managed Python.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT, need_tool

STUB_PYTHON = """#!/bin/sh
echo "python3 $*" >> "$STUB_LOG"
if [ "$1" = "-c" ]; then
  case "$2" in *ensurepip*) [ -z "$STUB_NO_ENSUREPIP" ]; exit $?;; esac
  echo /stub/prefix; exit 0
fi
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python3" && cp "$STUB_RECORDER" "$3/bin/kgen"; exit 0
fi
if [ "$1 $2 $3" = "-m pip show" ]; then
  if [ -z "$STUB_KGEN_AT" ]; then echo "WARNING: Package(s) not found: kgen" >&2; exit 1; fi
  printf 'Name: kgen\\nEditable project location: %s\\n' "$STUB_KGEN_AT"; exit 0
fi
exit 0
"""
STUB_RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$STUB_LOG"
"""
STUB_ID = """#!/bin/sh
if [ "$1" = "-u" ]; then echo "${STUB_UID:-0}"; else exec /usr/bin/id "$@"; fi
"""


def _setup(tmp_path: Path, make_venv: bool = True, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run .ci/setup with the stand-ins first on PATH and KGEN_VENV in tmp_path. With make_venv the
    virtualenv already exists (its python3 and kgen are stand-ins too)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("python3", STUB_PYTHON), ("kgen", STUB_RECORDER), ("apt-get", STUB_RECORDER),
                       ("sudo", STUB_RECORDER), ("id", STUB_ID)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    venv = tmp_path / "venv"
    if make_venv:
        (venv / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(bin_dir / "python3", venv / "bin" / "python3")
        shutil.copy2(bin_dir / "kgen", venv / "bin" / "kgen")
    log = tmp_path / "log"
    log.write_text("")
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "KGEN_SETUP_REPOINT", "VIRTUAL_ENV")}
    full_env = {**base, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log), "STUB_KGEN_AT": "",
                "STUB_RECORDER": str(bin_dir / "kgen"), "KGEN_VENV": str(venv), **env}
    run = subprocess.run(["bash", str(ROOT / ".ci" / "setup")], capture_output=True, text=True, env=full_env,
                         stdin=subprocess.DEVNULL, timeout=120)
    return run, log.read_text().splitlines()


def test_fresh_machine_installs_kgen_and_fetches_headers(tmp_path):
    run, calls = _setup(tmp_path)
    assert run.returncode == 0, run.stderr
    assert any(c.startswith("python3 -m pip install") and "-e .[test]" in c for c in calls), calls
    assert "kgen headers fetch" in calls and "kgen doctor" in calls


def test_a_user_run_makes_the_virtualenv_and_installs_into_it(tmp_path):
    run, calls = _setup(tmp_path, make_venv=False)
    venv = tmp_path / "venv"
    assert run.returncode == 0, run.stderr
    assert f"python3 -m venv {venv}" in calls, calls
    assert (venv / "bin" / "python3").is_file()
    assert f". {venv}/bin/activate" in run.stdout          # setup says how to enter it
    # pip runs in the virtualenv: the stand-in logs the same name, so look at which python ran
    assert any(c.startswith("python3 -m pip install") for c in calls)


def test_debian_without_python3_venv_gets_it_with_sudo_as_a_user(tmp_path):
    run, calls = _setup(tmp_path, make_venv=False, STUB_NO_ENSUREPIP="1", STUB_UID="1000")
    assert run.returncode == 0, run.stderr
    assert any(c.startswith("sudo apt-get install") and c.endswith("python3-venv") for c in calls), calls
    assert calls.index(next(c for c in calls if c.endswith("python3-venv"))) < calls.index(
        f"python3 -m venv {tmp_path / 'venv'}")


def test_as_root_apt_runs_without_sudo(tmp_path):
    run, calls = _setup(tmp_path, make_venv=False, STUB_NO_ENSUREPIP="1", STUB_UID="0")
    assert run.returncode == 0, run.stderr
    assert any(c.startswith("apt-get install") and c.endswith("python3-venv") for c in calls), calls
    assert not any(c.startswith("sudo ") for c in calls), calls


def test_ci_installs_into_the_python3_it_finds(tmp_path):
    run, calls = _setup(tmp_path, make_venv=False, CI="true")
    assert run.returncode == 0, run.stderr
    assert not any("-m venv" in c for c in calls) and not (tmp_path / "venv").exists()
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


# ---------------------------------------------------------------------------------------------
# The README's first line under an externally-managed Python (PEP 668), for real.
#
# pip refuses to install into an interpreter whose stdlib folder (sysconfig "stdlib") holds a file
# EXTERNALLY-MANAGED, unless it runs inside a virtualenv (sys.prefix != sys.base_prefix): there it
# ignores the marker. So the test cannot reproduce the refusal from the interpreter the tests run
# in when that is a virtualenv, nor by dropping a marker into one. It uses a base interpreter that
# carries the marker: Debian's own /usr/bin/python3 where it is externally managed (stock Debian 12),
# else a throwaway copy of the base interpreter of this Python: a new prefix whose bin/ holds a
# copy of the executable and whose lib/pythonX.Y/ links every entry of the real stdlib, plus the
# marker (nothing of the machine's Python is changed). Either way the test first shows that this
# interpreter's pip really refuses, then runs the line, with no CI variable, as a user pastes it.
# ---------------------------------------------------------------------------------------------

REFUSAL = "externally-managed-environment"


def _pip_refuses(python: Path) -> bool:
    proc = subprocess.run([str(python), "-m", "pip", "install", "--dry-run", "--no-index", "kgen-nothing"],
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PIP_BREAK_SYSTEM_PACKAGES")})
    return proc.returncode != 0 and REFUSAL in proc.stderr


def _throwaway_managed_python(root: Path) -> Path:
    """A copy of the base interpreter in a new prefix whose stdlib folder carries the marker."""
    base_exe = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    stdlib = Path(sysconfig.get_path("stdlib", vars={"installed_base": sys.base_prefix,
                                                     "base": sys.base_prefix})).resolve()
    prefix = root / "managed-python"
    (prefix / "bin").mkdir(parents=True)
    exe = prefix / "bin" / "python3"
    shutil.copy2(base_exe, exe)
    libdir = prefix / "lib"
    libdir.mkdir()
    for so in stdlib.parent.glob("libpython*"):         # a shared libpython found through $ORIGIN/../lib
        (libdir / so.name).symlink_to(so)
    new_stdlib = libdir / stdlib.name
    new_stdlib.mkdir()
    for entry in stdlib.iterdir():
        if entry.name != "EXTERNALLY-MANAGED":
            (new_stdlib / entry.name).symlink_to(entry)
    (new_stdlib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=a throwaway copy for kgen's test\n")
    return exe


def _managed_python(tmp_path: Path) -> Path:
    debian = Path("/usr/bin/python3")
    if debian.is_file() and _pip_refuses(debian):
        return debian
    exe = _throwaway_managed_python(tmp_path)
    if not _pip_refuses(exe):
        need_tool("an externally-managed Python", "neither /usr/bin/python3 nor a marked copy makes pip refuse")
    return exe


@pytest.mark.slow
def test_the_readme_first_line_works_where_python_is_externally_managed(tmp_path):
    from test_readme import first_line, fresh_copy

    python = _managed_python(tmp_path)
    assert _pip_refuses(python)          # the premise: installing into this python3 is refused
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(python)
    clone = fresh_copy(tmp_path / "clone")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "VIRTUAL_ENV", "KGEN_VENV", "PYTHONPATH", "PIP_BREAK_SYSTEM_PACKAGES")}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    line = first_line()
    proc = subprocess.run(["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1800)
    assert proc.returncode == 0, f"`{line}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert REFUSAL not in proc.stderr
    assert re.search(r"(type-checked|compiled) +7 kernel builds", proc.stdout), proc.stdout[-3000:]
    # kgen went into the clone's virtualenv, built from this clone
    assert (clone / ".venv" / "bin" / "kgen").is_file()
    where = subprocess.run([str(clone / ".venv" / "bin" / "python3"), "-c", "import kgen; print(kgen.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.stdout.strip() == str(clone / "kgen" / "__init__.py"), where


# ---------------------------------------------------------------------------------------------
# The tests leave the user's cache alone (tests/conftest.py gives each run its own cache).
# ---------------------------------------------------------------------------------------------

# Tests that write every kind of cache entry: builds, compiled templates, the compile cache, the
# emulator's binaries and kernels, the tune database.
CACHE_WRITERS = [
    "tests/e2e/test_cli.py::test_emulate_shows_progress_on_a_terminal_and_nothing_otherwise",
    "tests/e2e/test_tune_cli.py::test_written_spec_plans_as_the_winner",
    "tests/e2e/test_readme.py::test_first_command_passes_with_the_default_build_folder",
]


@pytest.mark.slow
def test_a_test_run_leaves_the_users_cache_unchanged(tmp_path):
    from conftest import cache_listing

    session_cache = Path(os.environ["KGEN_CACHE_DIR"])
    user_cache = tmp_path / "user-cache"
    (user_cache / "headers").mkdir(parents=True)
    # the user's headers, as the test run found them (read-only links, as conftest makes them)
    for tree in (session_cache / "headers").glob("*") if (session_cache / "headers").is_dir() else ():
        (user_cache / "headers" / tree.name).symlink_to(tree.resolve(), target_is_directory=True)
    (user_cache / "builds").mkdir()
    (user_cache / "builds" / "a-user-build.txt").write_text("the user's own build\n")
    before = cache_listing(user_cache)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["KGEN_CACHE_DIR"] = str(user_cache)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *CACHE_WRITERS],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]
    assert cache_listing(user_cache) == before
    assert "the user's kgen cache" not in proc.stdout          # conftest's own check agrees
