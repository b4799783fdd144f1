"""``export_release`` to the training formats (``lineage export --format megatron|mds``), read back by the
real readers: megatron-core's ``IndexedDataset`` and streaming's ``StreamingDataset``. The tokenizer is a
small BPE trained on the bundled corpus in the test; the release is a two-source slice of that corpus."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest
import xxhash
from tokenizers import Tokenizer

from lineage import errors
from lineage.client import Client
from lineage.settings import Settings
from storage.tier import get_tier
from tests.support.fixtures_ceph import CephS3
from tests.support.training_export import EOD, publish_corpus_slice, streaming_dataset, train_tokenizer

REF = "deb@t"


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json")


@pytest.fixture
def client(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    with Client(settings=settings) as c:
        publish_corpus_slice(c, tmp_path, REF)
        yield c


def expected_documents(
    client: Client, tokenizer_file: Path, tmp_path: Path, seed: int = 0
) -> list[tuple[str, str, list[int]]]:
    """(sample id, source, tokens + EOD) of every sample of the release, in the documented export order: by
    xxh3-64 of (seed, sample id). Texts come from the release's JSONL export; tokens from ``tokenizers``."""
    jsonl = client.export_release(REF, tmp_path / "as-jsonl")
    rows = [json.loads(line) for line in Path(jsonl.path).read_text().splitlines()]
    tok = Tokenizer.from_file(str(tokenizer_file))
    eod = tok.token_to_id(EOD)
    rows.sort(key=lambda r: (xxhash.xxh3_64_intdigest(f"{seed}\x00{r['sample_id']}".encode()), r["sample_id"]))
    return [
        (r["sample_id"], r["source_dataset"], tok.encode(r["text"], add_special_tokens=False).ids + [eod]) for r in rows
    ]


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the sequence-lineage tables too), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_megatron_shards_read_back_exactly_by_megatron_core(
    client: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    result = client.export_release(REF, tmp_path / "out", "megatron", tokenizer=tokenizer_file, shard_size=16 << 10)
    expected = expected_documents(client, tokenizer_file, tmp_path)
    folder = Path(result.path)
    assert folder == tmp_path / "out" / "deb-t.megatron" and result.rows == len(expected) > 100
    assert len(result.shards) >= 3  # 16 KiB shards: the sizing is exercised

    read: list[list[int]] = []
    for shard in result.shards:
        bin_file, idx_file = (folder / f.path for f in shard.files)
        assert bin_file.stat().st_size <= 16 << 10 and idx_file.suffix == ".idx"
        dataset = IndexedDataset(str(bin_file.with_suffix("")), mmap=True)
        assert len(dataset) == shard.sequences and list(dataset.document_indices) == list(range(shard.sequences + 1))
        read.extend(dataset[i].tolist() for i in range(len(dataset)))
        for f in shard.files:  # the manifest's checksums are the files'
            assert xxhash.xxh3_128_hexdigest((folder / f.path).read_bytes()) == f.xxh3_128
    assert read == [tokens for _id, _source, tokens in expected]  # one document per sample, each ending with EOD
    assert result.tokens == sum(len(t) for t in read) and result.sequences == len(read)
    by_source = {"deb-en": 0, "deb-zh": 0}
    for _id, source, tokens in expected:
        by_source[source] += len(tokens)
    assert result.tokens_by_source == by_source
    assert result.tokenizer_digest == "xxh3-128:" + xxhash.xxh3_128_hexdigest(tokenizer_file.read_bytes())
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["export_id"] == result.export_id and manifest["tokens_by_source"] == by_source


def test_mds_unpacked_and_packed_are_read_by_streaming(client: Client, tokenizer_file: Path, tmp_path: Path) -> None:
    expected = expected_documents(client, tokenizer_file, tmp_path)
    docs = [tokens for _id, _source, tokens in expected]

    plain = client.export_release(REF, tmp_path / "plain", "mds", tokenizer=tokenizer_file, shard_size=20 << 10)
    assert len(plain.shards) >= 2
    for shard in plain.shards:
        assert (Path(plain.path) / shard.files[0].path).stat().st_size <= 20 << 10
    dataset = streaming_dataset(Path(plain.path), shuffle=False, batch_size=1)
    assert len(dataset) == len(docs)
    assert [dataset[i]["tokens"].tolist() for i in range(len(dataset))] == docs  # one sequence per document

    packed = client.export_release(
        REF, tmp_path / "packed", "mds", tokenizer=tokenizer_file, seq_len=127, pack=True, shard_size=20 << 10
    )
    dataset = streaming_dataset(Path(packed.path), shuffle=False, batch_size=1)
    sequences = [dataset[i]["tokens"] for i in range(len(dataset))]
    assert all(len(s) == 128 for s in sequences[:-1]) and 0 < len(sequences[-1]) <= 128
    assert np.concatenate(sequences).tolist() == [t for d in docs for t in d]  # concatenated with EOD, nothing lost
    assert packed.sequences == len(sequences) and packed.tokens == plain.tokens
    assert [s["tokens"].tolist() for s in dataset] == [s.tolist() for s in sequences]  # and by iteration


def test_same_inputs_give_byte_identical_shards(client: Client, tokenizer_file: Path, tmp_path: Path) -> None:
    def export(out: str, seed: int = 0):  # type: ignore[no-untyped-def]
        return client.export_release(
            REF, tmp_path / out, "mds", tokenizer=tokenizer_file, seq_len=63, pack=True, shard_size=8 << 10, seed=seed
        )

    first, second, other = export("a"), export("b"), export("c", seed=1)
    assert folder_bytes(Path(first.path)) == folder_bytes(Path(second.path))
    assert first.export_id == second.export_id != other.export_id
    assert folder_bytes(Path(first.path))["shard.00000.mds"] != folder_bytes(Path(other.path))["shard.00000.mds"]
    assert len(folder_bytes(Path(first.path))) == 2 * len(first.shards) + 2  # .mds + lineage each, index, manifest
    again = export("a")  # a finished export is not written again
    assert again.export_id == first.export_id and again.resumed_shards == len(first.shards)


def test_killed_export_resumes_by_shard_and_never_shows_a_half_shard(
    client: Client, tokenizer_file: Path, tmp_path: Path, home: Path
) -> None:
    reference = client.export_release(REF, tmp_path / "ref", "megatron", tokenizer=tokenizer_file, shard_size=8 << 10)
    assert len(reference.shards) >= 4
    out, marker = tmp_path / "killed", tmp_path / "paused"
    args = ["export", REF, "--out", str(out), "--format", "megatron", "--tokenizer", str(tokenizer_file)]
    args += ["--shard-size", "8KiB"]
    env = {
        **os.environ,
        "LINEAGE_HOME": str(home),
        "LINEAGE_PAUSE_AT": "export_shard_2",
        "LINEAGE_PAUSE_MARKER": str(marker),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "lineage", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the export never reached shard 2"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    folder = out / "deb-t.megatron"
    visible = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    assert visible == [
        "_progress.json",
        "sequence-lineage",
        "shard_00000.bin",
        "shard_00000.idx",
        "shard_00001.bin",
        "shard_00001.idx",
    ]
    assert {p.name for p in folder.iterdir() if p.name.startswith(".")} == {
        ".shard_00002.bin.partial",
        ".shard_00002.idx.partial",
    }
    ref_bytes = folder_bytes(Path(reference.path))
    for name in visible[2:]:  # the finished shards are whole
        assert (folder / name).read_bytes() == ref_bytes[name]
    kept = (folder / "shard_00000.bin").stat()

    with pytest.raises(errors.Conflict, match="unfinished export with other options"):  # never mixed with others
        client.export_release(REF, out, "megatron", tokenizer=tokenizer_file, shard_size=8 << 10, seed=3)
    resumed = client.export_release(REF, out, "megatron", tokenizer=tokenizer_file, shard_size=8 << 10)
    assert resumed.resumed_shards == 2 and resumed.export_id == reference.export_id
    assert (folder / "shard_00000.bin").stat().st_ino == kept.st_ino  # kept, not rewritten
    assert folder_bytes(folder) == ref_bytes  # and the whole export is byte-identical; no partial left


def test_refusals_are_clear(client: Client, tokenizer_file: Path, tmp_path: Path) -> None:
    with pytest.raises(errors.Invalid, match="--pack is for mds"):
        client.export_release(REF, tmp_path / "x", "megatron", tokenizer=tokenizer_file, seq_len=8, pack=True)
    with pytest.raises(errors.Invalid, match="needs --tokenizer"):
        client.export_release(REF, tmp_path / "x", "mds")
    with pytest.raises(errors.Invalid, match="--pack needs --seq-len"):
        client.export_release(REF, tmp_path / "x", "mds", tokenizer=tokenizer_file, pack=True)
    with pytest.raises(errors.NotFound, match="no tokenizer file"):
        client.export_release(REF, tmp_path / "x", "mds", tokenizer=tmp_path / "missing.json")
    with pytest.raises(errors.Invalid, match="end-of-document token"):
        client.export_release(REF, tmp_path / "x", "mds", tokenizer=tokenizer_file, eod_token="<nope>")
    with pytest.raises(errors.Invalid, match="are for megatron and mds"):
        client.export_release(REF, tmp_path / "x", "jsonl", pack=True)
    (tmp_path / "a-file").write_text("x")  # an output folder that cannot be one: it was an OSError
    with pytest.raises(errors.Invalid, match="a-file is a file"):
        client.export_release(REF, tmp_path / "a-file", "mds", tokenizer=tokenizer_file)
    with pytest.raises(errors.Invalid, match="cannot make the output folder"):
        client.export_release(REF, tmp_path / "a-file" / "sub", "megatron", tokenizer=tokenizer_file)
    client.export_release(REF, tmp_path / "y", "mds", tokenizer=tokenizer_file)
    with pytest.raises(errors.Conflict, match="holds another export"):
        client.export_release(REF, tmp_path / "y", "mds", tokenizer=tokenizer_file, seed=7)
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").rglob("*.mds"))


def test_shards_on_a_real_ceph_tier_match_the_local_ones(
    client: Client, settings: Settings, tokenizer_file: Path, tmp_path: Path, ceph_s3: CephS3
) -> None:
    settings.tiers.append(ceph_s3.tier_config(name="ceph"))
    options = {"tokenizer": tokenizer_file, "seq_len": 63, "pack": True, "shard_size": 8 << 10}
    local = client.export_release(REF, tmp_path / "local", "mds", **options)
    remote = client.export_release(REF, "exports/run-1", "mds", tier="ceph", **options)
    assert (remote.tier, remote.path) == ("ceph", "exports/run-1/deb-t.mds")
    tier = get_tier("ceph", settings)
    root = tier.path(remote.path)
    listed = tier.filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    on_ceph = {}
    for info in listed:
        if info.type == pafs.FileType.File:
            with tier.filesystem.open_input_stream(info.path) as fh:
                on_ceph[info.path.removeprefix(root + "/")] = fh.read()
    assert on_ceph == folder_bytes(Path(local.path))  # shards, lineage, index.json, manifest.json; no progress
    assert any(name.startswith("sequence-lineage/") for name in on_ceph)
    assert remote.export_id == local.export_id and remote.shards == local.shards
