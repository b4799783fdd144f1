"""SIGKILL a run part-way through a multi-file input; ``lineage run FILE`` again resumes it: the same run id,
the recorded partitions reused, and an output byte-identical to an uninterrupted run's (data files, Delta
content, lineage rows, release digest). gc keeps a resumable run's partitions, and stops once it is not.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.gc import collect_garbage
from lineage.releases import publish
from lineage.runs import Runner
from lineage.settings import Settings, get_settings
from pipelines.partitions import FOLDER
from pipelines.spec import PipelineSpec
from tests.support.cli import lineage, lineage_killed_at
from tests.support.fixtures_postgres import PostgresServer
from tests.support.helpers import write_jsonl
from tests.support.minhash_texts import BASE, NEAR
from tests.support.run_outputs import version_output

FILES = 5  # raw files, so five partitions
PIPELINE = """
name = "resumable"
[[inputs]]
dataset = "raw"
path = "{corpus}"
id_field = "id"
[[operators]]
name = "exact_dedupe"
[[operators]]
name = "minhash_dedupe"
[[operators]]
name = "quality"
params = {{ min_words = 6 }}
[output]
dataset = "clean"
"""
WORDS = [
    *("data", "lineage", "ledger", "release", "sample", "quality", "token"),
    *("corpus", "mixture", "shard", "filter", "train", "model", "text"),
]


def _corpus(root: Path) -> Path:
    """Five files: exact and near duplicates across files, short texts quality drops, one bad record."""
    rng = random.Random(7)
    for f in range(FILES):
        records: list[dict[str, Any]] = [
            {"id": f"f{f}-{i}", "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))}
            for i in range(12)
        ]
        records.append({"id": f"copy-{f}", "text": "the same text in every file, word for word, all five times"})
        records.append({"id": f"near-{f}", "text": BASE if f % 2 else NEAR})
        write_jsonl(root / f"part-{f}.jsonl", records, compress=f == 3)
    with (root / "part-1.jsonl").open("a") as fh:
        fh.write('{"id": "broken", "text": \n')
    return root


@pytest.fixture
def world(request: pytest.FixtureRequest, home: Path, tmp_path: Path) -> Iterator[tuple[Settings, Catalog, Path]]:
    """A home (as the CLI process reads it) with small part files, the corpus and the pipeline file."""
    home.mkdir(parents=True, exist_ok=True)
    config = "parquet_file_rows = 4\nparquet_row_group_rows = 2\n"
    if getattr(request, "param", "sqlite") == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        config += f'catalog_url = "{server.create_database()}"\n'
    (home / "lineage.toml").write_text(config)
    get_settings.cache_clear()
    settings = get_settings()
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE.format(corpus=_corpus(tmp_path / "raw")))
    catalog = Catalog(settings.catalog_url or "")
    yield settings, catalog, pipeline
    catalog.dispose()


def _digest(catalog: Catalog, settings: Settings, version: int) -> str:
    release, _ = publish(catalog, settings, f"clean@r{version}", version=version)
    return release.content_digest


def _run(catalog: Catalog, run_id: str) -> Run:
    with catalog.session() as s:
        run = s.get(Run, run_id)
        assert run is not None
        s.expunge(run)
        return run


# (pause point, partitions the rerun reuses)
POINTS = [
    ("partition.0.staged", 0),  # the first partition's files written, not recorded: nothing is trusted
    ("partition.2.recorded", 3),  # three of five recorded
    ("local.partitions_done", FILES),  # every partition, before the dedupe steps over all of them
    ("after_engine", FILES),  # the output files written, before any Delta commit
    ("after_delta_commit", FILES),  # the Delta tables committed, the catalog not yet
]


@pytest.mark.parametrize(
    ("world", "point", "reused"),
    [("sqlite", *p) for p in POINTS] + [("postgresql", "partition.2.recorded", 3)],  # the claim on both catalogs
    indirect=["world"],
)
def test_a_killed_run_resumes_and_ends_byte_identical_to_an_uninterrupted_one(
    point: str, reused: int, world: tuple[Settings, Catalog, Path], home: Path
) -> None:
    settings, catalog, pipeline = world
    full = Runner(settings, catalog).run(PipelineSpec.load(pipeline))  # uninterrupted: clean v1
    assert "resumed" not in full.counts
    expected = version_output(settings, catalog, 1)

    lineage_killed_at(home, point, "run", str(pipeline))
    with catalog.session() as s:
        killed = s.scalars(select(Run).where(Run.id != full.run_id)).one()
        assert killed.status == "running" and [v.version for v in s.scalars(select(DatasetVersion))] == [1]
    records = list((Path(settings.staging_dir) / killed.id / FOLDER).glob("*.json"))
    assert len(records) == reused

    done = lineage(home, "run", str(pipeline))
    assert f"resumed interrupted run {killed.id}" in done.stdout
    assert f"reused {reused:,} of {FILES:,} input partitions" in done.stdout
    run = _run(catalog, killed.id)
    ranges = {0: "", 3: "0-2", FILES: f"0-{FILES - 1}"}[reused]
    assert run.status == "succeeded"
    assert run.counts["resumed"] == {"attempts": 1, "partitions": FILES, "reused_partitions": reused, "reused": ranges}
    with catalog.session() as s:
        assert s.scalars(select(DatasetVersion.run_id).where(DatasetVersion.version == 2)).one() == killed.id
    assert not (Path(settings.staging_dir) / killed.id).exists(), "a committed run's partitions are deleted"

    again = version_output(settings, catalog, 2)
    assert again.keys() == expected.keys()
    for kind in expected:
        assert again[kind] == expected[kind], kind
    assert _digest(catalog, settings, 2) == _digest(catalog, settings, 1)


def test_a_partition_whose_files_changed_is_redone(world: tuple[Settings, Catalog, Path], home: Path) -> None:
    settings, catalog, pipeline = world
    full = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
    lineage_killed_at(home, "local.partitions_done", "run", str(pipeline))
    folder = Path(settings.staging_dir) / _killed(catalog, full.run_id) / FOLDER
    staged = sorted((folder / "1" / "samples").rglob("*.parquet"))[0]
    staged.write_bytes(staged.read_bytes()[:-20] + b"x" * 20)  # same size, other bytes
    (folder / "3.json").write_text("{")  # a torn record

    rerun = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
    assert rerun.counts["resumed"]["reused"] == "0,2,4", "the damaged partitions 1 and 3 were redone"
    assert version_output(settings, catalog, 2) == version_output(settings, catalog, 1)


def _killed(catalog: Catalog, other: str) -> str:
    with catalog.session() as s:
        return s.scalars(select(Run.id).where(Run.id != other)).one()


@pytest.mark.parametrize("world", ["sqlite", "postgresql"], indirect=True)
def test_gc_keeps_a_resumable_runs_partitions_and_a_rerun_still_resumes(
    world: tuple[Settings, Catalog, Path], home: Path
) -> None:
    settings, catalog, pipeline = world
    lineage_killed_at(home, "partition.2.recorded", "run", str(pipeline))
    killed = _killed(catalog, "")
    report = collect_garbage(catalog, settings)
    assert killed in report.abandoned_runs and _run(catalog, killed).status == "failed"
    assert f"staging:{killed}" not in report.deleted_files
    assert len(list((Path(settings.staging_dir) / killed / FOLDER).glob("*.json"))) == 3

    rerun = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
    assert rerun.run_id == killed and rerun.counts["resumed"]["reused_partitions"] == 3


@pytest.mark.parametrize("world", ["sqlite", "postgresql"], indirect=True)
def test_a_run_stops_being_resumable_after_gcs_grace_or_a_newer_success(
    world: tuple[Settings, Catalog, Path], home: Path, tmp_path: Path
) -> None:
    settings, catalog, pipeline = world
    staging_dir = Path(settings.staging_dir)
    lineage_killed_at(home, "partition.2.recorded", "run", str(pipeline))
    first = _killed(catalog, "")
    report = collect_garbage(catalog, settings, grace=timedelta(0))  # past the grace period: garbage
    assert f"staging:{first}" in report.deleted_files and not (staging_dir / first).exists()
    rerun = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
    assert rerun.run_id != first and rerun.counts.get("resumed") is None, "nothing left to resume: a new run"

    lineage_killed_at(home, "partition.2.recorded", "run", str(pipeline))
    with catalog.session() as s:
        second = s.scalars(select(Run.id).where(Run.id.not_in([first, rerun.run_id]))).one()
    edited = tmp_path / "raw" / "part-4.jsonl"
    edited.write_text(edited.read_text().replace("f4-0", "f4-zero"))
    changed = Runner(settings, catalog).run(PipelineSpec.load(pipeline))  # other input bytes: not the same run
    assert changed.run_id != second and changed.counts.get("resumed") is None
    assert (staging_dir / second).exists()
    report = collect_garbage(catalog, settings)  # a newer run of the same output succeeded: garbage
    assert f"staging:{second}" in report.deleted_files and not (staging_dir / second).exists()


def test_a_rerun_with_other_code_or_params_starts_a_new_run(world: tuple[Settings, Catalog, Path], home: Path) -> None:
    settings, catalog, pipeline = world
    lineage_killed_at(home, "partition.2.recorded", "run", str(pipeline))
    killed = _killed(catalog, "")
    pipeline.write_text(pipeline.read_text().replace("min_words = 6", "min_words = 7"))
    rerun = Runner(settings, catalog).run(PipelineSpec.load(pipeline))
    assert rerun.run_id != killed and rerun.counts.get("resumed") is None
    with catalog.session() as s:
        s.get(Run, killed).code_version = "0.0.0+gother"  # the same params again, other code
    pipeline.write_text(pipeline.read_text().replace("min_words = 7", "min_words = 6"))
    assert Runner(settings, catalog).run(PipelineSpec.load(pipeline)).run_id != killed
