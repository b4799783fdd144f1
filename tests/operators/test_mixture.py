"""The mixture step's arithmetic: targets, the hash-ordered prefix, overshoot, repeats and their rule."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from operators.mixture import Mixture, RepeatRule, choose, fill, order_keys, repeats, word_counts
from storage.errors import Invalid


def _table(sources: dict[str, list[str]]) -> pa.Table:
    ids, names, texts = [], [], []
    for name, items in sources.items():
        for i, text in enumerate(items):
            ids.append(f"{name}-{i:04d}")
            names.append(name)
            texts.append(text)
    return pa.table({"sample_id": ids, "source_dataset": names, "text": texts})


def _mixture(weights: dict[str, float], **params: object) -> Mixture:
    caps = params.pop("caps", {})
    sources = {n: {"weight": w, **caps.get(n, {})} for n, w in weights.items()}  # type: ignore[union-attr]
    return Mixture({"sources": sources, **params})


def _run(op: Mixture, table: pa.Table) -> pa.RecordBatch:
    """What an engine does: sizes per batch (``prepare``), then the decision over all of them."""
    prepared = [op.prepare(b) for b in table.to_batches(max_chunksize=17)]
    return op.decide(pa.Table.from_batches(prepared, schema=op.prepared_schema))


def _decided(op: Mixture, table: pa.Table) -> dict[str, tuple[str, int]]:
    records = _run(op, table)
    out = {}
    for row in records.to_pylist():
        rules = {r["rule"]: r["value"] for r in row["detail"]["rules"]}
        out[row["sample_id"]] = (row["verdict"], int(rules["repeats"]))
    return out


def test_downsampling_takes_the_hash_prefix_up_to_the_target() -> None:
    table = _table({"a": [f"text {i}" for i in range(100)], "b": [f"word {i}" for i in range(100)]})
    op = _mixture({"a": 3, "b": 1}, total=40)
    decided = _decided(op, table)
    kept = {s for s, (v, _) in decided.items() if v == "kept"}
    assert sum(s.startswith("a-") for s in kept) == 30 and sum(s.startswith("b-") for s in kept) == 10
    # exactly the first 30 of a's samples in (hash(seed, id), id) order
    a_ids = [f"a-{i:04d}" for i in range(100)]
    keys = order_keys(0, a_ids)
    first = {a_ids[i] for i in np.lexsort((np.array(a_ids), keys))[:30]}
    assert {s for s in kept if s.startswith("a-")} == first
    dropped = [r for r in _run(op, table).to_pylist() if r["verdict"] == "dropped"]
    assert {r["reason"] for r in dropped} == {"mixture_not_selected"}


def test_the_decision_does_not_depend_on_row_order_and_the_seed_changes_it() -> None:
    table = _table({"a": [f"t{i}" for i in range(50)], "b": [f"u{i}" for i in range(80)]})
    op = _mixture({"a": 1, "b": 1}, total=30, seed=7)
    shuffled = table.take(pa.array(np.random.default_rng(1).permutation(table.num_rows)))
    assert _decided(op, table) == _decided(op, shuffled)
    other = _decided(_mixture({"a": 1, "b": 1}, total=30, seed=8), table)
    assert other != _decided(op, table)


@pytest.mark.parametrize("target", [1.0, 17.5, 99.0, 250.0, 1234.0])
def test_a_unit_target_is_overshot_by_at_most_one_sample(target: float) -> None:
    rng = np.random.default_rng(3)
    size = rng.integers(1, 40, size=60).astype(np.float64)
    ids = [f"s{i}" for i in range(60)]
    keys = order_keys(0, ids)
    rule = choose(target, float(size.sum()), size, keys, ids)
    reps = repeats(rule, keys, ids)
    served = float((size * reps).sum())
    assert served >= target
    prefix = reps > rule.passes
    assert served - target < size[prefix].max() if prefix.any() else served == target


def test_upsampling_serves_whole_passes_then_a_hashed_remainder() -> None:
    table = _table({"small": [f"s{i}" for i in range(10)], "big": [f"b{i}" for i in range(100)]})
    op = _mixture({"small": 1, "big": 1}, total=50)  # small: 25 of 10 samples -> 2 passes + 5
    decided = _decided(op, table)
    small = [r for s, (v, r) in decided.items() if s.startswith("small-")]
    assert sorted(small) == [2] * 5 + [3] * 5
    assert all(v == "kept" for s, (v, _) in decided.items() if s.startswith("small-"))
    assert sum(r for s, (_, r) in decided.items() if s.startswith("big-")) == 25


def test_max_epochs_caps_upsampling_and_max_share_caps_a_share() -> None:
    table = _table({"small": [f"s{i}" for i in range(10)], "big": [f"b{i}" for i in range(100)]})
    capped = _mixture({"small": 1, "big": 1}, total=50, caps={"small": {"max_epochs": 1.5}, "big": {"max_share": 0.2}})
    decided = _decided(capped, table)
    assert sum(r for s, (_, r) in decided.items() if s.startswith("small-")) == 15
    assert sum(r for s, (_, r) in decided.items() if s.startswith("big-")) == 10


def test_a_capped_sources_shortfall_goes_to_the_others_by_weight() -> None:
    table = _table(
        {
            "small": [f"s{i}" for i in range(10)],
            "big": [f"b{i}" for i in range(100)],
            "mid": [f"m{i}" for i in range(60)],
        }
    )
    caps = {"big": {"max_share": 0.2}}
    decided = _decided(_mixture({"small": 1, "big": 2, "mid": 1}, total=50, caps=caps), table)
    served = {
        src: sum(r for s, (_, r) in decided.items() if s.startswith(src + "-")) for src in ("small", "big", "mid")
    }
    assert served == {"small": 20, "big": 10, "mid": 20}, "big's 25 capped at 10: small and mid share the 15 it left"
    kept = _decided(_mixture({"small": 1, "big": 2, "mid": 1}, total=50, caps=caps, redistribute=False), table)
    served = {src: sum(r for s, (_, r) in kept.items() if s.startswith(src + "-")) for src in ("small", "big", "mid")}
    assert served == {"small": 13, "big": 10, "mid": 13}, "without redistribute the shortfall stays unfilled"


def test_fill_caps_in_rounds_until_no_target_passes_its_cap() -> None:
    inf = float("inf")
    assert fill(100, {"a": 1, "b": 1, "c": 2}, {"a": 10, "b": inf, "c": inf}) == {"a": 10, "b": 30, "c": 60}
    # a is capped first; b's share of what is left (30) then passes its cap 28: a second round
    assert fill(100, {"a": 1, "b": 1, "c": 2}, {"a": 10, "b": 28, "c": inf}) == {"a": 10, "b": 28, "c": 62}
    assert fill(100, {"a": 1, "b": 3}, {"a": 5, "b": 20}) == {"a": 5, "b": 20}, "every source capped: the caps"
    assert fill(100, {"a": 1, "b": 1}, {"a": inf, "b": inf}) == {"a": 50, "b": 50}


def test_without_a_total_the_limiting_source_is_used_whole() -> None:
    table = _table({"a": [f"t{i}" for i in range(30)], "b": [f"u{i}" for i in range(100)]})
    decided = _decided(_mixture({"a": 0.6, "b": 0.4}), table)  # a limits: 30 -> total 50, b gets 20
    assert sum(r for s, (_, r) in decided.items() if s.startswith("a-")) == 30
    assert sum(r for s, (_, r) in decided.items() if s.startswith("b-")) == 20


def test_words_count_cjk_characters_one_each() -> None:
    counts = word_counts(pa.array(["two words", "这是中文", "mixed 中文 text", ""]))
    assert counts.tolist() == [2, 4, 4, 0]


def test_the_rule_reproduces_the_recorded_repeats_on_any_subset() -> None:
    ids = [f"x{i}" for i in range(40)]
    keys = order_keys(5, ids)
    size = np.ones(40)
    rule = choose(97, 40.0, size, keys, ids)  # 2 passes + 17
    assert rule.passes == 2
    reps = repeats(rule, keys, ids)
    assert reps.sum() == 97
    sub = list(range(0, 40, 3))
    assert repeats(rule, keys[sub], [ids[i] for i in sub]).tolist() == reps[sub].tolist()
    assert RepeatRule.from_dict(rule.to_dict()) == rule


def test_unknown_sources_and_bad_params_are_refused_clearly() -> None:
    op = _mixture({"a": 1}, total=5)
    with pytest.raises(Invalid, match="belong to no weighted input"):
        _run(op, _table({"zzz": ["x"]}))
    with pytest.raises(Invalid, match="unit must be one of"):
        _mixture({"a": 1}, unit="lines")
    with pytest.raises(Invalid, match="needs a tokenizer"):
        _mixture({"a": 1}, unit="tokens")
    with pytest.raises(Invalid, match=r"source\(s\) \['b'\] have no samples left"):
        _run(_mixture({"a": 1, "b": 1}), _table({"a": ["x", "y"]}))  # no total: b's share cannot be met
