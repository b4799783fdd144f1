"""QC report per release and the publish gate (发布门禁)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lineage.catalog import Catalog
from lineage.catalog.queries import dataset_version
from lineage.errors import Invalid
from lineage.releases import get_release, publish
from lineage.releases.qc import GateConfig, GateError, _read_lineage, evaluate_gate, report_html
from lineage.runs import Runner
from lineage.settings import Settings
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.support.helpers import write_jsonl

LONG_EN = " ".join(f"word{i % 37} is part of a long enough English description" for i in range(12))
LONG_ZH = "这是一个足够长的中文软件包描述，用于测试质量报告和发布门禁。" * 4


@pytest.fixture
def version(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    write_jsonl(
        tmp_path / "en.jsonl",
        [{"id": i, "text": LONG_EN + f" {i}"} for i in range(8)]
        + [{"id": 100, "text": "too short"}, {"id": 101, "text": LONG_EN + " 0"}],
    )
    write_jsonl(tmp_path / "zh.jsonl", [{"id": i, "text": LONG_ZH + str(i)} for i in range(4)])
    spec = PipelineSpec.model_validate(
        {
            "name": "qc",
            "inputs": [
                {"dataset": "en", "path": str(tmp_path / "en.jsonl"), "id_field": "id"},
                {"dataset": "zh", "path": str(tmp_path / "zh.jsonl"), "id_field": "id"},
            ],
            "operators": [{"name": "exact_dedupe"}, {"name": "quality", "params": {"min_words": 20}}],
            "output": {"dataset": "qc"},
        }
    )
    Runner(settings, catalog).run(spec)


def test_report_counts_rules_lengths_scripts_and_sources(version: None, settings: Settings, catalog: Catalog) -> None:
    release, _ = publish(catalog, settings, "qc@v1")
    qc = release.manifest["qc"]
    assert qc["samples"] == 12
    assert {"operator": "quality", "rule": "quality:min_words", "dropped": 1, "modified": 0, "failed": 1} in qc["rules"]
    by_source = {s["source"]: s for s in qc["sources"]}
    assert by_source["en"]["kept"] == 8 and by_source["en"]["dropped"] == 2  # one exact duplicate, one short
    assert by_source["zh"] == {"source": "zh", "kept": 4, "dropped": 0, "drop_rate": 0.0}
    assert sum(b["count"] for b in qc["length_histogram"]) == 12
    assert qc["scripts"]["han"] > 0.1 and qc["scripts"]["latin"] > 0.5
    assert qc["exact_duplicate_rate"] == 0.0 and qc["rule_sets"] == ["quality"]
    html = report_html("qc@v1", qc, None)
    # the charts are drawn in the browser by the one rendering (tests/web/test_qc_report.py looks at them);
    # the page carries the report as data and loads nothing from anywhere
    assert "quality:min_words" in html and "renderQc(" in html
    assert "http" not in html.replace('"http://www.w3.org/2000/svg"', "")


class _InBatchesOf:
    """A dataset read ``rows`` records at a time: many batches, which the report counts on several threads."""

    def __init__(self, dataset: Any, rows: int) -> None:
        self.dataset, self.rows = dataset, rows

    def to_batches(self, columns: list[str]) -> Any:
        return self.dataset.to_batches(columns=columns, batch_size=self.rows)


def test_the_lineage_pass_is_the_same_however_the_lineage_comes_in_batches(
    version: None, settings: Settings, catalog: Catalog
) -> None:
    with catalog.session() as s:
        dv = dataset_version(s, "qc", 1)
        lineage = version_dataset(get_tier(dv.tier, settings), dv.lineage_path, dv.lineage_delta_version)
    whole = _read_lineage(lineage)
    assert whole.rules and whole.dropped.num_rows == 2 and whole.sources.num_rows == 14
    for rows in (1, 3, 5):
        cut = _read_lineage(_InBatchesOf(lineage, rows))
        assert cut.rules == whole.rules
        assert cut.dropped.column("sample_id").to_pylist() == whole.dropped.column("sample_id").to_pylist()
        assert cut.sources.to_pylist() == whole.sources.to_pylist()


def test_gate_refuses_with_each_failed_condition_and_its_value(
    version: None, settings: Settings, catalog: Catalog
) -> None:
    gate = GateConfig(
        max_drop_rate_per_source=0.1,
        min_samples=100,
        max_exact_duplicate_rate=0.0,
        required_rule_sets=["quality", "quality_c4"],
    )
    with pytest.raises(GateError) as err:
        publish(catalog, settings, "qc@gated", gate=gate)
    failed = {f["condition"]: f for f in err.value.failures}
    assert set(failed) == {"min_samples", "max_drop_rate_per_source[en]", "required_rule_set[quality_c4]"}
    assert failed["min_samples"]["measured"] == 12
    assert failed["max_drop_rate_per_source[en]"]["measured"] == 0.2
    assert "min_samples: measured 12 (limit 100)" in str(err.value)
    with catalog.session() as s, pytest.raises(Exception, match="does not exist"):
        get_release(s, "qc@gated")

    release, created = publish(
        catalog, settings, "qc@gated", gate=gate, override_reason="short run, reviewed", created_by="alice"
    )
    assert created
    override = release.gate["override"]
    assert override["by"] == "alice" and override["reason"] == "short run, reviewed" and override["at"]
    assert [r["passed"] for r in release.gate["results"]].count(False) == 3


def test_passing_gate_records_results(version: None, settings: Settings, catalog: Catalog) -> None:
    release, _ = publish(catalog, settings, "qc@ok", gate=GateConfig(min_samples=10, required_rule_sets=["quality"]))
    assert all(r["passed"] for r in release.gate["results"]) and release.gate["override"] is None


def test_a_gate_naming_old_rule_sets_still_works_with_a_warning() -> None:
    """Gate configs written before each quality operator had one name (``default``, ``c4``) keep
    working: the names map to the operators' (what the report lists), with a DeprecationWarning."""
    with pytest.warns(DeprecationWarning, match="is now named after its operator") as warned:
        gate = GateConfig.model_validate({"required_rule_sets": ["default", "c4", "quality_zh"]})
    assert [str(w.message).split(" is now")[0] for w in warned] == [
        "the quality rule set 'default'",
        "the quality rule set 'c4'",
    ]
    assert gate.required_rule_sets == ["quality", "quality_c4", "quality_zh"]
    report = {"samples": 1, "sources": [], "exact_duplicate_rate": 0.0, "rule_sets": ["quality", "quality_c4"]}
    assert [(r["condition"], r["passed"]) for r in evaluate_gate(report, gate)] == [
        ("required_rule_set[quality]", True),
        ("required_rule_set[quality_c4]", True),
        ("required_rule_set[quality_zh]", False),
    ]


def test_a_gate_config_it_refuses_is_one_invalid_line() -> None:
    with pytest.raises(Invalid) as refused:
        GateConfig.model_validate({"min_samplez": 3, "min_samples": "many"})
    assert str(refused.value) == (
        "gate config: min_samples: Input should be a valid integer, unable to parse string as an integer; "
        "min_samplez: Extra inputs are not permitted"
    )


def test_publishing_a_draft_goes_through_the_gate(version: None, settings: Settings, catalog: Catalog) -> None:
    """Publishing the same content as a draft turns it published: the gate given applies then too (it
    used to be skipped), and a failed one leaves the draft a draft."""
    publish(catalog, settings, "qc@drafted", draft=True)
    with pytest.raises(GateError) as err:
        publish(catalog, settings, "qc@drafted", gate=GateConfig(min_samples=100))
    assert [f["condition"] for f in err.value.failures] == ["min_samples"]
    with catalog.session() as s:
        assert get_release(s, "qc@drafted").state == "draft"
    release, changed = publish(
        catalog, settings, "qc@drafted", gate=GateConfig(min_samples=100), override_reason="ok", created_by="bob"
    )
    assert changed and release.state == "published" and release.gate["override"]["by"] == "bob"
