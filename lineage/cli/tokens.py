"""``lineage token create/list/revoke``: the HTTP API's bearer tokens (roles: reader, writer, admin)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from lineage.cli.app import console, err, guard, load_settings


def token_create(
    name: Annotated[str, typer.Argument(help="Who or what the token is for.")],
    role: Annotated[str, typer.Option(help="reader, writer or admin.")] = "reader",
) -> None:
    """Create a token and print it (once: only its hash is stored)."""
    from lineage.service.core import Service  # start-up: SQLAlchemy, DuckDB, deltalake

    settings = load_settings()
    service = Service(settings)
    created = guard(lambda: service.create_token(name, role, actor=settings.api_local_user))
    err.print(f"created {created.role} token {created.id} for {created.name!r}; it is shown only now:")
    console.print(created.token, soft_wrap=True)


def token_list() -> None:
    """List tokens (never their secrets)."""
    from lineage.service.core import Service  # start-up: SQLAlchemy, DuckDB, deltalake

    table = Table(title="API tokens")
    for col in ("id", "name", "role", "prefix", "created", "revoked"):
        table.add_column(col)
    for t in Service(load_settings()).list_tokens():
        table.add_row(
            str(t.id),
            t.name,
            t.role,
            t.prefix,
            t.created_at.strftime("%Y-%m-%d %H:%M"),
            t.revoked_at.strftime("%Y-%m-%d %H:%M") if t.revoked_at else "",
        )
    console.print(table)


def token_revoke(token_id: Annotated[int, typer.Argument(help="The token's id (see `lineage token list`).")]) -> None:
    """Revoke a token: it stops working at once (within a second on a running server)."""
    from lineage.service.core import Service  # start-up: SQLAlchemy, DuckDB, deltalake

    t = guard(lambda: Service(load_settings()).revoke_token(token_id))
    console.print(f"revoked token {t.id} ({t.name!r})")
