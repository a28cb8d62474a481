"""`kgen ab` through the command line, as a user runs it: every example, --vary, --sweep, bad flags,
--device without a card, JSON/CSV, and the HTML report in Debian's headless chromium."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import EXAMPLES, ROOT, browser_env, example, need_tool
from kgen.cli import main
from kgen.gen.spec import load


def kgen(*args: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "kgen", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_ab_on_every_example_with_its_variants_and_with_vary(path, capsys):
    # in-process, through the same entry point as the `kgen` command: the process's start is
    # test_startup.py's, and would be most of the time here
    code = main(["ab", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "verdict:" in out and "kernel id" in out and err == ""
    code = main(["ab", str(path), "--vary", "compute.math_fidelity=LoFi,HiFi4", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    rows = list(data["variants"].values()) + data["illegal"] + data["same_kernel"]
    own = load(path).compute.math_fidelity
    # the spec as written is the base: the row of its own fidelity when that row resolves to the spec,
    # else a row `base` (with no compute line, a compute.* value makes a compute config given whole)
    added = data["base"]["variant"] == "base"
    assert added or (data["base"]["variant"] == f"math_fidelity={own}" and own in ("LoFi", "HiFi4"))
    assert sorted(r["variant"] for r in rows) == ["base"] * added + ["math_fidelity=HiFi4", "math_fidelity=LoFi"]
    assert [v["base"] for v in data["verdict"]] == [data["base"]["variant"]]
    for kid, row in data["variants"].items():
        want = own if row["variant"] == "base" else row["variant"].split("=")[1]
        assert row["kernel_id"] == kid and row["plan"]["math_fidelity"] == want


def test_ab_peak_bf16_text_shows_l1acc_faster_than_spill_with_the_reason():
    proc = kgen("ab", str(example("peak_bf16")))
    assert proc.returncode == 0, proc.stderr
    verdict = " ".join(proc.stdout.split("verdict:")[1].split())          # the wrapped lines, rejoined
    # l1acc is base's kernel: the next fastest after base is spill
    assert re.search(r"^base is the fastest, \d\.\d\dx faster than the next, spill: [\d,.]+ vs [\d,.]+ us predicted "
                     r"why: packer_l1_acc vs spill_reload; [\d,]+ fewer partials reload copies in base than in spill; "
                     r"[\d,]+ fewer reload cycles on base's critical core than on spill's", verdict), verdict
    assert "l1acc: mm_" in proc.stdout and "(same kernel as base: not run twice)" in proc.stdout
    assert "K-faithful proxy" in proc.stdout


def test_ab_json_csv_and_sweep(tmp_path):
    out_csv = tmp_path / "ab.csv"
    proc = kgen("ab", str(example("peak_small")), "--sweep", "K=512,1024", "--json", "--csv", str(out_csv))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["sweep"] == {"field": "K", "values": [512, 1024]}
    assert len(data["variants"]) == 6 and len(data["verdicts"]) == 2
    assert {r["numerics"]["k"] for r in data["variants"].values()} == {512, 1024}
    lines = list(csv.DictReader(out_csv.open()))
    assert len(lines) == 6 and {line["Operation"] for line in lines} == set(data["variants"])
    for line in lines:
        row = data["variants"][line["Operation"]]
        assert line["Disposition"] == "not_verified" and int(line["k"]) == row["numerics"]["k"]
        assert line["Runtime"] == "" and float(line["predicted_ms"]) == pytest.approx(row["speed"]["microseconds"] / 1000)
        assert int(line["ops:reload copies"]) == row["ops"]["reload copies"]


@pytest.mark.parametrize("args, words", [
    (["--vary", "compute.packer_l1_ac=false,true"], ["unknown key `compute.packer_l1_ac`", "compute.packer_l1_acc"]),
    (["--vary", "compute.math_fidelity=HiFi9"], ["variant `compute.math_fidelity=HiFi9`", "HiFi4"]),
    (["--vary", "novalue"], ["FIELD=V1,V2"]),
    (["--sweep", "K=100"], ["multiple of the 32-element tile", "rule: tile"]),
    (["--sweep", "X=1"], ["not a dimension or a numeric field"]),
    (["--vary", "block.in0_block_w=3,5"], ["`in0_block_w=3`", "`in0_block_w=5`", "rule:"]),
    (["--html", "/nonexistent-folder/x.html"], ["does not exist"]),
])
def test_ab_bad_flags_exit_2_with_one_paragraph(args, words, tmp_path):
    proc = kgen("ab", str(example("peak_bf16")), *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for w in words:
        assert w in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []          # nothing written


def test_ab_lists_an_illegal_variant_and_compares_the_others():
    proc = kgen("ab", str(example("peak_bf16")), "--vary", "block.in0_block_w=3,4")
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if "illegal:" in x]
    assert "in0_block_w=3" in line and "rule:" in line
    assert "in0_block_w=4: " in proc.stdout and "verdict:" in proc.stdout


def test_ab_device_without_a_card_says_so_and_exits_2():
    try:
        import ttnn  # noqa: F401
        pytest.skip("ttnn is importable here: the no-card path is not what this machine shows")
    except ImportError:
        pass
    proc = kgen("ab", str(example("peak_small")), "--device")
    assert proc.returncode == 2 and "no Tenstorrent card" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_ab_emulate_is_bit_exact_on_peak_small(host_cxx, tmp_path):
    out_csv = tmp_path / "ab.csv"
    proc = kgen("ab", str(example("peak_small")), "--emulate", "--json", "--csv", str(out_csv), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for row in data["variants"].values():
        assert row["emulated"]["exact_match"] and row["emulated"]["ok"], row["variant"]
    assert all("bit-exact in emulation" in v for v in data["verdicts"])
    # emulated and bit-exact: passed, from that check; no card, so no Runtime
    lines = list(csv.DictReader(out_csv.open()))
    assert [line["Disposition"] for line in lines] == ["passed"] * len(data["variants"])
    assert all(line["Runtime"] == "" for line in lines)
    # stderr is no terminal here: a plain line as each emulation starts and ends
    for row in data["variants"].values():
        assert f"kgen: emulate {row['variant']}: started" in proc.stderr, proc.stderr
        assert re.search(rf"kgen: emulate {row['variant']}: ok, bit-exact in [\d.]+ s", proc.stderr), proc.stderr


# ----------------------------------------------------------------------------------------------
# the HTML report

@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One report with a sweep (so every chart has lines) and its JSON, from the same run's flags."""
    d = tmp_path_factory.mktemp("ab-report")
    html = d / "report.html"
    proc = kgen("ab", str(example("peak_small")), "--sweep", "K=512,1024", "--html", str(html), "--json")
    assert proc.returncode == 0, proc.stderr
    return html, json.loads(proc.stdout)


class _Cells(HTMLParser):
    """The numbers of the side-by-side table (<td data-path=...>) and every URL-bearing attribute."""

    def __init__(self):
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self.urls: list[str] = []
        self._path: str | None = None
        self._text = ""
        self.tags: dict[str, int] = {}
        self.rows: list[list[str]] = []          # the data-paths of each <tr>

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        a = dict(attrs)
        if tag == "tr":
            self.rows.append([])
        if tag == "td" and "data-path" in a:
            self.rows[-1].append(a["data-path"])
        for key in ("href", "src", "xlink:href", "action", "srcset", "poster", "data"):
            if key in a and not str(a[key]).startswith("#"):
                self.urls.append(f"{tag} {key}={a[key]}")
        if tag == "td" and "data-path" in a:
            self._path, self._text = a["data-path"], ""

    def handle_data(self, data):
        if self._path is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td" and self._path is not None:
            self.cells.append((self._path, self._text.strip()))
            self._path = None


def _at(data, path: str):
    node = data
    for part in path.split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def test_html_numbers_equal_the_json(report):
    html, data = report
    parser = _Cells()
    parser.feed(html.read_text())
    assert len(parser.cells) > 100
    # one fact per line: every cell of a row shows the same figure of its own variant (variants with
    # different L1 regions must not shift the lines)
    for paths in filter(None, parser.rows):
        suffixes = {p.split("/", 2)[2] for p in paths}
        assert len(suffixes) == 1, paths
    assert {p.split("/")[1] for p in (c[0] for c in parser.cells)} == set(data["variants"])
    for path, text in parser.cells:
        value = _at(data, path)
        shown = float(text.replace(",", ""))
        if path.endswith("utilization"):
            value *= 100
        # the cell shows the JSON value rounded to the digits it prints
        if "e" in text:
            assert shown == pytest.approx(value, rel=1e-2), (path, text, value)
        else:
            digits = len(text.split(".")[1]) if "." in text else 0
            assert abs(shown - value) <= 0.5 * 10 ** -digits + 1e-12, (path, text, value)


def test_html_has_no_external_urls(report):
    html, _ = report
    text = html.read_text()
    parser = _Cells()
    parser.feed(text)
    assert parser.urls == []
    # url(#id) is a reference inside the file (matplotlib's clip paths); anything else would be fetched
    external = r"https?:|ftp:|//cdn|url\(\s*['\"]?(?!#)|@import|<link\b|<script\b[^>]*\bsrc=|<iframe|<img\b"
    found = re.search(external, text, re.I)
    assert found is None, text[max(0, found.start() - 80):found.end() + 80]
    assert text.count("url(#") > 0          # the charts' clip paths are inline


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    need_tool("chromium", "apt-get install -y chromium (.ci/setup does it)")


def _browser(args: list[str], user_dir: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={user_dir}", "--enable-logging=stderr", "--v=0"]
    with browser_env() as env:
        return subprocess.run([_chromium(), *flags, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_html_renders_in_headless_chromium(report, tmp_path):
    html, data = report
    # 1. a screenshot of the report as it is
    shot = tmp_path / "shot.png"
    proc = _browser([f"--screenshot={shot}", "--window-size=1400,5000", html.as_uri()], tmp_path / "u1")
    assert shot.is_file(), proc.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[0] >= 4000 and pixels.shape[1] >= 1400
    assert (pixels[..., :3] < 0.9).any(axis=2).mean() > 0.05     # not a blank page: text, tables and charts
    # 2. its DOM as the browser parsed it, and no console message at all (the report has no script;
    # a resource that failed to load would be one)
    proc = _browser(["--dump-dom", html.as_uri()], tmp_path / "u2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    dom = proc.stdout
    for chart in ("chart-time", "chart-busy", "chart-error", "chart-hist", "chart-l1", "chart-ops"):
        m = re.search(rf'<div class="chart" id="{chart}">(.*?)</div>', dom, re.S)
        assert m and "<svg" in m.group(1) and m.group(1).count("<path") > 5, chart
    for label in (r["variant"] for r in data["variants"].values()):
        assert label in dom
    # 3. the laid-out size of every chart, measured by the browser itself: a copy of the report
    # with a script that writes each <svg>'s box into the DOM
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text().replace("</body>", """<script>
for (const div of document.querySelectorAll('div.chart')) {
  const box = div.querySelector('svg').getBoundingClientRect();
  div.setAttribute('data-box', Math.round(box.width) + 'x' + Math.round(box.height));
}</script></body>"""))
    proc = _browser(["--dump-dom", "--window-size=1400,5000", probe.as_uri()], tmp_path / "u3")
    boxes = dict(re.findall(r'id="(chart-\w+)" data-box="(\d+x\d+)"', proc.stdout))
    assert set(boxes) == {"chart-time", "chart-busy", "chart-error", "chart-hist", "chart-l1", "chart-ops"}, proc.stdout[:500]
    for chart, box in boxes.items():
        w, h = (int(v) for v in box.split("x"))
        assert w > 200 and h > 100, (chart, box)


def test_ab_sweep_shows_8449_and_46101_through_the_cli():
    """peak_bf16 has fp32_dest_acc = false: all-ones at K = 6144 gives 8192 with spill/reload in the
    bf16 Dst (tt-metal #8449), and the random inputs' PCC falls as K grows (#46101)."""
    proc = kgen("ab", str(example("peak_bf16")), "--sweep", "K=1024,6144", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {(r["variant"], r["sweep"]): r for r in json.loads(proc.stdout)["variants"].values()}
    ones = rows[("spill", 6144)]["numerics"]["errors"]["all_ones"]
    assert ones["first_value"] == 8192.0 and rows[("spill", 6144)]["plan"]["fp32_dest_acc"] is False
    assert rows[("spill", 1024)]["numerics"]["errors"]["all_ones"]["first_value"] == 1024.0
    for v in ("base", "spill"):
        assert (rows[(v, 6144)]["numerics"]["errors"]["random"]["pcc"]
                < rows[(v, 1024)]["numerics"]["errors"]["random"]["pcc"]), v


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize("flags", [
    [],
    ["--vary", "compute.packer_l1_acc=false,true", "--vary", "compute.math_fidelity=HiFi2,HiFi4"],
    ["--sweep", "K=1024,4096,16384"],
], ids=["variants", "vary", "sweep"])
def test_ab_fits_an_80_and_a_100_column_terminal(flags, columns):
    """The README's examples with COLUMNS=80 and 100: no line over the width, a split table's title
    never broken inside its part (`(3 of` then `3)`), a sweep one row per value."""
    env_columns = {**os.environ, "COLUMNS": str(columns)}
    env = {**env_columns, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "kgen", "ab", str(example("peak_bf16")), *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns, max(lines, key=len)
    part = re.compile(r"\(\d+ of \d+\)")
    for a, b in zip(lines, lines[1:]):          # a part split over two lines shows only when they are joined
        assert not part.search(f"{a} {b.strip()}") or part.search(a) or part.search(b), (a, b)
    if columns == 80:
        return
    if flags and flags[0] == "--sweep":
        summary = lines[next(i for i, line in enumerate(lines) if line.startswith("summary")):]
        assert "(1 of" not in summary[0]            # one table: every row whole
        for k in ("1,024", "4,096", "16,384"):
            rows = [line for line in summary if line.startswith(k + " ")]
            assert [line.split()[1] for line in rows] == ["base", "spill", "l1acc"], rows
