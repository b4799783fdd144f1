"""``priority`` per input decides which source's copy survives a MinHash near-duplicate cluster
(issue #20, item 3), on every engine; without priorities the decisions are today's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.runs import Runner, RunOutcome
from lineage.settings import Settings
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.helpers import write_jsonl

ENGINES = ("local", "spark", "ray")
# a Debian-style description and its near copy, one in each source
BASE = (
    "This package provides the development files for the libfoo library, a small and portable "
    "implementation of the foo protocol. It contains the header files, the static library and "
    "the pkg-config file needed to build programs that use libfoo, together with examples."
)
EN = [f"english document number {i} about topic {i * 7} and nothing else at all" for i in range(60)]
EN += [BASE + " Documentation is in libfoo-doc."]  # the longer copy
ZH = [f"中文文档第{i}号，内容各不相同，编号{i * 3}" for i in range(20)]
ZH += [BASE]  # its near copy (word 5-gram Jaccard 0.90), shorter: the default (longest) keeps en's


def _spec(root: Path, output: str, priority: dict[str, int], files: int = 2) -> PipelineSpec:
    inputs = []
    for name, texts in (("en", EN), ("zh", ZH)):
        records = [{"id": f"{name}{i}", "text": t} for i, t in enumerate(texts)]
        for k in range(files):
            write_jsonl(root / name / f"part-{k}.jsonl", records[k::files])
        extra: dict[str, Any] = {"priority": priority[name]} if name in priority else {}
        inputs.append({"dataset": name, "path": str(root / name), "id_field": "id", **extra})
    return PipelineSpec.model_validate(
        {"name": "prio", "inputs": inputs, "operators": [{"name": "minhash_dedupe"}], "output": {"dataset": output}}
    )


def _dropped(catalog: Catalog, settings: Settings, outcome: RunOutcome) -> dict[str, str]:
    """source_row id -> kept id of every sample minhash dropped (by source id, not sample_id)."""
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == outcome.run_id)).one()
        tier = get_tier(dv.tier, settings)
        lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version).to_table()
    rows = lineage.filter(pa.compute.equal(lineage.column("verdict"), "dropped")).to_pylist()
    return {r["sample_id"]: r["related_ids"][0] for r in rows if r["operator"] == "minhash_dedupe"}


def _survivor_source(catalog: Catalog, settings: Settings, outcome: RunOutcome) -> tuple[str, str]:
    """(source of the dropped copy, source of the kept copy) of the one cross-source cluster."""
    dropped = _dropped(catalog, settings, outcome)
    assert len(dropped) == 1, dropped
    ((gone, kept),) = dropped.items()
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == outcome.run_id)).one()
        tier = get_tier(dv.tier, settings)
        data = version_dataset(tier, dv.data_path, dv.data_delta_version).to_table(
            columns=["sample_id", "source_dataset"]
        )
    source = dict(zip(data.column("sample_id").to_pylist(), data.column("source_dataset").to_pylist(), strict=True))
    assert gone not in source
    return ("zh" if source[kept] == "en" else "en"), source[kept]


def test_priority_decides_which_sources_near_copy_survives(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    runner = Runner(settings, catalog)
    default = runner.run(_spec(tmp_path / "a", "near-default", {}))
    assert _survivor_source(catalog, settings, default) == ("zh", "en")  # the longest copy survives
    ranked = runner.run(_spec(tmp_path / "b", "near-zh", {"zh": 1}))
    assert _survivor_source(catalog, settings, ranked) == ("en", "zh")  # zh ranks higher
    ranked_en = runner.run(_spec(tmp_path / "c", "near-en", {"en": 2, "zh": 1}))
    assert _survivor_source(catalog, settings, ranked_en) == ("zh", "en")


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_priority_survivor_is_the_same_on_every_engine(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    settings.group_partition_rows = 20  # several cluster partitions
    runner = Runner(settings, catalog)
    for engine in ENGINES:
        outcome = runner.run(_spec(tmp_path / engine, f"near-{engine}", {"zh": 1}, files=3), engine=engine)
        assert _survivor_source(catalog, settings, outcome) == ("en", "zh"), engine
