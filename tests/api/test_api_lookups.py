"""Both point-lookup readers (pyarrow row groups, DuckDB's Parquet reader) give the same answers."""

from __future__ import annotations

from lineage.service.core import Service
from tests.support.api_world import World


def test_pyarrow_and_duckdb_readers_agree(world: World) -> None:
    service = Service(world.settings, world.service.catalog)  # its own cache: readers chosen here
    ids = [world.kept, world.duplicate, world.short, world.added, "0" * 32]
    answers = {}
    for reader in ("pyarrow", "duckdb"):
        service.tables._entries.clear()
        for sid in ids:
            service.sample_lineage(sid)  # opens the versions
        for table in service.tables._entries.values():
            table.reader = reader
        answers[reader] = [service.sample_lineage(sid, include_text=True).model_dump() for sid in ids]
    assert answers["pyarrow"] == answers["duckdb"]
    assert [a["found"] for a in answers["duckdb"]] == [True, True, True, True, False]
    assert {t.reader for t in service.tables._entries.values()} == {"duckdb"}
