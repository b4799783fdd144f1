"""A pipeline with a [mixture]: the run's decision, the manifest, and the same release on every engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

from lineage.catalog import Catalog
from lineage.releases import publish
from lineage.runs import Runner
from lineage.settings import Settings
from pipelines.spec import PipelineSpec
from storage.errors import Invalid
from tests.support.helpers import write_jsonl

EN = [f"english sample number {i} with some words in it" for i in range(120)]
ZH = [f"中文样本第{i}号" for i in range(40)]


def corpora(root: Path) -> dict[str, Path]:
    en = write_jsonl(root / "en" / "part.jsonl", [{"id": f"en{i}", "text": t} for i, t in enumerate(EN)])
    # a few copies of an English text in the Chinese source: a cross-source duplicate cluster
    zh = write_jsonl(
        root / "zh" / "part.jsonl",
        [{"id": f"zh{i}", "text": t} for i, t in enumerate(ZH)] + [{"id": "zh-dup", "text": EN[0]}],
    )
    return {"en": en.parent, "zh": zh.parent}


def mixed_spec(root: Path, output: str, mixture: dict[str, Any], **inputs: dict[str, Any]) -> PipelineSpec:
    paths = corpora(root)
    return PipelineSpec.model_validate(
        {
            "name": "mix",
            "inputs": [
                {"dataset": name, "path": str(paths[name]), "id_field": "id", **inputs.get(name, {})}
                for name in ("en", "zh")
            ],
            "operators": [{"name": "exact_dedupe"}],
            "mixture": mixture,
            "output": {"dataset": output},
        }
    )


WEIGHTS = {"en": {"weight": 0.7}, "zh": {"weight": 0.3}}


def test_a_run_records_the_requested_and_achieved_mixture(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    spec = mixed_spec(tmp_path, "mixed", {"unit": "samples", "total": 100, "seed": 3}, **WEIGHTS)
    outcome = Runner(settings, catalog).run(spec)
    steps = {s["operator"]: s for s in outcome.counts["steps"]}
    assert [s["operator"] for s in outcome.counts["steps"]] == ["convert", "exact_dedupe", "mixture"]
    mix = outcome.counts["mixture"]
    en, zh = mix["sources"]["en"], mix["sources"]["zh"]
    assert en["requested"]["share"] == pytest.approx(0.7) and en["requested"]["target"] == pytest.approx(70)
    # after dedupe: en lost nothing (its copy of EN[0] is first in source order), zh lost its duplicate
    assert en["achieved"]["available"]["samples"] == 120 and zh["achieved"]["available"]["samples"] == 40
    assert en["achieved"]["selected"]["samples"] == 70 and en["achieved"]["served"]["samples"] == 70
    assert zh["achieved"]["selected"]["samples"] == 30 and zh["rule"]["passes"] == 0
    assert steps["mixture"]["dropped"] == 60 and steps["mixture"]["reasons"] == {"mixture_not_selected": 60}
    assert outcome.row_count == 100
    assert set(en["achieved"]["share"]) == {"samples", "bytes", "words"}

    release, _ = publish(catalog, settings, "mixed@v1")
    assert release.manifest["mixture"] == mix


def test_upsampling_keeps_each_sample_once_with_a_repeat_rule(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    spec = mixed_spec(tmp_path, "up", {"unit": "samples", "total": 300, "seed": 1}, **WEIGHTS)
    outcome = Runner(settings, catalog).run(spec)
    zh = outcome.counts["mixture"]["sources"]["zh"]
    assert zh["achieved"]["selected"]["samples"] == 40  # every sample, stored once
    assert zh["achieved"]["served"]["samples"] == 90 and zh["rule"]["passes"] == 2  # 2 passes + 10
    assert outcome.row_count == 160


def test_mixing_before_the_operators_shares_the_raw_inputs(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    spec = mixed_spec(tmp_path, "before", {"unit": "samples", "apply": "before"}, **WEIGHTS)
    outcome = Runner(settings, catalog).run(spec)
    assert [s["operator"] for s in outcome.counts["steps"]] == ["convert", "mixture", "exact_dedupe"]
    zh = outcome.counts["mixture"]["sources"]["zh"]
    assert zh["achieved"]["available"]["samples"] == 41  # the duplicate is still there before dedupe


def test_priority_decides_which_sources_copy_survives(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    default = mixed_spec(tmp_path / "a", "prio-default", {"unit": "samples"}, **WEIGHTS)
    ranked = mixed_spec(
        tmp_path / "b", "prio-zh", {"unit": "samples"}, en={"weight": 0.7}, zh={"weight": 0.3, "priority": 1}
    )
    runner = Runner(settings, catalog)
    first = runner.run(default).counts["mixture"]["sources"]
    second = runner.run(ranked).counts["mixture"]["sources"]
    assert first["en"]["achieved"]["available"]["samples"] == 120  # source order: en's copy survives
    assert second["en"]["achieved"]["available"]["samples"] == 119  # zh ranks higher: its copy survives
    assert second["zh"]["achieved"]["available"]["samples"] == 41


@pytest.mark.parametrize(
    ("mixture", "inputs", "message"),
    [
        ({"unit": "lines"}, WEIGHTS, "unit"),
        ({"unit": "tokens"}, WEIGHTS, "needs a tokenizer"),
        ({"unit": "samples", "total": -1}, WEIGHTS, "total"),
        ({"unit": "samples"}, {"en": {"weight": 1}}, "every input needs a weight"),
        ({"unit": "samples"}, {"en": {"weight": 0.5, "max_share": 0.2}, "zh": {"weight": 0.5}}, "max_share"),
        ({"unit": "samples", "apply": "sometimes"}, WEIGHTS, "apply"),
        (None, WEIGHTS, "no \\[mixture\\] section"),
    ],
)
def test_a_bad_mixture_is_refused_with_the_reason(
    tmp_path: Path, mixture: dict | None, inputs: dict, message: str
) -> None:
    paths = corpora(tmp_path)
    text = "name = 'm'\n[output]\ndataset = 'o'\n"
    for name in ("en", "zh"):
        text += f"[[inputs]]\ndataset = '{name}'\npath = '{paths[name]}'\n"
        for key, value in inputs.get(name, {}).items():
            text += f"{key} = {value}\n"
    if mixture is not None:
        text += "[mixture]\n" + "".join(f"{k} = {v!r}\n" for k, v in mixture.items())
    path = tmp_path / "pipeline.toml"
    path.write_text(text.replace("'", '"'))
    with pytest.raises(Invalid, match=message):
        PipelineSpec.load(path)


def _served(ref: str, settings: Settings, **kw: Any) -> list[tuple[str, int]]:
    import lineage

    reader = lineage.open_release(ref, settings=settings, columns=["sample_id"], batch_size=7, **kw)
    return [
        (sid, rep)
        for batch in reader
        for sid, rep in zip(batch.column("sample_id").to_pylist(), batch.column("repeat").to_pylist(), strict=True)
    ]


def _lineage_repeats(settings: Settings, catalog: Catalog, ref: str) -> dict[str, int]:
    from lineage.releases import get_release
    from storage.delta import version_dataset
    from storage.tier import get_tier

    with catalog.session() as s:
        dv = get_release(s, ref).dataset_version
        tier = get_tier(dv.tier, settings)
        lin = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version).to_table()
    out = {}
    for row in lin.filter(pa.compute.equal(lin.column("operator"), "mixture")).to_pylist():
        rules = {r["rule"]: r["value"] for r in row["detail"]["rules"]}
        out[row["sample_id"]] = int(rules["repeats"])
    return out


def test_the_reader_serves_each_sample_its_repeats_whole_passes_first(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    settings.parquet_row_group_rows = 16  # several blocks, so windows and passes really shuffle
    spec = mixed_spec(tmp_path, "served", {"unit": "samples", "total": 300, "seed": 1}, **WEIGHTS)
    Runner(settings, catalog).run(spec)
    publish(catalog, settings, "served@v1")
    served = _served("served@v1", settings)
    recorded = _lineage_repeats(settings, catalog, "served@v1")
    assert len(served) == sum(recorded.values()) == 300
    copies: dict[str, list[int]] = {}
    for sid, rep in served:
        copies.setdefault(sid, []).append(rep)
    assert {sid: len(reps) for sid, reps in copies.items()} == {s: r for s, r in recorded.items() if r}
    assert all(sorted(reps) == list(range(len(reps))) for reps in copies.values())  # each copy its index
    passes = [rep for _, rep in served]
    assert passes == sorted(passes), "every sample once before any second copy"
    # the same copies whatever the world size; the same order for the same seed
    ranks = [pair for r in range(3) for pair in _served("served@v1", settings, rank=r, world_size=3, remainder="pad")]
    assert set(ranks) == set(served)
    assert _served("served@v1", settings) == served
    assert _served("served@v1", settings, seed=5) != served


def test_the_exports_write_each_copy_with_its_repeat_index(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    import json

    from lineage.releases.export import export_release
    from lineage.releases.tokenized import ExportOptions
    from tests.support.training_export import train_tokenizer

    spec = mixed_spec(tmp_path, "exp", {"unit": "samples", "total": 300, "seed": 1}, **WEIGHTS)
    Runner(settings, catalog).run(spec)
    publish(catalog, settings, "exp@v1")
    recorded = {s: r for s, r in _lineage_repeats(settings, catalog, "exp@v1").items() if r}
    done = export_release(catalog, settings, "exp@v1", tmp_path / "out", "jsonl")
    rows = [json.loads(line) for line in Path(done.path).read_text().splitlines()]
    assert done.rows == len(rows) == 300
    copies: dict[str, list[int]] = {}
    for row in rows:
        copies.setdefault(row["sample_id"], []).append(row["repeat"])
    assert {s: len(r) for s, r in copies.items()} == recorded
    assert all(r == list(range(len(r))) for r in copies.values())  # whole passes first, in order
    assert [row["repeat"] for row in rows] == sorted(row["repeat"] for row in rows)

    tokenizer = train_tokenizer(tmp_path / "tok.json")
    options = ExportOptions(format="megatron", tokenizer=str(tokenizer), seed=4)
    mega = export_release(catalog, settings, "exp@v1", tmp_path / "mega", "megatron", training=options)
    assert mega.manifest is not None and mega.manifest["samples"] == 300
    starts = mega.manifest["repeat_passes"]
    assert starts[0] == 0 and len(starts) == max(recorded.values())
    assert starts[1] == len(recorded)  # pass 0 holds every sample once


def test_a_tokens_mixture_uses_the_pinned_tokenizer(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    import xxhash

    from tests.support.training_export import train_tokenizer

    tokenizer = train_tokenizer(tmp_path / "tok.json")
    digest = xxhash.xxh3_128_hexdigest(tokenizer.read_bytes())
    mixture = {"unit": "tokens", "total": 900, "tokenizer": {"path": str(tokenizer), "digest": digest}}
    outcome = Runner(settings, catalog).run(mixed_spec(tmp_path, "tok", mixture, **WEIGHTS))
    mix = outcome.counts["mixture"]
    for name, share in (("en", 0.7), ("zh", 0.3)):
        src = mix["sources"][name]
        served, target = src["achieved"]["served"]["tokens"], src["requested"]["target"]
        assert target == pytest.approx(900 * share) and served >= target
        assert served - target < 40, "overshoot by at most one sample (a few dozen tokens here)"
    wrong = {**mixture, "tokenizer": {"path": str(tokenizer), "digest": "0" * 32}}
    with pytest.raises(Invalid, match="digest"):
        Runner(settings, catalog).run(mixed_spec(tmp_path / "w", "tok-wrong", wrong, **WEIGHTS))

    # the training export shares the pinned tokenizer: by default, and refusing the same path changed
    from lineage.client import Client

    publish(catalog, settings, "tok@v1")
    with Client(settings=settings) as client:
        done = client.export_release("tok@v1", tmp_path / "mega", "megatron")
        assert done.tokenizer_digest == f"xxh3-128:{digest}"
        tokenizer.write_text(tokenizer.read_text() + "\n")
        with pytest.raises(Invalid, match="the file changed"):
            client.export_release("tok@v1", tmp_path / "mega2", "megatron")


def test_catalog_inputs_are_sources_by_the_datasets_their_samples_came_from(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    paths = corpora(tmp_path)
    runner = Runner(settings, catalog)
    for name in ("en", "zh"):
        runner.run(
            PipelineSpec.model_validate(
                {
                    "name": f"clean-{name}",
                    "inputs": [{"dataset": name, "path": str(paths[name]), "id_field": "id"}],
                    "output": {"dataset": f"clean-{name}"},
                }
            )
        )
    merged = PipelineSpec.model_validate(
        {
            "name": "merge",
            "inputs": [
                {"dataset": "clean-en", "weight": 0.7},
                {"dataset": "clean-zh", "weight": 0.3, "priority": 1},
            ],
            "operators": [{"name": "exact_dedupe"}],
            "mixture": {"unit": "words"},
            "output": {"dataset": "merged"},
        }
    )
    mix = runner.run(merged).counts["mixture"]
    assert mix["sources"]["clean-en"]["members"] == ["en"] and mix["sources"]["clean-zh"]["members"] == ["zh"]
    assert mix["sources"]["clean-en"]["achieved"]["available"]["samples"] == 119  # zh's copy won
    shares = {n: s["achieved"]["share"]["words"] for n, s in mix["sources"].items()}
    assert shares["clean-en"] == pytest.approx(0.7, abs=0.02) and shares["clean-zh"] == pytest.approx(0.3, abs=0.02)


def test_a_takedown_successor_keeps_the_repeat_rules(tmp_path: Path, settings: Settings, catalog: Catalog) -> None:
    """The rules hold for any subset of the samples: the successor serves what is left as before."""
    from lineage.client import Client

    spec = mixed_spec(tmp_path, "td", {"unit": "samples", "total": 300, "seed": 1}, **WEIGHTS)
    Runner(settings, catalog).run(spec)
    publish(catalog, settings, "td@v1")
    before = dict(_served("td@v1", settings))
    with Client(settings=settings) as client:
        request = client.create_takedown({"source": {"dataset": "zh", "path": "*"}}, kind="opt_out", reason="asked")
        (done,) = client.apply_takedown(request.id).successors
        old, new = client.get_manifest("td@v1"), client.get_manifest(done.successor)
    assert new.mixture is not None and new.mixture.sources == old.mixture.sources  # type: ignore[union-attr]
    after = _served(done.successor, settings)
    counts: dict[str, int] = {}
    for sid, _ in after:
        counts[sid] = counts.get(sid, 0) + 1
    recorded = _lineage_repeats(settings, catalog, "td@v1")
    assert counts == {s: r for s, r in recorded.items() if s in counts}
    # only en is left: its 120 samples, served 210 times (1 pass and 90 more), as before the takedown
    assert len(counts) == 120 and len(after) == 210 and set(counts) < set(before)
