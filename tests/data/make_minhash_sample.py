"""Regenerates ``minhash_sample.jsonl``: real Debian descriptions with near-duplicate families.

Run from the repo root: ``python tests/data/make_minhash_sample.py /work/shared/data``. From a
seeded random sample of each corpus it takes whole families of documents linked by exact
shingle-set Jaccard >= 0.8 (the positives), pairs with Jaccard in [0.5, 0.8) (hard negatives),
and unrelated documents.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path


def shingles(text: str, cjk: bool, n: int = 5) -> frozenset[str]:
    norm = unicodedata.normalize("NFKC", text).lower()
    norm = "".join(ch for ch in norm if unicodedata.category(ch)[0] not in "PS")
    units = list("".join(norm.split())) if cjk else norm.split()
    return frozenset(" ".join(units[i : i + n]) for i in range(max(1, len(units) - n + 1)))


def similar_pairs(sets: list[frozenset[str]]) -> dict[tuple[int, int], float]:
    index = defaultdict(list)
    pairs = {}
    for d, s in enumerate(sets):
        for e in {e for sh in s for e in index[sh]}:
            j = len(s & sets[e]) / len(s | sets[e])
            if j >= 0.5:
                pairs[(e, d)] = j
        for sh in s:
            index[sh].append(d)
    return pairs


def pick(path: Path, lang: str, pool: int, families: int, negatives: int, singles: int, rng: random.Random) -> list:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if len(line) < 2000]
    docs = rng.sample(docs, min(pool, len(docs)))
    pairs = similar_pairs([shingles(d["text"], lang == "zh") for d in docs])
    parent = list(range(len(docs)))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for (a, b), j in pairs.items():
        if j >= 0.8:
            parent[find(b)] = find(a)
    groups = defaultdict(list)
    for d in range(len(docs)):
        groups[find(d)].append(d)
    fams = [g for g in groups.values() if 2 <= len(g) <= 6]
    chosen = [d for g in rng.sample(fams, min(families, len(fams))) for d in g]
    lonely = {g[0] for g in groups.values() if len(g) == 1}
    hard = [p for p, j in pairs.items() if j < 0.8 and p[0] in lonely and p[1] in lonely]
    chosen += [d for p in rng.sample(hard, min(negatives, len(hard))) for d in p]
    alone = sorted(lonely - set(chosen))
    chosen += rng.sample(alone, singles)
    return [{"id": docs[d]["id"], "lang": lang, "text": docs[d]["text"]} for d in dict.fromkeys(chosen)]


def main() -> None:
    data = Path(sys.argv[1])
    rng = random.Random(20261130)
    rows = pick(data / "debian_en.jsonl.gz", "en", 6000, 40, 20, 40, rng)
    rows += pick(data / "debian_zh.jsonl.gz", "zh", 2030, 15, 10, 20, rng)
    out = Path(__file__).with_name("minhash_sample.jsonl")
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
