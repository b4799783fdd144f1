"""End to end on real text: Debian descriptions with known near-duplicate families.

The truth is brute force, by the issue's one reference whatever the language: every pair whose exact
Jaccard of character 5-gram sets (NFKC, lower-case, P*/S* and whitespace deleted) is >= the threshold.
Removal precision and recall are measured as in benchmarks/minhash.py: per connected component of the
truth graph, the removed members capped at size - 1.
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


def _removed(texts: list[str], params: MinHashParams) -> set[int]:
    ids = pa.array([f"{i:04d}" for i in range(len(texts))])
    table = pa.Table.from_batches([signature_batch(ids, pa.array(texts), params)])
    verdicts = dedupe(table, params, texts=pa.array(texts)).column("verdict").to_pylist()
    return {row for row, verdict in enumerate(verdicts) if verdict == "dropped"}


def _removal_scores(n: int, truth: set[tuple[int, int]], removed: set[int]) -> tuple[float, float]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, j in truth:
        parent[find(j)] = find(i)
    members = defaultdict(list)
    for x in range(n):
        members[find(x)].append(x)
    correct = sum(min(len(removed & set(m)), len(m) - 1) for m in members.values())
    return correct / max(1, len(removed)), correct / max(1, sum(len(m) - 1 for m in members.values()))


@pytest.mark.parametrize(("lang", "min_true_pairs"), [("en", 100), ("zh", 30)])
def test_removal_precision_and_recall_by_characters_on_real_descriptions(lang: str, min_true_pairs: int) -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    texts = [row["text"] for row in rows if row["lang"] == lang]
    params = MinHashParams()
    truth = _true_pairs(texts, cjk=True, threshold=params.threshold)
    assert len(truth) >= min_true_pairs
    precision, recall = _removal_scores(len(texts), truth, _removed(texts, params))
    assert precision >= 0.99 and recall >= 0.97, (precision, recall)
