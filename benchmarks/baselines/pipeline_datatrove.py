"""Baseline: the curation pipeline as a user would script it with datatrove (issue #18, item 4).

    python benchmarks/baselines/pipeline_datatrove.py IN_FOLDER WORK_FOLDER [--tasks 2]

IN_FOLDER holds the input as JSONL shards (``*.jsonl`` or ``*.jsonl.gz``, fields ``text`` and ``id``),
one per task. The pipeline is datatrove's own building blocks, in the order its examples chain them,
each stage a ``LocalPipelineExecutor`` with ``--tasks`` tasks on as many workers:

1. ``JsonlReader`` → ``GopherRepetitionFilter`` → ``GopherQualityFilter`` → ``JsonlWriter`` (defaults);
2. its 4-stage MinHash (``MinhashConfig`` defaults: 5-grams, 14 buckets x 8 hashes): signatures,
   buckets, clusters, then ``MinhashDedupFilter`` over the filtered documents;
3. its 3-stage exact dedup (``ExactDedupSignature``, ``ExactFindDedups``, ``ExactDedupFilter``) on the text.

The kept documents land in ``WORK_FOLDER/output``; the last line printed is JSON with the counts.
This file is a fixed reference for ``benchmarks/pipeline.py``: it is never changed once committed.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup import (
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.dedup.exact_dedup import (
    ExactDedupConfig,
    ExactDedupFilter,
    ExactDedupSignature,
    ExactFindDedups,
)
from datatrove.pipeline.dedup.minhash import MinhashConfig
from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def _count(folder: Path) -> int:
    import gzip

    return sum(sum(1 for _ in gzip.open(p, "rt", encoding="utf-8")) for p in sorted(folder.glob("*.jsonl.gz")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--tasks", type=int, default=2)
    args = parser.parse_args()
    work, tasks = args.work, args.tasks
    shutil.rmtree(work, ignore_errors=True)
    logs = work / "logs"

    def run(name: str, pipeline: list, n: int = tasks) -> None:
        LocalPipelineExecutor(pipeline, tasks=n, workers=min(n, tasks), logging_dir=str(logs / name)).run()

    def reader(folder: Path) -> JsonlReader:
        return JsonlReader(str(folder), glob_pattern="*.jsonl*", text_key="text", id_key="id")

    minhash = MinhashConfig()
    exact = ExactDedupConfig(content_getter=lambda doc: doc.text.encode("utf-8"))
    run(
        "1-quality",
        [
            reader(args.input),
            GopherRepetitionFilter(),
            GopherQualityFilter(),
            JsonlWriter(str(work / "filtered")),
        ],
    )
    run("2-minhash-signatures", [reader(work / "filtered"), MinhashDedupSignature(str(work / "sigs"), config=minhash)])
    run(
        "3-minhash-buckets",
        [MinhashDedupBuckets(str(work / "sigs"), str(work / "buckets"), config=minhash)],
        n=minhash.num_buckets,
    )
    run("4-minhash-clusters", [MinhashDedupCluster(str(work / "buckets"), str(work / "remove"), config=minhash)], n=1)
    run(
        "5-minhash-filter",
        [reader(work / "filtered"), MinhashDedupFilter(str(work / "remove")), JsonlWriter(str(work / "near"))],
    )
    run("6-exact-signatures", [reader(work / "near"), ExactDedupSignature(str(work / "esigs"), config=exact)])
    run("7-exact-find", [ExactFindDedups(str(work / "esigs"), str(work / "edups"), config=exact)], n=1)
    run(
        "8-exact-filter",
        [reader(work / "near"), ExactDedupFilter(str(work / "edups"), config=exact), JsonlWriter(str(work / "output"))],
    )
    counts = {name: _count(work / name) for name in ("filtered", "near", "output")}
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
