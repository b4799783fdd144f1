"""The operations on tier data, through the in-process SDK (``lineage.Client()``) and so the service:
ingest, run, export, tier copy / verify / move, placement apply and gc, on real Delta tables and two
POSIX tiers. Each answers a pydantic model; what it did is what the catalog then shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lineage import errors
from lineage.client import Client
from lineage.service import schemas as S
from lineage.settings import PlacementPolicy, Settings, TierConfig
from tests.support.helpers import FAMILY, write_jsonl

RECORDS = [
    {"id": "libc6", "text": FAMILY},
    {"id": "libc6-again", "text": FAMILY},  # an exact duplicate: dropped by the pipeline
    {"id": "curl", "text": "command line tool for transferring data with URL syntax over many protocols"},
]


@pytest.fixture
def client(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    settings.tiers.append(TierConfig(name="cold", kind="posix", root=str(tmp_path / "cold-tier"), tier_class="cold"))
    with Client(settings=settings) as c:
        yield c


def _pipeline(corpus: Path) -> dict:
    return {
        "name": "tier-ops",
        "inputs": [{"dataset": "raw", "path": str(corpus), "id_field": "id"}],
        "operators": [{"name": "exact_dedupe"}],
        "output": {"dataset": "clean"},
    }


def test_ingest_and_run_commit_versions_and_answer_the_run(client: Client, tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "raw" / "a.jsonl", RECORDS).parent
    ingested = client.ingest("a.jsonl", "raw", id_field="id", base_dir=corpus)
    assert (ingested.dataset, ingested.version, ingested.row_count) == ("raw", 1, 3)
    assert ingested.run.status == "succeeded" and ingested.run.output_dataset == "raw"

    ran = client.run_pipeline(_pipeline(corpus))
    assert (ran.dataset, ran.version, ran.row_count) == ("clean", 1, 2)
    assert client.get_run(ran.run.id) == ran.run
    assert client.get_version("clean", 1).run_id == ran.run.id

    with pytest.raises(errors.Invalid):  # a spec the model refuses: one clear error, nothing run
        client.run_pipeline({"name": "x", "inputs": [], "output": {"dataset": "y"}, "colour": "red"})
    assert client.list_runs().total == 2


def test_export_copy_verify_move_apply_and_gc(client: Client, settings: Settings, tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "raw" / "a.jsonl", RECORDS).parent
    client.run_pipeline(_pipeline(corpus))
    client.create_release("clean@one")
    client.create_release("clean@two")

    exported = client.export_release("clean@one", tmp_path / "export")
    lines = Path(exported.path).read_text().splitlines()
    assert exported == S.ExportResult(release="clean@one", path=str(tmp_path / "export" / "clean-one.jsonl"), rows=2)
    assert sorted(json.loads(line)["text"][:12] for line in lines) == ["GNU C librar", "command line"]

    copied = client.copy_release("clean@one", "cold")
    assert (copied.tier, copied.state, copied.copied, copied.skipped) == ("cold", "verified", 1, 0)
    again = client.copy_release("clean@one", "cold")  # resumable and idempotent: nothing left to copy
    assert (again.copied, again.skipped) == (0, 1)
    checked = client.verify_release("clean@one", "cold")
    assert checked.state == "verified" and not checked.problems
    states = {(r.tier, r.state) for r in client.list_replicas("clean@one")}
    assert states == {("local", "verified"), ("cold", "verified")}

    # clean@two is idle (cold_after_days=0) and only on local: the plan moves it, apply does it
    settings.placement = PlacementPolicy(cold_tier="cold", cold_after_days=0)
    client.pin_release("clean@one", datetime.now(UTC) + timedelta(days=1))
    planned = client.plan_placement()
    assert [(m.release, m.from_tier, m.to_tier) for m in planned] == [("clean@two", "local", "cold")]
    heard: list[S.PlannedMove] = []
    applied = client.apply_placement(on_move=heard.append)
    assert [a.move for a in applied] == heard == planned
    assert (applied[0].result.tier, applied[0].result.state) == ("cold", "verified")
    assert client.plan_placement() == []
    with pytest.raises(errors.NotFound):
        client.verify_release("clean@none", "cold")

    garbage = client.collect_garbage(dry_run=True)
    assert garbage.dry_run and garbage.abandoned_runs == [] and garbage.deleted_files == []
    assert garbage.kept_files > 0


def test_dedupe_files_runs_in_process_and_leaves_the_catalog_alone(client: Client, tmp_path: Path) -> None:
    """Files in, kept files and a report out (``lineage dedupe``'s operation); the run's catalog is private."""
    src = write_jsonl(tmp_path / "in.jsonl", [*RECORDS, {"id": "curl-2", "text": RECORDS[2]["text"] + " too"}])
    out = client.dedupe_files([src], tmp_path / "out.jsonl", minhash={"threshold": 0.7}, id_field="id")
    assert (out.inputs, out.records, out.kept, out.dropped, out.quarantined) == (1, 4, 2, 2, 0)
    assert out.outputs == [str(tmp_path / "out.jsonl")] and out.params["threshold"] == 0.7
    assert "threshold 0.7;" in out.settings and Path(out.report).is_file()
    kept = [json.loads(line)["id"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert kept[0] in ("libc6", "libc6-again") and kept[1] == "curl-2"  # the longer survives; ties: smaller id
    assert client.list_datasets().total == 0 and client.list_runs().total == 0  # nothing of it in this catalog
    with pytest.raises(errors.Invalid, match="unknown parameter"):
        client.dedupe_files([src], tmp_path / "o2.jsonl", minhash={"treshold": 0.7})
    with pytest.raises(errors.MissingFile, match="no such file"):  # a NotFound: exit 4, once a traceback
        client.dedupe_files([tmp_path / "nope.jsonl"], tmp_path / "o3.jsonl")
    with Client("http://127.0.0.1:9") as remote, pytest.raises(errors.Invalid, match="runs in-process only"):
        remote.dedupe_files([src], tmp_path / "o4.jsonl")


def test_the_tier_and_gc_commands_call_the_service(settings: Settings, tmp_path: Path) -> None:
    """``lineage tier plan`` / ``apply`` and ``gc``, run as a user runs them, over the service's answers."""
    from tests.support.cli import lineage

    cold = tmp_path / "cold-tier"
    config = tmp_path / "lineage.toml"
    config.write_text(
        f'[[tiers]]\nname = "cold"\nkind = "posix"\nroot = "{cold}"\nclass = "cold"\n\n'
        '[placement]\ncold_tier = "cold"\ncold_after_days = 0\n'
    )
    corpus = write_jsonl(tmp_path / "raw" / "a.jsonl", RECORDS).parent
    with Client(settings=settings) as c:
        c.run_pipeline(_pipeline(corpus))
        c.create_release("clean@one")
    home, env = settings.home, {"LINEAGE_CONFIG": str(config)}
    plan = json.loads(lineage(home, "tier", "plan", "--json", **env).stdout)
    assert plan == [{"release": "clean@one", "from_tier": "local", "to_tier": "cold", "reason": plan[0]["reason"]}]
    applied = lineage(home, "tier", "apply", "--workers", "1", **env).stdout
    assert "move clean@one: local → cold" in applied and "clean@one on cold: verified; copied 1 files" in applied
    assert lineage(home, "tier", "plan", **env).stdout.strip() == "nothing to move"
    garbage = json.loads(lineage(home, "gc", "--dry-run", "--json", **env).stdout)
    assert garbage["dry_run"] is True and garbage["deleted_files"] == [] and garbage["kept_files"] > 0
