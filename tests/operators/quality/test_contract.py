"""Every rule set honours the operator contract the pipeline runner relies on, under one name."""

import warnings

import pytest

import operators.quality
from operators.base import MapOperator
from operators.lineage_records import LINEAGE_SCHEMA
from operators.quality import OPERATORS, QualityOperator, quality_operator
from operators.quality.names import LEGACY_NAMES
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


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_contract(name):
    op = quality_operator(name)
    assert isinstance(op, QualityOperator) and isinstance(op, MapOperator)
    assert op.name == name
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
        assert rules and all(r["rule_set"] == name for r in rules)  # the one name, here too
        failing = [f"{name}:{r['rule']}" for r in rules if not r["passed"]]
        if record["verdict"] == "dropped":
            assert record["reason"] == failing[0]
        else:
            assert failing == []


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_params_round_trip_and_unknown_refused(name):
    op = quality_operator(name)
    again = quality_operator(name, op.params.to_dict())
    assert again.params == op.params
    assert op.describe()["name"] == op.name
    with pytest.raises(ValueError, match="unknown parameter"):
        quality_operator(name, {"no_such_threshold": 1})


def test_each_operator_has_one_name_and_old_rule_set_names_still_work_with_a_warning():
    """Before issue #16 each quality operator also had a rule-set name (``c4`` for ``quality_c4``); the
    operator name is now the only one. A caller who still writes an old name gets the same operator and
    a DeprecationWarning naming the new one."""
    assert set(LEGACY_NAMES.values()) == set(OPERATORS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the operator's own name: no warning
        assert quality_operator("quality_c4").name == "quality_c4"
    for old, new in LEGACY_NAMES.items():
        with pytest.warns(DeprecationWarning, match=f"{old!r} is now named after its operator: {new!r}"):
            assert type(quality_operator(old)) is OPERATORS[new]
    with pytest.warns(DeprecationWarning, match="use OPERATORS"):
        assert operators.quality.RULE_SETS["default"] is OPERATORS["quality"]


def test_unknown_name_refused():
    with pytest.raises(ValueError, match="unknown quality operator 'gopher'; known: \\['quality', 'quality_c4'"):
        quality_operator("gopher")
