"""The mixed Chinese/English evaluation set's stored ground truth is the exact reference's answer."""

from __future__ import annotations

import itertools
import random

from benchmarks.evalsets.build_zh_mixed import TRUTH_FLOOR, read_docs, read_truth
from benchmarks.evalsets.reference import char_shingles


def test_stored_truth_matches_brute_force_on_a_slice() -> None:
    docs = read_docs()
    truth = read_truth()
    by_id = {d["id"]: d for d in docs}
    assert len(by_id) == len(docs)
    # a slice that holds some true pairs (both ends) and a random sample of everything else
    rng = random.Random(18)
    chosen = {doc_id for pair in rng.sample(truth, 40) for doc_id in pair[:2]}
    chosen |= {d["id"] for d in rng.sample(docs, 300)}
    ids = sorted(chosen)
    sets = {i: char_shingles(by_id[i]["text"]) for i in ids}
    found = set()
    for a, b in itertools.combinations(ids, 2):
        common = len(sets[a] & sets[b])
        union = len(sets[a]) + len(sets[b]) - common
        if common >= TRUTH_FLOOR * union - 1e-9:  # J >= floor, equality included
            found.add((a, b, common, union))
    stored = {(min(a, b), max(a, b), c, u) for a, b, c, u in truth if a in chosen and b in chosen}
    assert len(stored) >= 40
    assert found == stored
