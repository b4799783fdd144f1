"""The README's "Export to Megatron" example, run as written: its bash block, read from the README, in a
fresh folder laid out like a checkout (``.venv`` and ``examples``), against a fresh LINEAGE_HOME. Then
megatron-core reads the shard it wrote, and the sequence it asked about is the sample it named."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tokenizers import Tokenizer

import lineage
from lineage.settings import get_settings
from tests.support.cli import lineage as run_cli

ROOT = Path(__file__).resolve().parents[1]


def readme_block(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match, f"no bash block in README section {title!r}"
    return match.group(1)


def test_the_readme_exports_the_demo_to_megatron_and_answers_sequence_lineage(tmp_path: Path, home: Path) -> None:
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    commands = readme_block("Export to Megatron")
    assert "lineage demo" in commands and "train_tokenizer.py" in commands and "--format megatron" in commands
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.prefix))  # the venv the tests run in, as setup.sh makes it
    (checkout / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "LINEAGE_HOME": str(home), "PYTHONPATH": str(ROOT)}  # this tree's code, not another
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands], cwd=checkout, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, f"{ran.stdout[-4000:]}\n{ran.stderr[-4000:]}"

    made = json.loads((checkout / "export.json").read_text())
    assert made["release"] == "debian-clean@demo" and made["format"] == "megatron" and len(made["shards"]) == 1
    answer = json.loads(run_cli(home, "sequence", made["export_id"], "1234", "--json").stdout)
    (piece,) = answer["samples"]
    assert piece["sample_id"] in ran.stdout and (answer["shard"], answer["shard_sequence"]) == (0, 1234)

    shard = Path(made["path"]) / "shard_00000"
    indexed = IndexedDataset(str(shard))  # kept: what it returns are views of its memory map
    tokens = indexed[1234].tolist()
    tokenizer = Tokenizer.from_file(str(checkout / "tokenizer.json"))
    assert tokens[-1] == tokenizer.token_to_id("<|endoftext|>") and len(tokens) == piece["doc_end"]
    reader = lineage.open_release("debian-clean@demo", settings=get_settings(), columns=["sample_id", "text"])
    texts = {r["sample_id"]: r["text"] for b in reader for r in b.to_pylist()}
    assert tokenizer.decode(tokens[:-1]) == texts[piece["sample_id"]]  # the named sample is that sequence
    assert "step 0 of export" in ran.stdout and "training samples" in ran.stdout
