"""``open_release`` through the HTTP service: a real uvicorn server with auth on, over SQLite and
PostgreSQL catalogs; the data files are still read straight from the tier."""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

import lineage
from api.app import create_app
from lineage.client import Client, NotFound, Unauthorized
from lineage.releases import ReleaseNotFound, get_release
from lineage.service.core import Service
from lineage.settings import Settings
from storage.verified import ChecksumMismatch
from tests.support.api_world import BACKENDS, ServerThread, make_settings
from tests.support.helpers import publish_records

N = 301  # a prime: every world size leaves a remainder
REF = "d@v1"


@dataclass
class Served:
    settings: Settings
    service: Service
    url: str
    token: str  # a reader-role token named "trainer"


@pytest.fixture(scope="module", params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """d@v1: N samples in several files of several small row groups, served with auth on."""
    tmp = tmp_path_factory.mktemp(f"http-reader-{request.param}")
    settings = make_settings(tmp, request.param, request, parquet_row_group_rows=16, parquet_file_rows=80)
    service = Service(settings)
    records = [{"id": i, "text": f"document number {i}"} for i in range(N)]
    publish_records(tmp, settings, service.catalog, records, REF)
    token = service.create_token("trainer", "reader").token
    with ServerThread(create_app(settings, service)) as srv:
        yield Served(settings, service, srv.url, token)
    service.close()


def batches(served: Served, **kw: object) -> list[list[str]]:
    """The sample ids of each batch, in order."""
    reader = lineage.open_release(REF, settings=served.settings, columns=["sample_id"], **kw)  # type: ignore[arg-type]
    return [b.column("sample_id").to_pylist() for b in reader]


@pytest.mark.parametrize(
    "layout",
    [
        {"seed": 3, "batch_size": 50},
        {"seed": 9, "epoch": 2, "rank": 1, "world_size": 3, "batch_size": 7},
        {"seed": 1, "rank": 7, "world_size": 8, "remainder": "pad", "batch_size": 5},
        {"shuffle": False, "batch_size": 64},
    ],
)
def test_http_source_yields_exactly_the_catalogs_batches(served: Served, layout: dict) -> None:
    from_catalog = batches(served, **layout)
    over_http = batches(served, url=served.url, token=served.token, **layout)
    with Client(service=served.service) as in_process:
        through_client = batches(served, client=in_process, **layout)
    assert over_http == from_catalog == through_client
    assert sum(map(len, from_catalog)) == len(lineage.open_release(REF, settings=served.settings, **layout))


def test_whole_rows_and_state_match(served: Served) -> None:
    kw = {"settings": served.settings, "seed": 4, "batch_size": 32}
    by_catalog = lineage.open_release(REF, **kw)
    by_http = lineage.open_release(REF, url=served.url, token=served.token, **kw)
    assert pa.Table.from_batches(list(by_http)).equals(pa.Table.from_batches(list(by_catalog)))
    assert by_http.state_dict() == by_catalog.state_dict()
    assert by_http.digest == served.service.get_release(REF).content_digest


def test_each_open_is_recorded_and_listed(served: Served) -> None:
    for rank in range(2):
        lineage.open_release(
            REF, settings=served.settings, url=served.url, token=served.token, rank=rank, world_size=2, job="train-http"
        )
    lineage.open_release(REF, settings=served.settings, job="train-catalog")
    with Client(served.url, served.token) as sdk:
        reads = sdk.list_reads(REF, job="train-http")
        assert [(r.rank, r.world_size, r.host, r.recorded_by) for r in reads.items] == [
            (1, 2, socket.gethostname(), "trainer"),
            (0, 2, socket.gethostname(), "trainer"),
        ]
        (direct,) = sdk.list_reads(REF, job="train-catalog").items
        assert direct.recorded_by == getpass.getuser() and direct.release == REF
        assert {"train-http", "train-catalog"} <= {r.job for r in sdk.iter_all(sdk.list_reads, REF)}
        with httpx.Client(base_url=f"{served.url}/api/v1") as http:  # the same list as plain JSON
            page = http.get(
                "/releases/d/v1/reads",
                params={"job": "train-http"},
                headers={"Authorization": f"Bearer {served.token}"},
            ).json()
        assert page["total"] == 2 and page["items"][0]["job"] == "train-http"


def test_settings_give_the_service_url_and_token(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEAGE_SERVICE_URL", served.url + "/")
    monkeypatch.setenv("LINEAGE_SERVICE_TOKEN", served.token)
    configured = Settings(home=served.settings.home, catalog_url="sqlite:////nonexistent/catalog.db")
    assert configured.service_url == served.url + "/" and served.token not in repr(configured)
    # the catalog URL points nowhere: the manifest can only have come from the service
    reader = lineage.open_release(REF, settings=configured, columns=["sample_id"], seed=3, batch_size=50, job="env")
    assert [b.column("sample_id").to_pylist() for b in reader] == batches(served, seed=3, batch_size=50)
    with Client(served.url, served.token) as sdk:
        assert [r.recorded_by for r in sdk.list_reads(REF, job="env").items] == ["trainer"]
    # the configured token goes to the configured service only, not to another URL
    other = served.url.replace("127.0.0.1", "localhost")
    with pytest.raises(Unauthorized, match="authentication required"):
        lineage.open_release(REF, settings=configured, url=other)
    assert lineage.open_release(REF, settings=configured, url=other, token=served.token).digest == reader.digest


def test_resume_through_the_http_source(served: Served) -> None:
    kw = {"settings": served.settings, "seed": 9, "rank": 1, "world_size": 3, "batch_size": 7, "columns": ["sample_id"]}
    full = [row["sample_id"] for row in lineage.open_release(REF, as_dicts=True, **kw)]
    reader = lineage.open_release(REF, url=served.url, token=served.token, as_dicts=True, **kw)
    it = iter(reader)
    seen = [next(it)["sample_id"] for _ in range(23)]
    state = reader.state_dict()
    assert state["samples_consumed"] == 23 and state["content_digest"] == reader.digest

    resumed = lineage.open_release(REF, url=served.url, token=served.token, as_dicts=True, **{**kw, "seed": 0})
    resumed.load_state_dict(state)
    assert seen + [row["sample_id"] for row in resumed] == full
    from_catalog = lineage.open_release(REF, as_dicts=True, **kw)  # a state saved over HTTP resumes from the catalog
    from_catalog.load_state_dict(state)
    assert seen + [row["sample_id"] for row in from_catalog] == full

    other = lineage.open_release(REF, settings=served.settings, url=served.url, token=served.token, world_size=4)
    with pytest.raises(ValueError, match="different world size"):
        other.load_state_dict(state)


def test_auth_errors_are_clear(served: Served) -> None:
    with pytest.raises(Unauthorized, match="authentication required.*LINEAGE_SERVICE_TOKEN"):
        lineage.open_release(REF, settings=served.settings, url=served.url)
    with pytest.raises(Unauthorized, match="invalid token"):
        lineage.open_release(REF, settings=served.settings, url=served.url, token="llt_not-a-token")
    revoked = served.service.create_token("old-trainer", "reader")
    served.service.revoke_token(revoked.id)
    with pytest.raises(Unauthorized, match="revoked"):
        lineage.open_release(REF, settings=served.settings, url=served.url, token=revoked.token)
    with httpx.Client(base_url=f"{served.url}/api/v1") as http:  # every endpoint the reader uses needs a token
        assert http.get("/releases/d/v1/replicas").status_code == 401
        assert http.get("/releases/d/v1/reads").status_code == 401
        refused = http.post("/releases/d/v1/reads", json={"job": "j", "world_size": 1, "rank": 0})
        assert refused.status_code == 401 and "Bearer" in refused.json()["detail"]


def test_unknown_release_is_not_found(served: Served) -> None:
    with pytest.raises(NotFound, match="release d@nope does not exist"):
        lineage.open_release("d@nope", settings=served.settings, url=served.url, token=served.token)
    with pytest.raises(ReleaseNotFound, match="release d@nope does not exist"):
        lineage.open_release("d@nope", settings=served.settings)


def test_a_manifest_that_does_not_match_the_digest_is_refused(served: Served) -> None:
    served.service.create_release({"name": "d", "tag": "tampered"})
    with served.service.catalog.session() as s:
        release = get_release(s, "d@tampered")
        files = [dict(f) for f in release.manifest["files"]]
        files[0]["xxh3_128"] = "0" * 32
        release.manifest = {**release.manifest, "files": files}
    with pytest.raises(ChecksumMismatch, match="does not match the release's content digest"):
        lineage.open_release("d@tampered", settings=served.settings, url=served.url, token=served.token)


def test_replicas_come_from_the_service(served: Served, tmp_path: Path) -> None:
    """Files are read from the verified replicas the service lists (here: a copy on a second tier)."""
    from lineage.releases.replicas import copy_release
    from lineage.settings import TierConfig

    served.service.create_release({"name": "d", "tag": "copied"})
    with_copy = served.settings.model_copy(
        update={
            "tiers": [*served.settings.tiers, TierConfig(name="warm", root=str(tmp_path / "warm"), tier_class="warm")]
        }
    )
    copy_release(served.service.catalog, with_copy, "d@copied", "warm")
    with Client(served.url, served.token) as sdk:
        replicas = {r.tier: r for r in sdk.list_replicas("d@copied")}
    assert replicas["warm"].state == "verified" and replicas["warm"].table_path == "releases/d/copied/data"
    reader = lineage.open_release(
        "d@copied", settings=with_copy, url=served.url, token=served.token, prefer_tier="warm"
    )
    assert [loc.tier for loc in reader.files.locations] == ["warm", "local"]
    assert sum(b.num_rows for b in reader) == N


def test_a_release_whose_only_replica_is_corrupt_is_refused(served: Served) -> None:
    """The service lists every replica with its state: a corrupt one is not read, and the reader
    does not fall back to the manifest's table as it would for a release with no replicas recorded."""
    from lineage.releases.replicas import verify_release

    served.service.create_release({"name": "d", "tag": "rotten"})
    with served.service.catalog.session() as s:
        manifest = get_release(s, "d@rotten").manifest
    table = Path(served.settings.tier_config("local").root) / manifest["data"]["table"]
    victim = table / manifest["files"][1]["path"]
    original = victim.read_bytes()
    try:
        victim.write_bytes(original[:-10])
        assert verify_release(served.service.catalog, served.settings, "d@rotten", "local").state == "corrupt"
    finally:
        victim.write_bytes(original)  # the files are d@v1's too; d@rotten's replica stays marked corrupt
    refused = rf"no good copy of {manifest['files'][0]['path']}: local: the replica is corrupt \(.*{victim.name}"
    with pytest.raises(ChecksumMismatch, match=refused):
        lineage.open_release("d@rotten", settings=served.settings, url=served.url, token=served.token)
    with Client(service=served.service) as in_process, pytest.raises(ChecksumMismatch, match=refused):
        lineage.open_release("d@rotten", settings=served.settings, client=in_process)
