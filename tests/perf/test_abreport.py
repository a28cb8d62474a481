"""kgen/perf/abreport.py: JSON keyed by kernel id, CSV rows, the text table and the HTML's parts."""

from __future__ import annotations

import csv
import io
import json

import pytest

from conftest import example
from kgen.gen.spec import load_file, read_source
from kgen.perf import abreport
from kgen.perf.ab import OP_KINDS, compare, parse_vary


def _comparison():
    path = example("peak_small")
    return compare(load_file(path), read_source(path), vary=parse_vary(["block.in0_block_w=3,4,8"]),
                   command="kgen ab examples/peak_small.kspec --vary block.in0_block_w=3,4,8")


def test_json_rows_are_keyed_by_kernel_id_and_illegal_variants_apart():
    c = _comparison()
    data = json.loads(json.dumps(abreport.comparison_to_dict(c)))
    assert set(data["variants"]) == {r.kernel_id for r in c.legal} and len(data["variants"]) == 2
    (bad,) = data["illegal"]
    assert bad["variant"] == "in0_block_w=3" and bad["rule"] and bad["legal"] is False
    for kid, row in data["variants"].items():
        assert row["kernel_id"] == kid and set(row["ops"]) == set(OP_KINDS)
        assert set(row["numerics"]["errors"]) == {"random", "mixed", "all_ones", "positive"}
        assert row["plan"]["dst_headroom"] == row["plan"]["dst_capacity"] - row["plan"]["dst_used"]
        assert sum(row["numerics"]["errors"]["random"]["ulp_histogram"].values()) == 256


def test_csv_has_one_line_per_variant_with_the_illegal_one_marked():
    c = _comparison()
    lines = list(csv.DictReader(io.StringIO(abreport.csv_text(c))))
    assert [line["Variant"] for line in lines] == [r.variant for r in c.rows]
    # nothing was emulated or run on a card: nothing passed
    assert [line["Disposition"] for line in lines] == ["illegal", "not_verified", "not_verified"]
    for line, r in zip(lines[1:], c.rows[1:]):
        assert line["Operation"] == r.kernel_id and (int(line["m"]), int(line["n"]), int(line["k"])) == (256, 256, 1024)
        # Runtime and GFLOPs are measurements (CUTLASS profiler's columns): empty without --device
        assert line["Runtime"] == "" and line["GFLOPs"] == ""
        assert float(line["predicted_ms"]) == r.speed.microseconds / 1000
        assert float(line["predicted_GFLOPs"]) == r.speed.tflops * 1000


def test_csv_disposition_follows_the_emulation():
    from dataclasses import replace

    from kgen.perf.ab import Emulated

    c = _comparison()
    good, bad = Emulated("exact", "ok", True, True, 0, 0.0, 1.0, 1.0), Emulated("exact", "mismatch", False, False, 3, 1.0, 0.9, 1.0)
    rows = (c.rows[0], replace(c.rows[1], emulated=good), replace(c.rows[2], emulated=bad))
    lines = list(csv.DictReader(io.StringIO(abreport.csv_text(replace(c, rows=rows)))))
    assert [line["Disposition"] for line in lines] == ["illegal", "passed", "failed"]


def test_text_has_the_table_differences_illegal_and_verdict():
    text = abreport.format_text(_comparison())
    for w in ("kernel ids:", "reload copies", "all_ones", "all-ones value (exact: K)", "K-faithful proxy",
              "illegal: in0_block_w=3", "in0_block_w=8 vs in0_block_w=4", "verdict:", "(a) utilization: the ideal time",
              "full card grid", "summary, predicted"):
        assert w in text, w


@pytest.mark.parametrize("width", [80, 100, 140])
def test_text_fits_the_width_with_numbers_right_aligned(width):
    c = _comparison()
    text = abreport.format_text(c, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    # the summary: one row per variant, its predicted time right-aligned under its header
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("summary"))
    header = next(line for line in lines[head:] if "time us" in line)
    end = header.index("time us") + len("time us")
    for r in c.legal:
        row = next(line for line in lines[head:] if line.startswith(dict(r.overrides)["block.in0_block_w"] + " "))
        assert row[:end].endswith(f"{r.speed.microseconds:,.1f}"), row


def test_html_holds_four_charts_the_spec_and_the_command():
    c = _comparison()
    html = abreport.html_text(c)
    assert html.count("<svg") == 6 and "xmlns" not in html
    assert html.index('id="verdict"') < html.index('id="ab-summary"') < html.index('id="chart-time"') \
        < html.index('id="ab-table"')
    assert "kgen ab examples/peak_small.kspec --vary block.in0_block_w=3,4,8" in html
    assert "matmul peak_small" in html and "illegal: <b>in0_block_w=3</b>" in html
