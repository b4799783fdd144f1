"""Tier copies as Spark or Ray jobs: the driver plans and records, executors copy and verify.

The driver gets the files still to copy (the caller has removed those already verified), cuts
them into batches and keeps one batch per core of the cluster in flight (Spark: one
single-partition job per batch, submitted from driver threads so several run at once; Ray: one
task per batch). Each executor runs :class:`storage.transfer_task.CopyTask`, i.e. the same
:func:`storage.transfer.copy_verified` as the in-process copy. As each batch comes back, the
driver calls ``on_verified`` for every file it proved, which commits the file's catalog row: a
killed job loses at most the batches in flight.

Bandwidth: the job's cap is split evenly over the batches that may run at once (``cap / in
flight``, each batch's threads sharing its share), so the total never exceeds the cap; a batch
that finishes early leaves its share unused until the next one starts.

Failures: a batch returns the files it proved and the error that stopped it. After the first
error no new batch starts; the batches in flight finish and their proven files are recorded, then
:class:`~storage.transfer.TransferError` is raised naming every failure.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from lineage.errors import Invalid
from lineage.settings import Settings
from pipelines.engines import check_engine, engine_module
from storage.tier import Tier
from storage.transfer import FileSpec, TransferError, TransferReport
from storage.transfer_task import BatchResult, CopyTask, TierAccess, run_copy_task

log = logging.getLogger(__name__)

CopyEngine = str  # a name of the engine registry, pipelines.engines.base.ENGINES
MAX_FILES_PER_BATCH = 64  # bounds the work a killed job loses (proven but not yet recorded)


class _Submitter(Protocol):
    slots: int

    def start(self, task: CopyTask) -> None: ...
    def submit(self, files: list[FileSpec]) -> Future[BatchResult]: ...
    def close(self, abort: bool) -> None: ...


class _SparkSubmitter:
    """Each batch is a one-partition Spark job; driver threads keep ``slots`` of them running."""

    def __init__(self, settings: Settings) -> None:
        self.session, self._owned = engine_module("spark").spark_session(settings.engine)
        self.sc = self.session.sparkContext
        self.slots = max(1, self.sc.defaultParallelism)
        self._group = f"lineage-copy-{uuid.uuid4().hex[:12]}"
        self._pool = ThreadPoolExecutor(self.slots, thread_name_prefix="spark-copy")
        self._task: CopyTask | None = None

    def start(self, task: CopyTask) -> None:
        self._task = task

    def _run(self, files: list[FileSpec]) -> BatchResult:
        task = self._task
        assert task is not None
        self.sc.setJobGroup(self._group, f"lineage tier copy: {len(files)} files", interruptOnCancel=True)
        return self.sc.parallelize([files], 1).map(task).collect()[0]

    def submit(self, files: list[FileSpec]) -> Future[BatchResult]:
        return self._pool.submit(self._run, files)

    def close(self, abort: bool) -> None:
        if abort:
            self.sc.cancelJobGroup(self._group)
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._owned:  # a session someone else started is theirs to stop
            self.session.stop()


class _RaySubmitter:
    """Each batch is a Ray task; the copy task (with its credentials) is put in the object store once."""

    def __init__(self, settings: Settings) -> None:
        ray_runtime = engine_module("ray").ray_runtime  # checks the [ray] extra first
        import ray  # extra: ray (checked just above); the base install never loads it

        self._ray = ray
        self._owned = ray_runtime(settings.engine)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = ray.remote(num_cpus=1)(run_copy_task)
        self._task_ref: Any = None
        self._refs: list[Any] = []

    def start(self, task: CopyTask) -> None:
        self._task_ref = self._ray.put(task)

    def submit(self, files: list[FileSpec]) -> Future[BatchResult]:
        ref = self._remote.remote(self._task_ref, files)
        self._refs.append(ref)
        return ref.future()

    def close(self, abort: bool) -> None:
        if abort:
            for ref in self._refs:
                self._ray.cancel(ref)
        if self._owned:  # a runtime someone else started is theirs to stop
            self._ray.shutdown()


_SUBMITTERS: dict[str, Callable[[Settings], _Submitter]] = {"spark": _SparkSubmitter, "ray": _RaySubmitter}


def _submitter(engine: CopyEngine) -> Callable[[Settings], _Submitter]:
    """How ``engine`` runs copy batches; an unknown name is Invalid, a missing extra MissingExtra."""
    check_engine(engine)
    try:
        return _SUBMITTERS[engine]
    except KeyError:  # "local": the caller copies in process (storage.transfer.copy_verified)
        raise Invalid(
            f"the {engine} engine does not run tier copies as jobs; choose one of {', '.join(_SUBMITTERS)}"
        ) from None


def batches(files: list[FileSpec], slots: int, workers: int) -> list[list[FileSpec]]:
    """Batches of at least ``workers`` files (one per thread), about 8 per slot, at most 64 files."""
    size = max(1, workers, min(MAX_FILES_PER_BATCH, math.ceil(len(files) / (8 * slots))))
    return [files[i : i + size] for i in range(0, len(files), size)]


def copy_on_engine(
    engine: CopyEngine,
    settings: Settings,
    src: Tier,
    src_prefix: str,
    dst: Tier,
    dst_prefix: str,
    files: Iterable[FileSpec],
    *,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
    workers: int = 4,
    bytes_per_s: float | None = None,
    on_verified: Callable[[FileSpec], None] = lambda _f: None,
    on_bytes: Callable[[int], None] = lambda _n: None,
) -> TransferReport:
    """:func:`storage.transfer.copy_verified` as a Spark or Ray job; ``on_verified`` runs on the driver."""
    make_submitter = _submitter(engine)  # before any work
    report = TransferReport()
    todo: list[FileSpec] = []
    for spec in files:
        if spec.path in skip:
            report.skipped.append(spec.path)
        else:
            todo.append(spec)
    if not todo:
        return report
    start = time.perf_counter()
    submitter = make_submitter(settings)
    queue = batches(todo, submitter.slots, workers)
    in_flight = min(submitter.slots, len(queue))
    share = bytes_per_s / in_flight if bytes_per_s else None
    log.info(
        "copying %d files to %s:%s on %s: %d batches, %d at once, %s",
        len(todo),
        dst.name,
        dst_prefix,
        engine,
        len(queue),
        in_flight,
        f"{share / 1e6:.2f} MB/s per batch" if share else "no bandwidth cap",
    )
    task = CopyTask(TierAccess.of(src), src_prefix, TierAccess.of(dst), dst_prefix, max(1, workers), share)
    by_path = {spec.path: spec for spec in todo}
    errors: list[str] = []
    pending: set[Future[BatchResult]] = set()
    abort = True
    try:
        submitter.start(task)
        pending = {submitter.submit(batch) for batch in queue[:in_flight]}
        batches_left = iter(queue[in_flight:])
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                log.debug("batch back: %d files verified, error: %s", len(result.verified), result.error)
                for path in result.verified:
                    spec = by_path[path]
                    on_verified(spec)
                    report.copied.append(path)
                    report.bytes_copied += spec.size
                    on_bytes(spec.size)
                if result.error:
                    errors.append(result.error)
                nxt = None if errors else next(batches_left, None)
                if nxt:
                    pending.add(submitter.submit(nxt))
        abort = False
    finally:
        submitter.close(abort)
    report.seconds = time.perf_counter() - start
    if errors:
        raise TransferError(f"{len(errors)} batch(es) failed on {engine}: " + "; ".join(errors))
    return report
