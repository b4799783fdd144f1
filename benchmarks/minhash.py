"""MinHash near-duplicate benchmark: speed, pair quality, and 1M-document memory.

Run with the benchmark venv (it has rensa; create it with ``benchmarks/setup_bench_env.sh``)::

    benchmarks/.venv/bin/python benchmarks/minhash.py            # speed + quality
    benchmarks/.venv/bin/python benchmarks/minhash.py --memory   # 1M docs: peak RSS, wall time

Every figure is measured by this run; if a baseline cannot run the script exits non-zero.
The process pins itself to one core and caps every thread pool at one thread, before numpy,
numba or pyarrow are imported.
"""

from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.sched_setaffinity(0, {0})

import argparse  # noqa: E402
import gzip  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402
from collections import defaultdict  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from operators.minhash import (  # noqa: E402
    MinHashParams,
    band_layout,
    dedupe,
    signature_batch,
    signatures,
)

DATA = Path(os.environ.get("MINHASH_BENCH_DATA", "/work/shared/data"))
BATCH = 4096
THRESHOLD = 0.8
NGRAM = 5

# --------------------------------------------------------------------------- reference shingling

_PUNCT_OR_SYMBOL = {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp))[0] in "PS"}


def py_shingles(text: str, cjk: bool, n: int = NGRAM) -> list[str]:
    """Plain-Python shingling with our normalisation: feeds the baselines and the ground truth."""
    norm = unicodedata.normalize("NFKC", text).lower().translate(_PUNCT_OR_SYMBOL)
    units = list("".join(norm.split())) if cjk else norm.split()
    sep = "" if cjk else " "
    if len(units) < n:
        return [sep.join(units)]
    return [sep.join(units[i : i + n]) for i in range(len(units) - n + 1)]


def load(name: str, limit: int | None = None, seed: int = 0) -> list[str]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    if limit is not None and limit < len(texts):
        texts = random.Random(seed).sample(texts, limit)
    return texts


def arrow_batches(texts: list[str]) -> list[pa.Array]:
    return [pa.array(texts[i : i + BATCH], pa.string()) for i in range(0, len(texts), BATCH)]


def print_table(header: list[str], rows: list[list[object]], left: int = 1) -> None:
    """A Markdown table; the first ``left`` columns left-aligned, the others right-aligned."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        padded = [
            str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 1) + ("-" if i < left else ":") for i, w in enumerate(widths)) + "|")
    for row in rows:
        print(line(row))


# --------------------------------------------------------------------------------------- speed


def ours(batches: list[pa.Array], params: MinHashParams) -> None:
    for batch in batches:
        signatures(batch, params)


def datasketch_default(texts: list[str]) -> None:
    from datasketch import MinHash

    for text in texts:
        m = MinHash()
        for shingle in py_shingles(text, cjk=False):
            m.update(shingle.encode("utf-8"))


def datasketch_xxh32_batch(texts: list[str]) -> None:
    from datasketch import MinHash
    from xxhash import xxh32_intdigest

    for text in texts:
        m = MinHash(hashfunc=xxh32_intdigest)
        m.update_batch([s.encode("utf-8") for s in py_shingles(text, cjk=False)])


def rensa_python_shingles(texts: list[str]) -> None:
    from rensa import RMinHash

    for text in texts:
        m = RMinHash(num_perm=128, seed=1)
        m.update(py_shingles(text, cjk=False))
        m.digest()


def best_seconds(runs: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Fastest wall time of each run over ``rounds`` interleaved rounds.

    The machine is shared: interleaving exposes every implementation to the same load, and the
    minimum is the run least disturbed by other processes.
    """
    best = dict.fromkeys(runs, math.inf)
    for _ in range(rounds):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def speed(texts: list[str], rounds: int) -> dict[str, float]:
    try:
        import datasketch  # noqa: F401
        import rensa  # noqa: F401
        import xxhash  # noqa: F401
    except ImportError as err:
        sys.exit(f"baseline unavailable ({err}); run benchmarks/setup_bench_env.sh and use benchmarks/.venv")
    params = MinHashParams(num_perm=128, ngram=NGRAM)
    start = time.perf_counter()
    batches = arrow_batches(texts)
    to_arrow = time.perf_counter() - start
    start = time.perf_counter()
    signatures(batches[0][:64], params)
    first_call = time.perf_counter() - start
    load_before = os.getloadavg()[0]
    best = best_seconds(
        {
            "ours (numba + Arrow compute)": lambda: ours(batches, params),
            "datasketch defaults, update() per shingle": lambda: datasketch_default(texts),
            "datasketch xxh32_intdigest + update_batch": lambda: datasketch_xxh32_batch(texts),
            "rensa RMinHash, plain-Python shingling": lambda: rensa_python_shingles(texts),
        },
        rounds,
    )
    rates = {name: len(texts) / t for name, t in best.items()}
    print(f"\n## Speed: raw text -> 128-permutation signatures, {len(texts):,} English docs, one core\n")
    print(f"- every implementation: fastest of {rounds} interleaved rounds (1-min load average")
    print(f"  {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} shared cores).")
    print(f"- ours: script=auto (detection included), over Arrow batches of {BATCH}; a warm-up call")
    print(f"  ({first_call:.2f} s, numba JIT or cache load) is excluded, and so is building the Arrow")
    print(f"  batches from Python str ({to_arrow:.3f} s): engines hand us Arrow.")
    print("- baselines: from Python str, normalising and shingling in plain Python with the same")
    print("  normalisation (NFKC, lower, delete P*/S*, split on whitespace).\n")
    base, rensa_rate = (
        rates["datasketch defaults, update() per shingle"],
        rates["rensa RMinHash, plain-Python shingling"],
    )
    print_table(
        ["implementation", "docs/s", "vs datasketch", "vs rensa+py"],
        [[name, f"{rate:,.0f}", f"{rate / base:.1f}x", f"{rate / rensa_rate:.2f}x"] for name, rate in rates.items()],
    )
    return rates


# ------------------------------------------------------------------------------------- quality


def true_pairs(texts: list[str], cjk: bool, threshold: float = THRESHOLD) -> set[tuple[int, int]]:
    """All pairs with exact shingle-set Jaccard >= threshold (AllPairs prefix filtering: exact).

    Shingles are ordered rarest first; two sets with Jaccard >= t share a shingle within their
    first ``|x| - ceil(t|x|) + 1`` shingles, so only such pairs are compared, all exactly.
    """
    vocab: dict[str, int] = {}
    sets = [np.unique([vocab.setdefault(s, len(vocab)) for s in py_shingles(t, cjk)]) for t in texts]
    freq = np.bincount(np.concatenate(sets), minlength=len(vocab))
    rank = np.empty(len(vocab), dtype=np.int64)
    rank[np.lexsort((np.arange(len(vocab)), freq))] = np.arange(len(vocab))
    ordered = [np.sort(rank[s]).tolist() for s in sets]
    index: dict[int, list[int]] = defaultdict(list)
    pairs = set()
    for d, x in enumerate(ordered):
        prefix = len(x) - math.ceil(threshold * len(x) - 1e-9) + 1
        candidates = {e for tok in x[:prefix] for e in index[tok]}
        for tok in x[:prefix]:
            index[tok].append(d)
        xs = set(x)
        for e in candidates:
            y = ordered[e]
            if min(len(x), len(y)) < threshold * max(len(x), len(y)) - 1e-9:
                continue
            common = len(xs.intersection(y))
            if common / (len(x) + len(y) - common) >= threshold - 1e-12:
                pairs.add((e, d))
    return pairs


def found_pairs(texts: list[str], params: MinHashParams) -> set[tuple[int, int]]:
    """Pairs = every pair of documents in the same reported cluster (same ``cluster_id``)."""
    ids = [f"{i:08d}" for i in range(len(texts))]
    table = pa.Table.from_batches(
        [
            signature_batch(pa.array(ids[i : i + BATCH]), b, params)
            for i, b in zip(range(0, len(texts), BATCH), arrow_batches(texts), strict=True)
        ]
    )
    decisions = dedupe(table, params, texts=pa.array(texts))
    clusters: dict[str, list[int]] = defaultdict(list)
    for row, cluster in enumerate(decisions.column("cluster_id").to_pylist()):
        if cluster is not None:
            clusters[cluster].append(row)
    return {pair for rows in clusters.values() for pair in itertools.combinations(sorted(rows), 2)}


def quality(en_docs: int) -> dict[str, float]:
    corpora = [
        ("en", f"{en_docs:,} of debian_en, word {NGRAM}-grams", load("debian_en.jsonl.gz", en_docs), False),
        ("zh", f"all debian_zh, char {NGRAM}-grams", load("debian_zh.jsonl.gz"), True),
    ]
    default = MinHashParams(threshold=THRESHOLD, ngram=NGRAM)
    variants = [("default", default)] + [
        (f"verify={v}", MinHashParams(threshold=THRESHOLD, ngram=NGRAM, verify=v))
        for v in ("estimate", "none")
        if v != default.verify
    ]
    variants.append(
        (
            "datasketch 9x13, verify=none",
            MinHashParams(threshold=THRESHOLD, ngram=NGRAM, bands=9, rows=13, verify="none"),
        )
    )
    print(f"\n## Quality: duplicate pairs at Jaccard >= {THRESHOLD}")
    print("Truth: all pairs whose exact Jaccard of shingle sets (same normalisation, plain Python) is >= 0.8.")
    print("Found: all pairs of documents sharing a reported cluster (cluster_id), via signature_batch + dedupe.")
    b, r = band_layout(default)
    print(
        f"Default: num_perm={default.num_perm}, {b}x{r} bands (weights fp={default.false_positive_weight}, "
        f"fn={default.false_negative_weight}), verify={default.verify}, script={default.script}\n"
    )
    rows, f1s = [], {}
    for key, label, texts, cjk in corpora:
        truth = true_pairs(texts, cjk)
        for name, params in variants:
            found = found_pairs(texts, params)
            hit = len(found & truth)
            p, r_ = hit / max(1, len(found)), hit / max(1, len(truth))
            f1 = 2 * p * r_ / (p + r_) if p + r_ else 0.0
            if name == "default":
                f1s[key] = f1
            rows.append([label, name, len(truth), len(found), f"{p:.4f}", f"{r_:.4f}", f"{f1:.4f}"])
    print_table(["corpus", "variant", "true pairs", "found pairs", "precision", "recall", "F1"], rows, left=2)
    return f1s


# -------------------------------------------------------------------------------------- memory


def edited_corpus(texts: list[str], copies: int, seed: int) -> Iterator[tuple[list[str], list[str]]]:
    """``copies`` versions of every text, each with 1-3 random word edits, in batches.

    Edits (replace, delete or insert a word drawn from the same document) are chosen by a
    ``random.Random`` seeded per copy, so the corpus is the same on every run.
    """
    for copy in range(copies):
        rng = random.Random(seed * 1_000_003 + copy)
        for start in range(0, len(texts), BATCH):
            ids, out = [], []
            for i, text in enumerate(texts[start : start + BATCH], start):
                words = text.split(" ")
                for _ in range(rng.randint(1, 3)):
                    pos, word = rng.randrange(len(words)), rng.choice(words)
                    op = rng.randrange(3)
                    if op == 0:
                        words[pos] = word
                    elif op == 1 and len(words) > 1:
                        del words[pos]
                    else:
                        words.insert(pos, word)
                ids.append(f"{copy:02d}:{i:06d}")
                out.append(" ".join(words))
            yield ids, out


def memory(copies: int, seed: int) -> None:
    params = MinHashParams()
    base = load("debian_en.jsonl.gz")
    start = time.perf_counter()
    generate = compute = 0.0
    sig_batches, text_chunks = [], []
    tick = time.perf_counter()
    for ids, texts in edited_corpus(base, copies, seed):
        texts_arr = pa.array(texts, pa.string())
        generate += time.perf_counter() - tick
        tick = time.perf_counter()
        sig_batches.append(signature_batch(pa.array(ids), texts_arr, params))
        if params.verify == "exact":
            text_chunks.append(texts_arr)
        compute += time.perf_counter() - tick
        tick = time.perf_counter()
    table = pa.Table.from_batches(sig_batches)
    del sig_batches
    texts = pa.chunked_array(text_chunks, pa.string()) if text_chunks else None
    tick = time.perf_counter()
    decisions = dedupe(table, params, texts=texts)
    clustering = time.perf_counter() - tick
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_gib = usage.ru_maxrss / 2**20
    dropped = decisions.filter(pc.equal(decisions.column("verdict"), "dropped")).num_rows
    b, r = band_layout(params)
    print(f"\n## Memory: {table.num_rows:,} docs (debian_en x {copies}, 1-3 word edits per copy, seed {seed})")
    print(
        f"defaults: num_perm={params.num_perm}, {b}x{r} bands, verify={params.verify} "
        "(exact verification keeps the texts in memory: they are part of the peak)\n"
    )
    print_table(
        ["figure", "value"],
        [
            ["corpus generation (plain Python, not ours)", f"{generate:.1f} s"],
            [
                f"signatures, streaming batches of {BATCH}",
                f"{compute:.1f} s ({table.num_rows / compute:,.0f} docs/s)",
            ],
            ["LSH + verification + components + survivors", f"{clustering:.1f} s"],
            ["wall time, total", f"{wall:.1f} s"],
            [
                "CPU time, total (user + sys)",
                f"{usage.ru_utime + usage.ru_stime:.1f} s",
            ],
            ["dropped as near-duplicates", f"{dropped:,}"],
            ["peak RSS (whole process)", f"{peak_gib:.2f} GiB"],
        ],
    )
    if peak_gib > 4:
        sys.exit("peak RSS above the 4 GiB target")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--en-docs", type=int, default=20_000, help="English docs for speed and quality")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (fastest reported)")
    parser.add_argument("--memory", action="store_true", help="run only the 1M-document memory benchmark")
    parser.add_argument("--copies", type=int, default=16, help="memory mode: copies of the English corpus")
    parser.add_argument("--seed", type=int, default=7, help="memory mode: seed of the word edits")
    args = parser.parse_args()
    if args.memory:
        memory(args.copies, args.seed)
        return
    rates = speed(load("debian_en.jsonl.gz", args.en_docs), args.rounds)
    f1 = quality(args.en_docs)
    ours_rate = rates["ours (numba + Arrow compute)"]
    checks = {
        ">= 25x datasketch defaults": ours_rate >= 25 * rates["datasketch defaults, update() per shingle"],
        ">= 3x rensa + Python shingling": ours_rate >= 3 * rates["rensa RMinHash, plain-Python shingling"],
        "pair F1 >= 0.95 (en)": f1["en"] >= 0.95,
        "pair F1 >= 0.95 (zh)": f1["zh"] >= 0.95,
    }
    print("\n## Targets\n")
    for name, ok in checks.items():
        print(f"- {'met' if ok else 'MISSED'}: {name}")


if __name__ == "__main__":
    main()
