from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kspec"))


@pytest.fixture
def write_spec(tmp_path):
    """Write spec text to a file and return its path."""
    def write(text: str, name: str = "t.kspec") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


def example(name: str) -> Path:
    return ROOT / "examples" / f"{name}.kspec"


def need_tool(what: str, how: str) -> None:
    """A test that needs a tool: skipped with the reason on a developer machine, but a failure in
    CI (CI=true), where .ci/run installs every tool and a skip would hide a broken setup."""
    message = f"{what} not available: {how}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI=true: .ci/run should have installed it)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def host_toolchain():
    """The toolchain kgen discovers here, required to have TT-Metal headers and the host checker."""
    from kgen.toolchain.discovery import discover

    tc = discover()
    if tc.headers is None:
        need_tool("TT-Metal headers", tc.note("headers"))
    if tc.host is None:
        need_tool("host checker", tc.note("host checker"))
    return tc


@pytest.fixture(scope="session")
def host_cxx():
    """The host C++ compiler the emulator builds kernels with."""
    from kgen.proof.emulate import find_host_compiler

    if find_host_compiler() is None:
        need_tool("host g++", "apt-get install g++")
