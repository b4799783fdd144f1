"""A map operator that fails on purpose, to test that a failed job commits nothing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from operators.base import MapOperator, OperatorOutput


class Explode(MapOperator):
    """Raises on any sample whose text contains ``EXPLODE`` (in a worker, on cluster engines)."""

    name = "explode"
    version = "1"

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        if pc.any(pc.match_substring(batch.column("text"), "EXPLODE")).as_py():
            raise ValueError("explode: found the trigger text")
        raise AssertionError("the test corpus always contains the trigger")
