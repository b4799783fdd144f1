"""Row keys through the shared stage functions: drops follow rows, not sample ids."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from operators.base import MapOperator, OperatorOutput
from operators.exact_dedupe import ExactDedupe
from operators.lineage_records import Verdict, lineage_batch
from operators.schema import SAMPLE_SCHEMA, content_hash
from pipelines.stages import ROW_KEY, Ingested, Step, decide_groups, run_maps


def _samples(rows: list[tuple[str, str, int]]) -> pa.RecordBatch:
    """Samples of (sample_id, text, source_row), all from one file of dataset ``d``."""
    ids, texts, positions = zip(*rows, strict=True)
    n = len(rows)
    return pa.RecordBatch.from_pydict(
        {
            "sample_id": list(ids),
            "text": list(texts),
            "content_hash": [content_hash(t) for t in texts],
            "source_dataset": ["d"] * n,
            "source_version": [0] * n,
            "source_uri": ["file:///d/a.jsonl"] * n,
            "source_path": ["a.jsonl"] * n,
            "source_row": list(positions),
            "source_offset": [None] * n,
            "meta": [None] * n,
        },
        schema=SAMPLE_SCHEMA,
    )


class DropShort(MapOperator):
    """Drops texts of fewer than three words."""

    name = "drop_short"
    version = "1"

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        short = pc.less(pc.list_value_length(pc.utf8_split_whitespace(batch.column("text"))), 3)
        verdicts = pc.if_else(short, Verdict.DROPPED.value, Verdict.KEPT.value)
        lineage = lineage_batch(
            operator=self.name, operator_version="1", sample_ids=batch["sample_id"], verdicts=verdicts
        )
        return OperatorOutput(batch.filter(pc.invert(short)), lineage)


class Reversed(DropShort):
    """Breaks the operator contract: its lineage records come back in reverse order."""

    name = "reversed"

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        out = super().apply(batch)
        return OperatorOutput(out.samples, out.lineage.take(pa.array(range(out.lineage.num_rows - 1, -1, -1))))


def test_a_group_drop_takes_one_twin_not_both() -> None:
    """Two rows with one sample_id (what the ingest check refuses): dropping one must leave the other."""
    staged, _ = Ingested(item=3, position=0)(_samples([("twin", "same text", 0), ("twin", "same text", 0)]))
    step = Step(1, ExactDedupe())
    decided = decide_groups(step, pa.Table.from_batches([staged]).select([*ExactDedupe.columns, ROW_KEY]), "run")
    assert decided.lineage.column("verdict").to_pylist() == ["kept", "dropped"]
    keys = staged.column(ROW_KEY).to_pylist()
    assert len(set(keys)) == 2 and decided.dropped.column(ROW_KEY).to_pylist() == [keys[1]]


def test_maps_carry_each_survivors_row_key() -> None:
    batch = _samples([("a", "one two three", 0), ("b", "short", 1), ("c", "four five six", 2), ("b", "tiny", 3)])
    staged, ingested = Ingested(item=0, position=2)(batch)
    assert ingested.column("input").to_pylist() == [2] * 4
    kept, lineage = run_maps(staged, [Step(1, DropShort())], "run")
    assert kept.column("sample_id").to_pylist() == ["a", "c"]
    assert kept.column(ROW_KEY).to_pylist() == [staged.column(ROW_KEY)[0].as_py(), staged.column(ROW_KEY)[2].as_py()]
    assert [r.num_rows for r in lineage] == [4]


def test_an_operator_whose_records_are_out_of_order_fails_the_step() -> None:
    staged, _ = Ingested(item=0, position=0)(_samples([("a", "one two three", 0), ("b", "short", 1)]))
    with pytest.raises(RuntimeError, match=r"reversed \(step 1\) returned lineage records that are not one per input"):
        run_maps(staged, [Step(1, Reversed())], "run")


def test_a_pass_through_the_quality_steps_leaves_no_batch_on_its_thread() -> None:
    """Gopher quality selects its tokens from Gopher repetition's within one pass; after the pass the
    thread holds neither (a server's long-lived threads would keep their last batch)."""
    from operators.quality import GopherQuality, GopherRepetition, token_reuse

    rng = random.Random(0)
    words = [f"{w}{i}" for i, w in enumerate(["the", "and", "with", "data", "model", "of", "to", "is"] * 40)]
    texts = [" ".join(rng.sample(words, 80)) for _ in range(4)] + ["a a a a a a a a a a a a"]
    staged, _ = Ingested(item=0, position=0)(_samples([(f"s{i}", t, i) for i, t in enumerate(texts)]))
    kept, lineage = run_maps(staged, [Step(1, GopherRepetition()), Step(2, GopherQuality())], "run")
    assert [r.num_rows for r in lineage] == [5, 4]  # the repeated one dropped, the others on to Gopher quality
    assert token_reuse._recent.tokens is None and token_reuse._recent.texts is None
    assert token_reuse.known(kept.column("text")) is None
