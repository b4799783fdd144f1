"""The staged pieces an engine distributes compose to the same decisions as ``dedupe``.

Simulates an engine: (a) signature batches per partition, (b) rows exploded to
(band, bucket hash, doc id) and grouped by bucket, star edges per group, (c) verification of the
edges, connected components, then ``decide`` per group of complete components.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from operators.minhash import (
    MinHashParams,
    connected_components,
    decide,
    dedupe,
    estimated_jaccard,
    load_signatures,
    signature_batch,
    star_edges,
)
from operators.minhash.lsh import ABSENT

SAMPLE = Path(__file__).parents[2] / "data" / "minhash_sample.jsonl"


def test_staged_pipeline_matches_in_process_dedupe() -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    ids, texts = [r["id"] for r in rows], [r["text"] for r in rows]
    params = MinHashParams(verify="estimate")

    # (a) map: one signature batch per partition of 50 samples.
    parts = [
        signature_batch(pa.array(ids[i : i + 50]), pa.array(texts[i : i + 50]), params) for i in range(0, len(ids), 50)
    ]
    table = pa.Table.from_batches(parts)
    sigs, bands = load_signatures(table, params)
    doc = np.arange(len(ids))

    # (b) shuffle by (band, bucket): each group emits its star edges independently.
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for j in range(bands.shape[1]):
        for d in doc:
            if bands[d, j] != ABSENT:  # a stored row holds only the bands it has
                groups[(j, int(bands[d, j]))].append(int(d))
    edges = [star_edges(np.array(members), np.full(len(members), h, np.uint64)) for (_, h), members in groups.items()]
    src = np.concatenate([e[0] for e in edges])
    dst = np.concatenate([e[1] for e in edges])

    # (c) verify edges, connected components, then decide per group of whole components.
    keep = estimated_jaccard(sigs, src, dst, params.num_perm) >= params.threshold
    labels = connected_components(len(ids), src[keep], dst[keep])
    assert (labels != doc).sum() > 50  # the sample has real duplicate families
    pieces = []
    for part in np.array_split(np.unique(labels), 3):
        members = np.flatnonzero(np.isin(labels, part))
        pieces.append(
            decide(
                table.column("sample_id").combine_chunks().take(pa.array(members)),
                labels[members],
                table.column("text_length").to_numpy()[members],
                np.zeros(len(members), bool),
                params.survivor,
                lambda r, k, m=members: estimated_jaccard(sigs, m[r], m[k], params.num_perm),
            )
        )
    staged = pa.concat_tables(pieces).sort_by("sample_id")
    assert staged == dedupe(table, params).sort_by("sample_id")
