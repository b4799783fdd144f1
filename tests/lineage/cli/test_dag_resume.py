"""A pipeline of stages killed for real (SIGKILL of ``lineage run``) resumes from its first unfinished stage:
the rerun skips the stages that committed, and the release is the one an uninterrupted run gives.
``lineage run --plan`` says so first, and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import lineage, lineage_killed_at
from tests.support.dag_pipelines import write_dag_file


def _published_digest(home: Path) -> str:
    out = lineage(home, "release", "publish", "mixed@v1", "--json").stdout
    digest = json.loads(out)["release"]["content_digest"]
    assert isinstance(digest, str) and len(digest) == 32, out
    return digest


def _pipeline_runs(home: Path) -> list[dict]:
    return json.loads(lineage(home, "pipeline-runs", "--json").stdout)["items"][::-1]  # oldest first


def _stages(prun: dict) -> list[tuple[str, str]]:
    return [(st["stage"], st["action"]) for st in prun["stages"]]


def test_a_killed_pipeline_reruns_only_its_unfinished_stages_and_gives_the_same_release(tmp_path: Path) -> None:
    pipeline = write_dag_file(tmp_path / "work")  # one corpus and file for every home: the same inputs
    whole = tmp_path / "whole"
    lineage(whole, "run", str(pipeline))
    expected = _published_digest(whole)

    home = tmp_path / "killed"
    lineage_killed_at(home, "pipeline.stage_done.clean-zh", "run", str(pipeline))  # after two of three stages
    (killed,) = _pipeline_runs(home)
    assert killed["status"] == "running" and _stages(killed) == [("clean-en", "run"), ("clean-zh", "run")]

    plan = lineage(home, "run", str(pipeline), "--plan").stdout
    assert "1 of 3 stage(s) would run; nothing was changed" in plan
    assert len(_pipeline_runs(home)) == 1, "a plan records nothing"

    rerun = lineage(home, "run", str(pipeline)).stdout
    assert "committed mixed v1" in rerun
    runs = _pipeline_runs(home)
    assert len(runs) == 2 and runs[1]["status"] == "succeeded"
    assert runs[0]["status"] == "failed", "the killed pipeline run is closed by the rerun, not left running"
    assert runs[0]["error"].startswith("interrupted: its process") and runs[1]["id"] in runs[0]["error"]
    assert _stages(runs[1]) == [("clean-en", "skip"), ("clean-zh", "skip"), ("merge", "run")]
    assert [st["run_id"] for st in runs[1]["stages"][:2]] == [st["run_id"] for st in killed["stages"]]
    assert _published_digest(home) == expected

    forced = lineage(home, "run", str(pipeline), "--plan", "--force").stdout
    assert "3 of 3 stage(s) would run; nothing was changed" in forced and forced.count("forced") == 3
    lineage(home, "run", str(pipeline), "--from", "merge")
    assert _stages(_pipeline_runs(home)[2]) == [("clean-en", "skip"), ("clean-zh", "skip"), ("merge", "run")]
    unknown = lineage(home, "run", str(pipeline), "--from", "clean-fr", check=False)
    assert unknown.returncode != 0 and "has no stage 'clean-fr'" in unknown.stdout + unknown.stderr


def test_a_pipeline_killed_inside_its_first_stage_reruns_it_and_gives_the_same_release(tmp_path: Path) -> None:
    pipeline = write_dag_file(tmp_path / "work")
    whole = tmp_path / "whole"
    lineage(whole, "run", str(pipeline))
    home = tmp_path / "killed"
    lineage_killed_at(home, "after_delta_commit", "run", str(pipeline))  # clean-en's tables committed, not its version
    (killed,) = _pipeline_runs(home)
    assert killed["status"] == "running" and killed["stages"] == []
    lineage(home, "gc")  # closes a pipeline run whose process is gone, as it does a run
    (abandoned,) = _pipeline_runs(home)
    assert abandoned["status"] == "failed" and "abandoned" in abandoned["error"]
    lineage(home, "run", str(pipeline))
    assert _stages(_pipeline_runs(home)[1]) == [("clean-en", "run"), ("clean-zh", "run"), ("merge", "run")]
    assert _published_digest(home) == _published_digest(whole)
