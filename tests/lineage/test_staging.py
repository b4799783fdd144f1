"""``lineage gc`` and takedown purge clear the local staging folder without breaking live work: a running
run's scratch, a resumable run's (failed, within gc's grace) and a live process's temporary folder
(``lineage dedupe``'s ids, a run's id spill, neither with a run row) stay; dead runs' scratch goes (gc:
once past the grace period; purge: at once), and so do temporary folders past the grace period. The same
for the ``_staging`` folders of Spark and Ray runs on the tiers."""

from __future__ import annotations

import os
import time
import uuid
from datetime import timedelta
from pathlib import Path

from lineage import staging
from lineage.catalog import Catalog, Run
from lineage.catalog.models import utcnow
from lineage.gc import collect_garbage
from lineage.settings import Settings
from pipelines.partitions import FOLDER
from storage.layout import STAGING, staging_prefix
from storage.tier import get_tier


def _folder(root: Path, name: str, age: timedelta = timedelta(0)) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "part.bin").write_bytes(b"x" * 10)
    stamp = time.time() - age.total_seconds()
    for path in (folder / "part.bin", folder):
        os.utime(path, (stamp, stamp))
    return folder


def _runs(catalog: Catalog, ended: timedelta | None = None, **status: str) -> None:
    with catalog.session() as s:
        for run_id, state in status.items():
            run = Run(id=run_id, pipeline="p", engine="local", output_dataset="d", status=state, pid=os.getpid())
            if ended is not None:
                run.started_at = run.ended_at = utcnow() - ended
            s.add(run)


def test_gc_keeps_live_work_in_staging_and_clears_what_is_dead(catalog: Catalog, settings: Settings) -> None:
    root = Path(settings.staging_dir)
    live, dead, resumable = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    _runs(catalog, **{live: "running", resumable: "failed"})
    _runs(catalog, ended=timedelta(days=3), **{dead: "failed"})  # failed past gc's grace: no longer resumable
    kept = [_folder(root, live), _folder(root, resumable), _folder(root, "dedupe-ids-a1b2c3")]
    kept.append(_folder(root, "ids-spill-x", timedelta(hours=1)))
    gone = [_folder(root, dead), _folder(root, "dedupe-ids-old", timedelta(days=3))]

    dry = collect_garbage(catalog, settings, dry_run=True)
    assert sorted(f for f in dry.deleted_files if f.startswith("staging:")) == sorted(f"staging:{p.name}" for p in gone)
    assert all(p.exists() for p in kept + gone)  # a dry run deletes nothing

    collect_garbage(catalog, settings)
    assert all(p.exists() for p in kept)  # the running and the resumable run's scratch, a live process's ids
    assert not any(p.exists() for p in gone)


def test_purge_clears_dead_runs_scratch_whatever_its_age_and_no_process_folder(tmp_path: Path) -> None:
    live, dead = str(uuid.uuid4()), str(uuid.uuid4())
    for name in (live, dead, "dedupe-ids-old"):
        _folder(tmp_path, name, timedelta(days=30) if name == "dedupe-ids-old" else timedelta(0))
    found = staging.leftovers(tmp_path, {live}, grace=None)
    assert [(f.path.name, f.run_id, f.bytes) for f in found] == [(dead, dead, 10)]
    staging.remove(found[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live, "dedupe-ids-old"])


def test_gc_keeps_the_tier_staging_of_running_and_resumable_spark_and_ray_runs_only(
    catalog: Catalog, settings: Settings
) -> None:
    tier = get_tier(None, settings)
    live, resumable, dead, partless, unknown = (str(uuid.uuid4()) for _ in range(5))
    with catalog.session() as s:
        for run_id, state, engine, ended in (
            (live, "running", "spark", None),
            (resumable, "failed", "ray", None),
            (dead, "failed", "spark", timedelta(days=3)),  # past gc's grace: no longer resumable
            (partless, "failed", "spark", None),  # killed before any partition was recorded
        ):
            run = Run(id=run_id, pipeline="p", engine=engine, output_dataset="d", status=state, pid=os.getpid())
            run.spec = {"output": {"dataset": "d", "tier": None}}
            if ended is not None:
                run.started_at = run.ended_at = utcnow() - ended
            s.add(run)
    root = Path(tier.path(STAGING))
    for run_id in (live, resumable, dead, unknown):
        _folder(root / f"run-{run_id}", FOLDER)
    _folder(root, f"run-{partless}")
    dry = collect_garbage(catalog, settings, dry_run=True)
    gone = sorted(f"{tier.name}:{staging_prefix(r)}" for r in (dead, partless, unknown))
    assert sorted(f for f in dry.deleted_files if STAGING in f) == gone
    collect_garbage(catalog, settings)
    assert sorted(p.name for p in root.iterdir()) == sorted(f"run-{r}" for r in (live, resumable))
