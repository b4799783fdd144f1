"""A map operator that fails on purpose, to test that a failed job commits nothing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lineage.records import Verdict, lineage_batch
from operators.base import MapOperator, OperatorOutput


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
