"""Every rule set honours the operator contract the pipeline runner relies on."""

import pytest

from operators.base import MapOperator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.quality import OPERATORS, RULE_SETS, QualityOperator, quality_operator
from operators.schema import SAMPLE_SCHEMA
from tests.support.quality_samples import make_batch

TEXTS = [
    "\n".join(f"This is the sentence number {i} and it has enough words to pass the filters." for i in range(12)),
    "too short",
    "",
    "中文的句子，用来测试中文文本。" * 10,
    "# # # ... ... ...\n- - -\n- - -",
    "\n".join(["Repeated line that ends with a period."] * 10 + ["Some code { here }."]),
]


@pytest.mark.parametrize("rule_set", sorted(RULE_SETS))
def test_contract(rule_set):
    op = quality_operator(rule_set)
    assert isinstance(op, QualityOperator) and isinstance(op, MapOperator)
    assert op.rule_set == rule_set
    batch = make_batch(TEXTS)
    out = op.apply(batch)
    lineage = out.lineage.to_pylist()
    assert out.lineage.schema == LINEAGE_SCHEMA and out.samples.schema == SAMPLE_SCHEMA
    assert [r["sample_id"] for r in lineage] == batch.column("sample_id").to_pylist()
    assert {r["operator"] for r in lineage} == {op.name}
    passed_on = [r["sample_id"] for r in lineage if r["verdict"] in ("kept", "modified")]
    assert out.samples.column("sample_id").to_pylist() == passed_on
    for record in lineage:
        assert record["verdict"] in ("kept", "dropped", "modified")
        rules = record["detail"]["rules"]
        assert rules and all(r["rule_set"] == rule_set for r in rules)
        failing = [f"{rule_set}:{r['rule']}" for r in rules if not r["passed"]]
        if record["verdict"] == "dropped":
            assert record["reason"] == failing[0]
        else:
            assert failing == []


@pytest.mark.parametrize("rule_set", sorted(RULE_SETS))
def test_params_round_trip_and_unknown_refused(rule_set):
    op = quality_operator(rule_set)
    again = quality_operator(rule_set, op.params.to_dict())
    assert again.params == op.params
    assert op.describe()["name"] == op.name
    with pytest.raises(ValueError, match="unknown parameter"):
        quality_operator(rule_set, {"no_such_threshold": 1})


def test_operator_names_are_unique_and_registered():
    assert {cls.name for cls in RULE_SETS.values()} == set(OPERATORS)
    assert OPERATORS["quality"] is RULE_SETS["default"]


def test_unknown_rule_set_refused():
    with pytest.raises(ValueError, match="unknown quality rule set"):
        quality_operator("gopher")
