"""OpenAPI operationIds are the SDK's method names: an operation has one name on every surface (the
route function, the operationId, the ``Client`` method)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from api.app import create_app
from lineage.client import Client
from lineage.service.operations import ENDPOINTS
from lineage.settings import Settings


def _operation_ids(tmp_path: Path) -> dict[str, str]:
    app = create_app(Settings(home=tmp_path / "home"))
    paths = app.openapi()["paths"]
    return {op["operationId"]: f"{method.upper()} {path}" for path, ops in paths.items() for method, op in ops.items()}


def test_every_operation_id_is_a_client_method(tmp_path: Path) -> None:
    methods = {name for name, member in vars(Client).items() if inspect.isfunction(member) and name[0] != "_"}
    operations = _operation_ids(tmp_path)
    assert len(operations) == len(ENDPOINTS)  # as many as the document has operations: the ids are unique
    missing = {op: where for op, where in operations.items() if op not in methods}
    assert not missing, f"operations whose operationId is no Client method: {missing}"
    assert {"list_datasets", "create_release", "publish_release", "diff", "health"} <= set(operations)


@pytest.mark.parametrize(("old", "new"), [("datasets", "list_datasets"), ("release", "get_release")])
def test_a_former_method_name_still_works_with_a_deprecation_warning(settings: Settings, old: str, new: str) -> None:
    client = Client(settings=settings)
    try:
        with pytest.warns(DeprecationWarning, match=f"Client.{old} is deprecated: use Client.{new}"):
            method = getattr(client, old)
        assert method == getattr(client, new)
    finally:
        client.close()
