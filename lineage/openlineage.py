"""Dataset-level lineage in OpenLineage terms: ingest RunEvents, answer Marquez-shaped graph queries.

Every event (from any producer: the openlineage-python client, Spark's or Airflow's integrations,
or our own runner) goes through :func:`ingest`: the event is stored verbatim, and the graph
(jobs, datasets, and which job reads or writes which dataset) is updated. Our pipeline runs are
described by :func:`run_events` and ingested by :func:`emit_run`, through the same function.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring_ascii as _q  # a JSON string literal, in C
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from sqlalchemy import Text, cast, func, select, tuple_
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from lineage import catalog_graph
from lineage.catalog import (
    Catalog,
    Dataset,
    DatasetVersion,
    LineageEdge,
    LineageEvent,
    LineageNode,
    PipelineRun,
    Run,
)
from lineage.catalog.models import as_utc, utcnow
from lineage.errors import NotFound
from lineage.settings import Settings
from storage.names import NO_NUL_PATTERN

log = logging.getLogger(__name__)

PRODUCER = "https://github.com/lineage-ledger/lineage-ledger"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/definitions/RunEvent"
DATASET, JOB = "DATASET", "JOB"
# OpenLineage's kinds, then the catalog's (lineage.catalog_graph); namespaces and names may contain ':'
KINDS = (JOB, *catalog_graph.KINDS)
NODE_ID_PATTERN = r"^(" + "|".join(k.lower() for k in KINDS) + r"):.+:.+$"


_Text = Field(min_length=1, max_length=1000)


Str = Annotated[str, Field(pattern=NO_NUL_PATTERN)]  # stored in text columns

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _rfc3339(value: object) -> object:
    """OpenLineage's ``eventTime`` is an RFC 3339 date-time (JSON Schema ``format: date-time``): a string
    with a time zone. pydantic alone would also take a number, or a numeric string, as a Unix time."""
    if isinstance(value, datetime) or (isinstance(value, str) and _RFC3339.match(value)):
        return value
    raise ValueError("eventTime must be an RFC 3339 date-time with a time zone, e.g. 2026-01-01T00:00:00Z")


EventTime = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


RUN_ID_MAX_LENGTH = 100  # of an OpenLineage runId; our own runs' ids (UUIDs) are shorter


class OLRun(_Open):
    runId: Str = Field(min_length=1, max_length=RUN_ID_MAX_LENGTH)  # noqa: N815 (OpenLineage's field names)
    facets: dict[str, Any] = {}


class OLJob(_Open):
    namespace: Str = Field(min_length=1, max_length=500)
    name: Str = _Text
    facets: dict[str, Any] = {}


class OLDataset(_Open):
    namespace: Str = Field(min_length=1, max_length=500)
    name: Str = _Text
    facets: dict[str, Any] = {}


class RunEvent(_Open):
    """An OpenLineage RunEvent (the fields we use are checked; the rest is kept as sent)."""

    eventType: Literal["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"] = "OTHER"  # noqa: N815
    eventTime: EventTime  # noqa: N815
    run: OLRun
    job: OLJob
    inputs: list[OLDataset] = Field(default=[], max_length=10_000)
    outputs: list[OLDataset] = Field(default=[], max_length=10_000)
    producer: Str = Field(default="", max_length=1000)
    schemaURL: Str = Field(default="", max_length=1000)  # noqa: N815


def node_id(kind: str, namespace: str, name: str) -> str:
    return f"{kind.lower()}:{namespace}:{name}"


Key = tuple[str, str]  # (namespace, name)
_CHUNK = 500  # keys per IN (...) query: far below every backend's limit on bound parameters


def _nodes(session: Session, kind: str, keys: list[Key]) -> dict[Key, LineageNode]:
    """The stored nodes of ``kind`` among ``keys``."""
    found: dict[Key, LineageNode] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        query = select(LineageNode).where(
            LineageNode.kind == kind, tuple_(LineageNode.namespace, LineageNode.name).in_(chunk)
        )
        found.update(((n.namespace, n.name), n) for n in session.scalars(query))
    return found


def _upsert_nodes(
    session: Session, kind: str, facets: dict[Key, dict[str, Any]], run_id: str
) -> dict[Key, LineageNode]:
    """Every node of ``facets``, its facets merged (the latest seen win) and touched; the missing ones
    are created in one flush, and those another writer creates meanwhile are taken from it."""
    now = utcnow()

    def touch(key: Key, node: LineageNode) -> LineageNode:
        if facets[key]:
            node.facets = {**node.facets, **facets[key]}
        if kind == JOB:
            node.latest_run_id = run_id
        node.updated_at = now
        return node

    nodes = {key: touch(key, node) for key, node in _nodes(session, kind, list(facets)).items()}
    while missing := [key for key in facets if key not in nodes]:
        created = [touch(key, LineageNode(kind=kind, namespace=key[0], name=key[1])) for key in missing]
        try:
            with session.begin_nested():
                session.add_all(created)
                session.flush()
        except IntegrityError:
            concurrent = _nodes(session, kind, missing)
            if not concurrent:
                raise
            nodes.update((key, touch(key, node)) for key, node in concurrent.items())
        else:
            nodes.update(zip(missing, created, strict=True))
    return nodes


def _upsert_edges(session: Session, job: LineageNode, wanted: list[tuple[int, str]]) -> None:
    """Edges from ``job`` to each (dataset id, direction): the missing ones created in one flush, the
    others touched."""

    def stored() -> dict[tuple[int, str], LineageEdge]:
        query = select(LineageEdge).where(LineageEdge.job_id == job.id)
        return {(e.dataset_id, e.direction): e for e in session.scalars(query)}

    edges = stored()
    now = utcnow()
    for key in wanted:
        if key in edges:
            edges[key].updated_at = now
    while missing := [key for key in wanted if key not in edges]:
        created = [LineageEdge(job_id=job.id, dataset_id=dataset, direction=way) for dataset, way in missing]
        try:
            with session.begin_nested():
                session.add_all(created)
                session.flush()
        except IntegrityError:
            concurrent = stored()
            if not concurrent.keys() - edges.keys():
                raise
            edges = concurrent
        else:
            edges.update(zip(missing, created, strict=True))


def ingest(session: Session, event: RunEvent | dict[str, Any]) -> LineageEvent:
    """Store one RunEvent and fold its job, inputs and outputs into the graph (a dataset named more
    than once is one node, its facets merged in order)."""
    ev = event if isinstance(event, RunEvent) else RunEvent.model_validate(event)
    row = LineageEvent(
        event_type=ev.eventType,
        event_time=ev.eventTime,
        run_id=ev.run.runId,
        job_namespace=ev.job.namespace,
        job_name=ev.job.name,
        producer=ev.producer,
        payload=ev.model_dump(mode="json", exclude_unset=False),
    )
    session.add(row)
    job_key = (ev.job.namespace, ev.job.name)
    job = _upsert_nodes(session, JOB, {job_key: ev.job.facets}, ev.run.runId)[job_key]
    facets: dict[Key, dict[str, Any]] = {}
    for ds in (*ev.inputs, *ev.outputs):
        key = (ds.namespace, ds.name)
        facets[key] = {**facets.get(key, {}), **ds.facets}
    nodes = _upsert_nodes(session, DATASET, facets, ev.run.runId)
    sides = (("in", ev.inputs), ("out", ev.outputs))
    wanted = dict.fromkeys((nodes[(ds.namespace, ds.name)].id, direction) for direction, side in sides for ds in side)
    _upsert_edges(session, job, list(wanted))
    session.flush()
    return row


# -- our own runs -------------------------------------------------------------------------------
def _file_dataset(uri: str) -> tuple[str, str]:
    """OpenLineage naming for a file location: ``file`` + path, or ``scheme://authority`` + path."""
    if "://" not in uri:
        return "file", uri
    scheme, rest = uri.split("://", 1)
    if scheme == "file":
        return "file", "/" + rest.lstrip("/")
    authority, _, path = rest.partition("/")
    return f"{scheme}://{authority}", path or "/"


PARENT_SCHEMA = "https://openlineage.io/spec/facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet"


def parent_facet(prun: PipelineRun, namespace: str) -> dict[str, Any]:
    """OpenLineage's ``ParentRunFacet`` of a stage's run: the pipeline run and job it belongs to."""
    return {
        "_producer": PRODUCER,
        "_schemaURL": PARENT_SCHEMA,
        "run": {"runId": prun.id},
        "job": {"namespace": namespace, "name": prun.pipeline},
    }


def pipeline_run_events(prun: PipelineRun, settings: Settings) -> list[dict[str, Any]]:
    """START and COMPLETE (or FAIL) of a pipeline run of stages: job ``PIPELINE``, whose children are
    the stages' jobs ``PIPELINE.STAGE``. Its datasets are its stages' (their own events name them)."""
    job = {"namespace": settings.openlineage_namespace, "name": prun.pipeline, "facets": {}}
    run_facets = {"processing_engine": _facet({"name": prun.engine, "version": prun.code_version})}
    base = {"producer": PRODUCER, "schemaURL": SCHEMA_URL, "job": job, "inputs": [], "outputs": []}
    return [
        {**base, "eventType": "START", "eventTime": as_utc(prun.started_at).isoformat(), "run": {"runId": prun.id}},
        {
            **base,
            "eventType": "COMPLETE" if prun.status == "succeeded" else "FAIL",
            "eventTime": as_utc(prun.ended_at or utcnow()).isoformat(),
            "run": {"runId": prun.id, "facets": run_facets},
        },
    ]


def run_events(
    run: Run, dv: DatasetVersion | None, settings: Settings, parent: PipelineRun | None = None
) -> list[dict[str, Any]]:
    """START and COMPLETE (or FAIL) events describing one of our pipeline runs (a stage's carry the
    ``parent`` facet of its pipeline run)."""
    ns = settings.openlineage_namespace
    inputs = []
    for inp in run.inputs:
        if inp.get("kind") == "dataset":
            inputs.append(
                {
                    "namespace": ns,
                    "name": inp["dataset"],
                    "facets": {"version": _facet({"datasetVersion": str(inp["version"])})},
                }
            )
        elif inp.get("uri"):
            namespace, name = _file_dataset(inp["uri"])
            inputs.append({"namespace": namespace, "name": name, "facets": {}})
    outputs = []
    if dv is not None:
        ds: Dataset = dv.dataset
        outputs.append(
            {
                "namespace": ns,
                "name": ds.name,
                "facets": {
                    "version": _facet({"datasetVersion": str(dv.version)}),
                    "schema": _facet(
                        {"fields": [{"name": f["name"], "type": f["type"]} for f in dv.schema.get("fields", [])]}
                    ),
                    "documentation": _facet({"description": ds.description}),
                    "ownership": _facet({"owners": [{"name": ds.owner}] if ds.owner else []}),
                },
                "outputFacets": {"outputStatistics": _facet({"rowCount": dv.row_count, "size": dv.bytes})},
            }
        )
    job = {"namespace": ns, "name": run.pipeline, "facets": {}}
    base = {"producer": PRODUCER, "schemaURL": SCHEMA_URL, "job": job, "inputs": inputs}
    end_type = "COMPLETE" if run.status == "succeeded" else "FAIL"
    run_facets = {"processing_engine": _facet({"name": run.engine, "version": run.code_version})}
    if parent is not None:
        run_facets["parent"] = parent_facet(parent, ns)
    return [
        {
            **base,
            "eventType": "START",
            "eventTime": as_utc(run.started_at).isoformat(),
            "run": {"runId": run.id, "facets": run_facets},
        },
        {
            **base,
            "eventType": end_type,
            "eventTime": as_utc(run.ended_at or utcnow()).isoformat(),
            "run": {"runId": run.id, "facets": run_facets},
            "outputs": outputs,
        },
    ]


def _facet(body: dict[str, Any]) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": "https://openlineage.io/spec/facets/", **body}


def emit_run(catalog: Catalog, settings: Settings, run_id: str) -> int:
    """Ingest the OpenLineage events of a finished run (the same path as ``POST /api/v1/lineage``)."""
    with catalog.session() as s:
        run = s.get(Run, run_id)
        if run is None:
            raise NotFound(f"run {run_id} does not exist")
        dv = s.scalars(select(DatasetVersion).where(DatasetVersion.run_id == run_id)).first()
        parent = s.get(PipelineRun, run.pipeline_run_id) if run.pipeline_run_id else None
        events = run_events(run, dv, settings, parent)
        for event in events:
            ingest(s, event)
    log.info("run %s: %d OpenLineage events ingested", run_id, len(events))
    return len(events)


def emit_after_commit(catalog: Catalog, settings: Settings, run_id: str) -> None:
    """Called by the runner after its catalog commit: the run is already committed, so a failure
    here is logged, not raised."""
    try:
        emit_run(catalog, settings, run_id)
    except Exception:
        log.exception("run %s: could not record its OpenLineage events", run_id)


def emit_pipeline_after_commit(catalog: Catalog, settings: Settings, pipeline_run_id: str) -> None:
    """The events of a finished pipeline run of stages (its own job, the parent of its stages' jobs);
    like :func:`emit_after_commit`, a failure is logged, not raised."""
    try:
        with catalog.session() as s:
            prun = s.get(PipelineRun, pipeline_run_id)
            if prun is None:
                raise NotFound(f"pipeline run {pipeline_run_id} does not exist")
            for event in pipeline_run_events(prun, settings):
                ingest(s, event)
    except Exception:
        log.exception("pipeline run %s: could not record its OpenLineage events", pipeline_run_id)


# -- the graph ----------------------------------------------------------------------------------
@dataclass
class GraphIndex:
    """The whole job/dataset graph in memory; rebuilt when new events arrive.

    Each node's JSON (id, data) is serialised once at load; an answer is assembled from those
    pieces, and the last answers are kept until the graph changes.
    """

    stamp: tuple[Any, ...]
    nodes: dict[int, Any]  # lineage_nodes rows
    by_key: dict[tuple[str, str, str], int]
    ins: dict[int, list[int]] = field(default_factory=dict)  # node -> nodes with an edge into it
    outs: dict[int, list[int]] = field(default_factory=dict)
    _ids: dict[int, str] = field(default_factory=dict)  # JSON-quoted node ids
    _data: dict[int, str] = field(default_factory=dict)  # JSON of each node's "data"
    _answers: dict[tuple[int, int], bytes] = field(default_factory=dict)
    max_node_id: int = 0
    max_edge_id: int = 0
    seen: FirstSeen | None = None  # filled on the first "as of" question (GraphCache.get)
    base: GraphIndex | None = None  # with the catalog's nodes (with_catalog): the OpenLineage part
    overlay: catalog_graph.Overlay | None = None
    overlay_ids: dict[tuple[str, str, str], int] = field(default_factory=dict)  # catalog key -> node id
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def resolve(self, text: str) -> int | None:
        """``KIND:NS:NAME`` (``dataset:``, ``job:``, ``release:``...); namespaces and names may contain ':'."""
        kind, sep, rest = text.partition(":")
        kind = kind.upper()
        if not sep or kind not in KINDS:
            return None
        start = 0
        while True:
            i = rest.find(":", start)
            if i < 0:
                return None
            found = self.by_key.get((kind, rest[:i], rest[i + 1 :]))
            if found is not None:
                return found
            start = i + 1

    def _quoted(self, nid: int) -> str:
        q = self._ids.get(nid)
        if q is None:
            n = self.nodes[nid]
            q = self._ids[nid] = json.dumps(node_id(n.kind, n.namespace, n.name))
        return q

    def _node_json(self, nid: int) -> str:
        d = self._data.get(nid)
        if d is None:
            d = self._data[nid] = _node_json(self.nodes[nid])
        return d

    def subgraph_json(self, start: int, depth: int, as_of: datetime | None = None) -> bytes:
        """Marquez's ``{"graph": [...]}``: nodes within ``depth`` hops, nearest first, edges among them.

        Each node also carries ``upstream`` and ``downstream``: how many neighbours it has on each side in
        the whole graph, so a viewer that loaded one hop knows what expanding a node would add. With
        ``as_of`` only the edges and nodes first seen by then count (``seen`` must be filled: see
        :meth:`GraphCache.get`)."""
        key = (start, depth, as_of)
        cached = self._answers.get(key)
        if cached is not None:
            return cached
        ids = self._ids
        if as_of is None:
            ins_of, outs_of = self.ins, self.outs
        else:
            ins_of, outs_of = self._before(as_of)
        seen = {start: 0}
        queue = deque([start])
        while queue:
            cur = queue.popleft()
            if seen[cur] >= depth:
                continue
            for nxt in (*ins_of.get(cur, ()), *outs_of.get(cur, ())):
                if nxt not in seen:
                    seen[nxt] = seen[cur] + 1
                    queue.append(nxt)
        parts = []
        for nid in sorted(seen, key=lambda n: (seen[n], ids[n])):
            me = ids[nid]
            upstream, downstream = ins_of.get(nid, ()), outs_of.get(nid, ())
            ins = ",".join(['{"origin":' + ids[o] + ',"destination":' + me + "}" for o in upstream if o in seen])
            outs = ",".join(['{"origin":' + me + ',"destination":' + ids[d] + "}" for d in downstream if d in seen])
            parts.append(
                '{"id":'
                + me
                + ',"type":"'
                + self.nodes[nid].kind
                + '","data":'
                + self._node_json(nid)
                + ',"inEdges":['
                + ins
                + '],"outEdges":['
                + outs
                + f'],"upstream":{len(upstream)},"downstream":{len(downstream)}'
                + "}"
            )
        answer = ('{"graph":[' + ",".join(parts) + "]}").encode()
        with self._lock:
            if len(self._answers) >= 256:
                self._answers.clear()
            self._answers[key] = answer
        return answer

    def existed(self, nid: int, as_of: datetime) -> bool:
        """Whether the node had been seen in an event by ``as_of``."""
        assert self.seen is not None
        first = self.seen.nodes.get(nid)
        return first is not None and first <= as_of

    def _before(self, as_of: datetime) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        """The adjacency of the graph as it was at ``as_of``: only edges first seen by then."""
        assert self.seen is not None
        edges = self.seen.edges
        ins: dict[int, list[int]] = {}
        outs: dict[int, list[int]] = {}
        nodes = self.nodes
        for (origin, dest), first in edges.items():
            if first <= as_of and origin in nodes and dest in nodes:  # times may come from a newer index
                outs.setdefault(origin, []).append(dest)
                ins.setdefault(dest, []).append(origin)
        return ins, outs


@dataclass
class FirstSeen:
    """When each node and edge first appeared in an event (``eventTime``, UTC): the graph "as of" a date."""

    nodes: dict[int, datetime]
    edges: dict[tuple[int, int], datetime]  # (origin, destination)
    last_event: int  # the last event id read


def first_seen(session: Session, index: GraphIndex, previous: FirstSeen | None = None) -> FirstSeen:
    """Read the events (after ``previous.last_event``, when given) and note when each node and edge was
    first named. An event's inputs are edges dataset -> job, its outputs job -> dataset."""
    nodes = dict(previous.nodes) if previous else {}
    edges = dict(previous.edges) if previous else {}
    last = previous.last_event if previous else 0
    # only the events the index was built from (its stamp is their last id): a later one may name nodes
    # the index does not have yet, and is read with the next index
    rows = session.execute(
        select(LineageEvent.id, LineageEvent.event_time, LineageEvent.payload)
        .where(LineageEvent.id > last, LineageEvent.id <= (index.stamp[0] or 0))
        .order_by(LineageEvent.id)
    )
    by_key = index.by_key

    def note(table: dict[Any, datetime], key: Any, when: datetime) -> None:
        if key not in table or when < table[key]:
            table[key] = when

    for event_id, when, payload in rows:
        last = event_id
        when = as_utc(when)
        job = by_key.get((JOB, payload["job"]["namespace"], payload["job"]["name"]))
        if job is None:
            continue
        note(nodes, job, when)
        for side in ("inputs", "outputs"):
            for ds in payload.get(side) or ():
                nid = by_key.get((DATASET, ds["namespace"], ds["name"]))
                if nid is None:
                    continue
                note(nodes, nid, when)
                note(edges, (nid, job) if side == "inputs" else (job, nid), when)
    return FirstSeen(nodes, edges, last)


def _node_json(n: Any) -> str:
    """Marquez-like node data from a ``lineage_nodes`` row, formatted directly (this runs for every
    node of a graph answer); the facets are spliced in as stored."""
    ns, name = _q(n.namespace), _q(n.name)
    head = (
        f'{{"id":{{"namespace":{ns},"name":{name}}},"name":{name},"namespace":{ns},'
        f'"updatedAt":"{n.updated_at.isoformat()}"'
    )
    if n.kind not in (DATASET, JOB):  # the catalog's entities (lineage.catalog_graph)
        run = ',"latestRunId":' + _q(n.latest_run_id) if n.latest_run_id else ""  # a run: itself
        return head + ',"type":"' + n.kind + '"' + run + ',"facets":' + n.facets_json + "}"
    if n.kind != DATASET:
        return head + ',"type":"BATCH","latestRunId":' + (_q(n.latest_run_id) if n.latest_run_id else "null") + "}"
    return head + ',"type":"DB_TABLE","facets":' + (n.facets_json or "{}") + "}"


def graph_stamp(session: Session) -> tuple[Any, ...]:
    """Changes whenever an event is ingested: every change to the graph comes with one."""
    return (session.scalar(select(func.max(LineageEvent.id))),)  # ids only grow; events are never deleted


_MAX_DELTA_EVENTS = 1000  # more new events than this: reload the whole graph


def _node_rows(session: Session, *where: Any) -> Any:
    # plain rows, not ORM objects: loading 10,000 nodes this way is several times faster
    t = LineageNode.__table__.c
    columns = (
        t.id,
        t.kind,
        t.namespace,
        t.name,
        t.latest_run_id,
        t.updated_at,
        cast(t.facets, Text).label("facets_json"),
    )
    return session.execute(select(*columns).where(*where))


def _add_edges(index: GraphIndex, rows: Any, copy: bool) -> None:
    copied: set[tuple[str, int]] = set()
    for edge_id, job_id, dataset_id, direction in rows:
        origin, dest = (dataset_id, job_id) if direction == "in" else (job_id, dataset_id)
        for side, node, other in (("out", origin, dest), ("in", dest, origin)):
            table = index.outs if side == "out" else index.ins
            if copy and (side, node) not in copied:  # lists may be shared with the previous index
                table[node] = list(table.get(node, ()))
                copied.add((side, node))
            table.setdefault(node, []).append(other)
        index.max_edge_id = max(index.max_edge_id, edge_id)


def _edge_rows(session: Session, after: int) -> Any:
    e = LineageEdge.__table__.c
    return session.execute(select(e.id, e.job_id, e.dataset_id, e.direction).where(e.id > after).order_by(e.id))


def load_graph(session: Session, stamp: tuple[Any, ...]) -> GraphIndex:
    """The whole graph from the catalog."""
    nodes = {n.id: n for n in _node_rows(session)}
    index = GraphIndex(stamp, nodes, {(n.kind, n.namespace, n.name): i for i, n in nodes.items()})
    index._ids = {i: _q(node_id(n.kind, n.namespace, n.name)) for i, n in nodes.items()}
    index.max_node_id = max(nodes, default=0)
    _add_edges(index, _edge_rows(session, 0), copy=False)
    return index


def refresh_graph(session: Session, previous: GraphIndex, stamp: tuple[Any, ...]) -> GraphIndex | None:
    """The previous graph plus what the events since it changed (new nodes and edges, and nodes
    those events touched), sharing unchanged parts; None when a full reload is simpler."""
    last = previous.stamp[0] or 0
    payloads = list(
        session.scalars(
            select(LineageEvent.payload)
            .where(LineageEvent.id > last)
            .order_by(LineageEvent.id)
            .limit(_MAX_DELTA_EVENTS + 1)
        )
    )
    if len(payloads) > _MAX_DELTA_EVENTS:
        return None
    touched = set()
    for p in payloads:
        keys = [(JOB, p["job"]["namespace"], p["job"]["name"])]
        keys += [(DATASET, d["namespace"], d["name"]) for d in (*p.get("inputs", ()), *p.get("outputs", ()))]
        touched.update(previous.by_key[k] for k in keys if k in previous.by_key)
    index = GraphIndex(stamp, dict(previous.nodes), dict(previous.by_key), dict(previous.ins), dict(previous.outs))
    index._ids, index._data = dict(previous._ids), dict(previous._data)
    index.max_node_id, index.max_edge_id = previous.max_node_id, previous.max_edge_id
    t = LineageNode.__table__.c
    for n in _node_rows(session, (t.id > previous.max_node_id) | t.id.in_(sorted(touched))):
        index.nodes[n.id] = n
        index.by_key[(n.kind, n.namespace, n.name)] = n.id
        index._ids[n.id] = _q(node_id(n.kind, n.namespace, n.name))
        index._data.pop(n.id, None)
        index.max_node_id = max(index.max_node_id, n.id)
    _add_edges(index, _edge_rows(session, previous.max_edge_id), copy=True)
    return index


def with_catalog(base: GraphIndex, overlay: catalog_graph.Overlay, stamp: tuple[Any, ...]) -> GraphIndex:
    """The OpenLineage graph plus the catalog's nodes and edges (a catalog dataset that events also name
    is one node), sharing the base's unchanged adjacency lists."""
    index = GraphIndex(stamp, dict(base.nodes), dict(base.by_key), dict(base.ins), dict(base.outs))
    index._ids, index._data = dict(base._ids), dict(base._data)
    index.max_node_id, index.max_edge_id = base.max_node_id, base.max_edge_id
    index.base, index.overlay = base, overlay
    ids = index.overlay_ids
    for key, node in overlay.nodes.items():
        nid = base.by_key.get(key)
        if nid is None:
            nid = node.id
            index.nodes[nid] = node
            index.by_key[key] = nid
            index._ids[nid] = _q(node_id(*key))
        ids[key] = nid
    links = [(ids.get(o, base.by_key.get(o)), ids.get(d, base.by_key.get(d))) for o, d in overlay.links]
    copied: set[tuple[str, int]] = set()
    for a, b in [(ids[o], ids[d]) for o, d in overlay.edges] + [
        (a, b) for a, b in links if a is not None and b is not None
    ]:
        for side, node, other in (("out", a, b), ("in", b, a)):
            table = index.outs if side == "out" else index.ins
            if (side, node) not in copied:  # the base's lists stay as they are
                table[node] = list(table.get(node, ()))
                copied.add((side, node))
            table[node].append(other)
    return index


def _merged_times(index: GraphIndex, base: FirstSeen) -> FirstSeen:
    """The base's first-seen times plus the catalog entities' creation times."""
    assert index.overlay is not None
    nodes, edges = dict(base.nodes), dict(base.edges)
    ids = index.overlay_ids
    for key, node in index.overlay.nodes.items():
        nid = ids[key]
        if nid not in nodes or node.updated_at < nodes[nid]:
            nodes[nid] = node.updated_at
    for (origin, dest), when in index.overlay.edges.items():
        edges[(ids[origin], ids[dest])] = when
    by_key = index.by_key
    for (origin, dest), when in index.overlay.links.items():
        a, b = ids.get(origin, by_key.get(origin)), ids.get(dest, by_key.get(dest))
        if a is not None and b is not None:  # not before the OpenLineage node was first named
            edges[(a, b)] = max([when, *(t for t in (base.nodes.get(a), base.nodes.get(b)) if t is not None)])
    return FirstSeen(nodes, edges, base.last_event)


class GraphCache:
    """Keeps the last graph while nothing changed (checked with two small queries). After new events
    it applies only what they changed to the OpenLineage part; after a catalog change it reloads the
    catalog part (:mod:`lineage.catalog_graph`); the answer graph is the two merged."""

    def __init__(self, namespace: str = Settings.model_fields["openlineage_namespace"].default) -> None:
        self.namespace = namespace
        self._index: GraphIndex | None = None
        self._base: GraphIndex | None = None  # the OpenLineage part
        self._overlay: catalog_graph.Overlay | None = None
        self._seen: FirstSeen | None = None
        self._lock = threading.Lock()

    def get(self, session: Session, *, with_times: bool = False) -> GraphIndex:
        """The current graph; ``with_times``: with when each node and edge was first seen (read from the
        events once, then only the new ones; the catalog's from its creation times)."""
        events, catalog = graph_stamp(session), catalog_graph.catalog_stamp(session)
        stamp = events + catalog
        index = self._index
        if index is None or index.stamp != stamp:
            with self._lock:
                current = self._index
                if current is None or current.stamp != stamp:
                    base = self._base
                    if base is None or base.stamp != events:
                        refreshed = refresh_graph(session, base, events) if base is not None else None
                        base = self._base = refreshed if refreshed is not None else load_graph(session, events)
                    if self._overlay is None or self._overlay.stamp != catalog:
                        self._overlay = catalog_graph.load_overlay(session, self.namespace, catalog)
                    self._index = with_catalog(base, self._overlay, stamp)
                index = self._index
        if with_times and index.seen is None:
            with self._lock:
                if index.seen is None:
                    base = index.base
                    assert base is not None
                    if base.seen is None:
                        base.seen = self._seen = first_seen(session, base, self._seen)
                    index.seen = _merged_times(index, base.seen)
        return index
