"""Delta tables on a tier: commit Parquet files that an engine already wrote, and read versions.

Engines write a run's files into a subfolder of the table (``run-<id>/``); the driver commits
exactly those files in one Delta transaction, with per-file statistics from the Parquet footers
so readers can prune. Each commit *overwrites*: a dataset version is a full snapshot, so a
commit left behind by a run that died before the catalog commit is never part of a later one.

Retention: the catalog pins Delta versions (a release pins them for good), and Delta retention is
table-wide, so every table we write carries :data:`TABLE_PROPERTIES`: file and log retention that
no pinned version can reach, and a checkpoint every :data:`CHECKPOINT_INTERVAL` commits. A standard
``VACUUM`` or log cleanup, by any Delta writer, then never deletes a file or a log entry a pinned
version needs; ``lineage gc``, which knows what the catalog pins, reclaims the space instead. A
table written before these properties (or changed since) gets them back at its next commit here,
or from ``lineage gc``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Schema
from deltalake.exceptions import TableNotFoundError
from deltalake.transaction import AddAction, create_table_with_add_actions

from storage.tier import Tier

if TYPE_CHECKING:
    import pyarrow.dataset as pads  # start-up: it imports pandas; deltalake loads it when a dataset is made

log = logging.getLogger(__name__)

#: About a century: beyond the age of any pinned version, and still within a signed 64-bit count
#: of nanoseconds (about 106,000 days), the finest unit a Delta writer may convert it to.
RETENTION = "interval 36500 days"
CHECKPOINT_INTERVAL = 10  # Spark's default; delta-rs writes one when a commit's version + 1 is a multiple
TABLE_PROPERTIES = {
    "delta.logRetentionDuration": RETENTION,
    "delta.deletedFileRetentionDuration": RETENTION,
    "delta.checkpointInterval": str(CHECKPOINT_INTERVAL),
}
# Our commits write checkpoints but never clean up the log: what is pinned is the catalog's to say.
_HOOKS = PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)


#: Free-text payload columns get no min/max statistics in the log. Their extremes prune nothing a reader
#: asks for (no one filters on ``text``), and a statistic is a copy of a record's bytes: one that lives
#: on in ``_delta_log`` after a takedown purged the file it describes (issue #22).
UNINDEXED_COLUMNS = frozenset({"text", "meta", "message", "raw"})


@dataclass(frozen=True)
class DataFile:
    """A Parquet file inside a table folder: path relative to the table root."""

    path: str
    size: int
    num_rows: int
    stats: dict[str, Any]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return None  # Delta stats for binary columns are not useful for pruning
    return value


def describe_file(tier: Tier, table_path: str, relative: str) -> DataFile:
    """Size, row count and Delta statistics (min/max/nulls of top-level primitives) of a file."""
    path = tier.path(table_path, relative)
    size = tier.filesystem.get_file_info(path).size
    with tier.filesystem.open_input_file(path) as handle:
        meta = pq.ParquetFile(handle).metadata
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    schema = meta.schema.to_arrow_schema()
    for col_idx in range(meta.num_columns):
        column = meta.schema.column(col_idx)
        name = column.path
        if (
            "." in name
            or name in UNINDEXED_COLUMNS
            or not (pa.types.is_primitive(schema.field(name).type) or pa.types.is_string(schema.field(name).type))
        ):
            continue
        lo = hi = None
        null_count = 0
        complete = True
        for rg in range(meta.num_row_groups):
            st = meta.row_group(rg).column(col_idx).statistics
            if st is None or not st.has_min_max:
                complete = complete and (st is not None and st.null_count == meta.row_group(rg).num_rows)
                null_count += st.null_count if st is not None and st.has_null_count else 0
                continue
            lo = st.min if lo is None or st.min < lo else lo
            hi = st.max if hi is None or st.max > hi else hi
            null_count += st.null_count if st.has_null_count else 0
        if complete and lo is not None and _jsonable(lo) is not None:
            mins[name], maxs[name] = _jsonable(lo), _jsonable(hi)
        nulls[name] = null_count
    stats = {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return DataFile(relative, size, meta.num_rows, stats)


def commit_snapshot(
    tier: Tier,
    table_path: str,
    files: list[DataFile],
    schema: pa.Schema,
    metadata: dict[str, str] | None = None,
) -> int:
    """Make ``files`` the table's whole content in one Delta commit; return the new version."""
    uri = tier.uri(table_path)
    now = int(time.time() * 1000)
    actions = [
        AddAction(
            path=f.path,
            size=f.size,
            partition_values={},
            modification_time=now,
            data_change=True,
            stats=json.dumps(f.stats),
        )
        for f in files
    ]
    delta_schema = Schema.from_arrow(schema)
    props = CommitProperties(custom_metadata=metadata or {})
    opts = tier.storage_options
    try:
        table = DeltaTable(uri, storage_options=opts)
    except TableNotFoundError:
        try:
            create_table_with_add_actions(
                uri,
                delta_schema,
                actions,
                mode="error",
                configuration=TABLE_PROPERTIES,
                storage_options=opts,
                commit_properties=props,
                post_commithook_properties=_HOOKS,
            )
            return DeltaTable(uri, storage_options=opts).version()
        except Exception:  # another writer created it first: fall through to a normal commit
            if not DeltaTable.is_deltatable(uri, storage_options=opts):
                raise
            table = DeltaTable(uri, storage_options=opts)
    ensure_retention(table, f"{tier.name}:{table_path}")
    table.create_write_transaction(
        actions, mode="overwrite", schema=delta_schema, commit_properties=props, post_commithook_properties=_HOOKS
    )
    table.update_incremental()
    return table.version()


def ensure_retention(table: DeltaTable, name: str, *, dry_run: bool = False) -> bool:
    """Give ``table`` our :data:`TABLE_PROPERTIES` if it lacks them; True if it did (or would, dry).

    A different value someone set is replaced, with a warning: a shorter retention would let a
    routine vacuum or log cleanup break a pinned version. Setting them is one metadata-only commit.
    """
    current = table.metadata().configuration
    wrong = {key: value for key, value in TABLE_PROPERTIES.items() if current.get(key) != value}
    if not wrong:
        return False
    replaced = {key: current[key] for key in wrong if key in current}
    if replaced:
        log.warning("%s: replacing retention properties %s with %s", name, replaced, wrong)
    if not dry_run:
        table.alter.set_table_properties(wrong, post_commithook_properties=_HOOKS)
        table.update_incremental()
    return True


def ensure_table_retention(tier: Tier, table_path: str, *, dry_run: bool = False) -> bool:
    """:func:`ensure_retention` on the table at ``table_path``; False if there is no table there."""
    uri = tier.uri(table_path)
    try:
        table = DeltaTable(uri, storage_options=tier.storage_options)
    except TableNotFoundError:
        return False
    return ensure_retention(table, f"{tier.name}:{table_path}", dry_run=dry_run)


def open_version(tier: Tier, table_path: str, version: int) -> DeltaTable:
    return DeltaTable(tier.uri(table_path), version=version, storage_options=tier.storage_options)


def version_dataset(tier: Tier, table_path: str, version: int) -> pads.Dataset:
    """A pyarrow dataset over exactly one Delta version, read with the tier's native filesystem.

    A native filesystem (rather than delta-rs's own) avoids a known exit-time crash and is faster.
    """
    table = open_version(tier, table_path, version)
    fs = pafs.SubTreeFileSystem(tier.path(table_path), tier.filesystem)
    return table.to_pyarrow_dataset(filesystem=fs)


def add_actions(table: DeltaTable) -> pa.Table:
    """The add actions of ``table``'s loaded version: ``path``, ``size_bytes``, ``num_records`` and the
    ``null_count`` / ``min`` / ``max`` structs (absent when no file has statistics).

    Read as an Arrow stream: ``pa.table()`` on delta-rs's own table object first asks whether it is a
    pandas frame, which imports pandas (0.3 s) in a process that has no other use for it.
    """
    return pa.RecordBatchReader.from_stream(table.get_add_actions(flatten=False)).read_all()


def file_ranges(actions: pa.Table, column: str) -> list[tuple[str, Any, Any]]:
    """(path, min, max) of ``column`` for each file of ``add_actions``' result, from the log's statistics;
    min and max are None for a file the log has none for."""
    paths = actions.column("path").to_pylist()
    if "min" not in actions.column_names or column not in actions.schema.field("min").type.names:
        return [(path, None, None) for path in paths]
    lo, hi = (pc.struct_field(actions.column(side), column).to_pylist() for side in ("min", "max"))
    return list(zip(paths, lo, hi, strict=True))


def key_ranges(tier: Tier, table_path: str, version: int, column: str) -> list[tuple[str, str, str]] | None:
    """(path, min, max) of ``column`` for each file of a version, from the log's statistics alone (no file
    is opened); None if a file has none."""
    ranges = file_ranges(add_actions(open_version(tier, table_path, version)), column)
    if any(lo is None or hi is None for _, lo, hi in ranges):
        return None
    return ranges


def version_files(tier: Tier, table_path: str, version: int) -> list[dict[str, Any]]:
    """Files of one version: ``path`` (relative to the table), ``size``, ``num_records``."""
    actions = add_actions(open_version(tier, table_path, version))
    rows = []
    for rec in actions.select(["path", "size_bytes", "num_records"]).to_pylist():
        rows.append({"path": rec["path"], "size": rec["size_bytes"], "num_records": rec["num_records"]})
    return sorted(rows, key=lambda r: r["path"])


def logged_files(tier: Tier, table_path: str, version: int) -> list[DataFile]:
    """Files of one version as :class:`DataFile`, their statistics taken from the log, not the footers:
    what a commit that keeps them needs, without opening each file (a takedown keeps hundreds). Statistics
    of :data:`UNINDEXED_COLUMNS` that an older writer logged are not carried forward."""
    actions = add_actions(open_version(tier, table_path, version))
    stats = {
        key: actions.column(side).to_pylist() if side in actions.column_names else [None] * actions.num_rows
        for key, side in (("nullCount", "null_count"), ("minValues", "min"), ("maxValues", "max"))
    }
    out = []
    for i, rec in enumerate(actions.select(["path", "size_bytes", "num_records"]).to_pylist()):
        file_stats: dict[str, Any] = {"numRecords": rec["num_records"]}
        for key, values in stats.items():
            present = {c: _jsonable(v) for c, v in (values[i] or {}).items() if c not in UNINDEXED_COLUMNS}
            file_stats[key] = {c: v for c, v in present.items() if v is not None}
        out.append(DataFile(rec["path"], rec["size_bytes"], rec["num_records"], file_stats))
    return sorted(out, key=lambda f: f.path)


def rows_with_keys(
    tier: Tier, table_path: str, paths: list[str], columns: list[str], key: str, keys: pa.Array
) -> pa.Table:
    """``columns`` of the rows of the files ``paths`` (relative to the table) whose ``key`` is among
    ``keys``, plus ``__filename`` (the path), in the order of ``paths``.

    For a few files a takedown names: each is read by its footer on a thread (reading and decoding
    release the GIL), not through ``pyarrow.dataset``, which loads pandas and plans a scan.
    """
    wanted = keys.cast(pa.string())

    def read(path: str) -> pa.Table:
        with tier.filesystem.open_input_file(tier.path(table_path, path)) as handle:
            part = pq.ParquetFile(handle).read(columns=columns)
        part = part.filter(pc.is_in(part.column(key).cast(pa.string()), wanted))
        return part.append_column("__filename", pa.repeat(pa.scalar(path), part.num_rows))

    if len(paths) <= 1:
        parts = [read(p) for p in paths]
    else:
        with ThreadPoolExecutor(min(len(paths), os.cpu_count() or 1)) as pool:
            parts = list(pool.map(read, paths))
    if not parts:
        return pa.schema([pa.field(c, pa.string()) for c in (*columns, "__filename")]).empty_table()
    return pa.concat_tables(parts, promote_options="permissive")


def strip_log_statistics(tier: Tier, table_path: str, columns: frozenset[str] = UNINDEXED_COLUMNS) -> int:
    """Remove the min/max statistics of ``columns`` from every entry of a table's log; return how many
    log files were rewritten.

    For tables written before :data:`UNINDEXED_COLUMNS` (and by other writers): their commits and
    checkpoints may hold copies of texts. Each log file is rewritten whole, next to itself and then
    moved over it (one atomic step on a local tier, one PUT on S3), with only the ``stats`` strings
    of ``add``/``remove`` actions changed, so readers see the same table. Running it again finds nothing.
    """
    fs = tier.filesystem
    log_dir = tier.path(table_path, "_delta_log")
    selector = pafs.FileSelector(log_dir, recursive=False, allow_not_found=True)
    rewritten = 0
    for info in fs.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        if info.base_name.endswith(".json") and not info.base_name.startswith("_"):
            with fs.open_input_stream(info.path) as fh:
                lines = fh.read().decode().splitlines()
            new = [_strip_action(line, columns) for line in lines]
            if new != lines:
                _replace(fs, info.path, ("\n".join(new) + "\n").encode())
                rewritten += 1
        elif ".checkpoint." in info.base_name and info.base_name.endswith(".parquet"):
            with fs.open_input_file(info.path) as fh:
                checkpoint = pq.read_table(fh)
            new_table = _strip_checkpoint(checkpoint, columns)
            if new_table is not None:
                sink = pa.BufferOutputStream()
                pq.write_table(new_table, sink)
                _replace(fs, info.path, sink.getvalue().to_pybytes())
                rewritten += 1
    return rewritten


def _strip_stats(stats: str | None, columns: frozenset[str]) -> str | None:
    if not stats:
        return stats
    parsed = json.loads(stats)
    changed = False
    for key in ("minValues", "maxValues"):
        values = parsed.get(key) or {}
        for column in columns & values.keys():
            del values[column]
            changed = True
    return json.dumps(parsed) if changed else stats


def _strip_action(line: str, columns: frozenset[str]) -> str:
    if '"stats"' not in line:
        return line
    action = json.loads(line)
    changed = False
    for kind in ("add", "remove"):
        body = action.get(kind)
        if body and body.get("stats"):
            stripped = _strip_stats(body["stats"], columns)
            if stripped != body["stats"]:
                body["stats"], changed = stripped, True
    return json.dumps(action, separators=(",", ":")) if changed else line


def _strip_checkpoint(table: pa.Table, columns: frozenset[str]) -> pa.Table | None:
    """The checkpoint with stripped ``stats`` strings, or None if none changed."""
    changed = False
    for kind in ("add", "remove"):
        if kind not in table.column_names:
            continue
        struct = table.column(kind).combine_chunks()
        if "stats" not in [f.name for f in struct.type]:
            continue
        stats = struct.field("stats").to_pylist()
        stripped = [_strip_stats(v, columns) for v in stats]
        if stripped == stats:
            continue
        children = [
            pa.array(stripped, pa.string()) if f.name == "stats" else struct.field(i) for i, f in enumerate(struct.type)
        ]
        rebuilt = pa.StructArray.from_arrays(children, fields=list(struct.type), mask=struct.is_null())
        table = table.set_column(table.column_names.index(kind), table.schema.field(kind), rebuilt)
        changed = True
    return table if changed else None


def _replace(fs: pafs.FileSystem, path: str, body: bytes) -> None:
    staged = f"{path}.purge-tmp"
    with fs.open_output_stream(staged) as out:
        out.write(body)
    fs.move(staged, path)
