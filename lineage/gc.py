"""Clean up after runs that never reached their catalog commit: the supported way to reclaim space.

Safety rule: a file referenced by any Delta version that the catalog pins (every dataset
version, so every release) is never deleted, and nothing in ``_delta_log`` is ever deleted.

The staging folder of a run that can still be resumed (:mod:`lineage.resume`: interrupted, not
superseded by a newer success of its output; the local folder of a local run, ``_staging/run-<id>``
on the output tier of a Spark or Ray run) is kept until the run has been over for the grace period;
then it is deleted and the run can no longer resume. Any other run's tier staging is deleted unless
the run is still running.

Delta's own ``VACUUM`` and log cleanup cannot know what the catalog pins, so every table carries a
retention they never reach (:mod:`storage.delta`). gc gives that retention back to any table that
lacks it (written by an older version, or changed by hand): dataset tables and release replicas.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pyarrow.fs as pafs
from sqlalchemy import select

from lineage import staging
from lineage.catalog import Catalog, DatasetVersion, PipelineRun, Replica, Run
from lineage.catalog.models import utcnow
from lineage.resume import keep_staging, process_alive
from lineage.settings import Settings
from storage.delta import ensure_table_retention, version_files
from storage.layout import datasets_on
from storage.tier import get_tier

log = logging.getLogger(__name__)


@dataclass
class GcReport:
    abandoned_runs: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    kept_files: int = 0
    retention_set: list[str] = field(default_factory=list)  # tables given the retention properties


def mark_abandoned_runs(catalog: Catalog, grace: timedelta) -> list[str]:
    """Runs and pipeline runs still 'running' whose process is gone (or that outlived ``grace``) become
    'failed'; the ids of the runs (a pipeline run's stages are runs of their own, marked the same way)."""
    abandoned = []
    with catalog.session() as s:
        for model in (Run, PipelineRun):
            for run in s.scalars(select(model).where(model.status == "running")):
                started = run.started_at if run.started_at.tzinfo else run.started_at.replace(tzinfo=utcnow().tzinfo)
                if not process_alive(run) or utcnow() - started > grace:
                    run.status, run.ended_at = "failed", utcnow()
                    run.error = (run.error or "") + "abandoned: the run's process is gone"
                    if model is Run:
                        abandoned.append(run.id)
    return abandoned


def _tables_on_tiers(settings: Settings) -> list[tuple[str, str]]:
    found = []
    for config in settings.tiers:
        try:
            datasets = datasets_on(get_tier(config.name, settings))
        except OSError as exc:  # gc is best effort: an unreachable tier is reclaimed at a later run
            log.warning("gc: cannot list tier %s: %s", config.name, exc)
            continue
        found += [(config.name, path) for tables in datasets for path in tables.all()]
    return found


def collect_garbage(
    catalog: Catalog, settings: Settings, *, dry_run: bool = False, grace: timedelta = timedelta(days=2)
) -> GcReport:
    report = GcReport(abandoned_runs=[] if dry_run else mark_abandoned_runs(catalog, grace))
    with catalog.session() as s:
        running = set(s.scalars(select(Run.id).where(Run.status == "running")))
        resumable = keep_staging(s, staging.staged(settings), grace)
        versions = list(s.scalars(select(DatasetVersion)))
        tables: dict[tuple[str, str], set[str]] = {}
        for dv in versions:
            tier = get_tier(dv.tier, settings)
            for path, version in dv.pinned_tables.values():
                protected = tables.setdefault((dv.tier, path), set())
                protected.update(f["path"] for f in version_files(tier, path, version))
        replicas = {
            (tier, path)
            for tier, path in s.execute(select(Replica.tier, Replica.table_path).where(Replica.state != "removed"))
        }
    for tier_name, table_path in _tables_on_tiers(settings):
        tables.setdefault((tier_name, table_path), set())  # tables no committed version knows yet
    for tier_name, table_path in sorted(set(tables) | replicas):
        if ensure_table_retention(get_tier(tier_name, settings), table_path, dry_run=dry_run):
            report.retention_set.append(f"{tier_name}:{table_path}")
    for (tier_name, table_path), protected in tables.items():
        tier = get_tier(tier_name, settings)
        fs = tier.filesystem
        selector = pafs.FileSelector(tier.path(table_path), recursive=False, allow_not_found=True)
        for folder in fs.get_file_info(selector):
            name = folder.base_name
            if folder.type != pafs.FileType.Directory or not name.startswith("run-"):
                continue  # _delta_log and anything else are not ours to touch
            if name.removeprefix("run-") in running:
                continue
            inner = pafs.FileSelector(folder.path, recursive=True)
            for info in fs.get_file_info(inner):
                if info.type != pafs.FileType.File:
                    continue
                relative = tier.relative(info.path)[len(table_path) + 1 :]
                if relative in protected:
                    report.kept_files += 1
                    continue
                report.deleted_files.append(f"{tier_name}:{table_path}/{relative}")
                if not dry_run:
                    fs.delete_file(info.path)
    for leftover in staging.leftovers(Path(settings.staging_dir), running | resumable, grace):
        report.deleted_files.append(f"staging:{leftover.path.name}")
        if not dry_run:
            staging.remove(leftover)
    for config in settings.tiers:  # Spark and Ray runs' staging
        tier = get_tier(config.name, settings)
        try:
            folders = staging.tier_leftovers(tier, running | resumable)
        except OSError as exc:  # best effort, as for the tables
            log.warning("gc: cannot list the staging of tier %s: %s", config.name, exc)
            continue
        for folder in folders:
            report.deleted_files.append(f"{config.name}:{folder}")
            if not dry_run:
                staging.remove_tier(tier, folder)
    log.info(
        "gc: %d files deleted, %d kept, retention set on %d tables",
        len(report.deleted_files),
        report.kept_files,
        len(report.retention_set),
    )
    return report
