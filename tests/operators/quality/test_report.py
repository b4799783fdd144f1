import pyarrow as pa
import pytest

from operators.lineage_records import LINEAGE_SCHEMA, lineage_batch
from operators.quality import C4Quality, DefaultQuality, rule_counts, script_counts, script_distribution
from operators.quality.report import RULE_COUNTS_SCHEMA
from tests.support.quality_samples import make_batch

GOOD = "\n".join(f"This is good sentence number {i} in the text." for i in range(6))


def test_rule_counts_from_quality_lineage():
    texts = [GOOD, GOOD + "\nbad line", "too short", "# # #"]
    c4 = C4Quality().apply(make_batch(texts)).lineage
    default = DefaultQuality({"min_words": 5}).apply(make_batch(texts)).lineage
    dedupe = lineage_batch(
        operator="dedupe", operator_version="1", sample_ids=["s0"], verdicts=["dropped"], reasons=["exact"]
    )
    counts = rule_counts(pa.Table.from_batches([c4, default, dedupe]))
    assert counts.schema == RULE_COUNTS_SCHEMA
    rows = {(r["operator"], r["rule"]): r for r in counts.to_pylist()}
    assert rows[("quality_c4", "quality_c4:min_num_sentences")] == {
        "operator": "quality_c4",
        "rule": "quality_c4:min_num_sentences",
        "dropped": 2,
        "modified": 0,
        "failed": 2,
    }
    assert rows[("quality_c4", "quality_c4:lines_removed")]["modified"] == 1
    assert rows[("quality", "quality:min_words")]["dropped"] == 2
    assert rows[("quality", "quality:hash_ratio")]["failed"] == 1  # failed, but not the first failure
    assert rows[("quality", "quality:hash_ratio")]["dropped"] == 0
    assert rows[("dedupe", "exact")]["dropped"] == 1
    assert counts.column("operator").to_pylist() == sorted(counts.column("operator").to_pylist())


def test_rule_counts_read_lineage_of_older_releases_under_todays_names():
    """Lineage written before each quality operator had one name says ``default:min_words`` (reason) and
    ``rule_set: "default"`` (detail.rules): it counts under today's names, the same as new lineage."""
    texts = [GOOD, "too short", "# # #"]
    new = DefaultQuality({"min_words": 5}).apply(make_batch(texts)).lineage
    old = new.to_pylist()
    for record in old:
        if record["reason"]:
            record["reason"] = record["reason"].replace("quality:", "default:")
        for result in record["detail"]["rules"]:
            result["rule_set"] = "default"
    assert any(r["reason"] == "default:min_words" for r in old)
    stored = pa.Table.from_pylist(old, schema=LINEAGE_SCHEMA)
    assert rule_counts(stored).to_pylist() == rule_counts(new).to_pylist()
    assert "quality:min_words" in rule_counts(stored).column("rule").to_pylist()


def test_rule_counts_of_nothing():
    empty = DefaultQuality().apply(make_batch([])).lineage
    assert rule_counts(empty).num_rows == 0


def test_script_counts_and_distribution():
    texts = pa.array(["中文abc Привет 123!", "ひらがな漢字", ""])
    assert script_counts(texts).to_pylist() == [
        {"han": 2, "latin": 3, "other": 6},
        {"han": 2, "latin": 0, "other": 4},
        {"han": 0, "latin": 0, "other": 0},
    ]
    dist = script_distribution(texts)
    assert dist == pytest.approx({"han": 4 / 17, "latin": 3 / 17, "other": 10 / 17})
    assert script_distribution(pa.array(["123 !!"])) == {"han": 0.0, "latin": 0.0, "other": 0.0}


def test_script_counts_are_the_regexes_counts_over_every_code_point() -> None:
    """The looked-up classes equal RE2's own ``\\p{...}`` matches: each code point alone (all 1.1M but the
    surrogates), and mixed texts of random code points, sliced (an array offset) and chunked."""
    import numpy as np
    import pyarrow.compute as pc

    from operators.quality import scripts
    from operators.quality.scripts import CLASSES

    every = pa.array([chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000])
    rng = np.random.default_rng(5)
    pool = np.concatenate(
        [rng.integers(0, 0x3000, 4000), rng.integers(0x4E00, 0x9FFF, 2000), rng.integers(0x10000, 0x30000, 500)]
    )
    pool = pool[(pool < 0xD800) | (pool >= 0xE000)]
    mixed = pa.array(["".join(map(chr, rng.choice(pool, rng.integers(0, 60)))) for _ in range(500)]).slice(3)
    large = pa.concat_arrays([mixed] * (scripts.KERNEL_BYTES // mixed.nbytes + 1))
    for texts in (every, large, pa.chunked_array([large.slice(0, 100), large.slice(100)])):
        assert (
            texts.nbytes if isinstance(texts, pa.Array) else sum(c.nbytes for c in texts.chunks)
        ) >= scripts.KERNEL_BYTES
        got = script_counts(texts)
        for name, (_, pattern) in CLASSES.items():
            assert got[name].to_pylist() == pc.count_substring_regex(texts, pattern).to_pylist(), name


def test_small_inputs_count_with_the_table_on_disk_or_the_regexes_without_it(tmp_path, monkeypatch) -> None:
    """Below ``KERNEL_BYTES`` (a takedown's removed texts): numpy's lookup in the table when it is on disk,
    the regexes when it is not (no build for a few texts); the same counts either way."""
    import numpy as np
    import pyarrow.compute as pc

    from operators import code_point_tables
    from operators.quality import scripts
    from operators.quality.scripts import CLASSES

    rng = np.random.default_rng(7)
    pool = np.concatenate([rng.integers(0, 0x3000, 3000), rng.integers(0x4E00, 0x9FFF, 1500), [0x1F600, 0x20000]])
    pool = pool[(pool < 0xD800) | (pool >= 0xE000)]
    texts = pa.array(["".join(map(chr, rng.choice(pool, rng.integers(0, 80)))) for _ in range(300)] + [""]).slice(2)
    assert texts.nbytes < scripts.KERNEL_BYTES
    expected = {name: pc.count_substring_regex(texts, p).to_pylist() for name, (_, p) in CLASSES.items()}

    scripts.script_table()  # built once and kept on disk (if no earlier test or run did)
    scripts.script_table.cache_clear()
    assert scripts.built_script_table() is not None
    looked_up = []
    real = scripts._looked_up
    monkeypatch.setattr(scripts, "_looked_up", lambda *a: looked_up.append(1) or real(*a))
    for given in (texts, pa.chunked_array([texts.slice(0, 50), texts.slice(50)])):
        got = scripts.script_counts(given)
        assert {name: got[name].to_pylist() for name in CLASSES} == expected
    assert looked_up == [1, 1]

    scripts.script_table.cache_clear()
    monkeypatch.setattr(code_point_tables, "cache_file", lambda *_a: tmp_path / "none.table")
    assert scripts.built_script_table() is None
    got = scripts.script_counts(texts)
    assert {name: got[name].to_pylist() for name in CLASSES} == expected
    assert looked_up == [1, 1] and not (tmp_path / "none.table").exists()
    scripts.script_table.cache_clear()
