"""Benchmark the Megatron export against a plain baseline, on the same tokenizer and the same release.

1. Builds (once; reused from ``benchmarks/.work/export/``) a release of at least ``--mb`` MB of text
   (default 200): the bundled English and Chinese corpora, copied with a small random edit per copy
   until the size is reached, ingested without other operators, published as ``bench-export@v1``.
2. Trains a byte-level BPE (``examples/train_tokenizer.py``, vocabulary ``--vocab-size``).
3. Runs, side by side in this process, each ``--rounds`` times:
   - **ours**: ``export_release(..., "megatron", tokenizer=...)``: the whole export, with the
     sequence-lineage tables, the progress record and checksums;
   - **baseline**: the release's texts read from its Delta table, ``tokenizers`` ``encode_batch`` in
     batches of 1,000 documents (``TOKENIZERS_PARALLELISM`` on), EOD appended, and megatron-core's
     ``IndexedDatasetBuilder`` writing the same documents to one ``.bin``/``.idx``.
   It prints tokens/s and MB/s of text for each, the ratio, and the share of our time spent building the
   sequence-lineage tables. Targets: ours ≥ 1.0× the baseline; lineage ≤ 10% of ours.

Usage: python benchmarks/export.py [--mb 200] [--rounds 2] [--vocab-size 32000] [--rebuild]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import CORPUS_EN, CORPUS_ZH, REPO, WORK, edit, read_corpus  # noqa: E402

WORKDIR = WORK / "export"
REF = "bench-export@v1"


def build_release(mb: float, rebuild: bool) -> tuple[Path, int]:
    """LINEAGE_HOME with release REF of at least ``mb`` MB of text; (home, text bytes)."""
    import json

    home = WORKDIR / f"home-{mb:g}"
    marker = home / "built.json"
    if marker.exists() and not rebuild:
        return home, json.loads(marker.read_text())["bytes"]
    shutil.rmtree(home, ignore_errors=True)
    src = home / "src"
    src.mkdir(parents=True)
    base = read_corpus(CORPUS_EN) + read_corpus(CORPUS_ZH)
    rng = random.Random(0)
    total, copy = 0, 0
    while total < mb * 1e6:
        with (src / f"part-{copy:03d}.jsonl").open("w", encoding="utf-8") as fh:
            for r in base:
                text = edit(r["text"], rng) if copy else r["text"]
                fh.write(json.dumps({"id": f"{r['id']}#{copy}", "text": text}, ensure_ascii=False) + "\n")
                total += len(text.encode())
        copy += 1
    os.environ["LINEAGE_HOME"] = str(home)
    from lineage.client import Client

    with Client() as client:
        client.run_pipeline(
            {
                "name": "bench-export",
                "inputs": [{"dataset": "bench-src", "path": str(src), "id_field": "id"}],
                "output": {"dataset": "bench-export"},
            }
        )
        client.create_release(REF)
    shutil.rmtree(src)
    marker.write_text(json.dumps({"bytes": total}))
    return home, total


def tokenizer(vocab_size: int) -> Path:
    import importlib.util

    path = WORKDIR / f"tokenizer-{vocab_size}.json"
    if not path.exists():
        spec = importlib.util.spec_from_file_location("train_tokenizer", REPO / "examples" / "train_tokenizer.py")
        assert spec is not None and spec.loader is not None
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
        script.train(path, vocab_size, docs=5000)
    return path


def ours(out: Path, tok: Path) -> tuple[float, int, float, str]:
    """(seconds, tokens, seconds building sequence lineage, export id): the whole export as the service
    runs it (recorded in the catalog), timing the sequence-lineage tables from the writer."""
    from lineage.catalog import Catalog
    from lineage.releases import tokenized
    from lineage.releases.exports import record_export
    from lineage.releases.tokenized import ExportOptions
    from lineage.settings import get_settings

    settings = get_settings()
    catalog = Catalog(settings.catalog_url or "")
    started = time.perf_counter()
    done = tokenized.export_tokenized(catalog, settings, REF, str(out), ExportOptions("megatron", tok))
    record_export(catalog, settings, done, "bench")
    seconds = time.perf_counter() - started
    catalog.dispose()
    return seconds, done.manifest["tokens"], done.lineage_seconds, done.manifest["export_id"]


def query_latency(export_id: str, sequences: int, n: int = 200) -> dict[str, list[float]]:
    """Milliseconds per sequence-lineage query through the service, in-process (both queries)."""
    from lineage.service.core import Service

    service = Service()
    rng = random.Random(1)
    times: dict[str, list[float]] = {"export_sequence": [], "sample_sequences": []}
    sample_ids = []
    for _ in range(n):
        k = rng.randrange(sequences)
        started = time.perf_counter()
        answer = service.export_sequence(export_id, k)
        times["export_sequence"].append((time.perf_counter() - started) * 1e3)
        sample_ids.append(answer.samples[0].sample_id)
    for sample_id in sample_ids[: n // 4]:
        started = time.perf_counter()
        service.sample_sequences(export_id, sample_id)
        times["sample_sequences"].append((time.perf_counter() - started) * 1e3)
    service.close()
    return times


def baseline(out: Path, tok: Path) -> tuple[float, int]:
    import numpy as np
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    from tokenizers import Tokenizer

    from lineage.catalog import Catalog
    from lineage.catalog.queries import get_release
    from lineage.settings import get_settings
    from storage.delta import version_dataset
    from storage.tier import get_tier

    settings = get_settings()
    catalog = Catalog(settings.catalog_url or "")
    started = time.perf_counter()
    with catalog.session() as s:
        dv = get_release(s, REF).dataset_version
        dataset = version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version)
    texts = dataset.to_table(columns=["text"]).column("text").to_pylist()
    t = Tokenizer.from_file(str(tok))
    eod = t.token_to_id("<|endoftext|>")
    out.mkdir(parents=True, exist_ok=True)
    builder = IndexedDatasetBuilder(str(out / "baseline.bin"), dtype=np.uint16)
    tokens = 0
    for lo in range(0, len(texts), 1000):
        for enc in t.encode_batch(texts[lo : lo + 1000], add_special_tokens=False):
            ids = enc.ids + [eod]
            tokens += len(ids)
            builder.add_document(torch.tensor(ids, dtype=torch.int64), [len(ids)])
    builder.finalize(str(out / "baseline.idx"))
    seconds = time.perf_counter() - started
    catalog.dispose()
    return seconds, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()

    home, text_bytes = build_release(args.mb, args.rebuild)
    os.environ["LINEAGE_HOME"] = str(home)
    tok = tokenizer(args.vocab_size)
    runs: dict[str, list[float]] = {"ours": [], "baseline": []}
    lineage: list[float] = []
    counts = {}
    rows = []  # (round, side, seconds, tokens, 1-minute load when it finished)
    for r in range(args.rounds):
        for name in ("baseline", "ours") if r % 2 else ("ours", "baseline"):
            out = WORKDIR / "out" / name
            shutil.rmtree(out, ignore_errors=True)
            if name == "ours":
                seconds, tokens, lineage_seconds, export_id = ours(out, tok)
                lineage.append(lineage_seconds / seconds)
            else:
                seconds, tokens = baseline(out, tok)
            runs[name].append(seconds)
            counts[name] = tokens
            rows.append((r + 1, name, seconds, tokens, os.getloadavg()[0]))
    assert counts["ours"] == counts["baseline"], counts  # the same documents, the same tokens
    print(f"release {REF}: {text_bytes / 1e6:,.1f} MB of text, {counts['ours']:,} tokens, vocabulary {args.vocab_size}")
    print(f"{'round':>5} {'side':10} {'seconds':>9} {'tokens/s':>12} {'MB/s':>8} {'load 1m':>8}")
    for r, name, seconds, tokens, load in rows:
        print(f"{r:5} {name:10} {seconds:9.2f} {tokens / seconds:12,.0f} {text_bytes / 1e6 / seconds:8.2f} {load:8.2f}")
    best = {name: min(times) for name, times in runs.items()}
    for name, seconds in best.items():
        print(f"best  {name:10} {seconds:9.2f} {counts[name] / seconds:12,.0f} {text_bytes / 1e6 / seconds:8.2f}")
    ratio = best["baseline"] / best["ours"]
    share = statistics.median(lineage)
    per_round = [b / o for o, b in zip(runs["ours"], runs["baseline"], strict=True)]
    print(
        f"ours / baseline throughput: {ratio:.2f}x best of each, per round {', '.join(f'{x:.2f}x' for x in per_round)}"
    )
    print("  (target >= 1.0x)")
    print(f"sequence-lineage tables: {share:.1%} of our export's time, median of rounds (target <= 10%)")
    for query, ms in query_latency(export_id, _sequences(export_id)).items():
        ms.sort()
        print(
            f"{query}: p50 {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms "
            f"({len(ms)} queries, load {os.getloadavg()[0]:.2f})"
        )


def _sequences(export_id: str) -> int:
    from lineage.service.core import Service

    service = Service()
    try:
        return service.get_export(export_id).sequences
    finally:
        service.close()


if __name__ == "__main__":
    main()
