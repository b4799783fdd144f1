"""Copy files between tiers and prove each copy by reading it back.

A file counts as copied only when its bytes, read back from the destination, have the expected
size and xxh3-128. Hashing on the way out proves nothing about what landed. Files are copied in
parallel (I/O releases the GIL), each copy's read-back overlaps the next file's copy, and an
optional token bucket caps the bandwidth for cross-region moves.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from storage.checksum import CHUNK_BYTES, file_digest
from storage.errors import TransferFailed
from storage.s3_put import SINGLE_PUT_MAX
from storage.tier import Tier

log = logging.getLogger(__name__)


class TransferError(TransferFailed):
    """A destination file did not verify, even after a retry."""


@dataclass(frozen=True)
class FileSpec:
    """A file to copy: path relative to the source and destination prefixes, and its expected bytes."""

    path: str
    size: int
    xxh3_128: str


@dataclass
class TransferReport:
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes_copied: int = 0
    seconds: float = 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes_copied / 1e6 / self.seconds if self.seconds else 0.0


class Bandwidth:
    """A thread-safe token bucket: at most ``bytes_per_s`` on average, bursts of one second.

    ``burst=False`` starts the bucket empty. A copy job gives each batch a bucket of its own, and
    a full one would let every batch start with a free second over the cap.
    """

    def __init__(self, bytes_per_s: float | None, burst: bool = True) -> None:
        self.rate = bytes_per_s
        self._allowance = (bytes_per_s or 0.0) if burst else 0.0
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        while True:
            with self._lock:
                now = time.monotonic()
                self._allowance = min(self.rate, self._allowance + (now - self._last) * self.rate)
                self._last = now
                if self._allowance >= n or self._allowance >= self.rate:
                    self._allowance -= n
                    return
                wait_s = (n - self._allowance) / self.rate
            time.sleep(min(wait_s, 1.0))


def _chunks(src: Tier, path: str, limit: Bandwidth) -> Iterator[bytes]:
    """The file's bytes in chunks, at most as fast as ``limit`` allows."""
    with src.filesystem.open_input_stream(path) as reader:
        while chunk := reader.read(CHUNK_BYTES):
            limit.take(len(chunk))
            yield chunk


def _copy_one(src: Tier, src_prefix: str, dst: Tier, dst_prefix: str, spec: FileSpec, limit: Bandwidth) -> None:
    """Copy one file: to an S3 gateway as a single unsigned PUT (see :mod:`storage.s3_put`), else
    natively by Arrow without a bandwidth cap (kernel copy on one local filesystem, C++ streaming
    otherwise), else streamed through the cap."""
    src_path, dst_path = src.path(src_prefix, spec.path), dst.path(dst_prefix, spec.path)
    uploader = dst.uploader if spec.size <= SINGLE_PUT_MAX else None
    if uploader is not None:
        uploader.put(dst_path, lambda: _chunks(src, src_path, limit), spec.size)
        return
    dst.filesystem.create_dir(dst_path.rsplit("/", 1)[0], recursive=True)
    if limit.rate is None:
        pafs.copy_files(
            src_path,
            dst_path,
            source_filesystem=src.filesystem,
            destination_filesystem=dst.filesystem,
            chunk_size=CHUNK_BYTES,
            use_threads=False,
        )
        return
    with dst.filesystem.open_output_stream(dst_path) as writer:
        for chunk in _chunks(src, src_path, limit):
            writer.write(chunk)


def _verify_one(dst: Tier, dst_prefix: str, spec: FileSpec) -> str | None:
    """None when the destination file reads back right, else what is wrong."""
    try:
        digest = file_digest(dst, dst_prefix, spec.path)
    except FileNotFoundError:
        return "missing"
    if digest.size != spec.size or digest.hexdigest != spec.xxh3_128:
        return f"read back {digest.size} bytes xxh3-128 {digest.hexdigest}, expected {spec.size} bytes {spec.xxh3_128}"
    return None


def copy_verified(
    src: Tier,
    src_prefix: str,
    dst: Tier,
    dst_prefix: str,
    files: Iterable[FileSpec],
    *,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
    workers: int = 4,
    bytes_per_s: float | None = None,
    burst: bool = True,
    on_verified: Callable[[FileSpec], None] = lambda _f: None,
    on_bytes: Callable[[int], None] = lambda _n: None,
) -> TransferReport:
    """Copy ``files`` (minus ``skip``, already verified earlier) and read each one back.

    ``on_verified`` runs once per verified file, in the worker thread, so a caller can record
    progress durably: a rerun after a crash then skips exactly the files already proven.
    ``burst`` lets the bandwidth cap allow one second's worth at the start (see :class:`Bandwidth`).
    """
    report = TransferReport()
    limit = Bandwidth(bytes_per_s, burst)
    start = time.perf_counter()
    lock = threading.Lock()

    def task(spec: FileSpec) -> None:
        for attempt in (1, 2):
            _copy_one(src, src_prefix, dst, dst_prefix, spec, limit)
            problem = _verify_one(dst, dst_prefix, spec)
            if problem is None:
                break
            log.warning("copy of %s did not verify (attempt %d): %s", spec.path, attempt, problem)
        else:
            raise TransferError(f"{dst.name}:{dst_prefix}/{spec.path}: {problem}")
        on_verified(spec)
        with lock:
            report.copied.append(spec.path)
            report.bytes_copied += spec.size
        on_bytes(spec.size)

    if dst.uploader is not None:  # direct PUTs create no bucket or folder: make them once, as pyarrow would
        dst.filesystem.create_dir(dst.path(dst_prefix), recursive=True)
    todo = []
    for spec in files:
        if spec.path in skip:
            report.skipped.append(spec.path)
        else:
            todo.append(spec)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="copy") as pool:
        futures = [pool.submit(task, spec) for spec in todo]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future.done() and future.exception() is not None:
                for other in futures:
                    other.cancel()
                raise future.exception()  # type: ignore[misc]
        for future in futures:
            future.result()
    report.seconds = time.perf_counter() - start
    return report


def verify_files(tier: Tier, prefix: str, files: Iterable[FileSpec], workers: int = 4) -> dict[str, str]:
    """Read every file back; return {path: problem} for the ones that do not match."""
    specs = list(files)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="verify") as pool:
        problems = list(pool.map(lambda s: _verify_one(tier, prefix, s), specs))
    return {s.path: p for s, p in zip(specs, problems, strict=True) if p is not None}
