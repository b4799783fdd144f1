"""In-process near-duplicate decisions over signature tables (steps b and c plus survivors).

An engine that holds a whole run's signatures in one process calls :func:`dedupe`; one that
dedupes new documents against a published release calls :func:`dedupe_incremental`. Engines
that distribute steps (b) and (c) use ``lsh.star_edges`` and ``components.connected_components``
directly and finish with ``survivors.decide``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa

from operators.minhash.characters import character_jaccard, compared_texts
from operators.minhash.lsh import ABSENT, candidate_edges, pack_edges
from operators.minhash.normalize import fold
from operators.minhash.params import MinHashParams
from operators.minhash.shingle import concat_releasing, shingle_hashes, string_buffers
from operators.minhash.store import contiguous, folded_texts, load_signatures, shingle_sets, widen
from operators.minhash.survivors import decide
from operators.minhash.union_find import Forest, connected_components
from operators.minhash.verify import ShingleSets, estimated_jaccard, exact_jaccard, sorted_sets
from operators.threads import ordered_map

log = logging.getLogger(__name__)
R = TypeVar("R")


_SET_BATCH = 8192
# candidate edges verified at a time once there are more (see _verified)
_EDGE_BATCH = 1 << 16


def _chunks(texts: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]


@dataclass(frozen=True)
class PermutedTexts:
    """``texts`` in another row order (row ``i`` is ``texts[order[i]]``), without a copy of them: exact
    verification reads only the rows that share a bucket, and a sorted copy of every text was the
    largest allocation of a run."""

    texts: pa.Array | pa.ChunkedArray
    order: np.ndarray

    def __len__(self) -> int:
        return len(self.order)


def _take_permuted(texts: PermutedTexts, rows: np.ndarray) -> Iterator[pa.Array]:
    chunks = _chunks(texts.texts)
    starts = np.cumsum([0, *(len(c) for c in chunks)])
    for lo in range(0, len(rows), _SET_BATCH):
        wanted = texts.order[rows[lo : lo + _SET_BATCH]]
        which = np.searchsorted(starts, wanted, side="right") - 1
        pieces, positions = [], []
        for c in np.unique(which):
            picked = np.flatnonzero(which == c)
            pieces.append(chunks[c].take(pa.array(wanted[picked] - starts[c])))
            positions.append(picked)
        yield pa.concat_arrays(pieces).take(pa.array(np.argsort(np.concatenate(positions))))


def _take_in_batches(texts: pa.Array | pa.ChunkedArray | PermutedTexts, rows: np.ndarray) -> Iterator[pa.Array]:
    """``texts[rows]`` (``rows`` sorted) as arrays, one input slice of ``_SET_BATCH`` rows at a time.

    Taking from a ChunkedArray concatenates its chunks first, so we take from slices instead.
    """
    if isinstance(texts, PermutedTexts):
        yield from _take_permuted(texts, rows)
        return
    offset = 0
    for chunk in _chunks(texts):
        for lo in range(0, len(chunk), _SET_BATCH):
            piece = chunk.slice(lo, _SET_BATCH)
            first, last = np.searchsorted(rows, [offset + lo, offset + lo + len(piece)])
            if last > first:
                yield piece.take(pa.array(rows[first:last] - offset - lo))
        offset += len(chunk)


def _per_batch(
    texts: pa.Array | pa.ChunkedArray | PermutedTexts, rows: np.ndarray, fn: Callable[[pa.Array], R]
) -> Iterator[R]:
    """``fn`` of ``texts[rows]`` (``rows`` sorted), one batch at a time, in order, on the worker threads."""

    def run(item: pa.Array | np.ndarray) -> R:
        return fn(next(_take_permuted(texts, item)) if isinstance(texts, PermutedTexts) else item)

    # permuted texts are taken on the worker threads too (from every chunk: most of the work)
    items: Iterator[pa.Array | np.ndarray] = (
        (rows[lo : lo + _SET_BATCH] for lo in range(0, len(rows), _SET_BATCH))
        if isinstance(texts, PermutedTexts)
        else _take_in_batches(texts, rows)
    )
    return ordered_map(run, items)


def _shingle_sets(
    texts: pa.Array | pa.ChunkedArray | PermutedTexts, rows: np.ndarray, params: MinHashParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted sets, their offsets, has-CJK flags) of ``texts[rows]`` (``rows`` sorted), batch by batch."""
    parts, offsets, flags, base = [], [np.zeros(1, np.int64)], [], 0

    def sets_of(batch: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hashes, hash_offsets, cjk = shingle_hashes(batch, params)
        return (*sorted_sets(hashes, hash_offsets), cjk)

    for sets, set_offsets, cjk in _per_batch(texts, rows, sets_of):
        parts.append(sets)
        offsets.append(set_offsets[1:] + base)
        flags.append(cjk)
        base += len(sets)
    return (
        np.concatenate(parts) if parts else np.zeros(0, np.uint32),
        np.concatenate(offsets),
        np.concatenate(flags) if flags else np.zeros(0, bool),
    )


class _ShingleSets:
    """Sorted shingle-hash sets of the rows that take part in some edge, for exact Jaccard.

    Built batch by batch so normalising and shingling never hold more than one batch of text
    beyond the input; only the (deduplicated) sets are kept.
    """

    def __init__(
        self,
        texts: pa.Array | pa.ChunkedArray | PermutedTexts,
        rows: np.ndarray,
        params: MinHashParams,
        made: ShingleSets | None = None,
    ) -> None:
        if made is not None:  # every row's set, made by the sketcher from the same shingles
            if len(made) != len(texts):
                raise ValueError(f"{len(made)} shingle sets for {len(texts)} texts")
            self._local = made.index()
            self._sets, self._offsets = made.sets, made.offsets
        else:
            self._local = np.full(len(texts), -1, dtype=np.int64)
            self._local[rows] = np.arange(len(rows))
            self._sets, self._offsets, _ = _shingle_sets(texts, rows, params)

    def jaccard(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return exact_jaccard(self._sets, self._offsets, self._local[src], self._local[dst])


def _compared(texts: pa.Array) -> pa.Array:
    return compared_texts(fold(texts))


class _FoldedTexts:
    """The folded texts of the rows that take part in some edge, for ``script="mixed"``: every pair is
    compared by exact character n-gram Jaccard (the reference metric, ``characters.py``), whichever
    half made it a candidate. One buffer of their bytes, less what that metric deletes
    (``characters.compared_texts``), is all that is held (no sets); texts the sketcher held
    (``folded``) are read where they are."""

    def __init__(
        self,
        texts: pa.Array | pa.ChunkedArray | PermutedTexts,
        rows: np.ndarray | None,
        params: MinHashParams,
        folded: bool = False,
    ) -> None:
        self._ngram = params.ngram
        self._seen: list[tuple[np.ndarray, np.ndarray]] = []
        self._known: tuple[np.ndarray, np.ndarray] | None = None
        if folded:  # one buffer of them all, each row mapped to its position: the held column as it is when
            # the engine put it back as one chunk (``store.with_held``), else a copy of its chunks
            held = texts.texts if isinstance(texts, PermutedTexts) else texts
            self._data, self._offsets = string_buffers(contiguous(held) if isinstance(held, pa.ChunkedArray) else held)
            self._local = texts.order if isinstance(texts, PermutedTexts) else np.arange(len(texts), dtype=np.int64)
            return

        # large strings: one buffer of every candidate may pass 2 GB
        self._data, self._offsets = string_buffers(concat_releasing(list(_per_batch(texts, rows, _compared))))
        self._local = np.full(len(texts), -1, dtype=np.int64)
        self._local[rows] = np.arange(len(rows))

    def compare(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Exact Jaccard per pair (candidate edges), remembered for :meth:`jaccard`."""
        a, b = self._local[src], self._local[dst]
        out = character_jaccard(self._data, self._offsets, a, b, self._ngram)
        self._seen.append((pack_edges(np.minimum(a, b), np.maximum(a, b)), out))
        self._known = None
        return out

    def jaccard(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Exact Jaccard per pair, taken from :meth:`compare`'s when it made them: a dropped text's
        similarity to its kept one often is (a star's centre survives)."""
        if self._known is None and self._seen:
            keys, values = (np.concatenate(parts) for parts in zip(*self._seen, strict=True))
            order = np.argsort(keys)
            self._known = (keys[order], values[order])
        a, b = self._local[src], self._local[dst]
        out = np.empty(len(src), dtype=np.float64)
        known = np.zeros(len(src), dtype=bool)
        if self._known is not None and len(self._known[0]):
            keys = pack_edges(np.minimum(a, b), np.maximum(a, b))
            at = np.minimum(np.searchsorted(self._known[0], keys), len(self._known[0]) - 1)
            known = self._known[0][at] == keys
            out[known] = self._known[1][at[known]]
        todo = np.flatnonzero(~known)
        out[todo] = character_jaccard(self._data, self._offsets, a[todo], b[todo], self._ngram)
        return out


def _ends(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The rows (of ``n``) that are an end of some edge, in order: what ``unique_sorted`` of the ends
    gives, by marking them instead of sorting a million of them."""
    marked = np.zeros(n, dtype=bool)
    marked[src] = True
    marked[dst] = True
    return np.flatnonzero(marked)


def _verified(
    jaccard: Callable[[np.ndarray, np.ndarray], np.ndarray], n: int, src: np.ndarray, dst: np.ndarray, threshold: float
) -> np.ndarray:
    """Which candidate edges to cluster by: those at ``threshold`` or above, except that over
    :data:`_EDGE_BATCH` edges they are compared a batch at a time, in star order (by the edge's centre),
    and an edge whose ends verified edges have joined already is not compared, nor kept (it cannot
    change a component; about a quarter of the edges at 254,724 documents). The components are the
    same as from every edge at the threshold."""
    if len(src) <= _EDGE_BATCH:
        return jaccard(src, dst) >= threshold
    keep = np.zeros(len(src), dtype=bool)
    forest = Forest(n)
    order = np.lexsort((src, dst))
    for lo in range(0, len(order), _EDGE_BATCH):
        batch = order[lo : lo + _EDGE_BATCH]
        batch = batch[~forest.joined(src[batch], dst[batch])]
        kept = batch[jaccard(src[batch], dst[batch]) >= threshold]
        forest.link(src[kept], dst[kept])
        keep[kept] = True
    return keep


def _cluster(
    sigs: np.ndarray,
    bands: np.ndarray,
    params: MinHashParams,
    texts: pa.Array | pa.ChunkedArray | PermutedTexts | None,
    made: ShingleSets | None = None,
    folded: bool = False,
    bands_order: np.ndarray | None = None,
) -> tuple[np.ndarray, _ShingleSets | _FoldedTexts | None]:
    """Component labels, and what verified the edges. ``made``: the rows' shingle sets; ``folded``:
    ``texts`` are folded already; ``bands_order``: the rows of ``bands`` in the rows' order (None: the
    same order)."""
    n = len(sigs)
    exact = params.verify == "exact"
    if exact and (texts is None or len(texts) != n):
        raise ValueError('verify="exact" needs the texts of every row')
    with ThreadPoolExecutor(1, thread_name_prefix="minhash-texts") as pool:
        # folded texts are read whole, whichever rows the edges name: their one buffer (when they come in
        # chunks, a copy: 100 MB at 254,724 documents, on one core) is made while the candidate edges are found
        held = None
        if exact and folded and params.script == "mixed":
            held = pool.submit(_FoldedTexts, texts, None, params, True)
        src, dst = candidate_edges(bands, bands_order)
        sets = held.result() if held is not None else None
    if exact:
        rows = _ends(n, src, dst)
        if params.script == "mixed":
            if sets is None:
                sets = _FoldedTexts(texts, rows, params, folded)
            keep = _verified(sets.compare, n, src, dst, params.threshold)
        else:  # comparing sorted sets is cheap: every edge, on every core
            sets = _ShingleSets(texts, rows, params, made)
            keep = sets.jaccard(src, dst) >= params.threshold
    elif params.verify == "estimate":
        keep = estimated_jaccard(sigs, src, dst, params.num_perm) >= params.threshold
    else:
        keep = np.ones(len(src), dtype=bool)
    log.info("minhash: %d docs, %d candidate edges, %d verified", n, len(src), int(keep.sum()))
    return connected_components(n, src[keep], dst[keep]), sets


def cluster_labels(
    sigs: np.ndarray,
    bands: np.ndarray,
    params: MinHashParams,
    texts: pa.Array | pa.ChunkedArray | PermutedTexts | None = None,
) -> np.ndarray:
    """Component label per row (its smallest row index): candidate edges, verified, then union-find.

    ``texts`` (aligned with the rows) is needed only for ``verify="exact"``.
    """
    return _cluster(sigs, bands, params, texts)[0]


def _decide(
    sample_ids: pa.Array,
    text_lengths: np.ndarray,
    published: np.ndarray,
    sigs: np.ndarray,
    bands: np.ndarray,
    params: MinHashParams,
    texts: pa.Array | pa.ChunkedArray | PermutedTexts | None,
    priority: np.ndarray | None = None,
    made: ShingleSets | None = None,
    folded: bool = False,
    bands_order: np.ndarray | None = None,
) -> pa.Table:
    labels, sets = _cluster(sigs, bands, params, texts, made, folded, bands_order)
    jaccard = sets.jaccard if sets is not None else (lambda s, d: estimated_jaccard(sigs, s, d, params.num_perm))
    return decide(sample_ids, labels, text_lengths, published, params.survivor, jaccard, priority)


def _published(table: pa.Table) -> np.ndarray:
    if "published" not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    return table.column("published").fill_null(False).to_numpy().astype(bool)


def _priority(table: pa.Table) -> np.ndarray | None:
    """Each row's source rank (``priority`` column, null = 0), or None when the table has none."""
    if "priority" not in table.column_names:
        return None
    return table.column("priority").fill_null(0).to_numpy().astype(np.int64)


def dedupe(
    table: pa.Table,
    params: MinHashParams,
    texts: pa.Array | pa.ChunkedArray | PermutedTexts | None = None,
    order: np.ndarray | None = None,
) -> pa.Table:
    """Decisions (``survivors.DECISION_SCHEMA``, input order) for every row of ``table``.

    ``table`` has the ``store.SIGNATURE_SCHEMA`` columns, optionally a boolean ``published``
    column (published rows always survive) and an int64 ``priority`` column (a source's rank:
    higher survives, before the ``survivor`` policy). ``texts`` (aligned with the rows) is needed only for
    ``verify="exact"``.

    With ``order`` (row positions) the decisions are those of ``table.take(order)``, in that order;
    ``texts`` are then aligned with that order. The rows are put in order as matrices, not as a
    taken table (a copy of every band list was a fifth of a 254k-document cluster step), and the band
    matrix not even so: :func:`~operators.minhash.lsh.candidate_edges` reads it in that order.

    Exact verification compares the rows' shingle sets or folded texts that ``table`` carries
    (``store.with_shingle_sets``, ``store.with_folded_texts``), when it does, instead of shingling or
    folding ``texts`` again; with folded texts, ``texts`` is not needed.
    """
    made = shingle_sets(table) if params.verify == "exact" else None
    folded = folded_texts(table) if params.verify == "exact" else None
    if folded is not None:
        texts = PermutedTexts(folded, order) if order is not None else folded
    sigs, bands = load_signatures(table, params)
    sample_ids = table.column("sample_id").combine_chunks()
    lengths, published, priority = table.column("text_length").to_numpy(), _published(table), _priority(table)
    bands_order = None
    if order is not None:
        sample_ids = sample_ids.take(pa.array(order))
        sigs, lengths, published = sigs[order], lengths[order], published[order]
        priority = priority[order] if priority is not None else None
        made = made.taken(order) if made is not None else None
        bands_order = order  # the band matrix is not copied in order: candidate_edges reads it in order
    return _decide(
        sample_ids, lengths, published, sigs, bands, params, texts, priority, made, folded is not None, bands_order
    )


def _sharing_a_bucket(bands: np.ndarray, other: np.ndarray) -> np.ndarray:
    hit = np.zeros(len(bands), dtype=bool)
    for j in range(bands.shape[1]):
        hit |= np.isin(bands[:, j], other[:, j]) & (bands[:, j] != ABSENT)
    return np.flatnonzero(hit)


Loaded = tuple[np.ndarray, np.ndarray]


def _aligned_both(a: Loaded, b: Loaded, params: MinHashParams) -> tuple[Loaded, Loaded]:
    """Two loaded tables at one width (``script="mixed"`` loads a table without CJK texts narrow)."""
    if a[0].shape[1] == b[0].shape[1]:
        return a, b
    return widen(*a, params.num_perm), widen(*b, params.num_perm)


def _aligned(a: Loaded, b: Loaded, params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    """The band matrices of :func:`_aligned_both`."""
    (_, a_bands), (_, b_bands) = _aligned_both(a, b, params)
    return a_bands, b_bands


def published_candidates(new: pa.Table, published: pa.Table, params: MinHashParams) -> np.ndarray:
    """Positions of the ``published`` rows sharing an LSH bucket with some row of ``new``.

    Only these rows can join a new row's cluster. With ``verify="exact"`` an engine can load
    just their texts and pass ``published.take(rows)`` to :func:`dedupe_incremental`.
    """
    return _sharing_a_bucket(*_aligned(load_signatures(published, params), load_signatures(new, params), params))


def dedupe_incremental(
    new: pa.Table,
    published: pa.Table,
    params: MinHashParams,
    new_texts: pa.Array | pa.ChunkedArray | PermutedTexts | None = None,
    published_texts: pa.Array | pa.ChunkedArray | PermutedTexts | None = None,
) -> pa.Table:
    """Decisions for the rows of ``new``, deduplicated among themselves and against ``published``.

    Both tables have the ``SIGNATURE_SCHEMA`` columns (``published`` typically loaded from a
    release's Delta table). Published rows always survive; only those sharing at least one LSH
    bucket with a new row (:func:`published_candidates`) join the clustering, so a large release
    costs one pass over its band hashes (``cluster_id``/``cluster_size`` count only those rows).
    Texts, aligned with their tables, are needed only for ``verify="exact"``.
    """
    (new_sigs, new_bands), (old_sigs, old_bands) = _aligned_both(
        load_signatures(new, params), load_signatures(published, params), params
    )
    rows = _sharing_a_bucket(old_bands, new_bands)
    log.info(
        "minhash incremental: %d new docs, %d of %d published docs share a bucket",
        len(new_sigs),
        len(rows),
        len(old_sigs),
    )
    texts = None
    if params.verify == "exact":
        if new_texts is None or published_texts is None:
            raise ValueError('verify="exact" needs new_texts and published_texts')
        texts = pa.chunked_array([*_chunks(new_texts), *_chunks(published_texts.take(pa.array(rows)))])
    old_ids = published.column("sample_id").combine_chunks().take(pa.array(rows))
    old_lengths = published.column("text_length").to_numpy()[rows]
    decisions = _decide(
        pa.concat_arrays([new.column("sample_id").combine_chunks(), old_ids]),
        np.concatenate([new.column("text_length").to_numpy(), old_lengths]),
        np.concatenate([np.zeros(len(new_sigs), bool), np.ones(len(rows), bool)]),
        np.concatenate([new_sigs, old_sigs[rows]]),
        np.concatenate([new_bands, old_bands[rows]]),
        params,
        texts,
        None if (rank := _priority(new)) is None else np.concatenate([rank, np.zeros(len(rows), np.int64)]),
    )
    return decisions.slice(0, new.num_rows)
