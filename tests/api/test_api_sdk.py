"""The SDK's entry points: ``lineage.Client()`` in-process from settings, lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lineage
from lineage.client import Conflict
from lineage.runs import Runner
from lineage.settings import Settings
from tests.support.api_world import build_corpus, spec


def test_client_without_url_uses_the_service_in_process(settings: Settings, tmp_path: Path) -> None:
    """No server: ``lineage.Client()`` reads the same catalog as the CLI (LINEAGE_HOME)."""
    client = lineage.Client()
    try:
        assert client.local and client.list_datasets().total == 0
        Runner(settings, client.service.catalog).run(spec(build_corpus(tmp_path / "raw")))
        assert [d.name for d in client.list_datasets().items] == ["clean"]
        published = client.create_release("clean@first")
        assert published.changed and published.release.created_by == "local"
        assert client.get_release("clean@first").row_count == 3
        assert client.health().database == "sqlite"
        # the same refusal as over HTTP, and the same error class
        Runner(settings, client.service.catalog).run(spec(build_corpus(tmp_path / "raw2")))
        try:
            client.create_release("clean@first")
        except Conflict as exc:
            assert "different content" in str(exc)
        else:
            raise AssertionError("publishing other content under the same tag must be refused")
    finally:
        client.close()


def test_import_lineage_stays_light() -> None:
    code = (
        "import sys, lineage; heavy = [m for m in ('fastapi', 'httpx', 'uvicorn', 'duckdb', 'sqlalchemy') "
        "if m in sys.modules]; print(heavy); assert not heavy, heavy; lineage.Client; "
        "assert 'fastapi' not in sys.modules and 'httpx' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
