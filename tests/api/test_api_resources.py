"""Resources through the SDK, over a real uvicorn server and in-process, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from lineage import errors
from lineage.client import BadRequest, Client, Conflict, NotFound
from tests.support.api_world import ServerThread, World


def test_datasets_versions_and_metadata(client: Client, world: World) -> None:
    page = client.list_datasets()
    assert page.total == 1 and page.offset == 0
    (ds,) = page.items
    assert (ds.name, ds.owner, ds.license, ds.tags, ds.latest_version) == (
        "clean",
        "data-team",
        "CC-BY-4.0",
        ["en", "test"],
        2,
    )
    versions = client.list_versions("clean", limit=1)
    assert versions.total == 2 and [v.version for v in versions.items] == [1]
    second = client.list_versions("clean", limit=1, offset=1).items
    assert [v.version for v in second] == [2]
    v1 = client.get_version("clean", 1)
    assert v1.dataset == "clean" and v1.releases == ["clean@v1"] and v1.row_count == 3
    assert [f["name"] for f in v1.schema["fields"]][:3] == ["sample_id", "text", "content_hash"]
    assert [v.version for v in client.iter_all(client.list_versions, "clean", page_size=1)] == [1, 2]
    assert client.list_datasets(tag="en").total == 1 and client.list_datasets(tag="nope").total == 0
    with pytest.raises(NotFound, match="nope"):
        client.get_dataset("nope")
    with pytest.raises(NotFound):
        client.get_version("clean", 99)


def test_update_dataset_metadata(client: Client) -> None:
    updated = client.update_dataset("clean", description="Debian descriptions", tags=["en", "test"])
    assert updated.description == "Debian descriptions" and updated.owner == "data-team"
    assert client.get_dataset("clean").description == "Debian descriptions"


def test_diff_between_versions_and_releases(client: Client) -> None:
    diff = client.diff("clean:v1", "clean:v2")
    assert (diff.added, diff.removed, diff.changed) == (1, 0, 0)
    assert [(s.source, s.added) for s in diff.sources] == [("raw", 1)]
    assert diff.schema_changes == []
    back = client.diff("clean@v2", "clean@v1")
    assert back.removed == 1 and back.base.release == "clean@v2"
    assert client.diff("clean", "clean@v2").added == 0  # latest version is v2
    with pytest.raises(BadRequest):
        client.diff("clean:vX!", "clean")
    with pytest.raises(NotFound):
        client.diff("clean@nope", "clean")


def _refusal(call: object) -> errors.LineageError:
    try:
        call()  # type: ignore[operator]
    except errors.LineageError as exc:
        return exc
    raise AssertionError("the call was not refused")


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda c: c.get_dataset("nope"), "not_found"),
        (lambda c: c.get_version("clean", 99), "not_found"),
        (lambda c: c.get_release("clean@missing"), "release_not_found"),
        (lambda c: c.create_release("clean@v1", version=2), "release_conflict"),
        (lambda c: c.create_release("ghost@v1"), "not_found"),
        (lambda c: c.get_release("not a ref"), "bad_request"),
    ],
)
def test_a_refusal_is_the_same_class_and_message_in_process_and_over_http(
    world: World, server: ServerThread, call: object, code: str
) -> None:
    """The SDK picks the class by the body's code (one table, lineage.errors); the text has no "404: "."""
    local = _refusal(lambda: call(Client(service=world.service)))  # type: ignore[operator]
    with Client(server.url) as remote_client:
        remote = _refusal(lambda: call(remote_client))  # type: ignore[operator]
    assert (type(remote), str(remote)) == (type(local), str(local))
    assert local.code == code and errors.BY_CODE[code].cls is type(local)


def test_runs(client: Client, world: World) -> None:
    runs = client.list_runs(dataset="clean")
    assert runs.total == 2 and {r.status for r in runs.items} == {"succeeded"}
    run = client.get_run(runs.items[0].id)
    assert run.pipeline == "api-test" and run.counts["output_rows"] in (3, 4)
    assert client.list_runs(status="failed").total == 0
    with pytest.raises(NotFound):
        client.get_run("no-such-run")


def test_release_lifecycle(client: Client, world: World) -> None:
    tag = f"life-{client.local}"
    first = client.create_release(f"clean@{tag}", version=1)
    assert first.changed and first.release.state == "published" and first.release.dataset_version == 1
    again = client.create_release(f"clean@{tag}", version=1)
    assert not again.changed and again.release.id == first.release.id
    with pytest.raises(Conflict, match="different content"):
        client.create_release(f"clean@{tag}", version=2)
    manifest = client.get_manifest(f"clean@{tag}")
    assert manifest.row_count == 3
    pins = {kind: (t.tier, t.table, t.delta_version) for kind, t in first.release.tables.items()}
    tables = {"data": manifest.data, "lineage": manifest.lineage, "quarantine": manifest.quarantine}
    assert pins == {k: (manifest.tier, tables[k].table, tables[k].delta_version) for k in pins}
    assert sorted(pins) == ["data", "lineage", "quarantine"]
    quality = client.get_quality(f"clean@{tag}")
    assert [s["operator"] for s in quality.steps] == ["convert", "exact_dedupe", "quality"]
    assert quality.steps[1]["reasons"] == {"exact_duplicate": 1}

    draft = client.create_release(f"clean@{tag}-d", draft=True)
    assert draft.release.state == "draft"
    assert client.list_releases(name="clean", state="draft").total >= 1
    published = client.publish_release(f"clean@{tag}-d")
    assert published.changed and published.release.state == "published"
    assert not client.publish_release(f"clean@{tag}-d").changed

    gone = client.deprecate_release(f"clean@{tag}", "superseded")
    assert gone.release.state == "deprecated" and gone.release.deprecation_reason == "superseded"
    assert gone.release.deprecated_at is not None
    assert not client.deprecate_release(f"clean@{tag}").changed
    with pytest.raises(Conflict):
        client.publish_release(f"clean@{tag}")
    assert client.get_release(f"clean@{tag}").state == "deprecated"
    assert client.get_release(f"clean@{tag}").created_by == "local"
    with pytest.raises(NotFound):
        client.get_release("clean@missing")
    with pytest.raises(BadRequest):
        client.get_release("not a ref")
    with pytest.raises(NotFound):
        client.create_release("ghost@v1")


def test_sample_lineage_of_a_dropped_duplicate(client: Client, world: World) -> None:
    found = client.sample_lineage(world.duplicate)
    assert found.found and [v.version for v in found.versions] == [1, 2]
    assert found.source.path == "sub/b.jsonl" and found.source.row == 0 and found.source.dataset == "raw"
    assert found.source.uri.endswith("b.jsonl")
    v1 = found.versions[0]
    assert not v1.in_output and "clean@v1" in v1.releases
    assert [(r.operator, r.verdict, r.reason) for r in v1.records] == [
        ("convert", "kept", None),
        ("exact_dedupe", "dropped", "exact_duplicate"),
    ]
    assert found.duplicate.kept_id == world.kept and found.duplicate.cluster_size == 2
    kept = client.sample_lineage(world.kept, include_text=True)
    assert kept.versions[0].in_output and kept.sample["text"].startswith("GNU C library")
    assert kept.duplicate is None  # a kept sample carries no duplicate detail; the dropped ones point at it
    assert client.sample_lineage(world.kept).sample.get("text") is None
    assert not client.sample_lineage("0" * 32).found
    assert client.sample_lineage(world.kept, dataset="other").found is False


def test_a_versions_verdicts_page_by_sample_id(client: Client, world: World) -> None:
    """What each step decided about each sample of clean v1: filtered by operator and verdict, paged."""
    dropped = client.list_samples("clean", 1, verdict="dropped")
    assert {(r.sample_id, r.operator, r.reason) for r in dropped.items} == {
        (world.duplicate, "exact_dedupe", "exact_duplicate"),
        (world.short, "quality", "quality:min_words"),
    }
    everything = list(client.iter_all(client.list_samples, "clean", 1, page_size=3))
    assert len(everything) == client.list_samples("clean", 1).total > len(dropped.items)
    assert everything == sorted(everything, key=lambda r: (r.sample_id, r.step))
    kept = client.list_samples("clean", 1, operator="quality", verdict="kept")
    assert world.kept in {r.sample_id for r in kept.items} and {r.step for r in kept.items} == {2}
    assert client.list_samples("clean", 1, operator="no_such_operator").total == 0
    with pytest.raises(NotFound):
        client.list_samples("clean", 9)
    with pytest.raises(errors.Invalid):  # over HTTP a 422 from the query's enum, in-process the service's check
        client.list_samples("clean", 1, verdict="maybe")


def test_why_not_in_release(client: Client, world: World) -> None:
    dup = client.why_not(world.duplicate, "clean@v1")
    assert not dup.in_release and dup.cause == "dropped" and dup.operator == "exact_dedupe"
    assert dup.duplicate.kept_id == world.kept and dup.kept_in_release is True
    assert world.kept in dup.explanation
    short = client.why_not(world.short, "clean@v1")
    assert short.cause == "dropped" and short.reason == "quality:min_words" and "min_words" in short.explanation
    assert client.why_not(world.kept, "clean@v1").in_release
    added = client.why_not(world.added, "clean@v1")
    assert added.cause == "not_an_input" and [v.ref for v in added.found_in] == ["clean:v2"]
    assert client.why_not("f" * 32, "clean@v1").cause == "unknown_sample"
    with pytest.raises(NotFound):
        client.why_not(world.kept, "clean@nope")


def test_releases_containing_a_source(client: Client, world: World) -> None:
    uri = client.sample_lineage(world.kept).source.uri
    by_file = client.source_releases(uri=uri)
    assert {(r.release, r.samples) for r in by_file.releases} >= {("clean@v1", 2), ("clean@v2", 2)}
    folder = uri.rsplit("/", 1)[0] + "/"
    assert {r.release: r.samples for r in client.source_releases(uri=folder).releases}["clean@v2"] == 4
    by_version = client.source_releases(dataset="clean", version=2)
    assert {r.release: r.samples for r in by_version.releases}["clean@v1"] == 3
    assert client.source_releases(uri="file:///nowhere.jsonl").releases == []
    with pytest.raises(BadRequest):
        client.source_releases()


def test_our_runs_appear_in_the_dataset_graph(client: Client, world: World) -> None:
    graph = client.lineage_graph("dataset:lineage-ledger:clean", depth=2)
    ids = {n.id: n for n in graph.graph}
    assert "job:lineage-ledger:api-test" in ids
    job = ids["job:lineage-ledger:api-test"]
    # and the job's runs that made versions, the catalog's run nodes (lineage.catalog_graph)
    runs = {f"run:lineage-ledger:{r.id}" for r in client.list_runs(dataset="clean", status="succeeded").items}
    assert runs
    assert {e.destination for e in job.outEdges} == {"dataset:lineage-ledger:clean"} | runs
    inputs = [e.origin for e in job.inEdges]
    assert len(inputs) == 1 and inputs[0].startswith("dataset:file:")
    clean = ids["dataset:lineage-ledger:clean"]
    assert clean.data["facets"]["version"]["datasetVersion"] == "2"
    only_me = client.lineage_graph("dataset:lineage-ledger:clean", depth=0)
    assert [n.id for n in only_me.graph] == ["dataset:lineage-ledger:clean"]
    with pytest.raises(NotFound):
        client.lineage_graph("dataset:nope:nothing")
    with pytest.raises(BadRequest):
        client.lineage_graph("table:x")


def test_replicas_and_usage_records(client: Client, world: World) -> None:
    (primary,) = client.list_replicas("clean@v1")
    assert (primary.release, primary.tier, primary.state, primary.primary) == ("clean@v1", "local", "verified", True)
    assert primary.table_path == client.get_manifest("clean@v1").data.table
    assert primary.file_count == len(client.get_manifest("clean@v1").files) and primary.verified_at is not None
    assert [r.tier for r in client.list_replicas("clean@v1", state="verified")] == ["local"]
    assert client.list_replicas("clean@v1", state="copying") == []

    job = f"train-{'local' if client.local else 'http'}"
    for rank in (1, 0):
        record = client.record_read("clean@v1", job=job, world_size=2, rank=rank, host="gpu-7")
    assert (record.release, record.job, record.rank, record.recorded_by) == ("clean@v1", job, 0, "local")
    reads = client.list_reads("clean@v1", job=job)
    assert reads.total == 2 and [(r.rank, r.world_size, r.host) for r in reads.items] == [
        (0, 2, "gpu-7"),
        (1, 2, "gpu-7"),
    ]
    assert [r.rank for r in client.list_reads("clean@v1", limit=1, offset=1, job=job).items] == [1]
    assert client.list_reads("clean@v1").total >= 2 and client.list_reads("clean@v2", job=job).total == 0

    with pytest.raises(BadRequest, match="rank"):
        client.record_read("clean@v1", job=job, world_size=2, rank=2)
    with pytest.raises(BadRequest):
        client.record_read("clean@v1", job="", world_size=1, rank=0)
    for call in (
        lambda: client.list_replicas("clean@nope"),
        lambda: client.list_reads("clean@nope"),
        lambda: client.record_read("clean@nope", job=job, world_size=1, rank=0),
    ):
        with pytest.raises(NotFound, match="clean@nope does not exist"):
            call()
    assert client.list_reads("clean@v1", job=job).total == 2  # refused records left nothing behind
