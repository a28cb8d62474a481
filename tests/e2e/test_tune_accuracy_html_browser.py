"""`kgen tune --min-pcc --html` as a reader sees it: Debian's chromium through Selenium at 1400 x
900 (as tests/e2e/test_ab_html_browser.py does for `kgen ab`). Read from the browser's own layout:
the answer and the front come first, the pick is the table's last row and is marked on the chart,
the target is a line, the axes say their units, no two labels overlap, nothing is loaded from
elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, browser_env
from test_ab_html_browser import CHART_JS, _driver, _overlaps, first_screen

SPEC = """matmul small_bh {
    arch  = blackhole
    shape = 128 x 128 x 256
    dtype { in0 = bfloat16  in1 = bfloat16  out = bfloat16 }
    grid  = 2 x 2
    dataflow = mcast_2d
    block { per_core = 2 x 2  out_block = 2 x 2 }
}
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("tune-browser")
    spec, html = d / "small.kspec", d / "front.html"
    spec.write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "kgen", "tune", str(spec), "--min-pcc", "0.9999", "--allow-dtype",
                           "in1", "--no-db", "-j", "1", "--html", str(html), "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return html, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with browser_env() as env:
        driver = _driver(tmp_path_factory.mktemp("chromium"), env)
        yield driver
        driver.quit()


@pytest.mark.slow
def test_the_page_answers_first_and_its_chart_is_readable(page, browser, tmp_path):
    html, data = page
    first_screen(browser, html, "tune-accuracy.png", ("#answer", "#front"), tmp_path)
    answer = browser.execute_script("return document.querySelector('#answer').textContent")
    pick = data["pick"]
    assert f"{pick['microseconds']:,.2f} us" in answer and "PCC >= 0.9999" in answer
    rows = browser.execute_script("return [...document.querySelectorAll('#front tbody tr')]"
                                  ".map(r => [r.className, r.textContent])")
    assert len(rows) == len(data["front"]) >= 2
    assert rows[-1][0] == "pick" and "pick" in rows[-1][1] and all(c == "misses" for c, _ in rows[:-1])
    charts = browser.execute_script(CHART_JS)
    assert len(charts) == 1
    chart = charts[0]
    labels = [a["label"] for a in chart["axes"]]
    assert any("(us)" in label for label in labels) and any("1 - PCC" in label for label in labels)
    texts = [t["text"] for t in chart["texts"]]
    assert any(t.startswith("target: PCC >= 0.9999") for t in texts)
    assert any(t == f"pick: {pick['microseconds']:,.2f} us" for t in texts)
    assert _overlaps(chart["texts"]) == []
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == []
    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == []
