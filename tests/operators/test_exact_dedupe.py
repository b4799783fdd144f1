from __future__ import annotations

import pyarrow as pa

from operators.exact_dedupe import ExactDedupe
from operators.lineage_records import LINEAGE_SCHEMA
from operators.schema import content_hash


def keys(rows: list[tuple[str, str, str, int]]) -> pa.Table:
    ids, texts, paths, rownums = zip(*rows, strict=True)
    return pa.table(
        {
            "sample_id": list(ids),
            "content_hash": [content_hash(t) for t in texts],
            "source_dataset": ["ds"] * len(ids),
            "source_path": list(paths),
            "source_row": list(rownums),
        }
    )


def test_first_by_source_order_survives_and_drops_name_it() -> None:
    table = keys(
        [
            ("s-late", "Same  text", "b.jsonl", 0),
            ("s-first", "same text".replace("s", "S", 1), "a.jsonl", 5),
            ("s-mid", "Same text\n", "a.jsonl", 9),
            ("s-other", "different", "a.jsonl", 1),
        ]
    )
    out = ExactDedupe().decide(table)
    assert out.schema == LINEAGE_SCHEMA
    by_id = {r["sample_id"]: r for r in out.to_pylist()}
    assert by_id["s-first"]["verdict"] == "kept" and by_id["s-other"]["verdict"] == "kept"
    for dropped in ("s-late", "s-mid"):
        rec = by_id[dropped]
        assert rec["verdict"] == "dropped" and rec["reason"] == "exact_duplicate"
        assert rec["related_ids"] == ["s-first"]
        dup = rec["detail"]["duplicate"]
        assert dup["kept_id"] == "s-first" and dup["method"] == "exact" and dup["cluster_size"] == 3
        assert dup["cluster_id"] == content_hash("Same text")
    assert by_id["s-first"]["detail"] is None or by_id["s-first"]["detail"]["duplicate"] is None


def test_decision_does_not_depend_on_input_order() -> None:
    rows = [(f"x{i}", f"t{i % 3}", f"f{i % 4}.jsonl", i) for i in range(40)]
    a = ExactDedupe().decide(keys(rows)).sort_by("sample_id")
    b = ExactDedupe().decide(keys(list(reversed(rows)))).sort_by("sample_id")
    assert a.equals(b)
    assert sum(v == "kept" for v in a.column("verdict").to_pylist()) == 3


def test_empty_input() -> None:
    assert ExactDedupe().decide(keys([("a", "t", "f", 0)]).slice(0, 0)).num_rows == 0
