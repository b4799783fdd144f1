"""The app factory: ``uvicorn --factory api.app:create_app`` or ``lineage serve``.

Under the bare factory single-user mode is off unless ``LINEAGE_SINGLE_USER=true``: wherever it is
bound, every request needs a token (``lineage serve`` on a loopback address turns the mode on).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute

from api import errors, web
from api.routers import (
    datasets,
    evalsets,
    exports,
    lineage,
    placement,
    releases,
    runs,
    samples,
    search,
    system,
    takedowns,
    tokens,
)
from lineage.service.core import Service
from lineage.settings import Settings, get_settings

API_PREFIX = "/api/v1"


def operation_id(route: APIRoute) -> str:
    """An operation's id is its route function's name, which is the SDK method's (``list_datasets``)."""
    return route.name


def create_app(settings: Settings | None = None, service: Service | None = None) -> FastAPI:
    service = service or Service(settings or get_settings())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if service.settings.api_warm_on_start:
            threading.Thread(target=service.warm, name="warm", daemon=True).start()
        yield
        service.close()

    app = FastAPI(
        title="lineage-ledger",
        summary="Data lineage and dataset versioning for LLM training data.",
        version="1",
        lifespan=lifespan,
        responses=errors.ERROR_RESPONSES,
        generate_unique_id_function=operation_id,
        docs_url=None,  # /docs and /redoc are api.web's: their scripts from an installed package, not a CDN
        redoc_url=None,
    )
    app.state.service = service
    errors.install(app)
    for module in (
        system,
        datasets,
        evalsets,
        runs,
        releases,
        exports,
        placement,
        samples,
        search,
        takedowns,
        lineage,
        tokens,
    ):
        app.include_router(module.router, prefix=API_PREFIX)
    web.install(app)
    return app
