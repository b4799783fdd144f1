"""Token counts for the mixture's ``tokens`` unit: a tokenizer.json read locally, checked by digest.

The only module of ``operators`` that imports ``tokenizers`` (an extra, like the exports'), and only
inside :func:`load_tokenizer`: the mixture checks the file's digest when it is built, before any work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from storage.errors import Invalid, MissingExtra


def checked_bytes(path: str, digest: str) -> bytes:
    """The tokenizer file's bytes, refused unless they have the configured xxh3-128 ``digest``."""
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise Invalid(f"mixture tokenizer {path}: {exc.strerror or exc}") from None
    found = xxhash.xxh3_128_hexdigest(data)
    if found != digest.removeprefix("xxh3-128:"):
        raise Invalid(f"mixture tokenizer {path}: digest is xxh3-128:{found}, the pipeline file pins {digest}")
    return data


def load_tokenizer(path: str, digest: str) -> Any:
    """The tokenizer at ``path``, checked by :func:`checked_bytes`."""
    MissingExtra.require("tokenizers", "export", "the mixture's tokens unit")
    from tokenizers import Tokenizer  # extra: tokenizers, checked just above

    data = checked_bytes(path, digest)
    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except Exception as exc:  # tokenizers raises its own Exception subclass for a bad file
        raise Invalid(f"mixture tokenizer {path} does not load: {exc}") from None


def token_counts(tokenizer: Any, texts: list[str]) -> np.ndarray:
    """Tokens per text, without special tokens (what the training export packs)."""
    return np.fromiter(
        (len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)), dtype=np.int64, count=len(texts)
    )
