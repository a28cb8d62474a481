"""kgen/perf/abreport.py: JSON keyed by kernel id, CSV rows, the text table and the HTML's parts."""

from __future__ import annotations

import csv
import io
import json
import re

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


# ----------------------------------------------------------------------------------------------
# the numerics verdict (float64 oracle) in the text, the JSON, the CSV and the HTML

ACTIVATION_SPEC = """
matmul act_small {
    arch     = wormhole_b0
    shape    = 64 x 64 x 256
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid     = 2 x 2
    dataflow = mcast_2d
    block { in0_block_w = 2  out_subblock = 1 x 1  per_core = 1 x 1 }
    fuse { bias = true  activation = gelu }
    variants {
        selu { fuse.activation = selu }
    }
}
"""


def _activation_comparison():
    from kgen.gen.spec import parse_text

    return compare(parse_text(ACTIVATION_SPEC, "act_small.kspec"), ACTIVATION_SPEC, command="kgen ab act_small.kspec")


def _outputs(c):
    return (abreport.format_text(c, width=100), json.loads(json.dumps(abreport.comparison_to_dict(c))),
            abreport.html_text(c), list(csv.DictReader(io.StringIO(abreport.csv_text(c)))))


def _summary_cell(text: str, variant: str) -> str:
    """The summary's float64(d) cell of a variant, or where the column would split the summary (at
    100 columns), its entry in the line under the table."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("summary"))
    end = next(i for i in range(head, len(lines)) if lines[i].startswith("  vs base"))
    header = next((line for line in lines[head:end] if "float64(d)" in line), None)
    if header is None:
        under = next(line for line in lines[head:end] if line.startswith("  float64 (d): "))
        return re.search(rf"(?: |, ){variant} (within [\d.]+|BEYOND x[\d.,]+ \(\w+\))", under).group(1)
    row = next(line for line in lines[head:end] if line.startswith(variant + " "))
    start = header.index("float64(d)")
    return row[start:].split("   ")[0].strip()


def test_variants_within_their_float64_bound_say_so_everywhere():
    c = _activation_comparison()
    text, data, html, lines = _outputs(c)
    assert max(len(line) for line in text.splitlines()) <= 100
    for r in c.legal:
        f = r.numerics.float64
        assert f.within
        assert _summary_cell(text, r.variant) == f"within {abreport.share_of_bound(f.worst_ratio)}"
        row = data["variants"][r.kernel_id]["numerics"]["float64"]
        assert row["within"] is True and row["culprit"] is None and row["worst_ratio"] == f.worst_ratio
        assert row["at"] == r.numerics.float64_at and row["short"].startswith("within ")
        assert row["what"] == {"base": "matmul + bias + gelu", "selu": "matmul + bias + selu"}[r.variant]
    assert text.splitlines()[-1].startswith("float64: every variant is within its bound (d); the closest,")
    assert "(d) float64: each output of the proxy against float64 of the math" in text
    assert data["float64"]["within"] is True and "float64" in data["notes"]
    assert [line["float64"] for line in lines] == ["within", "within"]
    assert 'class="verdict" id="float64-verdict-1"><b>float64:</b> every variant is within its bound' in html
    assert not re.search(r"BEYOND x\d", html) and 'class="bad"' not in html and "<th>float64(d)</th>" in html


def test_a_variant_beyond_its_float64_bound_says_beyond_and_names_the_activation(monkeypatch):
    import dataclasses

    from kgen.gen import activations as A

    # kgen's table doubles SELU's scale: the kernels and the golden model read it, the oracle does not
    row = A.ROWS["selu"]
    monkeypatch.setitem(A.ROWS, "selu", dataclasses.replace(
        row, encode=lambda ps, encode=row.encode: (A.f32_bits(2 * A.bits_f32(encode(ps)[0])), *encode(ps)[1:])))
    c = _activation_comparison()
    text, data, html, lines = _outputs(c)
    assert max(len(line) for line in text.splitlines()) <= 100
    bad = next(r for r in c.legal if r.variant == "selu").numerics.float64
    times = f"{bad.worst_ratio:.1f}" if bad.worst_ratio < 100 else f"{bad.worst_ratio:,.0f}"
    assert _summary_cell(text, "selu") == f"BEYOND x{times} (selu)"
    assert _summary_cell(text, "base").startswith("within ")
    verdict = " ".join(text.split("\nfloat64: ")[1].split())
    assert verdict.startswith(f"BEYOND the bound (d): selu x{times} in selu; within it: base selu: BEYOND its "
                              f"float64 bound in selu, {times} times it: at "), verdict
    assert f"kgen {bad.worst_out:.6g}, float64 {bad.worst_ref:.6g}" in verdict
    kid = next(r.kernel_id for r in c.legal if r.variant == "selu")
    f64 = data["variants"][kid]["numerics"]["float64"]
    assert f64["within"] is False and f64["culprit"] == "selu" and f64["short"] == f"BEYOND x{times} (selu)"
    assert data["float64"]["within"] is False and data["float64"]["sentences"][0].startswith("BEYOND the bound (d)")
    assert [line["float64"] for line in lines] == ["within", "beyond"]
    assert 'class="beyond" id="float64-verdict-1"><b>float64:</b> BEYOND the bound (d): selu x' in html
    assert f'<td class="bad">BEYOND x{times} (selu)</td>' in html


def test_an_emulation_beyond_its_bound_says_so_and_why_it_failed():
    from dataclasses import replace

    from kgen.perf.ab import Emulated
    from kgen.perf.abverdict import verdict

    c = _activation_comparison()
    base, selu = c.legal
    good = replace(base.numerics.float64)
    bad = replace(selu.numerics.float64, within=False, worst_ratio=3.24, culprit="selu")
    rows = (replace(base, emulated=Emulated("exact", "ok", True, True, 0, 0.0, 1.0, 1.0, good)),
            replace(selu, emulated=Emulated("exact", "ok", False, True, 0, 0.0, 1.0, 1.0, bad)))
    c = replace(c, rows=rows, verdict_facts=(verdict(list(rows), None, None, []),))
    text, data, html, lines = _outputs(c)
    assert "NOT ok in emulation: selu (beyond its float64 bound)" in " ".join(text.split())
    assert "float64: BEYOND the bound (d) in emulation: selu x3.2 in selu; within it: base" in text
    emulation = text[text.index("\nemulation\n"):]
    assert "BEYOND x3.2 (selu)" in emulation.split("\n\n")[0]
    assert data["variants"][selu.kernel_id]["emulated"]["float64"]["within"] is False
    assert [line["emulated_float64"] for line in lines] == ["within", "beyond"]
    assert [line["Disposition"] for line in lines] == ["passed", "failed"]
    assert 'class="verdict" id="float64-verdict-1"><b>float64:</b> every variant is within' in html
    assert 'class="beyond" id="float64-verdict-2"><b>float64:</b> BEYOND the bound (d) in emulation: selu' in html


# ----------------------------------------------------------------------------------------------
# the verdict against base in the terminal, the JSON and the HTML

def test_within_resolution_every_output_says_the_same_and_stars_nothing():
    path = example("peak_small")
    c = compare(load_file(path), read_source(path), command="kgen ab examples/peak_small.kspec")
    text, data, html, _ = _outputs(c)
    lines = text.splitlines()
    verdict = " ".join(" ".join(lines[next(i for i, line in enumerate(lines) if line.startswith("verdict:")):]).split())
    assert verdict.startswith("verdict: spill and base are the same within the model's resolution (1 %): 30.4 vs "
                              "30.7 us predicted, at 2.8x base's max error (312 vs 113 ULP) error:"), verdict
    assert "why:" not in verdict and "fp32" not in verdict.split(" error:")[0]
    summary = lines[next(i for i, line in enumerate(lines) if line.startswith("summary")):]
    assert not any(re.match(r"\w+ +\*", line) for line in summary[:6])         # no star: nothing is crowned
    assert "vs base: the predicted speed-up against base, the spec as written" in text
    (v,) = data["verdict"]
    assert (v["base"], v["fastest"], v["winner"], v["against"], v["same_within_resolution"]) == \
        ("base", "spill", None, "base", True)
    assert v["error"]["fastest_max_ulp"] == 312 and v["error"]["base_max_ulp"] == 113
    assert {a["variant"]: round(a["speedup"], 2) for a in v["against_base"]} == {"base": 1.0, "spill": 1.01,
                                                                               "fp32": 0.85}
    assert data["base"] == {"variant": "base", "note": "base: the spec as written"}
    assert "Fastest:" not in html and "fastest</td>" not in html and 'class="winner"' not in html
    assert "<b>spill and base are the same within the model&#39;s resolution (1 %)" in html


def test_a_winner_beyond_resolution_is_starred_and_the_added_base_marked():
    path = example("peak_small")
    c = compare(load_file(path), read_source(path), vary=parse_vary(["compute.math_fidelity=LoFi,HiFi4"]))
    text, data, html, lines = _outputs(c)
    rows = text.splitlines()
    summary = rows[next(i for i, line in enumerate(rows) if line.startswith("summary")):]
    assert re.match(r"LoFi +\* +30\.0 ", summary[3]) and re.match(r"HiFi2 +base +30\.7 ", summary[5]), summary[:6]
    assert ("vs base: the predicted speed-up against the spec as written (math_fidelity=HiFi2), not among the "
            "--vary combinations: added as the row `base`") in " ".join(text.split())
    assert data["verdict"][0]["winner"] == "math_fidelity=LoFi" and data["base"]["variant"] == "base"
    assert [line["Variant"] for line in lines] == ["math_fidelity=LoFi", "math_fidelity=HiFi4", "base"]
    assert "<b>math_fidelity=LoFi is 1.02x faster than base: 30.0 vs 30.7 us predicted, at 8.8x base&#39;s" in html
    assert html.count("&#9733; fastest") == 1 and "&#9733; fastest</td><td>LoFi</td>" in html


@pytest.mark.parametrize("width", [60, 70, 80, 100])
def test_a_split_tables_title_keeps_its_part_whole(width):
    """`(3 of 3)` is never broken across lines ('(3 of' then '3)'), at any width: the part moves to
    the next line whole."""
    path = example("peak_small")
    c = compare(load_file(path), read_source(path),
                vary=parse_vary(["compute.packer_l1_acc=false,true", "compute.math_fidelity=HiFi2,HiFi4"]))
    lines = abreport.format_text(c, width=width).splitlines()
    assert max(len(line) for line in lines) <= width
    parts = [line for line in lines if re.search(r"\(\d+ of \d+\)$", line)]
    assert len(parts) >= 2 * 3                                   # every section splits into parts here
    part = re.compile(r"\(\d+ of \d+\)")
    for a, b in zip(lines, lines[1:]):          # a part split over two lines shows only when they are joined
        assert not part.search(f"{a} {b.strip()}") or part.search(a) or part.search(b), (a, b)
