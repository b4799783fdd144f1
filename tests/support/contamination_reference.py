"""A brute-force exact reference for the contamination check, written independently of the numba kernels:
plain-Python normalisation (NFKC, lower case, P*/S* deleted, ``str.isspace`` splitting, near-dedupe's CJK rule),
every n-gram of every item, and a string look-up of each in every document's windows."""

from __future__ import annotations

import random
import unicodedata

from operators.contamination.params import NgramParams


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x323AF
        or 0xF900 <= cp <= 0xFAFF
        or 0x3040 <= cp <= 0x30FF
        or 0x31F0 <= cp <= 0x31FF
        or 0x3100 <= cp <= 0x312F
        or 0xAC00 <= cp <= 0xD7AF
        or 0x1100 <= cp <= 0x11FF
        or 0x3130 <= cp <= 0x318F
    )


def normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] not in "PS")


def words(text: str) -> list[str]:
    """Whitespace-delimited words; a CJK character is a word of its own."""
    return "".join(f" {ch} " if _is_cjk(ch) else ch for ch in normalise(text)).split()


def chars(text: str) -> list[str]:
    return [ch for ch in normalise(text) if not ch.isspace()]


def is_cjk_text(text: str) -> bool:
    return any(_is_cjk(ch) for ch in normalise(text))


def item_grams(text: str, p: NgramParams) -> set[tuple[str, ...]]:
    toks, n = (chars(text), p.char_ngram) if is_cjk_text(text) else (words(text), p.word_ngram)
    if not toks:
        return set()
    if len(toks) < n:
        return {tuple(toks)}
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def contained(items: dict[str, str], doc: str, p: NgramParams) -> dict[str, int]:
    """Item id -> how many of its distinct n-grams occur in ``doc`` (items with none left out)."""
    streams = [words(doc)] + ([chars(doc)] if is_cjk_text(doc) else [])
    found = {}
    for item_id, text in items.items():
        cjk = is_cjk_text(text)
        hits = 0
        for gram in item_grams(text, p):
            for toks in streams[1:] if cjk else streams[:1]:
                m = len(gram)
                if any(tuple(toks[i : i + m]) == gram for i in range(len(toks) - m + 1)):
                    hits += 1
                    break
        if hits:
            found[item_id] = hits
    return found


FILLER_TEXT = (
    "the package manager resolves dependencies before installing each archive and verifies its signature "
    "so that a broken mirror cannot replace a library with something else while users update their systems"
)
FILLER = FILLER_TEXT.split()
ZH_FILLER = "软件包管理器在安装每个归档文件之前会解析依赖关系并验证签名以防止损坏的镜像替换系统中的库文件"


def planted_corpus(items: dict[str, str], p: NgramParams, seed: int = 7) -> list[str]:
    """Documents with items planted four ways (verbatim; one token changed per 2n tokens; embedded in a
    longer document; Chinese items in Chinese text), and clean documents."""
    rng = random.Random(seed)
    docs = []
    for text in items.values():
        docs.append(text)  # verbatim
        toks = text.split()
        if len(toks) > 2:
            for i in range(0, len(toks), 2 * p.word_ngram):
                toks[min(len(toks) - 1, i + rng.randrange(2 * p.word_ngram))] = "zzzchanged"
            docs.append(" ".join(toks))  # one token changed per 2n
        pre = " ".join(rng.choices(FILLER, k=60))
        post = " ".join(rng.choices(FILLER, k=60))
        docs.append(f"{pre} {text} {post}" if not is_cjk_text(text) else f"{ZH_FILLER}{text}{ZH_FILLER}")
    docs += [" ".join(rng.choices(FILLER, k=80)) for _ in range(20)] + [ZH_FILLER * 2]
    return docs
