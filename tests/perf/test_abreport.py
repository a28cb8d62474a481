"""kgen/perf/abreport.py: JSON keyed by kernel id, CSV rows, the text table and the HTML's parts."""

from __future__ import annotations

import csv
import io
import json

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
    assert [line["Disposition"] for line in lines] == ["illegal", "passed", "passed"]
    for line, r in zip(lines[1:], c.rows[1:]):
        assert line["Operation"] == r.kernel_id and (int(line["m"]), int(line["n"]), int(line["k"])) == (256, 256, 1024)
        assert float(line["GFLOPs"]) == r.speed.tflops * 1000


def test_text_has_the_table_differences_illegal_and_verdict():
    text = abreport.format_text(_comparison())
    for w in ("kernel id", "reload copies", "numerics all_ones", "value (exact sum: K)", "K-faithful proxy",
              "illegal: in0_block_w=3", "in0_block_w=8 vs in0_block_w=4", "verdict:"):
        assert w in text, w


def test_html_holds_four_charts_the_spec_and_the_command():
    c = _comparison()
    html = abreport.html_text(c)
    assert html.count("<svg") == 4 and "xmlns" not in html
    assert "kgen ab examples/peak_small.kspec --vary block.in0_block_w=3,4,8" in html
    assert "matmul peak_small" in html and "illegal: <b>in0_block_w=3</b>" in html
