"""A rule set's survivors' tokens are selected from the batch's, exactly as tokenizing them again gives them."""

from __future__ import annotations

import random
import threading

import numpy as np
import pyarrow as pa
import pytest

from operators.quality import GopherQuality, GopherRepetition, token_reuse
from operators.quality.tokenize import Tokens, _tokenized, tokenize
from tests.support.quality_samples import make_batch


def _texts(seed: int, n: int = 200) -> list[str]:
    rng = random.Random(seed)
    words = ["Hello,", "world", "don't", "e.g.", "https://x.org/a?b=1", "数据集", "Ünïcode", "...", "9am", "-", ""]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def _equal(a: Tokens, b: Tokens) -> None:
    for field in ("cps", "cp_offsets", "starts", "ends", "offsets"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


@pytest.mark.parametrize("seed", [0, 1])
def test_selected_tokens_are_those_of_the_selected_texts(seed: int) -> None:
    texts = _texts(seed)
    whole = _tokenized(pa.array(texts))
    rng = random.Random(seed)
    for rows in ([], list(range(len(texts))), sorted(rng.sample(range(len(texts)), 77)), [0], [len(texts) - 1]):
        _equal(
            whole.select(np.array(rows, dtype=np.int64)), _tokenized(pa.array([texts[r] for r in rows], pa.string()))
        )


def test_the_next_rule_set_gets_the_survivors_tokens_and_the_same_verdicts() -> None:
    texts = _texts(2, 400) + ["the cat sat on the mat " * 8, "a b " * 30]
    batch = make_batch(texts)
    repetition, quality = GopherRepetition(), GopherQuality()
    survivors = repetition.apply(batch).samples
    assert 0 < survivors.num_rows < batch.num_rows
    texts_kept = survivors.column("text")
    reused = token_reuse.known(texts_kept)
    assert reused is not None  # selected from the repetition step's tokens, not tokenized again
    _equal(reused, _tokenized(texts_kept))
    via_reuse = quality.apply(survivors).lineage
    token_reuse.remember(pa.array(["unrelated"]), tokenize(pa.array(["unrelated"])))  # forget the batch
    assert token_reuse.known(texts_kept) is None
    assert quality.apply(survivors).lineage.equals(via_reuse)


def test_other_texts_and_other_threads_do_not_see_a_batch() -> None:
    texts = pa.array(["one two three", "four five"])
    tokenize(texts)
    assert token_reuse.known(pa.array(["one two three", "four five"])) is None  # equal values, other buffers
    assert token_reuse.known(texts.slice(1)) is None
    seen = []
    thread = threading.Thread(target=lambda: seen.append(token_reuse.known(texts)))
    thread.start()
    thread.join()
    assert seen == [None]
