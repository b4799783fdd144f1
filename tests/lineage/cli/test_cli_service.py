"""The ``lineage`` command calls the service: its read verbs print the service's models (``--json``: the
same JSON as the HTTP API's bodies), and its release verbs are the service's operations, with the user
running the command recorded as the actor. Run as a user runs it (a real subprocess) over a real catalog."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lineage.runs import Runner
from lineage.service.core import Service
from lineage.settings import Settings
from lineage.version import code_version
from operators.schema import sample_id
from tests.support.api_world import build_corpus, spec
from tests.support.helpers import write_jsonl

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Catalog:
    settings: Settings
    service: Service

    def lineage(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("LINEAGE_CONFIG", "LINEAGE_CATALOG_URL")}
        env["LINEAGE_HOME"] = str(self.settings.home)
        result = subprocess.run(
            [sys.executable, "-m", "lineage", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert result.returncode == code, f"lineage {' '.join(args)}: {result.returncode}\n{result.stderr}"
        return result


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """clean v1 (released as clean@v1) and clean v2 (one more file; clean@v2)."""
    tmp = tmp_path_factory.mktemp("cli-service")
    settings = Settings(home=tmp / "home", catalog_url=None)
    service = Service(settings)
    corpus = build_corpus(tmp / "raw")
    runner = Runner(settings, service.catalog)
    runner.run(spec(corpus))
    service.create_release({"name": "clean", "tag": "v1"})
    write_jsonl(corpus / "c.jsonl", [{"id": "added", "text": "a brand new document about compilers and linkers"}])
    runner.run(spec(corpus))
    service.create_release({"name": "clean", "tag": "v2"})
    yield Catalog(settings, service)
    service.close()


def _json(answer: BaseModel | list[BaseModel]) -> Any:
    if isinstance(answer, list):  # a plain-list answer (pins, a placement plan), as the HTTP API sends it
        return [_json(m) for m in answer]
    return json.loads(answer.model_dump_json(by_alias=True))


AGAIN = sample_id("raw", "id:libc6-again")  # an exact duplicate of libc6: dropped


ALL = {"limit": 1000, "offset": 0}
READS: dict[str, tuple[list[str], Callable[[Service], Any], bool]] = {
    # name: (arguments, the service call it prints, whether that answer is a page)
    "datasets": (["datasets"], lambda s: s.list_datasets(**ALL), True),
    "versions": (["datasets", "clean"], lambda s: s.list_versions("clean", **ALL), True),
    "release list": (["release", "list"], lambda s: s.list_releases(**ALL), True),
    "release show": (["release", "show", "clean@v1"], lambda s: s.get_release("clean@v1"), False),
    "runs": (["runs", "--dataset", "clean"], lambda s: s.list_runs(dataset="clean", **ALL), True),
    "diff": (["diff", "clean@v1", "clean:v2"], lambda s: s.diff("clean@v1", "clean:v2"), False),
    "sample": (["sample", AGAIN], lambda s: s.sample_lineage(AGAIN), False),
    "samples": (
        ["samples", "clean", "--version", "1", "--verdict", "dropped", "--limit", "1000"],
        lambda s: s.list_samples("clean", 1, verdict="dropped", **ALL),
        True,
    ),
    "why-not": (["why-not", AGAIN, "--release", "clean@v1"], lambda s: s.why_not(AGAIN, "clean@v1"), False),
    "source-releases": (
        ["source-releases", "--dataset", "clean", "--version", "1"],
        lambda s: s.source_releases(dataset="clean", version=1),
        False,
    ),
    "lineage-graph": (
        ["lineage-graph", "dataset:lineage-ledger:clean", "--depth", "2"],
        lambda s: s.lineage_graph("dataset:lineage-ledger:clean", 2),
        False,
    ),
    "release pins": (["release", "pins", "clean@v1"], lambda s: s.list_pins("clean@v1"), False),
    "release reads": (["release", "reads", "clean@v1"], lambda s: s.list_reads("clean@v1", **ALL), True),
    "tier plan": (["tier", "plan"], lambda s: s.plan_placement(), False),
}


@pytest.mark.parametrize("name", READS)
def test_every_read_command_prints_the_services_model_as_json(cat: Catalog, name: str) -> None:
    args, call, paged = READS[name]
    printed = json.loads(cat.lineage(*args, "--json").stdout)
    expected = _json(call(cat.service))
    if paged:  # every page at once: the items and the total of the HTTP answer, in one page
        assert printed == {**expected, "limit": expected["total"]} and printed["total"] == len(printed["items"])
        assert printed["total"] > 0 or name == "release reads"  # a fresh release has no reads yet
    else:
        assert printed == expected


def test_the_read_commands_tables_show_the_services_answers(cat: Catalog) -> None:
    datasets = cat.lineage("datasets").stdout
    assert "clean" in datasets and "clean@v1" in datasets and "clean@v2" in datasets
    shown = cat.lineage("release", "show", "clean@v2").stdout
    assert "data table datasets/clean/data at Delta version 1" in shown and "xxh3-128" in shown
    assert "replica on local: verified (primary)" in shown and "last used: never" in shown
    assert "Quality rules" in shown and "Drop rate per source" in shown
    diff = cat.lineage("diff", "clean@v1", "clean@v2").stdout
    assert "clean@v1 → clean@v2: 1 added, 0 removed, 0 changed" in diff and "schema: unchanged" in diff
    runs = cat.lineage("runs").stdout
    assert "api-test" in runs and "succeeded" in runs


def test_publish_a_draft_then_deprecate_through_the_service(cat: Catalog) -> None:
    """``--draft`` records; publishing the recorded draft publishes it (whatever the latest version is);
    deprecating is recorded with its reason; the user who ran the command is the release's actor."""
    drafted = cat.lineage("release", "publish", "clean@d1", "--version", "1", "--draft").stdout
    assert "recorded draft clean@d1 -> clean v1" in drafted
    assert cat.service.get_release("clean@d1").state == "draft"
    published = cat.lineage("release", "publish", "clean@d1").stdout  # v2 is the latest: the draft pins v1
    assert "published clean@d1 -> clean v1" in published
    release = cat.service.get_release("clean@d1")
    assert (release.state, release.created_by) == ("published", getpass.getuser())

    assert "deprecated clean@d1" in cat.lineage("release", "deprecate", "clean@d1", "--reason", "superseded").stdout
    again = json.loads(cat.lineage("release", "deprecate", "clean@d1", "--json").stdout)
    assert again["changed"] is False and again["release"]["deprecation_reason"] == "superseded"
    listed = json.loads(cat.lineage("release", "list", "--state", "deprecated", "--json").stdout)
    assert [r["ref"] for r in listed["items"]] == ["clean@d1"]

    refused = cat.lineage("release", "deprecate", "clean@nope", "--json", code=4)
    assert json.loads(refused.stdout)["code"] == "release_not_found"
    assert refused.stderr.strip().splitlines() == ["error: release clean@nope does not exist"]


def test_version(cat: Catalog) -> None:
    assert cat.lineage("--version").stdout.strip() == f"lineage-ledger {code_version()}"


def test_the_write_commands_are_the_services_operations(cat: Catalog, tmp_path: Path) -> None:
    """dataset update, release pin / record-read, lineage-event: each changes the catalog through the
    service (what the service then answers shows it), with the command's user as the actor."""
    updated = json.loads(
        cat.lineage("dataset", "update", "clean", "--owner", "data-team", "--tag", "en", "--json").stdout
    )
    assert updated == _json(cat.service.get_dataset("clean")) and (updated["owner"], updated["tags"]) == (
        "data-team",
        ["en"],
    )
    assert "clean: owner data-team" in cat.lineage("dataset", "update", "clean", "--license", "CC-BY-4.0").stdout

    assert (
        "pinned clean@v2 until 2099-01-01T00:00:00"
        in cat.lineage("release", "pin", "clean@v2", "--until", "2099-01-01", "--reason", "run-7").stdout
    )
    (pin,) = cat.service.list_pins("clean@v2")
    assert (pin.pinned_by, pin.reason, pin.active) == (getpass.getuser(), "run-7", True)
    assert "run-7" in cat.lineage("release", "pins", "clean@v2").stdout

    recorded = cat.lineage("release", "record-read", "clean@v2", "--job", "pretrain-7", "--world-size", "2")
    assert "recorded: pretrain-7 rank 0/2" in recorded.stdout
    (read,) = cat.service.list_reads("clean@v2").items
    assert (read.job, read.world_size, read.recorded_by) == ("pretrain-7", 2, getpass.getuser())
    assert "pretrain-7" in cat.lineage("release", "reads", "clean@v2").stdout
    refused = cat.lineage(
        "release", "record-read", "clean@v2", "--job", "j", "--rank", "2", "--world-size", "2", code=3
    )
    assert "rank" in refused.stderr and "Traceback" not in refused.stderr

    event = {
        "eventType": "COMPLETE",
        "eventTime": "2026-01-01T00:00:00Z",
        "run": {"runId": "3f6c2a52-5a8e-4bb1-9d1c-3c2a1c1e0a11"},
        "job": {"namespace": "airflow", "name": "tokenize"},
        "inputs": [{"namespace": "lineage-ledger", "name": "clean"}],
        "outputs": [{"namespace": "s3://lake", "name": "tokens"}],
    }
    (tmp_path / "event.json").write_text(json.dumps(event))
    accepted = cat.lineage("lineage-event", str(tmp_path / "event.json")).stdout
    assert "accepted COMPLETE of run 3f6c2a52" in accepted and "1 inputs, 1 outputs" in accepted
    graph = {n.id for n in cat.service.lineage_graph("dataset:lineage-ledger:clean", 2).graph}
    assert {"job:airflow:tokenize", "dataset:s3://lake:tokens"} <= graph
    assert "job:airflow:tokenize" in cat.lineage("lineage-graph", "dataset:lineage-ledger:clean").stdout
    (tmp_path / "bad.json").write_text("[1, 2]")
    bad = cat.lineage("lineage-event", str(tmp_path / "bad.json"), code=3)
    assert "not an object" in bad.stderr
    missing = cat.lineage("lineage-event", str(tmp_path / "nope.json"), code=4)
    assert missing.stderr.strip() == f"error: no such file: {tmp_path / 'nope.json'}"


def test_the_sample_questions_in_the_terminal(cat: Catalog) -> None:
    dropped = cat.lineage("samples", "clean", "--version", "1", "--verdict", "dropped").stdout
    assert "exact_dedupe" in dropped and "dropped" in dropped
    why = " ".join(cat.lineage("why-not", AGAIN, "-r", "clean@v1").stdout.split())
    assert why.startswith("dropped: step 1 (exact_dedupe@1) of the run that made clean v1 dropped it") and (
        "which is in clean@v1" in why
    )
    held = cat.lineage("source-releases", "--dataset", "clean", "--version", "1").stdout
    assert "clean@v1" in held
    refused = cat.lineage("source-releases", code=3)
    assert "exactly one source" in refused.stderr
    bad = cat.lineage("samples", "clean", "--verdict", "maybe", code=3)
    assert bad.stderr.strip() == "error: verdict must be one of kept, dropped, modified, got 'maybe'"


def test_takedown_request_list_show_and_plan_in_the_terminal(cat: Catalog, tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{sample_id('raw', 'id:curl')}\n\n")
    made = json.loads(
        cat.lineage(
            "takedown", "request", "--kind", "opt_out", "--reason", "asked", "--sample-ids", str(ids), "--json"
        ).stdout
    )
    assert made["state"] == "planned" and made["requested_by"] == getpass.getuser()
    assert made == _json(cat.service.get_takedown(made["id"]))
    plan = cat.lineage("takedown", "plan", str(made["id"])).stdout
    expected = cat.service.plan_takedown(made["id"])  # every release of the module's catalog holds curl
    n = len(expected.releases)
    assert n >= 2 and f"{n} of {expected.releases_checked} live releases hold {n} of the samples it names" in plan
    assert "bytes on local: verified (primary)" in plan and "read by" in plan
    assert json.loads(cat.lineage("takedown", "plan", str(made["id"]), "--json").stdout) == _json(
        cat.service.plan_takedown(made["id"])
    )
    glob = cat.lineage(
        "takedown", "request", "--kind", "copyright", "--reason", "r", "--source", "raw", "--path", "sub/*"
    )
    assert "recorded (copyright)" in glob.stdout
    assert "opt_out" in cat.lineage("takedown", "list").stdout
    assert "asked by" in cat.lineage("takedown", "show", str(made["id"])).stdout
    both = cat.lineage(
        "takedown", "request", "--kind", "other", "--reason", "r", "--source", "raw", "--sample-ids", str(ids), code=3
    )
    assert "exactly one of source, sample_ids, content_hashes, where" in both.stderr
    assert "does not exist" in cat.lineage("takedown", "plan", "999", code=4).stderr
