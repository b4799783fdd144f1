"""Pipeline files of stages: the graph checked at load, its order, each stage's derived spec; the cache key."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from lineage.run_key import PARTS, run_key
from pipelines.dag import DagSpec, load_pipeline, parse_dag
from pipelines.spec import PipelineSpec
from storage.errors import Invalid
from tests.support.dag_pipelines import dag_dict, write_dag_file

PATHS = {"en": Path("/data/en"), "zh": Path("/data/zh")}


def _dag(**changes: Any) -> dict[str, Any]:
    data = dag_dict(PATHS)
    for stage in data["stages"]:
        stage.update(changes.get(stage["name"], {}))
    return data


def _refused(data: dict[str, Any]) -> str:
    with pytest.raises(Invalid) as err:
        parse_dag(data, None, "p.toml")
    return str(err.value)


def test_the_stages_are_ordered_by_the_graph_and_derive_single_stage_specs(tmp_path: Path) -> None:
    data = _dag()
    data["stages"] = [data["stages"][2], data["stages"][1], data["stages"][0]]  # the merge declared first
    dag = parse_dag(data, tmp_path)
    assert dag.order() == ["clean-zh", "clean-en", "merge"]
    assert dag.downstream("clean-en") == ["clean-en", "merge"] and dag.downstream("merge") == ["merge"]
    merge = dag.stage_spec("merge", {"clean-en": 4})
    assert isinstance(merge, PipelineSpec) and merge.name == "small-dag.merge" and merge.base_dir == tmp_path
    assert [(i.dataset, i.version, i.weight) for i in merge.inputs] == [("mixed-en", 4, 0.7), ("mixed-zh", None, 0.3)]
    assert merge.mixture is not None and merge.mixture.unit == "words" and merge.output.dataset == "mixed"
    en = dag.stage_spec("clean-en", {})
    assert en.inputs[0].is_raw and [op.name for op in en.operators] == ["exact_dedupe", "minhash_dedupe"]


def test_a_file_with_stages_loads_as_a_dag_and_one_without_as_before(tmp_path: Path) -> None:
    loaded = load_pipeline(write_dag_file(tmp_path / "dag"))
    assert isinstance(loaded, DagSpec) and loaded.base_dir == (tmp_path / "dag").resolve()
    single = tmp_path / "single.toml"
    single.write_text('name = "one"\n[[inputs]]\ndataset = "raw"\npath = "x"\n[output]\ndataset = "out"\n')
    assert isinstance(load_pipeline(single), PipelineSpec)


def test_an_unknown_stage_is_refused() -> None:
    data = _dag(merge={"inputs": [{"stage": "clean-fr", "weight": 1}, {"stage": "clean-zh", "weight": 1}]})
    assert "stage 'merge': input stage = 'clean-fr' is no stage of this file" in _refused(data)
    with pytest.raises(Invalid, match="has no stage 'nope'"):
        parse_dag(_dag(), None).downstream("nope")


def test_a_cycle_is_refused() -> None:
    data = _dag()
    data["stages"][0]["inputs"] = [{"stage": "merge"}]
    assert "the stages form a cycle: clean-en -> merge each wait for another of them" in _refused(data)
    data = _dag()
    data["stages"][1]["inputs"] = [{"stage": "clean-zh"}]  # a stage reading itself
    assert "cycle: clean-zh -> merge" in _refused(data)


def test_two_stages_writing_one_dataset_are_refused() -> None:
    data = _dag(**{"clean-zh": {"output": {"dataset": "mixed-en"}}})
    assert "stages 'clean-en' and 'clean-zh' both write dataset 'mixed-en'; each dataset has one writer" in _refused(
        data
    )


def test_reading_a_stages_output_by_its_dataset_name_is_refused() -> None:
    data = _dag(merge={"inputs": [{"dataset": "mixed-en"}, {"stage": "clean-zh"}], "mixture": None})
    assert "input dataset 'mixed-en' is written by stage 'clean-en'; say stage = 'clean-en'" in _refused(data)


def test_each_stage_is_checked_as_a_pipeline_of_its_own() -> None:
    data = _dag(merge={"inputs": [{"stage": "clean-en", "weight": 0.7}, {"stage": "clean-zh"}]})
    assert "stage 'merge': " in (msg := _refused(data)) and "every input needs a weight" in msg
    data = _dag()
    data["stages"][0]["inputs"][0]["stage"] = "clean-zh"  # a stage input with a path of its own
    assert "a stage's output has no dataset, path or version to set" in _refused(data)
    data = _dag()
    data["stages"].append(copy.deepcopy(data["stages"][0]))
    assert "stage names must be distinct: ['clean-en']" in _refused(data)


# -- the cache key (pure) ---------------------------------------------------------------------
INPUTS = [{"kind": "dataset", "dataset": f"mixed-{lang}", "version": 1} for lang in ("en", "zh")]


def _key(data: dict[str, Any], inputs: list[dict[str, Any]] = INPUTS, code: str = "1.0") -> Any:
    return run_key(parse_dag(data, None).stage_spec("merge", {}), inputs, code)


def test_the_key_names_the_part_that_changed() -> None:
    base = _key(_dag())
    assert base.digest == _key(_dag()).digest and len(base.digest) == 32
    assert base.changed(base.model_dump(mode="json")) == []
    assert base.changed(None) == list(PARTS)
    other_inputs = [INPUTS[0], {**INPUTS[1], "version": 2}]
    assert _key(_dag(), other_inputs).changed(base.model_dump(mode="json")) == ["inputs"]
    assert _key(_dag(), code="1.1").changed(base.model_dump(mode="json")) == ["code_version"]
    quality = _key(_dag(merge={"operators": [{"name": "quality"}]}))
    params = _key(_dag(merge={"operators": [{"name": "quality", "params": {"min_words": 5}}]}))
    assert params.changed(quality.model_dump(mode="json")) == ["params"]
    weights = _dag(merge={"inputs": [{"stage": "clean-en", "weight": 0.5}, {"stage": "clean-zh", "weight": 0.5}]})
    assert _key(weights).changed(base.model_dump(mode="json")) == ["mixture"]
    older = base.model_dump(mode="json")
    older["operators"] = [{**op, "version": "0"} for op in older["operators"]]  # as recorded by an older operator
    assert base.changed(older) == ["operators"]
    added = _key(_dag(merge={"operators": [{"name": "exact_dedupe"}, {"name": "quality"}]}))
    assert added.changed(base.model_dump(mode="json")) == ["operators", "params"]


def test_a_default_written_out_is_the_same_key() -> None:
    explicit = _dag(merge={"operators": [{"name": "quality", "params": {"min_words": 50}}]})
    assert _key(explicit).digest == _key(_dag(merge={"operators": [{"name": "quality"}]})).digest
