"""Operators and engines that fail on purpose, to test that a failed job commits nothing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from operators.base import MapOperator, OperatorOutput
from operators.lineage_records import Verdict, lineage_batch
from pipelines.engines.base import Engine, Job, JobResult
from pipelines.engines.local import LocalEngine
from pipelines.engines.ray import RayEngine
from pipelines.engines.spark import SparkEngine


class Explode(MapOperator):
    """Raises on any batch holding a sample whose text contains ``EXPLODE``; keeps the others."""

    name = "explode"
    version = "1"

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        if pc.any(pc.match_substring(batch.column("text"), "EXPLODE")).as_py():
            raise ValueError("explode: found the trigger text")
        n = batch.num_rows
        verdicts = pa.repeat(pa.scalar(Verdict.KEPT.value), n)
        lineage = lineage_batch(
            operator=self.name, operator_version=self.version, sample_ids=batch.column("sample_id"), verdicts=verdicts
        )
        return OperatorOutput(batch, lineage)


class _LosesAFile(Engine):
    """A real engine whose result forgets its last data file: samples the lineage kept go missing."""

    def execute(self, job: Job) -> JobResult:
        result = super().execute(job)  # the real engine's, next in the MRO
        result.data_files = sorted(result.data_files)[:-1]
        return result


class LossyLocal(_LosesAFile, LocalEngine):
    name = "lossy-local"


class LossySpark(_LosesAFile, SparkEngine):
    name = "lossy-spark"


class LossyRay(_LosesAFile, RayEngine):
    name = "lossy-ray"
