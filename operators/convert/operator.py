"""The convert operator: file chunks in, samples + quarantine + lineage out.

A sample's text is one field of its record (``text_field``), or several joined (``text_fields``, with
``join`` between them and between a list field's elements, empty ones left out: how an eval item's
question and choices become the text checked for overlap). With ``text_fields`` the record's fields
are all kept in ``meta`` as read, so what was joined can be shown and counted (an empty field) later.
"""

from __future__ import annotations

import bisect
import json
import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from operators.base import OperatorOutput, Params, SourceOperator
from operators.convert.json_objects import META_ENCODER, BlockFields, SampleColumns, fast_samples, parse_objects
from operators.convert.jsonl_blocks import LineBlock, read_blocks
from operators.convert.readers import READERS, RawRecord, ReadOptions, jsonl_record, line_record
from operators.convert.shared_blocks import (
    Segments,
    SharedColumns,
    SharedLines,
    discard_columns,
    exit_with,
    parse_shared,
    take_columns,
)
from operators.lineage_records import SOURCE_DETAIL, Verdict, detail_struct, lineage_batch
from operators.sample_ids import SAMPLE_ID_CHARS
from operators.schema import (
    QUARANTINE_SCHEMA,
    SAMPLE_SCHEMA,
    sample_id,
    sample_key_from_id,
    sample_key_from_position,
)
from operators.text import content_hashes
from storage import links
from storage.config import TierConfig
from storage.errors import Invalid
from storage.tier import Tier

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConvertParams(Params):
    text_field: str = "text"
    text_fields: tuple[str, ...] = ()  # when given: the text is these fields joined, and text_field is unused
    join: str = "\n"
    id_field: str | None = None  # None: ids come from (relative path, row)
    text_mode: str = "file"  # plain-text files: "file" = one document per file, "line" = one per line
    csv_delimiter: str | None = None
    max_record_bytes: int = 8 * 1024 * 1024
    quarantine_raw_bytes: int = 4096
    batch_rows: int = 4096

    def __post_init__(self) -> None:
        if self.text_mode not in ("file", "line"):
            raise Invalid(f"text_mode must be 'file' or 'line', not {self.text_mode!r}")
        if self.max_record_bytes <= 0 or self.batch_rows <= 0:
            raise Invalid("max_record_bytes and batch_rows must be positive")
        if isinstance(self.text_fields, str) or not all(isinstance(f, str) and f for f in self.text_fields):
            raise Invalid(f"text_fields must be a list of field names, not {self.text_fields!r}")
        object.__setattr__(self, "text_fields", tuple(self.text_fields))


# sample columns that fill ``detail.source``, in SOURCE_DETAIL's field order
_SOURCE_COLUMNS = ("source_dataset", "source_version", "source_uri", "source_path", "source_row", "source_offset")


def _field_text(value: object, join: str) -> str:
    """One field's part of a joined text: a string stripped, a list's elements joined, a number as written."""
    if value is None:
        return ""
    if isinstance(value, list):
        return join.join(part for part in (_field_text(v, join) for v in value) if part)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value).strip()


class _Builder:
    """Accumulates one output batch worth of samples and quarantine rows for one chunk."""

    def __init__(
        self, chunk: dict, tier: Tier, params: ConvertParams, run_id: str, hashes: bool = True, meta: bool = True
    ) -> None:
        self.chunk, self.params, self.run_id, self.hashes, self.meta = chunk, params, run_id, hashes, meta
        # a file whose name the tier refuses has no URI of its own: its row points at the tier root
        self.uri = tier.uri() if chunk["refused"] is not None else tier.uri(chunk["path"])
        self.samples: dict[str, list] = {name: [] for name in SAMPLE_SCHEMA.names}
        # a block a parser worker took whole, as Arrow columns (:meth:`_add_columns`), or None
        self.columns: dict[str, pa.Array] | None = None
        self.quarantine: list[dict] = []
        self.blank_lines = 0

    def __len__(self) -> int:
        held = len(self.columns["text"]) if self.columns is not None else 0
        return len(self.samples["text"]) + held + len(self.quarantine)

    def _to_lists(self) -> None:
        """The columns of a block taken whole, moved to the lists: rows are added after them."""
        if self.columns is not None:
            for name, values in self.columns.items():
                self.samples[name].extend(values.to_pylist())
            self.columns = None

    def add(self, rec: RawRecord) -> None:
        self._to_lists()
        if rec.reason == "blank_line":
            self.blank_lines += 1
            return
        if rec.reason is None:
            text, key, meta, reason, message = self._sample_fields(rec)
            if reason is None:
                s = self.samples
                s["sample_id"].append(sample_id(self.chunk["source_dataset"], key))
                s["text"].append(text)
                s["source_row"].append(rec.row)
                s["source_offset"].append(rec.offset)
                s["meta"].append(meta)
                return
            rec.reason, rec.message = reason, message
        raw = rec.raw
        self.quarantine.append(
            {
                "run_id": self.run_id,
                "source_dataset": self.chunk["source_dataset"],
                "source_uri": self.uri,
                "source_path": self.chunk["relative_path"],
                "source_row": rec.row,
                "source_offset": rec.offset,
                "reason": rec.reason,
                "message": rec.message,
                "raw": raw[: self.params.quarantine_raw_bytes] if raw is not None else None,
                "raw_size": len(raw) if raw is not None else None,
            }
        )

    def add_block(
        self, block: LineBlock, made: list[tuple[str, object, str | None] | None] | SampleColumns | None = None
    ) -> None:
        """A block of JSONL lines, as the per-record path would add them one by one: the lines
        :func:`~operators.convert.json_objects.fast_sample` takes become samples in bulk; every other
        line is added by :meth:`add` as :func:`jsonl_record` makes it, in its place. ``made`` is
        :func:`~operators.convert.json_objects.fast_columns` of the block when a parser process made it
        (or its ``fast_samples``)."""
        p, lines, offsets, first = self.params, block.lines, block.offsets, block.row
        if p.text_fields:  # the joined text: record by record, from the objects parsed here
            taken, objects = parse_objects(lines)
            parsed = dict(zip(taken, objects, strict=True))
            for i, line in enumerate(lines):
                value = parsed.get(i)
                if value is None:
                    self.add(jsonl_record(line_record(first + i, offsets[i], line, False, p.max_record_bytes)))
                else:
                    self.add(RawRecord(first + i, offsets[i], value=value, raw=line))
            return
        if isinstance(made, SampleColumns):
            if made.taken.count(0) == 0 and not self.samples["text"] and self.columns is None:
                self._add_columns(block, made)
                return
            made = made.samples()
        self._to_lists()
        if made is None:
            made = fast_samples(lines, p.text_field, p.id_field, self.meta)
        good = [i for i, m in enumerate(made) if m is not None]
        if len(good) < len(made):
            made = [made[i] for i in good]
        rows = [first + i for i in good]
        if p.id_field is None:
            path = self.chunk["relative_path"]
            keys = [sample_key_from_position(path, row) for row in rows]
        else:
            keys = [sample_key_from_id(m[1]) for m in made]  # type: ignore[index]
        dataset = self.chunk["source_dataset"]
        new = {
            "sample_id": [sample_id(dataset, key) for key in keys],
            "text": [m[0] for m in made],  # type: ignore[index]
            "source_row": rows,
            "source_offset": [offsets[i] for i in good],
            "meta": [m[2] for m in made],  # type: ignore[index]
        }
        # the lines left to the per-record path, and where each goes among the samples made here
        slow = sorted(set(range(len(lines))).difference(row - first for row in rows))
        done = 0
        for i in slow:
            cut = bisect.bisect_left(rows, first + i, lo=done)
            self._extend(new, done, cut)
            done = cut
            self.add(jsonl_record(line_record(first + i, offsets[i], lines[i], False, p.max_record_bytes)))
        self._extend(new, done, len(rows))

    def _add_columns(self, block: LineBlock, made: SampleColumns) -> None:
        """A block whose every line a parser worker took: its columns go to Arrow as they came, without a
        Python string per text or ``meta``."""
        n, first = len(block.lines), block.row
        valid = np.frombuffer(made.meta_valid, np.uint8).astype(bool)
        nulls = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        meta = pa.LargeStringArray.from_buffers(n, pa.py_buffer(made.meta_offsets), pa.py_buffer(made.meta), nulls)
        text = pa.LargeStringArray.from_buffers(n, pa.py_buffer(made.text_offsets), pa.py_buffer(made.text))
        self.columns = {
            "sample_id": pa.StringArray.from_buffers(
                n, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * SAMPLE_ID_CHARS), pa.py_buffer(made.sample_ids)
            ),
            "text": text.cast(pa.string()),
            "source_row": pa.array(np.arange(first, first + n, dtype=np.int64)),
            "source_offset": pa.array(block.offsets, pa.int64()),
            "meta": meta.cast(pa.string()),
        }

    def _extend(self, new: dict[str, list], start: int, stop: int) -> None:
        if stop > start:
            for name, values in new.items():
                self.samples[name].extend(values[start:stop] if start or stop < len(values) else values)

    def _sample_fields(self, rec: RawRecord) -> tuple[str, str, str | None, str | None, str | None]:
        """(text, key, meta_json, reason, message); reason is set when the record is refused."""
        p = self.params
        position_key = sample_key_from_position(self.chunk["relative_path"], rec.row)
        if isinstance(rec.value, str):  # plain text
            text, rest = rec.value, None
        elif p.text_fields:
            rest = dict(rec.value)
            missing = [f for f in p.text_fields if f not in rest]
            if len(missing) == len(p.text_fields):
                return "", "", None, "missing_text_field", f"none of the fields {list(p.text_fields)!r}"
            text = p.join.join(
                _field_text(rest.get(f), p.join) for f in p.text_fields if _field_text(rest.get(f), p.join)
            )
        else:
            rest = dict(rec.value)
            if p.text_field not in rest:
                return "", "", None, "missing_text_field", f"no field {p.text_field!r}"
            text = rest.pop(p.text_field)
            if not isinstance(text, str):
                return "", "", None, "text_not_string", f"{p.text_field!r} is {type(text).__name__}"
        if not text.strip():
            return "", "", None, "empty_text", "text is empty or whitespace"
        key = position_key
        if p.id_field is not None:
            record_id = None if rest is None else rest.get(p.id_field)
            if record_id is None or record_id == "":
                return "", "", None, "missing_id_field", f"no value in id field {p.id_field!r}"
            if not isinstance(record_id, str | int) or isinstance(record_id, bool):
                return "", "", None, "invalid_id", f"id field {p.id_field!r} is {type(record_id).__name__}"
            key = sample_key_from_id(record_id)
        try:
            meta = META_ENCODER.encode(rest) if rest else None
        except RecursionError:  # the reader parsed it, a few frames higher up the stack
            return "", "", None, "nesting_too_deep", "the record's other fields nest too deeply to serialise"
        return text, key, meta, None, None

    def flush(self) -> OperatorOutput:
        columns = self.columns or {
            name: pa.array(self.samples[name], SAMPLE_SCHEMA.field(name).type)
            for name in ("sample_id", "text", "source_row", "source_offset", "meta")
        }
        texts = columns["text"]
        n = len(texts)
        c = self.chunk
        batch = pa.RecordBatch.from_arrays(
            [
                columns["sample_id"],
                texts,
                content_hashes(texts) if self.hashes else pa.repeat(pa.scalar("", pa.string()), n),
                pa.repeat(pa.scalar(c["source_dataset"], pa.string()), n),
                pa.repeat(pa.scalar(c["source_version"], pa.int64()), n),
                pa.repeat(pa.scalar(self.uri, pa.string()), n),
                pa.repeat(pa.scalar(c["relative_path"], pa.string()), n),
                columns["source_row"],
                columns["source_offset"],
                columns["meta"] if self.meta else pa.nulls(n, pa.string()),
            ],
            schema=SAMPLE_SCHEMA,
        )
        source = pa.StructArray.from_arrays(
            [batch.column(name) for name in _SOURCE_COLUMNS], fields=list(SOURCE_DETAIL)
        )
        lineage = lineage_batch(
            operator=ConvertOperator.name,
            operator_version=ConvertOperator.version,
            sample_ids=batch.column(0),
            verdicts=pa.repeat(pa.scalar(Verdict.KEPT.value, pa.string()), n),
            detail=detail_struct(n, source=source),
        )
        quarantine = pa.RecordBatch.from_pylist(self.quarantine, schema=QUARANTINE_SCHEMA)
        out = OperatorOutput(batch, lineage, quarantine, {"blank_lines": self.blank_lines})
        self.samples = {name: [] for name in SAMPLE_SCHEMA.names}
        self.columns = None
        self.quarantine = []
        self.blank_lines = 0
        return out


class ConvertOperator(SourceOperator):
    name = "convert"
    version = "2"  # 2: strict CSV with byte offsets, BOM dropped, new quarantine reasons
    Params = ConvertParams

    def __init__(
        self,
        params: ConvertParams | dict | None = None,
        run_id: str = "",
        *,
        hashes: bool = True,
        meta: bool = True,
        blocks: bool = True,
    ) -> None:
        """``hashes=False`` leaves ``content_hash`` empty: for samples that never leave the process and
        are never deduplicated exactly (``lineage dedupe``), where hashing every text in Python was a
        fifth of convert's time. ``meta=False`` leaves ``meta`` null, for such samples too: serialising it
        was a third of a JSONL parser worker's time (a record refused for its ``meta``, nested too deeply,
        is refused all the same). ``blocks=False`` reads JSONL record by record
        (:func:`~operators.convert.readers.read_jsonl`), the reference the block path
        (:mod:`operators.convert.jsonl_blocks`) is tested against: the same samples, quarantine
        rows and stats."""
        super().__init__(params)
        self.run_id = run_id
        self.hashes = hashes
        self.meta = meta
        self.blocks = blocks
        # JSONL blocks parsed in this many worker processes beside this one (0: none): for a caller
        # that owns the machine's cores in one process (``lineage dedupe``); never in an engine's task
        self.parse_processes = 0
        # whether this process parses its share of the blocks too (with workers): not when it has
        # other work for its core, as ``lineage dedupe``'s sketching thread
        self.parse_here = True

    def read(self, chunks: pa.RecordBatch) -> Iterator[OperatorOutput]:
        p: ConvertParams = self.params  # type: ignore[assignment]
        opts = ReadOptions(p.max_record_bytes, p.text_mode, p.csv_delimiter, p.batch_rows)
        for chunk in chunks.to_pylist():
            if chunk["start"] != 0 or chunk["end"] is not None:
                raise ValueError("convert reads whole files; byte-range chunks are not supported")
            tier = Tier(TierConfig.model_validate_json(chunk["tier"]))
            if chunk["refused"] is None and chunk["format"] == "jsonl" and self.blocks:
                builder = _Builder(chunk, tier, p, self.run_id, hashes=False, meta=self.meta)
                yield from self._read_blocks(builder, tier, opts)
                continue
            builder = _Builder(chunk, tier, p, self.run_id, self.hashes, self.meta)
            if chunk["refused"] is not None:
                builder.add(RawRecord(None, None, reason="invalid_file_name", message=chunk["refused"]))
            else:
                # opened by its real path, checked again here: a link put in since planning is refused too
                path = links.real_path(tier, chunk["path"])
                for rec in READERS[chunk["format"]](tier.filesystem, path, opts, chunk["relative_path"]):
                    builder.add(rec)
                    if len(builder) >= p.batch_rows:
                        yield builder.flush()
            yield builder.flush()

    def _read_blocks(self, builder: _Builder, tier: Tier, opts: ReadOptions) -> Iterator[OperatorOutput]:
        """A JSONL file in blocks (:mod:`operators.convert.jsonl_blocks`). A block's content hashes
        are made on a second thread while the next block is parsed (Arrow's normalisation releases
        the GIL), so each output waits there for at most one block."""
        chunk = builder.chunk
        path = links.real_path(tier, chunk["path"])  # checked again here, as for every format
        with ThreadPoolExecutor(1, thread_name_prefix="convert-hash") as pool:
            pending: deque[Future[OperatorOutput]] = deque()

            def hand_over(out: OperatorOutput) -> Iterator[OperatorOutput]:
                pending.append(pool.submit(_with_hashes, out) if self.hashes else _done(out))
                while len(pending) > 1:
                    yield pending.popleft().result()

            items = read_blocks(tier.filesystem, path, opts, chunk["relative_path"])
            p = builder.params
            fields = BlockFields(p.text_field, p.id_field, chunk["source_dataset"], chunk["relative_path"], self.meta)
            # a joined text is made record by record here (Builder.add_block): no worker parses it
            parsed = _parsed(items, fields, 0 if p.text_fields else self.parse_processes, self.parse_here)
            for item, made in parsed:
                if isinstance(item, LineBlock):
                    builder.add_block(item, made)
                else:
                    builder.add(item)
                if isinstance(item, LineBlock) or len(builder) >= opts.batch_rows:
                    yield from hand_over(builder.flush())
            yield from hand_over(builder.flush())
            while pending:
                yield pending.popleft().result()


def _with_hashes(out: OperatorOutput) -> OperatorOutput:
    """``out`` with its samples' ``content_hash`` made (it was left empty)."""
    samples = out.samples
    columns = samples.columns
    columns[SAMPLE_SCHEMA.get_field_index("content_hash")] = content_hashes(samples.column("text"))
    batch = pa.RecordBatch.from_arrays(columns, schema=SAMPLE_SCHEMA)
    return OperatorOutput(batch, out.lineage, out.quarantine, out.stats)


def _done(out: OperatorOutput) -> Future[OperatorOutput]:
    future: Future[OperatorOutput] = Future()
    future.set_result(out)
    return future


# blocks this process parses before worker processes start: a one-block file never starts one. From the second
# block on the workers parse, while ``lineage dedupe``'s sketcher thread loads numba; with four blocks first, that
# load and their parsing shared this process's GIL (interleaved runs: 254,724 documents 5.05-5.26 s against
# 5.27-5.63 s, 20,000 documents 1.08-1.15 s against 1.16-1.20 s; 6,000 and 10 documents the same)
_INLINE_BLOCKS = 1
# an item read, and for a block sent to a worker its columns to come and its segment of lines
_InFlight = tuple[LineBlock | RawRecord, Future[SharedColumns | SampleColumns] | None, SharedLines | None]


def _parser_pool(processes: int) -> ProcessPoolExecutor | None:
    """Parser processes, or None when there can be none: a pool's locks live in /dev/shm, which some
    containers have read-only or not at all (the blocks are then parsed in this process)."""
    try:
        return ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=exit_with, initargs=(os.getpid(),)
        )
    except OSError as exc:
        log.warning("no parser processes (%s): blocks are parsed in this process, more slowly", exc)
        return None


def _parsed(
    items: Iterator[LineBlock | RawRecord], fields: BlockFields, processes: int, here: bool = True
) -> Iterator[tuple[LineBlock | RawRecord, SampleColumns | None]]:
    """``items`` in order, each block with its :func:`~operators.convert.json_objects.fast_columns` when
    a worker process made it (else None: the builder makes it). With ``processes`` workers, after
    :data:`_INLINE_BLOCKS` blocks, of every ``processes + 1`` blocks this process keeps one and the
    workers parse the others (two blocks each at most ahead), so convert's Python runs on more than one
    core; with ``here=False`` the workers parse every later block. The values are the same function's,
    so the samples are exactly the in-process ones."""
    if processes <= 0:
        yield from ((item, None) for item in items)
        return
    pool: ProcessPoolExecutor | None = None
    segments = Segments()  # blocks go to the workers through shared memory (why: operators.convert.shared_blocks)
    pending: deque[_InFlight] = deque()

    def next_done() -> tuple[LineBlock | RawRecord, SampleColumns | None]:
        done, fut, lines = pending[0]
        if fut is None or lines is None:
            pending.popleft()
            return done, None
        shared = fut.result()  # left in ``pending`` until then: interrupted, its columns are discarded below
        pending.popleft()
        try:
            return done, take_columns(shared)
        finally:
            segments.release(lines)

    blocks, pooled = 0, True  # pooled: until a pool of parser processes could not be made
    try:
        for item in items:
            future, lines = None, None
            if isinstance(item, LineBlock):
                blocks += 1
                if pooled and blocks > _INLINE_BLOCKS and (not here or blocks % (processes + 1)):
                    if pool is None:
                        pool = _parser_pool(processes)
                        pooled = pool is not None
                    if pool is not None:
                        lines = segments.share(item.lines)  # None: no room in /dev/shm, the builder parses it
                        if lines is not None:
                            future = pool.submit(parse_shared, lines, fields, item.row)
            pending.append((item, future, lines))
            while len(pending) > 2 * (processes + 1):
                yield next_done()
        while pending:
            yield next_done()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for _, fut, _ in pending:  # columns made but never taken: their segments go too
            if fut is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
                discard_columns(fut.result())
        segments.close()
