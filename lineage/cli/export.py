"""``lineage export NAME@TAG``: a release's samples as JSONL or Parquet files, or tokenized into Megatron
or MDS training shards (the service's ``export_release``); ``exports``, ``sequence`` (sequence-level
lineage) and ``export-verify`` for the training exports the catalog records."""

from __future__ import annotations

import getpass
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, every, fail, guard, open_service, print_json
from lineage.cli.progress import bars
from lineage.errors import Invalid

_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?)?\s*$", re.IGNORECASE)


def parse_size(text: str | None) -> int | None:
    """``65536``, ``64k``, ``64MiB``, ``1g``: bytes (powers of 1024)."""
    if text is None:
        return None
    m = _SIZE.match(text)
    if m is None:
        raise Invalid(f"--shard-size {text!r}: expected bytes, e.g. 67108864, 64MiB or 1G")
    unit = (m.group(2) or "").lower()[:1]
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[unit]


def export(
    ref: Annotated[str, typer.Argument(help="NAME@TAG")],
    out: Annotated[str, typer.Option("--out", help="Output folder (on --tier, else a local folder).")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl, parquet, megatron or mds.")] = "jsonl",
    tokenizer: Annotated[
        Path | None,
        typer.Option(help="A Hugging Face tokenizers tokenizer.json (megatron, mds); default: a tokens mixture's."),
    ] = None,
    seq_len: Annotated[int | None, typer.Option("--seq-len", help="Packed sequences of N + 1 tokens (mds).")] = None,
    pack: Annotated[bool, typer.Option("--pack", help="Concatenate documents and cut sequences (mds).")] = False,
    shard_size: Annotated[str | None, typer.Option("--shard-size", help="Largest shard file, e.g. 64MiB.")] = None,
    seed: Annotated[int, typer.Option(help="Document order seed.")] = 0,
    eod_token: Annotated[str | None, typer.Option("--eod-token", help="End-of-document token.")] = None,
    tier: Annotated[str | None, typer.Option(help="The tier to write the shards to.")] = None,
    engine: Annotated[str, typer.Option(help="Tokenize on local, spark or ray (the same shards).")] = "local",
    override: Annotated[
        str | None, typer.Option(help="A withdrawn release: serve it anyway, for this reason (it is recorded).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Export a release's samples as JSONL or Parquet, or tokenized as Megatron or MDS shards."""
    size = guard(lambda: parse_size(shard_size), as_json=as_json)
    with open_service() as service, bars(console) as progress:
        total = guard(lambda: service.get_release(ref), as_json=as_json).row_count  # the bar's total
        task = progress.add_task(f"export {ref}", total=total)
        result = guard(
            lambda: service.export_release(
                ref,
                out if tier else Path(out),
                fmt,
                lambda n: progress.advance(task, n),
                tokenizer=tokenizer,
                seq_len=seq_len,
                pack=pack,
                shard_size=size,
                seed=seed,
                eod_token=eod_token,
                tier=tier,
                engine=engine,
                override_reason=override,
                actor=getpass.getuser(),
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(result)
    elif result.shards:
        resumed = f" ({result.resumed_shards} kept from an interrupted run)" if result.resumed_shards else ""
        where = f"{result.tier}:{result.path}" if result.tier else result.path  # a local folder has no tier
        console.print(
            f"wrote {result.rows:,} samples as {result.sequences:,} sequences, {result.tokens:,} tokens, in "
            f"{len(result.shards)} {fmt} shards{resumed} to {where} (export {result.export_id})"
        )
    else:
        console.print(f"wrote {result.rows:,} samples to {result.path}")


def exports(
    export_id: Annotated[str | None, typer.Argument(help="One export's id: show it and its manifest.")] = None,
    release: Annotated[str | None, typer.Option(help="Only the exports of this release (NAME@TAG).")] = None,
    as_json: AsJson = False,
) -> None:
    """Training exports recorded in the catalog (megatron, mds), or one of them."""
    with open_service() as service:
        if export_id is not None:
            one = guard(lambda: service.get_export(export_id), as_json=as_json)
            if as_json:
                print_json(one)
                return
            _print_export(one)
            return
        page = every(service.list_exports, release=release)
    if as_json:
        print_json(page)
        return
    table = Table(title=f"{page.total:,} training exports")
    for col in ("export", "release", "format", "where", "samples", "sequences", "tokens", "tokenizer"):
        table.add_column(col, overflow="fold")
    for e in page.items:
        where = f"{e.tier}:{e.path}" if e.tier else e.path
        table.add_row(
            e.export_id,
            e.release,
            e.format,
            where,
            f"{e.samples:,}",
            f"{e.sequences:,}",
            f"{e.tokens:,}",
            e.tokenizer_digest,
        )
    console.print(table)


def _print_export(e: Any) -> None:
    where = f"{e.tier}:{e.path}" if e.tier else e.path
    console.print(f"export {e.export_id} of {e.release} ({e.format}) at {where}")
    console.print(f"tokenizer {e.tokenizer_digest}; options {e.options}")
    console.print(
        f"{e.samples:,} samples, {e.sequences:,} sequences, {e.tokens:,} tokens in {len(e.manifest['shards'])} shards"
    )
    for source, n in e.manifest["tokens_by_source"].items():
        console.print(f"  {source}: {n:,} tokens")


def sequence(
    export_id: Annotated[str, typer.Argument(help="The export's id.")],
    number: Annotated[int | None, typer.Argument(help="A global sequence index: the samples in it.", min=0)] = None,
    sample: Annotated[str | None, typer.Option(help="A sample id: the sequences holding it.")] = None,
    as_json: AsJson = False,
) -> None:
    """Sequence-level lineage of an export: the samples of sequence N, or the sequences of --sample ID."""
    if (number is None) == (sample is None):
        fail(Invalid("give a sequence number or --sample ID (one of them)"), as_json=as_json)
    with open_service() as service:
        if sample is not None:
            found = guard(lambda: service.sample_sequences(export_id, sample), as_json=as_json)
        else:
            assert number is not None
            answer = guard(lambda: service.export_sequence(export_id, number), as_json=as_json)
    if as_json:
        print_json(found if sample is not None else answer)
        return
    if sample is not None:
        table = Table(
            title=f"sample {sample} ({found.source_dataset}) in {len(found.sequences)} sequences of {export_id}"
        )
        for col in ("sequence", "shard", "in shard", "sequence tokens", "sample tokens"):
            table.add_column(col)
        for q in found.sequences:
            table.add_row(
                str(q.sequence),
                str(q.shard),
                str(q.shard_sequence),
                f"[{q.seq_start}, {q.seq_end})",
                f"[{q.doc_start}, {q.doc_end})",
            )
    else:
        table = Table(title=f"sequence {number} of {export_id}: shard {answer.shard}, index {answer.shard_sequence}")
        for col in ("sample", "source", "sequence tokens", "sample tokens"):
            table.add_column(col, overflow="fold")
        for p in answer.samples:
            table.add_row(
                p.sample_id, p.source_dataset, f"[{p.seq_start}, {p.seq_end})", f"[{p.doc_start}, {p.doc_end})"
            )
    console.print(table)


def training_step(
    export_id: Annotated[str, typer.Argument(help="The export's id (a Megatron export).")],
    step: Annotated[int, typer.Argument(help="The global step.", min=0)],
    seed: Annotated[int, typer.Option(help="The job's data seed.")],
    seq_len: Annotated[int, typer.Option("--seq-len", help="The job's sequence length.")],
    global_batch_size: Annotated[int, typer.Option("--global-batch-size", help="Samples per global step.")],
    train_samples: Annotated[int, typer.Option("--train-samples", help="Iterations times global batch size.")],
    as_json: AsJson = False,
) -> None:
    """Which samples were in global step STEP of a Megatron job that read the export (GPTDataset's order)."""
    with open_service() as service:
        answer = guard(
            lambda: service.training_step(
                export_id,
                step,
                seed=seed,
                sequence_length=seq_len,
                global_batch_size=global_batch_size,
                train_samples=train_samples,
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(answer)
        return
    table = Table(title=f"step {step} of export {export_id}: {len(answer.samples)} training samples")
    for col in ("training sample", "sample", "source", "tokens in it", "sample tokens"):
        table.add_column(col, overflow="fold")
    for s in answer.samples:
        for p in s.pieces:
            spans = (f"[{p.seq_start}, {p.seq_end})", f"[{p.doc_start}, {p.doc_end})")
            table.add_row(str(s.sample), p.sample_id, p.source_dataset, *spans)
    console.print(table)


def reader_step(
    export_id: Annotated[str, typer.Argument(help="The export's id.")],
    step: Annotated[int, typer.Argument(help="The global step (within --epoch).", min=0)],
    seed: Annotated[int, typer.Option(help="The job's reader seed.")],
    world_size: Annotated[int, typer.Option("--world-size", help="The job's ranks.")],
    batch_size: Annotated[int, typer.Option("--batch-size", help="Sequences per batch, per rank.")],
    epoch: Annotated[int, typer.Option(help="The epoch (set_epoch).")] = 0,
    num_workers: Annotated[int, typer.Option("--num-workers", help="DataLoader workers per rank.")] = 0,
    drop_last: Annotated[bool, typer.Option("--drop-last", help="The DataLoader dropped short batches.")] = False,
    shuffle: Annotated[bool, typer.Option("--shuffle/--no-shuffle", help="Whether the reader shuffled.")] = True,
    remainder: Annotated[str, typer.Option(help="The reader's remainder: drop or pad.")] = "drop",
    window_blocks: Annotated[int, typer.Option("--window-blocks")] = 4,
    block_sequences: Annotated[int, typer.Option("--block-sequences")] = 256,
    as_json: AsJson = False,
) -> None:
    """Which samples were in global step STEP of a job that read the export with our reader
    (open_release(ref, export=ID), the torch ReleaseDataset), from the job's loader arguments."""
    # start-up: the service schemas load the catalog models (SQLAlchemy)
    from lineage.service.schemas import ReaderJob

    with open_service() as service:
        answer = guard(
            lambda: service.reader_step(
                export_id,
                step,
                ReaderJob(
                    seed=seed,
                    world_size=world_size,
                    batch_size=batch_size,
                    epoch=epoch,
                    num_workers=num_workers,
                    drop_last=drop_last,
                    shuffle=shuffle,
                    remainder=remainder,  # type: ignore[arg-type]
                    window_blocks=window_blocks,
                    block_sequences=block_sequences,
                ),
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(answer)
        return
    table = Table(title=f"step {step} of export {export_id}, our reader's order")
    for col in ("rank", "sequence", "sample", "source", "sequence tokens", "sample tokens"):
        table.add_column(col, overflow="fold")
    for batch in answer.ranks:
        for q in batch.sequences:
            for p in q.samples:
                spans = (f"[{p.seq_start}, {p.seq_end})", f"[{p.doc_start}, {p.doc_end})")
                table.add_row(str(batch.rank), str(q.sequence), p.sample_id, p.source_dataset, *spans)
    console.print(table)


def export_verify(
    export_id: Annotated[str, typer.Argument(help="The export's id.")],
    as_json: AsJson = False,
) -> None:
    """Read an export's files back from its tier against its manifest."""
    with open_service() as service:
        result = guard(lambda: service.verify_export(export_id), as_json=as_json)
    if as_json:
        print_json(result)
    elif result.problems:
        for problem in result.problems:
            console.print(f"[red]{escape(problem)}[/]")
    else:
        console.print(f"export {export_id}: all {result.files} files read back as recorded")
    if result.problems:
        raise typer.Exit(code=1)
