"""The web view's world: a small catalog (two runs, two releases of one name, a gate, a training read, and
an outside tool's OpenLineage events at two past dates), served by the real app under uvicorn on a
loopback port. The fixtures are in tests/api/web/conftest.py; the browser is tests/support/browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from api.app import create_app
from lineage.runs import Runner
from lineage.service.core import Service
from operators.schema import sample_id
from tests.support.api_world import ServerThread, build_corpus, make_settings, spec
from tests.support.helpers import write_jsonl


def event(when: str, inputs: list[str], event_type: str = "COMPLETE") -> dict:
    """An outside ETL job's RunEvent: it reads ``inputs`` (s3://bucket/NAME) and writes warehouse/events."""
    return {
        "eventType": event_type,
        "eventTime": when,
        "producer": "https://example.org/etl",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": f"0190aaaa-0000-7000-8000-{when[:4]}00000000"},
        "job": {"namespace": "etl", "name": "nightly"},
        "inputs": [{"namespace": "s3://bucket", "name": name} for name in inputs],
        "outputs": [{"namespace": "warehouse", "name": "events"}],
    }


@dataclass
class WebWorld:
    service: Service
    url: str
    kept: str
    duplicate: str
    short: str
    corpus: Path


def web_world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorld]:
    """Build the catalog and serve it for as long as the caller (a module-scoped fixture) keeps it."""
    tmp = tmp_path_factory.mktemp("web")
    settings = make_settings(tmp, "sqlite", request)
    service = Service(settings)
    corpus = build_corpus(tmp / "raw")
    runner = Runner(settings, service.catalog)
    runner.run(spec(corpus))
    service.create_release({"name": "clean", "tag": "v1"})
    write_jsonl(corpus / "c.jsonl", [{"id": "added", "text": "a brand new document about compilers and linkers"}])
    runner.run(spec(corpus))
    service.create_release({"name": "clean", "tag": "v2", "gate": {"min_samples": 1, "max_exact_duplicate_rate": 0.5}})
    service.record_read("clean@v2", {"job": "train-1", "world_size": 2, "rank": 0})
    forced = {"min_samples": 100}  # fails (4 samples): published with an override
    service.create_release({"name": "clean", "tag": "forced", "gate": forced, "override_reason": "smoke test only"})
    service.ingest_event(event("2020-01-01T00:00:00Z", ["raw"]))
    service.ingest_event(event("2024-06-01T00:00:00Z", ["raw", "extra"]))
    with ServerThread(create_app(settings, service)) as server:
        yield WebWorld(
            service,
            server.url,
            kept=sample_id("raw", "id:libc6"),
            duplicate=sample_id("raw", "id:libc6-again"),
            short=sample_id("raw", "id:short"),
            corpus=corpus,
        )
    service.close()
