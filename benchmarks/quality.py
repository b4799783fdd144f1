"""Quality rule sets vs datatrove: throughput and keep/drop agreement on the shared English corpus.

Run from the repo root, in the bench venv (benchmarks/setup_bench_env.sh):

    benchmarks/.venv/bin/python benchmarks/quality.py [--docs N] [--processes 1|2]

Both sides evaluate all four rule sets (Gopher quality, Gopher repetition, C4, FineWeb) on every
document, independently (no rule set sees only another's survivors), so both do the same work:

* ours: read the JSONL with pyarrow, build SAMPLE_SCHEMA batches (sample ids, content hashes),
  apply the four operators (lineage records included), in ``--processes`` processes (default 1:
  half the cores datatrove gets). Numba kernels are loaded before timing; turning lineage into
  Python lists for the comparison is not timed;
* datatrove: LocalPipelineExecutor with 2 tasks (2 workers) over 2 shards of the corpus:
  JsonlReader, then one step that calls the four datatrove filters on each document (restoring the
  text C4 rewrites) and writes each verdict as a JSON line. Timed as the executor's wall clock.

Agreement is measured per rule set over the documents that pass Gopher's word-count bounds in both
implementations, as the issue asks. If datatrove cannot run, the benchmark fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from operators.quality import C4Quality, FineWebQuality, GopherQuality, GopherRepetition
from operators.schema import SAMPLE_SCHEMA, content_hash, sample_id

CORPUS = Path("/work/shared/data/debian_en.jsonl.gz")
WORK = Path(__file__).resolve().parent / ".work" / "quality"
RULE_SETS = {
    "gopher_quality": GopherQuality,
    "gopher_repetition": GopherRepetition,
    "c4": C4Quality,
    "fineweb": FineWebQuality,
}
BATCH = 4096
TARGET_SPEEDUP = 5.0
TARGET_AGREEMENT = 0.98
WORD_BOUND_REASONS = {"gopher_short_doc", "gopher_long_doc"}


# ---------------------------------------------------------------------------------------------
# corpus shards (so that datatrove's 2 tasks each get a file)


def write_shards(n_docs: int | None, shards: int) -> list[Path]:
    shard_dir = WORK / "shards"
    shutil.rmtree(shard_dir, ignore_errors=True)
    shard_dir.mkdir(parents=True)
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        lines = [line for _, line in zip(range(n_docs or sys.maxsize), f, strict=False)]
    paths = []
    per = -(-len(lines) // shards)
    for s in range(shards):
        path = shard_dir / f"part-{s:02d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.writelines(lines[s * per : (s + 1) * per])
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------
# our side


def sample_batch(ids: pa.Array, texts: pa.Array, path: str, first_row: int) -> pa.RecordBatch:
    n = len(ids)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([sample_id("debian_en", f"id:{i}") for i in ids.to_pylist()], pa.string()),
            texts,
            pa.array([content_hash(t) for t in texts.to_pylist()], pa.string()),
            pa.repeat(pa.scalar("debian_en"), n),
            pa.repeat(pa.scalar(1, pa.int64()), n),
            pa.repeat(pa.scalar(str(CORPUS)), n),
            pa.repeat(pa.scalar(path), n),
            pa.array(np.arange(first_row, first_row + n), pa.int64()),
            pa.nulls(n, pa.int64()),
            pa.nulls(n, pa.string()),
        ],
        schema=SAMPLE_SCHEMA,
    )


def run_ours_on_shard(path: Path) -> tuple[dict[str, list], float, float]:
    """Read one shard and apply the four operators (timed), then extract verdicts (not timed).

    Returns the results and the wall-clock start and end of the timed part."""
    start = time.time()
    table = pj.read_json(path)
    ids, texts = table["id"].combine_chunks(), table["text"].combine_chunks().cast(pa.string())
    operators = {key: cls() for key, cls in RULE_SETS.items()}
    outputs = []
    for first in range(0, len(ids), BATCH):
        batch = sample_batch(ids.slice(first, BATCH), texts.slice(first, BATCH), path.name, first)
        outputs.append({key: op.apply(batch) for key, op in operators.items()})
    end = time.time()
    return _extract(ids, outputs), start, end


def _extract(ids: pa.Array, outputs: list[dict]) -> dict[str, list]:
    result: dict[str, list] = {"id": ids.to_pylist(), "in_word_bounds": [], "c4_text": []}
    for key in RULE_SETS:
        result[f"{key}_verdict"], result[f"{key}_reason"] = [], []
    for batch_outputs in outputs:
        for key, out in batch_outputs.items():
            result[f"{key}_verdict"] += out.lineage["verdict"].to_pylist()
            result[f"{key}_reason"] += out.lineage["reason"].to_pylist()
        result["in_word_bounds"] += _word_bound_pass(batch_outputs["gopher_quality"].lineage)
        c4 = batch_outputs["c4"]
        kept = dict(zip(c4.samples["sample_id"].to_pylist(), c4.samples["text"].to_pylist(), strict=True))
        result["c4_text"] += [kept.get(s) for s in c4.lineage["sample_id"].to_pylist()]
    return result


def _word_bound_pass(lineage: pa.RecordBatch) -> list[bool]:
    """Per record: did the sample pass gopher_quality's min/max word rules?"""
    out = []
    for rules in lineage["detail"].field("rules").to_pylist():
        out.append(all(r["passed"] for r in rules if r["rule"] in ("min_doc_words", "max_doc_words")))
    return out


def run_ours(shards: list[Path], processes: int) -> tuple[dict[str, list], float]:
    """Wall-clock seconds from the first shard's start to the last shard's end (1 or 2 processes)."""
    _warm_up()
    if processes == 1:
        parts = [run_ours_on_shard(p) for p in shards]
    else:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            parts = pool.map(run_ours_on_shard, shards)
    if processes == 1:
        elapsed = sum(end - start for _, start, end in parts)
    else:
        elapsed = max(end for _, _, end in parts) - min(start for _, start, _ in parts)
    merged = {k: [v for part, _, _ in parts for v in part[k]] for k in parts[0][0]}
    return merged, elapsed


def _warm_up() -> None:
    """Load numba's cached kernels (compile them on the very first run) outside the timing."""
    texts = pa.array(["Warm up the kernels. This is a sentence.\n- A bullet line here...", ""])
    batch = sample_batch(pa.array(["w0", "w1"]), texts, "warmup", 0)
    for cls in RULE_SETS.values():
        cls().apply(batch)


# ---------------------------------------------------------------------------------------------
# datatrove side

DATATROVE_SCRIPT = r'''
import json, sys
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.filters import (
    C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter,
)

class Probe(PipelineStep):
    """Calls each filter on every document and records its verdict (and C4's rewritten text)."""

    name = "probe"

    def __init__(self, out_dir):
        super().__init__()
        self.out_dir = out_dir
        self.filters = {
            "gopher_quality": GopherQualityFilter(),
            "gopher_repetition": GopherRepetitionFilter(),
            "c4": C4QualityFilter(),
            "fineweb": FineWebQualityFilter(),
        }

    def run(self, data, rank=0, world_size=1):
        with open(f"{self.out_dir}/{rank:03d}.jsonl", "w") as out:
            for doc in data:
                text = doc.text
                row = {"id": doc.id}
                for key, f in self.filters.items():
                    doc.text = text
                    res = f.filter(doc)
                    keep, reason = res if isinstance(res, tuple) else (res, None)
                    row[key] = bool(keep)
                    row[key + "_reason"] = reason
                    if key == "c4":
                        row["c4_text"] = doc.text if keep else None
                doc.text = text
                out.write(json.dumps(row) + "\n")
        yield from ()


if __name__ == "__main__":  # datatrove's workers re-import this module
    shard_dir, out_dir, log_dir = sys.argv[1:4]
    reader = JsonlReader(shard_dir, glob_pattern="*.jsonl.gz", text_key="text", id_key="id")
    LocalPipelineExecutor(pipeline=[reader, Probe(out_dir)], tasks=2, workers=2, logging_dir=log_dir).run()
'''


def run_datatrove(shard_dir: Path) -> tuple[dict[str, dict], float]:
    import subprocess

    out_dir, log_dir = WORK / "datatrove_out", WORK / "datatrove_logs"
    for d in (out_dir, log_dir):
        shutil.rmtree(d, ignore_errors=True)
    out_dir.mkdir(parents=True)
    script = WORK / "run_datatrove.py"
    script.write_text(DATATROVE_SCRIPT)
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(script), str(shard_dir), str(out_dir), str(log_dir)],
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"datatrove failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    rows: dict[str, dict] = {}
    for path in sorted(out_dir.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            rows[row["id"]] = row
    return rows, elapsed


# ---------------------------------------------------------------------------------------------
# comparison


def compare(ours: dict[str, list], theirs: dict[str, dict]) -> dict[str, dict[str, float]]:
    ids = ours["id"]
    missing = [i for i in ids if i not in theirs]
    if missing:
        raise RuntimeError(f"datatrove produced no result for {len(missing)} documents, e.g. {missing[:3]}")
    ref = [theirs[i] for i in ids]
    in_bounds = np.array(ours["in_word_bounds"]) & np.array(
        [r["gopher_quality_reason"] not in WORD_BOUND_REASONS for r in ref]
    )
    report = {}
    for key in RULE_SETS:
        our_keep = np.array([v != "dropped" for v in ours[f"{key}_verdict"]])
        their_keep = np.array([r[key] for r in ref])
        same = our_keep == their_keep
        report[key] = {
            "agreement_in_bounds": float(same[in_bounds].mean()),
            "agreement_all": float(same.mean()),
            "kept_ours": float(our_keep[in_bounds].mean()),
            "kept_datatrove": float(their_keep[in_bounds].mean()),
            "disagree_in_bounds": int((~same & in_bounds).sum()),
            "examples": [
                {"id": ids[i], "ours": ours[f"{key}_reason"][i], "datatrove": ref[i][f"{key}_reason"]}
                for i in np.flatnonzero(~same & in_bounds)[:5]
            ],
        }
    both_kept = [(o, r["c4_text"]) for o, r in zip(ours["c4_text"], ref, strict=True) if o is not None and r["c4_text"]]
    report["c4"]["text_agreement"] = float(np.mean([o == t for o, t in both_kept])) if both_kept else 1.0
    report["_population"] = {"docs": len(ids), "in_bounds": int(in_bounds.sum())}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents")
    parser.add_argument("--processes", type=int, default=1, choices=(1, 2), help="processes for our side")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    shards = write_shards(args.docs, shards=2)
    n_docs = 0
    for path in shards:
        with gzip.open(path, "rt") as f:
            n_docs += sum(1 for _ in f)
    print(f"corpus: {n_docs:,} docs in {len(shards)} shards; our side on {args.processes} process(es)")

    try:
        theirs, dt_seconds = run_datatrove(shards[0].parent)
    except Exception as exc:  # the baseline must run in the same run; never fall back to a quoted figure
        print(f"FAILED: datatrove baseline did not run: {exc}", file=sys.stderr)
        return 1
    ours, our_seconds = run_ours(shards, args.processes)

    ours_dps, dt_dps = n_docs / our_seconds, n_docs / dt_seconds
    report = compare(ours, theirs)
    print(f"ours      : {ours_dps:10,.0f} docs/s  ({our_seconds:.1f} s, {args.processes} process(es))")
    print(f"datatrove : {dt_dps:10,.0f} docs/s  ({dt_seconds:.1f} s, LocalPipelineExecutor tasks=2 workers=2)")
    print(f"speed-up  : {ours_dps / dt_dps:.1f}x (target {TARGET_SPEEDUP:.0f}x)")
    pop = report["_population"]
    print(f"agreement over {pop['in_bounds']:,} docs within Gopher word bounds in both (of {pop['docs']:,}):")
    for key in RULE_SETS:
        r = report[key]
        extra = f", kept-text identical {r['text_agreement']:.2%}" if "text_agreement" in r else ""
        print(
            f"  {key:18s} {r['agreement_in_bounds']:.2%} (all docs {r['agreement_all']:.2%}; "
            f"kept ours {r['kept_ours']:.1%} / datatrove {r['kept_datatrove']:.1%}; "
            f"{r['disagree_in_bounds']} disagree{extra})"
        )
        for example in r["examples"]:
            print(f"      e.g. {example['id']}: ours {example['ours']}, datatrove {example['datatrove']}")
    met = ours_dps / dt_dps >= TARGET_SPEEDUP and all(
        report[k]["agreement_in_bounds"] >= TARGET_AGREEMENT for k in ("gopher_quality", "gopher_repetition", "c4")
    )
    print("targets met" if met else "targets NOT met")
    if args.json:
        figures = {"ours_docs_per_s": ours_dps, "datatrove_docs_per_s": dt_dps, "processes": args.processes}
        args.json.write_text(json.dumps({**figures, **report}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
