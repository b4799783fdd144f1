"""The QC report's charts in a real browser: axis labels never overlap and a small bar stays visible,
in the standalone HTML report (``lineage release report``), which is the same rendering as the web page's
(the release page imports the very file the report inlines)."""

from __future__ import annotations

from pathlib import Path

import httpx

from lineage.releases.qc import CHARTS_JS, report_html
from tests.support.browser import Page
from tests.support.cli import lineage
from tests.support.web_world import WebWorld

# many sources with long names and one with a tiny drop rate beside a large one: the old vertical
# chart's labels overlapped here, and a 0.01% bar was 0 pixels high
SOURCES = [
    {"source": f"a-very-long-source-dataset-name-number-{i:02d}", "kept": 10_000, "dropped": d, "drop_rate": d / 10_000}
    for i, d in enumerate([1] + [9_000] + [i * 37 for i in range(2, 30)])
]
REPORT = {
    "samples": 300_000,
    "rules": [{"operator": "quality", "rule": "quality:min_words", "dropped": 5, "modified": 0, "failed": 5}],
    "length_histogram": [
        {"from": lo, "to": hi, "count": c} for lo, hi, c in [(0, 50, 1), (50, 100, 250_000), (100, None, 3)]
    ],
    "scripts": {"han": 0.0001, "latin": 0.9999, "other": 0.0},
    "sources": SOURCES,
    "exact_duplicate_rate": 0.0,
    "operators": ["convert", "quality"],
    "rule_sets": ["quality"],
}
STEPS = [{"step": 0, "operator": "convert", "in": 300_010, "kept": 300_010, "dropped": 0, "modified": 0, "reasons": {}}]


def boxes(page: Page, css: str) -> list[dict]:
    return page.driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => {"
        "const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height,"
        "chart: [...document.querySelectorAll('svg.qc-chart')].indexOf(e.closest('svg')),"
        "value: Number(e.dataset.value ?? 'NaN')}})",
        css,
    )


def overlapping(labels: list[dict]) -> list[tuple[int, int]]:
    found = []
    for i, a in enumerate(labels):
        for j, b in enumerate(labels[i + 1 :], i + 1):
            if a["chart"] != b["chart"]:
                continue
            if (
                a["x"] < b["x"] + b["w"]
                and b["x"] < a["x"] + a["w"]
                and a["y"] < b["y"] + b["h"]
                and b["y"] < a["y"] + a["h"]
            ):
                found.append((i, j))
    return found


def test_the_standalone_report_has_no_overlapping_labels_and_no_invisible_bars(page: Page, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text(report_html("big@v1", REPORT, None, steps=STEPS, quarantine={"bad_json": 2}), encoding="utf-8")
    page.driver.get(out.as_uri())
    page.wait_mark("ready")
    assert len(page.find_all("svg.qc-chart")) == 4
    labels = boxes(page, "svg.qc-chart .qc-label")
    assert len(labels) == 1 + 3 + 3 + len(SOURCES)
    assert overlapping(labels) == []
    bars = boxes(page, "svg.qc-chart rect.qc-bar")
    small = [b for b in bars if b["value"] > 0 and b["w"] < 3]
    assert small == [], small
    assert [b["w"] for b in bars if b["value"] == 0] == [0]  # "other" 0%: no bar
    page.shot("standalone-report")


def test_the_web_page_loads_the_rendering_the_report_inlines(page: Page, web_world: WebWorld) -> None:
    served = httpx.get(f"{web_world.url}/assets/web/qc_report.js").text
    assert served == CHARTS_JS.read_text(encoding="utf-8")
    assert served in report_html("x@v1", REPORT, None)
    page.open("/releases/clean/v2")
    loaded = page.driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert f"{web_world.url}/assets/web/qc_report.js" in loaded
    assert overlapping(boxes(page, "svg.qc-chart .qc-label")) == []


def test_the_cli_report_has_the_funnel_thresholds_and_the_diff_with_the_previous_release(
    page: Page, web_world: WebWorld, tmp_path: Path
) -> None:
    out = tmp_path / "qc.html"
    lineage(web_world.service.settings.home, "release", "report", "clean@v2", "--out", str(out))
    page.driver.get(out.as_uri())
    page.wait_mark("ready")
    digest = web_world.service.get_release("clean@v2").content_digest
    assert f"content digest {digest}" in page.text(".qc-summary")
    assert "dataset version clean:v2" in page.text(".qc-summary")
    assert "2 quality 5 4 1 0 quality:min_words: 1" in page.text(".qc-steps")  # the funnel's table
    assert "quality quality:min_words 3 1 0 1" in page.text(".qc-rules")  # the run's threshold beside the counts
    assert page.text(".qc-diff-head") == "against clean@v1: +1 −0 changed 0"
    assert "raw 1 0 0" in page.text(".qc-diff-sources")
    page.shot("cli-report")


def test_the_report_shows_the_requested_and_achieved_mixture(page: Page, tmp_path: Path) -> None:
    mixture = {
        "unit": "words",
        "total": 1000.0,
        "seed": 7,
        "sources": [
            {
                "source": "en",
                "weight": 0.7,
                "requested_share": 0.7,
                "target": 700.0,
                "available": 900.0,
                "selected": 700.0,
                "served": 700.0,
                "achieved_share": 0.7,
                "epochs": 0.778,
                "shares": {},
            },
            {
                "source": "zh",
                "weight": 0.3,
                "requested_share": 0.3,
                "target": 300.0,
                "available": 150.0,
                "selected": 150.0,
                "served": 300.0,
                "achieved_share": 0.3,
                "epochs": 2.0,
                "shares": {},
            },
        ],
    }
    out = tmp_path / "report.html"
    out.write_text(report_html("mix@v1", {**REPORT, "mixture": mixture}, None), encoding="utf-8")
    page.driver.get(out.as_uri())
    page.wait_mark("ready")
    rows = page.driver.execute_script(
        "return [...document.querySelectorAll('table.qc-mixture tr')].map(r => [...r.cells].map(c => c.textContent))"
    )
    assert rows[1:] == [
        ["en", "0.7", "70.00%", "700", "900", "700", "700", "70.00%", "0.778"],
        ["zh", "0.3", "30.00%", "300", "150", "150", "300", "30.00%", "2.000"],
    ]
    assert "by words, seed 7, total 1,000" in page.driver.find_element("css selector", "p.qc-mixture-head").text
    page.shot("mixture")
