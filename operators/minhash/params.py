"""Configuration of the MinHash LSH near-duplicate kernel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from operators.base import Params
from storage.errors import Invalid

Script = Literal["mixed", "auto", "latin", "cjk"]
Verify = Literal["none", "estimate", "exact"]
Survivor = Literal["longest", "shortest", "smallest_id"]

_SCRIPTS, _VERIFY, _SURVIVORS = get_args(Script), get_args(Verify), get_args(Survivor)


@dataclass(frozen=True)
class MinHashParams(Params):
    """What a pipeline file configures for near-duplicate removal.

    ``bands``/``rows`` override the LSH layout; when both are unset it is derived from
    ``threshold`` like datasketch's ``MinHashLSH`` does, but with weights that put recall first
    (``false_positive_weight`` 0.002, ``false_negative_weight`` 0.998, giving 21x6 at 0.8 and 128
    permutations, which makes a pair *at* the threshold a candidate with probability 0.998):
    datasketch's 0.5/0.5 choice (9x13, 0.40 at the threshold) and our earlier 0.2/0.8 (12x10,
    0.74) miss pairs just above it, and the extra false positives of wide bands are removed by
    ``verify`` instead.

    ``verify`` checks every candidate edge before clustering: ``exact`` (default) compares
    shingle sets and needs the texts at clustering time; ``estimate`` compares signatures (no
    texts, but +-0.035 noise at 0.8 with 128 permutations chains clusters); ``none`` trusts the
    buckets. Only ``exact`` keeps removal precision at 1.0 on the Debian corpora and the mixed zh set.

    ``script`` picks the shingles (``shingle.py`` defines them): ``mixed`` (default) gives every
    text a word half (word ``word_ngram``-grams, CJK characters deleted) and a text with a CJK
    character a character half (character ``ngram``-grams) too; a pair is a candidate when either
    half shares a bucket, and every candidate is verified by exact character ``ngram``-gram Jaccard
    (the reference metric, ``characters.py``). No per-document guess decides a document's shingle
    space, so a page without a CJK character and its twin with a few still match (``auto`` split
    them). The word half only proposes candidates: its n-grams are short (2 words) because a pair at
    0.8 by characters is often far below it by word 5-grams (one changed word removes 5 word 5-grams
    but only about 10 of a text's character 5-grams), which banding would then miss. ``latin`` = word
    ``ngram``-grams, ``cjk`` = character ``ngram``-grams with whitespace removed, for every text, each
    verified by its own shingles; ``auto`` = the rule before: ``cjk`` for a document with at least
    one CJK character (and at least ``cjk_ratio`` of its non-whitespace characters), else ``latin``.
    ``cjk_ratio`` is read only by ``auto``, ``word_ngram`` only by ``mixed``.
    ``survivor`` orders a cluster's members: ``longest`` text first, or ``shortest``, or only by
    ``smallest_id``; ties always fall to the smallest ``sample_id``. Published samples always
    survive, whatever the policy.
    """

    threshold: float = 0.8
    num_perm: int = 128
    ngram: int = 5
    word_ngram: int = 2
    seed: int = 1
    bands: int | None = None
    rows: int | None = None
    false_positive_weight: float = 0.002
    false_negative_weight: float = 0.998
    script: Script = "mixed"
    cjk_ratio: float = 0.0
    verify: Verify = "exact"
    survivor: Survivor = "longest"

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise Invalid(f"threshold must be in (0, 1], got {self.threshold}")
        if not 1 <= self.num_perm <= 1024:
            raise Invalid(f"num_perm must be in [1, 1024], got {self.num_perm}")
        if self.ngram < 1 or self.word_ngram < 1:
            raise Invalid(f"ngram and word_ngram must be >= 1, got {self.ngram} and {self.word_ngram}")
        if not 0 <= self.seed < 2**32:
            raise Invalid(f"seed must be in [0, 2^32), got {self.seed}")
        if (self.bands is None) != (self.rows is None):
            raise Invalid("set both bands and rows, or neither")
        if self.bands is not None and not (1 <= self.bands * self.rows <= self.num_perm and self.rows >= 1):
            raise Invalid(f"bands x rows ({self.bands}x{self.rows}) must be positive and fit num_perm")
        if self.false_positive_weight < 0 or self.false_negative_weight < 0:
            raise Invalid("LSH weights must be non-negative")
        if not 0.0 <= self.cjk_ratio <= 1.0:
            raise Invalid(f"cjk_ratio must be in [0, 1], got {self.cjk_ratio}")
        for name, value, allowed in (
            ("script", self.script, _SCRIPTS),
            ("verify", self.verify, _VERIFY),
            ("survivor", self.survivor, _SURVIVORS),
        ):
            if value not in allowed:
                raise Invalid(f"{name} must be one of {allowed}, got {value!r}")
