"""One search box over the catalog: dataset and release names, run ids, sample ids, source URIs and eval
sets, answered by kind (what the web view's search page shows, and ``lineage search``).

Names and ids match by case-insensitive substring (run ids by prefix); a sample id only exactly (a
sample id is a hash: a substring of one means nothing), looked up in the tables as ``sample_lineage``
does; a source URI is any file dataset of the lineage graph whose location contains the text. Each kind
answers at most ``limit`` hits, and says how many it found in all. A text with a "/" is also looked up as
a source file's URI in the releases (a file inside a folder a run read is no node of the graph).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlalchemy import func, or_, select

from lineage import openlineage
from lineage.catalog import Catalog, Dataset, EvalSet, Release, Run
from lineage.service import schemas as S
from lineage.service.errors import BadRequest

KINDS = ("dataset", "release", "run", "sample", "source", "evalset")
SAMPLE_ID = re.compile(r"^[0-9a-f]{32}$")  # operators.schema.sample_id: xxh3-128, hex
MAX_QUERY = 500


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search(
    catalog: Catalog,
    graph: openlineage.GraphCache,
    namespace: str,
    find_sample: Callable[[str], S.SampleLineage],
    query: str,
    limit: int,
    find_source: Callable[[str], S.SourceReleases] | None = None,
) -> S.SearchResults:
    """``namespace``: our datasets' in the graph (a source is a dataset of another); ``find_sample``: the
    service's ``sample_lineage``; ``find_source``: its ``source_releases`` by URI, asked only for a text
    with a "/" (it reads every release's ``source_uri`` column)."""
    text = query.strip()
    if not 1 <= len(text) <= MAX_QUERY or "\x00" in text:
        raise BadRequest(f"the search text must be 1-{MAX_QUERY} characters without NUL, got {len(text)}")
    if not 1 <= limit <= 100:
        raise BadRequest(f"limit must be 1-100, got {limit}")
    like = _like(text)
    groups: list[S.SearchGroup] = []

    def group(kind: str, hits: list[S.SearchHit], total: int) -> None:
        if total:
            groups.append(S.SearchGroup(kind=kind, total=total, hits=hits[:limit]))

    with catalog.session() as s:
        q = select(Dataset).where(
            or_(
                func.lower(Dataset.name).like(like, escape="\\"),
                func.lower(Dataset.description).like(like, escape="\\"),
            )
        )
        found = list(s.scalars(q.order_by(Dataset.name).limit(limit)))
        total = s.scalar(select(func.count()).select_from(q.subquery())) or 0
        group(
            "dataset",
            [S.SearchHit(kind="dataset", id=d.name, label=d.name, detail=d.description[:200]) for d in found],
            total,
        )
        ref = func.lower(Release.name + "@" + Release.tag)
        q = select(Release).where(ref.like(like, escape="\\"))
        found_releases = list(s.scalars(q.order_by(Release.name, Release.tag).limit(limit)))
        total = s.scalar(select(func.count()).select_from(q.subquery())) or 0
        group(
            "release",
            [
                S.SearchHit(
                    kind="release",
                    id=r.ref,
                    label=r.ref,
                    detail=f"{r.state}, {r.dataset_version.dataset.name}:v{r.dataset_version.version}",
                )
                for r in found_releases
            ],
            total,
        )
        if len(text) <= 36:
            prefix = _like(text)[1:]  # a run id by its prefix
            q = select(Run).where(func.lower(Run.id).like(prefix, escape="\\"))
            runs = list(s.scalars(q.order_by(Run.started_at.desc()).limit(limit)))
            total = s.scalar(select(func.count()).select_from(q.subquery())) or 0
            group(
                "run",
                [
                    S.SearchHit(
                        kind="run", id=r.id, label=r.id, detail=f"{r.pipeline} -> {r.output_dataset}, {r.status}"
                    )
                    for r in runs
                ],
                total,
            )
        q = select(EvalSet).where(func.lower(EvalSet.name).like(like, escape="\\"))
        evalsets = list(s.scalars(q.order_by(EvalSet.name).limit(limit)))
        total = s.scalar(select(func.count()).select_from(q.subquery())) or 0
        group(
            "evalset",
            [S.SearchHit(kind="evalset", id=e.name, label=e.name, detail=f"{e.kind}, {e.state}") for e in evalsets],
            total,
        )
        index = graph.get(s)
    if SAMPLE_ID.match(text.lower()):
        lineage = find_sample(text.lower())
        if lineage.found:
            where = lineage.source.uri if lineage.source and lineage.source.uri else ""
            group(
                "sample", [S.SearchHit(kind="sample", id=lineage.sample_id, label=lineage.sample_id, detail=where)], 1
            )
    ours = namespace
    needle = text.lower()
    sources = sorted(
        (node.namespace, node.name)
        for node in index.nodes.values()
        if node.kind == openlineage.DATASET
        and node.namespace != ours
        and needle in f"{node.namespace}:{node.name}".lower()
    )
    hits = [
        S.SearchHit(
            kind="source",
            id=openlineage.node_id(openlineage.DATASET, ns, name),
            label=name if ns == "file" else f"{ns}/{name.lstrip('/')}",
            detail=ns,
        )
        for ns, name in sources[:limit]
    ]
    total = len(sources)
    if "/" in text and find_source is not None:
        # a file a run read inside a folder is no graph node (the folder is): ask the releases' tables
        held = [r for r in find_source(text).releases if r.samples]
        if held:
            total += 1
            counts = ", ".join(f"{r.release} ({r.samples:,})" for r in held)
            hits.insert(0, S.SearchHit(kind="source", id=text, label=text, detail=f"samples in {counts}"))
    group("source", hits, total)
    groups.sort(key=lambda g: KINDS.index(g.kind))
    return S.SearchResults(query=text, groups=groups)
