"""``lineage demo`` end to end on a small copy of the bundled corpus (issue #19's done-when step): it
registers the demo eval set, plants three of its items into a copy of the corpus (``examples/data`` is
not changed), catches exactly those three at publish, and shows the report in ``release show`` and the
HTML QC report; run again, it is a no-op with the same release digest."""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver

from api.app import create_app
from lineage.cli.demo import EXAMPLES, PLANTED
from lineage.service.core import Service
from lineage.settings import Settings
from tests.support.api_world import ServerThread
from tests.support.browser import Page, browser, open_page
from tests.support.cli import lineage

__all__ = ["browser"]  # the session's headless Chromium (tests/support/browser.py)


@pytest.fixture
def page(browser: webdriver.Chrome, request: pytest.FixtureRequest) -> Iterator[Page]:
    yield from open_page(browser, "", request)


def _small_corpus(root: Path) -> Path:
    """The first lines of each bundled corpus file (the demo's inputs, smaller)."""
    root.mkdir()
    for name, lines in (("debian_en.jsonl.gz", 400), ("debian_zh.jsonl.gz", 200)):
        with gzip.open(EXAMPLES / "data" / name, "rt", encoding="utf-8") as fin:
            head = [next(fin) for _ in range(lines)]
        with gzip.open(root / name, "wt", encoding="utf-8") as fout:
            fout.writelines(head)
    return root


def _digests() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((EXAMPLES / "data").iterdir())}


def test_the_demo_plants_eval_items_in_a_copy_and_catches_them(tmp_path: Path, page: Page) -> None:
    before = _digests()
    data, home = _small_corpus(tmp_path / "data"), tmp_path / "home"
    out = lineage(home, "demo", "--data-dir", str(data)).stdout
    assert "debian-quiz:v1: 8 items (registered)" in out
    assert re.search(r"debian-quiz:v1\s*│\s*3 of 8\s*│\s*37\.50%\s*│\s*3\s*│\s*at publish", out), out
    for item_id, _, _ in PLANTED:
        assert f"{item_id}: caught in 1 sample(s)" in out
    page.driver.get((home / "demo-qc.html").as_uri())  # the HTML QC report draws itself: look at it in a browser
    page.wait_mark("ready")
    assert "debian-quiz:v1 3 of 8 37.50% 3" in page.text(".qc-contamination")
    assert len(page.find_all("svg.qc-chart")) == 4
    page.shot("demo-qc")
    url = "http://127.0.0.1:8765/releases/debian-clean/demo"
    assert f"web view of the release: run `lineage serve`, then open {url}" in " ".join(out.split())
    assert _digests() == before  # examples/data is never changed: the items went into the copy
    copy = home / "demo-corpus"
    planted = gzip.decompress((copy / "debian_en.jsonl.gz").read_bytes()).decode("utf-8")
    assert planted.count('"id": "planted-') == 2 and (copy / "debian_zh.jsonl.gz").exists()
    digest = re.search(r"debian-clean@demo \(published\) digest (\S+)", out)
    assert digest is not None
    # a DAG of stages (issue #20): each source cleaned on its own, then merged 0.7/0.3 by words
    for stage, output in (
        ("clean-en", "debian-en-clean v1"),
        ("clean-zh", "debian-zh-clean v1"),
        ("merge", "debian-clean v1"),
    ):
        assert re.search(rf"│ {stage}\s*│ run\s*│ no earlier succeeded run\s*│ {output}", out), out
    assert "Mixture by words" in out  # release show prints the achieved mixture, per source
    achieved = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"│ (debian-\w\w-clean)\s*│.*│\s*([\d.]+)%\s*│\s*[\d.]+\s*│", out)
    }
    assert set(achieved) == {"debian-en-clean", "debian-zh-clean"} and abs(achieved["debian-en-clean"] - 70) < 2, (
        achieved
    )
    again = lineage(home, "demo", "--data-dir", str(data)).stdout
    assert "already registered, no-op" in again and "already published with identical content (no-op)" in again
    for stage in ("clean-en", "clean-zh", "merge"):  # nothing changed: every stage reuses its version
        assert re.search(rf"│ {stage}\s*│ skip\s*│ unchanged since run", again), again
    assert f"debian-clean@demo (published) digest {digest.group(1)}" in again  # a byte-identical copy, release

    # the web view on the demo's catalog: every page type, from the app `lineage serve` runs
    caught = re.search(r"pkg-1: caught in 1 sample\(s\) ([0-9a-f]{32})", out)
    assert caught is not None
    sample = caught.group(1)
    service = Service(Settings(home=home, single_user=True))
    try:
        with ServerThread(create_app(service.settings, service)) as server:
            page.base = server.url
            page.open("/releases/debian-clean/demo")
            assert page.text("#digest") == digest.group(1)
            assert len(page.find_all("#qc svg.qc-chart")) == 4 and "debian-quiz:v1" in page.text(".qc-contamination")
            page.shot("release")
            page.open(f"/?q={sample}")
            assert [g.get_attribute("data-kind") for g in page.find_all(".hits")] == ["sample"]
            page.open(f"/samples/{sample}")
            assert page.text("#releases") == "debian-clean@demo"
            # debian-en-clean (convert and 3 operators) and debian-clean (exact dedupe and the mixture)
            verdicts = [v.text for v in page.find_all("#versions .verdict")]
            assert verdicts == ["kept"] * 6 and len(page.find_all("#versions .version")) == 2
            page.shot("sample")
            page.open("/graph?node=dataset:lineage-ledger:debian-clean")
            shown = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
            versions = {i for i in shown if i.startswith("version:lineage-ledger:debian-clean:v")}
            assert versions and shown - versions == {
                "dataset:lineage-ledger:debian-clean",
                "job:lineage-ledger:debian-demo.merge",  # the merge stage's job, a child of debian-demo's
            }
            page.find('#graph .node[data-id="job:lineage-ledger:debian-demo.merge"] .expand').click()
            page.wait_mark("expanded")
            inputs = {
                i for n in page.find_all("#graph .node") if (i := n.get_attribute("data-id")).startswith("dataset:")
            } - {"dataset:lineage-ledger:debian-clean"}
            assert inputs == {"dataset:lineage-ledger:debian-en-clean", "dataset:lineage-ledger:debian-zh-clean"}, (
                inputs
            )
            page.shot("graph")
            page.open("/datasets/debian-clean")
            assert "debian-clean@demo" in page.text("#versions")
            page.shot("dataset")
    finally:
        service.close()
