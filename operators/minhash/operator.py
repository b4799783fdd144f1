"""The ``minhash_dedupe`` operator: the MinHash kernel behind the cluster-operator contract."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import ClusterOperator
from operators.minhash.dedupe import PermutedTexts, dedupe, dedupe_incremental, published_candidates
from operators.minhash.params import MinHashParams
from operators.minhash.store import SIGNATURE_SCHEMA, signature_batch
from operators.minhash.survivors import lineage_records


@dataclass(frozen=True)
class MinHashDedupeParams(MinHashParams):
    """MinHash parameters, plus releases (``name@tag``) whose stored signatures new samples are
    deduplicated against (their samples always survive)."""

    against: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "against", tuple(self.against))


class MinHashDedupe(ClusterOperator):
    name = "minhash_dedupe"
    version = "1"
    Params = MinHashDedupeParams
    sketch_schema = SIGNATURE_SCHEMA

    @property
    def params_(self) -> MinHashDedupeParams:
        return self.params  # type: ignore[return-value]

    @property
    def needs_texts(self) -> bool:  # type: ignore[override]
        return self.params_.verify == "exact"

    def sketch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return signature_batch(batch.column("sample_id"), batch.column("text"), self.params_)

    def cluster(
        self,
        sketches: pa.Table,
        texts: pa.ChunkedArray | None = None,
        published: pa.Table | None = None,
        fetch_texts: Callable[[pa.Array], pa.ChunkedArray] | None = None,
    ) -> pa.RecordBatch:
        # Bucket stars are centred on the first row of each bucket: put rows in sample_id order so
        # decisions do not depend on how an engine ordered or partitioned the samples.
        order = pc.sort_indices(sketches.column("sample_id"))
        sketches = sketches.take(order)
        if published is None or published.num_rows == 0:
            permuted = PermutedTexts(texts, order.to_numpy().astype(np.int64)) if texts is not None else None
            decisions = dedupe(sketches, self.params_, permuted)
        else:
            texts = texts.take(order) if texts is not None else None
            # only published samples sharing a bucket with a new one can join its cluster
            candidates = published.take(pa.array(published_candidates(sketches, published, self.params_)))
            old_texts = None
            if self.needs_texts:
                if fetch_texts is None:
                    raise ValueError("exact verification against published releases needs their texts")
                old_texts = fetch_texts(candidates.column("sample_id").combine_chunks())
            decisions = dedupe_incremental(sketches, candidates, self.params_, texts, old_texts)
        records = lineage_records(decisions, self.name, self.version)
        return records.take(pc.sort_indices(order))  # the inverse permutation: back to input order
