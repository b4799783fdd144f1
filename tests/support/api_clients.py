"""The fixtures every test of the three surfaces uses: a real uvicorn server over a module's ``world`` (any
object with ``settings`` and ``service``), and the SDK over it and in-process. A test module (or conftest)
that defines ``world`` gets them: the root conftest loads this module as a plugin (a module that defines its
own ``client`` or ``server`` shadows these)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lineage.client import Client
from tests.support.api_world import ServerThread


@pytest.fixture(scope="module")
def server(world: Any) -> Iterator[ServerThread]:
    from api.app import create_app

    with ServerThread(create_app(world.settings, world.service)) as srv:
        yield srv


@pytest.fixture(params=["http", "local"])
def client(request: pytest.FixtureRequest, world: Any) -> Iterator[Client]:
    """The SDK over the real uvicorn server, and in-process over the same service."""
    if request.param == "http":
        srv: ServerThread = request.getfixturevalue("server")
        with Client(srv.url) as c:
            yield c
    else:
        yield Client(service=world.service)
