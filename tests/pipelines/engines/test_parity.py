"""The same pipeline on the same input gives the same release on local, Spark and Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from deltalake import DeltaTable
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.runs import Runner, RunOutcome
from lineage.settings import Settings
from operators import registry
from pipelines.partitions import FOLDER
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.layout import staging_prefix
from storage.tier import get_tier
from tests.support import engine_corpus
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.part_files import part_files

ENGINES = ("local", "spark", "ray")


def _spec(raw: Path, output: str, operators: list[dict]) -> PipelineSpec:
    return PipelineSpec.model_validate(
        {
            "name": "parity",
            "inputs": [{"dataset": "raw", "path": str(raw), "id_field": "id"}],
            "operators": operators,
            "output": {"dataset": output},
        }
    )


def _tables(catalog: Catalog, settings: Settings, outcome: RunOutcome) -> dict[str, Any]:
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == outcome.run_id)).one()
        tier = get_tier(dv.tier, settings)
        files = sorted(DeltaTable(tier.uri(dv.data_path), version=dv.data_delta_version).file_uris())
        out = {
            "data": version_dataset(tier, dv.data_path, dv.data_delta_version).to_table(),
            "data_files": files,
            "data_in_file_order": pa.concat_tables([pq.read_table(f) for f in files]) if files else None,
            "lineage": version_dataset(tier, dv.lineage_path, dv.lineage_delta_version).to_table(),
            "quarantine": version_dataset(tier, dv.quarantine_path, dv.quarantine_delta_version).to_table(),
            "signatures": None,
            # the cut into files depends on the content alone: data and signature files are the same bytes,
            # lineage files hold the same rows (their bytes differ by the run id)
            "parts": {
                "data": part_files(tier, dv.data_path, dv.data_delta_version),
                "lineage": part_files(tier, dv.lineage_path, dv.lineage_delta_version, checksums=False),
            },
        }
        if dv.signatures_path is not None:
            out["signatures"] = version_dataset(tier, dv.signatures_path, dv.signatures_delta_version).to_table()
            out["parts"]["signatures"] = part_files(tier, dv.signatures_path, dv.signatures_delta_version)
        return out


def content_hash(table: pa.Table, keys: list[str]) -> str:
    """xxh3-128 of the rows sorted by ``keys`` (Arrow IPC bytes), ``run_id`` left out."""
    if "run_id" in table.column_names:
        table = table.drop_columns(["run_id"])
    table = table.sort_by([(k, "ascending") for k in keys]).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return xxhash.xxh3_128_hexdigest(sink.getvalue().to_pybytes())


def _run_everywhere(
    raw: Path, settings: Settings, catalog: Catalog, operators: list[dict], name: str
) -> tuple[dict[str, RunOutcome], dict[str, dict[str, Any]]]:
    # small partitions and files, so shuffles, range partitions and file roll-over really happen
    settings.group_partition_rows, settings.parquet_file_rows, settings.parquet_row_group_rows = 40, 50, 20
    runner = Runner(settings, catalog)
    outcomes = {e: runner.run(_spec(raw, f"{name}-{e}", operators), engine=e) for e in ENGINES}
    return outcomes, {e: _tables(catalog, settings, o) for e, o in outcomes.items()}


def _assert_same_release(outcomes: dict[str, RunOutcome], tables: dict[str, dict[str, Any]]) -> None:
    local = outcomes["local"]
    for engine in ("spark", "ray"):
        assert outcomes[engine].counts == local.counts, engine
        assert outcomes[engine].row_count == local.row_count, engine
        got, want = tables[engine], tables["local"]
        assert len(got["data_files"]) > 1, f"{engine}: expected several part files"
        assert got["parts"] == want["parts"], f"{engine}: part files differ from the in-process engine's"
        ids = got["data_in_file_order"].column("sample_id").to_pylist()
        assert ids == sorted(ids), f"{engine}: data files in name order are globally sorted by sample_id"
        assert set(ids) == set(want["data"].column("sample_id").to_pylist()), engine
        for name, keys in (
            ("data", ["sample_id"]),
            ("lineage", ["sample_id", "step"]),
            ("quarantine", ["source_path", "source_row"]),
        ):
            assert content_hash(got[name], keys) == content_hash(want[name], keys), f"{engine}: {name} differs"


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_exact_dedupe_and_quality_agree_on_every_engine(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    raw = engine_corpus.build(tmp_path / "raw")
    operators = [{"name": "exact_dedupe"}, {"name": "quality", "params": {"min_words": 20, "min_cjk_chars": 30}}]
    outcomes, tables = _run_everywhere(raw, settings, catalog, operators, "clean")
    local = outcomes["local"]
    steps = {s["operator"]: s for s in local.counts["steps"]}
    assert steps["exact_dedupe"]["dropped"] >= 8, "the corpus has known exact duplicates"
    assert 0 < steps["quality"]["dropped"] < steps["quality"]["in"], "some samples fail quality, some pass"
    assert set(local.counts["quarantine"]) == {"invalid_json", "missing_text_field", "empty_text"}
    assert local.counts["blank_lines"] == 2
    _assert_same_release(outcomes, tables)
    with catalog.session() as s:
        assert sorted(r.engine for r in s.scalars(select(Run))) == sorted(ENGINES)


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_minhash_dedupe_agrees_on_every_engine(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    raw = engine_corpus.build(tmp_path / "raw")
    operators = [{"name": "exact_dedupe"}, {"name": "minhash_dedupe"}, {"name": "quality", "params": {"min_words": 5}}]
    outcomes, tables = _run_everywhere(raw, settings, catalog, operators, "near")
    steps = {s["operator"]: s for s in outcomes["local"].counts["steps"]}
    assert steps["minhash_dedupe"]["dropped"] >= 6, "the corpus has known near duplicates"
    _assert_same_release(outcomes, tables)
    for engine in ENGINES:
        assert tables[engine]["signatures"] is not None
    for engine in ("spark", "ray"):
        key = ["sample_id"]
        assert content_hash(tables[engine]["signatures"], key) == content_hash(tables["local"]["signatures"], key)


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_a_catalog_dataset_input_agrees_on_every_engine(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    """An input that is a dataset version in the catalog is read file by file (one work item per
    Parquet file of its Delta version) and gives the same release on every engine."""
    raw = engine_corpus.build(tmp_path / "raw")
    settings.group_partition_rows, settings.parquet_file_rows, settings.parquet_row_group_rows = 40, 50, 20
    runner = Runner(settings, catalog)
    staged = runner.run(_spec(raw, "staged", [{"name": "exact_dedupe"}]))
    assert len(_tables(catalog, settings, staged)["data_files"]) > 1, "the input version must span several files"
    chain = {
        "name": "chain",
        "inputs": [{"dataset": "staged", "version": staged.version}],
        "operators": [{"name": "quality", "params": {"min_words": 20, "min_cjk_chars": 30}}],
    }
    outcomes = {
        e: runner.run(PipelineSpec.model_validate({**chain, "output": {"dataset": f"chain-{e}"}}), engine=e)
        for e in ENGINES
    }
    (step,) = outcomes["local"].counts["steps"]
    assert step["in"] == staged.row_count and 0 < step["dropped"] < step["in"]
    _assert_same_release(outcomes, {e: _tables(catalog, settings, o) for e, o in outcomes.items()})


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize("engine", ENGINES)
def test_failed_job_commits_nothing(engine: str, tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    registry.register("explode", "tests.support.failing_operators:Explode")
    raw = engine_corpus.build(tmp_path / "raw", docs=20)
    (raw / "c.jsonl").open("a").write('{"id": "boom", "text": "EXPLODE"}\n')
    spec = _spec(raw, "boom", [{"name": "exact_dedupe"}, {"name": "explode"}])
    with pytest.raises(Exception, match="explode: found the trigger text"):
        Runner(settings, catalog).run(spec, engine=engine)
    with catalog.session() as s:
        assert s.scalars(select(DatasetVersion)).all() == []
        (run,) = s.scalars(select(Run)).all()
        assert run.status == "failed" and "explode" in run.error
    tier = get_tier(None, settings)
    for table in ("data", "lineage", "quarantine"):
        folder = Path(tier.path(f"datasets/boom/{table}"))
        assert not (folder / "_delta_log").exists(), f"{engine}: {table} was committed"
    if engine != "local":  # only the recorded partitions stay, so a rerun resumes (gc removes them later)
        kept = Path(tier.path(staging_prefix(run.id), FOLDER))
        leftovers = [p for p in Path(tier.path("")).rglob("*.parquet") if not p.is_relative_to(kept)]
        assert leftovers == [], f"{engine} left files behind: {leftovers}"
        assert list(kept.glob("*.json")), f"{engine}: the failed run's partitions were not recorded"


@pytest.mark.usefixtures("spark", "ray_runtime")
def test_decontaminate_agrees_on_every_engine(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    """Issue #19: the contamination check drops the same samples, with the same evidence, on every engine
    (the index is built on each worker from the pinned eval-set version the run recorded)."""
    import json

    from lineage.service.core import Service

    raw = engine_corpus.build(tmp_path / "raw")
    docs = []
    for path in sorted(raw.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("text"), str) and len(doc["text"].split()) > 30:
                docs.append(doc["text"])
    items = [{"id": f"e{i}", "text": " ".join(t.split()[5:25])} for i, t in enumerate(docs[:5])]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    service = Service(settings, catalog)
    service.register_evalset("bench", str(tmp_path / "items.jsonl"), id_field="id")
    operators = [{"name": "decontaminate", "params": {"evalsets": ["bench:v1"]}}]
    outcomes, tables = _run_everywhere(raw, settings, catalog, operators, "decon")
    step = {s["operator"]: s for s in outcomes["local"].counts["steps"]}["decontaminate"]
    assert step["dropped"] >= len(items), "each item is a 20-word span of a corpus document"
    _assert_same_release(outcomes, tables)
