"""Applying a takedown on real Delta tables: successor releases without the samples, only the files that
held them rewritten (the others shared), a ``takedown`` step in the samples' lineage, the old release
withdrawn naming its successor; applying again changes nothing, and an apply killed half-way is finished."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineage import errors
from lineage.client import Client
from lineage.releases import takedown
from lineage.settings import Settings, TierConfig
from tests.support.api_world import build_corpus, spec
from tests.support.takedowns import CURL


@pytest.fixture
def client(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    settings.parquet_file_rows = 1  # a file per sample: most files hold no affected sample
    with Client(settings=settings) as c:
        c.run_pipeline(spec(build_corpus(tmp_path / "raw")).model_dump(mode="json", exclude={"base_dir"}))
        c.create_release("clean@v1")
        yield c


def test_apply_reissues_the_release_without_the_samples_sharing_untouched_files(client: Client, tmp_path: Path) -> None:
    before = client.get_manifest("clean@v1")
    request = client.create_takedown({"source": {"dataset": "raw", "path": "sub/*"}}, kind="opt_out", reason="asked")
    (planned,) = client.plan_takedown(request.id).releases
    applied = client.apply_takedown(request.id)
    (done,) = applied.successors
    assert (done.release, done.successor, done.dataset, done.version) == (
        "clean@v1",
        f"clean@v1-td{request.id}",
        "clean",
        2,
    )
    assert done.samples_removed == planned.samples == 1 and applied.request.state == "applied"

    old, new = client.get_release("clean@v1"), client.get_release(done.successor)
    assert (old.state, old.successor, old.withdrawn_by) == ("withdrawn", done.successor, request.id)
    assert new.state == "published" and new.row_count == old.row_count - 1
    assert [r.ref for r in client.list_releases(state="withdrawn").items] == ["clean@v1"]
    after = client.get_manifest(done.successor)
    affected = {f.path for f in planned.files}
    shared = {f.path for f in before.files} - affected
    assert shared and shared <= {f.path for f in after.files}  # the same files, not copies
    assert not affected & {f.path for f in after.files}  # the files that held the samples were rewritten

    exported = client.export_release(done.successor, tmp_path / "out")
    texts = [json.loads(line)["text"] for line in Path(exported.path).read_text().splitlines()]
    assert exported.rows == new.row_count and not any(t.startswith("command line tool") for t in texts)
    v2 = next(v for v in client.sample_lineage(CURL).versions if v.version == 2)
    assert not v2.in_output and v2.records[-1].operator == "takedown"
    assert v2.records[-1].verdict == "dropped" and v2.records[-1].reason == f"takedown:{request.id}"

    again = client.apply_takedown(request.id)  # nothing live holds the samples any more
    assert again.successors == [] and client.list_versions("clean").total == 2


def test_an_apply_killed_after_the_new_version_is_finished_by_running_it_again(client: Client) -> None:
    request = client.create_takedown({"sample_ids": [CURL]}, kind="privacy", reason="x")
    (impact,) = client.plan_takedown(request.id).releases
    drop = {impact.files[0].path: [CURL]}
    service = client.service
    first = takedown.remove_samples(service.catalog, service.settings, "clean", 1, drop, request.id)  # then killed
    assert first.version == 2 and not first.reused
    (done,) = client.apply_takedown(request.id).successors
    assert done.version == 2 and client.list_versions("clean").total == 2  # the finished version, reused
    assert client.get_release("clean@v1").state == "withdrawn"


def test_the_rewrite_hands_back_the_removed_rows_and_a_rerun_that_reuses_the_version_reads_them(
    client: Client, settings: Settings
) -> None:
    """The local rewrite keeps what it dropped (the successor's QC report subtracts it, without reading the
    affected files again); an apply killed after the version was made has lost them, and its rerun reads
    them back from the affected files: the report is the full one either way."""
    from lineage.catalog.queries import dataset_version
    from lineage.releases.qc import build_report

    request = client.create_takedown({"sample_ids": [CURL]}, kind="privacy", reason="x")
    (impact,) = client.plan_takedown(request.id).releases
    drop = {impact.files[0].path: [CURL]}
    service = client.service
    first = takedown.remove_samples(service.catalog, service.settings, "clean", 1, drop, request.id)  # then killed
    assert first.rows is not None and first.rows.column_names == takedown.REMOVED_COLUMNS
    assert first.rows.column("sample_id").to_pylist() == [CURL]
    old = client.get_version("clean", 1)
    read = takedown.removed_rows(service.settings, old.tier, old.data_path, drop)
    assert first.rows.equals(read)  # the rows a re-read gives
    again = takedown.remove_samples(service.catalog, service.settings, "clean", 1, drop, request.id)
    assert again.reused and again.rows is None  # a reused version: nothing was read, the report reads them
    (done,) = client.apply_takedown(request.id).successors
    with service.catalog.session() as s:
        full = build_report(s, dataset_version(s, "clean", done.version), settings)
    stored = client.get_quality(done.successor).report
    assert stored is not None and _same(stored.model_dump(), full)


def test_a_withdrawn_release_is_served_only_with_a_reason_which_is_recorded(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    """open_release, export and tier copy refuse it naming the successor; with a reason they serve it, and
    the reason is in its usage records."""
    from lineage.reader import open_release

    request = client.create_takedown({"sample_ids": [CURL]}, kind="privacy", reason="x")
    (done,) = client.apply_takedown(request.id).successors
    named = f"use its successor {done.successor}"
    with pytest.raises(errors.ReleaseWithdrawn, match=named):
        open_release("clean@v1", settings=settings)
    with pytest.raises(errors.ReleaseWithdrawn, match=named):
        client.export_release("clean@v1", tmp_path / "out")
    settings.tiers.append(TierConfig(name="cold", kind="posix", root=str(tmp_path / "cold")))
    with pytest.raises(errors.ReleaseWithdrawn, match=named):
        client.copy_release("clean@v1", "cold")
    with pytest.raises(errors.ReleaseWithdrawn):
        client.record_read("clean@v1", job="j", world_size=1, rank=0)

    reader = open_release("clean@v1", settings=settings, override_reason="audit of the old release", job="audit")
    assert sum(len(batch) for batch in reader) == client.get_release("clean@v1").row_count
    client.export_release("clean@v1", tmp_path / "out", override_reason="legal hold copy")
    assert {(r.job, r.override_reason) for r in client.list_reads("clean@v1").items} == {
        ("audit", "audit of the old release"),
        ("lineage export", "legal hold copy"),
    }
    successor = open_release(done.successor, settings=settings)
    assert sum(len(batch) for batch in successor) == client.get_release(done.successor).row_count


def test_the_takedown_commands_as_a_user_runs_them(client: Client, settings: Settings, tmp_path: Path) -> None:
    from tests.support.cli import lineage

    home = settings.home
    made = lineage(
        home, "takedown", "request", "--kind", "opt_out", "--reason", "r", "--source", "raw", "--path", "sub/*"
    )
    request_id = made.stdout.split()[2]
    applied = lineage(home, "takedown", "apply", request_id).stdout
    assert f"clean@v1 withdrawn → clean@v1-td{request_id}" in applied and "applied" in applied
    assert f"withdrawn → clean@v1-td{request_id}" in lineage(home, "release", "list").stdout
    only_withdrawn = lineage(home, "release", "list", "--state", "withdrawn").stdout
    assert f"withdrawn → clean@v1-td{request_id}" in only_withdrawn
    assert f"│ clean@v1-td{request_id} │" not in only_withdrawn  # the successor's row: it is published
    misspelt = lineage(home, "takedown", "list", "--state", "aplied", check=False)
    assert misspelt.returncode == 3 and "state must be one of planned, applied, purged, got 'aplied'" in misspelt.stderr
    refused = lineage(home, "export", "clean@v1", "--out", str(tmp_path / "e"), check=False)
    assert refused.returncode == 5 and refused.stderr.strip().splitlines() == [
        f"error: release clean@v1 was withdrawn by takedown request {request_id}: use its successor "
        f"clean@v1-td{request_id}, or give an override reason (it is recorded)"
    ]
    assert "wrote" in lineage(home, "export", "clean@v1", "--out", str(tmp_path / "e"), "--override", "audit").stdout


def test_lineage_takedown_apply_imports_no_pandas(client: Client, settings: Settings) -> None:
    """pyarrow imported pandas (0.11-0.14 s) at its first conversion of Python values, a tenth of the
    benchmark's ``lineage takedown apply``; the ``lineage`` process defers it (``storage/arrow_pandas.py``)."""
    from tests.support.cli import lineage_loading

    request = client.create_takedown({"sample_ids": [CURL]}, kind="privacy", reason="x")
    out, loaded = lineage_loading(settings.home, ["takedown", "apply", str(request.id)], ("pandas",))
    assert "clean@v1 withdrawn → clean@v1-td" in out
    assert loaded == []


@pytest.mark.parametrize("selector", [{"sample_ids": [CURL]}, {"source": {"dataset": "raw", "path": "sub/*"}}])
def test_the_successors_qc_report_is_the_full_one_without_reading_every_text(
    client: Client, settings: Settings, selector: dict
) -> None:
    """The successor's report is derived from its predecessor's minus the removed rows; it equals the
    report built from the successor's data and whole lineage (what publishing any version computes)."""
    from lineage.catalog.queries import dataset_version
    from lineage.releases.qc import build_report

    request = client.create_takedown(selector, kind="other", reason="x")
    (done,) = client.apply_takedown(request.id).successors
    with client.service.catalog.session() as s:
        full = build_report(s, dataset_version(s, "clean", done.version), settings)
    stored = client.get_quality(done.successor).report
    assert stored is not None and _same(stored.model_dump(), full)


def _same(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), (a.keys(), b.keys())
        return all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), (a, b)
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b), (a, b)
        return True
    assert a == b, (a, b)
    return True


def test_the_successor_is_measured_by_its_predecessors_gate_which_does_not_stop_it(client: Client) -> None:
    """A gate the successor fails (fewer samples than the minimum) is recorded as overridden by the request."""
    client.create_release("clean@gated", gate={"min_samples": client.get_release("clean@v1").row_count})
    request = client.create_takedown({"sample_ids": [CURL]}, kind="privacy", reason="x")
    applied = {s.release: s.successor for s in client.apply_takedown(request.id).successors}
    gate = client.get_release(applied["clean@gated"]).gate
    assert gate is not None and gate.results[0].condition == "min_samples" and not gate.results[0].passed
    assert gate.override is not None and f"takedown request {request.id}" in gate.override.reason
    assert client.get_release(applied["clean@v1"]).gate is None  # no gate before, none after


def test_applying_a_takedown_of_ids_loads_no_jit_scanner_or_migrations(client: Client) -> None:
    """A takedown of a thousand ids reads a handful of files: in a fresh process, applying it must not load
    numba (the quality rule sets' JIT), ``pyarrow.dataset`` (a scan planner, which also loads pandas), DuckDB
    or Alembic. Each cost 0.3-0.8 s of the 5M-sample benchmark (``benchmarks/takedown.py``)."""
    request = client.create_takedown({"sample_ids": [CURL]}, kind="privacy", reason="x")
    code = (
        "import json, sys\n"
        "from lineage.service.core import Service\n"
        "from lineage.settings import get_settings\n"
        "service = Service(get_settings())\n"
        "service.catalog\n"
        f"applied = service.apply_takedown({request.id}, actor='t')\n"
        "heavy = ('numba', 'pyarrow.dataset', 'duckdb', 'alembic', 'pyspark', 'ray')\n"
        "print(json.dumps({'removed': applied.successors[0].samples_removed,"
        " 'loaded': [m for m in heavy if m in sys.modules]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[3])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == {"removed": 1, "loaded": []}
