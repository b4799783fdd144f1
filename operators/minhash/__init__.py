"""MinHash LSH near-duplicate detection: pure functions over numpy arrays and Arrow batches.

Per batch (map step), then once per run::

    sig_batches.append(signature_batch(batch["sample_id"], batch["text"], params))  # SIGNATURE_SCHEMA
    decisions = dedupe(pa.Table.from_batches(sig_batches), params, texts=all_texts)  # DECISION_SCHEMA
    records = lineage_records(decisions, "minhash_dedupe", "1")                       # LINEAGE_SCHEMA

``texts`` is needed only for ``verify="exact"`` (the default). A boolean ``published`` column
appended to the signature table marks samples that must survive; :func:`dedupe_incremental`
dedupes new signatures against a stored release. Distributed engines run the same steps as
stages: ``signature_batch`` (map), ``star_edges`` per (band, bucket) group,
``connected_components`` over the edges, then ``decide`` per group of complete components.
"""

from operators.minhash.dedupe import cluster_labels, dedupe, dedupe_incremental, published_candidates
from operators.minhash.lsh import band_hashes, band_layout, candidate_edges, optimal_bands, star_edges
from operators.minhash.operator import MinHashDedupe, MinHashDedupeParams
from operators.minhash.params import MinHashParams
from operators.minhash.shingle import shingle_hashes
from operators.minhash.signature import permutations, signatures, signatures_from_hashes
from operators.minhash.store import (
    SIGNATURE_FORMAT_VERSION,
    SIGNATURE_SCHEMA,
    load_signatures,
    signature_batch,
    sketch_id,
)
from operators.minhash.survivors import DECISION_SCHEMA, decide, lineage_records
from operators.minhash.union_find import connected_components
from operators.minhash.verify import estimated_jaccard, exact_jaccard, sorted_sets

__all__ = [
    "DECISION_SCHEMA",
    "SIGNATURE_FORMAT_VERSION",
    "SIGNATURE_SCHEMA",
    "MinHashDedupe",
    "MinHashDedupeParams",
    "MinHashParams",
    "band_hashes",
    "band_layout",
    "candidate_edges",
    "cluster_labels",
    "connected_components",
    "decide",
    "dedupe",
    "dedupe_incremental",
    "estimated_jaccard",
    "exact_jaccard",
    "lineage_records",
    "load_signatures",
    "optimal_bands",
    "permutations",
    "shingle_hashes",
    "published_candidates",
    "signature_batch",
    "signatures",
    "signatures_from_hashes",
    "sketch_id",
    "sorted_sets",
    "star_edges",
]
