"""The web view in a real headless Chromium: every page type on a small catalog, search to a sample's
lineage, expanding a graph node, the "as of" date, the offline API docs; no console error anywhere
(the ``page`` fixture checks the console after each test). Screenshots: build/screenshots/<test>/."""

from __future__ import annotations

from urllib.parse import quote

from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.browser import Page
from tests.support.web_world import WebWorld


def same_origin_only(page: Page) -> list[str]:
    """Every resource the page loaded that did not come from our server (none may: no CDN)."""
    names = page.driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return [n for n in names if not n.startswith(page.base) and not n.startswith("data:")]


def test_docs_and_redoc_render_with_no_cdn(page: Page) -> None:
    page.driver.get(page.base + "/docs")
    WebDriverWait(page.driver, 30).until(lambda d: page.find_all(".swagger-ui .opblock"))
    assert "lineage-ledger" in page.text(".swagger-ui .info .title")
    assert len(page.find_all(".swagger-ui .opblock")) > 40
    assert same_origin_only(page) == []
    page.shot("docs")
    page.driver.get(page.base + "/redoc")
    WebDriverWait(page.driver, 30).until(lambda d: page.find_all("h1") and "lineage-ledger" in page.text("h1"))
    WebDriverWait(page.driver, 30).until(lambda d: "search" in page.driver.page_source)
    assert same_origin_only(page) == []
    page.shot("redoc")


def test_search_a_sample_id_and_see_its_lineage(page: Page, web_world: WebWorld) -> None:
    page.open("/")
    assert {a.text for a in page.find_all("#releases a")} == {"clean@v1", "clean@v2", "clean@forced"}
    box = page.find("#search-box")
    page.navigate(lambda: box.send_keys(web_world.duplicate, Keys.ENTER))
    groups = page.find_all(".hits")
    assert [g.get_attribute("data-kind") for g in groups] == ["sample"]
    page.shot("search")
    page.navigate(page.find(".hits a.hit").click)
    assert page.text("#sample-id") == web_world.duplicate
    assert page.text("#source-uri").endswith("sub/b.jsonl")
    versions = page.find_all("#versions .version")
    assert len(versions) == 2 and all("not in the output" in v.text for v in versions)
    assert "exact_duplicate" in versions[1].text
    assert page.text("#kept-sample") == web_world.kept
    page.find("#why-not-ask").click()
    page.wait_mark("why-not")
    assert "dropped it: exact_duplicate" in page.text("#why-not-answer")
    page.shot("sample")


def test_search_groups_by_kind(page: Page, web_world: WebWorld) -> None:
    page.open("/?q=clean")
    kinds = [g.get_attribute("data-kind") for g in page.find_all(".hits")]
    assert kinds == ["dataset", "release"]
    page.open("/?q=bucket")
    assert [g.get_attribute("data-kind") for g in page.find_all(".hits")] == ["source"]
    assert {a.text for a in page.find_all(".hits a")} == {"s3://bucket/raw", "s3://bucket/extra"}
    page.open(f"/?q={quote(str(web_world.corpus / 'sub' / 'b.jsonl'))}")  # a file inside the folder a run read
    assert "samples in clean@forced (1), clean@v1 (1), clean@v2 (1)" in page.text('.hits[data-kind="source"]')
    page.open("/?q=no-such-thing-anywhere")
    assert page.text("#no-hits") == "Nothing matches."


def test_a_dropped_sample_shows_the_rule_value_and_threshold(page: Page, web_world: WebWorld) -> None:
    page.open(f"/samples/{web_world.short}")
    rows = [r.text for r in page.find_all("#versions .version")[0].find_elements("css selector", "table.rules tr")]
    assert any(r.startswith("quality:min_words 1.000 >= 3.000 FAIL") for r in rows), rows
    assert page.text("#releases") == "none"


def test_the_graph_opens_one_hop_deep_and_expands_a_node(page: Page) -> None:
    page.open("/graph?node=" + "dataset:lineage-ledger:clean")
    nodes = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
    versions = {"version:lineage-ledger:clean:v1", "version:lineage-ledger:clean:v2"}  # the catalog's
    assert nodes == {"dataset:lineage-ledger:clean", "job:lineage-ledger:api-test"} | versions
    job = page.find('#graph .node[data-id="job:lineage-ledger:api-test"]')
    assert "↑1 ↓3" in job.text  # the files it read; the dataset and its two runs
    assert "↑1 ↓2" in page.find('#graph .node[data-id="dataset:lineage-ledger:clean"]').text
    page.clear_marks("expanded")
    job.find_element("css selector", ".expand").click()
    page.wait_mark("expanded")
    nodes = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
    assert len(nodes) == 7 and any(n.startswith("dataset:file:") for n in nodes), nodes
    assert len([n for n in nodes if n.startswith("run:")]) == 2
    # file -> job -> dataset -> versions, job -> runs; a run's edge to its version comes when it is expanded
    assert len(page.find_all("#graph .edge")) == 6
    page.shot("graph")
    page.clear_marks("reloaded")
    Select(page.find("#depth")).select_by_value("0")
    page.wait_mark("reloaded")
    assert [n.get_attribute("data-id") for n in page.find_all("#graph .node")] == ["dataset:lineage-ledger:clean"]
    assert "depth=0" in page.driver.current_url
    page.clear_marks("reloaded")
    Select(page.find("#depth")).select_by_value("2")
    page.wait_mark("reloaded")
    # two hops, without expanding: the files the job read; the versions' runs and their releases
    kinds = sorted(n.get_attribute("class").split()[1] for n in page.find_all("#graph .node"))
    assert kinds == ["dataset", "dataset", "job", "release", "release", "release", "run", "run", "version", "version"]
    page.navigate(page.find('#graph .node[data-id="dataset:lineage-ledger:clean"] a').click)
    assert page.text("#dataset-name") == "clean"


def test_a_release_node_expands_to_its_version_and_its_reader(page: Page, web_world: WebWorld) -> None:
    page.open("/graph?node=" + quote("release:lineage-ledger:clean@v2"))
    nodes = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
    version = "version:lineage-ledger:clean:v2"
    assert nodes == {"release:lineage-ledger:clean@v2", version, "model:lineage-ledger:train-1"}
    reader = page.find('#graph .node[data-id="model:lineage-ledger:train-1"]')
    assert "model" in reader.get_attribute("class").split() and "training job · ↑1 ↓0" in reader.text
    assert "release · ↑1 ↓1" in page.find('#graph .node[data-id="release:lineage-ledger:clean@v2"]').text
    page.clear_marks("expanded")
    page.find(f'#graph .node[data-id="{version}"] .expand').click()
    page.wait_mark("expanded")
    nodes = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
    run = web_world.service.get_version("clean", 2).run_id  # the run that made the version
    assert nodes >= {"dataset:lineage-ledger:clean", f"run:lineage-ledger:{run}", "release:lineage-ledger:clean@forced"}
    assert f"api-test {run[:8]}" in page.text(f'#graph .node[data-id="run:lineage-ledger:{run}"] .name')
    page.shot("graph-release")
    page.navigate(page.find('#graph .node[data-id="release:lineage-ledger:clean@forced"] a').click)
    assert page.text(".qc-override").endswith(": smoke test only")  # the release page of that node


def test_the_graph_as_of_a_date(page: Page) -> None:
    page.open("/graph?node=dataset:warehouse:events&depth=2")
    now = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
    assert now == {
        "dataset:warehouse:events",
        "job:etl:nightly",
        "dataset:s3://bucket:raw",
        "dataset:s3://bucket:extra",
    }
    page.clear_marks("reloaded")
    page.driver.execute_script(
        "const el = document.getElementById('as-of'); el.value = '2022-01-01T00:00:00';"
        "el.dispatchEvent(new Event('change'))"
    )
    page.wait_mark("reloaded")
    then = {n.get_attribute("data-id") for n in page.find_all("#graph .node")}
    assert then == now - {"dataset:s3://bucket:extra"}
    assert "asOf=" in page.driver.current_url
    page.shot("as-of-2022")
    page.clear_marks("reloaded")
    page.allow(r"/api/v1/lineage\?nodeId=dataset%3Awarehouse%3Aevents&depth=2&asOf=2019-.* 404")  # the answer shown
    page.driver.execute_script(
        "const el = document.getElementById('as-of'); el.value = '2019-01-01T00:00:00';"
        "el.dispatchEvent(new Event('change'))"
    )
    page.wait_mark("reloaded")
    assert "was not in the lineage graph yet" in page.text("#error")


def test_the_release_page(page: Page, web_world: WebWorld) -> None:
    release = web_world.service.get_release("clean@v2")
    page.open("/releases/clean/v2")
    page.wait_mark("diff")  # drawn after 'ready': on a large release the diff takes longer than the page
    assert page.text("#digest") == release.content_digest
    summary = page.text("#summary")
    assert "clean:v2" in summary and "datasets/clean/data @ Delta version 1" in summary
    assert len(page.find_all("#qc svg.qc-chart")) == 4  # funnel, lengths, scripts, drop rates
    assert "min_samples 4 1 pass" in page.text(".qc-gate")
    assert "quality quality:min_words 3 1 0 1" in page.text(".qc-rules")  # with the run's threshold
    assert "local verified primary" in page.text("#replicas")
    assert "train-1" in page.text("#reads")
    diff = page.text("#diff")
    assert "against clean@v1: +1 −0 changed 0" in diff and "schema unchanged" in diff
    page.shot("release")
    page.open("/releases/clean/v1")
    assert "no earlier release named clean" in page.text("#diff")


def test_a_gate_override_shows_who_overrode_it_and_why(page: Page) -> None:
    page.open("/releases/clean/forced")
    assert "min_samples 4 100 FAIL" in page.text(".qc-gate")
    assert page.text(".qc-override").startswith("overridden by local at ")
    assert page.text(".qc-override").endswith(": smoke test only")
    page.wait_mark("diff")
    assert "against clean@v2: +0 −0 changed 0" in page.text("#diff")


def test_the_dataset_and_run_pages(page: Page, web_world: WebWorld) -> None:
    page.open("/datasets/clean")
    rows = page.find_all("#versions tbody tr")
    assert len(rows) == 2 and "clean@v2" in rows[1].text
    assert len(page.find_all("#runs tbody tr")) == 2
    page.shot("dataset")
    page.navigate(page.find("#runs tbody tr a").click)
    assert '"min_words":3' in page.text("#operators")
    page.shot("run")


def test_an_unknown_release_is_an_answer_not_a_crash(page: Page) -> None:
    page.allow(r"/api/v1/releases/nope/v9.* 404")
    page.open("/releases/nope/v9")
    assert "does not exist" in page.text("#error")
