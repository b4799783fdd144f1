"""The ``minhash_dedupe`` operator: the MinHash kernel behind the cluster-operator contract."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import ClusterOperator
from operators.minhash.characters import compared_texts
from operators.minhash.dedupe import PermutedTexts, dedupe, dedupe_incremental, published_candidates
from operators.minhash.normalize import fold
from operators.minhash.params import MinHashParams
from operators.minhash.signature import signatures_and_shingles
from operators.minhash.store import (
    SIGNATURE_SCHEMA,
    signature_batch,
    sketch_rows,
    with_folded_texts,
    with_shingle_sets,
    without_signatures,
)
from operators.minhash.survivors import inverse_permutation, lineage_records
from storage.errors import Invalid

PRIORITY_FIELD = pa.field("priority", pa.int64())  # null (a published sketch) ranks 0


@dataclass(frozen=True)
class MinHashDedupeParams(MinHashParams):
    """MinHash parameters, plus releases (``name@tag``) whose stored signatures new samples are
    deduplicated against (their samples always survive)."""

    against: tuple[str, ...] = ()
    priority: dict[str, int] = field(default_factory=dict)  # source_dataset -> rank; higher survives

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "against", tuple(self.against))
        if not all(isinstance(k, str) and isinstance(v, int) for k, v in dict(self.priority).items()):
            raise Invalid("priority must map source_dataset names to integer ranks")


class MinHashDedupe(ClusterOperator):
    """With ``priority`` (source_dataset -> rank, set from the pipeline inputs' ``priority``), the
    copy of the highest-ranked source survives a cluster, then the ``survivor`` policy decides; a
    source not named ranks 0. Each sketch then carries its sample's rank (a ``priority`` column,
    :data:`PRIORITY_FIELD`), so every engine's clustering sees it. Without it nothing changes."""

    name = "minhash_dedupe"
    version = "1"
    Params = MinHashDedupeParams

    @property
    def params_(self) -> MinHashDedupeParams:
        return self.params  # type: ignore[return-value]

    @property
    def needs_texts(self) -> bool:  # type: ignore[override]
        return self.params_.verify == "exact"

    @property
    def held_texts(self) -> bool:  # type: ignore[override]
        return self.needs_texts and self.params_.script == "mixed"

    @property
    def sketch_columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("sample_id", "text", "source_dataset") if self.params_.priority else ("sample_id", "text")

    @property
    def sketch_schema(self) -> pa.Schema:  # type: ignore[override]
        return SIGNATURE_SCHEMA.append(PRIORITY_FIELD) if self.params_.priority else SIGNATURE_SCHEMA

    def sketch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return self._with_priority(
            batch, signature_batch(batch.column("sample_id"), batch.column("text"), self.params_)
        )

    def _with_priority(self, batch: pa.RecordBatch, out: pa.RecordBatch) -> pa.RecordBatch:
        if not self.params_.priority:
            return out
        ranks = self.params_.priority
        sources = batch.column("source_dataset").to_pylist()
        return out.append_column(PRIORITY_FIELD, pa.array([ranks.get(x, 0) for x in sources], pa.int64()))

    def warm_up(self) -> None:
        """Sketch a made-up batch large enough for the compiled kernels (59 KB of words and 75 KB of Han
        characters: both halves over :data:`~operators.minhash.small.SHINGLE_LIMIT`): numba and the
        kernels' cached code, about 0.65 s, then load before the first real batch arrives."""
        words = " ".join(f"w{i}" for i in range(10_000))
        han = "".join(chr(0x4E00 + i % 5000) for i in range(25_000))
        texts = pa.array([words, han], pa.string())
        self.sketch(pa.record_batch({"sample_id": pa.array(["a", "b"]), "text": texts, "source_dataset": ["x", "x"]}))

    def held_sketch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """When exact verification decides: without its signatures (checked first, see
        :func:`~operators.minhash.store.without_signatures`), and with what verification compares,
        made on the way to the signatures: ``script="mixed"``, the folded texts
        (:func:`~operators.minhash.store.with_folded_texts`; see :attr:`held_texts`); otherwise the
        rows' shingle sets (:func:`~operators.minhash.store.with_shingle_sets`)."""
        if not self.needs_texts:
            return self.sketch(batch)
        texts = batch.column("text")
        folded = fold(texts) if self.held_texts else None
        sigs, shingles = signatures_and_shingles(
            texts if folded is None else folded, self.params_, folded=folded is not None
        )
        out = self._with_priority(batch, sketch_rows(batch.column("sample_id"), texts, sigs, self.params_))
        out = without_signatures(out, self.params_)
        if folded is None:
            return with_shingle_sets(out, shingles)
        return with_folded_texts(out, compared_texts(folded))

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
        decisions = self._decisions(sketches, texts, published, fetch_texts, order)
        # what they were decided from (for ``lineage dedupe``, every text it verified) goes before the records
        # are made, the step's last large allocation: at 254,724 Chinese documents both were the run's peak
        del sketches, texts
        # the inverse permutation, back to input order (of the flat decisions: cheaper than the records)
        back = inverse_permutation(order.to_numpy())
        return lineage_records(decisions.take(pa.array(back)), self.name, self.version)

    def _decisions(
        self,
        sketches: pa.Table,
        texts: pa.ChunkedArray | None,
        published: pa.Table | None,
        fetch_texts: Callable[[pa.Array], pa.ChunkedArray] | None,
        order: pa.Array,
    ) -> pa.Table:
        """The decisions of the rows in ``order`` (``sample_id`` order)."""
        if published is None or published.num_rows == 0:
            if self.needs_texts:
                sketches = without_signatures(sketches, self.params_)  # verified by texts: not read
            rows = order.to_numpy().astype(np.int64)
            permuted = PermutedTexts(texts, rows) if texts is not None else None
            return dedupe(sketches, self.params_, permuted, order=rows)
        sketches = sketches.take(order)
        texts = texts.take(order) if texts is not None else None
        # only published samples sharing a bucket with a new one can join its cluster
        candidates = published.take(pa.array(published_candidates(sketches, published, self.params_)))
        old_texts = None
        if self.needs_texts:
            if fetch_texts is None:
                raise ValueError("exact verification against published releases needs their texts")
            old_texts = fetch_texts(candidates.column("sample_id").combine_chunks())
        return dedupe_incremental(sketches, candidates, self.params_, texts, old_texts)
