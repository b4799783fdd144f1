"""Tokenize a release and write it as training shards (Megatron ``.bin``/``.idx`` or MDS), on any tier.

Protocol.

* **Order.** Documents are the release's samples ordered by ``xxh3_64(seed, sample_id)`` (ties by
  id), so the order depends on the release's content and the seed, never on its file layout. A
  release with a mixture serves each sample its ``repeats`` (:func:`served_order`): pass 0 holds every
  sample, pass ``p`` those with more than ``p`` copies, each pass in its own such order; the
  manifest's ``repeat_passes`` says where each pass starts, so a document's pass is its repeat index.
* **Sequences.** Every document is its tokens followed by the EOD id. Megatron and unpacked MDS write
  one sequence per document; packed MDS (``pack``) concatenates the documents and cuts the stream into
  sequences of ``seq_len + 1`` tokens (the last one may be shorter: nothing is dropped).
* **Shards.** A shard holds whole sequences and is at most ``shard_size`` bytes (a single sequence
  larger than that gets a shard of its own). A shard is built in memory, written under a hidden
  ``.NAME.partial`` name and renamed (on S3 a PUT is all-or-nothing, so it is written in place);
  a Megatron shard's ``.idx`` is renamed after its ``.bin``, so a shard without its ``.idx`` is no shard.
* **Resume.** After each shard, ``_progress.json`` (written the same way) records the shard's files,
  checksums and where the next shard starts (document and token offset). A killed export rerun with
  the same options keeps the recorded shards and goes on from there; with other options it is refused.
* **Done.** ``index.json`` (MDS) and then ``manifest.json`` are written last; ``manifest.json``
  present means the export is complete. The same (release, tokenizer digest, options, seed) always
  gives byte-identical shards.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import xxhash

from lineage.catalog import Catalog
from lineage.catalog.queries import get_release
from lineage.errors import Conflict, Invalid, MissingExtra, NotFound
from lineage.releases import training_formats as F
from lineage.releases.tokenize_jobs import TokenizeTask, encoded_batches
from lineage.releases.tokenize_jobs import check as check_engine
from lineage.settings import Settings
from operators.mixture import served_repeats, serving_rules
from pipelines.faults import checkpoint
from storage.delta import version_dataset
from storage.output_paths import output_folder
from storage.tier import Tier, get_tier, local_tier

log = logging.getLogger(__name__)

FORMATS = ("megatron", "mds")
EOD_CANDIDATES = ("<|endoftext|>", "</s>", "<eos>", "<|eos|>", "[EOS]")
BATCH_DOCS = 1000
MANIFEST = "manifest.json"
PROGRESS = "_progress.json"
LINEAGE_DIR = "sequence-lineage"
# The sequence-lineage table: one row per (sequence, sample piece), sorted by sequence then position.
LINEAGE_SCHEMA = pa.schema(
    [
        ("sequence", pa.int64()),  # global index in the export
        ("shard", pa.int32()),
        ("shard_sequence", pa.int32()),  # index in its shard (what a shard reader sees)
        ("sample_id", pa.string()),
        ("source_dataset", pa.string()),
        ("seq_start", pa.int32()),  # the sample's tokens are [seq_start, seq_start + length) of the sequence
        ("length", pa.int32()),
        ("doc_start", pa.int64()),  # ... and [doc_start, doc_start + length) of the sample's tokens + EOD
    ]
)
MANIFEST_FORMAT = 1
# rows per row group of a sequence-lineage table: "the samples of sequence k" reads only the row group
# whose sequence statistics hold k, not the shard's whole table
LINEAGE_ROW_GROUP = 4096


@dataclass(frozen=True)
class ExportOptions:
    """What an export is a function of, besides the release and the tokenizer's bytes."""

    format: str
    tokenizer: Path
    seq_len: int | None = None
    pack: bool = False
    shard_size: int = 64 << 20
    seed: int = 0
    eod_token: str | None = None

    def check(self) -> None:
        if self.format not in FORMATS:
            raise Invalid(f"unknown training format {self.format!r}: use megatron or mds")
        if self.pack and self.format != "mds":
            raise Invalid("--pack is for mds: Megatron's GPTDataset packs documents into sequences when it reads")
        if self.pack and not self.seq_len:
            raise Invalid("--pack needs --seq-len N (sequences of N + 1 tokens)")
        if self.seq_len is not None and not self.pack:
            raise Invalid("--seq-len applies to packed sequences: add --pack (mds), or leave it out")
        if self.seq_len is not None and self.seq_len < 1:
            raise Invalid(f"--seq-len must be at least 1, got {self.seq_len}")
        if self.shard_size < 1024 or self.shard_size >= 1 << 32:
            raise Invalid(f"--shard-size must be between 1 KiB and 4 GiB, got {self.shard_size}")


@dataclass(frozen=True)
class Piece:
    """Tokens ``[doc_start, doc_start + length)`` of one sample, at ``seq_start`` in its sequence."""

    sample_id: str
    source: str
    seq_start: int
    doc_start: int
    length: int


@dataclass
class Sequence:
    tokens: np.ndarray
    pieces: list[Piece]
    start: tuple[int, int]  # (document, token offset) of its first token


@dataclass
class ShardRecord:
    index: int
    files: list[dict[str, Any]]  # the shard: Megatron .bin and .idx, or the .mds file
    lineage: dict[str, Any]  # its sequence-lineage table (Parquet)
    first_sequence: int  # the global index of its first sequence
    sequences: int
    tokens: int
    end: tuple[int, int]
    tokens_by_source: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "files": self.files,
            "lineage": self.lineage,
            "first_sequence": self.first_sequence,
            "sequences": self.sequences,
            "tokens": self.tokens,
            "end": list(self.end),
            "tokens_by_source": self.tokens_by_source,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShardRecord:
        return cls(
            d["index"],
            d["files"],
            d["lineage"],
            d["first_sequence"],
            d["sequences"],
            d["tokens"],
            tuple(d["end"]),
            d["tokens_by_source"],
        )


@dataclass
class Tokenizer:
    """A ``tokenizers`` tokenizer.json, known by the xxh3-128 of its bytes."""

    path: str
    digest: str
    vocab_size: int
    eod_id: int
    eod_token: str
    json: str = field(repr=False)

    @classmethod
    def load(cls, path: Path, eod_token: str | None) -> Tokenizer:
        MissingExtra.require("tokenizers", "export", "a megatron or mds export")
        from tokenizers import Tokenizer as HfTokenizer  # extra: export

        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"no tokenizer file {path}") from None
        try:
            impl = HfTokenizer.from_str(data.decode("utf-8"))
        except Exception as exc:  # tokenizers raises its own Exception for a malformed file
            raise Invalid(f"{path} is not a tokenizers tokenizer.json: {exc}") from None
        vocab = impl.get_vocab(with_added_tokens=True)
        names = (eod_token,) if eod_token else EOD_CANDIDATES
        found = next((t for t in names if t in vocab), None)
        if found is None:
            raise Invalid(
                f"{path} has no end-of-document token {eod_token!r}"
                if eod_token
                else f"{path} has none of {', '.join(EOD_CANDIDATES)}: name one with --eod-token"
            )
        digest = xxhash.xxh3_128_hexdigest(data)
        return cls(str(path), digest, impl.get_vocab_size(True), vocab[found], found, data.decode("utf-8"))


@dataclass
class TokenizedExport:
    """What an export wrote: its folder on the tier and its manifest (``manifest.json``)."""

    tier: str | None  # None: a local folder, and ``path`` is absolute
    path: str  # else relative to the tier's root
    manifest: dict[str, Any]
    release_id: int
    resumed_shards: int = 0
    lineage_seconds: float = 0.0  # spent building and writing the sequence-lineage tables (benchmarks/export.py)


def export_tokenized(
    catalog: Catalog,
    settings: Settings,
    ref: str,
    out: str,
    options: ExportOptions,
    tier_name: str | None = None,
    progress: Callable[[int], None] = lambda _n: None,
    engine: str = "local",
) -> TokenizedExport:
    """Tokenize release ``ref`` into ``<out>/<name>-<tag>.<format>/`` on ``tier_name`` (or a local
    folder ``out`` when no tier is named), tokenizing on ``engine`` (the shards are the same on each)."""
    options.check()
    check_engine(engine)
    tokenizer = Tokenizer.load(options.tokenizer, options.eod_token)
    with catalog.session() as s:
        release = get_release(s, ref)
        dv = release.dataset_version
        data_tier = get_tier(dv.tier, settings)
        dataset = version_dataset(data_tier, dv.data_path, dv.data_delta_version)
        name, tag, content_digest, release_id = release.name, release.tag, release.content_digest, release.id
        mixture = (release.manifest or {}).get("mixture")
    _check_mixture_tokenizer(mixture, tokenizer)
    folder = f"{name}-{tag}.{options.format}"
    if tier_name is None:
        root = output_folder(Path(out).resolve())
        tier, prefix = local_tier(root, name="export"), folder
        where = str(output_folder(root / folder))
    else:
        tier, prefix = get_tier(tier_name, settings), f"{out.strip('/')}/{folder}".lstrip("/")
        where = prefix
    dtype = F.token_dtype(tokenizer.vocab_size)
    identity = {
        "release": f"{name}@{tag}",
        "release_digest": content_digest,
        "tokenizer_digest": tokenizer.digest,
        "eod_id": tokenizer.eod_id,
        "dtype": dtype.name,
        "format": options.format,
        "seq_len": options.seq_len,
        "pack": options.pack,
        "shard_size": options.shard_size,
        "seed": options.seed,
    }
    export_id = xxhash.xxh3_128_hexdigest(json.dumps(identity, sort_keys=True).encode())
    writer = _ShardWriter(tier, prefix, options, dtype)

    done = writer.read_json(MANIFEST)
    if done is not None:
        if done.get("export_id") != export_id:
            raise Conflict(f"{tier.name}:{prefix} holds another export ({done.get('export_id')}); choose another --out")
        progress(int(done["samples"]))
        return TokenizedExport(tier_name, where, done, release_id, resumed_shards=len(done["shards"]))

    shards = writer.resume(export_id)
    resumed = len(shards)
    table = dataset.to_table(columns=["sample_id", "text", "source_dataset"])
    order, pass_starts = served_order(table, options.seed, mixture)
    start = shards[-1].end if shards else (0, 0)
    progress(start[0])
    sequences = _sequences(table, order, tokenizer, options, start, progress, engine, settings)
    for record in writer.write_shards(sequences, list(shards), len(order)):
        shards.append(record)
        writer.write_progress(export_id, shards)

    manifest = {
        "format": MANIFEST_FORMAT,
        "kind": "training-export",
        "export_id": export_id,
        **identity,
        "tokenizer": {
            "path": tokenizer.path,
            "digest": f"xxh3-128:{tokenizer.digest}",
            "vocab_size": tokenizer.vocab_size,
            "eod_token": tokenizer.eod_token,
        },
        "samples": len(order),
        **({"repeat_passes": pass_starts} if mixture else {}),
        "sequences": sum(r.sequences for r in shards),
        "tokens": sum(r.tokens for r in shards),
        "tokens_by_source": _sum_sources(shards),
        "shards": [r.as_dict() for r in shards],
    }
    if options.format == "mds":
        config = F.mds_config(dtype, options.shard_size)
        entries = [(Path(r.files[0]["path"]).name, r.sequences, r.files[0]["bytes"]) for r in shards]
        writer.put("index.json", F.mds_index(entries, config))
    writer.put(MANIFEST, json.dumps(manifest, sort_keys=True, indent=1).encode())
    writer.delete(PROGRESS)
    return TokenizedExport(tier_name, where, manifest, release_id, resumed, writer.lineage_seconds)


def _check_mixture_tokenizer(mixture: dict[str, Any] | None, tokenizer: Tokenizer) -> None:
    """A release mixed by tokens names its tokenizer (path and digest): the export shares it. The same
    path with other bytes is refused; another tokenizer is allowed, with a warning."""
    pinned = (mixture or {}).get("tokenizer")
    if not pinned or pinned["digest"] == tokenizer.digest:
        return
    if Path(pinned["path"]).resolve() == Path(tokenizer.path).resolve():
        raise Invalid(
            f"tokenizer {tokenizer.path} has digest xxh3-128:{tokenizer.digest}, but the release was mixed by tokens "
            f"with xxh3-128:{pinned['digest']} from that path: the file changed"
        )
    log.warning(
        "the release was mixed by the tokens of %s (xxh3-128:%s); this export uses %s (xxh3-128:%s)",
        pinned["path"],
        pinned["digest"],
        tokenizer.path,
        tokenizer.digest,
    )


def document_order(sample_ids: pa.ChunkedArray | pa.Array, seed: int, stream: int = 0) -> np.ndarray:
    """Row positions in export order: by xxh3-64 of (seed, sample id), then by id.

    ``stream`` > 0 gives another order of the same ids (a mixture's later passes)."""
    ids = sample_ids.to_pylist()
    salt = (f"{seed}\x00" if not stream else f"{seed}\x00{stream}\x00").encode()
    keys = np.fromiter((xxhash.xxh3_64_intdigest(salt + i.encode()) for i in ids), dtype=np.uint64, count=len(ids))
    return np.lexsort((np.array(ids, dtype=object), keys))


def served_order(table: pa.Table, seed: int, mixture: dict[str, Any] | None) -> tuple[np.ndarray, list[int]]:
    """(row positions in export order, the position where each repeat pass starts).

    Without a mixture every sample is one document (one pass). With one, a sample of ``repeats``
    copies is a document in each of passes 0 … repeats − 1: whole passes first, then the remainder
    (the rule's hash-chosen samples); each pass is in its own :func:`document_order`, so a copy's
    repeat index is the pass its position falls in."""
    rules = serving_rules(mixture)
    ids = table.column("sample_id")
    if rules is None:
        return document_order(ids, seed), [0]
    copies = served_repeats(rules, ids.to_pylist(), table.column("source_dataset").to_pylist())
    parts, starts, at = [], [], 0
    for p in range(int(copies.max()) if len(copies) else 1):
        subset = np.flatnonzero(copies > p)
        parts.append(subset[document_order(ids.take(pa.array(subset)), seed, p)])
        starts.append(at)
        at += len(subset)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64), starts


def _sequences(
    table: pa.Table,
    order: np.ndarray,
    tokenizer: Tokenizer,
    options: ExportOptions,
    start: tuple[int, int],
    progress: Callable[[int], None],
    engine: str = "local",
    settings: Settings | None = None,
) -> Iterator[Sequence]:
    """The export's sequences from document ``start[0]``, token ``start[1]`` on."""
    docs = _documents(table, order, tokenizer, start, progress, engine, settings)
    if not options.pack:
        for position, sample_id, source, tokens in docs:
            yield Sequence(tokens, [Piece(sample_id, source, 0, 0, len(tokens))], (position, 0))
        return
    size = (options.seq_len or 0) + 1
    buffer: list[np.ndarray] = []
    pieces: list[Piece] = []
    filled = 0
    first: tuple[int, int] = start
    for position, sample_id, source, tokens in docs:
        base = start[1] if position == start[0] else 0  # the resumed document starts mid-way
        local = 0
        while local < len(tokens):
            if not pieces:
                first = (position, base + local)
            take = min(size - filled, len(tokens) - local)
            buffer.append(tokens[local : local + take])
            pieces.append(Piece(sample_id, source, filled, base + local, take))
            filled += take
            local += take
            if filled == size:
                yield Sequence(np.concatenate(buffer), pieces, first)
                buffer, pieces, filled = [], [], 0
    if pieces:
        yield Sequence(np.concatenate(buffer), pieces, first)


def _documents(
    table: pa.Table,
    order: np.ndarray,
    tokenizer: Tokenizer,
    start: tuple[int, int],
    progress: Callable[[int], None],
    engine: str = "local",
    settings: Settings | None = None,
) -> Iterator[tuple[int, str, str, np.ndarray]]:
    """(position, sample id, source, tokens + EOD) for each document from ``start``; the first one
    without its first ``start[1]`` tokens. Batches are tokenized in process or on ``engine``."""
    task = TokenizeTask(tokenizer.json, tokenizer.digest, tokenizer.eod_id, F.token_dtype(tokenizer.vocab_size).name)
    pending: deque[tuple[int, list[str], list[str]]] = deque()

    def texts() -> Iterator[list[str]]:
        for lo in range(start[0], len(order), BATCH_DOCS):
            batch = table.take(pa.array(order[lo : lo + BATCH_DOCS]))
            pending.append((lo, batch.column("sample_id").to_pylist(), batch.column("source_dataset").to_pylist()))
            yield batch.column("text").to_pylist()

    encoded = map(task, texts()) if engine == "local" else encoded_batches(engine, settings, task, texts())
    for arrays in encoded:
        lo, ids, sources = pending.popleft()
        for k, (sample_id, source, array) in enumerate(zip(ids, sources, arrays, strict=True)):
            if lo + k == start[0] and start[1]:
                array = array[start[1] :]
            yield lo + k, sample_id, source, array
        progress(len(ids))


def sequence_lineage(shard: int, first: int, batch: list[Sequence]) -> bytes:
    """The shard's sequence-lineage table as Parquet bytes (deterministic for the same pyarrow)."""
    rows: dict[str, list[Any]] = {name: [] for name in LINEAGE_SCHEMA.names}
    for k, q in enumerate(batch):
        for p in q.pieces:
            for key, value in (
                ("sequence", first + k),
                ("shard", shard),
                ("shard_sequence", k),
                ("sample_id", p.sample_id),
                ("source_dataset", p.source),
                ("seq_start", p.seq_start),
                ("length", p.length),
                ("doc_start", p.doc_start),
            ):
                rows[key].append(value)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(rows, schema=LINEAGE_SCHEMA), sink, compression="zstd", row_group_size=LINEAGE_ROW_GROUP)
    return sink.getvalue().to_pybytes()


def _sum_sources(shards: list[ShardRecord]) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for r in shards:
        for source, n in r.tokens_by_source.items():
            total[source] += n
    return dict(sorted(total.items()))


class _ShardWriter:
    """Shards of one export under ``prefix`` on ``tier``: sizing, atomic writes, the progress record."""

    def __init__(self, tier: Tier, prefix: str, options: ExportOptions, dtype: np.dtype) -> None:
        self.tier, self.prefix, self.options, self.dtype = tier, prefix, options, dtype
        self.fs = tier.filesystem
        self.fs.create_dir(tier.path(prefix), recursive=True)
        self.config_json = F.mds_config_json(F.mds_config(dtype, options.shard_size))
        self.lineage_seconds = 0.0

    # -- files ------------------------------------------------------------------------------
    def _path(self, name: str) -> str:
        return self.tier.path(self.prefix, name)

    def put(self, name: str, data: bytes) -> None:
        """Write ``name`` so that it is either absent or whole."""
        if self.tier.kind == "s3":  # a PUT is visible only once complete; a rename would be a copy
            with self.fs.open_output_stream(self._path(name)) as fh:
                fh.write(data)
            return
        partial = self._partial(name, data)
        self.fs.move(partial, self._path(name))

    def _partial(self, name: str, data: bytes) -> str:
        folder, _, base = name.rpartition("/")
        partial = self._path(f"{folder}/.{base}.partial" if folder else f".{base}.partial")
        with self.fs.open_output_stream(partial) as fh:
            fh.write(data)
        return partial

    def read_json(self, name: str) -> dict[str, Any] | None:
        try:
            with self.fs.open_input_stream(self._path(name)) as fh:
                return json.loads(fh.read())
        except FileNotFoundError:
            return None

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self._path(name))

    def _size(self, name: str) -> int | None:
        info = self.fs.get_file_info(self._path(name))
        return info.size if info.type == pafs.FileType.File else None

    # -- progress ---------------------------------------------------------------------------
    def resume(self, export_id: str) -> list[ShardRecord]:
        """The shards a killed run of this export finished (checked by size), or none."""
        state = self.read_json(PROGRESS)
        if state is None:
            return []
        if state.get("export_id") != export_id:
            raise Conflict(
                f"{self.tier.name}:{self.prefix} holds an unfinished export with other options "
                f"({state.get('export_id')}); rerun it with those options, or choose another --out"
            )
        kept: list[ShardRecord] = []
        for d in state["shards"]:
            record = ShardRecord.from_dict(d)
            if any(self._size(f["path"]) != f["bytes"] for f in [*record.files, record.lineage]):
                break
            kept.append(record)
        log.info("resuming %s:%s after %d finished shards", self.tier.name, self.prefix, len(kept))
        return kept

    def write_progress(self, export_id: str, shards: list[ShardRecord]) -> None:
        body = {"export_id": export_id, "shards": [r.as_dict() for r in shards]}
        self.put(PROGRESS, json.dumps(body, sort_keys=True).encode())

    # -- shards -----------------------------------------------------------------------------
    def _empty_size(self) -> int:
        return F.mds_shard_overhead(0, self.config_json) if self.options.format == "mds" else 0

    def _cost(self, sequence: Sequence) -> int:
        """The bytes ``sequence`` adds to its shard's data file."""
        data = len(sequence.tokens) * self.dtype.itemsize
        return F.mds_sample_size(len(sequence.tokens), self.dtype) + 4 if self.options.format == "mds" else data

    def write_shards(
        self, sequences: Iterator[Sequence], done: list[ShardRecord], documents: int
    ) -> Iterator[ShardRecord]:
        """Cut ``sequences`` into shards of at most ``shard_size`` bytes after the ``done`` ones; yield
        each once written."""
        index, batch, size = len(done), [], self._empty_size()
        first = sum(r.sequences for r in done)
        for sequence in sequences:
            cost = self._cost(sequence)
            if batch and size + cost > self.options.shard_size:
                yield self._write(index, first, batch, sequence.start)
                index, first, batch, size = index + 1, first + len(batch), [], self._empty_size()
            batch.append(sequence)
            size += cost
        if batch:
            yield self._write(index, first, batch, (documents, 0))

    def _write(self, index: int, first: int, batch: list[Sequence], end: tuple[int, int]) -> ShardRecord:
        if self.options.format == "megatron":
            data = b"".join(q.tokens.tobytes() for q in batch)
            idx = F.megatron_index(np.array([len(q.tokens) for q in batch]), self.dtype)
            files = [(f"shard_{index:05d}.bin", data), (f"shard_{index:05d}.idx", idx)]
        else:
            samples = [F.mds_sample(q.tokens) for q in batch]
            files = [(f"shard.{index:05d}.mds", F.mds_shard(samples, self.config_json))]
        by_source: dict[str, int] = defaultdict(int)
        for q in batch:
            for p in q.pieces:
                by_source[p.source] += p.length
        started = time.perf_counter()
        lineage = (f"{LINEAGE_DIR}/shard_{index:05d}.parquet", sequence_lineage(index, first, batch))
        self.lineage_seconds += time.perf_counter() - started
        files.insert(0, lineage)  # the table first: a visible shard always has its lineage
        if self.tier.kind == "s3":
            checkpoint(f"export_shard_{index}")
            for name, blob in files:
                self.put(name, blob)
        else:
            self.fs.create_dir(self._path(LINEAGE_DIR), recursive=True)
            partials = [(self._partial(name, blob), name) for name, blob in files]
            checkpoint(f"export_shard_{index}")  # crash tests: killed with the shard written, not yet visible
            for partial, name in partials:  # a Megatron .idx last: no .idx, no shard
                self.fs.move(partial, self._path(name))
        described = [
            {"path": name, "bytes": len(blob), "xxh3_128": xxhash.xxh3_128_hexdigest(blob)} for name, blob in files
        ]
        return ShardRecord(
            index=index,
            files=described[1:],
            lineage=described[0],
            first_sequence=first,
            sequences=len(batch),
            tokens=sum(len(q.tokens) for q in batch),
            end=end,
            tokens_by_source=dict(sorted(by_source.items())),
        )
