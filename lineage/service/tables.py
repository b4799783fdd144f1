"""Opened Delta versions, cached, and DuckDB queries over them.

A dataset version pins Delta versions that never change, so what is learnt about them (the file
list with each file's ``sample_id`` range, Parquet footers with row-group statistics) is cached
per (tier, table, version). A point lookup then touches only the files whose range holds the
key, and DuckDB's scan of those files skips row groups by their statistics: data and lineage
tables are sorted by ``sample_id``.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from lineage.settings import Settings
from storage.delta import add_actions, file_ranges, open_version
from storage.tier import get_tier

if TYPE_CHECKING:
    import duckdb
    import pyarrow.dataset as pads

log = logging.getLogger(__name__)
KEY = "sample_id"


@dataclass
class FileIndex:
    """One Parquet file of a version, with its row groups' ``sample_id`` ranges (from its footer)."""

    dataset: pads.Dataset
    fragment: pads.ParquetFileFragment | None
    rg_lows: list[str] | None  # None: no usable statistics, scan the file with a filter
    rg_highs: list[str] | None
    local_path: str | None = None  # on a POSIX tier: DuckDB reads the file itself

    @classmethod
    def build(cls, dataset: pads.Dataset, local_path: str | None = None) -> FileIndex:
        fragments = list(dataset.get_fragments())
        if len(fragments) != 1:
            return cls(dataset, None, None, None, local_path)
        fragment = fragments[0]
        fragment.ensure_complete_metadata()  # footer read once, then cached
        meta = fragment.metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        if KEY not in names:
            return cls(dataset, fragment, None, None, local_path)
        col = names.index(KEY)
        lows, highs = [], []
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(col).statistics  # only the key column's: cheap
            if stats is None or not stats.has_min_max:
                return cls(dataset, fragment, None, None, local_path)
            lows.append(stats.min)
            highs.append(stats.max)
        if lows != sorted(lows):
            return cls(dataset, fragment, None, None, local_path)
        return cls(dataset, fragment, lows, highs, local_path)

    def read(self, key: str, columns: list[str]) -> pa.Table:
        expr = pc.field(KEY) == key
        if self.fragment is None or self.rg_lows is None or self.rg_highs is None:
            return self.dataset.to_table(columns=columns, filter=expr, use_threads=False)
        j = bisect.bisect_right(self.rg_lows, key) - 1
        ids = []
        while j >= 0 and self.rg_highs[j] >= key:  # sorted file: the candidates are contiguous
            ids.append(j)
            j -= 1
        if not ids:
            return self.dataset.schema.empty_table().select(columns)
        return self.fragment.subset(row_group_ids=sorted(ids)).to_table(columns=columns, filter=expr, use_threads=False)


@dataclass
class VersionTable:
    """One Delta version: its whole dataset, and per file its key range and row-group index."""

    dataset: pads.Dataset
    lows: list[str]  # per file, sorted by low key
    highs: list[str]
    files: list[FileIndex]
    unranged: list[FileIndex]  # files without key statistics: always scanned
    schema: pa.Schema
    reader: str | None = None  # "pyarrow" or "duckdb" for point lookups, chosen at the first one

    def covering(self, key: str) -> list[FileIndex]:
        """The files that can hold ``key``."""
        stop = bisect.bisect_right(self.lows, key)
        return [self.files[i] for i in range(stop) if self.highs[i] >= key] + self.unranged

    def lookup(self, key: str, columns: list[str], duck: Duck) -> list[dict[str, Any]]:
        """Rows whose ``sample_id`` is ``key``; only files whose range holds it are read.

        Two readers, both pruning row groups by statistics: pyarrow, reading the candidate row
        groups whole, and (for files on a POSIX tier) DuckDB's Parquet reader, which decodes the
        other columns only around matches. Which is faster depends on the table: on the demo's
        lineage (64k-row groups with quality-rule lists) DuckDB took 4 ms and pyarrow 106 ms; on
        4k-row groups of mostly-null details pyarrow took 5 ms and DuckDB 56 ms. So the first
        lookup in each version runs both (once to warm up, then three times each, alternating),
        checks they agree, and keeps the faster.
        """
        files = self.covering(key)
        if not files:
            return []
        local = [f.local_path for f in files]
        if self.reader == "pyarrow" or None in local:
            return self._pyarrow(files, key, columns)
        if self.reader == "duckdb":
            return self._duckdb(local, key, columns, duck)
        import duckdb  # start-up: the service loads DuckDB at its first scan

        self._pyarrow(files, key, columns)  # warm up both readers (footers, extension) before timing
        try:
            self._duckdb(local, key, columns, duck)
        except duckdb.Error as exc:  # e.g. a DuckDB build without its Parquet reader
            log.info("DuckDB cannot read %s (%s): lookups use pyarrow", local[0], exc)
            self.reader = "pyarrow"
            return self._pyarrow(files, key, columns)
        arrow_s, duck_s = [], []
        for _ in range(3):  # alternate, keep each reader's best: one sample is too noisy on a busy machine
            t0 = time.perf_counter()
            by_arrow = self._pyarrow(files, key, columns)
            t1 = time.perf_counter()
            by_duck = self._duckdb(local, key, columns, duck)
            t2 = time.perf_counter()
            arrow_s.append(t1 - t0)
            duck_s.append(t2 - t1)
        if by_arrow != by_duck:
            log.warning("DuckDB and pyarrow disagree on a lookup in %s; using pyarrow", local[0])
            self.reader = "pyarrow"
        else:
            self.reader = "duckdb" if min(duck_s) < min(arrow_s) else "pyarrow"
        log.info(
            "lookups in %s: %s (pyarrow %.1f ms, DuckDB %.1f ms)",
            local[0],
            self.reader,
            1e3 * min(arrow_s),
            1e3 * min(duck_s),
        )
        return by_arrow

    @staticmethod
    def _pyarrow(files: list[FileIndex], key: str, columns: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for f in files:
            rows += f.read(key, columns).to_pylist()
        return rows

    @staticmethod
    def _duckdb(paths: list[str | None], key: str, columns: list[str], duck: Duck) -> list[dict[str, Any]]:
        select = ", ".join(f'"{c}"' for c in columns)
        return duck.rows(f"SELECT {select} FROM read_parquet(?) WHERE {KEY} = ?", [paths, key])


class TableCache:
    """LRU of opened Delta versions, shared by all requests of a process (thread-safe)."""

    def __init__(self, settings: Settings, max_entries: int = 512) -> None:
        self.settings = settings
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str, int], VersionTable] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tier_name: str, path: str, version: int) -> VersionTable:
        key = (tier_name, path, version)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        table = self._open(tier_name, path, version)
        with self._lock:
            self._entries[key] = table
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return table

    def clear(self) -> None:
        """Forget every opened version (after a purge deleted files some of them name)."""
        with self._lock:
            self._entries.clear()

    def _open(self, tier_name: str, path: str, version: int) -> VersionTable:
        tier = get_tier(tier_name, self.settings)
        delta = open_version(tier, path, version)
        fs = pafs.SubTreeFileSystem(tier.path(path), tier.filesystem)
        whole = delta.to_pyarrow_dataset(filesystem=fs)
        ranged: list[tuple[str, str, FileIndex]] = []
        unranged: list[FileIndex] = []
        import pyarrow.dataset as pads  # start-up: it imports pandas

        fmt = pads.ParquetFileFormat()
        local_root = tier.path(path) if tier.kind == "posix" else None
        for file, lo, hi in file_ranges(add_actions(delta), KEY):
            local = f"{local_root}/{file}" if local_root is not None else None
            one = FileIndex.build(pads.dataset(file, filesystem=fs, format=fmt, schema=whole.schema), local)
            if lo is None or hi is None:
                unranged.append(one)
            else:
                ranged.append((lo, hi, one))
        ranged.sort(key=lambda r: r[0])
        log.debug("opened %s@%d on %s: %d files", path, version, tier_name, len(ranged) + len(unranged))
        return VersionTable(
            whole, [r[0] for r in ranged], [r[1] for r in ranged], [r[2] for r in ranged], unranged, whole.schema
        )


class Duck:
    """One DuckDB connection per thread (a connection is not safe to share between threads)."""

    def __init__(self, settings: Settings, threads: int = 1) -> None:
        self.settings = settings
        self.threads = threads
        self._local = threading.local()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        con = getattr(self._local, "con", None)
        if con is None:
            import duckdb  # start-up: the service loads DuckDB at its first scan

            con = duckdb.connect(config={"threads": self.threads, "memory_limit": self.settings.duckdb_memory_limit})
            self._local.con = con
        return con

    @contextmanager
    def tables(self, **tables: Any) -> Iterator[duckdb.DuckDBPyConnection]:
        con = self._connection()
        for name, table in tables.items():
            con.register(name, table)
        try:
            yield con
        finally:
            for name in tables:
                con.unregister(name)

    def rows(self, sql: str, params: list[Any] | None = None, **tables: Any) -> list[dict[str, Any]]:
        with self.tables(**tables) as con:
            return con.sql(sql, params=params or None).to_arrow_table().to_pylist()

    def scalar(self, sql: str, params: list[Any] | None = None, **tables: Any) -> Any:
        with self.tables(**tables) as con:
            rows = con.execute(sql, params or []).fetchall()
            return rows[0][0] if rows else None
