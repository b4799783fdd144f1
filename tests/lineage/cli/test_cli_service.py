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


def _json(model: BaseModel) -> Any:
    return json.loads(model.model_dump_json(by_alias=True))


ALL = {"limit": 1000, "offset": 0}
READS: dict[str, tuple[list[str], Callable[[Service], BaseModel], bool]] = {
    # name: (arguments, the service call it prints, whether that answer is a page)
    "datasets": (["datasets"], lambda s: s.list_datasets(**ALL), True),
    "versions": (["datasets", "clean"], lambda s: s.list_versions("clean", **ALL), True),
    "release list": (["release", "list"], lambda s: s.list_releases(**ALL), True),
    "release show": (["release", "show", "clean@v1"], lambda s: s.get_release("clean@v1"), False),
    "runs": (["runs", "--dataset", "clean"], lambda s: s.list_runs(dataset="clean", **ALL), True),
    "diff": (["diff", "clean@v1", "clean:v2"], lambda s: s.diff("clean@v1", "clean:v2"), False),
    "sample": (
        ["sample", sample_id("raw", "id:libc6-again")],
        lambda s: s.sample_lineage(sample_id("raw", "id:libc6-again")),
        False,
    ),
}


@pytest.mark.parametrize("name", READS)
def test_every_read_command_prints_the_services_model_as_json(cat: Catalog, name: str) -> None:
    args, call, paged = READS[name]
    printed = json.loads(cat.lineage(*args, "--json").stdout)
    expected = _json(call(cat.service))
    if paged:  # every page at once: the items and the total of the HTTP answer, in one page
        assert printed == {**expected, "limit": expected["total"]} and printed["total"] == len(printed["items"]) > 0
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
