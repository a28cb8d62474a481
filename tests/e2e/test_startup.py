"""What `kgen check` and `kgen build` import and cache, so that they start quickly (issue 42, item 7).

The timing itself is a benchmark, not a test (benchmarks/startup.py: check <= 6x and build <= 8x
`python3 -c pass`, bytecode cached). These check the causes: a command imports only what it needs
(pyelftools only when there is an ELF to read, jinja2 only to render), and the spec parser's tables
come from kgen's cache after the first run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT, example


def imported_by(argv: list[str], cache: str) -> tuple[int, set[str]]:
    """The exit code of `kgen ARGV` in a fresh process, and which of the heavy modules it imported."""
    code = ("import json, sys\n"
            "from kgen.cli import main\n"
            f"rc = main({argv!r})\n"
            "heavy = ('elftools', 'jinja2', 'numpy', 'rich')\n"
            "print(json.dumps([rc, sorted(m for m in heavy if m in sys.modules)]))\n")
    env = {**os.environ, "KGEN_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    rc, heavy = json.loads(out.splitlines()[-1])
    return rc, set(heavy)


def test_check_imports_no_renderer_no_elf_reader_no_numpy(tmp_path):
    rc, heavy = imported_by(["check", str(example("peak_bf16"))], str(tmp_path / "cache"))
    assert rc == 0 and not heavy, heavy


def test_build_without_compiling_imports_no_elf_reader(tmp_path):
    rc, heavy = imported_by(["build", str(example("peak_bf16")), "--no-compile", "-o", str(tmp_path / "out")],
                            str(tmp_path / "cache"))
    assert rc == 0 and "elftools" not in heavy and "numpy" not in heavy, heavy


def test_the_spec_parser_is_cached_and_parses_the_same(tmp_path, monkeypatch):
    from kgen.gen import spec_syntax

    cache = tmp_path / "cache"
    code = ("import sys; from kgen.gen.spec import load_file\n"
            f"print(repr(load_file({str(example('peak_bf16'))!r})))\n")
    env = {**os.environ, "KGEN_CACHE_DIR": str(cache)}
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60, check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1]
    files = list((cache / "parser").iterdir())
    assert len(files) == 1 and files[0].suffix == ".lark" and files[0].stat().st_size > 0, files
    # the file is named by the grammar (and lark's and Python's versions): an edited grammar gets another
    grammar = (spec_syntax.Path(spec_syntax.__file__).parent / "kspec.lark").read_text()
    monkeypatch.setenv("KGEN_CACHE_DIR", str(cache))
    assert spec_syntax._parser_cache_file(grammar) == files[0]
    assert spec_syntax._parser_cache_file(grammar + "\n// edited\n") != files[0]


def test_an_unusable_cache_leaves_the_parser_uncached(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = f"from kgen.gen.spec import load_file; load_file({str(example('peak_small'))!r}); print('ok')"
    for cache in (str(blocker), str(blocker / "below"), "/proc/kgen-cache"):
        env = {**os.environ, "KGEN_CACHE_DIR": cache}
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", (cache, proc.stderr)
