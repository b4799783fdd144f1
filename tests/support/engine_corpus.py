"""A small raw corpus with known exact duplicates, quality failures and bad records."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

from tests.support.helpers import write_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"


def _head(name: str, n: int) -> list[dict]:
    with gzip.open(EXAMPLES / name, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice(fh, n)]


def near_copy(doc: dict, i: int) -> dict:
    """The same document with one word replaced: a near duplicate, not an exact one."""
    words = doc["text"].split(" ")
    words[len(words) // 2] = f"edited{i}"
    return {**doc, "id": doc["id"] + "#near", "text": " ".join(words)}


def build(root: Path, docs: int = 120) -> Path:
    """Three files: English docs, near/exact copies across files, Chinese docs and broken lines."""
    en = _head("debian_en.jsonl.gz", docs)
    zh = _head("debian_zh.jsonl.gz", 12)
    write_jsonl(root / "a.jsonl", en[: docs // 2])
    copies = [{**d, "id": d["id"] + "#copy", "text": "  " + d["text"].replace(" ", "  ")} for d in en[:: docs // 15]]
    write_jsonl(root / "nested" / "b.jsonl.gz", en[docs // 2 :] + copies + zh, compress=True)
    write_jsonl(root / "near.jsonl", [near_copy(d, i) for i, d in enumerate(en[1 :: docs // 12])])
    write_jsonl(
        root / "c.jsonl",
        [
            *({**d, "id": d["id"] + "#c"} for d in zh[:3]),
            {"id": "no-text", "body": "x"},
            {"id": "empty", "text": "   "},
        ],
    )
    with (root / "c.jsonl").open("a") as fh:
        fh.write("\n\n")
        fh.write('{"id": "broken", "text": \n')
        fh.write(json.dumps({"id": "after-broken", "text": en[0]["text"]}) + "\n")
    return root
