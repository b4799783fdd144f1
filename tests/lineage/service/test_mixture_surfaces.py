"""A mixture on every surface: the manifest and QC report (SDK over HTTP and in-process), ``GET /diff``,
and the ``lineage`` command's ``release show``, ``diff`` and ``sample`` (a real subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lineage.client import Client
from lineage.runs import Runner
from lineage.service.core import Service
from lineage.settings import Settings
from pipelines.spec import PipelineSpec
from tests.support.helpers import write_jsonl

ROOT = Path(__file__).resolve().parents[3]
EN = [f"english sample number {i} with a few more words" for i in range(60)]
ZH = [f"中文样本第{i}号" for i in range(20)]


@dataclass
class World:
    settings: Settings
    service: Service

    def lineage(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("LINEAGE_CONFIG", "LINEAGE_CATALOG_URL")}
        env["LINEAGE_HOME"] = str(self.settings.home)
        done = subprocess.run(
            [sys.executable, "-m", "lineage", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout


def _spec(root: Path, weights: tuple[float, float], seed: int, total: float) -> PipelineSpec:
    en = write_jsonl(root / "en" / "a.jsonl", [{"id": f"en{i}", "text": t} for i, t in enumerate(EN)]).parent
    zh = write_jsonl(root / "zh" / "a.jsonl", [{"id": f"zh{i}", "text": t} for i, t in enumerate(ZH)]).parent
    return PipelineSpec.model_validate(
        {
            "name": "mix",
            "inputs": [
                {"dataset": "en", "path": str(en), "id_field": "id", "weight": weights[0]},
                {"dataset": "zh", "path": str(zh), "id_field": "id", "weight": weights[1]},
            ],
            "mixture": {"unit": "samples", "total": total, "seed": seed},
            "output": {"dataset": "mixed"},
        }
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """mixed@a (0.5/0.5 of 60 samples: zh upsampled ×1.5) and mixed@b (0.8/0.2 of 50, seed 2)."""
    tmp = tmp_path_factory.mktemp("mixture-surfaces")
    settings = Settings(home=tmp / "home", catalog_url=None, single_user=True)  # loopback clients: the local user
    service = Service(settings)
    runner = Runner(settings, service.catalog)
    runner.run(_spec(tmp / "a", (0.5, 0.5), 1, 60))
    service.create_release({"name": "mixed", "tag": "a"})
    runner.run(_spec(tmp / "b", (0.8, 0.2), 2, 50))
    service.create_release({"name": "mixed", "tag": "b"})
    yield World(settings, service)
    service.close()


def test_the_manifest_and_qc_report_hold_the_requested_and_achieved_mixture(client: Client) -> None:
    manifest = client.get_manifest("mixed@a")
    assert manifest.mixture is not None and manifest.mixture.unit == "samples"
    zh = manifest.mixture.sources["zh"]
    assert zh.requested.share == pytest.approx(0.5) and zh.achieved.available["samples"] == 20
    assert zh.achieved.served["samples"] == 30 and zh.rule.passes == 1 and zh.rule.cut_id is not None
    qc = manifest.qc
    assert qc is not None and qc.mixture is not None
    rows = {s.source: s for s in qc.mixture.sources}
    assert rows["zh"].requested_share == pytest.approx(0.5) and rows["zh"].achieved_share == pytest.approx(0.5)
    assert rows["en"].selected == 30 and rows["en"].available == 60
    assert all(r.operator != "mixture" for r in qc.rules), "mixture decisions are not quality rules"
    downsampled = client.get_manifest("mixed@b").qc
    assert downsampled is not None and downsampled.mixture is not None
    en = next(s for s in downsampled.sources if s.source == "en")
    assert en.dropped == 0 and en.drop_rate == 0, "unselected samples are not quality drops (the publish gate)"
    assert next(s for s in downsampled.mixture.sources if s.source == "en").selected == 40


def test_diff_shows_how_the_mixture_changed(client: Client) -> None:
    found = client.diff("mixed@a", "mixed@b")
    assert found.mixture is not None and (found.mixture.base_seed, found.mixture.target_seed) == (1, 2)
    by = {s.source: s for s in found.mixture.sources}
    assert (by["en"].base_weight, by["en"].target_weight) == (0.5, 0.8)
    assert by["en"].base_share == pytest.approx(0.5) and by["en"].target_share == pytest.approx(0.8)
    assert (by["zh"].base_served, by["zh"].target_served) == (30, 10)
    assert client.diff("mixed@a", "mixed@a").mixture is not None


def test_the_command_prints_the_achieved_mixture_the_diff_and_each_samples_decision(world: World) -> None:
    shown = world.lineage("release", "show", "mixed@a")
    assert "Mixture by samples" in shown and "50.00%" in shown and "1.500" in shown  # zh: 1.5 epochs
    diff = world.lineage("diff", "mixed@a", "mixed@b")
    assert "mixture: by samples (seed 1) → by samples (seed 2)" in diff and "0.5 → 0.8" in diff
    manifest = world.service.get_manifest("mixed@a")
    rule = manifest.mixture.sources["zh"].rule  # type: ignore[union-attr]
    sample = world.lineage("sample", rule.cut_id or "")  # the last sample of zh's remainder: served twice
    assert "mixture@1: kept [weight 0.5, selected, served 2× (repeat index 0–1)]" in sample
    release_b = world.service.get_manifest("mixed@b")
    assert release_b.mixture is not None
    dropped = [
        r for r in world.service.list_samples("mixed", 2, verdict="dropped", limit=5).items if r.operator == "mixture"
    ]
    assert dropped, "mixed v2 downsamples en"
    assert "[weight 0.8, not selected]" in world.lineage("sample", dropped[0].sample_id)


def test_the_reader_over_the_service_checks_the_digest_and_serves_the_repeats(client: Client, world: World) -> None:
    """The manifest the service returns (over HTTP or in-process) keeps the repeat rules exactly, so it
    matches the content digest, which covers them."""
    import lineage

    reader = lineage.open_release(
        "mixed@a", client=client, settings=world.settings, columns=["sample_id", "source_dataset"], batch_size=8
    )
    rows = [r for batch in reader for r in batch.to_pylist()]
    assert len(rows) == 60  # 30 en + 20 zh served 1.5 times
    assert sum(r["source_dataset"] == "zh" for r in rows) == 30
    assert {r["repeat"] for r in rows} == {0, 1}


def test_a_reader_resumed_mid_epoch_serves_exactly_the_rest(world: World) -> None:
    import lineage

    def reader() -> object:
        return lineage.open_release("mixed@a", settings=world.settings, columns=["sample_id"], batch_size=4, seed=9)

    whole = [(r["sample_id"], r["repeat"]) for b in reader() for r in b.to_pylist()]  # type: ignore[attr-defined]
    first = reader()
    it = iter(first)  # type: ignore[call-overload]
    head = [(r["sample_id"], r["repeat"]) for _ in range(13) for r in next(it).to_pylist()]  # 52 rows: pass 0 is 50
    state = first.state_dict()  # type: ignore[attr-defined]
    second = reader()
    second.load_state_dict(state)  # type: ignore[attr-defined]
    tail = [(r["sample_id"], r["repeat"]) for b in second for r in b.to_pylist()]  # type: ignore[attr-defined]
    assert any(rep == 1 for _, rep in head), "the saved position is inside the second pass"
    assert head + tail == whole
