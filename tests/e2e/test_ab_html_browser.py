"""`kgen ab --html` as a reader sees it: Debian's chromium driven through Selenium (Debian's
chromium-driver) at a 1400 x 900 window, for a two-field --vary and a --sweep. Everything is read
from the browser's own layout (getBoundingClientRect), not from the HTML text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, browser_env, example, need_tool

WINDOW = (1400, 900)
CASES = {
    "vary": ["--vary", "compute.packer_l1_acc=false,true", "--vary", "compute.math_fidelity=HiFi2,HiFi4"],
    "sweep": ["--sweep", "K=1024,4096,16384"],
}
NUMBER = re.compile(r"^[\s\d.,\u2212\-+x%eE^{}$\\mathdefault()]*$")


def _driver(home, env):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        need_tool("selenium", "pip install -e '.[test]'")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        need_tool("chromium and chromium-driver", "apt-get install -y chromium chromium-driver (.ci/setup does it)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--user-data-dir={home / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver, env=env), options=options)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("ab-browser")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = {}
    for name, flags in CASES.items():
        html = d / f"{name}.html"
        proc = subprocess.run([sys.executable, "-m", "kgen", "ab", str(example("peak_bf16")), *flags, "--html", str(html),
                               "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        out[name] = (html, json.loads(proc.stdout))
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with browser_env() as env:
        driver = _driver(tmp_path_factory.mktemp("chromium"), env)
        yield driver
        driver.quit()


# Every <text> of one chart: its box as laid out, and its string; every axis: its label and ticks.
CHART_JS = """
const out = [];
for (const div of document.querySelectorAll('div.chart')) {
  const svg = div.querySelector('svg');
  const texts = [...svg.querySelectorAll('text')].map(t => {
    const b = t.getBoundingClientRect();
    return {text: t.textContent.trim(), x: b.left, y: b.top, w: b.width, h: b.height};
  }).filter(t => t.w > 0 && t.h > 0 && t.text !== '');
  const axes = [...svg.querySelectorAll('g[id^="matplotlib.axis"]')].map(a => ({
    label: [...a.children].filter(g => g.tagName === 'g' && !/^[xy]tick/.test(g.id))
                          .map(g => g.textContent.trim()).join(' '),
    ticks: [...a.children].filter(g => /^[xy]tick/.test(g.id)).map(g => g.textContent.trim()).filter(t => t)
  }));
  out.push({id: div.id, texts: texts, axes: axes});
}
return out;
"""


def _overlaps(texts: list[dict], slack: float = 0.5) -> list[tuple[str, str]]:
    bad = []
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            if (a["x"] + slack < b["x"] + b["w"] and b["x"] + slack < a["x"] + a["w"]
                    and a["y"] + slack < b["y"] + b["h"] and b["y"] + slack < a["y"] + a["h"]):
                bad.append((a["text"], b["text"]))
    return bad


def first_screen(browser, html: Path, shot_name: str, selectors: tuple[str, ...], tmp_path: Path) -> None:
    """Open the page, keep a screenshot (in $KGEN_SCREENSHOT_DIR when set, to look at), and check
    that each of `selectors` is drawn and ends inside the first viewport."""
    browser.get(html.as_uri())
    shot = Path(os.environ.get("KGEN_SCREENSHOT_DIR", tmp_path)) / shot_name
    shot.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shot))
    height = browser.execute_script("return window.innerHeight")
    assert height <= WINDOW[1]
    for css in selectors:
        box = browser.execute_script(f"return document.querySelector('{css}').getBoundingClientRect().toJSON()")
        assert box["height"] > 0 and box["bottom"] <= height, (css, box, height)


@pytest.mark.parametrize("case", list(CASES))
def test_the_report_answers_first_and_its_charts_are_readable(case, reports, browser, tmp_path):
    html, data = reports[case]
    # the verdict and the summary table lie in the first viewport
    first_screen(browser, html, f"ab-{case}.png", ("#verdict", "#ab-summary"), tmp_path)
    # the winner is marked, and it is the verdict's winner
    winners = browser.execute_script(
        "return [...document.querySelectorAll('#ab-summary tr.winner')].map(r => r.textContent)")
    verdicts = data["verdict"]
    assert len(winners) == len([v for v in verdicts if not v["same_within_resolution"]]) > 0
    for text, v in zip(winners, verdicts):
        assert "fastest" in text
        values = dict(data["variants"][next(k for k, r in data["variants"].items()
                                            if r["variant"] == v["winner"] and r["sweep"] == v["sweep"])]["overrides"])
        for value in values.values():
            assert value in text, (text, v["winner"])
        if v["sweep"] is not None:
            assert f"{v['sweep']:,}" in text
    # every chart: each axis labelled, a quantity's axis with its unit; no two text boxes intersect
    charts = browser.execute_script(CHART_JS)
    assert len(charts) >= 6
    for chart in charts:
        assert chart["axes"], chart["id"]
        for axis in chart["axes"]:
            assert axis["label"], (chart["id"], axis)
            if axis["ticks"] and all(NUMBER.match(t) for t in axis["ticks"]):
                assert re.search(r"\([^)]+\)", axis["label"]), (chart["id"], axis["label"])
        assert _overlaps(chart["texts"]) == [], chart["id"]
    # nothing external: every resource the page loaded is the page itself; no console message
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == []
    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == []
