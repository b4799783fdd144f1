"""End to end on real text: Debian descriptions with known near-duplicate families.

The truth is brute force: every pair whose exact Jaccard of shingle sets is >= the threshold.
Found pairs are all pairs within a reported cluster, as in benchmarks/minhash.py.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

from operators.minhash import MinHashParams, dedupe, signature_batch

SAMPLE = Path(__file__).parents[2] / "data" / "minhash_sample.jsonl"


def _shingles(text: str, cjk: bool, n: int = 5) -> set[str]:
    norm = unicodedata.normalize("NFKC", text).lower()
    norm = "".join(ch for ch in norm if unicodedata.category(ch)[0] not in "PS")
    units = list("".join(norm.split())) if cjk else norm.split()
    if len(units) < n:
        return {" ".join(units)}
    return {" ".join(units[i : i + n]) for i in range(len(units) - n + 1)}


def _true_pairs(texts: list[str], cjk: bool, threshold: float) -> set[tuple[int, int]]:
    sets = [_shingles(t, cjk) for t in texts]
    return {
        (i, j)
        for i, j in itertools.combinations(range(len(sets)), 2)
        if len(sets[i] & sets[j]) >= threshold * len(sets[i] | sets[j])
    }


def _found_pairs(texts: list[str], params: MinHashParams) -> set[tuple[int, int]]:
    ids = pa.array([f"{i:04d}" for i in range(len(texts))])
    table = pa.Table.from_batches([signature_batch(ids, pa.array(texts), params)])
    clusters = defaultdict(list)
    for row, cluster in enumerate(dedupe(table, params, texts=pa.array(texts)).column("cluster_id").to_pylist()):
        if cluster is not None:
            clusters[cluster].append(row)
    return {pair for rows in clusters.values() for pair in itertools.combinations(rows, 2)}


@pytest.mark.parametrize(("lang", "min_true_pairs"), [("en", 100), ("zh", 30)])
def test_pair_f1_on_real_descriptions(lang: str, min_true_pairs: int) -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    texts = [row["text"] for row in rows if row["lang"] == lang]
    params = MinHashParams()
    truth = _true_pairs(texts, cjk=lang == "zh", threshold=params.threshold)
    found = _found_pairs(texts, params)
    assert len(truth) >= min_true_pairs
    hit = len(truth & found)
    precision, recall = hit / len(found), hit / len(truth)
    assert 2 * precision * recall / (precision + recall) >= 0.95, (precision, recall)
