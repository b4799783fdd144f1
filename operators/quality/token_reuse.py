"""Tokens of a batch re-used by the next rule set, which gets a selection of the same texts.

A pipeline fuses consecutive map steps: Gopher repetition, then Gopher quality, tokenize one batch's
texts, the second only the first's survivors. This thread's last tokenized texts and their tokens are
kept (:func:`remember`); a rule set that kept some rows of them says which (:func:`note_kept`, from
:meth:`~operators.quality.base.QualityOperator.apply`), and tokenizing those survivors then selects
their tokens (:func:`known`) rather than tokenizing them again. Texts are recognised by their Arrow
buffers: the arrays are held here, so their memory is not reused while they are. A pipeline's pass of a
batch through its map steps forgets them at its end (:mod:`operators.batch_scope`). Without numba, so the
operator base can import it.
"""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np
import pyarrow as pa

from operators import batch_scope


class Tokens(Protocol):
    """What this module needs of :class:`operators.quality.tokenize.Tokens` (which imports this module)."""

    def select(self, rows: np.ndarray) -> Tokens: ...


class _Recent(threading.local):
    texts: pa.Array | None = None
    tokens: Tokens | None = None
    kept: pa.Array | None = None
    rows: np.ndarray | None = None


_recent = _Recent()


def forget() -> None:
    """This thread keeps no texts or tokens."""
    _recent.texts, _recent.tokens, _recent.kept, _recent.rows = None, None, None, None


batch_scope.cleared_after_each_pass(forget)


def _same(a: pa.Array, b: pa.Array) -> bool:
    """The same values: views of the same buffers at the same offset and length."""
    if a is b:
        return True
    return (
        len(a) == len(b)
        and a.offset == b.offset
        and a.type == b.type
        and [x.address if x is not None else 0 for x in a.buffers()]
        == [x.address if x is not None else 0 for x in b.buffers()]
    )


def remember(texts: pa.Array, tokens: Tokens) -> None:
    """``tokens`` are those of ``texts``, this thread's latest."""
    recent = _recent
    if isinstance(texts, pa.Array):
        recent.texts, recent.tokens, recent.kept, recent.rows = texts, tokens, None, None


def note_kept(texts: pa.Array, kept: pa.Array, rows: np.ndarray) -> None:
    """``kept`` holds ``texts[rows]`` (``rows`` ascending)."""
    recent = _recent
    if recent.texts is not None and isinstance(texts, pa.Array) and _same(texts, recent.texts):
        recent.kept, recent.rows = kept, rows


def known(texts: pa.Array) -> Tokens | None:
    """The tokens of ``texts`` if this thread has them, or can select them from its latest; else None."""
    recent = _recent
    if not isinstance(texts, pa.Array) or recent.tokens is None:
        return None
    if recent.texts is not None and _same(texts, recent.texts):
        return recent.tokens
    if recent.kept is not None and recent.rows is not None and _same(texts, recent.kept):
        tokens = recent.tokens.select(recent.rows)
        remember(texts, tokens)
        return tokens
    return None
