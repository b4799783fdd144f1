"""``open_release(ref, export=ID)``: a training job's view of one training export (Megatron or MDS) of a
release, sequence by sequence, with the release reader's determinism, sharding and resume.

The export's sequences take the place of a release's samples, and runs of ``block_sequences``
consecutive sequences of a shard take the place of its row groups: the epoch order is the same
:class:`~lineage.order.reader.EpochOrder` over those blocks, ranks own contiguous slices of it
and a rank's DataLoader workers contiguous pieces of its slice (:class:`~lineage.order.reader.Shard`).
So the order depends only on (export, seed, epoch, window_blocks, block_sequences), and the service
can say which sequences, and so which samples, a reader-fed training step saw
(``Service.reader_step``). Each item is ``{"sequence": k, "tokens": ndarray}``, ``k`` being the
global sequence index that ``export_sequence`` answers for.

The shards are read straight from their tier (memory-mapped when local) and checked against the
export's manifest (size and xxh3-128) before a sequence of them is served.
"""

from __future__ import annotations

import getpass
import os
import socket
import struct
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.fs as pafs
import xxhash

from lineage.errors import Invalid
from lineage.order.export import BLOCK_SEQUENCES, export_blocks, window_sequences
from lineage.order.reader import EpochOrder, Remainder, Shard
from lineage.reader.release_reader import ManifestSource, manifest_source
from lineage.settings import Settings, get_settings
from storage.tier import Tier, get_tier, local_tier
from storage.verified import ChecksumMismatch

if TYPE_CHECKING:
    from lineage.client import Client

STATE_VERSION = 1
OPEN_SHARDS = 4
MEGATRON_HEADER = 9 + 8 + 1 + 8 + 8  # magic, version, dtype code, sequence count, document count
MDS_SHAPE_BYTES = (1, 2, 4)  # by the low two bits of an ndarray's code byte


@dataclass(frozen=True)
class _ShardData:
    buffer: Any  # bytes or a memory map
    offsets: np.ndarray  # byte offset of each sequence's first token
    lengths: np.ndarray  # tokens of each sequence


class ExportReader:
    """Iterates one rank's (or one DataLoader worker's) share of an export's sequences for one epoch."""

    def __init__(
        self,
        ref: str,
        *,
        export: str,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        epoch: int = 0,
        shuffle: bool = True,
        remainder: Remainder = "drop",
        window_blocks: int = 4,
        block_sequences: int = BLOCK_SEQUENCES,
        worker: int = 0,
        num_workers: int = 1,
        verify: bool = True,
        prefetch: bool = True,  # accepted for the torch wrapper: sequences are sliced from mapped shards
        job: str | None = None,
        override_reason: str | None = None,
        source: ManifestSource | None = None,
        client: Client | None = None,
        url: str | None = None,
        token: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        del prefetch
        if sum(x is not None for x in (source, client, url)) > 1:
            raise Invalid("give at most one of source=, client= and url=")
        self.ref, self.export_id, self.seed, self.epoch = ref, export, seed, epoch
        self.shuffle, self.window_blocks, self.block_sequences, self.verify = (
            shuffle,
            window_blocks,
            block_sequences,
            verify,
        )
        self.settings = settings or get_settings()
        with ExitStack() as opened:
            if source is None:
                source = opened.enter_context(manifest_source(self.settings, client=client, url=url, token=token))
            out = source.export(export)  # type: ignore[attr-defined]
            if out.release != ref:
                raise Invalid(f"export {export} is of release {out.release}, not {ref}")
            self.manifest: dict[str, Any] = out.manifest
            self.dtype = np.dtype(self.manifest["dtype"])
            self.tier, self.prefix = _place(self.settings, out.tier, out.path)
            self.blocks = export_blocks(self.manifest, block_sequences)
            self.first_sequences = np.array([s["first_sequence"] for s in self.manifest["shards"]], dtype=np.int64)
            self.shard = Shard(self.manifest["sequences"], world_size, rank, remainder, worker, num_workers)
            job = job or os.environ.get("LINEAGE_JOB") or f"{getpass.getuser()}@{socket.gethostname()}:{os.getpid()}"
            source.record_read(ref, job, world_size, rank, override_reason)  # refuses a withdrawn release
        self.consumed = 0
        self._open: OrderedDict[int, _ShardData] = OrderedDict()

    def __len__(self) -> int:
        """Sequences this reader serves per epoch."""
        return self.shard.samples

    def order(self) -> EpochOrder:
        return EpochOrder(
            self.blocks, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle, window_blocks=self.window_blocks
        )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        order = self.order()
        firsts = {s["index"]: s["first_sequence"] for s in self.manifest["shards"]}
        for lo, hi in self.shard.ranges(self.consumed):
            for piece in order.slices(lo, hi):
                sequences = window_sequences(self.manifest, piece, self.block_sequences)
                shards = np.searchsorted(self.first_sequences, sequences, side="right") - 1
                for row in order.rows(piece):
                    shard, sequence = int(shards[row]), int(sequences[row])
                    data, k = self._shard(shard), sequence - firsts[shard]
                    tokens = np.frombuffer(
                        data.buffer, dtype=self.dtype, count=int(data.lengths[k]), offset=int(data.offsets[k])
                    )
                    self.consumed += 1
                    yield {"sequence": sequence, "tokens": tokens}

    def _shard(self, index: int) -> _ShardData:
        if index in self._open:
            self._open.move_to_end(index)
            return self._open[index]
        record = self.manifest["shards"][index]
        files = {Path(f["path"]).suffix: (f, self._read(f)) for f in record["files"]}
        if self.manifest["format"] == "megatron":
            data = _megatron(files[".bin"][1], files[".idx"][1], self.dtype)
        else:
            data = _mds(files[".mds"][1], self.dtype)
        if len(data.lengths) != record["sequences"]:
            raise ChecksumMismatch(
                f"export {self.export_id} shard {index}: {len(data.lengths)} sequences, not {record['sequences']}"
            )
        self._open[index] = data
        if len(self._open) > OPEN_SHARDS:
            self._open.popitem(last=False)
        return data

    def _read(self, entry: dict[str, Any]) -> Any:
        path = self.tier.path(self.prefix, entry["path"])
        if isinstance(self.tier.filesystem, pafs.LocalFileSystem):
            buffer: Any = np.memmap(path, dtype=np.uint8, mode="r") if entry["bytes"] else b""
        else:
            with self.tier.filesystem.open_input_stream(path) as fh:
                buffer = fh.read()
        if self.verify:
            size, digest = len(buffer), xxhash.xxh3_128_hexdigest(memoryview(buffer))
            if (size, digest) != (entry["bytes"], entry["xxh3_128"]):
                raise ChecksumMismatch(
                    f"export {self.export_id}: {entry['path']} reads back {size} bytes xxh3-128 {digest}, "
                    f"the manifest says {entry['bytes']} bytes {entry['xxh3_128']}"
                )
        return buffer

    # -- epochs and resume ----------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.consumed = epoch, 0

    def _layout(self) -> dict[str, Any]:
        return {
            "world_size": self.shard.world_size,
            "rank": self.shard.rank,
            "remainder": self.shard.remainder,
            "worker": self.shard.part,
            "num_workers": self.shard.parts,
            "shuffle": self.shuffle,
            "window_blocks": self.window_blocks,
            "block_sequences": self.block_sequences,
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "release": self.ref,
            "export": self.export_id,
            "seed": self.seed,
            "epoch": self.epoch,
            **self._layout(),
            "samples_consumed": self.consumed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue exactly after the last sequence the saved reader yielded (same layout only)."""
        if state.get("version") != STATE_VERSION or state.get("export") != self.export_id:
            raise Invalid(f"state is not of export {self.export_id} (export {state.get('export')!r})")
        for key, mine in self._layout().items():
            if state[key] != mine:
                raise Invalid(f"cannot resume: state has {key}={state[key]!r} but this reader has {mine!r}")
        if not 0 <= state["samples_consumed"] <= self.shard.samples:
            raise Invalid(f"samples_consumed={state['samples_consumed']} is outside this reader's share")
        self.seed, self.epoch, self.consumed = state["seed"], state["epoch"], state["samples_consumed"]


def _place(settings: Settings, tier: str | None, path: str) -> tuple[Tier, str]:
    if tier is None:  # a local folder, recorded by its absolute path
        folder = Path(path)
        return local_tier(folder.parent, name="export"), folder.name
    return get_tier(tier, settings), path


def _megatron(data: Any, idx: Any, dtype: np.dtype) -> _ShardData:
    (n,) = struct.unpack_from("<Q", idx, 18)
    lengths = np.frombuffer(idx, dtype="<i4", count=n, offset=MEGATRON_HEADER).astype(np.int64)
    offsets = np.frombuffer(idx, dtype="<i8", count=n, offset=MEGATRON_HEADER + 4 * n).astype(np.int64)
    if n and int(offsets[-1]) + int(lengths[-1]) * dtype.itemsize != len(data):
        raise ChecksumMismatch("a Megatron .bin does not hold the tokens its .idx points to")
    return _ShardData(data, offsets, lengths)


def _mds(data: Any, dtype: np.dtype) -> _ShardData:
    """A shard of our one-column MDS layout (``tokens``, ``ndarray:<dtype>``, 1-d)."""
    (n,) = struct.unpack_from("<I", data, 0)
    starts = np.frombuffer(data, dtype="<u4", count=n + 1, offset=4).astype(np.int64)
    offsets, lengths = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    for i in range(n):
        at = int(starts[i]) + 4  # after the column's size
        code = int(data[at])
        width = MDS_SHAPE_BYTES[code & 3]
        lengths[i] = int.from_bytes(bytes(data[at + 1 : at + 1 + width]), "little")
        offsets[i] = at + 1 + width
    return _ShardData(data, offsets, lengths)
