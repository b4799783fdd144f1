"""SIGKILL ``lineage takedown apply --purge`` at every step boundary: what is left is the old state or one a
rerun completes. A release is never withdrawn without a published successor, every file a live release
needs is still there and matches its manifest, and the rerun ends purged with no removed text left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lineage.client import Client
from lineage.gc import collect_garbage
from lineage.settings import Settings, get_settings
from storage.tier import get_tier
from tests.support.cli import lineage, lineage_killed_at
from tests.support.takedowns import KEEP, corpus, markers_under, pipeline

POINTS = [
    "takedown.run_recorded",  # the successor's run row, before any file
    "takedown.data_committed",  # its data commit, before the lineage commit and the catalog's
    "takedown.version_made",  # the version recorded, not released
    "takedown.successor_published",
    "replica.file_verified",  # copying the successor to the second tier
    "takedown.successor_copied",  # before the old release is withdrawn
    "takedown.withdrawn",  # before the request is marked applied
    "purge.successors_verified",  # before anything is deleted
    "purge.tombstoned",
    "purge.side_table_repointed",
    "purge.logs_stripped",
    "purge.file_deleted",  # after the first deletion
]


@pytest.fixture
def world(home: Path, tmp_path: Path) -> Iterator[tuple[Client, Settings, int]]:
    """clean@v1 with a verified replica on a second tier and a takedown request of one source, set up as
    the CLI process will read it (``lineage.toml`` in the home)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "lineage.toml").write_text(
        f'parquet_file_rows = 1\n[[tiers]]\nname = "second"\nkind = "posix"\nroot = "{tmp_path / "second"}"\n'
    )
    get_settings.cache_clear()
    settings = get_settings()
    with Client(settings=settings) as c:
        c.run_pipeline(pipeline(corpus(tmp_path / "raw")))
        c.create_release("clean@v1")
        c.copy_release("clean@v1", "second")
        request = c.create_takedown({"source": {"dataset": "raw", "path": "optout/*"}}, kind="privacy", reason="x")
        yield c, settings, request.id


def _consistent(client: Client) -> None:
    """No half-withdrawn release, and every live release whole on every tier it is verified on."""
    for release in client.list_releases().items:
        if release.state == "withdrawn":
            assert release.successor is not None
            assert client.get_release(release.successor).state == "published"
        if release.state in ("published", "deprecated"):
            for replica in client.list_replicas(release.ref, state="verified"):
                assert client.verify_release(release.ref, replica.tier).state == "verified", (release.ref, replica)


@pytest.mark.parametrize("point", POINTS)
def test_a_takedown_killed_at_any_step_is_consistent_and_a_rerun_finishes_it(
    point: str, world: tuple[Client, Settings, int], home: Path
) -> None:
    client, settings, request_id = world
    lineage_killed_at(home, point, "takedown", "apply", str(request_id), "--purge")
    _consistent(client)

    done = lineage(home, "takedown", "apply", str(request_id), "--purge", "--json")
    assert client.get_takedown(request_id).state == "purged", done.stdout
    collect_garbage(client.service.catalog, settings)  # the killed process's staged files
    _consistent(client)
    successor = client.get_release("clean@v1").successor
    assert successor == f"clean@v1-td{request_id}" and client.list_versions("clean").total == 2
    assert {r.tier for r in client.list_replicas(successor, state="verified")} == {"local", "second"}
    from lineage.reader import open_release

    assert sorted(r["text"] for r in open_release(successor, settings=settings, as_dicts=True)) == sorted(KEEP)
    tiers = [get_tier(t.name, settings) for t in settings.tiers]
    assert {t.name: markers_under(t) for t in tiers} == {t.name: {} for t in tiers}
