"""Near-duplicate removal for someone who just has files (``lineage dedupe``, ``Service.dedupe_files``).

Runs a throw-away pipeline (convert → ``minhash_dedupe``) on the chosen engine, then streams each
input once more and writes the kept records *byte for byte* in the input's own format, plus a
Parquet report of the dropped ones: ``id``, ``cluster_id``, ``kept_id``, ``jaccard``, where ids are
the ``--id-field`` values (or ``file:row`` without one). Bad records go to a quarantine file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lineage.errors import Invalid, MissingFile
from lineage.settings import Settings, TierConfig
from operators import registry
from operators.base import ClusterOperator
from operators.convert.readers import open_decompressed
from operators.minhash.lsh import band_layout
from operators.minhash.params import MinHashParams
from operators.minhash.store import held_apart, with_held
from operators.schema import QUARANTINE_SCHEMA
from operators.threads import quick_handover
from pipelines.integrity import INGESTED_SCHEMA, check_unique_ids
from pipelines.sources import plan_source
from pipelines.spec import PipelineSpec
from pipelines.stages import run_source
from storage import gzip_codec
from storage.output_paths import output_file, output_folder
from storage.tier import local_tier

log = logging.getLogger(__name__)

REPORT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string()),
        pa.field("cluster_id", pa.string()),
        pa.field("kept_id", pa.string()),
        pa.field("jaccard", pa.float64()),
    ]
)


@dataclass
class DedupeSummary:
    inputs: int
    records: int
    kept: int
    dropped: int
    quarantined: int
    outputs: list[Path]
    report: Path
    params: MinHashParams
    quarantine: Path | None = None  # the quarantined records and why, when there were any

    def settings(self) -> str:
        """The near-duplicate settings the run used, on one line, with the LSH layout resolved."""
        p = self.params
        bands, rows = band_layout(p)
        how = "as set"
        if p.bands is None:
            how = f"from the threshold, weights {p.false_positive_weight}/{p.false_negative_weight}"
        shingles = {
            "mixed": f"word {p.word_ngram}-grams and character {p.ngram}-grams, script mixed, verified by characters",
            "auto": f"{p.ngram}-grams, script auto, cjk_ratio {p.cjk_ratio}",
        }.get(p.script, f"{p.ngram}-grams, script {p.script}")
        return (
            f"threshold {p.threshold}; shingles: {shingles}; {p.num_perm} permutations, "
            f"seed {p.seed}; LSH {bands} bands x {rows} rows ({how}); verify {p.verify}; survivor {p.survivor}"
        )


def _format(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")) and not path.name.lower().endswith(".gz"):
        return "parquet"
    raise Invalid(f"{path}: lineage dedupe reads JSONL (plain or .gz) and Parquet files")


def _targets(inputs: list[Path], output: Path) -> tuple[list[Path], Path]:
    """Output file per input, and the report path."""
    if len(inputs) == 1 and not (output.is_dir() or str(output).endswith("/")):
        output_file(output)  # its folder made before the work, as a folder output is
        return [output], output_file(output.with_name(output.name + ".duplicates.parquet"))
    output_folder(output)
    names = [p.name for p in inputs]
    if len(set(names)) != len(names):
        raise Invalid("inputs with the same file name cannot share one output folder")
    return [output_file(output / n) for n in names], output_file(output / "duplicates.parquet")


def _quarantine_path(report_path: Path) -> Path:
    return report_path.with_name(report_path.name.replace("duplicates", "quarantine"))


def _refuse_overwriting(inputs: list[Path], written: list[Path]) -> None:
    """Refuse a run that would write over one of its inputs: the kept records replace their target when they
    are whole, so ``--output`` naming the input (or a folder holding it) replaced the input with its
    deduplicated copy, and the dropped records were gone. A path is the input's when it resolves to the same
    file, through a symbolic link or as another hard link of it."""
    at = {p.resolve(): p for p in inputs}
    by_file = {key: p for p in inputs if (key := _file_key(p)) is not None}
    for path in written:
        same = at.get(path.resolve())
        if same is None and (key := _file_key(path)) is not None:
            same = by_file.get(key)
        if same is not None:
            raise Invalid(f"{path} is the input {same}: lineage dedupe writes its kept records elsewhere (--output)")


def _file_key(path: Path) -> tuple[int, int] | None:
    """(device, inode) of an existing file, None for a path with nothing there yet."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


@dataclass
class _Decided:
    """What the run decided, in the terms of the input files."""

    kept: dict[int, set[int]]  # file index -> rows kept
    # the report's rows are the dropped samples, by sample_id; ``named`` (NAMED_SCHEMA) holds the (file index,
    # row) of its three samples, dropped, cluster and kept, a column of them after another, and ``jaccard``
    # each dropped sample's similarity to the kept one
    named: pa.Table
    jaccard: pa.Array
    quarantine: pa.Table
    records: int  # samples convert made (quarantined records not counted)


DROPPED_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string()),
        pa.field("cluster_id", pa.string()),
        pa.field("kept_id", pa.string()),
        pa.field("jaccard", pa.float64()),
    ]
)
POSITION_SCHEMA = pa.schema(
    [pa.field("sample_id", pa.string()), pa.field("input", pa.int32()), pa.field("row", pa.int64())]
)
NAMED_SCHEMA = pa.schema([pa.field("input", pa.int32()), pa.field("row", pa.int64())])


def _report_ids(dropped: pa.Table) -> pa.Array:
    """The report's three id columns of ``dropped`` (dropped, cluster and kept ids), one after another."""
    return pa.concat_arrays([dropped.column(c).combine_chunks() for c in ("sample_id", "cluster_id", "kept_id")])


def _spec(inputs: list[Path], params: MinHashParams, text_field: str, id_field: str | None) -> PipelineSpec:
    return PipelineSpec.model_validate(
        {
            "name": "dedupe",
            "inputs": [
                {"dataset": f"input{i}", "path": str(p), "text_field": text_field, "id_field": id_field}
                for i, p in enumerate(inputs)
            ],
            "operators": [{"name": "minhash_dedupe", "params": params.to_dict()}],
            "output": {"dataset": "dedupe"},
        }
    )


def dedupe_files(
    inputs: list[Path],
    output: Path,
    *,
    settings: Settings,
    params: MinHashParams | None = None,
    engine: str = "local",
    text_field: str = "text",
    id_field: str | None = None,
) -> DedupeSummary:
    """Write the kept records of ``inputs`` to ``output`` (a file for one input, else a folder), with the
    report beside them. Bad paths and formats are refused before any work.

    On the local engine the steps of the run (convert, then ``minhash_dedupe``) are called in this
    process, with no catalog, staging or Delta commit: nothing of those is kept, and for a small file
    they were most of the time. Spark and Ray run the throw-away pipeline on a private catalog.
    """
    params = params or MinHashParams()
    inputs = [p.resolve() for p in inputs]
    for p in inputs:
        if not p.is_file():
            raise MissingFile(f"no such file: {p}")
        _format(p)
    targets, report_path = _targets(inputs, output)
    _refuse_overwriting(inputs, [*targets, report_path, _quarantine_path(report_path)])
    spec = _spec(inputs, params, text_field, id_field)
    decided = _decide_local(spec, settings) if engine == "local" else _decide_with_runner(spec, settings, engine)
    return _write_outputs(inputs, targets, report_path, decided, params, id_field)


# input bytes (compressed or not) above which the sketcher loads its kernels before the first batch:
# below, a run may well never load them (the small-input twins in numpy serve it)
_WARM_UP_BYTES = 256 << 10
# threads that sketch batches, in order: two, because one was the read's bottleneck at 254,724 documents (this
# thread waited on it a fifth of the time) while the cores had room (the kernels and Arrow release the GIL)
_SKETCHERS = 2


def _decide_local(spec: PipelineSpec, settings: Settings) -> _Decided:
    """Convert and ``minhash_dedupe`` as the local engine runs them, in memory: the same samples, ids,
    sketches and cluster decisions (the operator orders rows by ``sample_id`` itself)."""
    run_id = str(uuid.uuid4())
    # give freed Arrow buffers back to the OS at once, as the local engine does: peak RSS is then the
    # largest stage, not the sum of them
    with contextlib.suppress(NotImplementedError):
        pa.jemalloc_set_decay_ms(0)
    (step,) = spec.operators
    op = registry.build(step.name, step.params)
    assert isinstance(op, ClusterOperator)
    sketches: list[pa.RecordBatch] = []
    # the sketches' large columns (folded texts or shingle sets, and bands), kept apart so that each becomes one
    # buffer without two copies at once (store.with_held): 330 MB of the peak at 254,724 Chinese documents
    held: dict[str, list[pa.Array]] = {}
    texts: list[pa.Array] = []
    ingested: list[pa.RecordBatch] = []
    quarantine: list[pa.RecordBatch] = []
    # Sketching runs on other threads while this one converts the next batch: the shingle and
    # MinHash kernels and Arrow's compute functions release the GIL, convert is mostly Python (and
    # hands the GIL back quickly).
    with quick_handover(), ThreadPoolExecutor(_SKETCHERS, thread_name_prefix="dedupe-sketch") as pool:
        if sum(Path(str(inp.path)).stat().st_size for inp in spec.inputs) > _WARM_UP_BYTES:
            pool.submit(op.warm_up)  # while this thread reads the first blocks and starts the parsers
        pending: deque[Future[pa.RecordBatch]] = deque()
        for position, inp in enumerate(spec.inputs):
            source, _ = plan_source(inp, position, spec.base_dir, run_id, settings)
            # content hashes are for exact dedupe, ``meta`` for a release: these samples stay here
            source.convert.hashes = source.convert.meta = False
            # convert's JSON is parsed in worker processes on the other cores, every block after the
            # first few: this process's core builds samples and runs the sketcher's kernels
            source.convert.parse_processes = settings.execution().cores - 1
            source.convert.parse_here = False
            for chunk in source.chunks.to_batches(max_chunksize=1):
                for out in run_source(source.convert, chunk, run_id):
                    if out.quarantine is not None and out.quarantine.num_rows:
                        quarantine.append(out.quarantine)
                    samples = out.samples
                    if not samples.num_rows:
                        continue
                    n = samples.num_rows
                    ingested.append(
                        pa.RecordBatch.from_arrays(
                            [
                                samples.column("sample_id"),
                                pa.repeat(pa.scalar(position, pa.int32()), n),
                                *(samples.column(c) for c in ("source_dataset", "source_path", "source_row")),
                            ],
                            schema=INGESTED_SCHEMA,
                        )
                    )
                    if len(pending) >= _SKETCHERS + 1:  # bounded: a batch each and one waiting
                        sketches.append(_hold_apart(pending.popleft().result(), held))
                    pending.append(pool.submit(op.held_sketch, samples.select(list(op.sketch_columns))))
                    if op.needs_texts and not op.held_texts:
                        texts.append(samples.column("text"))
        while pending:  # popped, so no future keeps a held piece alive
            sketches.append(_hold_apart(pending.popleft().result(), held))
    with ThreadPoolExecutor(1, thread_name_prefix="dedupe-held") as side:
        # the held columns' buffers are made while the ids are checked
        whole = side.submit(_with_held, _drain_table(sketches, op.sketch_schema), held)
        ids = pa.Table.from_batches(ingested, INGESTED_SCHEMA)
        sample_ids = ids.column("sample_id").combine_chunks()
        by_id = pc.sort_indices(sample_ids)  # the report's order; and a repeated id lies beside its twin
        _check_unique(sample_ids.take(by_id), ids, settings)
        tables = [whole.result()]  # handed over below without a reference kept here
        del whole
    kept: dict[int, set[int]] = {i: set() for i in range(len(spec.inputs))}
    named, jaccard = NAMED_SCHEMA.empty_table(), pa.array([], pa.float64())
    if ids.num_rows:
        # handed over without a reference kept here: the operator's sorted copies replace these
        # inputs, which are freed as it makes them (peak memory at 250k documents)
        records = op.cluster(tables.pop(), _drain_texts(texts) if texts else None)
        is_dropped = pc.equal(records.column("verdict"), "dropped")
        survivors = ids.select(["input", "source_row"]).filter(pc.invert(is_dropped))
        files = survivors.column("input").to_numpy()
        rows = survivors.column("source_row").to_numpy()
        for i in kept:
            kept[i] = set(rows[files == i].tolist())
        # the records are the ingested rows, in order: a dropped sample is its row, and its cluster's and kept
        # sample are found by one lookup of their ids (each id hashed once: a run of 254,724 documents hashed
        # 200,000 of them four times over, 0.2 s)
        dropped = by_id.filter(is_dropped.take(by_id))
        duplicate = pc.struct_field(records.column("detail"), "duplicate").take(dropped)
        others = pa.concat_arrays([pc.struct_field(duplicate, "cluster_id"), pc.struct_field(duplicate, "kept_id")])
        at = pa.concat_arrays([dropped.cast(pa.int32()), pc.index_in(others, sample_ids)])
        named = pa.table([ids.column("input").take(at), ids.column("source_row").take(at)], schema=NAMED_SCHEMA)
        jaccard = pc.struct_field(duplicate, "jaccard")
    quarantine_table = pa.Table.from_batches(quarantine, QUARANTINE_SCHEMA)
    return _Decided(kept, named, jaccard, quarantine_table, ids.num_rows)


def _hold_apart(sketch: pa.RecordBatch, held: dict[str, list[pa.Array]]) -> pa.RecordBatch:
    """``sketch`` without its held columns, each of which joins its name's pieces in ``held``."""
    sketch, columns = held_apart(sketch)
    for name, column in columns.items():
        held.setdefault(name, []).append(column)
    return sketch


def _with_held(table: pa.Table, held: dict[str, list[pa.Array]]) -> pa.Table:
    """``table`` with the held columns put back, emptying ``held``."""
    for name in list(held):
        table = with_held(table, name, held.pop(name))
    return table


def _drain_table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    table = pa.Table.from_batches(batches, batches[0].schema if batches else schema)
    batches.clear()
    return table


def _drain_texts(arrays: list[pa.Array]) -> pa.ChunkedArray:
    texts = pa.chunked_array(arrays, pa.string())
    arrays.clear()
    return texts


def _check_unique(in_order: pa.Array, ids: pa.Table, settings: Settings) -> None:
    """The run's rule that convert's ids (``in_order``: the sample ids sorted) are unique, with the runner's
    own error when they are not."""
    n = len(in_order)
    if n < 2 or not pc.any(pc.equal(in_order.slice(1), in_order.slice(0, n - 1))).as_py():
        return
    config = settings.execution()
    config.staging_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dedupe-ids-", dir=config.staging_dir) as tmp:
        pq.write_table(ids, Path(tmp) / "ingested.parquet")
        tier = local_tier(Path(tmp))
        check_unique_ids(tier, [tier.path("ingested.parquet")], config)
    raise AssertionError("check_unique_ids found no duplicate where the sorted ids hold one")


def _decide_with_runner(spec: PipelineSpec, settings: Settings, engine: str) -> _Decided:
    """The pipeline on ``engine`` through the runner, on a throw-away catalog and tier."""
    # start-up: the catalog (SQLAlchemy, Alembic), the runner, Delta and DuckDB, only off the local engine
    import duckdb

    from lineage.catalog import Catalog
    from lineage.catalog.queries import dataset_version
    from lineage.runs import Runner
    from storage.delta import version_dataset
    from storage.tier import get_tier

    with tempfile.TemporaryDirectory(prefix="lineage-dedupe-") as tmp:
        # a private home: nothing of this run lands in the user's catalog or tiers
        work = settings.model_copy(
            update={
                "home": Path(tmp),
                "catalog_url": f"sqlite:///{tmp}/catalog.db",
                "default_tier": "local",
                "tiers": [TierConfig(name="local", kind="posix", root=f"{tmp}/data")],
            }
        )
        catalog = Catalog(work.catalog_url or "")
        outcome = Runner(work, catalog).run(spec, engine=engine)
        with catalog.session() as s:
            dv = dataset_version(s, "dedupe", outcome.version)
            tier = get_tier(dv.tier, work)
            data = version_dataset(tier, dv.data_path, dv.data_delta_version)
            lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version)
            quarantine = version_dataset(tier, dv.quarantine_path, dv.quarantine_delta_version)
        with duckdb.connect() as con:
            con.register("data", data)
            con.register("lin", lineage)
            kept_rows = con.sql("SELECT source_dataset, source_row FROM data").fetchall()
            dropped = con.sql(
                "SELECT d.sample_id, d.detail.duplicate.cluster_id, d.detail.duplicate.kept_id, "
                "d.detail.duplicate.jaccard FROM lin d WHERE d.operator = 'minhash_dedupe' AND d.verdict = 'dropped' "
                "ORDER BY d.sample_id"
            ).fetchall()
            members = {r[0] for r in dropped} | {r[1] for r in dropped} | {r[2] for r in dropped}
            con.register("members", pa.table({"sample_id": pa.array(sorted(members), pa.string())}))
            where = con.sql(
                "SELECT l.sample_id, l.detail.source.dataset, l.detail.source.row FROM lin l "
                "SEMI JOIN members m USING (sample_id) WHERE l.step = 0"
            ).fetchall()
        quarantine_table = quarantine.to_table()
        catalog.dispose()

    keep: dict[int, set[int]] = {i: set() for i in range(len(spec.inputs))}
    for ds, row in kept_rows:
        keep[int(ds.removeprefix("input"))].add(row)
    position = pa.table(
        [
            pa.array([r[0] for r in where], pa.string()),
            pa.array([int(r[1].removeprefix("input")) for r in where], pa.int32()),
            pa.array([r[2] for r in where], pa.int64()),
        ],
        schema=POSITION_SCHEMA,
    )
    dropped_table = pa.table(
        [pa.array([r[k] for r in dropped], f.type) for k, f in enumerate(DROPPED_SCHEMA)], schema=DROPPED_SCHEMA
    )
    at = pc.index_in(_report_ids(dropped_table), position.column("sample_id"))
    named = pa.table([position.column("input").take(at), position.column("row").take(at)], schema=NAMED_SCHEMA)
    steps = outcome.counts["steps"]
    return _Decided(
        keep, named, dropped_table.column("jaccard").combine_chunks(), quarantine_table, steps[0]["in"] if steps else 0
    )


def _write_outputs(
    inputs: list[Path],
    targets: list[Path],
    report_path: Path,
    decided: _Decided,
    params: MinHashParams,
    id_field: str | None,
) -> DedupeSummary:
    named = decided.named
    files = named.column("input").to_numpy()
    rows = named.column("row").to_numpy()
    wanted: dict[int, dict[int, str | None]] = {
        i: dict.fromkeys(rows[files == i].tolist()) if id_field is not None else {} for i in range(len(inputs))
    }

    def write_kept() -> None:
        for i, (src, dst) in enumerate(zip(inputs, targets, strict=True)):
            _write_kept(src, dst, decided.kept[i], wanted[i], id_field)

    if id_field is None:  # the report reads no record: it is made on a thread while the kept records are written
        with ThreadPoolExecutor(1, thread_name_prefix="dedupe-report") as pool:
            made = pool.submit(_report, inputs, decided, wanted, id_field)
            write_kept()
            report = made.result()
    else:  # the report names records by their id field, which writing the kept records reads
        write_kept()
        report = _report(inputs, decided, wanted, id_field)
    with open(report_path, "wb") as out:
        out.write(report)
    n = len(decided.jaccard)
    quarantine_table = decided.quarantine
    quarantine = _quarantine_path(report_path) if quarantine_table.num_rows else None
    if quarantine is not None:
        pq.write_table(quarantine_table, quarantine)
    return DedupeSummary(
        len(inputs),
        decided.records,
        sum(len(rows) for rows in decided.kept.values()),
        n,
        quarantine_table.num_rows,
        targets,
        report_path,
        params,
        quarantine,
    )


def _report(
    inputs: list[Path], decided: _Decided, wanted: dict[int, dict[int, str | None]], id_field: str | None
) -> pa.Buffer:
    """The report's Parquet bytes: each dropped sample, its cluster's and its kept sample named by their id
    field's value, else ``file:row`` (made in Arrow: a large run names most of its samples)."""
    named = decided.named
    names = pa.array([p.name + ":" for p in inputs], pa.string()).take(named.column("input"))
    user_ids = pc.binary_join_element_wise(names, pc.cast(named.column("row"), pa.string()), "")
    if id_field is not None:
        files, rows = named.column("input").to_numpy(), named.column("row").to_numpy()
        values = pa.array([wanted[f].get(r) for f, r in zip(files.tolist(), rows.tolist(), strict=True)], pa.string())
        user_ids = pc.coalesce(values, user_ids)
    n = len(decided.jaccard)
    report = pa.table(
        [user_ids.slice(0, n), user_ids.slice(n, n), user_ids.slice(2 * n, n), decided.jaccard],
        schema=REPORT_SCHEMA,
    )
    sink = pa.BufferOutputStream()
    pq.write_table(report, sink)
    return sink.getvalue()


def _id_of(record: Any, id_field: str | None) -> str | None:
    if id_field is None or not isinstance(record, dict) or record.get(id_field) is None:
        return None
    return str(record[id_field])


# Kept lines are written in blocks of this many bytes (one write, one compressor call each), by a
# writer thread, so compressing overlaps reading the input again.
_BLOCK_BYTES = 4 << 20


def _write_kept(src: Path, dst: Path, keep: set[int], wanted: dict[int, str | None], id_field: str | None) -> None:
    """Copy the kept records of ``src`` to ``dst`` unchanged; note ids of report rows in ``wanted``.

    Reading stops after the last row it needs: a file damaged past that point (convert quarantined
    the damage as ``corrupt_file``) is copied without meeting the damage again.
    """
    partial = dst.with_name(dst.name + ".partial")  # no input has this name: _format refuses it
    last = max(max(keep, default=-1), max(wanted, default=-1))
    if _format(src) == "parquet":
        _write_kept_parquet(src, partial, keep, wanted, id_field, last)
    else:
        _write_kept_jsonl(src, partial, keep, wanted, id_field, last)
    partial.replace(dst)


def _write_kept_parquet(
    src: Path, partial: Path, keep: set[int], wanted: dict[int, str | None], id_field: str | None, last: int
) -> None:
    try:
        reader = pq.ParquetFile(src)
    except (OSError, pa.ArrowException):  # no footer: convert quarantined the file whole, nothing is kept
        assert last < 0
        pq.write_table(pa.table({}), partial)
        return
    with pq.ParquetWriter(partial, reader.schema_arrow) as writer:
        row = 0
        for group in range(reader.num_row_groups):
            if row > last:
                break
            for batch in reader.iter_batches(row_groups=[group]):
                mask = [row + k in keep for k in range(batch.num_rows)]
                if id_field is not None and wanted:
                    ids = batch.column(id_field).to_pylist() if id_field in batch.schema.names else []
                    for k, value in enumerate(ids):
                        if row + k in wanted and value is not None:
                            wanted[row + k] = str(value)
                writer.write_batch(batch.filter(pa.array(mask)))
                row += batch.num_rows


def _write_kept_jsonl(
    src: Path, partial: Path, keep: set[int], wanted: dict[int, str | None], id_field: str | None, last: int
) -> None:
    fs = local_tier(src.parent).filesystem
    opener = _gzip_writer if src.name.lower().endswith(".gz") else _plain_writer
    with (
        open_decompressed(fs, str(src)) as stream,
        opener(partial) as out,
        ThreadPoolExecutor(1, thread_name_prefix="dedupe-write") as pool,
    ):
        block: list[bytes] = []
        size = 0
        pending: deque[Future[Any]] = deque()
        for row, line in enumerate(stream if last >= 0 else ()):
            if row in wanted and id_field is not None:
                with contextlib.suppress(ValueError):
                    wanted[row] = _id_of(json.loads(line), id_field)
            if row in keep:
                block.append(line if line.endswith(b"\n") else line + b"\n")
                size += len(line)
                if size >= _BLOCK_BYTES:
                    if len(pending) >= 2:  # at most two blocks in memory
                        pending.popleft().result()
                    pending.append(pool.submit(out.write, b"".join(block)))
                    block, size = [], 0
            if row == last:  # reading one more line could meet damage convert already reported
                break
        pending.append(pool.submit(out.write, b"".join(block)))
        for future in pending:
            future.result()


def _plain_writer(path: Path) -> Any:
    return path.open("wb")


def _gzip_writer(path: Path) -> Any:
    return GzipMembers(path, gzip_codec.LEVEL)


class GzipMembers:
    """A ``.gz`` file written as one gzip member per block, the blocks compressed on ``threads`` threads and
    written in order. Not thread-safe: one caller writes.

    Compressing the kept records was the write step's bottleneck, one core's zlib (at 254,724 documents, most
    of the step's 0.8 s) while the other core had little to do; the compressor releases the GIL, so two
    share it (end to end 6.75 s against 6.91 s at 254,724 documents, 1.31 s against 1.42 s at 20,000).
    Members are ISA-L's (:mod:`storage.gzip_codec`), at a fifth of zlib's time.
    A file of several members is one gzip stream to every reader (RFC 1952, 2.2: ``gzip -d``,
    Python's ``gzip``, pyarrow, zcat): the decompressed bytes are the kept records, as before. Members carry
    no file name and a zero time, so the same input gives the same bytes. An empty file is one empty member.
    """

    def __init__(self, path: Path, level: int, threads: int = 2) -> None:
        self._file = path.open("wb")
        self._level, self._threads = level, threads
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="dedupe-gzip")
        self._pending: deque[Future[bytes]] = deque()
        self._members = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        while len(self._pending) >= self._threads:  # at most ``threads`` blocks held, compressed or not
            self._file.write(self._pending.popleft().result())
        self._pending.append(self._pool.submit(gzip_codec.member, data, self._level))
        self._members += 1

    def close(self) -> None:
        try:
            while self._pending:
                self._file.write(self._pending.popleft().result())
            if not self._members:
                self._file.write(gzip_codec.member(b"", self._level))
        finally:
            self._pool.shutdown(cancel_futures=True)
            self._file.close()

    def __enter__(self) -> GzipMembers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
