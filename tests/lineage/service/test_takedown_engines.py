"""The rewrite of a takedown's affected files on all three engines (the session's real local Spark session
and Ray runtime): the same files, byte for byte, so the same successor content digest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lineage.catalog.queries import dataset_version
from lineage.client import Client
from lineage.releases import takedown
from lineage.releases.manifest import build_manifest, content_digest
from lineage.settings import Settings
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.lineage.service.test_takedown_apply import CURL
from tests.support.api_world import build_corpus, spec
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)


@pytest.fixture
def client(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    settings.parquet_file_rows = 2  # affected files hold other samples too: they are rewritten, not dropped
    with Client(settings=settings) as c:
        c.run_pipeline(spec(build_corpus(tmp_path / "raw")).model_dump(mode="json", exclude={"base_dir"}))
        c.create_release("clean@v1")
        yield c


def test_every_engine_rewrites_the_affected_files_to_the_same_bytes(
    client: Client, settings: Settings, request: pytest.FixtureRequest
) -> None:
    request.getfixturevalue("spark")
    request.getfixturevalue("ray_runtime")
    (impact,) = client.plan_takedown(
        client.create_takedown({"sample_ids": [CURL]}, kind="other", reason="x").id
    ).releases
    drop = {f.path: [CURL] for f in impact.files}
    service = client.service
    digests, rewritten = {}, {}
    for k, engine in enumerate(("local", "spark", "ray")):
        made = takedown.remove_samples(service.catalog, settings, "clean", 1, drop, 100 + k, engine=engine)
        assert (made.samples, made.files_rewritten) == (1, 1)
        with service.catalog.session() as s:
            dv = dataset_version(s, "clean", made.version)
            manifest = build_manifest(dv, None, settings)
            rows = version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version).to_table()
        digests[engine] = content_digest(manifest)
        rewritten[engine] = sorted((f["size"], f["xxh3_128"]) for f in manifest["files"] if "takedown-" in f["path"])
        assert CURL not in rows.column("sample_id").to_pylist()
        assert rows.num_rows == client.get_release("clean@v1").row_count - 1
    assert len(set(digests.values())) == 1, digests
    assert rewritten["spark"] == rewritten["ray"] == rewritten["local"] and len(rewritten["local"]) == 1
