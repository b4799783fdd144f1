"""Survivor choice per cluster, and per-sample decisions / lineage records as Arrow.

Order inside a cluster: published samples first, then the source's ``priority`` (when a pipeline
sets one), then the ``survivor`` policy (longest text,
shortest text, or none), then the smallest ``sample_id``. The first sample is the cluster's
*kept* sample; every published sample survives too (so several published members are never
dropped); every other member is dropped and names the kept sample. ``cluster_id`` is the
smallest ``sample_id`` in the cluster: deterministic, and the same whichever engine ran.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.lineage_records import DETAIL, DUPLICATE_DETAIL, Verdict, lineage_batch
from operators.minhash.lsh import unique_sorted
from operators.minhash.params import Survivor

DECISION_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("verdict", pa.string(), nullable=False),
        pa.field("cluster_id", pa.string(), nullable=True),  # null for samples without duplicates
        pa.field("kept_id", pa.string(), nullable=True),  # set on dropped samples
        pa.field("jaccard", pa.float64(), nullable=True),  # dropped sample vs kept sample
        pa.field("cluster_size", pa.int64(), nullable=False),
    ]
)

REASON = "near_duplicate"

PairJaccard = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _dense(labels: np.ndarray) -> np.ndarray:
    """``np.unique(labels, return_inverse=True)[1]``: each label's rank among the distinct labels. Labels that
    are row numbers (``connected_components``' smallest members) are ranked by marking them; others by a
    sort (NumPy >= 2.3 answers ``np.unique`` of integers with a hash table, several times slower)."""
    n = len(labels)
    if n and labels.min() >= 0 and labels.max() < n:
        seen = np.zeros(n, dtype=bool)
        seen[labels] = True
        return (np.cumsum(seen) - 1)[labels]
    return np.searchsorted(unique_sorted(labels), labels)


def inverse_permutation(order: np.ndarray) -> np.ndarray:
    """Each row's position in ``order`` (a permutation of the rows): ``argsort(order)`` without a sort."""
    positions = np.empty(len(order), np.int64)
    positions[order] = np.arange(len(order))
    return positions


def _id_ranks(sample_ids: pa.Array) -> np.ndarray:
    """Rank of each id in ascending (byte-wise) order; equal ids get distinct ranks. Ids in order already
    (the operator sorts its rows by id) are ranked by one comparison of neighbours, not a second sort."""
    n = len(sample_ids)
    if n < 2 or not pc.any(pc.less(sample_ids.slice(1), sample_ids.slice(0, n - 1))).as_py():
        return np.arange(n, dtype=np.int64)
    return inverse_permutation(pc.sort_indices(sample_ids).to_numpy())


def decide(
    sample_ids: pa.Array,
    labels: np.ndarray,
    text_lengths: np.ndarray,
    published: np.ndarray,
    survivor: Survivor,
    jaccard: PairJaccard,
    priority: np.ndarray | None = None,
) -> pa.Table:
    """One :data:`DECISION_SCHEMA` row per sample, in input order.

    ``priority`` (a rank per sample, higher first) orders a cluster after ``published`` and before
    the ``survivor`` policy; without it the order is the default.

    ``labels`` are component labels (any integers; equal label = same cluster), so an engine may
    call this on any set of *complete* components, e.g. grouped by label. ``jaccard(rows,
    kept_rows)`` returns the similarity of each dropped row (positions in this call) to its kept row.
    """
    n = len(labels)
    labels = _dense(np.asarray(labels, dtype=np.int64))
    published = np.asarray(published, dtype=bool)
    ranks = _id_ranks(sample_ids)
    lengths = np.asarray(text_lengths, dtype=np.int64)
    policy_key = {"longest": -lengths, "shortest": lengths, "smallest_id": np.zeros(n, np.int64)}[survivor]
    if priority is None:
        order = np.lexsort((ranks, policy_key, ~published, labels))
    else:
        order = np.lexsort((ranks, policy_key, -np.asarray(priority, dtype=np.int64), ~published, labels))

    sorted_labels = labels[order]
    group_start = np.ones(n, dtype=bool)
    group_start[1:] = sorted_labels[1:] != sorted_labels[:-1]
    kept_of_label = np.empty(n, dtype=np.int64)
    kept_of_label[sorted_labels[group_start]] = order[group_start]
    kept_row = kept_of_label[labels]
    sizes = np.bincount(labels, minlength=n)[labels]
    min_rank = np.full(n, n, dtype=np.int64)
    np.minimum.at(min_rank, labels, ranks)
    row_of_rank = inverse_permutation(ranks)

    in_cluster = sizes > 1
    dropped = (kept_row != np.arange(n)) & ~published
    dropped_rows = np.flatnonzero(dropped)
    sims = np.full(n, np.nan)
    sims[dropped_rows] = jaccard(dropped_rows, kept_row[dropped_rows])

    cluster_id = sample_ids.take(pa.array(row_of_rank[min_rank[labels]]))
    kept_id = sample_ids.take(pa.array(kept_row))
    return pa.table(
        [
            sample_ids,
            pa.array(np.where(dropped, Verdict.DROPPED.value, Verdict.KEPT.value)),
            pc.if_else(pa.array(in_cluster), cluster_id, pa.scalar(None, pa.string())),
            pc.if_else(pa.array(dropped), kept_id, pa.scalar(None, pa.string())),
            pa.array(sims, mask=~dropped),
            pa.array(sizes),
        ],
        schema=DECISION_SCHEMA,
    )


def lineage_records(decisions: pa.Table, operator: str, operator_version: str) -> pa.RecordBatch:
    """Lineage rows for decisions (vectorised); members of a cluster carry ``detail.duplicate``.

    A kept member's ``detail.duplicate.kept_id`` is its own id; a dropped sample's record also
    lists the kept id in ``related_ids``.
    """
    col = {name: decisions.column(name).combine_chunks() for name in DECISION_SCHEMA.names}
    n = decisions.num_rows
    not_in_cluster = pc.is_null(col["cluster_id"])
    dropped = pc.equal(col["verdict"], Verdict.DROPPED.value)
    duplicate = pa.StructArray.from_arrays(
        [
            pa.repeat(pa.scalar("minhash"), n),
            col["cluster_id"],
            pc.coalesce(col["kept_id"], col["sample_id"]),
            col["jaccard"],
            col["cluster_size"],
        ],
        fields=list(DUPLICATE_DETAIL),
        mask=not_in_cluster,
    )
    detail = pa.StructArray.from_arrays(
        [duplicate if field.name == "duplicate" else pa.nulls(n, field.type) for field in DETAIL],
        fields=list(DETAIL),
        mask=not_in_cluster,
    )
    is_dropped = dropped.to_numpy(zero_copy_only=False).astype(bool)
    related = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(is_dropped)]).astype(np.int32)),
        col["kept_id"].filter(dropped),
        mask=pa.array(~is_dropped),
    )
    return lineage_batch(
        operator=operator,
        operator_version=operator_version,
        sample_ids=col["sample_id"],
        verdicts=col["verdict"],
        reasons=pc.if_else(dropped, REASON, pa.scalar(None, pa.string())),
        related_ids=related,
        detail=detail,
    )
