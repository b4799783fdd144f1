"""Helpers for the training-format export tests: a small BPE trained on the bundled Debian corpus (with
``tokenizers``, by ``examples/train_tokenizer.py``; nothing is shipped or loaded from a hub), a two-source
release from a slice of that corpus, and the MDS reader.

``streaming``'s package ``__init__`` imports its vision datasets, and so torchvision, which has no build
for the CPU torch these tests run on; :func:`streaming_dataset` imports the package's real
``streaming.base`` without running that ``__init__``.
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from lineage.client import Client
from tests.support.helpers import write_jsonl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"
EOD = "<|endoftext|>"


def corpus_records(name: str, limit: int) -> list[dict[str, Any]]:
    with gzip.open(EXAMPLES / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice(fh, limit)]


def train_tokenizer(path: Path, vocab_size: int = 800, docs: int = 400) -> Path:
    """A byte-level BPE trained on the first ``docs`` documents of each bundled corpus, by the documented
    example script (``examples/train_tokenizer.py``), so every export test also runs the example."""
    spec = importlib.util.spec_from_file_location("train_tokenizer", EXAMPLES.parent / "train_tokenizer.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.EOD == EOD
    return script.train(path, vocab_size, docs)


def publish_corpus_slice(client: Client, tmp_path: Path, ref: str = "deb@t", en: int = 120, zh: int = 40) -> str:
    """Release ``ref`` of the first ``en`` English and ``zh`` Chinese documents (two sources)."""
    en_dir = write_jsonl(tmp_path / "src" / "en" / "en.jsonl", corpus_records("debian_en", en)).parent
    zh_dir = write_jsonl(tmp_path / "src" / "zh" / "zh.jsonl", corpus_records("debian_zh", zh)).parent
    name = ref.split("@", 1)[0]
    client.run_pipeline(
        {
            "name": f"{name}-slice",
            "inputs": [
                {"dataset": "deb-en", "path": str(en_dir), "id_field": "id"},
                {"dataset": "deb-zh", "path": str(zh_dir), "id_field": "id"},
            ],
            "operators": [{"name": "exact_dedupe"}],
            "output": {"dataset": name},
        }
    )
    client.create_release(ref)
    return ref


def streaming_dataset(local: Path, **kwargs: Any) -> Any:
    """``streaming.base.StreamingDataset`` over the MDS folder ``local`` (see the module docstring)."""
    if "streaming" not in sys.modules:
        spec = importlib.util.find_spec("streaming")
        assert spec is not None and spec.loader is not None, "streaming-community is not installed"
        sys.modules["streaming"] = importlib.util.module_from_spec(spec)  # the package, its __init__ not run
    from streaming.base import StreamingDataset

    return StreamingDataset(local=str(local), **kwargs)
