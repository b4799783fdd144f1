"""The service's operations on a user's own files, which touch no catalog: ``dedupe_files``.

:class:`~lineage.service.core.Service` inherits them, so the HTTP API and the SDK reach them there, as
every other operation. This module loads neither SQLAlchemy, nor the catalog models, nor the schemas
module, so ``lineage dedupe`` builds :class:`FileOperations` alone and starts without them (0.7 s of its
start-up on 2 cores, where the whole run of a small file takes 1-2 s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from lineage.service.model_base import Model
from lineage.settings import Settings, get_settings
from storage.arrow_pool import use_memory_pool


class DedupeResult(Model):
    """What ``dedupe_files`` wrote: the kept records of each input, in its own format, and the report."""

    inputs: int = Field(description="Input files.")
    records: int = Field(description="Records read from them.")
    kept: int
    dropped: int = Field(description="Near-duplicates removed (one report row each).")
    quarantined: int = Field(description="Records that did not parse (in the quarantine file beside the report).")
    outputs: list[str] = Field(description="One output file per input.")
    report: str = Field(description="Parquet: id, cluster_id, kept_id, jaccard of every dropped record.")
    quarantine: str | None = Field(
        None, description="Parquet: every quarantined record, its source row and the reason (none quarantined: null)."
    )
    settings: str = Field(description="The near-duplicate settings used, the LSH layout resolved, on one line.")
    params: dict[str, Any] = Field(description="The same as the ``minhash_dedupe`` operator's parameters.")


class FileOperations:
    """The operations that need the settings and nothing of the catalog."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        use_memory_pool(self.settings.arrow_memory_pool)  # every surface builds one before its first Arrow work

    def dedupe_files(
        self,
        inputs: list[Path],
        output: Path,
        *,
        minhash: dict[str, Any] | None = None,
        engine: str = "local",
        text_field: str = "text",
        id_field: str | None = None,
    ) -> DedupeResult:
        """Near-duplicate removal for files (JSONL, plain or .gz, or Parquet): the kept records of each, byte
        for byte, in ``output`` (a file for one input, else a folder), and a report of the dropped ones.
        ``minhash`` is the ``minhash_dedupe`` operator's parameters. A private catalog and tier hold the
        run: nothing of it lands in this service's catalog."""
        # start-up: the run loads the operators (numba), the engines, deltalake, DuckDB
        from lineage.dedupe_files import dedupe_files
        from operators.minhash.params import MinHashParams

        params = MinHashParams.from_dict(minhash)
        out = dedupe_files(
            [Path(p) for p in inputs],
            Path(output),
            settings=self.settings,
            params=params,
            engine=engine,
            text_field=text_field,
            id_field=id_field,
        )
        return DedupeResult(
            inputs=out.inputs,
            records=out.records,
            kept=out.kept,
            dropped=out.dropped,
            quarantined=out.quarantined,
            outputs=[str(p) for p in out.outputs],
            report=str(out.report),
            quarantine=None if out.quarantine is None else str(out.quarantine),
            settings=out.settings(),
            params=params.to_dict(),
        )
