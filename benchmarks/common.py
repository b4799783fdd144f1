"""Helpers shared by the benchmark scripts: corpus location, variants with random edits, timing."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS_EN = REPO / "examples" / "data" / "debian_en.jsonl.gz"
CORPUS_ZH = REPO / "examples" / "data" / "debian_zh.jsonl.gz"
WORK = REPO / "benchmarks" / ".work"


def read_corpus(path: Path = CORPUS_EN) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


_FILLER = ["data", "system", "library", "tool", "package", "files", "support", "module", "version", "common"]


def edit(text: str, rng: random.Random) -> str:
    """A small random edit: replace, insert or delete one word (so copies are near, not exact)."""
    words = text.split(" ")
    i = rng.randrange(len(words))
    op = rng.randrange(3)
    if op == 0:
        words[i] = rng.choice(_FILLER)
    elif op == 1:
        words.insert(i, rng.choice(_FILLER))
    elif len(words) > 1:
        del words[i]
    return " ".join(words)


def edited_copies(docs: list[dict], copies: int, seed: int) -> Iterator[dict]:
    """``copies`` passes over ``docs``; pass 0 is the original, later passes carry one edit each."""
    rng = random.Random(seed)
    for k in range(copies):
        for doc in docs:
            text = doc["text"] if k == 0 else edit(doc["text"], rng)
            yield {**doc, "id": f"{doc['id']}#{k}", "text": text}


@dataclass
class Measured:
    wall_s: float
    peak_rss_mb: float
    returncode: int
    output: str


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run a command; report its wall time and the peak RSS of its process tree's largest process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return Measured(wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out)
