"""What every ``lineage`` command shares: the root app's make-up (``--verbose``, ``--version``), the
consoles, settings, the service, and :func:`guard`, which turns a refusal into one line and
its exit code.

Commands that read or change the catalog call the service (:func:`open_service`), as the HTTP API and the
SDK do, and print its models: as tables, or with ``--json`` as the model's JSON, the body the HTTP API
answers (a refusal under ``--json`` prints the API's error body ``{detail, code}`` on stdout as well).

The command modules import from here; :mod:`lineage.cli.main` builds the app and puts their verbs on
it. Everything here is cheap to import: ``lineage --help`` imports it (and every command module), so
anything that loads SQLAlchemy, DuckDB, deltalake or numba is imported inside the function that needs it.
"""

from __future__ import annotations

import gc
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from lineage.errors import GateFailed, LineageError, exit_code, translate
from lineage.settings import Settings, get_settings
from lineage.version import code_version
from operators.numba_start_up import skip_blas_probe

if TYPE_CHECKING:
    from pydantic import BaseModel

    from lineage.service.core import Service
    from lineage.service.schemas import Page

T = TypeVar("T")

AsJson = Annotated[bool, typer.Option("--json", help="Print the service's answer as JSON (the HTTP API's body).")]
"""The ``--json`` flag of every command that prints a service answer."""

# Logs and CI output are not terminals: give tables room instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True)


def _print_version(show: bool) -> None:
    if show:
        console.print(f"lineage-ledger {code_version()}", highlight=False)
        raise typer.Exit()


def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")] = False,
    _version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


_WHOLE_PROCESS = [False]  # set by the console script: this process runs one command and exits


def as_whole_process() -> None:
    """Called by :func:`lineage.cli.main.main`: the process is this command's (see :func:`freeze_start_up`).
    numba's CPU target, if a kernel loads it, skips its SciPy BLAS probe (0.13 s; ``operators/numba_start_up.py``)."""
    _WHOLE_PROCESS[0] = True
    skip_blas_probe()


def freeze_start_up() -> None:
    """Move every object alive now to the collector's permanent generation (``gc.freeze``).

    What start-up made (some 800 modules' functions and classes, pydantic and SQLAlchemy metadata) lives
    until exit, yet each full collection walks it again, and the interpreter's exit runs several: about
    0.05 s of collections during a takedown apply and 0.25 s at its exit. Frozen objects are still freed
    by reference counting as before. Only in the ``lineage`` process itself: a test's in-process runner
    keeps its own objects collectable."""
    if _WHOLE_PROCESS[0]:
        gc.freeze()


def pyarrow_without_pandas() -> None:
    """In the ``lineage`` process, once pyarrow is imported: pyarrow stops importing pandas to convert Python
    values (0.11-0.14 s of a verb's start-up; :mod:`storage.arrow_pandas`). A test's in-process runner keeps
    pyarrow as it is."""
    if _WHOLE_PROCESS[0]:
        from storage.arrow_pandas import defer_pandas  # start-up: pyarrow, which the caller has imported

        defer_pandas()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for a block of start-up imports, in the ``lineage`` process only.

    Importing the service makes several hundred thousand objects (classes, functions, pydantic and
    SQLAlchemy metadata), none of them garbage, and the collector, run every 700 new objects, walked the
    young ones again and again: 0.1-0.35 s of the import's 1.0-1.4 s on 2 cores. They are frozen before the
    collector is on again: left young, all of them were walked once more by the first collection after the
    block (about 0.05 s in a takedown apply)."""
    if not _WHOLE_PROCESS[0] or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def new_app() -> typer.Typer:
    """The root ``lineage`` app, with no verbs yet (:func:`lineage.cli.main.build_app` adds them)."""
    return typer.Typer(
        no_args_is_help=True,
        help="Versioned LLM training data with sample-level lineage.",
        callback=_root,
        pretty_exceptions_enable=False,  # an unexpected error prints a plain traceback, not pages of locals
    )


def new_group(parent: typer.Typer, name: str, help: str) -> typer.Typer:
    """A verb group (``lineage release ...``) on ``parent``."""
    group = typer.Typer(no_args_is_help=True, help=help)
    parent.add_typer(group, name=name)
    return group


def load_settings() -> Settings:
    return get_settings()


@contextmanager
def open_service() -> Iterator[Service]:
    """The service over the configured catalog, closed afterwards: what every catalog command calls."""
    with collector_paused():
        from lineage.service.core import Service  # start-up: SQLAlchemy, DuckDB, deltalake
    freeze_start_up()
    pyarrow_without_pandas()
    service = guard(lambda: Service(load_settings()))
    try:
        yield service
    finally:
        service.close()


def every(list_page: Callable[..., Page[T]], *args: Any, at_most: int | None = None, **kw: Any) -> Page[T]:
    """All pages of a service list (or its first ``at_most`` items) as one page: the JSON shape of one page
    of the HTTP answer, its ``total`` the list's. The CLI prints whole lists unless told otherwise."""
    from lineage.service.core import MAX_LIMIT  # start-up: SQLAlchemy, DuckDB, deltalake

    items: list[T] = []
    while True:
        want = MAX_LIMIT if at_most is None else min(MAX_LIMIT, at_most - len(items))
        page = guard(partial(list_page, *args, limit=want, offset=len(items), **kw))
        items += page.items
        if not page.items or len(items) >= page.total or (at_most is not None and len(items) >= at_most):
            return type(page)(items=items, total=page.total, limit=len(items), offset=0)


def print_json(model: BaseModel) -> None:
    """``--json``: the model as the HTTP API answers it (field aliases, ISO times)."""
    write_json(console, json.loads(model.model_dump_json(by_alias=True)))


def print_list_json(models: Sequence[BaseModel]) -> None:
    """``--json`` of an answer that is a plain list (no page), as the HTTP API sends it."""
    write_json(console, [m.model_dump(mode="json", by_alias=True) for m in models])


def write_json(target: Console, data: Any) -> None:
    """``data`` as rich's ``print_json`` prints it (indented by 2, non-ASCII as is). Coloured on a terminal;
    piped (a script, CI) the same text is written as it is: rich's highlighter and renderer cost about 0.1 s
    on a long answer (a takedown's thousand sample ids), for colours nobody sees."""
    if target.is_terminal:
        target.print_json(data=data)
        return
    target.file.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def error_body(error: LineageError) -> dict[str, Any]:
    """A refusal as the HTTP API's error body: ``detail`` and ``code``, and a failed gate's ``failures``."""
    body: dict[str, Any] = {"detail": str(error), "code": error.code}
    if isinstance(error, GateFailed):
        body["failures"] = error.failures
    return body


def report(error: LineageError) -> int:
    """Print the error as one red line (a failed gate: one more line per failed condition) and return its
    exit code from the errors table."""
    err.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
    return exit_code(error)


def fail(error: LineageError, *, as_json: bool = False) -> NoReturn:
    """Refuse: :func:`report` the error (under ``--json`` also its :func:`error_body` on stdout) and exit
    with its code."""
    if as_json:
        write_json(console, error_body(error))
    raise typer.Exit(report(error))


def guard(action: Callable[[], T], *, as_json: bool = False) -> T:
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
        fail(error, as_json=as_json)
