"""What a Spark or Ray executor runs for a tier copy: a batch of files through :func:`copy_verified`.

There is one implementation of copy + read-back verification (:mod:`storage.transfer`); an
executor only rebuilds the two tiers and calls it on its batch. It never touches the catalog: it
returns the paths it proved (and the error that stopped it, if any) and the driver records them.

Credentials: a tier config names environment variables, and an executor's environment is not the
driver's (a Spark or Ray worker keeps the environment it started with). The driver resolves the
values of the named variables and they travel inside the pickled task, never in Spark conf, a Ray
``runtime_env`` (both are shown in UIs and logs) or a log line (``repr`` leaves them out). On the
executor they are handed to the :class:`Tier` directly, not written into the worker's process
environment, which other tasks share. A variable the driver does not have is read from the
executor's own environment.
"""

from __future__ import annotations

import logging
import os
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field

from storage.config import TierConfig
from storage.tier import Tier
from storage.transfer import FileSpec, copy_verified

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TierAccess:
    """A tier config plus the credential values the driver resolved for it (hidden from ``repr``)."""

    config: TierConfig
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, tier: Tier) -> TierAccess:
        """Resolve the tier's credential variables where the driver's tier reads them."""
        environ = os.environ if tier.environ is None else tier.environ
        names = tier.config.credentials_env.values()
        return cls(tier.config, {name: environ[name] for name in names if name in environ})

    def tier(self) -> Tier:
        environ = ChainMap(dict(self.credentials), os.environ)
        return Tier(self.config, environ=environ)


@dataclass(frozen=True)
class BatchResult:
    """The files of a batch that were copied and read back right, and what stopped the rest."""

    verified: list[str]
    error: str | None = None


@dataclass(frozen=True)
class CopyTask:
    """Copy batches of files from one tier prefix to another; the same for every batch of a job."""

    src: TierAccess
    src_prefix: str
    dst: TierAccess
    dst_prefix: str
    workers: int = 4
    bytes_per_s: float | None = None  # this task's share of the job's cap

    def __call__(self, files: list[FileSpec]) -> BatchResult:
        verified: list[str] = []
        try:
            copy_verified(
                self.src.tier(),
                self.src_prefix,
                self.dst.tier(),
                self.dst_prefix,
                files,
                workers=min(self.workers, len(files)),
                bytes_per_s=self.bytes_per_s,
                burst=False,  # one bucket per batch: no batch may start with a free second
                on_verified=lambda spec: verified.append(spec.path),
            )
        except Exception as exc:  # carried back to the driver with the files proven before it
            log.warning("copy batch stopped after %d of %d files: %s", len(verified), len(files), exc)
            return BatchResult(verified, f"{type(exc).__name__}: {exc}")
        return BatchResult(verified)


def run_copy_task(task: CopyTask, files: list[FileSpec]) -> BatchResult:
    """Module-level entry point, so Ray workers import it by name."""
    return task(files)
