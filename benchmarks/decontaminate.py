"""Exact decontamination benchmark (issue #19, item 4): speed against two baselines, and precision/recall
against a brute-force exact reference on eval items planted four ways.

Run with the benchmark venv (it has datatrove; ``benchmarks/setup_bench_env.sh``)::

    benchmarks/.venv/bin/python benchmarks/decontaminate.py                 # default size
    benchmarks/.venv/bin/python benchmarks/decontaminate.py --docs 2000 --items 200   # a smoke run

* **ours**: :class:`operators.contamination.index.EvalIndex` (numba unit stream, 64-bit preselection,
  exact byte confirmation), one batch of 4,096 texts at a time, as the release check runs it
  (``EvalIndex.matches``: Python objects only for the documents that match; the others share one empty
  answer).
* **plain Python**: a set of the items' n-gram strings and, per document, a loop over its n-grams
  (NFKC + lower case + P*/S* deleted + split, as ours normalises).
* **datatrove**: ``NGramsDecontFilter`` over an index of our eval set written in the format its indexer
  writes (``<task>.index.hashes``: the items' n-grams as datatrove's tokenizer and ``simplify_text`` make
  them, hashed with its ``create_hash_func``, sha1 64-bit), since its indexer wants lighteval tasks.

Each reports docs/s and MB/s on one core (the process pins itself to core 0, every pool to one thread).
Precision and recall: the items each detector finds per document, against the reference (every n-gram
of every item looked up as a string in every document's windows), over a copy of the corpus with items
planted verbatim, with one token changed per 2n tokens, embedded in longer documents, and in Chinese.
Every figure is measured by this run; if a baseline cannot run the script exits non-zero.
"""

from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.sched_setaffinity(0, {0})

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import CORPUS_EN, CORPUS_ZH, read_corpus  # noqa: E402
from operators.contamination.index import EvalIndex  # noqa: E402
from operators.contamination.params import NgramParams  # noqa: E402

TARGET_PLAIN, TARGET_DATATROVE, TARGET_RECALL = 20.0, 5.0, 0.99


# -- the brute-force reference and the plain-Python baseline: the same normalisation as ours ---------------
def _cjk(ch: str) -> bool:
    cp = ord(ch)
    return 0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x3040 <= cp <= 0x30FF or 0xAC00 <= cp <= 0xD7AF


def _norm(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if unicodedata.category(c)[0] not in "PS")


def tokens(text: str) -> tuple[list[str], bool]:
    """(units, is CJK): characters for CJK text, else words (a CJK character a word of its own)."""
    t = _norm(text)
    if any(_cjk(c) for c in t):
        return [c for c in t if not c.isspace()], True
    return t.split(), False


def item_grams(text: str, p: NgramParams) -> set[str]:
    toks, cjk = tokens(text)
    n, sep = (p.char_ngram, "") if cjk else (p.word_ngram, " ")
    if not toks:
        return set()
    if len(toks) < n:
        return {sep.join(toks)}
    return {sep.join(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def reference(items: dict[str, str], docs: list[str], p: NgramParams) -> list[set[str]]:
    """Every n-gram of every item, looked up as a string among every document's windows of its length: in
    the word stream (a CJK character a word of its own) and, for CJK documents, the character stream.

    The items' n-gram strings are keyed by (stream, length), so each document's windows of each length
    are looked up once (a dict of strings, no hash of ours): the same result as testing every item's
    n-grams against every document, in time linear in the corpus rather than in corpus x items."""
    by_key: dict[tuple[bool, int], dict[str, set[str]]] = {}
    for item, text in items.items():
        cjk = tokens(text)[1]
        for g in item_grams(text, p):
            key = (cjk, len(g) if cjk else len(g.split(" ")))
            by_key.setdefault(key, {}).setdefault(g, set()).add(item)
    found = []
    for doc in docs:
        t = _norm(doc)
        words = "".join(f" {c} " if _cjk(c) else c for c in t).split()
        chars = [c for c in t if not c.isspace()] if any(_cjk(c) for c in t) else []
        hit: set[str] = set()
        for (cjk, m), grams in by_key.items():
            toks, sep = (chars, "") if cjk else (words, " ")
            for i in range(len(toks) - m + 1):
                hit |= grams.get(sep.join(toks[i : i + m]), set())
        found.append(hit)
    return found


class PlainPython:
    """A set of n-gram strings and a loop per document (word n-grams; CJK by characters)."""

    def __init__(self, items: dict[str, str], p: NgramParams) -> None:
        self.p = p
        self.grams: dict[str, set[str]] = {}
        for k, v in items.items():
            for g in item_grams(v, p):
                self.grams.setdefault(g, set()).add(k)

    def __call__(self, docs: list[str]) -> list[set[str]]:
        out = []
        for doc in docs:
            toks, cjk = tokens(doc)
            n, sep = (self.p.char_ngram, "") if cjk else (self.p.word_ngram, " ")
            hit: set[str] = set()
            for i in range(max(len(toks) - n + 1, 1)):
                hit |= self.grams.get(sep.join(toks[i : i + n]), set())
            out.append(hit)
        return out


_NONE = frozenset()  # the documents without a match share one empty answer


def ours(items: dict[str, str], p: NgramParams) -> Callable[[list[str]], list[set[str]]]:
    index = EvalIndex(p)
    index.add("bench:v1", list(items), pa.array(list(items.values())))

    def run(docs: list[str]) -> list[set[str]]:
        out: list[set[str]] = []
        for i in range(0, len(docs), 4096):
            found = index.matches(pa.array(docs[i : i + 4096]))
            batch: list[set[str]] = [_NONE] * len(found.sample_ngrams)  # type: ignore[list-item]
            for d, matches in found.by_doc.items():
                batch[d] = {m.item.item_id for m in matches}
            out += batch
        return out

    return run


def datatrove(items: dict[str, str], p: NgramParams, folder: Path) -> Callable[[list[str]], list[set[str]]]:
    """datatrove's filter over an index of our items in its indexer's file format (one task)."""
    import numpy as np
    from datatrove.data import Document
    from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter
    from datatrove.utils.hashing import HashConfig, create_hash_func
    from datatrove.utils.text import ngrams, simplify_text
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    # sha1 hashing: the default xxhash path hands a str to the installed xxhash, which wants bytes
    config = NGramsDecontConfig(n_grams=p.word_ngram, find_query_ngrams=True, hash_config=HashConfig(hash_fc="sha1"))
    tokenizer, hash_func = load_word_tokenizer("en"), create_hash_func(config.hash_config)
    hashes = set()
    for text in items.values():  # what NGramsDecontIndexer.compute_hashes writes for a query's n-grams
        toks = tokenizer.word_tokenize(simplify_text(text, config.norm_config))
        hashes.update(map(hash_func, map(" ".join, ngrams(toks, config.n_grams))))
    np.array(sorted(hashes), dtype=config.hash_config.np_descr).tofile(folder / "bench.index.hashes")
    flt = NGramsDecontFilter(str(folder), config=config)

    def run(docs: list[str]) -> list[set[str]]:
        return [set() if flt.filter(Document(text=d, id=str(i))) is True else {"?"} for i, d in enumerate(docs)]

    return run


# -- data ----------------------------------------------------------------------------------------------
def build(n_docs: int, n_items: int, p: NgramParams, seed: int = 19) -> tuple[dict[str, str], list[str]]:
    """Items (spans of English and Chinese corpus documents, from the copy's other half) and the corpus copy
    with each item planted one of four ways."""
    rng = random.Random(seed)
    en_all = [d["text"] for d in read_corpus(CORPUS_EN) if len(d["text"].split()) >= 40]
    zh_all = [d["text"] for d in read_corpus(CORPUS_ZH) if len(d["text"]) >= 80]
    # the corpus copy is the first half of each corpus, the items come from the second half
    corpus_en, en = en_all[: len(en_all) // 2], en_all[len(en_all) // 2 :]
    zh_text, zh = zh_all[: len(zh_all) // 2], zh_all[len(zh_all) // 2 :]
    docs = [corpus_en[i % len(corpus_en)] for i in range(n_docs)]
    items: dict[str, str] = {}
    for k in range(n_items):
        if k % 4 == 3:
            src = zh[rng.randrange(len(zh))]
            start = rng.randrange(len(src) - 60)
            items[f"i{k}"] = src[start : start + 60]
        else:
            words = en[rng.randrange(len(en))].split()
            start = rng.randrange(len(words) - 30)
            items[f"i{k}"] = " ".join(words[start : start + 30])
    planted = list(docs)
    for k, (item, text) in enumerate(items.items()):
        way = k % 4
        if way == 0:  # verbatim
            planted.append(text)
        elif way == 1:  # one token changed per 2n tokens
            toks = text.split()
            for i in range(0, len(toks), 2 * p.word_ngram):
                toks[min(len(toks) - 1, i + rng.randrange(2 * p.word_ngram))] = f"changed{item}"
            planted.append(" ".join(toks))
        elif way == 2:  # embedded in a longer document
            planted.append(f"{docs[k % len(docs)]} {text} {docs[(k + 1) % len(docs)]}")
        else:  # Chinese, embedded in Chinese text
            planted.append(f"{zh_text[k % len(zh_text)]}{text}{zh_text[(k + 7) % len(zh_text)]}")
    return items, planted


def timed(run: Callable[[list[str]], list[set[str]]], docs: list[str]) -> tuple[list[set[str]], float]:
    run(docs[:50])  # warm-up: numba compilation, tokenizer loading
    start = time.process_time()
    found = run(docs)
    return found, time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=60_000)  # about 32 MB with the planted documents
    parser.add_argument("--items", type=int, default=2_000)
    args = parser.parse_args()
    p = NgramParams()
    print(
        "load average (1, 5, 15 min) at start: {:.2f} {:.2f} {:.2f} on {} cores".format(
            *os.getloadavg(), os.cpu_count()
        )
    )
    items, docs = build(args.docs, args.items, p)
    mb = sum(len(d.encode()) for d in docs) / 1e6
    want = reference(items, docs, p)
    print(f"corpus: {len(docs):,} documents, {mb:.1f} MB; eval set: {len(items):,} items; n = {p.word_ngram} words, "
          f"{p.char_ngram} CJK characters")  # fmt: skip
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        runners: dict[str, Callable[[list[str]], list[set[str]]]] = {
            "ours": ours(items, p),
            "plain Python": PlainPython(items, p),
        }
        try:
            runners["datatrove NGramsDecontFilter"] = datatrove(items, p, Path(tmp))
        except ImportError as exc:
            print(f"datatrove baseline cannot run: {exc}", file=sys.stderr)
            return 1
        for name, run in runners.items():
            found, cpu = timed(run, docs)
            results[name] = (found, cpu)
    print("load average (1, 5, 15 min) at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print("\n| detector | docs/s (1 core) | MB/s (1 core) | CPU s | ours is |\n|---|---|---|---|---|")
    ours_cpu = results["ours"][1]
    for name, (_, cpu) in results.items():
        print(f"| {name} | {len(docs) / cpu:,.0f} | {mb / cpu:.2f} | {cpu:.2f} | {cpu / ours_cpu:.1f}x faster |")
    got = results["ours"][0]
    pairs_want = {(d, i) for d, hit in enumerate(want) for i in hit}
    pairs_got = {(d, i) for d, hit in enumerate(got) for i in hit}
    recall = len(pairs_got & pairs_want) / len(pairs_want) if pairs_want else 1.0
    false = pairs_got - pairs_want
    hits = len(pairs_got & pairs_want)
    print(f"\nplanted: reference finds {len(pairs_want):,} (document, item) pairs; ours finds {hits:,} "
          f"(recall {100 * recall:.2f}%) and {len(false)} the reference does not")  # fmt: skip
    plain_x = results["plain Python"][1] / ours_cpu
    dt_x = results["datatrove NGramsDecontFilter"][1] / ours_cpu
    ok = recall >= TARGET_RECALL and not false
    print(f"targets: >= {TARGET_PLAIN:.0f}x plain Python: {plain_x:.1f}x; >= {TARGET_DATATROVE:.0f}x datatrove: "
          f"{dt_x:.1f}x; recall >= 99% and no false flag: {'yes' if ok else 'NO'}")  # fmt: skip
    return 0 if ok else 2


if __name__ == "__main__":
    raise SystemExit(main())
