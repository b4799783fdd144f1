"""CLI commands of the HTTP service: ``lineage serve`` and ``lineage token ...``.

Registered by one import in ``lineage/cli/app.py``; heavy imports stay inside the commands.
"""

from __future__ import annotations

import logging
import os
from typing import Annotated

import typer
from rich.table import Table

from lineage.cli.app import _guard, _settings, app, console, err

log = logging.getLogger(__name__)

token_app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API tokens (roles: reader, writer, admin).")
app.add_typer(token_app, name="token")


@app.command()
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
    import uvicorn

    from api.app import create_app
    from api.deps import is_loopback
    from lineage.service.core import Service

    settings = _settings()
    update = {k: v for k, v in {"api_host": host, "api_port": port}.items() if v is not None}
    settings = settings.model_copy(update=update)
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


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Who or what the token is for.")],
    role: Annotated[str, typer.Option(help="reader, writer or admin.")] = "reader",
) -> None:
    """Create a token and print it (once: only its hash is stored)."""
    from lineage.service.core import Service

    service = Service(_settings())
    created = _guard(lambda: service.create_token(name, role, actor=_settings().api_local_user))
    err.print(f"created {created.role} token {created.id} for {created.name!r}; it is shown only now:")
    console.print(created.token, soft_wrap=True)


@token_app.command("list")
def token_list() -> None:
    """List tokens (never their secrets)."""
    from lineage.service.core import Service

    table = Table(title="API tokens")
    for col in ("id", "name", "role", "prefix", "created", "revoked"):
        table.add_column(col)
    for t in Service(_settings()).list_tokens():
        table.add_row(
            str(t.id),
            t.name,
            t.role,
            t.prefix,
            t.created_at.strftime("%Y-%m-%d %H:%M"),
            t.revoked_at.strftime("%Y-%m-%d %H:%M") if t.revoked_at else "",
        )
    console.print(table)


@token_app.command("revoke")
def token_revoke(token_id: Annotated[int, typer.Argument(help="The token's id (see `lineage token list`).")]) -> None:
    """Revoke a token: it stops working at once (within a second on a running server)."""
    from lineage.service.core import Service
    from lineage.service.errors import NotFound

    try:
        t = Service(_settings()).revoke_token(token_id)
    except NotFound as exc:
        err.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(1) from exc
    console.print(f"revoked token {t.id} ({t.name!r})")
