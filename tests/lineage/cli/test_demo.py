"""``lineage demo`` end to end on a small copy of the bundled corpus (issue #19's done-when step): it
registers the demo eval set, plants three of its items into a copy of the corpus (``examples/data`` is
not changed), catches exactly those three at publish, and shows the report in ``release show`` and the
HTML QC report; run again, it is a no-op with the same release digest."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

from lineage.cli.demo import EXAMPLES, PLANTED
from tests.support.cli import lineage


def _small_corpus(root: Path) -> Path:
    """The first lines of each bundled corpus file (the demo's inputs, smaller)."""
    root.mkdir()
    for name, lines in (("debian_en.jsonl.gz", 400), ("debian_zh.jsonl.gz", 200)):
        with gzip.open(EXAMPLES / "data" / name, "rt", encoding="utf-8") as fin:
            head = [next(fin) for _ in range(lines)]
        with gzip.open(root / name, "wt", encoding="utf-8") as fout:
            fout.writelines(head)
    return root


def _digests() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((EXAMPLES / "data").iterdir())}


def test_the_demo_plants_eval_items_in_a_copy_and_catches_them(tmp_path: Path) -> None:
    before = _digests()
    data, home = _small_corpus(tmp_path / "data"), tmp_path / "home"
    out = lineage(home, "demo", "--data-dir", str(data)).stdout
    assert "debian-quiz:v1: 8 items (registered)" in out
    assert re.search(r"debian-quiz:v1\s*│\s*3 of 8\s*│\s*37\.50%\s*│\s*3\s*│\s*at publish", out), out
    for item_id, _, _ in PLANTED:
        assert f"{item_id}: caught in 1 sample(s)" in out
    page = (home / "demo-qc.html").read_text(encoding="utf-8")
    assert "<h2>Contamination</h2>" in page and "<td>debian-quiz:v1</td><td>3 of 8</td><td>37.50%</td>" in page
    assert _digests() == before  # examples/data is never changed: the items went into the copy
    copy = home / "demo-corpus"
    planted = gzip.decompress((copy / "debian_en.jsonl.gz").read_bytes()).decode("utf-8")
    assert planted.count('"id": "planted-') == 2 and (copy / "debian_zh.jsonl.gz").exists()
    digest = re.search(r"debian-clean@demo \(published\) digest (\S+)", out)
    assert digest is not None
    again = lineage(home, "demo", "--data-dir", str(data)).stdout
    assert "already registered, no-op" in again and "already published with identical content (no-op)" in again
    assert f"debian-clean@demo (published) digest {digest.group(1)}" in again  # a byte-identical copy, release
