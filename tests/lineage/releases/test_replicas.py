"""Release replicas across tiers: copy, move, verify, resume after SIGKILL, and Ceph for real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from lineage.catalog import Catalog
from lineage.releases import deprecate, publish
from lineage.releases.replicas import copy_release, move_release, verify_release
from lineage.settings import Settings
from storage.tier import Tier, get_tier
from storage.verified import ChecksumMismatch
from tests.support.fixtures_ceph import CephS3
from tests.support.helpers import CORRUPTIONS, corrupted
from tests.support.replicas import replicas, sample_ids


def test_copy_is_verified_self_contained_and_readable(
    release: str, cold: str, settings: Settings, catalog: Catalog
) -> None:
    out = copy_release(catalog, settings, release, cold)
    assert out.state == "verified" and out.copied == 5 and out.skipped == 0
    reps = replicas(catalog, release)
    assert reps["local"].primary and reps["local"].state == "verified"
    replica = reps[cold]
    assert replica.state == "verified" and len(replica.files) == 5 and replica.verified_at is not None
    assert all(f.verified_at for f in replica.files)
    # a self-contained Delta table whose version 0 is exactly the release
    tier = get_tier(cold, settings)
    table = DeltaTable(tier.uri(replica.table_path))
    assert table.version() == 0 and table.to_pyarrow_table().num_rows == 200
    assert sample_ids(settings, release, prefer_tier=cold) == sample_ids(settings, release)
    again = copy_release(catalog, settings, release, cold)
    assert again.copied == 0, "copying an existing verified replica is a no-op"


def test_verify_catches_corruption(release: str, cold: str, settings: Settings, catalog: Catalog) -> None:
    copy_release(catalog, settings, release, cold)
    replica = replicas(catalog, release)[cold]
    first = replica.files[0].path
    victim = Path(get_tier(cold, settings).path(replica.table_path, first))
    victim.write_bytes(victim.read_bytes()[:-10])
    out = verify_release(catalog, settings, release, cold)
    assert out.state == "corrupt" and list(out.problems) == [first]
    assert replicas(catalog, release)[cold].state == "corrupt"
    # the reader no longer uses the corrupt copy, even when preferred
    assert len(sample_ids(settings, release, prefer_tier=cold)) == 200


def test_move_keeps_files_a_deprecated_release_still_reads(
    release: str, cold: str, settings: Settings, catalog: Catalog
) -> None:
    """A deprecated release stays readable, so moving another release off the same files keeps them."""
    publish(catalog, settings, "d@old")
    deprecate(catalog, "d@old", reason="superseded")
    out = move_release(catalog, settings, release, cold)
    assert out.removed_from == "local" and out.deleted_files == 0
    assert sample_ids(settings, "d@old") == sample_ids(settings, release)


def test_move_removes_only_files_no_other_release_needs(
    release: str, cold: str, settings: Settings, catalog: Catalog
) -> None:
    publish(catalog, settings, "d@also")  # another published release of the same files
    out = move_release(catalog, settings, release, cold)
    assert out.removed_from == "local" and out.deleted_files == 0
    assert replicas(catalog, release)["local"].state == "removed"
    assert len(sample_ids(settings, "d@also")) == 200, "the other release still reads its files"

    out = move_release(catalog, settings, "d@also", cold)
    assert out.deleted_files == 5
    assert sample_ids(settings, "d@also") == sample_ids(settings, release)  # both read from cold now


def _cli(home: Path, config: Path, *args: str, pause: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "LINEAGE_HOME": str(home), "LINEAGE_CONFIG": str(config)}
    if pause:
        env |= {"LINEAGE_PAUSE_AT": pause, "LINEAGE_PAUSE_MARKER": str(home / f"paused-{pause}")}
    return subprocess.Popen(
        [sys.executable, "-m", "lineage", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _kill_at(proc: subprocess.Popen, marker: Path) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "never paused"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.mark.parametrize("action", ["copy", "move"])
def test_sigkill_midway_leaves_source_intact_catalog_truthful_and_rerun_resumes(
    action: str, release: str, cold: str, settings: Settings, catalog: Catalog, home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "lineage.toml"
    cold_root = settings.tier_config(cold).root
    config.write_text(f'[[tiers]]\nname = "cold"\nkind = "posix"\nroot = "{cold_root}"\nclass = "cold"\n')
    before = {f.path: f.xxh3_128 for f in replicas(catalog, release)["local"].files}
    primary = get_tier("local", settings)
    table_path = replicas(catalog, release)["local"].table_path

    pause = "replica.file_verified" if action == "copy" else "replica.before_delete"
    proc = _cli(home, config, "tier", action, release, "--to", cold, "--workers", "1", pause=pause)
    _kill_at(proc, home / f"paused-{pause}")

    reps = replicas(catalog, release)
    from storage.checksum import file_digest

    assert {p: file_digest(primary, table_path, p).hexdigest for p in before} == before, "source intact"
    if action == "copy":
        assert reps[cold].state == "copying" and len(reps[cold].files) == 1  # exactly what was proven
        assert reps["local"].state == "verified"
    else:
        assert reps[cold].state == "verified" and reps["local"].state == "removing"

    rerun = _cli(home, config, "tier", action, release, "--to", cold, "--workers", "1")
    out = rerun.communicate(timeout=120)[0]
    assert rerun.returncode == 0, out
    reps = replicas(catalog, release)
    assert reps[cold].state == "verified"
    if action == "copy":
        assert "copied 4 files" in out and "1 already verified" in out
    else:
        assert reps["local"].state == "removed" and "removed 5 files from local" in out
    assert len(sample_ids(settings, release, prefer_tier=cold)) == 200


def test_copy_to_a_real_ceph_tier_and_read_back(
    release: str, settings: Settings, catalog: Catalog, ceph_s3: CephS3
) -> None:
    settings.tiers.append(ceph_s3.tier_config(name="ceph"))
    out = copy_release(catalog, settings, release, "ceph")
    assert out.state == "verified" and out.copied == 5
    assert verify_release(catalog, settings, release, "ceph").state == "verified"
    tier = get_tier("ceph", settings)
    replica = replicas(catalog, release)["ceph"]
    assert DeltaTable(tier.uri(replica.table_path), storage_options=tier.storage_options).version() == 0
    assert sample_ids(settings, release, prefer_tier="ceph") == sample_ids(settings, release)
    assert {f.xxh3_128 for f in replica.files} == {f.xxh3_128 for f in replicas(catalog, release)["local"].files}


def _ceph_only_copy(release: str, settings: Settings, catalog: Catalog, ceph_s3: CephS3) -> tuple[Tier, list[str]]:
    """Move the release to a real Ceph tier (the local primary is removed): the tier and the
    paths of its files there."""
    settings.tiers.append(ceph_s3.tier_config(name="ceph"))
    move_release(catalog, settings, release, "ceph")
    reps = replicas(catalog, release)
    assert reps["local"].state == "removed" and reps["ceph"].state == "verified"
    tier = get_tier("ceph", settings)
    return tier, [tier.path(reps["ceph"].table_path, f.path) for f in reps["ceph"].files]


def _put(tier: Tier, path: str, data: bytes) -> None:
    with tier.filesystem.open_output_stream(path) as out:
        out.write(data)


def test_on_ceph_an_object_changed_after_it_was_verified_is_hashed_again(
    release: str, settings: Settings, catalog: Catalog, ceph_s3: CephS3
) -> None:
    tier, paths = _ceph_only_copy(release, settings, catalog, ceph_s3)
    expected = sample_ids(settings, release)
    assert len(list((settings.home / "verified").iterdir())) == len(paths)  # an ETag needs no settling
    victim = paths[1]
    with tier.filesystem.open_input_stream(victim) as stream:
        original = stream.read()
    for how in CORRUPTIONS:  # rewrites a second apart or less: same size, often the same Last-Modified; ETags differ
        _put(tier, victim, corrupted(original, how))
        with pytest.raises(ChecksumMismatch, match=rf"no good copy of \S*/{victim.rsplit('/', 1)[1]}: ceph: "):
            sample_ids(settings, release)
        _put(tier, victim, original)
        assert sample_ids(settings, release) == expected, how


def test_on_ceph_a_replica_verify_found_corrupt_is_never_read(
    release: str, settings: Settings, catalog: Catalog, ceph_s3: CephS3
) -> None:
    tier, paths = _ceph_only_copy(release, settings, catalog, ceph_s3)
    sample_ids(settings, release)
    victim = paths[3]
    with tier.filesystem.open_input_stream(victim) as stream:
        original = stream.read()
    _put(tier, victim, corrupted(original, "middle"))
    assert verify_release(catalog, settings, release, "ceph").state == "corrupt"
    assert not list((settings.home / "verified").iterdir())
    _put(tier, victim, original)  # repaired, but the catalog still says corrupt
    name = victim.rsplit("/", 1)[1]
    refused = (
        rf"no good copy of \S+: local: the replica is removed, not read; ceph: the replica is corrupt \(\S*/{name}: "
    )
    with pytest.raises(ChecksumMismatch, match=refused):
        sample_ids(settings, release)
