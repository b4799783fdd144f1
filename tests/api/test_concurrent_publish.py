"""Concurrent publishes of one tag, on SQLite and on a real PostgreSQL server (issue #15, item 6).

The unique constraint on (name, tag) picks the winner. Every loser re-reads it and answers as a
publish after it would: the documented no-op for the same content, the conflict for other content.
The race is forced (see ``tests/support/publish_race.py``): each publisher waits just before its insert until
all have looked for the tag and found nothing, so every publisher but one loses it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from lineage.catalog import Catalog, Dataset, Release, Replica
from lineage.errors import rule_for, translate
from lineage.releases import ReleaseConflict, publish
from lineage.runs import Runner
from lineage.service.core import Service
from lineage.settings import Settings
from tests.support.api_world import BACKENDS, ServerThread, build_corpus, make_settings, spec
from tests.support.helpers import write_jsonl
from tests.support.publish_race import insert_barrier

N = 4
REF = "clean@race"
SAME = [1, 1, 1, 1]  # dataset version each publisher asks for
MIXED = [1, 2, 1, 2]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=BACKENDS)
def two_versions(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Dataset ``clean`` v1 and v2 (one more file: other content), nothing released."""
    settings = make_settings(tmp_path, request.param, request)
    catalog = Catalog(settings.catalog_url or "")
    corpus = build_corpus(tmp_path / "raw")
    Runner(settings, catalog).run(spec(corpus))
    write_jsonl(corpus / "c.jsonl", [{"id": "added", "text": "a brand new document about compilers and linkers"}])
    Runner(settings, catalog).run(spec(corpus))
    catalog.dispose()
    return settings


def recorded(settings: Settings) -> tuple[int, int, int]:
    """(releases, primary replicas, dataset version) of REF in the catalog."""
    catalog = Catalog(settings.catalog_url or "")
    try:
        with catalog.session() as s:
            rows = s.scalars(select(Release).where(Release.name == "clean", Release.tag == "race")).all()
            replicas = s.scalar(select(func.count()).select_from(Replica).where(Replica.primary))
            return len(rows), replicas or 0, rows[0].dataset_version.version if rows else 0
    finally:
        catalog.dispose()


@pytest.mark.parametrize("versions", [SAME, MIXED], ids=["same-content", "other-content"])
def test_library_publishers_in_threads(two_versions: Settings, versions: list[int]) -> None:
    settings = two_versions
    outcomes: list[object] = [None] * N

    def one(i: int) -> None:
        catalog = Catalog(settings.catalog_url or "")  # own engine and session, as a separate process has
        try:
            outcomes[i] = publish(catalog, settings, REF, version=versions[i])
        except Exception as exc:  # the outcome under test, whatever it is
            outcomes[i] = exc
        finally:
            catalog.dispose()

    with insert_barrier(N):
        threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    count, replicas, winner = recorded(settings)
    assert (count, replicas) == (1, 1)
    for i, outcome in enumerate(outcomes):
        if versions[i] == winner:
            assert isinstance(outcome, tuple), outcome
        else:
            assert isinstance(outcome, ReleaseConflict) and "different content" in str(outcome), outcome
    created = [o[1] for o in outcomes if isinstance(o, tuple)]
    assert sorted(created) == [False] * (len(created) - 1) + [True]
    assert len({o[0].id for o in outcomes if isinstance(o, tuple)}) == 1


@pytest.mark.parametrize("versions", [SAME, MIXED], ids=["same-content", "other-content"])
def test_cli_publishers_in_processes(two_versions: Settings, versions: list[int], tmp_path: Path) -> None:
    settings = two_versions
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {
        **os.environ,
        "LINEAGE_HOME": str(settings.home),
        "LINEAGE_CATALOG_URL": settings.catalog_url or "",
        "PUBLISH_BARRIER_DIR": str(barrier),
        "PUBLISH_BARRIER_PARTIES": str(N),
    }
    env.pop("LINEAGE_CONFIG", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.publish_race", "release", "publish", REF, "--version", str(v)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for v in versions
    ]
    results = [(p.wait(timeout=180), *p.communicate()) for p in procs]
    count, replicas, winner = recorded(settings)
    assert (count, replicas) == (1, 1)
    published = already = 0
    for v, (code, out, err) in zip(versions, results, strict=True):
        text = out + err
        assert "Traceback" not in text and "INSERT" not in text and "xxh3_128" not in text, text
        assert len(text.strip().splitlines()) == 1, text
        if v == winner:
            assert code == 0, text
            published += text.startswith("published clean@race")
            already += text.startswith("already published (same content), nothing to do: clean@race")
        else:
            assert code == 5, text  # Conflict
            assert text.startswith("error: release clean@race is already published with different content"), text
    assert (published, already) == (1, versions.count(winner) - 1)


@pytest.mark.parametrize("versions", [SAME, MIXED], ids=["same-content", "other-content"])
def test_http_publishers(two_versions: Settings, versions: list[int]) -> None:
    from api.app import create_app

    settings = two_versions
    service = Service(settings)
    answers: list[httpx.Response | BaseException | None] = [None] * N

    def one(i: int, url: str) -> None:
        body = {"name": "clean", "tag": "race", "version": versions[i]}
        try:
            answers[i] = httpx.post(f"{url}/api/v1/releases", json=body, timeout=120)
        except Exception as exc:  # the outcome under test, whatever it is
            answers[i] = exc

    with ServerThread(create_app(settings, service)) as srv, insert_barrier(N, service.catalog.engine):
        threads = [threading.Thread(target=one, args=(i, srv.url)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    count, replicas, winner = recorded(settings)
    assert (count, replicas) == (1, 1)
    statuses = []
    for v, answer in zip(versions, answers, strict=True):
        assert isinstance(answer, httpx.Response), answer
        statuses.append(answer.status_code)
        if v == winner:
            assert answer.status_code in (200, 201), answer.text
            assert answer.json()["changed"] is (answer.status_code == 201)
        else:
            assert answer.status_code == 409, answer.text
            assert answer.json()["code"] == "release_conflict"
            assert "already published with different content" in answer.json()["detail"]
    assert statuses.count(201) == 1 and statuses.count(200) == versions.count(winner) - 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_unique_violation_is_a_clean_409(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Any other write that loses a unique constraint is a conflict, answered without the statement
    and its parameters; other integrity errors stay bugs (500)."""
    settings = make_settings(tmp_path, backend, request)
    catalog = Catalog(settings.catalog_url or "")
    secret = "a description that must not reach the client"
    try:
        with catalog.session() as s:
            s.add(Dataset(name="taken", tier="local"))
        with pytest.raises(IntegrityError) as unique, catalog.session() as s:
            s.add(Dataset(name="taken", tier="local", description=secret))
        conflict = translate(unique.value)
        assert conflict is not None and (rule_for(conflict).status, conflict.code) == (409, "concurrent_change")
        message = str(conflict)
        assert message.startswith("conflicts with a concurrent change to the catalog: ")
        assert secret not in message and "INSERT" not in message and "\n" not in message
        with pytest.raises(IntegrityError) as dangling, catalog.session() as s:
            s.add(Replica(release_id=987654, tier="local", table_path="t"))
        assert translate(dangling.value) is None
    finally:
        catalog.dispose()
