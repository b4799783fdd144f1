"""``lineage dedupe FILES``: near-duplicate removal for someone who just has files (the service's
``dedupe_files``; the work is in :mod:`lineage.dedupe_files`). It needs no catalog, so the verb builds the
service's file operations alone (:class:`lineage.service.files.FileOperations`, which ``Service``
inherits), not the whole service with the catalog stack it would import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lineage.cli.app import console, guard, load_settings, pyarrow_without_pandas


def dedupe(
    inputs: Annotated[list[Path], typer.Argument(help="JSONL (plain or .gz) or Parquet files.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output file (one input) or folder.")],
    threshold: Annotated[float, typer.Option(help="Jaccard similarity that counts as a duplicate.")] = 0.8,
    num_perm: Annotated[int, typer.Option(help="MinHash permutations.")] = 128,
    ngram: Annotated[
        int, typer.Option(help="Shingle size: characters (mixed, cjk; auto for CJK text) or words (latin, auto).")
    ] = 5,
    word_ngram: Annotated[int, typer.Option(help="Words per shingle of the mixed script's word half.")] = 2,
    script: Annotated[
        str,
        typer.Option(
            help="mixed (candidates from the word 2-grams of every text and the characters of a text with a "
            "CJK character; every pair compared by character n-grams), auto (characters for a text with any "
            "CJK character, else words), latin (words) or cjk (characters)."
        ),
    ] = "mixed",
    bands: Annotated[int | None, typer.Option(help="LSH bands (with --rows; default: from the threshold).")] = None,
    rows: Annotated[int | None, typer.Option(help="Signature rows per LSH band (with --bands).")] = None,
    verify: Annotated[
        str, typer.Option(help="Check candidates: exact (Jaccard of n-gram sets), estimate or none.")
    ] = "exact",
    engine: Annotated[str, typer.Option(help="local, spark or ray.")] = "local",
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    id_field: Annotated[str | None, typer.Option(help="Field whose values name records in the report.")] = None,
) -> None:
    """Remove near-duplicates from files: kept records in the input's format, plus a report."""
    minhash = {"threshold": threshold, "num_perm": num_perm, "ngram": ngram, "word_ngram": word_ngram, "script": script}
    minhash |= {"bands": bands, "rows": rows, "verify": verify}
    from lineage.service.files import FileOperations  # start-up: its schema (pydantic), only when the verb runs

    pyarrow_without_pandas()
    files = guard(lambda: FileOperations(load_settings()))
    summary = guard(
        lambda: files.dedupe_files(
            inputs, output, minhash=minhash, engine=engine, text_field=text_field, id_field=id_field
        )
    )
    console.print(f"settings: {summary.settings}", highlight=False, soft_wrap=True)
    console.print(
        f"{summary.records:,} records in {summary.inputs} file(s): kept {summary.kept:,}, dropped "
        f"{summary.dropped:,} near-duplicates, quarantined {summary.quarantined:,}"
    )
    for path in summary.outputs:
        console.print(f"wrote {path}")
    console.print(f"duplicates report: {summary.report}")
    if summary.quarantine is not None:
        console.print(f"quarantined records and why: {summary.quarantine}")
