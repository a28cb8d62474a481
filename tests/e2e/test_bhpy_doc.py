"""docs/blackhole-py.md as a user runs it: every `kgen` command in its code block exits 0, the README
links the page, and the exported module runs as the page says, from a blackhole-py-shaped checkout."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PAGE = ROOT / "docs" / "blackhole-py.md"


def _commands() -> list[str]:
    block = PAGE.read_text().split("```", 2)[1]
    return [line for line in block.splitlines() if line.startswith("kgen ")]


def test_readme_links_the_page():
    assert "docs/blackhole-py.md" in (ROOT / "README.md").read_text()
    assert "# Porting to blackhole-py" in PAGE.read_text()


@pytest.mark.parametrize("command", _commands())
def test_every_command_runs(command, tmp_path):
    argv = shlex.split(command)[1:]
    argv = [str(tmp_path / "build") if a == "build" and i > 0 and argv[i - 1] == "-o" else a for i, a in enumerate(argv)]
    jobs = ["-j", "1"] if argv[0] in ("emulate", "port-check") else []
    r = subprocess.run([sys.executable, "-m", "kgen", *argv, *jobs],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    if argv[0] == "build":
        assert list((tmp_path / "build").glob("*-blackhole-py/blackhole_py_program.py"))
    elif argv[0] == "ab":
        assert "predicted" in r.stdout and "full L1-acc lifecycle" in r.stdout and "matmul_tiles" in r.stdout
    else:
        assert "bit-exact" in r.stdout or "bit-identical" in r.stdout


# ---------------------------------------------------------------------------------------------
# The export run as the page says, from a folder laid out as a blackhole-py checkout: its top-level
# dispatch.py and device.py are kgen's stand-ins (tests/bhpy_standin), examples/ beside them.
# ---------------------------------------------------------------------------------------------

STANDIN = ROOT / "tests" / "bhpy_standin"
READ_SECONDS = 2.0           # the stand-in's read-back takes this long: in the time, it would show


def _run_block() -> list[str]:
    """The shell lines of the code block under "## Running the export"."""
    section = PAGE.read_text().split("## Running the export", 1)[1]
    return [line for line in section.split("```", 2)[1].splitlines() if line.strip()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A kgen build folder of the page's first spec and a blackhole-py-shaped checkout, apart."""
    tmp = tmp_path_factory.mktemp("bhpy-run")
    build = tmp / "kgen" / "build"
    r = subprocess.run([sys.executable, "-m", "kgen", "build", "examples/bhpy_padded.kspec", "--target",
                        "blackhole-py", "-o", str(build), "--no-compile"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    folder, = build.glob("*-blackhole-py")
    checkout = tmp / "blackhole-py"
    (checkout / "examples").mkdir(parents=True)
    for name in ("dispatch.py", "device.py"):
        shutil.copy(STANDIN / name, checkout / name)
    bin_dir = tmp / "bin"                        # `python3` in the page's command is this test's Python
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    return folder, checkout, bin_dir


def _shell(lines: list[str], folder: Path, checkout: Path, bin_dir: Path, tmp_path: Path, **env_extra):
    """Run the lines with the page's placeholders replaced by the real folders; returns the result and
    the stand-in's call log."""
    script = "\n".join(line.replace("path/to/kgen/build/<kernel-id>-blackhole-py", str(folder))
                       .replace("path/to/blackhole-py", str(checkout)) for line in lines)
    assert "path/to" not in script and "<kernel-id>" not in script, script
    log = tmp_path / "calls.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BLACKHOLE_PY")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", BHPY_STANDIN_LOG=str(log),
               BHPY_STANDIN_READ_SECONDS=str(READ_SECONDS), **env_extra)
    r = subprocess.run(["bash", "-ec", script], capture_output=True, text=True, cwd=tmp_path, env=env)
    return r, log.read_text().split("\n")[:-1] if log.exists() else []


def _check_run(r, calls: list[str], iters: int) -> None:
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ModuleNotFoundError" not in r.stderr
    assert "PCC=" in r.stdout and "rel_l2=" in r.stdout
    # one untimed run, then the timed runs, then the read-back, once, after them
    assert calls == ["open", "queue", "run 1", *["queue"] * iters, f"run {iters}", "dram_read", "close"], calls
    wall = float(r.stdout.split(" us per run, host wall-clock")[0].split()[-1])
    assert wall < 1e6 * READ_SECONDS / iters, r.stdout           # the read-back is not in the time
    assert "median of the" in r.stdout


def test_the_page_runs_the_export_from_a_blackhole_py_checkout(exported, tmp_path):
    folder, checkout, bin_dir = exported
    lines = _run_block()
    assert lines[0] == "cd path/to/blackhole-py" and lines[1].startswith("python3 ")
    iters = int(lines[1].split("--iters")[1].split()[0])
    r, calls = _shell(lines, folder, checkout, bin_dir, tmp_path)
    _check_run(r, calls, iters)


@pytest.mark.parametrize("how", ["PYTHONPATH=.", "BLACKHOLE_PY"])
def test_the_other_documented_ways_run_too(how, exported, tmp_path):
    folder, checkout, bin_dir = exported
    cd, run = _run_block()
    if how == "PYTHONPATH=.":                    # blackhole-py's own way of running its examples
        lines = [cd, f"PYTHONPATH=. {run}"]
        assert "`PYTHONPATH=. python3 ...` from the checkout works" in " ".join(PAGE.read_text().split())
        r, calls = _shell(lines, folder, checkout, bin_dir, tmp_path)
    else:                                        # from any folder, the checkout named
        r, calls = _shell([run], folder, checkout, bin_dir, tmp_path, BLACKHOLE_PY=str(checkout))
    _check_run(r, calls, int(run.split("--iters")[1].split()[0]))


def test_outside_a_checkout_it_says_how_to_run_it(exported, tmp_path):
    folder, checkout, bin_dir = exported
    r, calls = _shell([_run_block()[1]], folder, checkout, bin_dir, tmp_path)
    assert r.returncode != 0 and not calls
    assert "not a blackhole-py checkout" in r.stderr and "BLACKHOLE_PY=" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_build_readme_gives_the_same_command(exported):
    folder, _, _ = exported
    readme = (folder / "README.md").read_text()
    block = readme.split("## Run", 1)[1].split("```", 2)[1]
    assert [line.strip() for line in block.splitlines() if line.strip()] == [
        "cd path/to/blackhole-py", "python3 path/to/this/folder/blackhole_py_program.py --iters 5"]
    assert _run_block()[1].endswith("/blackhole_py_program.py --iters 5")
