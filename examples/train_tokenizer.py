"""Train a small byte-level BPE tokenizer on the bundled Debian corpus and save it as tokenizer.json.

For trying ``lineage export --format megatron|mds`` without downloading a tokenizer: the export takes any
Hugging Face ``tokenizers`` tokenizer.json and records it by digest. Needs ``pip install 'lineage-ledger[export]'``.

    python examples/train_tokenizer.py --out tokenizer.json [--vocab-size 8000] [--docs 5000]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
EOD = "<|endoftext|>"  # the end-of-document token the export appends to every document


def corpus_texts(docs: int) -> Iterator[str]:
    """The first ``docs`` texts of each bundled corpus (English, then Chinese)."""
    for name in ("debian_en", "debian_zh"):
        with gzip.open(DATA / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in itertools.islice(fh, docs):
                yield json.loads(line)["text"]


def train(out: Path, vocab_size: int = 8000, docs: int = 5000) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOD], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(corpus_texts(docs), trainer=trainer)
    out.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("tokenizer.json"))
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--docs", type=int, default=5000, help="documents of each corpus to train on")
    args = parser.parse_args()
    path = train(args.out, args.vocab_size, args.docs)
    print(f"wrote {path}")  # noqa: T201 (a script's one line of output)


if __name__ == "__main__":
    main()
