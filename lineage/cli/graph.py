"""``lineage lineage-event`` and ``lineage lineage-graph``: dataset-level lineage in OpenLineage's terms. An
event from another tool (a Spark or Airflow job that read or wrote a dataset) joins the graph that runs and
releases make; the graph is Marquez's shape, as the HTTP API's ``GET /lineage`` answers it."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, guard, open_service, print_json
from lineage.errors import Invalid, MissingFile


def _read_event(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``-``: standard input); the service checks that it is a RunEvent."""
    where = "standard input" if str(path) == "-" else str(path)
    if where != "standard input" and not path.is_file():
        raise MissingFile(f"no such file: {path}")
    text = sys.stdin.read() if where == "standard input" else path.read_text(encoding="utf-8")
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(f"{where} is not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise Invalid(f"{where} holds JSON but not an object: an OpenLineage RunEvent is one")
    return event


def lineage_event(
    path: Annotated[Path, typer.Argument(help="An OpenLineage RunEvent as JSON (- reads standard input).")],
    as_json: AsJson = False,
) -> None:
    """Add an OpenLineage run event (START, COMPLETE, ...) to the lineage graph."""
    event = guard(lambda: _read_event(path), as_json=as_json)
    with open_service() as service:
        accepted = guard(lambda: service.ingest_event(event), as_json=as_json)
    if as_json:
        print_json(accepted)
        return
    console.print(
        f"accepted {accepted.event_type} of run {accepted.run_id} ({escape(accepted.job)}): "
        f"{accepted.inputs} inputs, {accepted.outputs} outputs"
    )


def lineage_graph(
    node_id: Annotated[
        str, typer.Argument(help="dataset:NAMESPACE:NAME or job:NAMESPACE:NAME (e.g. dataset:lineage:debian-clean).")
    ],
    depth: Annotated[int, typer.Option(help="Hops from the node, 0-100.")] = 20,
    as_of: Annotated[
        datetime | None, typer.Option("--as-of", help="The graph as it was then (e.g. 2026-01-31T12:00; UTC).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """The lineage graph around a dataset or job: every node within DEPTH hops, with its edges."""
    with open_service() as service:
        graph = guard(lambda: service.lineage_graph(node_id, depth, as_of), as_json=as_json)
    if as_json:
        print_json(graph)
        return
    table = Table(title=f"Lineage around {escape(node_id)} ({len(graph.graph)} nodes)")
    for col in ("node", "type", "upstream", "downstream"):
        table.add_column(col, overflow="fold")
    for node in graph.graph:
        table.add_row(
            escape(node.id),
            node.type.lower(),
            escape(", ".join(e.origin for e in node.inEdges)),
            escape(", ".join(e.destination for e in node.outEdges)),
        )
    console.print(table)
