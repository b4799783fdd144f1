"""How a pipeline run schedules its stages (``PipelineRunner._run_stages``), with the stages' work faked: on
Spark and Ray the stages that read nothing of each other run at once, a stage starts only when the stages
it reads have ended, and when one fails the others already running end and are recorded before its error
is raised; in process one stage runs at a time. (The real engines: ``tests/pipelines/engines/test_dag_engines.py``.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lineage.pipeline_runs import RUN, PipelineRunner, StageDecision
from pipelines.dag import DagSpec, parse_dag
from pipelines.spec import PipelineSpec
from tests.support.dag_pipelines import dag_dict


class _Fake(PipelineRunner):
    """Every stage runs; its work sleeps (or fails); what the catalog would record is kept in a list."""

    def __init__(self, fail: str | None = None) -> None:  # no settings, no catalog: nothing is stored
        self.fail = fail
        self.events: list[tuple[str, str]] = []
        self.recorded: list[list[str]] = []
        self.lock = threading.Lock()

    def _decide(
        self, dag: DagSpec, name: str, versions: dict[str, int], forced: bool
    ) -> tuple[StageDecision, PipelineSpec, list[dict[str, object]]]:
        assert all(up in versions for up in dag.stage(name).upstream), f"{name} decided before its inputs ended"
        return StageDecision(name, RUN, "fake", dataset=name), dag.stage_spec(name, versions), []

    def _run_stage(
        self,
        spec: PipelineSpec,
        inputs: list[dict[str, object]],
        engine: str,
        pipeline_run_id: str,
        name: str,
        progress: object,
    ) -> tuple[int, str]:
        with self.lock:
            self.events.append(("start", name))
        time.sleep(0.3)
        with self.lock:
            self.events.append(("end", name))
        if name == self.fail:
            raise RuntimeError(f"{name} failed")
        return 1, f"run-{name}"

    def _record(self, pipeline_run_id: str, done: list[StageDecision]) -> None:
        self.recorded.append([d.stage for d in done])


@pytest.fixture
def dag(tmp_path: Path) -> DagSpec:
    paths = {"en": tmp_path / "en", "zh": tmp_path / "zh"}
    return parse_dag(dag_dict(paths), None)


def test_on_a_cluster_independent_stages_run_at_once_and_a_stage_waits_for_its_inputs(dag: DagSpec) -> None:
    fake = _Fake()
    done = fake._run_stages(dag, set(), "spark", "p", lambda *a: None)
    assert [d.stage for d in done] == ["clean-en", "clean-zh", "merge"]
    assert {e for e in fake.events[:2]} == {("start", "clean-en"), ("start", "clean-zh")}  # both before either ends
    assert fake.events[-2:] == [("start", "merge"), ("end", "merge")]  # after both
    assert fake.recorded[-1] == ["clean-en", "clean-zh", "merge"]  # in topological order, whichever ended first


def test_in_process_one_stage_runs_at_a_time(dag: DagSpec) -> None:
    fake = _Fake()
    fake._run_stages(dag, set(), "local", "p", lambda *a: None)
    assert [kind for kind, _ in fake.events] == ["start", "end"] * 3
    assert fake.recorded == [["clean-en"], ["clean-en", "clean-zh"], ["clean-en", "clean-zh", "merge"]]


def test_a_failing_stage_lets_the_running_one_end_and_be_recorded(dag: DagSpec) -> None:
    fake = _Fake(fail="clean-zh")
    with pytest.raises(RuntimeError, match="clean-zh failed"):
        fake._run_stages(dag, set(), "ray", "p", lambda *a: None)
    assert fake.recorded[-1] == ["clean-en"]  # it ran beside the failed one and committed: recorded
    assert ("start", "merge") not in fake.events  # nothing downstream starts
