"""The README as a new user runs it (issue #12 §1).

Every `kgen ...` command in the README's code blocks is run exactly as written (through bash, so
its comment and relative paths are read as a user's shell reads them), from the root of a fresh
copy of the repository, with an empty KGEN_CACHE_DIR into which the TT-Metal headers are fetched
once per test run. `kgen headers fetch` lines themselves are not run (they download). When the
README changes, these tests change with it: the commands are read from README.md at collection.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, need_tool

README = ROOT / "README.md"


def readme_commands(text: str) -> list[str]:
    """Each `kgen ...` command of the README's fenced code blocks, as written (a line such as
    `bash .ci/setup && kgen build X` contributes its `kgen build X` part: setup is .ci/run's job)."""
    commands = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("kgen "):
                    commands.append(part)
    return commands


COMMANDS = readme_commands(README.read_text())
RUN = [c for c in COMMANDS if not c.startswith("kgen headers fetch")]


def test_the_readme_has_its_commands():
    # The first command of the README builds the peak example; the list must not come out empty
    # because of a parsing slip.
    assert COMMANDS and COMMANDS[0].split("#")[0].split() == ["kgen", "build", "examples/peak_bf16.kspec"], COMMANDS
    assert len(RUN) >= 10, RUN


@pytest.fixture(scope="session")
def fresh_clone(tmp_path_factory) -> Path:
    """The files git tracks, as they are in the work tree (a clone plus any uncommitted edit), in a
    new folder: no build/, no run.json, nothing a developer's earlier runs left behind."""
    if shutil.which("git") is None:
        need_tool("git", "apt-get install git")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    clone = tmp_path_factory.mktemp("clone")
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, clone / name)
    assert not (clone / "build" / "mm_").exists()
    return clone


@pytest.fixture(scope="session")
def empty_cache(tmp_path_factory) -> Path:
    """A new KGEN_CACHE_DIR with only the headers in it, fetched once per test run."""
    cache = tmp_path_factory.mktemp("kgen-cache")
    env = {**os.environ, "KGEN_CACHE_DIR": str(cache)}
    proc = subprocess.run(["kgen", "headers", "fetch"], env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        need_tool("TT-Metal headers from the ttnn wheel", proc.stderr.strip()[-500:])
    return cache


@pytest.mark.parametrize("command", RUN, ids=[c.split("#")[0].strip() for c in RUN])
def test_readme_command_runs_as_written(command, fresh_clone, empty_cache, host_toolchain, host_cxx):
    if shutil.which("kgen") is None:
        need_tool("the kgen command", "pip install -e . (bash .ci/setup does it)")
    env = {**os.environ, "KGEN_CACHE_DIR": str(empty_cache)}
    env.pop("TT_METAL_HOME", None)
    proc = subprocess.run(["bash", "-c", command], cwd=fresh_clone, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 0, f"`{command}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    words = command.split("#")[0].split()
    if words[:2] == ["kgen", "build"] and not {"--no-compile"} & set(words):
        # Built and type-checked for real: not skipped, not failed.
        assert re.search(r"(type-checked|compiled) +\d+ kernel builds", proc.stdout), proc.stdout
    if "-o" in words and words[:2] == ["kgen", "tune"]:
        # kgen tune -o writes the winner as a spec, which kgen check must take
        out = fresh_clone / words[words.index("-o") + 1]
        check = subprocess.run(["kgen", "check", str(out)], cwd=fresh_clone, env=env, capture_output=True, text=True,
                               timeout=300)
        assert out.is_file() and check.returncode == 0, check.stderr
    elif "-o" in words:
        out = fresh_clone / words[words.index("-o") + 1]
        assert out.is_dir() and any(out.iterdir()), f"-o {out} holds no build"


def test_first_command_passes_with_the_default_build_folder(fresh_clone, empty_cache, host_toolchain):
    """The README's first command again, after its build/ is removed: from the default build/,
    relative, with only the headers in the cache (the compile cache cannot make it pass)."""
    shutil.rmtree(fresh_clone / "build", ignore_errors=True)
    shutil.rmtree(empty_cache / "compile", ignore_errors=True)
    env = {**os.environ, "KGEN_CACHE_DIR": str(empty_cache)}
    proc = subprocess.run(["bash", "-c", COMMANDS[0]], cwd=fresh_clone, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"(type-checked|compiled) +7 kernel builds \(7 run, 0 from cache\)", proc.stdout), proc.stdout
    assert len(list((fresh_clone / "build").glob("mm_*"))) == 1
