"""Symbolic links in raw inputs: followed while they stay inside the tier's root, refused when they leave it.

The tree every test starts from (``secret`` is outside the root and must never be read)::

    tmp/secret/passwd.jsonl            {"text": "root:x:0:0 ..."}
    tmp/root/docs/a.jsonl              a regular file
    tmp/root/...                       links added per test
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from sqlalchemy import func, select

from lineage.catalog import Catalog, DatasetVersion, Run
from lineage.runs import Runner
from lineage.settings import Settings, TierConfig
from operators.convert import ConvertOperator, SourceSpec, plan_chunks
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.links import TierLinkError, list_files, real_path
from storage.tier import Tier, get_tier, local_tier
from tests.support.helpers import write_jsonl

SECRET = "root:x:0:0:root:/root:/bin/bash"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "secret" / "passwd.jsonl", [{"text": SECRET}])
    write_jsonl(tmp_path / "root" / "docs" / "a.jsonl", [{"text": "a regular document"}])
    return tmp_path / "root"


def read_all(root: Path, pattern: str, **spec: str) -> pa.Table:
    chunks = plan_chunks(SourceSpec("ds", local_tier(root), pattern, **spec), 1)
    op = ConvertOperator(run_id="r")
    return pa.Table.from_batches([out.samples for batch in chunks.to_batches() for out in op.read(batch)])


@pytest.mark.parametrize("pattern", ["evil/passwd.jsonl", "evil", "", "*/*.jsonl"])
def test_a_folder_link_out_of_the_root_is_refused(tree: Path, pattern: str) -> None:
    (tree / "evil").symlink_to(tree.parent / "secret", target_is_directory=True)
    with pytest.raises(TierLinkError, match=r"'evil(/passwd\.jsonl)?' on tier 'adhoc' leads through a symbolic link"):
        read_all(tree, pattern)


@pytest.mark.parametrize("pattern", ["leak.jsonl", "", "*.jsonl"])
def test_a_file_link_out_of_the_root_is_refused(tree: Path, pattern: str) -> None:
    (tree / "leak.jsonl").symlink_to(tree.parent / "secret" / "passwd.jsonl")
    with pytest.raises(TierLinkError, match=r"'leak\.jsonl' on tier 'adhoc' leads through a symbolic link"):
        read_all(tree, pattern)


def test_an_ignored_file_is_not_checked(tree: Path) -> None:
    """Hidden files and files outside the glob are never read, so their links do not fail the input."""
    (tree / "docs" / ".leak.jsonl").symlink_to(tree.parent / "secret" / "passwd.jsonl")
    assert read_all(tree, "docs").column("text").to_pylist() == ["a regular document"]
    (tree / "docs" / ".leak.jsonl").unlink()  # (a glob matches hidden files, as it always did)
    (tree / "docs" / "leak.txt").symlink_to(tree.parent / "secret" / "passwd.jsonl")
    assert read_all(tree, "docs/*.jsonl").column("text").to_pylist() == ["a regular document"]
    with pytest.raises(TierLinkError, match=r"'docs/leak\.txt'"):
        read_all(tree, "docs")  # a visible file of the folder: part of the input, so refused


def test_links_that_stay_inside_the_root_are_followed(tree: Path) -> None:
    """A content-addressed layout (Hugging Face's cache): names link to extension-less blobs.

    The file is read under the link's name: that name is its relative path (so its sample id) and
    tells its format and compression."""
    blob = tree / "blobs" / "9f2c41"
    blob.parent.mkdir()
    blob.write_bytes(gzip.compress(json.dumps({"text": "compressed, behind a link"}).encode() + b"\n"))
    snapshot = tree / "snapshots" / "rev1"
    snapshot.mkdir(parents=True)
    (snapshot / "train.jsonl.gz").symlink_to(Path("../../blobs/9f2c41"))
    (snapshot / "more").symlink_to(tree / "docs", target_is_directory=True)
    samples = read_all(tree, "snapshots")
    assert sorted(samples.select(["source_path", "text"]).to_pylist(), key=lambda r: r["source_path"]) == [
        {"source_path": "rev1/more/a.jsonl", "text": "a regular document"},
        {"source_path": "rev1/train.jsonl.gz", "text": "compressed, behind a link"},
    ]


def test_a_link_loop_and_a_broken_link_are_named_errors(tree: Path) -> None:
    (tree / "docs" / "up").symlink_to(tree, target_is_directory=True)
    with pytest.raises(TierLinkError, match=r"'docs/up' on tier 'adhoc' is a symbolic link loop"):
        read_all(tree, "")
    (tree / "docs" / "up").unlink()
    (tree / "docs" / "gone.jsonl").symlink_to(tree / "docs" / "deleted.jsonl")
    with pytest.raises(TierLinkError, match=r"'docs/gone\.jsonl' on tier 'adhoc' is a broken symbolic link"):
        read_all(tree, "docs")  # the old listing dropped it without a word


def test_a_link_put_in_after_planning_is_refused_when_opened(tree: Path) -> None:
    """The reader checks again and opens the path it checked: planning is no licence to follow."""
    chunks = plan_chunks(SourceSpec("ds", local_tier(tree), "docs"), 1)
    (tree / "docs" / "a.jsonl").unlink()
    (tree / "docs" / "a.jsonl").symlink_to(tree.parent / "secret" / "passwd.jsonl")
    op = ConvertOperator(run_id="r")
    with pytest.raises(TierLinkError, match=r"'docs/a\.jsonl'"):
        for batch in chunks.to_batches():
            list(op.read(batch))


def test_the_walk_keeps_the_lexical_checks(tree: Path) -> None:
    """A name no tier path may hold is refused by the walk too: planned as refused (one
    ``invalid_file_name`` row), never read, as when pyarrow listed the folder."""
    write_jsonl(tree / "docs" / "back\\slash.jsonl", [{"text": "x"}])
    chunks = plan_chunks(SourceSpec("ds", local_tier(tree), "docs"), 1).to_pylist()
    refused = {c["path"]: c["refused"] for c in chunks}
    assert refused["docs/a.jsonl"] is None
    assert "forbidden character" in refused["docs/back\\slash.jsonl"]


def test_real_path_is_the_resolved_path_inside_the_root(tree: Path) -> None:
    tier = local_tier(tree)
    (tree / "alias").symlink_to(tree / "docs", target_is_directory=True)
    assert real_path(tier, "alias/a.jsonl") == str(tree.resolve() / "docs" / "a.jsonl")
    assert list_files(tier, "", lambda _: True) == ["alias/a.jsonl", "docs/a.jsonl"]
    (tree / "evil").symlink_to(tree.parent / "secret", target_is_directory=True)
    with pytest.raises(TierLinkError):
        real_path(tier, "evil/passwd.jsonl")


def test_a_tier_rooted_at_a_link_is_rooted_at_its_target(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "mnt").symlink_to(tree, target_is_directory=True)
    assert read_all(tmp_path / "mnt", "docs").column("text").to_pylist() == ["a regular document"]


def _runner(settings: Settings, catalog: Catalog, root: Path) -> Runner:
    raw = TierConfig(name="raw", kind="posix", root=str(root))
    return Runner(settings.model_copy(update={"tiers": [*settings.tiers, raw]}), catalog)


def _spec(path: str, tier: str | None = None) -> PipelineSpec:
    return PipelineSpec.model_validate(
        {"name": "p", "inputs": [{"dataset": "raw", "path": path, "tier": tier}], "output": {"dataset": "out"}}
    )


def test_the_reported_escape_commits_nothing(tree: Path, settings: Settings, catalog: Catalog) -> None:
    """Issue #15: a tier with ``evil -> /etc`` and input ``evil/passwd`` committed /etc/passwd."""
    (tree / "evil").symlink_to(tree.parent / "secret", target_is_directory=True)
    with pytest.raises(TierLinkError, match="outside the tier's root"):
        _runner(settings, catalog, tree).run(_spec("evil/passwd.jsonl", tier="raw"))
    with catalog.session() as s:
        assert s.scalar(select(func.count()).select_from(DatasetVersion)) == 0


def test_a_link_named_as_the_input_is_read_under_its_name(tree: Path, settings: Settings, catalog: Catalog) -> None:
    """Naming a link is choosing its target: the throw-away tier is rooted at the target's folder,
    and the file keeps the link's name (its relative path, so its sample ids, and its compression)."""
    target = tree / "docs" / "a.jsonl"
    target.write_bytes(gzip.compress(target.read_bytes()))
    named = tree.parent / "work" / "current.jsonl.gz"
    named.parent.mkdir()
    named.symlink_to(target)
    outcome = Runner(settings, catalog).run(_spec(str(named)))
    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion)).one()
        run = s.get(Run, outcome.run_id)
        data = version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version).to_table()
    assert run.inputs[0]["uri"] == str(target.resolve())
    assert data.select(["text", "source_path"]).to_pylist() == [
        {"text": "a regular document", "source_path": "current.jsonl.gz"}
    ]


def test_cli_refuses_in_one_line(tree: Path, tmp_path: Path) -> None:
    (tree / "evil").symlink_to(tree.parent / "secret", target_is_directory=True)
    env = {**os.environ, "LINEAGE_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "lineage", "ingest", str(tree), "--dataset", "raw"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3, result.stdout + result.stderr  # Invalid
    output = " ".join((result.stdout + result.stderr).split())  # the console wraps long lines
    assert "Traceback" not in output and SECRET not in output
    assert output.startswith("error: 'evil' on tier 'adhoc' leads through a symbolic link to ")


def test_object_store_tiers_list_as_before(ceph_tier: Tier) -> None:
    """S3 has no links: listing and opening go through the tier's filesystem unchanged."""
    for path in ("in/a.jsonl", "in/sub/b.jsonl", "in/_SUCCESS", "other/c.jsonl"):
        with ceph_tier.filesystem.open_output_stream(ceph_tier.path(path)) as out:
            out.write(json.dumps({"text": path}).encode() + b"\n")
    assert real_path(ceph_tier, "in/a.jsonl") == ceph_tier.path("in/a.jsonl")
    folder = plan_chunks(SourceSpec("ds", ceph_tier, "in"), 1)
    assert folder.column("relative_path").to_pylist() == ["a.jsonl", "sub/b.jsonl"]
    glob = plan_chunks(SourceSpec("ds", ceph_tier, "*/*.jsonl"), 1)
    assert glob.column("path").to_pylist() == ["in/a.jsonl", "in/sub/b.jsonl", "other/c.jsonl"]
    op = ConvertOperator(run_id="r")
    texts = [t for b in folder.to_batches() for out in op.read(b) for t in out.samples.column("text").to_pylist()]
    assert texts == ["in/a.jsonl", "in/sub/b.jsonl"]
