from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kspec"))


# ---------------------------------------------------------------------------------------------
# The user's cache is not the tests' cache. Every test run gets a new, empty KGEN_CACHE_DIR (set
# before any test or `python -m kgen` subprocess starts, so both inherit it) and removes it at the
# end. The TT-Metal headers (about 40 MB extracted from a 100 MB wheel) are not fetched again:
# the test cache's headers/<version> is a symlink to the user's tree, which kgen only reads.
# At the end the user's cache is compared with a listing taken at the start.
# ---------------------------------------------------------------------------------------------

def user_cache_dir() -> Path | None:
    """The cache a `kgen` command would use here ($KGEN_CACHE_DIR, else ~/.cache/kgen)."""
    from kgen.core.errors import KgenError
    from kgen.core.resources import cache_root

    try:
        return cache_root()
    except KgenError:
        return None


def cache_listing(root: Path | None) -> dict[str, tuple[int, int]]:
    """Every path under root (symlinks not followed) with its size and modification time."""
    listing: dict[str, tuple[int, int]] = {}
    if root is None or not root.is_dir():
        return listing
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            listing[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return listing


def session_cache(user_cache: Path | None) -> Path:
    """A new empty cache folder whose headers/<version> entries point at the user's header trees."""
    cache = Path(tempfile.mkdtemp(prefix="kgen-test-cache-"))
    user_headers = user_cache / "headers" if user_cache is not None else None
    if user_headers is not None and user_headers.is_dir():
        (cache / "headers").mkdir()
        for tree in user_headers.iterdir():
            if tree.is_dir() and not tree.name.startswith("."):   # a half-fetched .tmp is no tree
                (cache / "headers" / tree.name).symlink_to(tree.resolve(), target_is_directory=True)
    return cache


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        # A pytest-xdist worker (`-n auto`): its KGEN_CACHE_DIR is the controller's test cache, inherited
        # when the controller started it, so the workers share one cache (kgen's cache writes are atomic
        # renames) and the controller alone checks and removes it. The worker's terminal variables are
        # the controller's: xdist gives its workers COLUMNS=80 and LINES=24, which every `kgen` a test
        # starts would lay its report out for.
        for name in _TERMINAL_VARIABLES:
            value = config.workerinput.get(f"kgen_{name}")
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        return
    user_cache = user_cache_dir()
    config.stash[_USER_CACHE] = (user_cache, cache_listing(user_cache))
    config.stash[_TEST_CACHE] = session_cache(user_cache)
    os.environ["KGEN_CACHE_DIR"] = str(config.stash[_TEST_CACHE])


_TERMINAL_VARIABLES = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist's controller, starting a worker: the terminal variables the worker should see."""
    for name in _TERMINAL_VARIABLES:
        node.workerinput[f"kgen_{name}"] = os.environ.get(name)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _USER_CACHE not in session.config.stash:
        return
    user_cache, before = session.config.stash[_USER_CACHE]
    after = cache_listing(user_cache)
    names = sorted({name for name, _ in set(before.items()) ^ set(after.items())})
    if not names:
        return
    message = (f"the user's kgen cache {user_cache} changed during the test run "
               f"({len(names)} paths, e.g. {', '.join(names[:3])})")
    if os.environ.get("CI", "").lower() == "true":
        # Nothing else writes there in CI: a change is a test that escaped its temporary cache.
        session.config.stash[_CACHE_NOTE] = f"FAILED: {message}"
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        # On a shared machine another user's kgen may be writing there too: say it, do not fail.
        session.config.stash[_CACHE_NOTE] = f"WARNING: {message} (another kgen process, or a test?)"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    note = config.stash.get(_CACHE_NOTE, None)
    if note is not None:
        terminalreporter.write_line(note, red=note.startswith("FAILED"), yellow=note.startswith("WARNING"))


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = config.stash.get(_TEST_CACHE, None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)    # removes the headers symlinks, not their targets


_USER_CACHE = pytest.StashKey[tuple[Path | None, dict[str, tuple[int, int]]]]()
_TEST_CACHE = pytest.StashKey[Path]()
_CACHE_NOTE = pytest.StashKey[str]()


@pytest.fixture
def write_spec(tmp_path):
    """Write spec text to a file and return its path."""
    def write(text: str, name: str = "t.kspec") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


def words(text: str) -> str:
    """The text with each run of spaces and line breaks as one space: a phrase that a report wraps
    at the terminal's width (kgen.core.terminal) reads the same."""
    return " ".join(text.split())


def last_paragraph(text: str) -> str:
    """A command's last line, whole (its words): a report wraps a line longer than the terminal's
    width, its further lines indented, but for a path too long for the indent, which kgen.core.terminal
    moves left (to column 0 when it is as wide as the terminal: a long temporary folder)."""
    lines = text.rstrip("\n").splitlines()
    start = max(i for i, line in enumerate(lines) if not line.startswith((" ", "/")))
    return words("\n".join(lines[start:]))


def example(name: str) -> Path:
    return ROOT / "examples" / f"{name}.kspec"


def tt_kernels(plan, manifest: dict) -> dict:
    """TT-Metal's kernels in the places of kgen's, with the args the plan's factory gives them
    (Dataflow.tt_program, on the emulator's NoC coordinates): kgen kernel name -> TtKernelArgs or Metal2Kernel."""
    from kgen.proof.emu_build import emulator_config

    return dict(plan.dataflow.tt_program(plan, manifest, emulator_config()["noc"]).kernels)


def tt_factory_args(name: str, variant: str | None, tmp_path: Path):
    """An example built and planned, with the args TT-Metal's factory gives its readers and writers
    (`tt_kernels`): (plan, build folder, args)."""
    import json

    from kgen.gen.build import build
    from kgen.gen.plan import plan
    from kgen.gen.spec import load

    spec = load(example(name), variant)
    folder = build(spec, tmp_path / "build").path
    p = plan(spec)
    return p, folder, tt_kernels(p, json.loads((folder / "manifest.json").read_text()))


def assert_proved(folder: Path, plan) -> None:
    """A build folder's program emulated bit-exact against the golden model, and port-checked: TT-Metal's
    kernels beside kgen's and TT's whole program bit-identical to it, every difference explained."""
    from kgen.proof.emulate import emulate_folder
    from kgen.proof.portcheck import port_check

    e = emulate_folder(folder, plan, seed=3)
    assert e.status == "ok" and not e.hazards and e.exact_match, e.deadlock
    pc = port_check(folder, plan, seed=5)
    assert pc.theirs.status == "ok" and pc.bit_identical and pc.theirs.exact_match
    assert not pc.unexplained, pc.differences()
    assert pc.program is not None and not pc.program.hazards, pc.program_note
    assert pc.program_bit_identical and pc.program.exact_match


def need_tool(what: str, how: str) -> None:
    """A test that needs a tool: skipped with the reason on a developer machine, but a failure in
    CI (CI=true), where .ci/run installs every tool and a skip would hide a broken setup."""
    message = f"{what} not available: {how}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI=true: .ci/run should have installed it)")
    pytest.skip(message)


def fresh_copy(dest: Path) -> Path:
    """The files git tracks, as they are in the work tree (a clone plus any uncommitted edit), in a
    new folder: no build/, no .venv, nothing a developer's earlier runs left behind."""
    if shutil.which("git") is None:
        need_tool("git", "apt-get install git")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    dest.mkdir(parents=True)
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    assert not (dest / "build" / "mm_").exists()
    return dest


@pytest.fixture(scope="session")
def fresh_clone(tmp_path_factory) -> Path:
    """One fresh copy of the repository for the session's documented commands (test_readme.py,
    test_terminal_width.py), so a command's builds serve the next one as they would a user's."""
    return fresh_copy(tmp_path_factory.mktemp("clone") / "kgen")


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


@contextlib.contextmanager
def browser_env():
    """The environment to start chromium (or chromedriver) in: its temporary files, its dconf cache
    and its configuration in one short-named folder under /tmp (chromium's singleton socket path must
    stay under 108 bytes), removed after, so that no run leaves /tmp/org.chromium.Chromium.* or
    ~/.cache/dconf behind."""
    home = Path(tempfile.mkdtemp(prefix="kgen-chr-"))
    dirs = {"TMPDIR": home / "tmp", "XDG_CACHE_HOME": home / "cache", "XDG_CONFIG_HOME": home / "config"}
    for d in dirs.values():
        d.mkdir()
    try:
        yield {**os.environ, **{k: str(v) for k, v in dirs.items()}}
    finally:
        shutil.rmtree(home, ignore_errors=True)
