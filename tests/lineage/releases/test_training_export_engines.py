"""A training export tokenized on Spark and on Ray writes the same bytes as in process (the real local
Spark session and Ray runtime of tests/support/fixtures_engines.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lineage import errors
from lineage.client import Client
from lineage.settings import Settings
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.training_export import publish_corpus_slice, train_tokenizer

REF = "deb@t"


@pytest.fixture
def client(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    settings.engine.spark_master = "local[2]"
    settings.engine.ray_num_cpus = 2
    with Client(settings=settings) as c:
        publish_corpus_slice(c, tmp_path, REF)
        yield c


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.usefixtures("spark", "ray_runtime")
@pytest.mark.parametrize("fmt", ["megatron", "mds"])
def test_spark_and_ray_write_the_same_shards_as_local(
    client: Client,
    tmp_path: Path,
    fmt: str,
) -> None:
    tokenizer = train_tokenizer(tmp_path / "tokenizer.json")
    packing = {"seq_len": 63, "pack": True} if fmt == "mds" else {}
    made = {
        engine: client.export_release(
            REF, tmp_path / engine, fmt, tokenizer=tokenizer, shard_size=8 << 10, engine=engine, **packing
        )
        for engine in ("local", "spark", "ray")
    }
    local = folder_bytes(Path(made["local"].path))
    assert len(made["local"].shards) >= 3 and len(local) > 6
    assert folder_bytes(Path(made["spark"].path)) == local
    assert folder_bytes(Path(made["ray"].path)) == local
    assert made["spark"].export_id == made["ray"].export_id == made["local"].export_id
    with pytest.raises(errors.Invalid, match="does not run exports|unknown engine"):
        client.export_release(REF, tmp_path / "x", fmt, tokenizer=tokenizer, engine="duckdb")
