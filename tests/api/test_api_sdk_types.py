"""The typed SDK: every ``Client`` method answers a pydantic model (no ``Any``), and the same model, equal
field for field, in-process (the service's answer) and over HTTP (the JSON validated into it)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from lineage.client import Client
from lineage.service import schemas as S
from tests.support.api_world import ServerThread, World

NOT_MODELS = {"close": type(None), "iter_all": None}  # iter_all yields the items of the pages it is given


def _methods() -> dict[str, Callable[..., Any]]:
    return {n: m for n, m in vars(Client).items() if inspect.isfunction(m) and not n.startswith("_")}


def _mentions_any(annotation: Any) -> bool:
    if annotation is Any:
        return True
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):  # Page[X]: a class of its own
        args = annotation.__pydantic_generic_metadata__["args"]
    return any(_mentions_any(a) for a in args)


def _is_model(annotation: Any) -> bool:
    if typing.get_origin(annotation) is list:
        (annotation,) = typing.get_args(annotation)
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


@pytest.mark.parametrize("name", sorted(_methods()))
def test_every_client_method_is_typed_without_any(name: str) -> None:
    hints = typing.get_type_hints(_methods()[name])
    returns = hints.pop("return")
    assert not _mentions_any(returns), f"Client.{name} returns {returns}"
    bare = [p for p, a in hints.items() if a is Any]
    assert not bare, f"Client.{name} takes untyped {bare}"
    if name in NOT_MODELS:
        assert NOT_MODELS[name] is None or returns is NOT_MODELS[name]
    else:
        assert _is_model(returns), f"Client.{name} returns {returns}, not a pydantic model (or a list of them)"


def test_the_check_fails_on_any() -> None:
    """The check above can fail: ``Page[Any]`` and ``list[Any]`` are caught, ``Page[Dataset]`` is not."""
    assert _mentions_any(S.Page[Any]) and _mentions_any(list[Any]) and _mentions_any(dict[str, Any])
    assert not _mentions_any(S.Page[S.DatasetOut]) and not _mentions_any(list[S.ReplicaOut])


Call = Callable[[Client, World], Any]
CALLS: dict[str, Call] = {
    "Page[Dataset]": lambda c, w: c.list_datasets(),
    "Dataset": lambda c, w: c.get_dataset("clean"),
    "Page[DatasetVersion]": lambda c, w: c.list_versions("clean"),
    "DatasetVersion": lambda c, w: c.get_version("clean", 2),
    "Diff": lambda c, w: c.diff("clean@v1", "clean"),
    "Page[Run]": lambda c, w: c.list_runs(dataset="clean"),
    "Run": lambda c, w: c.get_run(c.list_runs(dataset="clean").items[0].id),
    "Page[Release]": lambda c, w: c.list_releases(),
    "Release": lambda c, w: c.get_release("clean@v2"),
    "Manifest": lambda c, w: c.get_manifest("clean@v2"),
    "Quality": lambda c, w: c.get_quality("clean@v2"),
    "list[Replica]": lambda c, w: c.list_replicas("clean@v2"),
    "Page[ReleaseRead]": lambda c, w: c.list_reads("clean@v2"),
    "SampleLineage": lambda c, w: c.sample_lineage(w.duplicate, include_text=True),
    "WhyNot": lambda c, w: c.why_not(w.short, "clean@v2"),
    "SourceReleases": lambda c, w: c.source_releases(dataset="clean", version=1),
    "SourceReleases(uri)": lambda c, w: c.source_releases(uri=c.sample_lineage(w.kept).source.uri),  # type: ignore[union-attr]
    "Graph": lambda c, w: c.lineage_graph("dataset:lineage-ledger:clean", depth=2),
    "Health": lambda c, w: c.health(),
}


@pytest.mark.parametrize("what", CALLS)
def test_the_same_model_in_process_and_over_http(world: World, server: ServerThread, what: str) -> None:
    world.service.record_read("clean@v2", {"job": "typed", "world_size": 1, "rank": 0})
    local = CALLS[what](Client(service=world.service), world)
    with Client(server.url) as remote_client:
        remote = CALLS[what](remote_client, world)
    items = (local, remote) if isinstance(local, BaseModel) else (*local, *remote)
    assert items and all(isinstance(i, BaseModel) for i in items), f"{what}: {type(local)}"
    assert type(remote) is type(local) and remote == local
    if isinstance(local, S.Page):
        assert local.items, f"{what}: an empty page proves little"


def test_a_manifest_model_keeps_the_stored_manifest(world: World) -> None:
    """``as_dict()`` is the manifest as stored, so its content digest is the release's."""
    from lineage.releases import content_digest

    manifest = Client(service=world.service).get_manifest("clean@v2")
    assert manifest.qc is not None and manifest.qc.samples == manifest.row_count == 4
    assert manifest.qc.length_histogram[0].from_ == 0 and "from" in manifest.as_dict()["qc"]["length_histogram"][0]
    assert content_digest(manifest.as_dict()) == world.service.get_release("clean@v2").content_digest
