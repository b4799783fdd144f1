"""``open_release``: a training job's deterministic, sharded, resumable view of one release."""

from __future__ import annotations

import getpass
import logging
import os
import socket
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from lineage.errors import Invalid, Unauthorized
from lineage.reader.files import Location, ReleaseFiles, ordered_locations
from lineage.reader.gather import Window, as_views, plain_schema
from lineage.reader.order import Block, EpochOrder, PassOrder, Remainder, Shard
from lineage.reader.shared_windows import SharedWindows
from lineage.settings import Settings, get_settings
from operators.mixture import served_repeats, serving_rules
from storage.verified import ChecksumMismatch

if TYPE_CHECKING:
    from lineage.client import Client

log = logging.getLogger(__name__)

STATE_VERSION = 1
REPEAT_COLUMN = "repeat"  # a mixture release's served copies: which repeat of its sample each is (0, 1, ...)
MAX_DECODE_THREADS = 8
REMOTE_DECODERS_PER_CORE = 2
OPEN_FILES_PER_THREAD = 8


class ManifestSource(Protocol):
    """Where a reader gets a release's manifest and records its use: the service, in-process or over HTTP."""

    def manifest(self, ref: str) -> tuple[dict[str, Any], str, list[Location]]:
        """(manifest, content digest, every replica the catalog records, in any state)."""

    def record_read(self, ref: str, job: str, world_size: int, rank: int, override_reason: str | None = None) -> None:
        """A usage record; the service refuses one of a withdrawn release without ``override_reason``."""


class ServiceSource:
    """Reads manifests through the service (:class:`lineage.Client`): over HTTP, for a job that only
    knows the service's URL and a token, or in-process.

    The manifest must match the release's content digest, so the file checksums the reader then
    verifies are the ones the catalog recorded at publish time.
    """

    def __init__(self, client: Client) -> None:
        self.client = client

    def manifest(self, ref: str) -> tuple[dict[str, Any], str, list[Location]]:
        # start-up: keeps deltalake and DuckDB out of `import lineage.reader`
        from lineage.releases import content_digest

        try:
            release = self.client.get_release(ref)
        except Unauthorized as exc:
            raise Unauthorized(f"{exc} (open_release: pass token= or set LINEAGE_SERVICE_TOKEN)") from exc
        if release.state != "published":
            log.warning("release %s is %s", ref, release.state)
        manifest = self.client.get_manifest(ref).as_dict()
        if content_digest(manifest) != release.content_digest:
            raise ChecksumMismatch(
                f"release {ref}: the manifest from {self.client.url or 'the service'} does not match the release's "
                f"content digest {release.content_digest[:12]}"
            )
        # every state: a release whose only replica is corrupt must fail, not fall back to the manifest's table
        replicas = [Location(r.tier, r.table_path, r.state, r.detail) for r in self.client.list_replicas(ref)]
        return manifest, release.content_digest, replicas

    def export(self, export_id: str) -> Any:
        """The export's catalog record (``ExportOut``: release, tier, path, manifest)."""
        return self.client.get_export(export_id)

    def record_read(self, ref: str, job: str, world_size: int, rank: int, override_reason: str | None = None) -> None:
        self.client.record_read(
            ref, job=job, world_size=world_size, rank=rank, host=socket.gethostname(), override_reason=override_reason
        )


class CatalogSource(ServiceSource):
    """The catalog of ``settings``, through an in-process service (no server): the same look-ups and
    checks as over HTTP. Its reads are recorded as the user running the job."""

    def __init__(self, settings: Settings) -> None:
        from lineage.client import Client  # start-up: the service (SQLAlchemy, DuckDB) not at `import lineage.reader`

        client = Client(settings=settings)
        client.actor = getpass.getuser()
        super().__init__(client)


@contextmanager
def manifest_source(
    settings: Settings, *, client: Client | None = None, url: str | None = None, token: str | None = None
) -> Iterator[ManifestSource]:
    """The service when given a ``client`` or a ``url`` (or the ``service_url`` setting), else the catalog.

    What is opened here is closed once the reader has its manifest and recorded its read. The
    ``service_token`` setting is only sent to the ``service_url`` it belongs to.
    """
    if client is not None:
        yield ServiceSource(client)
        return
    if url is None and settings.service_url is None:
        source = CatalogSource(settings)
        with source.client:  # closing an in-process client disposes of its catalog
            yield source
        return
    from lineage.client import Client  # start-up: keeps the SDK (SQLAlchemy, DuckDB) out of `import lineage.reader`

    target = url or settings.service_url or ""
    own_service = target.rstrip("/") == (settings.service_url or "").rstrip("/")
    if token is None and own_service and settings.service_token is not None:
        token = settings.service_token.get_secret_value()
    with Client(target, token) as made:
        yield ServiceSource(made)


def node_world_size(local_world_size: int | None = None) -> int:
    """How many ranks run on this node: ``local_world_size``, else ``$LOCAL_WORLD_SIZE`` (torchrun
    sets it), else 1."""
    return max(1, local_world_size or int(os.environ.get("LOCAL_WORLD_SIZE") or 1))


class ReleaseReader:
    """Iterates one rank's share of a release for one epoch; see :mod:`lineage.reader.order`."""

    def __init__(
        self,
        ref: str,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        epoch: int = 0,
        batch_size: int = 1024,
        columns: list[str] | None = None,
        as_dicts: bool = False,
        shuffle: bool = True,
        remainder: Remainder = "drop",
        window_blocks: int = 4,
        string_views: bool = True,
        local_world_size: int | None = None,
        worker: int = 0,
        num_workers: int = 1,
        decode_threads: int | None = None,
        prefetch: bool = True,
        verify: bool = True,
        prefer_tier: str | None = None,
        job: str | None = None,
        override_reason: str | None = None,
        source: ManifestSource | None = None,
        client: Client | None = None,
        url: str | None = None,
        token: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        if batch_size < 1:
            raise Invalid("batch_size must be positive")
        if decode_threads is not None and decode_threads < 1:
            raise Invalid("decode_threads must be positive (or None: one per core this rank gets)")
        if sum(x is not None for x in (source, client, url)) > 1:
            raise Invalid("give at most one of source=, client= and url=")
        self.ref, self.seed, self.epoch, self.batch_size = ref, seed, epoch, batch_size
        self.columns, self.as_dicts, self.shuffle, self.window_blocks = columns, as_dicts, shuffle, window_blocks
        self.string_views = string_views
        self.settings = settings or get_settings()
        with ExitStack() as opened:
            if source is None:
                source = opened.enter_context(manifest_source(self.settings, client=client, url=url, token=token))
            manifest, self.digest, replicas = source.manifest(ref)
            self.manifest = manifest
            known = [f["name"] for f in manifest["schema"]["fields"]]
            if unknown := sorted(set(columns or ()) - set(known)):
                raise Invalid(f"release {ref} has no column {', '.join(unknown)}; it has {', '.join(known)}")
            job = job or os.environ.get("LINEAGE_JOB") or f"{getpass.getuser()}@{socket.gethostname()}:{os.getpid()}"
            # before a file is opened: the service refuses a withdrawn release unless there is a reason, and
            # a purged one always (its files are gone: the refusal says so, not a missing file)
            source.record_read(ref, job, world_size, rank, override_reason)
            self.files = ReleaseFiles(
                manifest, ordered_locations(manifest, replicas, prefer_tier, self.settings), self.settings, verify
            )
            self.blocks = [
                Block(i, g, rows)
                for i in range(len(manifest["files"]))
                for g, rows in enumerate(self.files.row_groups(i))
            ]
            self._block_index = {(b.file, b.row_group): k for k, b in enumerate(self.blocks)}
            total = sum(b.rows for b in self.blocks)
            if total != manifest["row_count"]:
                raise OSError(f"release {ref}: files hold {total} rows, manifest says {manifest['row_count']}")
            self.repeats = self._repeats()
            if self.repeats is not None:
                total = sum(int(r.sum()) for r in self.repeats)
            self.shard = Shard(total, world_size, rank, remainder, worker, num_workers)
        self.consumed = 0
        local = node_world_size(local_world_size)
        # the node's cores are shared by its ranks (and their DataLoader workers): more decoders than
        # that only contend, unless they mostly wait for an object store
        per_core = REMOTE_DECODERS_PER_CORE if self.files.remote else 1
        self._decode_threads = decode_threads or max(
            1, min(MAX_DECODE_THREADS, per_core * (os.cpu_count() or 2) // (local * num_workers))
        )
        # a second window in flight keeps several decoders busy; with one it only costs memory
        self._prefetch = (2 if self._decode_threads > 1 else 1) if prefetch else 0
        self._threads_pid = -1  # the process the thread pools below belong to
        self._start_threads()
        node = rank // local
        self._node_ranks = range(node * local, min((node + 1) * local, world_size))

    # -- a mixture's repeats --------------------------------------------------------------------
    def _repeats(self) -> list[np.ndarray] | None:
        """Per block, how many times each of its rows is served (a mixture's rule), or None: once each.

        Read once at open from the blocks' ``sample_id`` and ``source_dataset`` columns."""
        rules = serving_rules(self.manifest.get("mixture"))
        if rules is None:
            return None
        out: list[np.ndarray] = []
        for file in range(len(self.manifest["files"])):
            with self.files.open(file) as handle:
                for group in range(handle.num_row_groups):
                    ids = handle.read_row_group(group, columns=["sample_id", "source_dataset"])
                    copies = served_repeats(rules, ids.column(0).to_pylist(), ids.column(1).to_pylist())
                    out.append(copies.astype(np.int32))
        return out

    def _served_rows(self, blocks: tuple[Block, ...], repeat: int) -> np.ndarray:
        """Rows of a window (its blocks in (file, row group) order) served in pass ``repeat``."""
        assert self.repeats is not None
        rows, offset = [], 0
        for block in sorted(blocks, key=lambda b: (b.file, b.row_group)):
            copies = self.repeats[self._block_index[(block.file, block.row_group)]]
            rows.append(np.flatnonzero(copies > repeat) + offset)
            offset += len(copies)
        return np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)

    def order(self) -> EpochOrder:
        """This epoch's order over every served copy (see :class:`~lineage.order.reader.PassOrder`)."""
        if self.repeats is None:
            return EpochOrder(
                self.blocks, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle, window_blocks=self.window_blocks
            )
        passes = int(max((int(r.max()) for r in self.repeats if len(r)), default=1))
        served = [[int((r > p).sum()) for r in self.repeats] for p in range(passes)]
        return PassOrder(
            self.blocks,
            served,
            seed=self.seed,
            epoch=self.epoch,
            shuffle=self.shuffle,
            window_blocks=self.window_blocks,
        )

    # -- iteration ----------------------------------------------------------------------------
    def _start_threads(self) -> None:
        """The decoder and prefetch pools, kept for every epoch: a new thread starts with a cold
        allocator heap (mimalloc's are per thread), which cost the second epoch of 8 ranks a third
        more time in page faults. A process forked from this one (a DataLoader worker, say) gets
        pools of its own: the parent's threads do not exist there, and its pools would never run."""
        if self._threads_pid == os.getpid():
            return
        decoders = self._decode_threads
        self._decoders = ThreadPoolExecutor(decoders, thread_name_prefix="decode") if decoders > 1 else None
        self._prefetcher = ThreadPoolExecutor(self._prefetch, thread_name_prefix="prefetch") if self._prefetch else None
        self._thread = threading.local()  # file handles are per thread (and per process)
        self._threads_pid = os.getpid()

    def __len__(self) -> int:
        """Samples this rank reads per epoch."""
        return self.shard.samples

    def _handle(self, file: int) -> pq.ParquetFile:
        """This thread's reader of ``file`` (a few stay open per thread, least recently used out)."""
        handles: OrderedDict[int, pq.ParquetFile] = self._thread.__dict__.setdefault("handles", OrderedDict())
        if file in handles:
            handles.move_to_end(file)
        else:
            handles[file] = self.files.open(file)
            if len(handles) > OPEN_FILES_PER_THREAD:
                handles.popitem(last=False)[1].close()
        return handles[file]

    def _read_window(self, blocks: tuple[Block, ...]) -> pa.Table:
        """The window's rows, in (file, row group) order (one chunk per row group), strings as views.

        Row groups decode in parallel, each thread through its own file handles (Arrow releases
        the GIL), so one window uses every core even when its blocks come from a single file.
        """
        ordered = sorted(blocks, key=lambda b: (b.file, b.row_group))
        for block in ordered:  # locate and verify files here, in order, not racing in the decoders
            self.files.locate(block.file)

        def read(block: Block) -> pa.Table:
            decoded = self._handle(block.file).read_row_group(block.row_group, columns=self.columns, use_threads=False)
            return as_views(decoded)

        if self._decoders is None:  # one decoder: this (prefetch) thread is it
            return pa.concat_tables([read(block) for block in ordered])
        return pa.concat_tables(self._decoders.map(read, ordered))

    def _shared_windows(self) -> SharedWindows | None:
        """This epoch's cache of windows shared with ranks on the same node, if any can be shared."""
        directory = self.settings.reader_shared_dir
        if len(self._node_ranks) < 2 or directory is None or not directory.parent.is_dir():
            return None
        # windows hold strings as views: a window shared in another form by an older reader is not reused
        layout = f"views|{self.digest}|{self.columns}|{self.seed}|{self.epoch}|{self.shuffle}|{self.window_blocks}"
        try:
            return SharedWindows(directory, xxhash.xxh3_64_hexdigest(layout.encode()))
        except OSError as exc:
            log.warning("no shared windows in %s: %s", directory, exc)
            return None

    def _windows(self, order: EpochOrder) -> Iterator[Window]:
        """This rank's windows, each holding the rows this rank takes from it, in order (see
        :meth:`_decoded`). Windows that other ranks of this node read too are shared."""
        pieces = [piece for lo, hi in self.shard.ranges(self.consumed) for piece in order.slices(lo, hi)]
        shared = self._shared_windows()
        sharers = [
            self.shard.readers(int(order.starts[p.window]), int(order.starts[p.window + 1]), self._node_ranks)
            if shared is not None and p.size < order.window_size(p.window)
            else 1
            for p in pieces
        ]

        def read(k: int) -> Window:
            piece = pieces[k]
            repeat = order.pass_of(piece.window) if self.repeats is not None else None
            rows = order.rows(piece) if repeat is None else self._served_rows(piece.blocks, repeat)[order.rows(piece)]

            def decode() -> pa.Table:
                table = self._read_window(piece.blocks)
                if repeat is None:
                    return table
                return table.append_column(REPEAT_COLUMN, pa.repeat(pa.scalar(repeat, pa.int32()), table.num_rows))

            if shared is None or sharers[k] < 2:
                return Window(decode(), rows)
            return Window(shared.get(piece.window, decode), rows)

        for k, window in enumerate(self._decoded(read, len(pieces))):
            yield window
            if shared is not None and sharers[k] > 1:
                shared.done(pieces[k].window, self.shard.reader, sharers[k])

    def _decoded(self, read: Callable[[int], Window], count: int) -> Iterator[Window]:
        """``read(0)``, …, ``read(count − 1)``: the next ``self._prefetch`` decode in the
        background meanwhile (a window's blocks decode in parallel too), so the decoders never wait
        for the consumer.

        Without prefetching each window decodes when it is asked for, in the consumer's thread:
        for a consumer that overlaps reading with training itself (a DataLoader worker process).
        A window is then freed by the thread that allocated it, and mimalloc reuses that memory
        sooner than memory freed from another thread (figures in the README).
        """
        self._start_threads()
        if self._prefetcher is None:
            yield from map(read, range(count))
            return
        depth = self._prefetch
        ahead = deque(self._prefetcher.submit(read, k) for k in range(min(depth, count)))
        try:
            for k in range(count):
                window = ahead.popleft().result()
                if k + depth < count:
                    ahead.append(self._prefetcher.submit(read, k + depth))
                yield window
        finally:  # an epoch left early: windows not started are dropped, one under way finishes
            for future in ahead:
                future.cancel()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        """Batches of exactly ``batch_size`` rows (the last may be shorter), gathered from each
        window in its shuffled order (see :mod:`lineage.reader.gather`); only a batch that spans
        two windows is stitched from two gathers."""
        order = self.order()
        size = self.batch_size
        carry: list[pa.RecordBatch] = []  # rows of a batch that spans windows
        carried = 0
        for window in self._windows(order):
            start = 0
            if carried:
                start = min(size - carried, window.num_rows)
                carry.append(self._batch(window, 0, start))
                carried += start
                if carried < size:
                    continue
                yield _stitched(carry)
                carry, carried = [], 0
            for offset in range(start, window.num_rows, size):
                stop = min(offset + size, window.num_rows)
                if stop - offset < size:
                    carry, carried = [self._batch(window, offset, stop)], stop - offset
                    break
                yield self._batch(window, offset, stop)
        if carried:
            yield _stitched(carry)

    def _batch(self, window: Window, start: int, stop: int) -> pa.RecordBatch:
        batch = window.batch(start, stop)
        return batch if self.string_views else batch.cast(plain_schema(batch.schema))

    def __iter__(self) -> Iterator[Any]:
        for batch in self._batches():
            if self.as_dicts:
                for row in batch.to_pylist():
                    self.consumed += 1
                    yield row
            else:
                self.consumed += batch.num_rows
                yield batch

    # -- epochs and resume ----------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Start another epoch (a new shuffle of the whole release)."""
        self.epoch, self.consumed = epoch, 0

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "release": self.ref,
            "content_digest": self.digest,
            "seed": self.seed,
            "epoch": self.epoch,
            "world_size": self.shard.world_size,
            "rank": self.shard.rank,
            "remainder": self.shard.remainder,
            "worker": self.shard.part,
            "num_workers": self.shard.parts,
            "shuffle": self.shuffle,
            "window_blocks": self.window_blocks,
            "samples_consumed": self.consumed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue exactly after the last sample the saved reader yielded.

        A different ``world_size`` (or rank) is refused: ranks own contiguous slices of the
        epoch's order, so a saved position does not map onto another world's slices.
        """
        if state.get("version") != STATE_VERSION:
            raise Invalid(f"unsupported reader state version {state.get('version')!r}")
        if state["release"] != self.ref or state["content_digest"] != self.digest:
            raise Invalid(f"state is for {state['release']} ({state['content_digest'][:12]}), not this release")
        for key, mine in (
            ("world_size", self.shard.world_size),
            ("rank", self.shard.rank),
            ("remainder", self.shard.remainder),
            ("worker", self.shard.part),
            ("num_workers", self.shard.parts),
            ("shuffle", self.shuffle),
            ("window_blocks", self.window_blocks),
        ):
            saved = state.get(key, {"worker": 0, "num_workers": 1}.get(key))  # states from before workers
            if saved != mine:
                raise Invalid(
                    f"cannot resume: state has {key}={saved!r} but this reader has {mine!r}; resuming with a "
                    "different world size or layout is not supported (ranks own contiguous slices of the order)"
                )
        if not 0 <= state["samples_consumed"] <= self.shard.samples:
            raise Invalid(f"samples_consumed={state['samples_consumed']} is outside this rank's share")
        self.seed, self.epoch, self.consumed = state["seed"], state["epoch"], state["samples_consumed"]


def _stitched(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    """Batches (from two windows) as one record batch."""
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
