"""Eval sets as versioned assets (issue #19, items 1 and 5) on SQLite and a real PostgreSQL: registered
through the convert operator into a real Delta version, then listed, shown, diffed and deprecated over a
real uvicorn server and in-process, and from the ``lineage`` command in a subprocess."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lineage.client import Client
from lineage.errors import Conflict, Invalid, NotFound
from lineage.service import evalsets
from lineage.service.core import Service
from lineage.settings import Settings
from operators.schema import sample_id
from tests.support.api_world import BACKENDS, ServerThread, make_settings
from tests.support.cli import lineage
from tests.support.evalset_items import LONG_EN, items_v1, write_items

BAD_LINES = ("not json", json.dumps({"id": "q7", "question": "", "choices": [], "answer": "A"}))
FIELDS = ["question", "choices"]


@dataclass
class World:
    settings: Settings
    service: Service
    root: Path
    v1: Path
    v2: Path


def _v2_items() -> list[dict]:
    items = [dict(i) for i in items_v1() if i["id"] != "q3"]  # q3 removed
    items[0]["question"] = LONG_EN + " today"  # q1 changed
    items.append(
        {"id": "q8", "question": "A new question about the boiling point of water at sea level", "answer": "A"}
    )
    return items


@pytest.fixture(scope="module", params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp(f"evalsets-{request.param}")
    settings = make_settings(tmp, request.param, request)
    service = Service(settings)
    v1 = write_items(tmp / "v1" / "mmlu-zh.jsonl", items_v1(), BAD_LINES)
    v2 = write_items(tmp / "v2" / "mmlu-zh.jsonl", _v2_items())
    kw = {"text_fields": FIELDS, "id_field": "id"}
    service.register_evalset("mmlu-zh", str(v1), task="mcq", language="zh", license="MIT", **kw)
    service.register_evalset("mmlu-zh", str(v2), **kw)
    other = write_items(tmp / "other.jsonl", [{"id": "o1", "text": "a separate english benchmark item"}])
    service.register_evalset("other", str(other), version=3, id_field="id")
    service.register_collection("zh-suite", {"members": ["mmlu-zh:v1", "other"]})
    yield World(settings, service, tmp, v1, v2)
    service.close()


def test_register_counts_bad_input_and_quarantines_unreadable_rows(world: World) -> None:
    v1 = world.service.get_evalset_version("mmlu-zh", 1)
    assert v1.ref == "mmlu-zh:v1" and v1.items == "evalset.mmlu-zh:v1" and v1.item_count == 6
    report = v1.report
    assert report.empty_fields == {"choices": 2, "question": 1}  # q4, q5 have no choices; q3 no question
    assert report.duplicate_items == 1  # q5's text is q4's
    assert report.shorter_than_n == 3  # q3 (2 words), q4 and q5 (3 words) < 13
    assert (report.word_ngram, report.char_ngram) == (13, 20)
    assert report.quarantined == {"empty_text": 1, "invalid_json": 1}  # q7 has no text at all; "not json"


def test_items_have_stable_ids_and_the_checked_fields_joined(world: World) -> None:
    """Item ids come from the id field, so they are the same in every version; the text checked is
    question + choices joined, never the answer letter."""
    dv = world.service.get_version("evalset.mmlu-zh", 1)
    texts = world.service.tables.get(dv.tier, dv.data_path, dv.data_delta_version).dataset.to_table().to_pylist()
    by_id = {r["sample_id"]: r for r in texts}
    q1 = by_id[sample_id("mmlu-zh", "id:q1")]
    assert q1["text"] == LONG_EN + "\nMars\nVenus\nJupiter\nSaturn"
    assert json.loads(q1["meta"])["answer"] == "A"  # kept as read, not checked
    diff = world.service.diff_evalset("mmlu-zh", 1, 2)
    assert diff.changed_items == [sample_id("mmlu-zh", "id:q1")]


def test_same_version_twice_is_a_no_op_and_other_content_is_refused(world: World, tmp_path: Path) -> None:
    kw = {"text_fields": FIELDS, "id_field": "id"}
    again = world.service.register_evalset("mmlu-zh", str(world.v1), version=1, **kw)
    assert again.changed is False and again.evalset.ref == "mmlu-zh:v1"
    versions_before = world.service.list_versions("evalset.mmlu-zh").total
    with pytest.raises(Conflict, match="already registered with other content"):
        world.service.register_evalset("mmlu-zh", str(world.v2), version=1, **kw)
    # the same bytes read another way are other content too
    with pytest.raises(Conflict):
        world.service.register_evalset("mmlu-zh", str(world.v1), version=1, text_fields=["question"], id_field="id")
    assert world.service.list_versions("evalset.mmlu-zh").total == versions_before  # nothing was run
    latest = world.service.register_evalset("mmlu-zh", str(world.v2), **kw)  # no version: same as the latest
    assert latest.changed is False and latest.evalset.version == 2


def test_registering_is_in_process_only_and_refuses_bad_options(world: World, server: ServerThread) -> None:
    with Client(server.url) as c, pytest.raises(Invalid, match="in-process only"):
        c.register_evalset("x", str(world.v1))
    with pytest.raises(Invalid, match="unknown task"):
        world.service.register_evalset("x", str(world.v1), task="essay")
    with pytest.raises(Invalid, match="eval set name"):
        world.service.register_evalset("bad name", str(world.v1))
    with pytest.raises(NotFound):
        world.service.register_evalset("x", str(world.root / "missing.jsonl"))


def test_list_show_and_versions(client: Client) -> None:
    names = {es.name: es for es in client.list_evalsets().items}
    assert set(names) >= {"mmlu-zh", "other", "zh-suite"}
    assert names["mmlu-zh"].versions == [1, 2] and names["mmlu-zh"].task == "mcq"
    assert names["mmlu-zh"].language == "zh" and names["mmlu-zh"].license == "MIT"
    assert names["other"].versions == [3]  # numbered by who registered it
    assert names["zh-suite"].kind == "collection"
    latest = client.get_evalset_version("mmlu-zh")
    assert latest.ref == "mmlu-zh:v2" and latest.item_count == 6
    assert [v.ref for v in client.list_evalset_versions("mmlu-zh")] == ["mmlu-zh:v1", "mmlu-zh:v2"]
    with pytest.raises(NotFound):
        client.get_evalset_version("mmlu-zh:v9")
    with pytest.raises(Invalid, match="release tags"):
        client.get_evalset_version("mmlu-zh@v1")


def test_diff_between_versions(client: Client) -> None:
    d = client.diff_evalset("mmlu-zh:v1", "mmlu-zh:v2")
    assert (d.base, d.target) == ("mmlu-zh:v1", "mmlu-zh:v2")
    assert d.added_items == [sample_id("mmlu-zh", "id:q8")]
    assert d.removed_items == [sample_id("mmlu-zh", "id:q3")]
    assert d.changed_items == [sample_id("mmlu-zh", "id:q1")]
    assert (d.added, d.removed, d.changed) == (1, 1, 1)
    assert client.diff_evalset("mmlu-zh:v2", "mmlu-zh:v2").added == 0


def test_collection_pins_members_at_their_versions(world: World, client: Client) -> None:
    suite = client.get_evalset_version("zh-suite:v1")
    assert suite.members == ["mmlu-zh:v1", "other:v3"]  # "other" alone pinned at its latest, then
    assert suite.item_count == 6 + 1 and suite.items is None
    again = client.register_collection("zh-suite", ["mmlu-zh:v1", "other:v3"], version=1)
    assert again.changed is False
    with pytest.raises(Conflict):
        client.register_collection("zh-suite", ["mmlu-zh:v2"], version=1)
    with pytest.raises(NotFound):
        client.register_collection("zh-suite", ["nope:v1"])
    with pytest.raises(Conflict, match="collection"):
        client.register_collection("mmlu-zh", ["other:v3"])  # an item set is not a collection
    with world.service.catalog.session() as s:
        assert [v.ref for v in evalsets.leaves(s, "zh-suite:v1")] == ["mmlu-zh:v1", "other:v3"]


def test_nested_collections_and_deprecation(world: World, client: Client) -> None:
    name = f"all-{client._http is None}"  # one per client: the world is shared
    client.register_collection(name, ["zh-suite:v1", "mmlu-zh:v2"])
    with world.service.catalog.session() as s:
        assert [v.ref for v in evalsets.leaves(s, f"{name}:v1")] == ["mmlu-zh:v1", "other:v3", "mmlu-zh:v2"]
    gone = client.deprecate_evalset(name, reason="superseded")
    assert gone.state == "deprecated" and gone.deprecation_reason == "superseded"
    assert client.deprecate_evalset(name).deprecation_reason == "superseded"  # again: unchanged
    assert name in {es.name for es in client.list_evalsets(state="deprecated").items}
    assert client.get_evalset_version(f"{name}:v1").state == "deprecated"  # still readable
    with pytest.raises(Conflict, match="deprecated"):
        client.register_collection(name, ["mmlu-zh:v1"])


def test_cli_verbs(world: World, tmp_path: Path) -> None:
    """The ``lineage evalset`` verbs in a subprocess, on the same catalog, printing the service's models."""
    env = {"LINEAGE_CATALOG_URL": world.settings.catalog_url or ""}
    home = world.settings.home
    items = write_items(tmp_path / "cli.jsonl", [{"id": "c1", "q": "a question typed at the command line"}])
    out = lineage(home, "evalset", "register", "cli-set", str(items), "--text-fields", "q", "--id-field", "id",
                  "--task", "qa", "--version", "4", "--json", **env)  # fmt: skip
    registered = json.loads(out.stdout)
    assert registered["changed"] is True and registered["evalset"]["ref"] == "cli-set:v4"
    again = lineage(home, "evalset", "register", "cli-set", str(items), "--text-fields", "q", "--id-field", "id",
                    "--version", "4", **env)  # fmt: skip
    assert "unchanged" in again.stdout
    shown = json.loads(lineage(home, "evalset", "show", "cli-set:v4", "--json", **env).stdout)
    assert shown["item_count"] == 1 and shown["text_fields"] == ["q"]
    listed = json.loads(lineage(home, "evalset", "list", "--json", **env).stdout)
    assert "cli-set" in {es["name"] for es in listed["items"]}
    diff = json.loads(lineage(home, "evalset", "diff", "mmlu-zh:v1", "mmlu-zh:v2", "--json", **env).stdout)
    assert diff["added"] == 1
    collected = json.loads(lineage(home, "evalset", "collect", "cli-suite", "cli-set", "--json", **env).stdout)
    assert collected["evalset"]["members"] == ["cli-set:v4"]
    assert "deprecated" in lineage(home, "evalset", "deprecate", "cli-suite", "--reason", "test", **env).stdout
    refused = lineage(home, "evalset", "register", "cli-set", str(world.v1), "--version", "4", check=False, **env)
    assert refused.returncode != 0 and "already registered with other content" in refused.stderr + refused.stdout
    missing = lineage(home, "evalset", "show", "nope:v1", check=False, **env)
    assert missing.returncode != 0 and "does not exist" in missing.stderr + missing.stdout
