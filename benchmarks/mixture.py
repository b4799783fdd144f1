"""What a mixture costs a run (issue #20): the same pipeline with and without a ``[mixture]``, side by side.

Two raw sources of synthetic documents (English-like words and Chinese characters, a few hundred bytes
each, no two equal) run through ``exact_dedupe`` on the in-process engine, three ways in one process:

- baseline: no mixture (what a run costs today);
- ``samples``: weights 0.7/0.3 to a total of half the input (both sources downsampled);
- ``words``: weights 0.7/0.3 by words, no total (the largest mixture at those shares; en is cut).

Each run gets a fresh catalog and tier; the input files are written once and read by every side (the
page cache warm for all). Prints wall seconds per side, the mixture's overhead over the baseline, and
the 1-minute load average (the machine is shared: compare sides of one run, never across runs).

Usage: python benchmarks/mixture.py [--samples 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout, not an installed copy

from lineage.catalog import Catalog  # noqa: E402
from lineage.runs import Runner  # noqa: E402
from lineage.settings import Settings  # noqa: E402
from pipelines.spec import PipelineSpec  # noqa: E402

WORDS = [
    "data",
    "lineage",
    "release",
    "sample",
    "source",
    "mixture",
    "weight",
    "token",
    "shard",
    "reader",
    "export",
    "quality",
]
HAN = "数据血缘版本样本来源混合权重训练质量导出读取"


def write_inputs(root: Path, samples: int) -> dict[str, Path]:
    rng = random.Random(0)
    out = {}
    for name, share in (("en", 0.6), ("zh", 0.4)):
        folder = root / name
        folder.mkdir(parents=True)
        n = int(samples * share)
        with (folder / "part.jsonl").open("w", encoding="utf-8") as fh:
            for i in range(n):
                if name == "en":
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80)))
                else:
                    text = "".join(rng.choice(HAN) for _ in range(rng.randint(40, 160)))
                fh.write(json.dumps({"id": f"{name}{i}", "text": f"{text} {name}{i}"}, ensure_ascii=False) + "\n")
        out[name] = folder
    return out


def spec(paths: dict[str, Path], mixture: dict | None, output: str) -> PipelineSpec:
    weights = {"en": 0.7, "zh": 0.3}
    return PipelineSpec.model_validate(
        {
            "name": output,
            "inputs": [
                {"dataset": n, "path": str(p), "id_field": "id", **({"weight": weights[n]} if mixture else {})}
                for n, p in paths.items()
            ],
            "operators": [{"name": "exact_dedupe"}],
            **({"mixture": mixture} if mixture else {}),
            "output": {"dataset": output},
        }
    )


def timed(work: Path, pipeline: PipelineSpec) -> tuple[float, int]:
    home = work / f"home-{pipeline.name}"
    shutil.rmtree(home, ignore_errors=True)
    settings = Settings(home=home, catalog_url=None)
    catalog = Catalog(settings.catalog_url or "")
    try:
        start = time.perf_counter()
        outcome = Runner(settings, catalog).run(pipeline)
        return time.perf_counter() - start, outcome.row_count
    finally:
        catalog.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mixture-") as tmp:
        work = Path(tmp)
        paths = write_inputs(work / "raw", args.samples)
        for p in paths.values():  # warm the page cache for every side alike
            p.joinpath("part.jsonl").read_bytes()
        sides = {
            "baseline (no mixture)": None,
            "samples, total = half": {"unit": "samples", "total": args.samples // 2},
            "words, no total": {"unit": "words"},
        }
        rows = []
        for label, mixture in sides.items():
            seconds, kept = timed(work, spec(paths, mixture, label.split()[0].strip(",")))
            rows.append((label, seconds, kept))
        base = rows[0][1]
        print(f"{args.samples:,} samples in 2 sources, exact_dedupe, local engine; load {os.getloadavg()[0]:.2f}")
        print(f"{'side':<24} {'seconds':>8} {'samples out':>12} {'vs baseline':>12}")
        for label, seconds, kept in rows:
            print(f"{label:<24} {seconds:>8.2f} {kept:>12,} {seconds / base:>11.2f}x")
        print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
