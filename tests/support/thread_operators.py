"""Map operators that record the threads their ``apply`` ran on (the local engine's concurrent map steps)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from operators.base import MapOperator, OperatorOutput, Params
from operators.lineage_records import Verdict, lineage_batch

_LOCK = threading.Lock()


@dataclass(frozen=True)
class RecorderParams(Params):
    label: str = ""


class ConcurrentRecorder(MapOperator):
    """Keeps every sample; notes ``(label, thread name)`` per batch. A label's first batch waits (up to
    ``WAIT`` seconds, releasing the GIL as a kernel does) for a second one to start, so an engine that
    may run batches at once surely has a second thread busy meanwhile; one that runs them one at a time
    pays the wait once per label."""

    name = "concurrent_recorder"
    version = "1"
    Params = RecorderParams
    concurrent = True
    WAIT: ClassVar[float] = 1.0
    seen: ClassVar[list[tuple[str, str]]] = []
    started: ClassVar[dict[str, threading.Event]] = {}

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        cls, label = type(self), self.params.label  # type: ignore[attr-defined]
        with _LOCK:
            cls.seen.append((label, threading.current_thread().name))
            first = label not in cls.started
            event = cls.started.setdefault(label, threading.Event())
        if first:
            event.wait(cls.WAIT)
        else:
            event.set()
        verdicts = pa.repeat(pa.scalar(Verdict.KEPT.value), batch.num_rows)
        lineage = lineage_batch(
            operator=self.name, operator_version=self.version, sample_ids=batch.column("sample_id"), verdicts=verdicts
        )
        return OperatorOutput(batch, lineage)


class SerialRecorder(ConcurrentRecorder):
    """The same, without saying it may run concurrently (the default of a plugin operator)."""

    name = "serial_recorder"
    concurrent = False
    seen: ClassVar[list[tuple[str, str]]] = []
    started: ClassVar[dict[str, threading.Event]] = {}
