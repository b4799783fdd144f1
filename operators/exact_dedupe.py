"""Exact dedupe: samples with the same ``content_hash`` keep only the first by source order.

With ``priority`` (source_dataset -> rank, set from the pipeline inputs' ``priority``), the copy of
the highest-ranked source survives a cross-source cluster; ties, and sources not named (rank 0),
fall back to source order. Without it the order is the default, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import GroupOperator, Params
from operators.lineage_records import DUPLICATE_DETAIL, Verdict, detail_struct, lineage_batch
from operators.schema import SOURCE_ORDER


@dataclass(frozen=True)
class ExactDedupeParams(Params):
    priority: dict[str, int] = field(default_factory=dict)  # source_dataset -> rank; higher survives


class ExactDedupe(GroupOperator):
    name = "exact_dedupe"
    version = "1"
    Params = ExactDedupeParams
    key = "content_hash"
    columns = ("sample_id", "content_hash", *SOURCE_ORDER)

    def decide(self, groups: pa.Table) -> pa.RecordBatch:
        """Sort by (hash, source order); the first row of each hash run survives. Records in input order."""
        keys = [("content_hash", "ascending")] + [(c, "ascending") for c in SOURCE_ORDER]
        ranks = self.params.priority  # type: ignore[attr-defined]
        if ranks:
            names = groups.column("source_dataset").combine_chunks()
            rank = np.array([-ranks.get(x, 0) for x in names.to_pylist()], dtype=np.int64)
            groups = groups.append_column("_rank", pa.array(rank))
            keys.insert(1, ("_rank", "ascending"))
        order = pc.sort_indices(groups, sort_keys=keys)
        t = groups.take(order)
        n = t.num_rows
        hashes = t.column("content_hash")
        ids = t.column("sample_id").combine_chunks()
        if n == 0:
            first = np.zeros(0, dtype=bool)
        else:
            first = np.ones(n, dtype=bool)
            first[1:] = pc.not_equal(hashes.slice(1), hashes.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
        kept_ids = ids.take(pa.array(group_start))
        sizes = np.diff(np.append(np.flatnonzero(first), n))
        cluster_size = np.repeat(sizes, sizes)
        dropped = ~first
        verdicts = np.where(dropped, Verdict.DROPPED.value, Verdict.KEPT.value)
        mask = pa.array(dropped)
        null_str = pa.nulls(n, pa.string())
        duplicate = pa.StructArray.from_arrays(
            [
                pa.repeat(pa.scalar("exact"), n),
                hashes.combine_chunks(),
                kept_ids,
                pa.repeat(pa.scalar(1.0), n),
                pa.array(cluster_size, pa.int64()),
            ],
            fields=list(DUPLICATE_DETAIL),
            mask=pc.invert(mask),
        )
        related = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), kept_ids, mask=pc.invert(mask))
        records = lineage_batch(
            operator=self.name,
            operator_version=self.version,
            sample_ids=ids,
            verdicts=pa.array(verdicts, pa.string()),
            reasons=pc.if_else(mask, pa.scalar("exact_duplicate"), null_str),
            related_ids=related,
            detail=detail_struct(n, duplicate=duplicate),
        )
        return records.take(pc.sort_indices(order))  # the inverse permutation: back to input order
