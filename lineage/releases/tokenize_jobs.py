"""Tokenizing an export's documents on Spark or Ray: executors encode batches, the driver writes shards.

The driver (:mod:`lineage.releases.tokenized`) reads the release in export order and cuts it into
batches of documents; :func:`encoded_batches` keeps one batch per core of the cluster in flight (Spark:
one single-partition job per batch from driver threads, as tier copies do; Ray: one task per batch) and
hands the results back **in batch order**. Each executor runs :class:`TokenizeTask`: the tokenizer is
rebuilt from its JSON (cached per process by digest) and every document becomes its tokens followed by
EOD, exactly what the in-process path computes. Everything order- or byte-dependent (packing, shards,
lineage, checksums, resume) stays on the driver, so every engine writes identical shards.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from lineage.errors import Invalid
from lineage.settings import Settings
from pipelines.engines import check_engine, engine_module

_TOKENIZERS: dict[str, Any] = {}  # digest -> tokenizers.Tokenizer, per executor process


@dataclass(frozen=True)
class TokenizeTask:
    """Picklable: the tokenizer's JSON, its digest, the EOD id and the token dtype."""

    tokenizer_json: str
    digest: str
    eod_id: int
    dtype: str

    def __call__(self, texts: list[str]) -> list[np.ndarray]:
        tokenizer = _TOKENIZERS.get(self.digest)
        if tokenizer is None:
            from tokenizers import Tokenizer  # extra: export (the driver checked it)

            tokenizer = _TOKENIZERS[self.digest] = Tokenizer.from_str(self.tokenizer_json)
        encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        return [
            encode_document(e.ids, self.eod_id, np.dtype(self.dtype)) for e in encode(texts, add_special_tokens=False)
        ]


def encode_document(ids: list[int], eod_id: int, dtype: np.dtype) -> np.ndarray:
    """A document's tokens followed by EOD, in the export's dtype (the one rule for every engine)."""
    array = np.empty(len(ids) + 1, dtype=dtype)
    array[:-1] = ids
    array[-1] = eod_id
    return array


class _Spark:
    def __init__(self, settings: Settings, task: TokenizeTask) -> None:
        self.session, self._owned = engine_module("spark").spark_session(settings.engine)
        self.sc = self.session.sparkContext
        self.slots = max(1, self.sc.defaultParallelism)
        self._pool = ThreadPoolExecutor(self.slots, thread_name_prefix="spark-tokenize")
        self._task = task

    def _run(self, texts: list[str]) -> list[np.ndarray]:
        return self.sc.parallelize([texts], 1).map(self._task).collect()[0]

    def submit(self, texts: list[str]) -> Future[list[np.ndarray]]:
        return self._pool.submit(self._run, texts)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._owned:
            self.session.stop()


class _Ray:
    def __init__(self, settings: Settings, task: TokenizeTask) -> None:
        ray_runtime = engine_module("ray").ray_runtime  # checks the [ray] extra first
        import ray  # extra: ray (checked just above)

        self._ray = ray
        self._owned = ray_runtime(settings.engine)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.put(task)
        self._remote = ray.remote(num_cpus=1)(_run_task)

    def submit(self, texts: list[str]) -> Future[list[np.ndarray]]:
        return self._remote.remote(self._task, texts).future()

    def close(self) -> None:
        if self._owned:
            self._ray.shutdown()


def _run_task(task: TokenizeTask, texts: list[str]) -> list[np.ndarray]:
    return task(texts)


ENGINES: dict[str, Callable[[Settings, TokenizeTask], Any]] = {"spark": _Spark, "ray": _Ray}


def check(engine: str) -> None:
    """An export engine: local, or one :data:`ENGINES` runs (an unknown name Invalid, no extra MissingExtra)."""
    check_engine(engine)
    if engine != "local" and engine not in ENGINES:
        raise Invalid(f"the {engine} engine does not run exports; choose local, {', '.join(ENGINES)}")


def encoded_batches(
    engine: str, settings: Settings, task: TokenizeTask, batches: Iterator[list[str]]
) -> Iterator[list[np.ndarray]]:
    """``task`` over each batch of texts on ``engine``, the results in batch order."""
    runner = ENGINES[engine](settings, task)
    in_flight: deque[Future[list[np.ndarray]]] = deque()
    try:
        for texts in batches:
            in_flight.append(runner.submit(texts))
            if len(in_flight) >= 2 * runner.slots:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    finally:
        for future in in_flight:
            future.cancel()
        runner.close()
