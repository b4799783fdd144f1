"""Map operators that record the threads their ``apply`` ran on (the local engine's concurrent map steps)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from operators.base import MapOperator, OperatorOutput, Params
from operators.lineage_records import Verdict, lineage_batch


@dataclass(frozen=True)
class RecorderParams(Params):
    label: str = ""


class ConcurrentRecorder(MapOperator):
    """Keeps every sample; notes ``(label, thread name)`` per batch. The short sleep releases the GIL, as
    a kernel does, so the engine's next batch starts meanwhile on another thread when it may."""

    name = "concurrent_recorder"
    version = "1"
    Params = RecorderParams
    concurrent = True
    seen: ClassVar[list[tuple[str, str]]] = []

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        type(self).seen.append((self.params.label, threading.current_thread().name))  # type: ignore[attr-defined]
        time.sleep(0.02)
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
