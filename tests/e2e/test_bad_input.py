"""Bad user input to `kgen check`: every mistake gives exit code 2 and one clear error, never a
traceback.

Errors about the spec text read `kgen: PATH:LINE:COL: error: MESSAGE`, then the source line with a
caret under the offending text, then often `hint: ...`. Errors about the file itself (missing,
directory, binary, empty, unreadable) have no LINE:COL.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, words
from kgen.cli import main

EXAMPLES_DIR = ROOT / "examples"
EXAMPLE_TEXTS = [p.read_text() for p in sorted(EXAMPLES_DIR.glob("*.kspec"))]

# A valid spec with one key per line, so that each test can point at a line.
BASE = """\
matmul t {
    arch     = wormhole_b0
    shape    = 256 x 256 x 1024
    batch    = 1
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid     = 2 x 2
    dataflow = mcast_2d
    block {
        in0_block_w  = 4
        out_subblock = auto
        per_core     = auto
    }
    compute = peak_hifi2
    untilize_out = false
    variants {
        spill { compute.packer_l1_acc = false }
    }
}
"""

LOCATED = re.compile(r"kgen: (?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)")
GUTTER = re.compile(r" *\d+ \| ")
CARET = re.compile(r"( *)(\^~*)")


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------

def edit(text: str, *changes: tuple[str, str]) -> str:
    """Apply exact, unique replacements (so a typo in a test cannot silently change nothing)."""
    for old, new in changes:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
        text = text.replace(old, new)
    return text


def bullets(report: str) -> list[str]:
    """Each `  - ...` item of a report, whole (its words), however the report wrapped it."""
    items: list[str] = []
    for line in report.splitlines():
        if line.lstrip().startswith("- "):
            items.append(line)
        elif items and line.startswith("    "):
            items[-1] += "\n" + line
    return [words(item) for item in items]


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in the spec")


def invoke(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse
        return exc.code if isinstance(exc.code, int) else 2


def check(capsys, path: Path | str, *extra: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = invoke(["check", str(path), *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def check_text(capsys, tmp_path: Path, text: str, *extra: str, name: str = "t.kspec"):
    path = tmp_path / name
    path.write_text(text)
    rc, out, err = check(capsys, path, *extra)
    return path, rc, out, err


def caret(err: str) -> tuple[int, str] | None:
    """(1-based column, text under the caret) of the rendered source line, or None."""
    lines = err.splitlines()
    for i in range(1, len(lines)):
        m = CARET.fullmatch(lines[i])
        g = GUTTER.match(lines[i - 1])
        if m and g:
            source = lines[i - 1][g.end():]
            start = len(m.group(1)) - g.end()
            return start + 1, source[start:start + len(m.group(2))]
    return None


def hint_of(err: str) -> str | None:
    return next((ln[len("hint: "):] for ln in err.splitlines() if ln.startswith("hint: ")), None)


def assert_no_crash(rc: int, out: str, err: str) -> None:
    assert "Traceback" not in err and "Traceback" not in out, err
    assert rc == 2, f"exit code {rc}, expected 2; stderr:\n{err}"
    assert err.startswith("kgen: "), err
    assert out == "", f"nothing should reach stdout on an error, got:\n{out}"


def assert_spec_error(rc: int, out: str, err: str, path: Path, *, line: int | None = None,
                      under: str | None = None, message: tuple[str, ...] = (), hint: tuple[str, ...] | None = None,
                      has_caret: bool = True) -> re.Match:
    """An error about the spec text: PATH:LINE:COL prefix, caret under the text, optional hint."""
    assert_no_crash(rc, out, err)
    first = err.splitlines()[0]
    m = LOCATED.fullmatch(first)
    assert m, f"no `PATH:LINE:COL: error:` prefix in:\n{err}"
    assert m["path"] == str(path), err
    if line is not None:
        assert int(m["line"]) == line, f"error on line {m['line']}, expected line {line}:\n{err}"
    for needle in message:
        assert needle in m["msg"], f"{needle!r} not in the message:\n{err}"
    if has_caret:
        c = caret(err)
        assert c is not None, f"no source line with a caret under it:\n{err}"
        col, text = c
        assert col == int(m["col"]), f"caret at column {col}, the location says {m['col']}:\n{err}"
        if under is not None:
            assert text == under, f"caret under {text!r}, expected {under!r}:\n{err}"
    if hint is not None:
        h = hint_of(err)
        assert h is not None, f"no `hint:` line:\n{err}"
        for needle in hint:
            assert needle in h, f"{needle!r} not in the hint:\n{err}"
    assert err.count(" error: ") == 1, f"one error expected:\n{err}"
    return m


def assert_file_error(rc: int, out: str, err: str, path: Path | str, *message: str) -> None:
    """An error about the file itself: `kgen: PATH: error: ...`, no LINE:COL, one message."""
    assert_no_crash(rc, out, err)
    first = err.splitlines()[0]
    assert first.startswith(f"kgen: {path}: error: "), f"expected `kgen: {path}: error:` in:\n{err}"
    assert not LOCATED.fullmatch(first), err
    for needle in message:
        assert needle in first, f"{needle!r} not in:\n{err}"
    assert err.count(" error: ") == 1, f"one error expected:\n{err}"


def test_base_spec_is_valid(capsys, tmp_path):
    _, rc, _, err = check_text(capsys, tmp_path, BASE)
    assert rc == 0, err


# ----------------------------------------------------------------------------------------------
# 1. Malformed syntax
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,needle,under,message,hint", [
    # missing `=` before a number / dimensions: the parser points at the value
    ("in0_block_w  = 4", "in0_block_w  4", "in0_block_w  4", "4", ("unexpected '4'",), ("key = value",)),
    ("grid     = 2 x 2", "grid     2 x 2", "grid     2 x 2", "2 x 2", ("unexpected '2 x 2'",), ("key = value",)),
    # stray characters
    ("grid     = 2 x 2", "grid     = 2 x 2 @", "@", "@", ("unexpected character '@'",), ("#",)),
    ("grid     = 2 x 2", "grid     = 2 x 2;", ";", ";", ("unexpected character ';'",), ("#",)),
    ("grid     = 2 x 2", "grid     = 2 \u00d7 2", "\u00d7", "\u00d7", ("unexpected character",), ()),
    ("batch    = 1", "batch    = 1!", "1!", "!", ("unexpected character '!'",), ()),
    # a `}` where a value belongs
    ("batch    = 1", "batch    = }", "batch", "}", ("unexpected '}'",), ("'}'",)),
])
def test_syntax_error_points_at_the_text(capsys, tmp_path, old, new, needle, under, message, hint):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, needle), under=under, message=message, hint=hint)


# A shape written the way people say it: the grammar splits such a value into pieces, and the
# hint must name what is wrong with the value (not a missing `=` or a named block).
@pytest.mark.parametrize("shape,message,hint,not_hint", [
    ("2k x 3k x 1k", ("unit suffix", "2k"), ("2048",), "missing `=`"),
    ("64 x 96 x 32 tiles", ("word", "tiles", "after the value"), ("elements", "M x N x K", "2048 x 3072 x 1024"),
     "tiles {"),
    ("2048.5 x 256 x 256", ("2048.5", "not a whole number"), ("whole numbers",), "key = value"),
    ("2048 x 256.5 x 256", ("256.5", "not a whole number"), ("whole numbers",), "key = value"),
])
def test_a_shape_with_a_suffix_word_or_fraction_says_what_is_wrong(capsys, tmp_path, shape, message, hint,
                                                                  not_hint):
    text = edit(BASE, ("shape    = 256 x 256 x 1024", f"shape    = {shape}"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "shape"), message=message, hint=hint)
    assert not_hint not in err, err


def test_a_word_after_the_last_value_of_a_group_says_what_is_wrong(capsys, tmp_path):
    text = edit(BASE, ("untilize_out = false\n", "untilize_out = false\n    batch = 1 tiles\n"),
                ("    batch    = 1\n", ""))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "1 tiles"), message=("`tiles`", "after the value"),
                      hint=("batch = 1",))


def test_missing_equals_before_a_word_value_is_an_error(capsys, tmp_path):
    text = edit(BASE, ("arch     = wormhole_b0", "arch     wormhole_b0"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path)


def test_missing_equals_before_a_word_value_points_at_that_line(capsys, tmp_path):
    text = edit(BASE, ("arch     = wormhole_b0", "arch     wormhole_b0"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=2, hint=("=",))


def test_missing_closing_brace(capsys, tmp_path):
    text = BASE.rstrip()[:-1].rstrip() + "\n"        # drop the matmul's closing `}`
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=len(text.splitlines()), message=("ends too early", "'}'"),
                      hint=("'}'",))


def test_missing_closing_brace_of_a_group(capsys, tmp_path):
    text = edit(BASE, ("        per_core     = auto\n    }\n", "        per_core     = auto\n"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, message=("ends too early",), hint=("'}'",))


def test_missing_closing_brace_then_blank_line_still_shows_a_caret(capsys, tmp_path):
    text = BASE.rstrip()[:-1].rstrip() + "\n\n"
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, message=("ends too early",), hint=("'}'",))


def test_stray_closing_brace(capsys, tmp_path):
    text = BASE + "}\n"
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=len(text.splitlines()), under="}", message=("unexpected '}'",),
                      hint=("'}'",))


def test_assignment_outside_the_matmul_block(capsys, tmp_path):
    text = "arch = blackhole\n" + BASE
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=1, message=("inside a `matmul NAME",))


def test_matmul_without_a_name(capsys, tmp_path):
    text = edit(BASE, ("matmul t {", "matmul {"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=1, under="matmul", message=("needs a name",))


def test_two_matmul_blocks(capsys, tmp_path):
    text = BASE + BASE.replace("matmul t", "matmul u")
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "matmul u"), message=("more than one matmul",),
                      hint=("own file",))


def test_a_file_with_only_a_compute_block(capsys, tmp_path):
    text = "compute c { math_fidelity = HiFi2 }\n"
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=1, message=("no `matmul NAME",), hint=("examples",))


# ----------------------------------------------------------------------------------------------
# 2. Unknown keys, blocks and groups
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,under,message,hint", [
    ("in0_block_w  = 4", "in0_blok_w  = 4", "in0_blok_w", "unknown key", "in0_block_w"),
    ("dataflow = mcast_2d", "dataflw = mcast_2d", "dataflw", "unknown key", "dataflow"),
    ("out_subblock = auto", "out_sub_block = auto", "out_sub_block", "unknown key", "out_subblock"),
    ("in1 = bfloat16", "in_1 = bfloat16", "in_1", "unknown key", "in1"),
    ("compute.packer_l1_acc = false", "compute.packer_l1_ac = false", "compute.packer_l1_ac", "unknown key",
     "packer_l1_acc"),
    ("dataflow = mcast_2d", "fusion { bias = true }", "fusion", "unknown group `fusion`", "fuse"),
    ("dataflow = mcast_2d", "dtypes { out = bfloat16 }", "dtypes", "unknown group `dtypes`", "dtype"),
])
def test_unknown_key_suggests_the_nearest(capsys, tmp_path, old, new, under, message, hint):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, under), under=under, message=(message,),
                      hint=("did you mean", hint))


def test_unknown_top_level_block(capsys, tmp_path):
    text = BASE + "matmull x { }\n"
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "matmull"), under="matmull",
                      message=("unknown block `matmull`",), hint=("matmul",))


def test_unknown_top_level_block_without_a_close_match(capsys, tmp_path):
    text = "kernel k { }\n" + BASE
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=1, under="kernel", message=("unknown block `kernel`",),
                      hint=("matmul", "compute"))


def test_unknown_key_in_a_compute_block(capsys, tmp_path):
    text = "compute c { math_fidelty = HiFi2 }\n" + BASE
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=1, under="math_fidelty", message=("unknown key",),
                      hint=("math_fidelity",))


def test_group_nested_in_a_group_is_an_error(capsys, tmp_path):
    text = edit(BASE, ("dataflow = mcast_2d", "block { block { in0_block_w = 4 } }"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "block { block"), message=("cannot nest inside `block`",))


def test_group_nested_in_a_group_has_a_useful_hint(capsys, tmp_path):
    text = edit(BASE, ("dataflow = mcast_2d", "block { block { in0_block_w = 4 } }"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, hint=())
    h = hint_of(err)
    assert h and not h.rstrip().endswith(":"), f"empty list in the hint:\n{err}"


# ----------------------------------------------------------------------------------------------
# 3. Wrong types
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,under,message,hint", [
    # quotes
    ("in0_block_w  = 4", 'in0_block_w  = "4"', '"4"', ("expected a positive whole number",), ("without quotes",)),
    ("arch     = wormhole_b0", 'arch     = "wormhole_b0"', '"wormhole_b0"', ("expected one of",),
     ("wormhole_b0",)),
    ("dataflow = mcast_2d", "dataflow = 'reuse'", "'reuse'", ("expected one of",), ("reuse",)),
    # decimals
    ("in0_block_w  = 4", "in0_block_w  = 4.5", "4.5", ("expected a positive whole number",), ("whole numbers",)),
    ("batch    = 1", "batch    = 1.0", "1.0", ("expected a positive whole number",), ("whole numbers",)),
    ("shape    = 256 x 256 x 1024", "shape    = 256.5", "256.5", ("M x N x K",), ("whole numbers",)),
    # a word where a number is needed
    ("in0_block_w  = 4", "in0_block_w  = four", "four", ("expected a positive whole number or auto",), None),
    ("batch    = 1", "batch    = auto", "auto", ("expected a positive whole number",), None),
    ("grid     = 2 x 2", "grid     = big", "big", ("x (columns) by y (rows)",), None),
    # a number where true/false is needed
    ("untilize_out = false", "untilize_out = 1", "1", ("expected true or false",), ("true or false",)),
    ("untilize_out = false", "untilize_out = yes", "yes", ("expected true or false",), ()),
    ("untilize_out = false", "untilize_out = True", "True", ("expected true or false",), ("true",)),
    # dims where a single number is needed, and the reverse
    ("in0_block_w  = 4", "in0_block_w  = 4 x 2", "4 x 2", ("expected a positive whole number",), None),
    ("batch    = 1", "batch    = 2 x 0", "2 x 0", ("every dimension must be positive",), None),
    ("grid     = 2 x 2", "grid     = 8", "8", ("x (columns) by y (rows)", "4 x 4"), None),
    ("per_core     = auto", "per_core     = 4", "4", ("M x N tiles",), None),
    ("shape    = 256 x 256 x 1024", "shape    = 256 x 256", "256 x 256", ("expected 3 numbers",), ("4 x 4 x 4",)),
    ("grid     = 2 x 2", "grid     = 2 x 2 x 2", "2 x 2 x 2", ("expected 2 numbers",), ("4 x 4",)),
    # a number or misspelt word where a name is needed
    ("compute = peak_hifi2", "compute = 3", "3", ("name of a compute config",), None),
    ("dataflow = mcast_2d", "dataflow = mcast2d", "mcast2d", ("expected one of",), ("mcast_2d",)),
    ("out = bfloat16", "out = bfloat8", "bfloat8", ("expected one of",), ("bfloat8_b",)),
    ("arch     = wormhole_b0", "arch     = wormhole", "wormhole", ("expected one of",), ("wormhole_b0",)),
    ("compute = peak_hifi2", "compute { math_fidelity = HiFi5 }", "HiFi5", ("expected one of",), ("HiFi4",)),
])
def test_wrong_type(capsys, tmp_path, old, new, under, message, hint):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, new.strip()), under=under, message=message, hint=hint)


def test_wrong_type_in_a_variant_is_reported_when_the_variant_is_chosen(capsys, tmp_path):
    text = edit(BASE, ("compute.packer_l1_acc = false", "compute.packer_l1_acc = maybe"))
    path, rc, out, err = check_text(capsys, tmp_path, text, "--variant", "spill")
    assert_spec_error(rc, out, err, path, line=line_of(text, "maybe"), under="maybe",
                      message=("expected true or false",))


def test_wrong_type_in_a_variant_fails_check(capsys, tmp_path):
    text = edit(BASE, ("compute.packer_l1_acc = false", "compute.packer_l1_acc = maybe"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "maybe"), under="maybe",
                      message=("expected true or false",))


def test_wrong_type_in_a_used_compute_block(capsys, tmp_path):
    text = "compute c {\n    fp32_dest_acc = 1\n}\n" + edit(BASE, ("compute = peak_hifi2", "compute = c"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=2, under="1", message=("expected true or false",))


def test_wrong_type_in_an_unused_compute_block(capsys, tmp_path):
    text = "compute c {\n    fp32_dest_acc = 1\n}\n" + BASE
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=2, under="1", message=("expected true or false",))


# ----------------------------------------------------------------------------------------------
# 4. Missing required fields
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,key,hint", [
    ("    arch     = wormhole_b0\n", "", "arch", ("arch = ...",)),
    ("    shape    = 256 x 256 x 1024\n", "", "shape", ("shape = ...",)),
    ("  out = bfloat16 ", " ", "dtype.out", ("out = ...", "dtype")),
    ("in0 = bfloat16  ", "", "dtype.in0", ("in0 = ...", "dtype")),
    ("    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }\n", "", "dtype.in0", ("dtype",)),
])
def test_missing_required_key(capsys, tmp_path, old, new, key, hint):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=1, under="matmul", message=(f"missing the required key `{key}`",),
                      hint=hint)


# ----------------------------------------------------------------------------------------------
# 5. Contradictory values and TT-Metal rules
# ----------------------------------------------------------------------------------------------

def test_in0_block_w_not_dividing_kt(capsys, tmp_path):
    text = edit(BASE, ("in0_block_w  = 4", "in0_block_w  = 5"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "in0_block_w"), under="5",
                      message=("does not divide Kt = 32",), hint=("nearest legal values", "4", "8"))


def test_out_subblock_not_dividing_out_block(capsys, tmp_path):
    text = edit(BASE, ("out_subblock = auto", "out_subblock = 3 x 2"), ("per_core     = auto", "per_core     = 4 x 4"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "out_subblock"), under="3 x 2",
                      message=("out_subblock_h = 3 does not divide out_block_h = 4",),
                      hint=("nearest legal values", "2", "4"))


def test_out_subblock_larger_than_dst(capsys, tmp_path):
    text = edit(BASE, ("out_subblock = auto", "out_subblock = 4 x 4"), ("per_core     = auto", "per_core     = 4 x 4"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "out_subblock"), under="4 x 4",
                      message=("16 tiles", "DST holds 8"), hint=("nearest legal values", "4 x 2"))


def test_out_subblock_larger_than_fp32_dst(capsys, tmp_path):
    text = edit(BASE, ("out_subblock = auto", "out_subblock = 4 x 2"), ("per_core     = auto", "per_core     = 4 x 4"),
                ("compute = peak_hifi2", "compute = peak_hifi2\n    compute { fp32_dest_acc = true }"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "out_subblock"), under="4 x 2",
                      message=("8 tiles", "DST holds 4", "Float32"), hint=("nearest legal values", "2 x 2"))


def test_per_core_needs_more_cores_than_the_grid(capsys, tmp_path):
    text = edit(BASE, ("per_core     = auto", "per_core     = 1 x 1"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "per_core"), under="1 x 1",
                      message=("needs 8 cores", "grid has 2"), hint=("nearest legal values", "4"))


def test_per_core_needing_more_rows_than_the_grid(capsys, tmp_path):
    # per_core need not divide Mt (TT-Metal pads the last row of cores), but ceil(8 / 3) = 3 rows > 2
    text = edit(BASE, ("per_core     = auto", "per_core     = 3 x 4"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "per_core"), under="3 x 4",
                      message=("per_core_M = 3 needs 3 cores along y, the grid has 2",),
                      hint=("nearest legal values", "4"))


def test_out_block_entirely_past_the_tensor(capsys, tmp_path):
    # The 1D in0-multicast factory along M: Mt = 2 over per_core_M = 3 leaves the one core 2 rows of
    # tiles, and out_block_h = 1 a whole out block past the tensor, which TT-Metal's writers of that
    # factory have no last_num_blocks_h_dim to stop at (tests/gen/test_padded_out_blocks.py runs TT's
    # program there: it writes past the output)
    text = edit(BASE, ("shape    = 256 x 256 x 1024", "shape    = 50 x 1000 x 256"), ("grid     = 2 x 2", "grid     = 3 x 2"),
                ("dataflow = mcast_2d", "dataflow = mcast_1d_in0"),
                ("per_core     = auto", "per_core     = 3 x 6\n        out_block    = 1 x 2"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "out_block"), under="1 x 2",
                      message=("the last core along y holds 2 of per_core_M = 3 tiles", "last_num_blocks_h_dim"),
                      hint=("nearest legal values", "3"))


def test_out_block_not_dividing_per_core(capsys, tmp_path):
    text = edit(BASE, ("per_core     = auto", "per_core     = 4 x 4\n        out_block    = 3 x 4"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "out_block"), under="3 x 4",
                      message=("out_block_h = 3 does not divide per_core_M = 4",), hint=("nearest legal values",))


@pytest.mark.parametrize("arch,grid,legal", [
    ("blackhole", "14 x 10", "13 x 10"),
    ("blackhole", "13 x 11", "13 x 10"),
    ("wormhole_b0", "9 x 8", "8 x 8"),
    ("wormhole_b0", "8 x 1024", "8 x 8"),
])
def test_grid_larger_than_the_arch_grid(capsys, tmp_path, arch, grid, legal):
    text = edit(BASE, ("arch     = wormhole_b0", f"arch     = {arch}"), ("grid     = 2 x 2", f"grid     = {grid}"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "grid"), under=grid,
                      message=(f"exceeds the {arch} worker grid",), hint=("nearest legal values", legal))


L1_OVERFLOW = edit(BASE, ("256 x 256 x 1024", "512 x 512 x 1024"), ("grid     = 2 x 2", "grid     = 1 x 1"),
                   ("in0_block_w  = 4", "in0_block_w  = 32"),
                   ("per_core     = auto", "per_core     = 16 x 16\n        out_block    = 16 x 16"))


def test_cbs_over_l1(capsys, tmp_path):
    path, rc, out, err = check_text(capsys, tmp_path, L1_OVERFLOW)
    assert_spec_error(rc, out, err, path, message=("usable L1", "over by"), hint=("in0_block_w",))


def test_cbs_over_l1_points_at_the_block(capsys, tmp_path):
    path, rc, out, err = check_text(capsys, tmp_path, L1_OVERFLOW)
    m = assert_spec_error(rc, out, err, path, message=("usable L1",))
    assert int(m["line"]) in range(line_of(L1_OVERFLOW, "block {"), line_of(L1_OVERFLOW, "out_block") + 2), err


@pytest.mark.parametrize("old,new,key", [
    ("dataflow = mcast_2d", "dataflow = mcast_2d\n    dataflow = reuse", "dataflow"),
    ("in1 = bfloat16", "in0 = bfloat16", "dtype.in0"),
    ("dataflow = mcast_2d", "dataflow = mcast_2d\n    block.in0_block_w = 2", "block.in0_block_w"),
])
def test_duplicate_key(capsys, tmp_path, old, new, key):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, message=(f"`{key}` is given twice", "first at line"), hint=("variants",))


def test_duplicate_key_second_line_is_shown(capsys, tmp_path):
    text = edit(BASE, ("dataflow = mcast_2d", "dataflow = mcast_2d\n    dataflow = reuse"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    first = line_of(text, "dataflow = mcast_2d")
    assert_spec_error(rc, out, err, path, line=first + 1, under="dataflow",
                      message=(f"first at line {first}",))


def test_duplicate_key_group_then_dotted_keeps_source_order(capsys, tmp_path):
    text = edit(BASE, ("    compute = peak_hifi2", "    block.in0_block_w = 2\n    compute = peak_hifi2"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "block.in0_block_w"),
                      message=(f"first at line {line_of(text, 'in0_block_w  = 4')}",))


def test_duplicate_compute_config(capsys, tmp_path):
    text = "compute c { }\ncompute c { }\n" + BASE
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=2, message=("defined twice",))


def test_duplicate_variant(capsys, tmp_path):
    text = edit(BASE, ("spill { compute.packer_l1_acc = false }", "a { }  a { }"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "a { }"), message=("variant `a` is defined twice",))


@pytest.mark.parametrize("name,suggestion", [("peak_hifi3", "peak_hifi2"), ("precise_fp16", "precise_fp32"),
                                             ("ttnn_defualt", "ttnn_default")])
def test_unknown_compute_preset(capsys, tmp_path, name, suggestion):
    text = edit(BASE, ("compute = peak_hifi2", f"compute = {name}"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, name), under=name,
                      message=(f"no compute config named `{name}`",), hint=("did you mean", suggestion))


def test_unknown_compute_preset_without_a_close_match_lists_the_known(capsys, tmp_path):
    text = edit(BASE, ("compute = peak_hifi2", "compute = zzz"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, under="zzz", hint=("peak_hifi2", "precise_fp32", "ttnn_default"))


def test_unknown_variant(capsys, tmp_path):
    path, rc, out, err = check_text(capsys, tmp_path, BASE, "--variant", "spil")
    assert_file_error(rc, out, err, path, "no variant named `spil`")
    assert "spill" in (hint_of(err) or ""), err


def test_unknown_variant_in_a_spec_without_variants(capsys, tmp_path):
    text = edit(BASE, ("        spill { compute.packer_l1_acc = false }\n", ""))
    path, rc, out, err = check_text(capsys, tmp_path, text, "--variant", "spill")
    assert_file_error(rc, out, err, path, "no variant named `spill`")
    assert hint_of(err), err


def test_rule_violation_in_the_chosen_variant_points_into_the_variant(capsys, tmp_path):
    text = edit(BASE, ("compute.packer_l1_acc = false", "block.in0_block_w = 5"))
    path, rc, out, err = check_text(capsys, tmp_path, text, "--variant", "spill")
    assert_spec_error(rc, out, err, path, line=line_of(text, "spill"), under="5", message=("does not divide Kt",),
                      hint=("nearest legal values",))


def test_untilize_out_with_block_float_output(capsys, tmp_path):
    text = edit(BASE, ("out = bfloat16", "out = bfloat8_b"), ("untilize_out = false", "untilize_out = true"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, "untilize_out"), under="true",
                      message=("untilize_out", "bfloat8_b"), hint=("bfloat16",))


# ----------------------------------------------------------------------------------------------
# 6. Zero, negative and huge numbers
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("old,new,under,message", [
    ("in0_block_w  = 4", "in0_block_w  = 0", "0", "must be a positive number"),
    ("in0_block_w  = 4", "in0_block_w  = -4", "-4", "must be a positive number"),
    ("batch    = 1", "batch    = -1", "-1", "must be a positive number"),
    ("batch    = 1", "batch    = 0", "0", "must be a positive number"),
    ("batch    = 1", "batch    = 4097", "4097", "too large"),
    ("batch    = 1", "batch    = 99999999999999999999999999", "99999999999999999999999999", "too large"),
    ("in0_block_w  = 4", "in0_block_w  = 99999999999999999999", "99999999999999999999", "too large"),
    ("shape    = 256 x 256 x 1024", "shape    = 99999999999 x 32 x 32", "99999999999 x 32 x 32", "too large"),
    ("shape    = 256 x 256 x 1024", "shape    = 0 x 256 x 1024", "0 x 256 x 1024", "must be positive"),
    ("grid     = 2 x 2", "grid     = 0 x 8", "0 x 8", "must be positive"),
    ("grid     = 2 x 2", "grid     = 99999999999 x 2", "99999999999 x 2", "too large"),
    ("per_core     = auto", "per_core     = 0 x 4", "0 x 4", "must be positive"),
    ("out_subblock = auto", "out_subblock = 0 x 1", "0 x 1", "must be positive"),
])
def test_out_of_range_number(capsys, tmp_path, old, new, under, message):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, new.strip()), under=under, message=(message,))


@pytest.mark.parametrize("old,new", [
    ("grid     = 2 x 2", "grid     = -2 x 2"),
    ("shape    = 256 x 256 x 1024", "shape    = -256 x 256 x 1024"),
])
def test_negative_dimension_is_an_error(capsys, tmp_path, old, new):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, new.strip()))


@pytest.mark.parametrize("old,new,under", [
    ("grid     = 2 x 2", "grid     = -2 x 2", "-2 x 2"),
    ("shape    = 256 x 256 x 1024", "shape    = -256 x 256 x 1024", "-256 x 256 x 1024"),
])
def test_negative_dimension_says_it_must_be_positive(capsys, tmp_path, old, new, under):
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    m = assert_spec_error(rc, out, err, path, line=line_of(text, new.strip()))
    assert "positive" in m["msg"] or "negative" in m["msg"], err
    assert caret(err)[1].startswith("-"), err


# ----------------------------------------------------------------------------------------------
# 7. Shapes that are not multiples of the 32-element tile: no longer bad input (issue #17). ttnn
#    pads each tensor to whole tiles; `kgen check` says what was padded.
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim,padded", [
    ("250 x 256 x 1024", "M = 250", "256"),
    ("256 x 100 x 1024", "N = 100", "128"),
    ("256 x 256 x 100", "K = 100", "128"),
    ("256 x 256 x 1000", "K = 1000", "1024"),
    ("33 x 256 x 1024", "M = 33", "64"),
])
def test_shape_not_a_multiple_of_32_is_padded_to_tiles(capsys, tmp_path, shape, dim, padded):
    text = edit(BASE, ("256 x 256 x 1024", shape))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert rc == 0, err
    assert f"{dim} padded to {padded}" in out, out


# ----------------------------------------------------------------------------------------------
# 8. The file itself
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [b"", b"\n\n", b"   \t\n", b"# only a comment\n", b"# one\n\n   # two\n# three"],
                         ids=["empty", "newlines", "whitespace", "one-comment", "comments"])
def test_empty_or_comment_only_file(capsys, tmp_path, data):
    path = tmp_path / "t.kspec"
    path.write_bytes(data)
    rc, out, err = check(capsys, path)
    assert_file_error(rc, out, err, path, "is empty")
    assert hint_of(err), err


@pytest.mark.parametrize("data", [b"\x00\x01\x02\x03\xff\xfe", b"matmul t {\x00}", BASE.encode() + b"\x00",
                                  bytes(range(256)) * 4], ids=["garbage", "nul-inside", "nul-at-end", "all-bytes"])
def test_binary_file(capsys, tmp_path, data):
    path = tmp_path / "t.kspec"
    path.write_bytes(data)
    rc, out, err = check(capsys, path)
    # Located at the first NUL byte (issue #12 §4): its line, and its column in characters.
    offset = data.index(b"\x00")
    line_start = data.rfind(b"\n", 0, offset) + 1
    m = assert_spec_error(rc, out, err, path, line=data.count(b"\n", 0, offset) + 1, message=("binary", "NUL"))
    assert int(m["col"]) == len(data[line_start:offset].decode("utf-8", errors="replace")) + 1, err


@pytest.mark.parametrize("data", [BASE.encode().replace(b"grid", b"gr\xffid"), b"\xc3\x28", b"matmul t { } \xe2\x82",
                                  "matmul t { arch = blackhole }  # caf\u00e9".encode("latin-1")],
                         ids=["ff-byte", "bad-continuation", "truncated-sequence", "latin-1"])
def test_invalid_utf8(capsys, tmp_path, data):
    path = tmp_path / "t.kspec"
    path.write_bytes(data)
    rc, out, err = check(capsys, path)
    # Located at the first byte that is not UTF-8 (issue #12 §4).
    try:
        data.decode("utf-8")
        raise AssertionError("the test data must not be UTF-8")
    except UnicodeDecodeError as exc:
        offset = exc.start
    line_start = data.rfind(b"\n", 0, offset) + 1
    m = assert_spec_error(rc, out, err, path, line=data.count(b"\n", 0, offset) + 1,
                          message=("not UTF-8", f"0x{data[offset]:02x}"))
    assert int(m["col"]) == len(data[line_start:offset].decode("utf-8")) + 1, err


def test_directory_instead_of_a_file(capsys, tmp_path):
    rc, out, err = check(capsys, tmp_path)
    assert_file_error(rc, out, err, tmp_path, "is a directory")
    assert hint_of(err), err


def test_directory_with_specs_suggests_one(capsys, tmp_path):
    (tmp_path / "mine.kspec").write_text(BASE)
    rc, out, err = check(capsys, tmp_path)
    assert_file_error(rc, out, err, tmp_path, "is a directory")
    assert "mine.kspec" in (hint_of(err) or ""), err


@pytest.mark.parametrize("rel", ["missing.kspec", "no/such/dir/t.kspec", "t.kspec/inside.kspec"])
def test_missing_path(capsys, tmp_path, rel):
    (tmp_path / "t.kspec").write_text(BASE)
    path = tmp_path / rel
    rc, out, err = check(capsys, path)
    assert_file_error(rc, out, err, path, "no such file")


def test_dangling_and_looping_symlinks(capsys, tmp_path):
    dangling, loop = tmp_path / "dangling.kspec", tmp_path / "loop.kspec"
    dangling.symlink_to(tmp_path / "nowhere.kspec")
    loop.symlink_to(loop)
    for path in (dangling, loop):
        rc, out, err = check(capsys, path)
        assert_no_crash(rc, out, err)
        assert err.startswith(f"kgen: {path}: error: "), err


def test_unreadable_file(capsys, tmp_path, monkeypatch):
    path = tmp_path / "t.kspec"
    path.write_text(BASE)
    path.chmod(0)
    if os.geteuid() == 0:
        # root reads a chmod-000 file anyway (as CI does): make the read fail as it would for a user
        real_open = os.open

        def denied(file, flags, *args, **kwargs):
            if os.fspath(file) == str(path):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, flags, *args, **kwargs)
        monkeypatch.setattr(os, "open", denied)
    try:
        rc, out, err = check(capsys, path)
    finally:
        path.chmod(0o644)
    assert_file_error(rc, out, err, path, "permission denied")


def test_file_too_large(capsys, tmp_path):
    path = tmp_path / "t.kspec"
    path.write_text(BASE + "#" * (1 << 20) + "\n")
    rc, out, err = check(capsys, path)
    assert_file_error(rc, out, err, path, "at most")


def test_path_too_long(capsys, tmp_path):
    path = tmp_path / ("a" * 5000 + ".kspec")
    rc, out, err = check(capsys, path)
    assert_no_crash(rc, out, err)


def test_empty_path_argument(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = check(capsys, "")
    assert_no_crash(rc, out, err)
    assert "kgen: kgen:" not in err and "is a directory" not in err, err


def test_deeply_nested_groups(capsys, tmp_path):
    text = "matmul t {\n" + "block { " * 2000 + "}" * 2000 + "\n}\n"
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path)


def test_moderately_nested_groups(capsys, tmp_path):
    text = "matmul t {\n" + "block { " * 200 + "}" * 200 + "\n}\n"
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=2, message=("nest more than 8 deep",))


def test_utf8_byte_order_mark(capsys, tmp_path):
    path = tmp_path / "t.kspec"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    rc, _out, err = check(capsys, path)
    assert rc == 0 or ("byte-order mark" in err or "BOM" in err), err


@pytest.mark.parametrize("argv", [
    ["ir", "{path}"],
    ["ir", "{path}", "--stage", "plan"],
    ["ir", "{path}", "--stage", "spec"],
    ["check", "{path}", "--json"],
])
def test_other_commands_report_the_same_error(capsys, tmp_path, argv):
    text = edit(BASE, ("in0_block_w  = 4", "in0_blok_w  = 4"))
    path = tmp_path / "t.kspec"
    path.write_text(text)
    capsys.readouterr()
    rc = invoke([a.format(path=path) for a in argv])
    out, err = capsys.readouterr()
    assert_spec_error(rc, out, err, path, line=line_of(text, "in0_blok_w"), under="in0_blok_w",
                      hint=("in0_block_w",))


# ----------------------------------------------------------------------------------------------
# 9. Random mutations of the valid examples
# ----------------------------------------------------------------------------------------------

TOKENS = ["{", "}", "=", "x", " x ", "auto", "-1", "0", '"s"', "'s'", "\n", "#", "4.5", "true", "false", ".",
          " ", "\t", "block", "compute", "matmul m", "variants", "dtype", "in0_block_w", "out_subblock = 4 x 4",
          "per_core = 1 x 1", "grid = 14 x 10", "shape = 31 x 32 x 32", "batch = 0", "\u00d7", "\u00e9"]
NUMBER = re.compile(r"\d+")


@st.composite
def mutated_spec(draw) -> str:
    text = draw(st.sampled_from(EXAMPLE_TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "insert", "number", "number", "dup_line", "truncate"]))
        n = len(text)
        if kind == "delete" and n:
            start = draw(st.integers(0, n - 1))
            length = draw(st.integers(1, 40))
            text = text[:start] + text[start + length:]
        elif kind == "insert":
            at = draw(st.integers(0, n))
            piece = draw(st.one_of(st.sampled_from(TOKENS),
                                   st.characters(min_codepoint=32, max_codepoint=126),
                                   st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=5)))
            text = text[:at] + piece + text[at:]
        elif kind == "number":
            numbers = list(NUMBER.finditer(text))
            if numbers:
                m = draw(st.sampled_from(numbers))
                value = draw(st.one_of(st.integers(-5, 300),
                                       st.sampled_from([0, -1, 1, 7, 31, 33, 4096, 65536, 2 ** 21, 2 ** 31,
                                                        2 ** 63, 10 ** 30, 99999999999]),
                                       st.integers(-(2 ** 70), 2 ** 70)))
                text = text[:m.start()] + str(value) + text[m.end():]
        elif kind == "dup_line":
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == "truncate" and n:
            text = text[:draw(st.integers(0, n))]
    return text


FILE_LEVEL = re.compile(r"kgen: (?P<path>.+?): error: (?P<msg>.+)")


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mutated_spec())
def test_mutated_examples_never_crash(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mutant.kspec")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = invoke(["check", path])
        out, err = out.getvalue(), err.getvalue()
    assert "Traceback" not in err and "Traceback" not in out, err
    assert rc in (0, 2), f"exit code {rc}\n--- spec ---\n{text}\n--- stderr ---\n{err}"
    if rc == 0:
        return
    assert err.startswith("kgen: "), err
    first = err.splitlines()[0]
    located = LOCATED.fullmatch(first)
    if located is None:
        # Only a file-level error may lack LINE:COL; for a text file that is the empty-file error.
        m = FILE_LEVEL.fullmatch(first)
        assert m and m["path"] == path and "is empty" in m["msg"], \
            f"an error about the spec text without a LINE:COL location:\n--- spec ---\n{text}\n--- stderr ---\n{err}"
        assert not text.strip() or all(not ln.strip() or ln.strip().startswith("#") for ln in text.splitlines()), err
        return
    assert located["path"] == path, err
    line, col = int(located["line"]), int(located["col"])
    lines = text.splitlines() or [""]
    assert 1 <= line <= len(lines), f"line {line} outside the file's {len(lines)} lines:\n{err}"
    source = lines[line - 1]
    assert 1 <= col <= len(source) + 1, f"column {col} outside line {line} ({source!r}):\n{err}"
    if source.strip():
        c = caret(err)
        assert c is not None, f"no caret under line {line}:\n--- spec ---\n{text}\n--- stderr ---\n{err}"
        assert c[0] == col, err


# ----------------------------------------------------------------------------------------------
# Issue #12 §4: bad input that used to escape (each: one paragraph, exit 2, no traceback,
# nothing half-written)
# ----------------------------------------------------------------------------------------------

def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = invoke(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("old,new", [("in0_block_w  = 4", "in0_block_w  = " + "9" * 5000),
                                     ("batch    = 1", "batch    = 1" + "0" * 4400),
                                     ("shape    = 256 x 256 x 1024", "shape    = 256 x " + "7" * 4301 + " x 1024")],
                         ids=["in0_block_w", "batch", "shape"])
def test_huge_integer_literal_is_a_located_error(capsys, tmp_path, old, new):
    # Python's int() refuses more than 4,300 digits with a ValueError: kgen must never get there.
    text = edit(BASE, (old, new))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert_spec_error(rc, out, err, path, line=line_of(text, new[:12]), message=("too large",))
    assert len(err) < 1000, f"one paragraph, not the whole literal:\n{err}"


@pytest.mark.parametrize("command", ["emulate", "port-check", "fuzz"])
def test_negative_seed_is_a_usage_error(capsys, tmp_path, command):
    path = tmp_path / "t.kspec"
    path.write_text(BASE)
    args = [command, "--seed", "-1"] + ([] if command == "fuzz" else [str(path)])
    rc, out, err = run_cli(capsys, *args)
    assert rc == 2 and "Traceback" not in err and "--seed" in err, err


def test_fifo_as_spec_is_refused_without_hanging(tmp_path):
    import subprocess
    import sys

    fifo = tmp_path / "t.kspec"
    os.mkfifo(fifo)
    # A subprocess with a time limit: a regression would block in open() forever.
    proc = subprocess.run([sys.executable, "-m", "kgen", "check", str(fifo)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr


def test_endless_device_as_spec_is_refused(capsys):
    rc, out, err = check(capsys, "/dev/zero")
    assert_file_error(rc, out, err, "/dev/zero", "not a regular file")


def test_a_regular_file_is_read_only_up_to_the_limit(capsys, tmp_path, monkeypatch):
    # st_size is not trusted: the read itself stops one byte past the limit.
    import kgen.gen.spec_syntax

    path = tmp_path / "t.kspec"
    path.write_text(BASE + "#" * 4096 + "\n")
    monkeypatch.setattr(kgen.gen.spec_syntax, "MAX_SPEC_BYTES", len(BASE))
    rc, out, err = check(capsys, path)
    assert_file_error(rc, out, err, path, "at most")


@pytest.mark.parametrize("separator", ["\f", "\v", "\u0085", "\u2028", "\u2029", "\x1c"],
                         ids=["formfeed", "vtab", "nel", "line-sep", "para-sep", "file-sep"])
def test_caret_shows_the_right_line_despite_unicode_line_breaks(capsys, tmp_path, separator):
    # str.splitlines() breaks at these characters, lark does not: the shown line must be lark's.
    text = edit(BASE, ("    dataflow = mcast_2d\n", f"    dataflow = mcast_2d  # a{separator}b\n"),
                ("    untilize_out = false", "    untilize_out = maybe"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    line = text[:text.index("untilize_out")].count("\n") + 1      # lines as \n ends them
    assert_spec_error(rc, out, err, path, line=line, under="maybe")


def test_cr_only_line_endings(capsys, tmp_path):
    text = edit(BASE, ("    untilize_out = false", "    untilize_out = maybe")).replace("\n", "\r")
    path = tmp_path / "t.kspec"
    path.write_bytes(text.encode())
    rc, out, err = check(capsys, path)
    assert_spec_error(rc, out, err, path, line=line_of(text.replace("\r", "\n"), "untilize_out"), under="maybe")


def test_cr_only_valid_spec_plans(capsys, tmp_path):
    path = tmp_path / "t.kspec"
    path.write_bytes(BASE.replace("\n", "\r").encode())
    rc, out, err = check(capsys, path)
    assert rc == 0, err


PAGE_LIMIT = 1 << 32     # TensorAccessor page ids are uint32_t: at most 2^32 pages per tensor


@pytest.mark.parametrize("shape,batch", [("2097152 x 2097152 x 2097152", 4096), ("2097152 x 32 x 2097152", 2),
                                         ("2097152 x 2097152 x 32", 2)])
def test_page_ids_beyond_32_bits_are_rejected(capsys, tmp_path, shape, batch):
    text = edit(BASE, ("shape    = 256 x 256 x 1024", f"shape    = {shape}"), ("batch    = 1", f"batch    = {batch}"),
                ("grid     = 2 x 2", "grid     = 8 x 8"))
    m, n, k = (int(v) // 32 for v in shape.split(" x "))
    assert max(batch * m * k, k * n, batch * m * n) > PAGE_LIMIT      # the oracle: a tensor has too many tiles
    path, rc, out, err = check_text(capsys, tmp_path, text, name="big.kspec")
    assert_spec_error(rc, out, err, path, message=("32-bit", str(PAGE_LIMIT)))


def test_largest_indexable_shape_keeps_every_ir_index_in_uint32():
    # 65536^2 tiles is exactly 2^32 pages: legal, and then every tile index the kernels compute,
    # over every core and loop iteration, must fit in uint32 (an independent check over the IR).
    from kgen.gen.ir import Affine, Loop
    from kgen.gen.lower import lower
    from kgen.gen.plan import plan
    from kgen.gen.spec import parse_text, resolve

    text = edit(BASE, ("shape    = 256 x 256 x 1024", "shape    = 2097152 x 2097152 x 2097152"))
    program = lower(plan(resolve(parse_text(text, "big.kspec"))))
    worst = 0

    def walk(nodes, ranges):
        nonlocal worst
        for n in nodes:
            if isinstance(n, Loop):
                walk(n.body, {**ranges, n.var: n.stop})
            else:
                for _, v in n.args:
                    if isinstance(v, Affine):
                        worst = max(worst, v.max_over({**ranges, **cores}))
    for kernel in program.kernels:
        cores = {"core_x": kernel.cores.x1 + 1, "core_y": kernel.cores.y1 + 1}
        walk(kernel.body, {})
    assert 0 < worst < PAGE_LIMIT, worst


def test_trace_problems_are_found_before_emulating(capsys, tmp_path, monkeypatch):
    import kgen.proof.emulate

    def never(*a, **k):
        raise AssertionError("emulated although the trace path was unusable")
    monkeypatch.setattr(kgen.proof.emulate, "emulate_folder", never)
    path = tmp_path / "t.kspec"
    path.write_text(BASE)
    locked = tmp_path / "locked"
    locked.mkdir()
    for trace, needle in [("", "empty"), (str(tmp_path), "folder"), (str(tmp_path / "no" / "t.json"), "does not exist"),
                          ("/proc/kgen-trace.json", "cannot write")]:
        rc, out, err = run_cli(capsys, "emulate", str(path), "--trace", trace)
        assert rc == 2 and needle in err and "Traceback" not in err, (trace, err)


def test_ctrl_c_exits_130_without_a_traceback(capsys, monkeypatch):
    import kgen.cli

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(kgen.cli, "_run", interrupted)
    rc, out, err = run_cli(capsys, "check", "x.kspec")
    assert rc == 130 and "Traceback" not in err and "interrupted" in err


def test_fuzz_count_zero_says_so(capsys):
    rc, out, err = run_cli(capsys, "fuzz", "--count", "0")
    assert rc == 0 and "no cases" in out and "type-check" not in out, out


def test_empty_output_folder_is_an_error(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.kspec").write_text(BASE)
    rc, out, err = run_cli(capsys, "build", "t.kspec", "-o", "", "--no-compile")
    assert rc == 2 and err.startswith("kgen: error: -o ''"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.kspec"], "nothing may be written"


def test_output_folder_that_is_a_file_keeps_the_error_format(capsys, tmp_path):
    (tmp_path / "t.kspec").write_text(BASE)
    (tmp_path / "afile").write_text("x")
    rc, out, err = run_cli(capsys, "build", str(tmp_path / "t.kspec"), "-o", str(tmp_path / "afile"), "--no-compile")
    assert rc == 2 and err.startswith("kgen: error: output folder") and err.count("\n") == 1, err


def test_empty_home_is_an_error_not_a_root_cache(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "")
    monkeypatch.delenv("KGEN_CACHE_DIR", raising=False)
    (tmp_path / "t.kspec").write_text(BASE)
    rc, out, err = run_cli(capsys, "build", str(tmp_path / "t.kspec"), "-o", str(tmp_path / "out"))
    assert rc == 2 and "HOME" in err and "KGEN_CACHE_DIR" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", [["fuzz", "--count", "1"], ["build", "SPEC", "-o", "OUT"], ["doctor"],
                                  ["emulate", "SPEC"]])
def test_cache_dir_that_is_a_file_names_kgen_cache_dir(capsys, tmp_path, monkeypatch, argv):
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("KGEN_CACHE_DIR", str(afile))
    (tmp_path / "t.kspec").write_text(BASE)
    argv = [str(tmp_path / "t.kspec") if a == "SPEC" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2 and "KGEN_CACHE_DIR" in err and "FAIL" not in out and "Traceback" not in err, (out, err)


@pytest.mark.parametrize("argv", [["build", "SPEC", "-o", "OUT"], ["check", "SPEC"], ["emulate", "SPEC"],
                                  ["headers", "path"]])
def test_a_cache_dir_that_cannot_be_created_is_bad_input(capsys, tmp_path, monkeypatch, argv):
    # /proc refuses new folders, even to root: the variable names a cache kgen can never use
    monkeypatch.setenv("KGEN_CACHE_DIR", "/proc/kgen-cache")
    (tmp_path / "t.kspec").write_text(BASE)
    argv = [str(tmp_path / "t.kspec") if a == "SPEC" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2 and "KGEN_CACHE_DIR" in err and "/proc/kgen-cache" in err and "Traceback" not in err, (out, err)
    assert not (tmp_path / "out").exists()


def test_bare_kgen_prints_its_help(capsys):
    rc, out, err = run_cli(capsys)
    assert rc == 0 and "usage: kgen" in out and "check" in out and not err


def test_headers_without_a_subcommand_names_the_choices(capsys):
    rc, out, err = run_cli(capsys, "headers")
    assert rc == 2 and "{fetch,path}" in err and "headers_command" not in err


def test_relative_cache_dir_is_taken_from_the_current_folder(tmp_path, monkeypatch):
    from kgen.core.resources import cache_root

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KGEN_CACHE_DIR", "relcache")
    assert cache_root() == tmp_path / "relcache"


def test_bias_dtype_without_a_fused_bias_warns(capsys, tmp_path):
    text = edit(BASE, ("out = bfloat16 }", "out = bfloat16  bias = bfloat8_b }"))
    path, rc, out, err = check_text(capsys, tmp_path, text)
    assert rc == 0, err
    warning = next(ln for ln in bullets(out) if "dtype bias" in ln)
    assert "no effect" in warning and "fuse { bias = true }" in warning and f"{path}:{line_of(text, 'bias =')}" in warning


def test_emulation_too_big_for_host_memory_is_refused_first(capsys, tmp_path, monkeypatch):
    import kgen.gen.build

    def never(*a, **k):
        raise AssertionError("built or emulated although the host cannot hold the emulation")
    monkeypatch.setattr(kgen.gen.build, "build", never)
    text = edit(BASE, ("shape    = 256 x 256 x 1024", "shape    = 2097152 x 2097152 x 2097152"))
    path = tmp_path / "huge.kspec"
    path.write_text(text)
    for command in ("emulate", "port-check"):
        rc, out, err = run_cli(capsys, command, str(path), "--numerics", "fast")
        assert rc == 2 and "GiB of host memory" in err and "available" in err and "Traceback" not in err, err


@pytest.mark.slow
def test_host_memory_estimate_counts_inputs_outputs_and_l1(monkeypatch, capsys, tmp_path):
    import kgen.proof.emulate
    from kgen.gen.plan import plan
    from kgen.gen.spec import parse_text, resolve

    p = plan(resolve(parse_text(BASE, "t.kspec")))
    elements = p.mt * p.kt * 1024 + p.kt * p.nt * 1024 + p.mt * p.nt * 1024
    need = kgen.proof.emulate.host_memory_need(p)
    assert need >= 4 * elements + p.num_cores * p.arch.l1_bytes     # at least every tensor as float32 and L1
    monkeypatch.setattr(kgen.proof.emulate, "available_host_memory", lambda: need - 1)
    (tmp_path / "t.kspec").write_text(BASE)
    rc, out, err = run_cli(capsys, "emulate", str(tmp_path / "t.kspec"))
    assert rc == 2 and "GiB of host memory" in err, err
