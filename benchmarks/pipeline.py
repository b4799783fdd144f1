"""Benchmark the demo pipeline (convert → exact dedupe → quality) on the in-process engine.

1. The whole English corpus (63,681 docs): docs/s, MB/s of uncompressed input, peak RSS.
2. A ~2 GB input (the corpus repeated with one random word edit per copy): peak RSS, which must
   stay well under 2 GB because every stage streams or spills.

Each run is a separate ``lineage run`` process, so peak RSS is that process's own.
Usage: python benchmarks/pipeline.py [--big-gb 2.0] [--skip-big]
"""

from __future__ import annotations

import argparse
import json
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
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)

    docs = read_corpus()
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
    if not args.skip_big and results[-1]["peak_rss_MB"] >= 2048:
        sys.exit(f"peak RSS {results[-1]['peak_rss_MB']} MB on {results[-1]['input_MB']} MB of input: not under 2 GB")


if __name__ == "__main__":
    main()
