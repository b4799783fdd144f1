"""Window gathers equal Arrow's own take, with string and binary columns as views."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lineage.reader.gather import Window, as_views


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    texts = [None if i % 11 == 0 else "é" * int(rng.integers(0, 40)) + str(i) for i in range(300)]
    blobs = [bytes(rng.integers(0, 256, int(rng.integers(0, 30)), dtype=np.uint8)) for _ in range(300)]
    whole = pa.table(
        {
            "text": pa.array(texts, pa.string()),
            "blob": pa.array(blobs, pa.binary()),
            "row": pa.array(range(300), pa.int64()),
            "tags": pa.array([[str(i)] * (i % 3) for i in range(300)], pa.list_(pa.string())),
        }
    )
    # several chunks, one of them a slice with a non-zero offset, as decoded row groups can be
    return pa.concat_tables([whole.slice(0, 90), whole.slice(90, 1), whole.slice(91, 150), whole.slice(241)])


def test_served_rows_equal_arrow_take_in_any_order() -> None:
    table = _table()
    expected = table.combine_chunks()
    for rows in (np.random.default_rng(1).permutation(300), np.arange(300)[::-1], np.array([5, 5, 0, 299])):
        window = Window(as_views(table), rows)
        assert window.num_rows == len(rows)
        for start, stop in ((0, len(rows)), (1, min(3, len(rows))), (len(rows) // 2, len(rows))):
            batch = window.batch(start, stop)
            batch.validate(full=True)
            assert batch.schema.field("text").type == pa.string_view()
            assert batch.schema.field("blob").type == pa.binary_view()
            want = expected.take(rows[start:stop])
            assert batch.column("text").null_count == want.column("text").null_count
            assert batch.to_pylist() == want.to_pylist()


def test_views_cast_back_to_offsets_based_strings() -> None:
    table = _table()
    rows = np.random.default_rng(2).permutation(300)[:64]
    text = Window(as_views(table), rows).batch(0, 64).column("text").cast(pa.string())
    assert text.equals(table.combine_chunks().column("text").take(rows).combine_chunks())
