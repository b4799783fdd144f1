"""A small pipeline of stages for the DAG tests: clean English, clean Chinese, merge them 0.7/0.3 by words.

English has exact and near duplicates (so every clean step drops something), Chinese one exact duplicate
and one copy of an English text (so the merge's cross-source dedupe drops it too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.helpers import write_jsonl

TOPICS = ("compression", "networking", "fonts", "editors", "kernels", "shells", "audio", "printing")


def _english() -> list[dict[str, Any]]:
    texts = [
        f"package {i} provides {TOPICS[i % len(TOPICS)]} tools for the desktop, with manual pages and examples "
        + " ".join(f"word{i}x{k}" for k in range(5 + i % 9))
        for i in range(60)
    ]
    texts += [texts[3], texts[10]]  # exact duplicates
    texts.append(texts[20] + " extra")  # a near duplicate
    return [{"id": f"en{i}", "text": t} for i, t in enumerate(texts)]


def _chinese(english: list[dict[str, Any]]) -> list[dict[str, Any]]:
    texts = [f"软件包{i}提供{'压缩网络字体编辑内核'[i % 5]}工具和文档" + "说明" * (3 + i % 7) for i in range(30)]
    texts += [texts[4], english[7]["text"]]  # an exact duplicate, and a copy of an English text
    return [{"id": f"zh{i}", "text": t} for i, t in enumerate(texts)]


def write_corpus(root: Path, files: int = 2) -> dict[str, Path]:
    """The two sources as JSONL folders of ``files`` files each."""
    en = _english()
    out = {"en": root / "en", "zh": root / "zh"}
    for name, records in (("en", en), ("zh", _chinese(en))):
        for k in range(files):
            write_jsonl(out[name] / f"part-{k}.jsonl", records[k::files])
    return out


def dag_dict(paths: dict[str, Path], name: str = "small-dag", output: str = "mixed") -> dict[str, Any]:
    """The pipeline as the dict a ``[[stages]]`` file parses to."""
    return {
        "name": name,
        "stages": [
            {
                "name": "clean-en",
                "inputs": [{"dataset": "en", "path": str(paths["en"]), "id_field": "id"}],
                "operators": [{"name": "exact_dedupe"}, {"name": "minhash_dedupe"}],
                "output": {"dataset": f"{output}-en"},
            },
            {
                "name": "clean-zh",
                "inputs": [{"dataset": "zh", "path": str(paths["zh"]), "id_field": "id"}],
                "operators": [{"name": "exact_dedupe"}],
                "output": {"dataset": f"{output}-zh"},
            },
            {
                "name": "merge",
                "inputs": [{"stage": "clean-en", "weight": 0.7}, {"stage": "clean-zh", "weight": 0.3}],
                "operators": [{"name": "exact_dedupe"}],
                "mixture": {"unit": "words", "seed": 3},
                "output": {"dataset": output, "tags": ["dag"]},
            },
        ],
    }


def write_dag_file(root: Path, name: str = "small-dag", output: str = "mixed") -> Path:
    """The corpus under ``root`` and the pipeline file ``root/pipeline.toml`` reading it."""
    paths = write_corpus(root / "data")
    lines = [f'name = "{name}"', ""]
    for stage in dag_dict(paths, name, output)["stages"]:
        lines += ["[[stages]]", f'name = "{stage["name"]}"', f"inputs = [{', '.join(map(_inline, stage['inputs']))}]"]
        lines += [f"operators = [{', '.join(map(_inline, stage['operators']))}]"]
        if "mixture" in stage:
            lines.append(f"mixture = {_inline(stage['mixture'])}")
        lines += [f"output = {_inline(stage['output'])}", ""]
    path = root / "pipeline.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _inline(value: Any) -> str:
    """A TOML inline value (tables, arrays, strings, numbers) of the few kinds above."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)
