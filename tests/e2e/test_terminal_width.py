"""Every command's report fits the terminal (issue #42): each `kgen ...` command that README.md and
docs/*.md show, run as written with COLUMNS=80 and COLUMNS=100, prints no line wider than that,
but for a word that no line can hold (a long path, a URL), which then stands on a line of its own.

The commands run in test_readme.py's fresh copy of the repository, through its run_documented: the
run at 100 columns is the one test_readme.py checks (a command is run once per width in a session),
and the one at 80 reuses its builds and compiled kernels; the ones that compile, emulate, search or
build many kernels are marked slow, as in test_readme.py. JSON output (`--json`) and
`kgen ir` (the IR listing, also the build folder's ir.txt) are not reports and are left out, and so
are the commands test_readme.py leaves out or that need a network or Ray. The rules of the wrapping
itself are tested on kgen.core.terminal directly, and `check` and `perf` on every example in-process.
"""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, ROOT
from test_readme import RUN, SLOW_WORDS, run_documented

from kgen.cli import main
from kgen.core import terminal

# Under pytest-xdist (`-n auto --dist loadgroup`) the documented commands all run on one worker, in
# one fresh copy, so a command checked by both files, or shown on two pages, still runs once.
pytestmark = pytest.mark.xdist_group("documented")

WIDTHS = (80, 100)
NOT_REPORTS = ("--json", "kgen ir ", "headers fetch", "--engine ray")


def overflow(text: str, width: int) -> list[str]:
    """The lines of `text` wider than `width`, but for a line that holds one word longer than the
    width (with a shell command's closing ` \\`, if it has one): no line could hold it."""
    bad = []
    for line in text.splitlines():
        if len(line) <= width:
            continue
        word = line.removesuffix(" \\")
        if len(word.split()) == 1 and len(word.strip()) + len(line) - len(word) > width:
            continue
        bad.append(line)
    return bad


def _documented() -> list:
    seen, params = set(), []
    for page, command in RUN:
        shown = command.split("#")[0].strip()
        if shown in seen or any(word in f"{shown} " for word in NOT_REPORTS) or ">" in shown:
            continue
        seen.add(shown)
        words = shown.split()
        sub = words[words.index("kgen") + 1]
        marks = [pytest.mark.slow] if sub in SLOW_WORDS else []
        params += [pytest.param(shown, width, id=f"{width}: {shown}", marks=marks) for width in WIDTHS]
    return params


def test_the_documented_commands_are_found():
    # a parsing slip must not leave the test with nothing to run
    shown = {p.values[0].split()[1] for p in _documented()}
    assert {"check", "perf", "doctor", "build", "emulate", "port-check", "ab", "tune", "fuzz"} <= shown, shown


@pytest.mark.parametrize("command, width", _documented())
def test_a_documented_command_fits_the_width(command, width, fresh_clone, host_toolchain, host_cxx):
    proc = run_documented(command, width, fresh_clone)
    assert proc.returncode == 0, f"`{command}` exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip(), command
    assert not overflow(proc.stdout, width), "\n".join(overflow(proc.stdout, width))


@pytest.mark.parametrize("width", WIDTHS)
def test_doctor_and_build_without_headers_fit_the_width(width, tmp_path, monkeypatch, capsys):
    """The longest lines kgen had: the missing pieces with the commands that get them, and the
    INCOMPLETE last line naming what could not run."""
    from kgen.toolchain.discovery import discover

    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("TT_METAL_HOME", raising=False)
    monkeypatch.delenv("KGEN_SFPI_ROOT", raising=False)
    discover.cache_clear()
    try:
        assert main(["doctor", "--sfpi", str(tmp_path)]) == 4
        assert main(["build", str(ROOT / "examples" / "peak_small.kspec"), "-o", str(tmp_path / "out")]) == 4
    finally:
        discover.cache_clear()
    out = capsys.readouterr().out
    assert "INCOMPLETE" in out and "kgen headers fetch" in out
    assert not overflow(out, width), "\n".join(overflow(out, width))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["check", "perf"])
def test_check_and_perf_fit_the_width_on_every_example(command, width, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(width))
    for spec in EXAMPLES:
        assert main([command, str(spec)]) == 0, spec
        out = capsys.readouterr().out
        assert not overflow(out, width), f"{spec.name}:\n" + "\n".join(overflow(out, width))


# ----------------------------------------------------------------------------------------------
# kgen.core.terminal's rules
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("columns, expected", [("80", 80), ("100", 100), ("250", 250), ("30", terminal.MIN_WIDTH),
                                               ("", 100), ("wide", 100), ("0", 100), ("-5", 100), ("99999", 100)])
def test_the_width_is_columns_within_its_bounds(columns, expected, monkeypatch):
    # under pytest stdout is no terminal: without a usable COLUMNS the width is the default, 100
    monkeypatch.setenv("COLUMNS", columns)
    assert terminal.width() == expected


def test_a_terminal_wider_than_100_columns_gets_100(monkeypatch):
    import os

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", lambda fd: os.terminal_size((180, 50)))
    assert terminal.width() == terminal.MAX_WIDTH
    monkeypatch.setattr(os, "get_terminal_size", lambda fd: os.terminal_size((72, 50)))
    assert terminal.width() == 72


def test_wrap_breaks_between_words_and_keeps_the_spaces_written():
    text = "max_abs_err 2.188  max_rel_err 4.698  pcc 0.999956 " * 4
    lines = terminal.wrap(text, 60, "  vs float64 ")
    assert all(len(line) <= 60 for line in lines)
    assert lines[0].startswith("  vs float64 max_abs_err 2.188  max_rel_err")
    assert all(line.startswith(" " * 13) for line in lines[1:])
    assert " ".join(" ".join(lines).split()) == " ".join(("vs float64 " + text).split())


def test_a_word_longer_than_a_line_stands_alone_ending_at_the_margin():
    path = "/cache/" + "x" * 80 + "/kernel.cpp"                   # 98 characters
    lines = terminal.key_value("reference", f"the kernel {path} as given", 100, key_width=9)
    assert lines == ["  reference  the kernel", f"  {path}", "             as given"]
    lines = terminal.paragraph(f"from {path[:89]}", 100, " " * 13)    # 89: fits from column 11, not 13
    assert lines == [" " * 13 + "from", f"           {path[:89]}"]
    longer = "/" + "y" * 120
    lines = terminal.key_value("reference", longer, 100, key_width=9)
    assert lines == ["  reference", f"             {longer}"]    # longer than any line: its own, in its column


def test_products_equations_and_kgen_commands_are_never_split():
    text = "the plan takes Mt x Nt x Kt = 8 x 8 x 32 tiles; get them with: kgen headers fetch now"
    for width in range(30, 90):
        joined = "\n".join(terminal.wrap(text, width))
        assert "Mt x Nt x Kt = 8 x 8 x 32" in joined and "kgen headers fetch" in joined, (width, joined)


def test_a_last_lone_word_takes_its_neighbour_along():
    # greedy filling would leave `iiii` alone on the last line
    lines = terminal.wrap("aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii", 40)
    assert lines == ["aaaa bbbb cccc dddd eeee ffff gggg", "hhhh iiii"]


def test_a_shell_command_pastes_back_whole():
    url = "https://example.com/" + "z" * 70 + ".txz"
    lines = terminal.command(f"mkdir -p /opt/x && curl -fsSL {url} | tar -xJ -C /opt/x", 100, " " * 26)
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    assert all(line.startswith("    ") and len(line) <= 100 for line in lines)
    joined = " ".join(line.removesuffix(" \\").strip() for line in lines)
    assert joined == f"mkdir -p /opt/x && curl -fsSL {url} | tar -xJ -C /opt/x"


def test_a_table_wraps_headers_then_its_last_column_never_a_number():
    columns = [terminal.Column("processor", ["TRISC0 unpack", "BRISC"]),
               terminal.Column("busy cycles", ["1,156,736", "387,355"], numeric=True),
               terminal.Column("stall cycles", ["1,117,172", "1,886,552"], numeric=True),
               terminal.Column("busy by kind", ["unpack 1,147,904, sync 8,832", "dram 302,553, noc 83,887"])]
    wide = terminal.table(columns, 100)
    assert len(wide) == 3 and wide[0].split() == ["processor", "busy", "cycles", "stall", "cycles", "busy", "by", "kind"]
    narrow = terminal.table(columns, 60)
    assert all(len(line) <= 60 for line in narrow)
    assert any(line.rstrip().endswith("1,886,552") or "1,886,552 " in line for line in narrow)
    # right-aligned numbers end in one column
    ends = {line.index("1,117,172") + 9 for line in narrow if "1,117,172" in line}
    ends |= {line.index("1,886,552") + 9 for line in narrow if "1,886,552" in line}
    assert len(ends) == 1


def test_a_table_no_narrowing_fits_splits_repeating_the_columns_that_name_a_row():
    rows = [("trisc0/unpack", "compute", "64", "6537", "268416", "1081346-1081717", "2238483"),
            ("brisc", "in1_receiver_writer", "56", "517", "3696", "2220988-2220992", "2324212")]
    headers = ("processor", "kernel", "cores", "ops/core", "stalls", "stall cycles", "max cycles")
    columns = [terminal.Column(h, [r[i] for r in rows], numeric=i >= 2) for i, h in enumerate(headers)]
    lines = terminal.table(columns, 60, keys=2)
    assert all(len(line) <= 60 for line in lines)
    parts = "\n".join(lines).split("\n\n")
    assert len(parts) >= 2
    for part in parts:                      # each part names its rows, and every figure is in one part
        assert part.splitlines()[-2].split()[:2] == ["trisc0/unpack", "compute"]
    for figure in ("6537", "268416", "1081346-1081717", "2324212"):
        assert sum(figure in part for part in parts) == 1, figure
