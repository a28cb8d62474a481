"""The README and the manual as a new user runs them.

Every `kgen ...` command in the fenced code blocks of README.md and of every docs/*.md page (a new
page is picked up without a change here) is run exactly as written, through bash (so its comment
and relative paths are read as a user's shell reads them), from the root of a fresh copy of the
repository, with the test run's KGEN_CACHE_DIR (tests/conftest.py: empty but for the TT-Metal
headers). `kgen headers fetch --from-wheel FILE` is not run: it needs a 100 MB wheel on disk.
When a page changes, these tests change with it: the commands are read at collection.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, fresh_copy, need_tool  # noqa: F401 (fresh_copy: test_setup.py's too)

# Under pytest-xdist (`-n auto --dist loadgroup`) the documented commands all run on one worker, in
# one fresh copy, so a command checked by both files, or shown on two pages, still runs once.
pytestmark = pytest.mark.xdist_group("documented")

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# `VAR=value kgen ...` is a kgen command too (e.g. KGEN_DUMP=dump kgen check ...).
KGEN_LINE = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*kgen\s")


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)


def page_commands(text: str) -> list[str]:
    """Each `kgen ...` command of a page's fenced code blocks, as written (a line such as
    `bash .ci/setup && . .venv/bin/activate && kgen build X` contributes its `kgen build X` part:
    setup is .ci/run's job, and test_setup.py runs the whole line)."""
    commands = []
    for block in code_blocks(text):
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.strip()
                if KGEN_LINE.match(part):
                    commands.append(part)
    return commands


def first_line() -> str:
    """The README's first command line, whole: what a new user pastes first."""
    return next(line for line in code_blocks(README.read_text())[0].splitlines() if line.strip())


COMMANDS = [(page.relative_to(ROOT).as_posix(), c) for page in PAGES for c in page_commands(page.read_text())]
RUN = [(page, c) for page, c in COMMANDS if "--from-wheel" not in c]
README_COMMANDS = [c for page, c in COMMANDS if page == "README.md"]

# The commands that plan, print or predict take a second or two; the ones that compile, emulate,
# search or build many kernels take ten seconds to minutes, and are left out of `-m "not slow"`.
SLOW_WORDS = {"build", "emulate", "port-check", "ab", "tune", "fuzz"}


def _param(page: str, command: str):
    words = command.split("#")[0].split()
    sub = words[words.index("kgen") + 1] if len(words) > words.index("kgen") + 1 else ""
    marks = [pytest.mark.slow] if sub in SLOW_WORDS else []
    return pytest.param(command, id=f"{page}: {command.split('#')[0].strip()}", marks=marks)


def test_the_readme_has_its_commands():
    # The README's first command sets up and builds the peak example; the list must not come out
    # empty because of a parsing slip.
    assert README_COMMANDS and README_COMMANDS[0].split("#")[0].split() == ["kgen", "build",
                                                                           "examples/peak_bf16.kspec"], README_COMMANDS
    assert "bash .ci/setup" in first_line() and first_line().rstrip().split("#")[0].strip().endswith(README_COMMANDS[0].split("#")[0].strip())
    assert len(README_COMMANDS) >= 7, README_COMMANDS
    assert len(RUN) >= 20, RUN


def test_every_page_of_the_manual_is_linked_from_the_readme():
    text = README.read_text()
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in text, f"README.md does not link docs/{page.name}"


# A user's terminal: the README's commands run at 100 columns; test_terminal_width.py checks that
# run's lines and runs each command again at 80
README_WIDTH = 100
_RUNS: dict[tuple[str, int], subprocess.CompletedProcess] = {}


def shown(command: str) -> str:
    """The command as the shell runs it: without its comment."""
    return command.split("#")[0].strip()


def run_documented(command: str, width: int, clone: Path) -> subprocess.CompletedProcess:
    """`command` run as written through bash in `clone` with COLUMNS=width, once per session: a
    command shown on two pages, or checked by both test files, is the same run."""
    key = (shown(command), width)
    if key not in _RUNS:
        if shutil.which("kgen") is None:
            need_tool("the kgen command", "pip install -e . (bash .ci/setup does it)")
        env = {**os.environ, "COLUMNS": str(width)}
        env.pop("TT_METAL_HOME", None)
        _RUNS[key] = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                                    timeout=1800)
    return _RUNS[key]


@pytest.mark.parametrize("command", [_param(page, c) for page, c in RUN])
def test_command_runs_as_written(command, fresh_clone, host_toolchain, host_cxx):
    env = dict(os.environ)
    env.pop("TT_METAL_HOME", None)
    proc = run_documented(command, README_WIDTH, fresh_clone)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 0, f"`{command}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    words = command.split("#")[0].split()
    words = words[words.index("kgen"):]
    if words[:2] == ["kgen", "emulate"] and "--numerics" in words and "fast" in words:
        # what test_emulate.py's large-example test asks of a fast emulation it leaves to this run
        pcc = re.search(r"\bpcc (\d\.\d+)", proc.stdout)
        assert pcc and float(pcc.group(1)) > 0.99, proc.stdout[-2000:]
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


@pytest.mark.slow
def test_first_command_passes_with_the_default_build_folder(fresh_clone, host_toolchain):
    """The README's first kgen command again, after its build/ is removed: from the default build/,
    relative, with only the headers in the cache (the compile cache cannot make it pass)."""
    shutil.rmtree(fresh_clone / "build", ignore_errors=True)
    cache = Path(os.environ["KGEN_CACHE_DIR"])
    shutil.rmtree(cache / "compile", ignore_errors=True)
    proc = subprocess.run(["bash", "-c", README_COMMANDS[0]], cwd=fresh_clone, env=dict(os.environ),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"(type-checked|compiled) +7 kernel builds \(7 run, 0 from cache\)", proc.stdout), proc.stdout
    assert len(list((fresh_clone / "build").glob("mm_*"))) == 1


OUTPUT_FLAGS = ("-o", "--html", "--csv", "--trace", "--db", ">")


def written_paths(command: str) -> set[str]:
    """What a command writes into the folder it runs in: the paths after its output flags and
    redirections, a KGEN_DUMP folder, and the default build/."""
    words = command.split("#")[0].split()
    paths = {words[i + 1] for i, w in enumerate(words[:-1]) if w in OUTPUT_FLAGS}
    paths |= {w.split("=", 1)[1] for w in words if w.startswith("KGEN_DUMP=")}
    return paths | {"build", ".venv"}


def test_gitignore_covers_what_the_commands_write(tmp_path):
    """Every file or folder a documented command writes into the clone is git-ignored."""
    if shutil.which("git") is None:
        need_tool("git", "apt-get install git")
    written = set().union(*(written_paths(c) for _, c in COMMANDS))
    assert {"build", ".venv", "ab.html", "best.kspec"} <= written, written     # the parse found them
    shutil.copy2(ROOT / ".gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for path in written:
        if Path(path).suffix:                       # a file: ab.html, best.kspec, tune.sqlite
            (tmp_path / path).touch()
        else:                                       # a folder: build, out, .venv, dump
            (tmp_path / path).mkdir(parents=True)
            (tmp_path / path / "x").touch()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout.split("\n")
    assert [line for line in status if line and not line.endswith(".gitignore")] == []
