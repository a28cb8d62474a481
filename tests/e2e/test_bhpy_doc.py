"""docs/blackhole-py.md as a user runs it: every `kgen` command in its code block exits 0, and the
README links the page."""

from __future__ import annotations

import shlex
import subprocess
import sys

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
