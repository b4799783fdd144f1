"""Contamination on real runs and releases (issue #19, item 2), on SQLite and a real PostgreSQL: the
``decontaminate`` operator in a pipeline run (drop and flag, the evidence in each sample's lineage), the
report stored in the manifest at publish, and ``evalset check`` recording its result on each published
release without changing the release."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver

from lineage.client import Client
from lineage.errors import Invalid, NotFound
from lineage.service.core import Service
from lineage.settings import Settings
from operators.schema import sample_id
from tests.support.api_world import BACKENDS, make_settings
from tests.support.browser import Page, browser, open_page  # noqa: F401  (the session's headless Chromium)
from tests.support.cli import lineage
from tests.support.evalset_items import LONG_EN, LONG_ZH, OTHER_EN, items_v1, write_items
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.helpers import write_jsonl

CLEAN = [
    "the package manager resolves dependencies before installing each archive and verifies its signature",
    "a compiler translates source code into machine code and a linker joins the object files together",
    "软件包管理器在安装每个归档文件之前会解析依赖关系并验证签名以防止损坏的镜像替换系统中的库文件",
]
PLANTED = {
    "en": f"Exam preparation notes. {LONG_EN} Mars Venus Jupiter Saturn. The answer is A.",  # q1, whole
    "zh": f"今天的练习题：{LONG_ZH} 答案是北京。",  # q2, the question only
    "mixed": f"中文网页引用了一道英文题目：{OTHER_EN}",  # q6, in mixed text
}


@dataclass
class World:
    settings: Settings
    service: Service
    root: Path


def _sid(key: str) -> str:
    return sample_id("web", f"id:{key}")


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"contamination-{request.param}")
    settings = make_settings(tmp, request.param, request)
    service = Service(settings)
    items = write_items(tmp / "mmlu-zh.jsonl", items_v1())
    service.register_evalset("mmlu-zh", str(items), text_fields=["question", "choices"], id_field="id")
    records = [{"id": f"clean{i}", "text": t} for i, t in enumerate(CLEAN)]
    records += [{"id": k, "text": t} for k, t in PLANTED.items()]
    write_jsonl(tmp / "web" / "web.jsonl", records)
    service.run_pipeline(_pipeline(tmp, "web-raw", []))
    service.create_release({"name": "web-raw", "tag": "v1"})
    yield World(settings, service, tmp)
    service.close()


def _pipeline(root: Path, output: str, operators: list[dict]) -> dict:
    return {
        "name": output,
        "inputs": [{"dataset": "web", "path": str(root / "web"), "id_field": "id"}],
        "operators": operators,
        "output": {"dataset": output},
    }


def _contamination(world: World, dataset: str) -> dict[str, dict]:
    dv = world.service.get_version(dataset, 1)
    table = world.service.tables.get(dv.tier, dv.lineage_path, dv.lineage_delta_version).dataset.to_table()
    return {
        r["sample_id"]: {**r["detail"]["contamination"], "verdict": r["verdict"], "reason": r["reason"]}
        for r in table.to_pylist()
        if r["operator"] == "decontaminate"
    }


def test_decontaminate_drops_planted_items_and_records_the_evidence(world: World) -> None:
    op = {"name": "decontaminate", "params": {"evalsets": ["mmlu-zh:v1"]}}
    result = world.service.run_pipeline(_pipeline(world.root, "web-decon", [op]))
    assert result.row_count == len(CLEAN)
    found = _contamination(world, "web-decon")
    assert set(found) == {_sid(k) for k in [*PLANTED, *(f"clean{i}" for i in range(3))]}  # every sample checked
    assert all(d["checked"] == ["mmlu-zh:v1"] for d in found.values())
    assert {k for k, d in found.items() if d["verdict"] == "dropped"} == {_sid(k) for k in PLANTED}
    assert all(d["reason"] == "contaminated" for d in found.values() if d["verdict"] == "dropped")
    assert {k: [m["item_id"] for m in d["matches"]] for k, d in found.items() if d["matches"]} == {
        _sid("en"): [sample_id("mmlu-zh", "id:q1")],
        _sid("zh"): [sample_id("mmlu-zh", "id:q2")],
        _sid("mixed"): [sample_id("mmlu-zh", "id:q6")],
    }
    (en,) = found[_sid("en")]["matches"]
    q1_words = len(LONG_EN.split()) + 4  # question and choices
    assert en["item_ngrams"] == q1_words - 13 + 1 == en["matched_item_ngrams"]  # all of q1 is there
    assert en["sample_ngrams"] == 3 + q1_words + 4 - 13 + 1 and en["matched_sample_ngrams"] == en["item_ngrams"]
    (zh,) = found[_sid("zh")]["matches"]
    assert 0 < zh["matched_item_ngrams"] < zh["item_ngrams"]  # the question, not its choices
    run = world.service.get_run(result.run.id)
    (params,) = [o["params"] for o in run.operators if o["name"] == "decontaminate"]
    assert [s["evalset"] for s in params["sources"]] == ["mmlu-zh:v1"]  # the run pins what it checked


def test_flag_keeps_samples_and_the_threshold_applies_to_the_chosen_coverage(world: World) -> None:
    op = {"name": "decontaminate", "params": {"action": "flag", "coverage": "item", "threshold": 0.5}}
    result = world.service.run_pipeline(_pipeline(world.root, "web-flag", [op]))
    assert result.row_count == len(CLEAN) + len(PLANTED)  # nothing dropped
    found = _contamination(world, "web-flag")
    assert all(d["verdict"] == "kept" for d in found.values())
    # flagged exactly when some item has more than half of its n-grams in the sample: all of q1 is in "en";
    # "zh" holds q2's question but not its choices
    flagged = {k for k, d in found.items() if d["contaminated"]}
    coverage = {
        k: max((m["matched_item_ngrams"] / m["item_ngrams"] for m in d["matches"]), default=0) for k, d in found.items()
    }
    assert flagged == {k for k, c in coverage.items() if c > 0.5}
    assert coverage[_sid("en")] == 1.0 and 0 < coverage[_sid("zh")] < 1.0 and _sid("en") in flagged
    assert coverage[_sid("mixed")] == 5 / 9  # q6's question, written against Chinese text: 5 of its 9 13-grams
    sample_rule = {"name": "decontaminate", "params": {"action": "flag", "coverage": "sample", "threshold": 0.5}}
    world.service.run_pipeline(_pipeline(world.root, "web-flag-sample", [sample_rule]))
    by_sample = _contamination(world, "web-flag-sample")
    assert _sid("en") in {k for k, d in by_sample.items() if d["contaminated"]}  # 11 of its 18 13-grams are q1's
    assert {k for k, d in by_sample.items() if d["contaminated"]} == {
        k
        for k, d in by_sample.items()
        if any(m["matched_sample_ngrams"] / m["sample_ngrams"] > 0.5 for m in d["matches"])
    }
    assert found[_sid("en")]["checked"] == ["mmlu-zh:v1"]  # none named: every active eval set


def test_operator_refuses_unresolved_or_bad_parameters(world: World) -> None:
    with pytest.raises(Invalid, match="threshold"):
        world.service.run_pipeline(_pipeline(world.root, "x", [{"name": "decontaminate", "params": {"threshold": 2}}]))
    bad = {"name": "decontaminate", "params": {"sources": [{"evalset": "x:v1"}]}}
    with pytest.raises(Invalid, match="not their sources"):
        world.service.run_pipeline(_pipeline(world.root, "x", [bad]))


def test_publish_stores_the_contamination_report_in_the_manifest(world: World) -> None:
    report = world.service.get_manifest("web-raw@v1").contamination
    assert report is not None and report.checked_samples == len(CLEAN) + len(PLANTED)
    found = report.evalsets["mmlu-zh:v1"]
    assert (found.items, found.contaminated_items, found.samples) == (6, 3, 3)
    assert found.share == 3 / 6
    assert found.item_samples == {
        sample_id("mmlu-zh", "id:q1"): [_sid("en")],
        sample_id("mmlu-zh", "id:q2"): [_sid("zh")],
        sample_id("mmlu-zh", "id:q6"): [_sid("mixed")],
    }


def test_evalset_check_records_on_each_release_without_changing_it(world: World, tmp_path: Path) -> None:
    """A new eval set version is checked against the published releases (CLI, in a subprocess); each
    release records the result; its manifest and digest stay as published."""
    svc = world.service
    svc.run_pipeline(_pipeline(world.root, "web-clean", [{"name": "decontaminate"}]))
    svc.create_release({"name": "web-clean", "tag": "v1"})
    before = {
        r: (svc.get_release(r).content_digest, svc.get_manifest(r).as_dict()) for r in ("web-raw@v1", "web-clean@v1")
    }
    new = write_items(tmp_path / "v2.jsonl", [{"id": "n1", "text": CLEAN[1]}, {"id": "n2", "text": "never seen"}])
    svc.register_evalset("fresh", str(new), id_field="id")
    env = {"LINEAGE_CATALOG_URL": world.settings.catalog_url or ""}
    out = lineage(world.settings.home, "evalset", "check", "fresh:v1", "--releases", "all", "--json", **env)
    checked = json.loads(out.stdout)
    assert checked["evalset"] == "fresh:v1"
    by_release = {r["release"]: r["evalsets"]["fresh:v1"] for r in checked["releases"]}
    assert {r: v["contaminated_items"] for r, v in by_release.items()} == {"web-clean@v1": 1, "web-raw@v1": 1}
    for ref, (digest, manifest) in before.items():
        shown = svc.get_release(ref)
        assert shown.content_digest == digest and svc.get_manifest(ref).as_dict() == manifest  # unchanged
        recorded = shown.contamination_checks["fresh:v1"]
        assert recorded["contaminated_items"] == 1 and recorded["item_samples"] == {
            sample_id("fresh", "id:n1"): [_sid("clean1")]
        }
        assert "checked_at" in recorded
    one = svc.check_evalset("mmlu-zh", releases=["web-clean@v1"])  # NAME: its latest version
    assert [(r.release, r.evalsets["mmlu-zh:v1"].contaminated_items) for r in one.releases] == [("web-clean@v1", 0)]
    assert set(svc.get_release("web-clean@v1").contamination_checks) == {"fresh:v1", "mmlu-zh:v1"}


@pytest.fixture
def page(browser: webdriver.Chrome, request: pytest.FixtureRequest) -> Iterator[Page]:  # noqa: F811
    yield from open_page(browser, "", request)


def test_release_show_and_the_html_report_show_the_contamination(world: World, tmp_path: Path, page: Page) -> None:
    env = {"LINEAGE_CATALOG_URL": world.settings.catalog_url or ""}
    shown = lineage(world.settings.home, "release", "show", "web-raw@v1", **env).stdout
    assert "Contamination" in shown and "mmlu-zh:v1" in shown and "3 of 6" in shown and "at publish" in shown
    out = tmp_path / "qc.html"
    lineage(world.settings.home, "release", "report", "web-raw@v1", "--out", str(out), **env)
    page.driver.get(out.as_uri())  # the report draws itself in the browser
    page.wait_mark("ready")
    shown = page.text(".qc-contamination")
    assert "mmlu-zh:v1 3 of 6 50.00%" in shown and sample_id("mmlu-zh", "id:q2") in shown


# -- every sample of an item (not only the report's first 100), and the check on every engine -------------
MANY = 150  # samples holding q1: more than the report lists (100)


def _many(world: World) -> str:
    """``many@v1``: MANY samples holding q1 and a clean one, published (so checked); and ``unchecked``, a
    dataset version never checked. Made once per catalog."""
    svc = world.service
    if svc.list_releases(name="many").total:
        return "many@v1"
    records = [
        {"id": f"copy{i:03d}", "text": f"Copy {i} of the quiz: {LONG_EN} Mars Venus Jupiter Saturn"}
        for i in range(MANY)
    ]
    write_jsonl(world.root / "many" / "many.jsonl", [*records, {"id": "clean", "text": CLEAN[0]}])
    pipeline = {
        "name": "many",
        "inputs": [{"dataset": "quiz", "path": str(world.root / "many"), "id_field": "id"}],
        "output": {"dataset": "many"},
    }
    svc.run_pipeline(pipeline)
    svc.run_pipeline({**pipeline, "name": "unchecked", "output": {"dataset": "unchecked"}})
    svc.create_release({"name": "many", "tag": "v1"})
    return "many@v1"


def _all_samples(client: Client, item: str, limit: int, **where: object) -> tuple[list[str], list[int]]:
    ids, totals, offset = [], [], 0
    while True:
        page = client.evalset_item_samples("mmlu-zh:v1", item, limit=limit, offset=offset, **where)  # type: ignore[arg-type]
        totals.append(page.total)
        ids += [h.sample_id for h in page.items]
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return ids, totals


def test_each_item_lists_every_sample_that_contains_it_paged(world: World, client: Client) -> None:
    """Over HTTP and in-process: every sample holding q1, not the report's first 100, in sample id order,
    page by page; by release or by dataset version; the measures of each; a clear refusal when the
    version was never checked or the item is in no sample."""
    release = _many(world)
    q1 = sample_id("mmlu-zh", "id:q1")
    want = sorted(sample_id("quiz", f"id:copy{i:03d}") for i in range(MANY))
    listed = world.service.get_manifest(release).contamination.evalsets["mmlu-zh:v1"].item_samples[q1]
    assert listed == want[:100]  # the report's list stops at 100
    ids, totals = _all_samples(client, q1, 40, release=release)
    assert ids == want and set(totals) == {MANY} and len(totals) == 4
    by_version, _ = _all_samples(client, q1, 1000, dataset="many", dataset_version=1)
    assert by_version == want
    first = client.evalset_item_samples("mmlu-zh", q1, release=release, limit=1)  # NAME: its latest version
    (hit,) = first.items
    assert (first.evalset, first.release, first.dataset, first.version) == ("mmlu-zh:v1", release, "many", 1)
    assert hit.matched_item_ngrams == hit.item_ngrams > 0 and hit.matched_sample_ngrams == hit.item_ngrams
    assert first.checked_samples == MANY + 1 and first.threshold == 0.0 and first.coverage == "item"
    assert client.evalset_item_samples("mmlu-zh:v1", sample_id("mmlu-zh", "id:q3"), release=release).total == 0
    with pytest.raises(NotFound, match="never checked against mmlu-zh:v1"):
        client.evalset_item_samples("mmlu-zh:v1", q1, dataset="unchecked")
    with pytest.raises(Invalid, match="either a release"):
        client.evalset_item_samples("mmlu-zh:v1", q1, release=release, dataset="many")


def test_evalset_samples_cli_lists_them_all(world: World) -> None:
    release = _many(world)
    q1 = sample_id("mmlu-zh", "id:q1")
    env = {"LINEAGE_CATALOG_URL": world.settings.catalog_url or ""}
    out = lineage(world.settings.home, "evalset", "samples", "mmlu-zh:v1", q1, "--release", release, "--json", **env)
    found = json.loads(out.stdout)
    assert found["total"] == MANY and len(found["items"]) == MANY
    assert [h["sample_id"] for h in found["items"]] == sorted(sample_id("quiz", f"id:copy{i:03d}") for i in range(MANY))
    shown = lineage(world.settings.home, "evalset", "samples", "mmlu-zh:v1", q1, "--dataset", "many:v1", "--limit",
                    "5", **env).stdout  # fmt: skip
    first = min(sample_id("quiz", f"id:copy{i:03d}") for i in range(MANY))
    assert f"{MANY:,} samples" in shown and first in shown and shown.count("11 of 11") == 5


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_the_release_check_and_the_publish_report_are_the_same_on_every_engine(world: World) -> None:
    """``evalset check --engine`` and the publish-time report (the gate's ``check_engine``) give the same
    report and the same recorded samples on the local, Spark and Ray engines."""
    svc = world.service
    release = _many(world)
    q1 = sample_id("mmlu-zh", "id:q1")
    reports, samples = {}, {}
    for engine in ("local", "spark", "ray"):
        done = svc.check_evalset("mmlu-zh:v1", releases=["web-raw@v1", release], engine=engine)
        reports[engine] = {
            r.release: {k: v.model_dump(exclude={"checked_at"}) for k, v in r.evalsets.items()} for r in done.releases
        }
        samples[engine] = _all_samples(Client(service=svc), q1, 1000, release=release)[0]
    assert reports["spark"] == reports["local"] == reports["ray"]
    assert reports["local"]["web-raw@v1"]["mmlu-zh:v1"]["contaminated_items"] == 3
    assert reports["local"][release]["mmlu-zh:v1"]["samples"] == MANY
    assert samples["spark"] == samples["local"] == samples["ray"] and len(samples["local"]) == MANY
    published = svc.get_manifest(release).contamination
    for engine in ("spark", "ray"):
        svc.create_release({"name": "many", "tag": f"on-{engine}", "gate": {"check_engine": engine}})
        assert svc.get_manifest(f"many@on-{engine}").contamination == published
    with pytest.raises(Invalid, match="unknown engine"):
        svc.check_evalset("mmlu-zh:v1", engine="dask")
