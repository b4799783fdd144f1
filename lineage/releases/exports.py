"""Training exports as assets: recorded in the catalog, a node of the lineage graph, verifiable, and
queryable by sequence.

* :func:`record_export` stores a finished export (:mod:`lineage.releases.tokenized`) as an
  :class:`~lineage.catalog.Export` row and ingests one OpenLineage run whose job reads the release's
  dataset version and writes the export's dataset, ``NAME@TAG/FORMAT/EXPORT_ID``, in our namespace.
* :func:`verify_export` reads every file the manifest lists back from its tier (size and xxh3-128),
  and the manifest itself against the catalog's copy, as ``tier verify`` does for a release.
* :func:`sequence_samples` and :func:`sample_sequences` answer from the sequence-lineage tables: the
  shard of global sequence ``k`` is found from the manifest's ``first_sequence`` counts, so the first
  query reads one small Parquet file; the second filters every shard's table by sample id.
"""

from __future__ import annotations

import bisect
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlalchemy import select
from sqlalchemy.orm import Session

from lineage import openlineage
from lineage.catalog import Catalog, Export, Release
from lineage.catalog.models import utcnow
from lineage.errors import DataPurged, Invalid, NotFound
from lineage.order.export import ReaderJob, step_sequences
from lineage.releases.megatron_order import blending_indices, gpt_order, one_epoch_samples, sample_parts, step_parts
from lineage.releases.tokenized import LINEAGE_SCHEMA, MANIFEST, TokenizedExport
from lineage.settings import Settings
from storage.checksum import file_digest
from storage.tier import Tier, get_tier, local_tier


def record_export(catalog: Catalog, settings: Settings, done: TokenizedExport, actor: str) -> None:
    """Record ``done`` (once per place: a rerun that found it finished changes nothing) and its lineage."""
    m = done.manifest
    with catalog.session() as s:
        same_tier = Export.tier.is_(None) if done.tier is None else Export.tier == done.tier
        found = s.scalars(
            select(Export).where(Export.export_id == m["export_id"], same_tier, Export.path == done.path)
        ).first()
        if found is not None:
            return
        release_id = done.release_id
        release = s.get(Release, release_id)
        assert release is not None  # the export just read it
        s.add(
            Export(
                export_id=m["export_id"],
                release_id=release_id,
                format=m["format"],
                tier=done.tier,
                path=done.path,
                tokenizer_digest=m["tokenizer"]["digest"],
                options={k: m[k] for k in ("seq_len", "pack", "shard_size", "seed", "eod_id", "dtype")},
                manifest=m,
                samples=m["samples"],
                sequences=m["sequences"],
                tokens=m["tokens"],
                created_by=actor,
            )
        )
        for event in export_events(release, m, settings):
            openlineage.ingest(s, event)


def dataset_name(manifest: dict[str, Any]) -> str:
    """The export's dataset in the lineage graph."""
    return f"{manifest['release']}/{manifest['format']}/{manifest['export_id']}"


def export_events(release: Release, m: dict[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """One COMPLETE event: job ``export NAME@TAG`` read the release's dataset version, wrote the export."""
    ns = settings.openlineage_namespace
    dv = release.dataset_version
    facet = openlineage._facet  # the producer and schema URL every facet of ours carries
    return [
        {
            "producer": openlineage.PRODUCER,
            "schemaURL": openlineage.SCHEMA_URL,
            "eventType": "COMPLETE",
            "eventTime": utcnow().isoformat(),
            "run": {"runId": str(uuid.uuid4()), "facets": {}},
            "job": {"namespace": ns, "name": f"export {release.name}@{release.tag}", "facets": {}},
            "inputs": [
                {
                    "namespace": ns,
                    "name": dv.dataset.name,
                    "facets": {
                        "version": facet({"datasetVersion": str(dv.version)}),
                        "release": facet({"ref": f"{release.name}@{release.tag}", "digest": release.content_digest}),
                    },
                }
            ],
            "outputs": [
                {
                    "namespace": ns,
                    "name": dataset_name(m),
                    "facets": {
                        "version": facet({"datasetVersion": m["export_id"]}),
                        "trainingExport": facet(
                            {
                                "release": m["release"],
                                "format": m["format"],
                                "tokenizerDigest": m["tokenizer"]["digest"],
                                "sequences": m["sequences"],
                                "tokens": m["tokens"],
                                "tokensBySource": m["tokens_by_source"],
                            }
                        ),
                    },
                    "outputFacets": {"outputStatistics": facet({"rowCount": m["sequences"]})},
                }
            ],
        }
    ]


def get_export(s: Session, export_id: str, *, files: bool = False) -> Export:
    """The export's first recorded place (every place holds the same bytes). With ``files`` (the caller
    reads them), one a takedown's purge deleted is refused clearly, not as a missing file."""
    row = s.scalars(select(Export).where(Export.export_id == export_id).order_by(Export.id)).first()
    if row is None:
        raise NotFound(f"export {export_id} does not exist")
    if files and row.purged_by is not None:
        raise DataPurged(f"export {export_id} was deleted by takedown request {row.purged_by}'s purge")
    return row


def place(settings: Settings, row: Export) -> tuple[Tier, str]:
    """The tier and tier-relative folder of a recorded export."""
    if row.tier is None:
        folder = Path(row.path)
        return local_tier(folder.parent, name="export"), folder.name
    return get_tier(row.tier, settings), row.path


def verify_export(settings: Settings, row: Export) -> list[str]:
    """What is wrong with the export's files on its tier (nothing: an empty list)."""
    tier, prefix = place(settings, row)
    problems = []
    try:
        with tier.filesystem.open_input_stream(tier.path(prefix, MANIFEST)) as fh:
            if json.loads(fh.read()) != row.manifest:
                problems.append(f"{MANIFEST}: differs from the catalog's manifest")
    except FileNotFoundError:
        problems.append(f"{MANIFEST}: missing")
    for shard in row.manifest["shards"]:
        for f in [*shard["files"], shard["lineage"]]:
            try:
                digest = file_digest(tier, prefix, f["path"])
            except FileNotFoundError:
                problems.append(f"{f['path']}: missing")
                continue
            if (digest.size, digest.hexdigest) != (f["bytes"], f["xxh3_128"]):
                problems.append(
                    f"{f['path']}: read back {digest.size} bytes xxh3-128 {digest.hexdigest}, "
                    f"expected {f['bytes']} bytes {f['xxh3_128']}"
                )
    return problems


def _read_lineage(
    settings: Settings,
    row: Export,
    shards: list[dict[str, Any]],
    sample_id: str | None = None,
    sequences: list[int] | None = None,
) -> Any:
    """The shards' sequence-lineage tables, only the rows of ``sample_id`` or of ``sequences`` if given
    (row groups whose statistics rule them out are not read)."""
    tier, prefix = place(settings, row)
    tables = []
    for shard in shards:
        path = tier.path(prefix, shard["lineage"]["path"])
        filters: list[tuple[str, str, Any]] | None = None
        if sample_id is not None:
            filters = [("sample_id", "=", sample_id)]
        elif sequences is not None:
            filters = [("sequence", ">=", min(sequences)), ("sequence", "<=", max(sequences))]
        try:
            tables.append(pq.read_table(path, filesystem=tier.filesystem, filters=filters, schema=LINEAGE_SCHEMA))
        except FileNotFoundError:
            raise NotFound(
                f"export {row.export_id}: its sequence-lineage table {shard['lineage']['path']} is missing"
            ) from None
    return tables


def sequence_samples(settings: Settings, row: Export, sequence: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(shard, the rows of global sequence ``sequence``, in token order)."""
    shards = row.manifest["shards"]
    if not 0 <= sequence < row.sequences:
        raise NotFound(f"export {row.export_id} has sequences 0..{row.sequences - 1}, not {sequence}")
    k = bisect.bisect_right([s["first_sequence"] for s in shards], sequence) - 1
    (table,) = _read_lineage(settings, row, [shards[k]], sequences=[sequence])
    table = table.filter(pc.equal(table["sequence"], sequence))
    return shards[k], table.sort_by("seq_start").to_pylist()


def megatron_step(
    settings: Settings, row: Export, step: int, seed: int, seq_len: int, global_batch_size: int, train_samples: int
) -> list[tuple[int, dict[str, Any], int, int]]:
    """(training sample, its document's lineage row, token start, token end) for each piece of each
    sample that megatron-core's GPTDataset gives global step ``step`` (see :mod:`megatron_order`): over
    the one prefix of a one-shard export, or over the blend of every shard's prefix."""
    if row.format != "megatron":
        raise Invalid(f"export {row.export_id} is {row.format}: GPTDataset's order is for megatron exports")
    shards = row.manifest["shards"]
    if len(shards) == 1:
        if (step + 1) * global_batch_size > train_samples:
            raise Invalid(f"step {step} of {global_batch_size} samples is beyond the job's {train_samples} samples")
        (table,) = _read_lineage(settings, row, shards)
        docs = table.sort_by("shard_sequence").to_pylist()
        sizes = np.array([d["length"] for d in docs], dtype=np.int64)
        order = gpt_order(sizes, seed, seq_len, train_samples)
        return [(p.sample, docs[p.document], p.start, p.end) for p in step_parts(order, sizes, step, global_batch_size)]
    tables = [t.sort_by("shard_sequence").to_pylist() for t in _read_lineage(settings, row, shards)]
    sizes_of = [np.array([d["length"] for d in docs], dtype=np.int64) for docs in tables]
    weights = [one_epoch_samples(sizes, seq_len) for sizes in sizes_of]
    if min(weights) < 1:
        raise Invalid(
            f"export {row.export_id} has a shard of fewer than {seq_len + 1} tokens: Megatron cannot blend it"
        )
    size = min(train_samples, sum(weights))
    if (step + 1) * global_batch_size > size:
        raise Invalid(
            f"step {step} of {global_batch_size} samples is beyond the job's {size} samples "
            f"(a blend of {len(shards)} shards, one epoch of each)"
        )
    blend = blending_indices(weights, (step + 1) * global_batch_size)
    orders: dict[int, Any] = {}
    answer = []
    for j in range(step * global_batch_size, (step + 1) * global_batch_size):
        d, k = blend[j]
        if d not in orders:
            orders[d] = gpt_order(sizes_of[d], seed, seq_len, weights[d])
        answer += [
            (p.sample, tables[d][p.document], p.start, p.end) for p in sample_parts(orders[d], sizes_of[d], k, j)
        ]
    return answer


def reader_step(
    settings: Settings, row: Export, step: int, job: Any
) -> list[tuple[int, list[tuple[int, list[dict[str, Any]]]]]]:
    """(rank, [(sequence, its lineage rows in token order)]) for each rank's batch of global step ``step``
    of a job that read the export with our reader (``job``: a ``ReaderJob``, see :mod:`lineage.order.export`)."""
    order_job = ReaderJob(**job.model_dump())
    batches = step_sequences(row.manifest, order_job, step)
    wanted = sorted({k for _rank, seqs in batches for k in seqs})
    shards = row.manifest["shards"]
    firsts = [s["first_sequence"] for s in shards]
    by_shard: dict[int, list[int]] = {}
    for k in wanted:
        by_shard.setdefault(bisect.bisect_right(firsts, k) - 1, []).append(k)
    rows: dict[int, list[dict[str, Any]]] = {k: [] for k in wanted}
    for index, ks in by_shard.items():
        (table,) = _read_lineage(settings, row, [shards[index]], sequences=ks)
        table = table.filter(pc.is_in(table["sequence"], pa.array(ks, pa.int64()))).sort_by(
            [("sequence", "ascending"), ("seq_start", "ascending")]
        )
        for r in table.to_pylist():
            rows[r["sequence"]].append(r)
    return [(rank, [(k, rows[k]) for k in seqs]) for rank, seqs in batches]


def sample_sequences(settings: Settings, row: Export, sample_id: str) -> list[dict[str, Any]]:
    """Every row of ``sample_id`` in the export, in sequence order."""
    rows = [r for t in _read_lineage(settings, row, row.manifest["shards"], sample_id) for r in t.to_pylist()]
    if not rows:
        raise NotFound(f"sample {sample_id} is not in export {row.export_id}")
    return sorted(rows, key=lambda r: r["sequence"])
