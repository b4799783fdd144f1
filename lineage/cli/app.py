"""What every ``lineage`` command shares: the root app's make-up, the consoles, settings and catalog,
and :func:`guard`, which turns a refusal into one line and its exit code.

The command modules import from here; :mod:`lineage.cli.main` builds the app and puts their verbs on
it. Everything here is cheap to import: ``lineage --help`` imports it (and every command module), so
anything that loads SQLAlchemy, DuckDB, deltalake or numba is imported inside the function that needs it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from lineage.errors import LineageError, exit_code, translate
from lineage.settings import Settings, get_settings

if TYPE_CHECKING:
    from lineage.catalog import Catalog

T = TypeVar("T")

# Logs and CI output are not terminals: give tables room instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True)


def _configure_logging(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


def new_app() -> typer.Typer:
    """The root ``lineage`` app, with no verbs yet (:func:`lineage.cli.main.build_app` adds them)."""
    return typer.Typer(
        no_args_is_help=True,
        help="Versioned LLM training data with sample-level lineage.",
        callback=_configure_logging,
        pretty_exceptions_enable=False,  # an unexpected error prints a plain traceback, not pages of locals
    )


def new_group(parent: typer.Typer, name: str, help: str) -> typer.Typer:
    """A verb group (``lineage release ...``) on ``parent``."""
    group = typer.Typer(no_args_is_help=True, help=help)
    parent.add_typer(group, name=name)
    return group


def load_settings() -> Settings:
    return get_settings()


def open_catalog() -> Catalog:
    from lineage.catalog import Catalog  # start-up: SQLAlchemy

    return Catalog(load_settings().catalog_url or "")


def fail(error: LineageError) -> NoReturn:
    """Print the error as one red line (for logs and grep) and exit with its code from the errors table."""
    err.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
    raise typer.Exit(exit_code(error))


def guard(action: Callable[[], T]) -> T:
    """Run ``action``; a refusal becomes one clear line and the exit code of its class in
    :data:`lineage.errors.TABLE` instead of a traceback: the errors tree (classified by
    :func:`lineage.errors.translate`, as the API and the SDK do). Anything else is a bug and prints
    its traceback (exit 1)."""
    try:
        return action()
    except Exception as exc:
        error = translate(exc)
        if error is None:
            raise
        fail(error)
