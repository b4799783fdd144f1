"""``lineage export NAME@TAG``: a release's samples as JSONL or Parquet files, or tokenized into Megatron
or MDS training shards (the service's ``export_release``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from lineage.cli.app import console, guard, open_service, print_json
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
        Path | None, typer.Option(help="A Hugging Face tokenizers tokenizer.json (megatron, mds).")
    ] = None,
    seq_len: Annotated[int | None, typer.Option("--seq-len", help="Packed sequences of N + 1 tokens (mds).")] = None,
    pack: Annotated[bool, typer.Option("--pack", help="Concatenate documents and cut sequences (mds).")] = False,
    shard_size: Annotated[str | None, typer.Option("--shard-size", help="Largest shard file, e.g. 64MiB.")] = None,
    seed: Annotated[int, typer.Option(help="Document order seed.")] = 0,
    eod_token: Annotated[str | None, typer.Option("--eod-token", help="End-of-document token.")] = None,
    tier: Annotated[str | None, typer.Option(help="The tier to write the shards to.")] = None,
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
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(result)
    elif result.shards:
        resumed = f" ({result.resumed_shards} kept from an interrupted run)" if result.resumed_shards else ""
        console.print(
            f"wrote {result.rows:,} samples as {result.sequences:,} sequences, {result.tokens:,} tokens, in "
            f"{len(result.shards)} {fmt} shards{resumed} to {result.tier}:{result.path} (export {result.export_id})"
        )
    else:
        console.print(f"wrote {result.rows:,} samples to {result.path}")
