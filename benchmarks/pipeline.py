"""Benchmark the demo pipeline (convert → exact dedupe → quality) on the in-process engine.

1. The whole English corpus (63,681 docs): docs/s, MB/s of uncompressed input, peak RSS.
2. A ~2 GB input (the corpus repeated with one random word edit per copy): peak RSS, which must
   stay well under 2 GB because every stage streams or spills.
3. ``--datatrove``: against datatrove (issue #18, item 4), side by side in this run, on the whole English
   corpus and on a >= 250k-document input (the corpus 4 times, each copy with random word edits), each
   in 2 JSONL shards. Ours: ``lineage run`` of convert → exact → MinHash → Gopher repetition + quality,
   then ``lineage release publish`` (a Delta release with its manifest and QC report), both processes
   timed. Theirs: ``baselines/pipeline_datatrove.py`` (JsonlReader → Gopher repetition + quality → its
   4-stage MinHash → its exact dedup, ``LocalPipelineExecutor`` with 2 tasks). Targets: ours >= 12x
   datatrove's docs/s at >= 250k documents and >= 8x on the English corpus; exits 1 when one fails.
   Each side first runs once, untimed, on 2,000 documents, so one-time caches (numba's compiled kernels)
   are built before the timed runs. It also prints ``lineage run``'s own CPU time against its wall time per
   input (issue #18 asks for CPU >= 1.6x wall on one large run; ``dedupe_e2e.py`` checks ``lineage dedupe``'s).

Each run is a separate process, so peak RSS is that process's own.
Usage: python benchmarks/pipeline.py [--big-gb 2.0] [--skip-big] [--datatrove [--datatrove-only]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from common import CORPUS_EN, REPO, WORK, edited_copies, read_corpus, run_measured

PIPELINE = """
name = "bench"
[[inputs]]
dataset = "{dataset}"
path = "{path}"
id_field = "id"
[[operators]]
name = "exact_dedupe"
[[operators]]
name = "quality"
params = {{ min_words = 20, min_cjk_chars = 40 }}
[output]
dataset = "{dataset}-clean"
"""


def run_pipeline(name: str, input_path: Path, docs: int, input_bytes: int) -> dict:
    home = WORK / f"home-{name}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    spec = home / "pipeline.toml"
    spec.write_text(PIPELINE.format(dataset=name, path=input_path))
    m = run_measured([str(REPO / ".venv" / "bin" / "lineage"), "run", str(spec)], env={"LINEAGE_HOME": str(home)})
    if m.returncode != 0:
        sys.exit(f"pipeline run failed ({m.returncode}):\n{m.output}")
    return {
        "input": name,
        "docs": docs,
        "input_MB": round(input_bytes / 1e6, 1),
        "wall_s": round(m.wall_s, 2),
        "docs_per_s": round(docs / m.wall_s),
        "MB_per_s": round(input_bytes / 1e6 / m.wall_s, 1),
        "peak_rss_MB": round(m.peak_rss_mb),
    }


CURATION = """
name = "bench-curation"
[[inputs]]
dataset = "{dataset}"
path = "{path}"
id_field = "id"
[[operators]]
name = "exact_dedupe"
[[operators]]
name = "minhash_dedupe"
[[operators]]
name = "quality_gopher_repetition"
[[operators]]
name = "quality_gopher"
[output]
dataset = "{dataset}-clean"
"""
DATATROVE_TARGETS = {"debian-en": 8.0, "en-x4": 12.0}


def sharded(name: str, docs: list[dict]) -> Path:
    """``docs`` as 2 JSONL shards (``id`` and ``text``), the layout both sides read."""
    folder = WORK / f"shards-{name}-{len(docs)}"
    marker = folder / "_COMPLETE"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for k in range(2):
            with (folder / f"part-{k}.jsonl").open("w", encoding="utf-8") as fh:
                for doc in docs[k::2]:
                    fh.write(json.dumps({"id": doc["id"], "text": doc["text"]}, ensure_ascii=False) + "\n")
        marker.write_text("")
    return folder


def ours_curation(name: str, folder: Path, docs: int) -> dict:
    home = WORK / f"home-curation-{name}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    spec = home / "pipeline.toml"
    spec.write_text(CURATION.format(dataset=name, path=folder))
    lineage, env = str(REPO / ".venv" / "bin" / "lineage"), {"LINEAGE_HOME": str(home)}
    run = run_measured([lineage, "run", str(spec)], env=env)
    if run.returncode != 0:
        sys.exit(f"lineage run failed ({run.returncode}):\n{run.output}")
    publish = run_measured([lineage, "release", "publish", f"{name}-clean@bench", "--json"], env=env)
    if publish.returncode != 0:
        sys.exit(f"lineage release publish failed ({publish.returncode}):\n{publish.output}")
    kept = json.loads(publish.output[publish.output.index("{") :])["release"]["row_count"]
    wall = run.wall_s + publish.wall_s
    return {
        "side": "ours",
        "wall_s": wall,
        "cpu_s": run.cpu_s + publish.cpu_s,
        "kept": kept,
        "docs_per_s": docs / wall,
        "run": (run.wall_s, run.cpu_s),  # `lineage run` alone: issue #18 asks CPU >= 1.6x wall of one large run
    }


def datatrove_curation(name: str, folder: Path, docs: int) -> dict:
    script = REPO / "benchmarks" / "baselines" / "pipeline_datatrove.py"
    work = WORK / f"datatrove-{name}"
    run = run_measured([sys.executable, str(script), str(folder), str(work), "--tasks", "2"])
    if run.returncode != 0:
        sys.exit(f"the datatrove baseline failed ({run.returncode}):\n{run.output[-3000:]}")
    counts = json.loads(run.output.strip().splitlines()[-1])
    return {
        "side": "datatrove",
        "wall_s": run.wall_s,
        "cpu_s": run.cpu_s,
        "kept": counts["output"],
        "docs_per_s": docs / run.wall_s,
    }


def compare_datatrove(docs: list[dict]) -> list[str]:
    """Both sides on both inputs; the failures against the targets."""
    inputs = {"debian-en": docs, "en-x4": list(edited_copies(docs, 4, seed=11))}
    failed: list[str] = []
    runs: list[str] = []  # `lineage run` alone per input: its CPU time against its wall time
    # one untimed run of each side on a small input first, as dedupe_e2e.py does: one-time caches are then in
    # place, as on a user's second run. A fresh checkout compiles the quality steps' numba kernels in its first
    # `lineage run` (on 2026-12-06 that run of the English corpus took 37.9 s, the next one 11.3 s).
    warm = docs[:2000]
    for side in (ours_curation, datatrove_curation):
        side("warm-up", sharded("warm-up", warm), len(warm))
    # CPU s counts the processes each side's launcher waited for: datatrove's forkserver workers are not
    print("| input | docs | side | wall s | CPU s | docs/s | kept | ours / datatrove | load at start |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, rows in inputs.items():
        folder = sharded(name, rows)
        results = []
        for side in (ours_curation, datatrove_curation):
            load = os.getloadavg()[0]
            results.append((side(name, folder, len(rows)), load))
        ratio = results[0][0]["docs_per_s"] / results[1][0]["docs_per_s"]
        for r, load in results:
            shown = f"{ratio:.1f}x" if r["side"] == "ours" else ""
            print(
                f"| {name} | {len(rows):,} | {r['side']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} "
                f"| {r['docs_per_s']:,.0f} | {r['kept']:,} | {shown} | {load:.2f} |"
            )
        run_wall, run_cpu = results[0][0]["run"]
        runs.append(
            f"`lineage run` alone, {name}: {run_wall:.1f} s wall, {run_cpu:.1f} s CPU, {run_cpu / run_wall:.2f}x"
        )
        if ratio < DATATROVE_TARGETS[name]:  # (docs, hence ratio, from the wall times)
            failed.append(f"{name}: ours {ratio:.1f}x datatrove's docs/s, target {DATATROVE_TARGETS[name]:.0f}x")
    print("\n" + "\n".join(runs))
    return failed


def build_big(target_gb: float) -> tuple[Path, int, int]:
    docs = read_corpus()
    one_pass = sum(len(json.dumps(d, ensure_ascii=False).encode()) + 1 for d in docs)
    copies = max(1, round(target_gb * 1e9 / one_pass))
    folder = WORK / f"big-{copies}x"
    marker = folder / "_COMPLETE"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        per_file = max(1, copies // 8)
        fh = None
        for i, doc in enumerate(edited_copies(docs, copies, seed=7)):
            if i % (per_file * len(docs)) == 0:
                if fh:
                    fh.close()
                fh = (folder / f"part-{i // (per_file * len(docs)):03d}.jsonl").open("w", encoding="utf-8")
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
        if fh:
            fh.close()
        marker.write_text("")
    size = sum(p.stat().st_size for p in folder.glob("*.jsonl"))
    return folder, copies * len(docs), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-gb", type=float, default=2.0)
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--datatrove", action="store_true", help="also compare against datatrove (issue #18)")
    parser.add_argument("--datatrove-only", action="store_true", help="only the datatrove comparison")
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents (a quick check)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)

    docs = read_corpus()[: args.docs]
    failed: list[str] = []
    if args.datatrove or args.datatrove_only:
        print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)")
        failed = compare_datatrove(docs)
        for f in failed:
            print(f"FAILED: {f}")
        if args.datatrove_only:
            sys.exit(1 if failed else 0)
    raw_bytes = sum(len(json.dumps(d, ensure_ascii=False).encode()) + 1 for d in docs)
    results = [run_pipeline("debian-en", CORPUS_EN, len(docs), raw_bytes)]
    if not args.skip_big:
        folder, n, size = build_big(args.big_gb)
        results.append(run_pipeline("big", folder, n, size))

    header = list(results[0])
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in results:
        print(" | ".join(str(row[h]) for h in header))
    if failed:
        sys.exit(1)
    if not args.skip_big and results[-1]["peak_rss_MB"] >= 2048:
        sys.exit(f"peak RSS {results[-1]['peak_rss_MB']} MB on {results[-1]['input_MB']} MB of input: not under 2 GB")


if __name__ == "__main__":
    main()
