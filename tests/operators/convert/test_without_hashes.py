"""``ConvertOperator(hashes=False)`` (``lineage dedupe``'s samples, which never leave the process) gives
the same samples, lineage and quarantine, with ``content_hash`` left empty."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from operators.convert import ConvertOperator, plan_chunks
from operators.convert.plan import SourceSpec
from storage.tier import local_tier


def _read(root: Path, hashes: bool) -> list[pa.RecordBatch]:
    chunks = plan_chunks(SourceSpec("ds", local_tier(root), "in.jsonl"), 0)
    op = ConvertOperator({"batch_rows": 3}, run_id="r", hashes=hashes)
    return [out for batch in chunks.to_batches() for out in op.read(batch)]


def test_without_hashes_only_content_hash_differs(tmp_path: Path) -> None:
    lines = [json.dumps({"text": f"Text number {i}.", "n": i}) for i in range(7)] + ["not json", '{"text": ""}']
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    with_hashes, without = _read(tmp_path, True), _read(tmp_path, False)
    assert len(with_hashes) == len(without) > 2
    for a, b in zip(with_hashes, without, strict=True):
        assert a.samples.drop_columns(["content_hash"]).equals(b.samples.drop_columns(["content_hash"]))
        assert set(b.samples.column("content_hash").to_pylist()) <= {""}
        assert all(len(h) == 32 for h in a.samples.column("content_hash").to_pylist())
        assert a.lineage.equals(b.lineage) and a.quarantine.equals(b.quarantine) and a.stats == b.stats
