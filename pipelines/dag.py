"""Pipelines as DAGs of named stages: the graph, its order, and each stage's derived single-stage spec.

A pipeline file with ``[[stages]]`` declares several stages. Each has its inputs (raw files, catalog
datasets, or another stage's output: ``stage = "clean-en"``), its operators and mixture, and its
output dataset. A file without ``[[stages]]`` is today's single-stage :class:`PipelineSpec`.

The graph is checked when the file loads (:class:`DagSpec`): every ``stage =`` names a stage of the
file, the stages form no cycle, no two stages write one dataset, a catalog input never names a
dataset that a stage of the same file writes (it says ``stage =`` instead, so the order is the
graph's), and every stage is a valid single-stage pipeline on its own (its mixture, its operators).
Each refusal is :class:`~storage.errors.Invalid` naming the stage.

A stage runs as one ordinary run of :meth:`DagSpec.stage_spec`: a :class:`PipelineSpec` named
``PIPELINE.STAGE`` whose ``stage =`` inputs became catalog inputs pinned at the version the upstream
stage committed. So each stage keeps the whole commit protocol of a run (``lineage.runs``); the
catalog side of a pipeline run (order, skipping, grouping) is ``lineage.pipeline_runs``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipelines.spec import EngineName, InputSpec, MixtureSpec, OperatorSpec, OutputSpec, PipelineSpec, read_file
from storage.errors import Invalid, validation_problems
from storage.names import NAME_PATTERN


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageInputSpec(InputSpec):
    """An input of a stage: an :class:`InputSpec`, or ``stage = NAME``, the output of that stage (with
    the same weight, caps and priority fields)."""

    dataset: str | None = None  # type: ignore[assignment]  # None only with ``stage``
    stage: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> StageInputSpec:
        if self.stage is not None and (self.dataset is not None or self.path is not None or self.version is not None):
            raise ValueError(f"input stage = {self.stage!r}: a stage's output has no dataset, path or version to set")
        if self.stage is None and self.dataset is None:
            raise ValueError("an input needs a dataset (with or without a path) or a stage")
        return self


class StageSpec(_Strict):
    name: str = Field(pattern=NAME_PATTERN, max_length=100)
    inputs: list[StageInputSpec]
    operators: list[OperatorSpec] = Field(default_factory=list)
    mixture: MixtureSpec | None = None
    output: OutputSpec

    @property
    def upstream(self) -> list[str]:
        return [inp.stage for inp in self.inputs if inp.stage is not None]


class DagSpec(_Strict):
    """A pipeline of named stages. Checked as a graph at load (see the module docstring)."""

    name: str
    engine: EngineName = "local"
    stages: list[StageSpec] = Field(min_length=1)
    base_dir: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _graph(self) -> DagSpec:
        names = [s.name for s in self.stages]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"stage names must be distinct: {twice} appear more than once")
        writers: dict[str, str] = {}
        for stage in self.stages:
            other = writers.setdefault(stage.output.dataset, stage.name)
            if other != stage.name:
                raise ValueError(
                    f"stages {other!r} and {stage.name!r} both write dataset {stage.output.dataset!r}; "
                    "each dataset has one writer"
                )
        for stage in self.stages:
            for inp in stage.inputs:
                if inp.stage is not None and inp.stage not in names:
                    raise ValueError(f"stage {stage.name!r}: input stage = {inp.stage!r} is no stage of this file")
                if inp.stage is None and not inp.is_raw and inp.dataset in writers:
                    raise ValueError(
                        f"stage {stage.name!r}: input dataset {inp.dataset!r} is written by stage "
                        f"{writers[inp.dataset]!r}; say stage = {writers[inp.dataset]!r}"
                    )
        self.order()  # raises on a cycle
        for stage in self.stages:
            try:
                self.stage_spec(stage.name, {})
            except ValidationError as exc:
                raise ValueError(f"stage {stage.name!r}: {validation_problems(exc)}") from None
        return self

    def stage(self, name: str) -> StageSpec:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise Invalid(f"pipeline {self.name!r} has no stage {name!r}; its stages: {[s.name for s in self.stages]}")

    def order(self) -> list[str]:
        """The stages in topological order; among the ready ones, the file's order (so it is stable)."""
        done: list[str] = []
        waiting = list(self.stages)
        while waiting:
            ready = [s for s in waiting if all(up in done for up in s.upstream)]
            if not ready:
                cycle = " -> ".join(s.name for s in waiting)
                raise ValueError(f"the stages form a cycle: {cycle} each wait for another of them")
            done.append(ready[0].name)
            waiting.remove(ready[0])
        return done

    def downstream(self, name: str) -> list[str]:
        """``name`` and every stage that reads it, directly or not, in topological order."""
        self.stage(name)
        found = {name}
        for stage in self.order():
            if set(self.stage(stage).upstream) & found:
                found.add(stage)
        return [s for s in self.order() if s in found]

    def job_name(self, stage: str) -> str:
        """The stage's run's pipeline name and OpenLineage job: ``PIPELINE.STAGE`` (a child of the pipeline)."""
        return f"{self.name}.{stage}"

    def stage_spec(self, name: str, versions: dict[str, int]) -> PipelineSpec:
        """Stage ``name`` as a single-stage pipeline: each ``stage =`` input becomes a catalog input of
        that stage's output dataset, at ``versions[stage]`` (the committed version; absent: latest)."""
        stage = self.stage(name)
        inputs: list[dict[str, Any]] = []
        for inp in stage.inputs:
            fields = inp.model_dump(exclude={"stage"}, exclude_unset=True)
            if inp.stage is not None:
                fields["dataset"] = self.stage(inp.stage).output.dataset
                fields["version"] = versions.get(inp.stage)
            inputs.append(fields)
        spec = PipelineSpec.model_validate(
            {
                "name": self.job_name(name),
                "engine": self.engine,
                "inputs": inputs,
                "operators": [op.model_dump() for op in stage.operators],
                "mixture": stage.mixture.model_dump() if stage.mixture is not None else None,
                "output": stage.output.model_dump(),
            }
        )
        spec.base_dir = self.base_dir
        return spec


def load_pipeline(path: str | Path) -> PipelineSpec | DagSpec:
    """The pipeline file at ``path``: a :class:`DagSpec` when it declares ``[[stages]]``, else a
    :class:`PipelineSpec`; refused as :class:`~storage.errors.Invalid` with every problem on one line."""
    path = Path(path)
    data = read_file(path)
    if not (isinstance(data, dict) and "stages" in data):
        return PipelineSpec.load(path)
    return parse_dag(data, path.resolve().parent, str(path))


def parse_dag(data: Any, base_dir: Path | None, where: str = "pipeline") -> DagSpec:
    try:
        dag = DagSpec.model_validate(data)
    except ValidationError as exc:
        raise Invalid(f"pipeline file {where}: {validation_problems(exc)}") from None
    dag.base_dir = base_dir
    return dag
