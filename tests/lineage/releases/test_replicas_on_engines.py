"""Tier copies as Spark and Ray jobs: the same replica as in-process, resume, failures, bandwidth, Ceph.

Runs on the session's real local Spark session and real local Ray runtime.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lineage.catalog import Catalog
from lineage.releases import get_release
from lineage.releases.replicas import copy_release, verify_release
from lineage.settings import Settings, TierConfig
from storage.checksum import file_digest
from storage.tier import get_tier
from storage.transfer import TransferError
from storage.transfer_task import TierAccess
from tests.support.fixtures_ceph import CephS3
from tests.support.fixtures_engines import ray_runtime, spark  # noqa: F401  (session fixtures)
from tests.support.replicas import replicas, sample_ids

ENGINES = ("spark", "ray")
FIXTURE = {"spark": "spark", "ray": "ray_runtime"}


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    request.getfixturevalue(FIXTURE[request.param])  # the shared session / runtime
    return request.param


def _posix_tier(settings: Settings, tmp_path: Path, name: str) -> str:
    settings.tiers.append(TierConfig(name=name, kind="posix", root=str(tmp_path / name), tier_class="cold"))
    return name


def _files(catalog: Catalog, ref: str, tier: str) -> set[tuple[str, int, str]]:
    return {(f.path, f.size, f.xxh3_128) for f in replicas(catalog, ref)[tier].files}


def _log_files(settings: Settings, catalog: Catalog, ref: str, tier_name: str) -> tuple[int, set[tuple[str, int]]]:
    """The replica's Delta version 0: (latest version, {(relative path, size)})."""
    tier = get_tier(tier_name, settings)
    table = DeltaTable(tier.uri(replicas(catalog, ref)[tier_name].table_path), storage_options=tier.storage_options)
    added = pa.table(table.get_add_actions(flatten=True)).to_pydict()
    return table.version(), set(zip(added["path"], added["size_bytes"], strict=True))


def test_engine_copy_gives_the_in_process_replica(
    engine: str, release: str, settings: Settings, catalog: Catalog, tmp_path: Path
) -> None:
    by_threads = _posix_tier(settings, tmp_path, "by-threads")
    by_engine = _posix_tier(settings, tmp_path, f"by-{engine}")
    copy_release(catalog, settings, release, by_threads)
    out = copy_release(catalog, settings, release, by_engine, engine=engine)

    assert out.state == "verified" and out.copied == 5 and out.skipped == 0
    replica = replicas(catalog, release)[by_engine]
    assert replica.state == "verified" and replica.delta_version == 0 and replica.detail is None
    assert (
        _files(catalog, release, by_engine) == _files(catalog, release, by_threads) == _files(catalog, release, "local")
    )
    assert _log_files(settings, catalog, release, by_engine) == _log_files(settings, catalog, release, by_threads)
    assert _log_files(settings, catalog, release, by_engine)[0] == 0
    assert verify_release(catalog, settings, release, by_engine).state == "verified"
    assert sample_ids(settings, release, prefer_tier=by_engine) == sample_ids(settings, release)


def test_failed_file_is_reported_not_recorded_and_rerun_resumes(
    engine: str, release: str, settings: Settings, catalog: Catalog, tmp_path: Path
) -> None:
    dst = _posix_tier(settings, tmp_path, f"dst-{engine}")
    local = replicas(catalog, release)["local"]
    with catalog.session() as s:
        order = [f["path"] for f in get_release(s, release).manifest["files"]]
    victim = Path(get_tier("local", settings).path(local.table_path, order[0]))
    good = victim.read_bytes()
    victim.write_bytes(good[:-10])  # the source no longer matches the manifest: no copy can verify

    # one file per batch, two in flight: the victim's batch fails, the batches already running finish
    with pytest.raises(TransferError, match=order[0]):
        copy_release(catalog, settings, release, dst, engine=engine, workers=1)
    replica = replicas(catalog, release)[dst]
    assert replica.state == "copying" and order[0] in (replica.detail or "")
    proven = {f.path: f.xxh3_128 for f in replica.files}
    assert proven and order[0] not in proven
    dst_tier = get_tier(dst, settings)
    assert {p: file_digest(dst_tier, replica.table_path, p).hexdigest for p in proven} == proven, "rows are true"
    assert not DeltaTable.is_deltatable(dst_tier.uri(replica.table_path)), "no log before every file is proven"

    victim.write_bytes(good)
    stamps = {p: Path(dst_tier.path(replica.table_path, p)).stat().st_mtime_ns for p in proven}
    out = copy_release(catalog, settings, release, dst, engine=engine, workers=1)
    assert out.state == "verified" and out.copied == 5 - len(proven) and out.skipped == len(proven)
    assert {p: Path(dst_tier.path(replica.table_path, p)).stat().st_mtime_ns for p in proven} == stamps, (
        "files verified earlier are not copied again"
    )
    assert replicas(catalog, release)[dst].detail is None
    assert sample_ids(settings, release, prefer_tier=dst) == sample_ids(settings, release)


def test_bandwidth_cap_holds_for_the_whole_job(
    engine: str, release: str, settings: Settings, catalog: Catalog, tmp_path: Path
) -> None:
    dst = _posix_tier(settings, tmp_path, f"capped-{engine}")
    total = sum(size for _path, size, _h in _files(catalog, release, "local"))
    cap = total / 1.5  # bytes/s: the job may not finish in under 1.5 s, however many tasks run
    started = time.monotonic()
    out = copy_release(catalog, settings, release, dst, engine=engine, workers=1, bytes_per_s=cap)
    elapsed = time.monotonic() - started
    assert out.state == "verified" and out.bytes_copied == total
    assert elapsed >= 1.5 * 0.95, f"{total} bytes in {elapsed:.2f} s exceeds the cap of {cap:.0f} B/s"


def test_executors_get_credentials_from_the_driver_for_a_real_ceph_tier(
    engine: str,
    release: str,
    settings: Settings,
    catalog: Catalog,
    ceph_s3: CephS3,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Variables set only now, in the driver: Spark's Python workers and Ray's workers started
    # earlier and cannot see them, so the copy works only if the task carries the values.
    ak, sk = f"XFER_AK_{uuid.uuid4().hex[:8]}", f"XFER_SK_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(ak, ceph_s3.access_key)
    monkeypatch.setenv(sk, ceph_s3.secret_key)
    assert _executor_env(engine, sk) is None
    config = ceph_s3.tier_config(name="ceph").model_copy(
        update={"credentials_env": {"access_key": ak, "secret_key": sk}}
    )
    settings.tiers.append(config)
    assert ceph_s3.secret_key not in repr(TierAccess.of(get_tier("ceph", settings)))

    caplog.set_level("DEBUG")
    out = copy_release(catalog, settings, release, "ceph", engine=engine)
    assert out.state == "verified" and out.copied == 5
    assert ceph_s3.secret_key not in caplog.text
    assert _files(catalog, release, "ceph") == _files(catalog, release, "local")
    assert _log_files(settings, catalog, release, "ceph")[0] == 0
    assert sample_ids(settings, release, prefer_tier="ceph") == sample_ids(settings, release)


def _executor_env(engine: str, name: str) -> str | None:
    """The value of an environment variable as an executor of ``engine`` sees it."""
    if engine == "spark":
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        assert session is not None
        return session.sparkContext.parallelize([name], 1).map(lambda n: os.environ.get(n)).collect()[0]
    import ray

    return ray.get(ray.remote(lambda n: os.environ.get(n)).remote(name))
