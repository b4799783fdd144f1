"""``lineage serve``: the HTTP API over the catalog the CLI uses."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from lineage.cli.app import err, guard, load_settings


def serve(
    host: Annotated[
        str | None,
        typer.Option(
            help="Address to bind (default: settings api_host, 127.0.0.1). On a loopback address single-user "
            "mode is on unless the setting single_user says otherwise."
        ),
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: settings api_port).")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (more than 1 uses more cores).")] = 1,
) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs) over the catalog the CLI uses."""
    # start-up: uvicorn, FastAPI and the service (SQLAlchemy, DuckDB, deltalake)
    import uvicorn

    from api.app import create_app
    from api.deps import is_loopback
    from lineage.service.core import Service

    settings = load_settings()
    update = {k: v for k, v in {"api_host": host, "api_port": port}.items() if v is not None}
    settings = guard(lambda: settings.with_values(**update))  # a port out of range: one line, not a crash
    if settings.single_user is None:  # unset: on where only this machine can connect
        settings = settings.model_copy(update={"single_user": is_loopback(settings.api_host)})
    service = Service(settings)
    if settings.single_user and not service.tokens.any_exist():
        err.print(
            f"[yellow]single-user mode:[/] no token exists, so requests from loopback addresses need no token and "
            f"act as {settings.api_local_user!r}; `lineage token create` turns auth on"
        )
    else:
        err.print("every request needs a bearer token (`lineage token create`)")
    if workers == 1:
        uvicorn.run(create_app(settings, service), host=settings.api_host, port=settings.api_port, log_level=log_level)
        return
    service.close()
    # each worker process builds its own app from the environment: pass the bound address and the mode on
    os.environ["LINEAGE_API_HOST"], os.environ["LINEAGE_API_PORT"] = settings.api_host, str(settings.api_port)
    os.environ["LINEAGE_SINGLE_USER"] = str(settings.single_user).lower()
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=settings.api_host,
        port=settings.api_port,
        log_level=log_level,
        workers=workers,
    )
