"""The contamination check of a dataset version on an engine: tasks over batches of its Parquet files.

Each task (:class:`ScanTask`, picklable) reads its files through the tier, record batch by record batch
(a file is never read whole, the release never reaches one process), probes each batch against the eval
index (:mod:`operators.contamination.index`, built once per executor process and cached by the digest
of its sources and n-gram settings), and returns only its row count and the contaminated
(eval set version, item, sample) triples with their measures. The driver merges them and sorts, so
``local`` (the same task in this process), Spark and Ray give the same report. Spark runs each batch
as a one-partition job from driver threads and Ray as a task, as tier copies do
(:mod:`lineage.releases.transfers`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pyarrow.parquet as pq

from lineage.errors import Invalid
from lineage.settings import Settings
from operators.contamination.params import NgramParams
from pipelines.engines import check_engine, engine_module
from storage.transfer_task import TierAccess

if TYPE_CHECKING:
    from operators.contamination.index import EvalIndex, Matches

log = logging.getLogger(__name__)

CheckEngine = Literal["local", "spark", "ray"]
CHECK_ENGINES = ("local", "spark", "ray")
FILES_PER_TASK = 4

_INDEXES: dict[str, EvalIndex] = {}  # digest of (sources, params) -> index, per process


@dataclass(frozen=True)
class Hit:
    """A sample containing an eval item above the threshold, with the item's and the sample's measures."""

    evalset: str  # NAME:vN
    item_id: str
    sample_id: str
    matched_item_ngrams: int
    item_ngrams: int
    matched_sample_ngrams: int
    sample_ngrams: int


@dataclass(frozen=True)
class ScanResult:
    rows: int
    hits: list[Hit] = field(default_factory=list)


@dataclass(frozen=True)
class ScanTask:
    """Picklable: where the version's files are, the eval items' sources, and the check's rule."""

    access: TierAccess
    table_path: str
    sources: tuple[dict[str, Any], ...]
    params: NgramParams
    threshold: float
    coverage: str
    batch_rows: int

    def digest(self) -> str:
        key = json.dumps([list(self.sources), self.params.__dict__], sort_keys=True, default=str)
        return hashlib.sha256(key.encode()).hexdigest()

    def index(self) -> EvalIndex:
        key = self.digest()
        index = _INDEXES.get(key)
        if index is None:
            from operators.contamination.operator import load_index  # start-up: numba kernels

            index = _INDEXES[key] = load_index(self.sources, self.params)
        return index

    def __call__(self, files: list[str]) -> ScanResult:
        index, tier = self.index(), self.access.tier()
        rows, hits = 0, []
        for file in files:
            with tier.filesystem.open_input_file(tier.path(self.table_path, file)) as fh:
                for batch in pq.ParquetFile(fh).iter_batches(batch_size=self.batch_rows, columns=["sample_id", "text"]):
                    rows += batch.num_rows
                    if len(index):
                        found = index.matches(batch.column("text"))
                        if found.by_doc:
                            ids = batch.column("sample_id")
                            hits += self._hits({d: ids[d].as_py() for d in found.by_doc}, found)
        return ScanResult(rows, hits)

    def _hits(self, ids: dict[int, str], found: Matches) -> list[Hit]:
        # start-up: numba kernels
        from operators.contamination.index import Probe
        from operators.contamination.operator import is_contaminated

        out = []
        for d, matches in found.by_doc.items():
            sample, probe = ids[d], Probe(int(found.sample_ngrams[d]), matches)
            for m in probe.matches:
                if is_contaminated(Probe(probe.sample_ngrams, (m,)), self.threshold, self.coverage):
                    out.append(
                        Hit(
                            m.item.evalset,
                            m.item.item_id,
                            sample,
                            m.item_ngrams,
                            m.item.ngrams,
                            m.sample_windows,
                            probe.sample_ngrams,
                        )  # fmt: skip
                    )
        return out


def run_scan_task(task: ScanTask, files: list[str]) -> ScanResult:
    """Module-level entry point, so Ray workers import it by name."""
    return task(files)


class _Local:
    slots = 1

    def __init__(self, _settings: Settings, task: ScanTask) -> None:
        self._task = task
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="contamination-check")

    def submit(self, files: list[str]) -> Future[ScanResult]:
        return self._pool.submit(self._task, files)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class _Spark:
    def __init__(self, settings: Settings, task: ScanTask) -> None:
        self.session, self._owned = engine_module("spark").spark_session(settings.engine)
        self.sc = self.session.sparkContext
        self.slots = max(1, self.sc.defaultParallelism)
        self._pool = ThreadPoolExecutor(self.slots, thread_name_prefix="spark-contamination")
        self._task = task

    def _run(self, files: list[str]) -> ScanResult:
        return self.sc.parallelize([files], 1).map(self._task).collect()[0]

    def submit(self, files: list[str]) -> Future[ScanResult]:
        return self._pool.submit(self._run, files)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._owned:  # a session someone else started is theirs to stop
            self.session.stop()


class _Ray:
    def __init__(self, settings: Settings, task: ScanTask) -> None:
        ray_runtime = engine_module("ray").ray_runtime  # checks the [ray] extra first
        import ray  # extra: ray (checked just above)

        self._ray = ray
        self._owned = ray_runtime(settings.engine)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.put(task)
        self._remote = ray.remote(num_cpus=1)(run_scan_task)

    def submit(self, files: list[str]) -> Future[ScanResult]:
        return self._remote.remote(self._task, files).future()

    def close(self) -> None:
        if self._owned:  # a runtime someone else started is theirs to stop
            self._ray.shutdown()


_RUNNERS: dict[str, Callable[[Settings, ScanTask], Any]] = {"local": _Local, "spark": _Spark, "ray": _Ray}


def check_engine_name(engine: str) -> str:
    """A check engine (local, spark, ray); an unknown name is Invalid, a missing extra MissingExtra."""
    if engine not in _RUNNERS:
        raise Invalid(f"unknown engine {engine!r} for a contamination check; choose one of {', '.join(CHECK_ENGINES)}")
    check_engine(engine)
    return engine


def scan(engine: str, settings: Settings, task: ScanTask, files: list[str]) -> Iterator[ScanResult]:
    """``task`` over batches of ``files`` on ``engine``, at most two batches a slot in flight; results
    come back as they finish (the caller sorts)."""
    runner = _RUNNERS[check_engine_name(engine)](settings, task)
    queue = [files[i : i + FILES_PER_TASK] for i in range(0, len(files), FILES_PER_TASK)]
    log.info("contamination check of %s on %s: %d files in %d tasks", task.table_path, engine, len(files), len(queue))
    pending: set[Future[ScanResult]] = set()
    try:
        todo = iter(queue)
        for batch in todo:
            pending.add(runner.submit(batch))
            if len(pending) >= 2 * runner.slots:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.add(runner.submit(nxt))
    finally:
        for future in pending:
            future.cancel()
        runner.close()
