"""A training export as an asset: the catalog's record (release, tokenizer digest, options, shards with
checksums, tokens per source), its node in the lineage graph, verification of its files, and
sequence-level lineage (the samples of global sequence k; the sequences of sample S), in-process and over
HTTP from a real uvicorn server, checked against what streaming's and megatron-core's readers return."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from lineage import errors
from lineage.client import Client
from lineage.service import schemas as S
from lineage.settings import Settings
from tests.support.api_world import BACKENDS, ServerThread, make_settings
from tests.support.cli import lineage
from tests.support.training_export import EOD, publish_corpus_slice, streaming_dataset, train_tokenizer

REF = "deb@t"


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json")


@pytest.fixture
def local(settings: Settings, tmp_path: Path) -> Iterator[Client]:
    with Client(settings=settings) as c:
        publish_corpus_slice(c, tmp_path, REF)
        yield c


@pytest.fixture(params=BACKENDS)
def on_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Client]:
    """The in-process SDK on a catalog of each backend: SQLite and a real PostgreSQL."""
    with Client(settings=make_settings(tmp_path, request.param, request)) as c:
        publish_corpus_slice(c, tmp_path, REF)
        yield c


@pytest.fixture
def over_http(local: Client) -> Iterator[Client]:
    from api.app import create_app

    local.service.settings.single_user = True  # loopback and no token: as under `lineage serve`
    with ServerThread(create_app(local.service.settings, local.service)) as srv, Client(srv.url) as c:
        yield c


def documents(client: Client, tokenizer_file: Path, tmp_path: Path) -> dict[str, tuple[str, list[int]]]:
    """sample id -> (source, its text's tokens + EOD), from the release's JSONL export and ``tokenizers``."""
    rows = [json.loads(x) for x in Path(client.export_release(REF, tmp_path / "j").path).read_text().splitlines()]
    tok = Tokenizer.from_file(str(tokenizer_file))
    eod = tok.token_to_id(EOD)
    return {
        r["sample_id"]: (r["source_dataset"], tok.encode(r["text"], add_special_tokens=False).ids + [eod]) for r in rows
    }


def test_the_export_is_recorded_in_the_catalog_and_the_lineage_graph(
    on_backend: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    from api.app import create_app

    local = on_backend
    with ServerThread(create_app(local.service.settings, local.service)) as srv, Client(srv.url) as over_http:
        _recorded_and_in_the_graph(local, over_http, tokenizer_file, tmp_path)


def _recorded_and_in_the_graph(local: Client, over_http: Client, tokenizer_file: Path, tmp_path: Path) -> None:
    made = local.export_release(REF, tmp_path / "out", "megatron", tokenizer=tokenizer_file, shard_size=16 << 10)
    for client in (local, over_http):
        (listed,) = client.list_exports(release=REF).items
        assert listed == client.get_export(made.export_id)
        assert (listed.release, listed.format, listed.tier, listed.path) == (REF, "megatron", None, made.path)
        assert listed.tokenizer_digest == made.tokenizer_digest
        assert listed.options["shard_size"] == 16 << 10 and listed.options["seed"] == 0
        assert (listed.samples, listed.sequences, listed.tokens) == (made.rows, made.sequences, made.tokens)
        assert listed.manifest["tokens_by_source"] == made.tokens_by_source and set(made.tokens_by_source) == {
            "deb-en",
            "deb-zh",
        }
        assert [S.ExportShard.model_validate(s) for s in listed.manifest["shards"]] == made.shards
    again = local.export_release(REF, tmp_path / "out", "megatron", tokenizer=tokenizer_file, shard_size=16 << 10)
    assert again.export_id == made.export_id and local.list_exports().total == 1  # one record per place

    node = f"dataset:lineage-ledger:{REF}/megatron/{made.export_id}"
    graph = {n.id: n for n in over_http.lineage_graph(node).graph}
    job = graph[f"job:lineage-ledger:export {REF}"]
    # written by the export's job; the catalog's export node (lineage.catalog_graph) leads to it too
    assert sorted(e.origin for e in graph[node].inEdges) == sorted([job.id, f"export:lineage-ledger:{made.export_id}"])
    assert [e.origin for e in job.inEdges] == ["dataset:lineage-ledger:deb"]  # derived from the release's data
    facets = graph[node].data["facets"]
    assert facets["trainingExport"]["tokenizerDigest"] == made.tokenizer_digest


def test_verify_reads_every_file_back_and_names_what_is_wrong(
    local: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    made = local.export_release(REF, tmp_path / "out", "mds", tokenizer=tokenizer_file, shard_size=16 << 10)
    checked = local.verify_export(made.export_id)
    assert checked.problems == [] and checked.files == 2 * len(made.shards)

    folder = Path(made.path)
    shard = folder / made.shards[1].files[0].path
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    (folder / made.shards[0].lineage.path).unlink()
    problems = local.verify_export(made.export_id).problems
    assert len(problems) == 2
    assert problems[0] == f"{made.shards[0].lineage.path}: missing"
    assert problems[1].startswith(f"{made.shards[1].files[0].path}: read back {len(data)} bytes xxh3-128")
    with pytest.raises(errors.NotFound):
        local.verify_export("0" * 32)


def test_sequence_lineage_answers_match_the_packed_shards(
    local: Client, over_http: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    made = local.export_release(
        REF, tmp_path / "out", "mds", tokenizer=tokenizer_file, seq_len=127, pack=True, shard_size=16 << 10
    )
    docs = documents(local, tokenizer_file, tmp_path)
    read = streaming_dataset(Path(made.path), shuffle=False, batch_size=1)
    assert len(read) == made.sequences and len(made.shards) >= 3

    covered: dict[str, list[tuple[int, int]]] = {}
    for k in range(made.sequences):
        answer = local.export_sequence(made.export_id, k)
        shard = made.shards[answer.shard]
        assert shard.first_sequence + answer.shard_sequence == k
        rebuilt = []
        for p in answer.samples:  # each piece is exactly the sample's tokens at its span
            source, tokens = docs[p.sample_id]
            assert p.source_dataset == source and p.seq_end - p.seq_start == p.doc_end - p.doc_start
            rebuilt += tokens[p.doc_start : p.doc_end]
            covered.setdefault(p.sample_id, []).append((p.doc_start, p.doc_end))
        assert rebuilt == read[k]["tokens"].tolist()  # and together they are what the reader returns
    for sample_id, (_source, tokens) in docs.items():  # every token of every sample is in exactly one place
        spans = covered[sample_id]
        assert spans[0][0] == 0 and spans[-1][1] == len(tokens)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))

    long_one = max(docs, key=lambda s: len(docs[s][1]))  # longer than a sequence: several of them
    for client in (local, over_http):
        where = client.sample_sequences(made.export_id, long_one)
        assert len(where.sequences) >= 2 and where.source_dataset == docs[long_one][0]
        assert [(q.doc_start, q.doc_end) for q in where.sequences] == covered[long_one]
        for q in where.sequences:
            piece = next(
                p for p in client.export_sequence(made.export_id, q.sequence).samples if p.sample_id == long_one
            )
            assert (piece.seq_start, piece.seq_end) == (q.seq_start, q.seq_end)
        with pytest.raises(errors.NotFound, match="not in export"):
            client.sample_sequences(made.export_id, "f" * 32)
        with pytest.raises(errors.NotFound, match="has sequences 0.."):
            client.export_sequence(made.export_id, made.sequences)


def test_megatron_sequence_lineage_is_one_sample_per_sequence(
    local: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    made = local.export_release(REF, tmp_path / "out", "megatron", tokenizer=tokenizer_file, shard_size=16 << 10)
    docs = documents(local, tokenizer_file, tmp_path)
    shard = made.shards[-1]
    dataset = IndexedDataset(str((Path(made.path) / shard.files[0].path).with_suffix("")))
    k = shard.first_sequence + len(dataset) - 1  # the export's last sequence
    (piece,) = local.export_sequence(made.export_id, k).samples
    assert dataset[len(dataset) - 1].tolist() == docs[piece.sample_id][1]
    assert (piece.seq_start, piece.doc_start, piece.doc_end) == (0, 0, len(docs[piece.sample_id][1]))
    (where,) = local.sample_sequences(made.export_id, piece.sample_id).sequences
    assert (where.sequence, where.shard, where.shard_sequence) == (k, shard.index, len(dataset) - 1)


def test_the_cli_exports_and_answers_sequence_lineage(
    local: Client, tokenizer_file: Path, tmp_path: Path, home: Path
) -> None:
    out = tmp_path / "cli-out"
    args = ["export", REF, "--out", str(out), "--format", "mds", "--tokenizer", str(tokenizer_file)]
    made = S.ExportResult.model_validate_json(
        lineage(home, *args, "--seq-len", "127", "--pack", "--shard-size", "16KiB", "--json").stdout
    )
    assert made.format == "mds" and made.sequences and Path(made.path) == out / "deb-t.mds"
    again = lineage(home, *args, "--seq-len", "127", "--pack", "--shard-size", "16KiB", COLUMNS="1000").stdout
    assert f"to {made.path} (export {made.export_id})" in " ".join(again.split())  # no "None:" tier for a folder
    assert "1 training exports" in lineage(home, "exports").stdout
    shown = S.ExportOut.model_validate_json(lineage(home, "exports", made.export_id, "--json").stdout)
    assert [S.ExportShard.model_validate(s) for s in shown.manifest["shards"]] == made.shards

    first = S.ExportSequence.model_validate_json(lineage(home, "sequence", made.export_id, "0", "--json").stdout)
    assert first == local.export_sequence(made.export_id, 0)
    sample_id = first.samples[0].sample_id
    text = lineage(home, "sequence", made.export_id, "--sample", sample_id).stdout
    assert sample_id in text and "sequence tokens" in text
    assert "read back as recorded" in lineage(home, "export-verify", made.export_id).stdout

    job = ["--seed", "1", "--seq-len", "8", "--global-batch-size", "2", "--train-samples", "4"]
    not_megatron = lineage(home, "training-step", made.export_id, "0", *job, check=False)
    assert not_megatron.returncode == 3 and "for megatron exports" in not_megatron.stderr
    refused = lineage(home, "sequence", made.export_id, check=False)
    assert refused.returncode == 3 and "one of them" in refused.stderr  # Invalid
    missing = lineage(home, "sequence", "0" * 32, "1", check=False)
    assert missing.returncode == 4 and "export 00000000000000000000000000000000 does not exist" in missing.stderr


def test_which_samples_were_in_a_megatron_training_step(
    local: Client, over_http: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    """Against megatron-core's own GPTDataset over the exported shard, with the job's recorded settings."""
    import logging
    import types

    import numpy as np
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from megatron.core.datasets.utils import Split

    made = local.export_release(REF, tmp_path / "out", "megatron", tokenizer=tokenizer_file, shard_size=1 << 20)
    assert len(made.shards) == 1
    docs = documents(local, tokenizer_file, tmp_path)
    job = {"seed": 42, "sequence_length": 64, "global_batch_size": 8, "train_samples": 8 * 300}  # > 1 epoch
    prefix = str((Path(made.path) / made.shards[0].files[0].path).with_suffix(""))
    tokenizer = types.SimpleNamespace(vocab_size=800, eod=0, pad=1, unique_identifiers={"t": 1})
    config = GPTDatasetConfig(
        random_seed=job["seed"],
        sequence_length=job["sequence_length"],
        split="1,0,0",
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        tokenizer=tokenizer,
        path_to_cache=None,
    )
    logging.getLogger("megatron").setLevel(logging.ERROR)
    indexed = IndexedDataset(prefix)
    gpt = GPTDataset(
        indexed, prefix, np.arange(len(indexed), dtype=np.int32), job["train_samples"], Split.train, config
    )

    for step in (0, 57, 299):
        answers = [c.training_step(made.export_id, step, **job) for c in (local, over_http)]
        assert answers[0] == answers[1]
        samples = answers[0].samples
        assert [s.sample for s in samples] == list(range(step * 8, step * 8 + 8))
        for s in samples:
            text, _document_ids = gpt._query_document_sample_shuffle_indices(s.sample)
            rebuilt = [t for p in s.pieces for t in docs[p.sample_id][1][p.doc_start : p.doc_end]]
            assert rebuilt == text.tolist() and s.pieces[-1].seq_end == len(text) == 65
    with pytest.raises(errors.Invalid, match="beyond the job"):
        local.training_step(made.export_id, 300, **job)


def test_which_samples_were_in_a_step_of_a_megatron_blend_of_shards(
    local: Client, over_http: Client, tokenizer_file: Path, tmp_path: Path
) -> None:
    """A several-shard export read with every shard's prefix on --data-path (no weights): checked against
    megatron-core's own BlendedMegatronDatasetBuilder, BlendedDataset and per-shard GPTDatasets."""
    import logging
    import types

    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

    made = local.export_release(REF, tmp_path / "more", "megatron", tokenizer=tokenizer_file, shard_size=12 << 10)
    assert len(made.shards) >= 3
    docs = documents(local, tokenizer_file, tmp_path)
    job = {"seed": 7, "sequence_length": 32, "global_batch_size": 6, "train_samples": 6 * 40}
    prefixes = [str((Path(made.path) / s.files[0].path).with_suffix("")) for s in made.shards]
    config = GPTDatasetConfig(
        random_seed=job["seed"],
        sequence_length=job["sequence_length"],
        blend=(prefixes, None),
        split="1,0,0",
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        tokenizer=types.SimpleNamespace(vocab_size=800, eod=0, pad=1, unique_identifiers={"t": 1}),
        path_to_cache=None,
    )
    logging.getLogger("megatron").setLevel(logging.ERROR)
    blend, _valid, _test = BlendedMegatronDatasetBuilder(
        GPTDataset, [job["train_samples"], None, None], lambda: True, config
    ).build()
    assert len(blend) == job["train_samples"] and len(set(blend.dataset_index[: len(blend)].tolist())) >= 3

    for step in (0, 13, 39):
        answers = [c.training_step(made.export_id, step, **job) for c in (local, over_http)]
        assert answers[0] == answers[1]
        assert [s.sample for s in answers[0].samples] == list(range(step * 6, step * 6 + 6))
        for s in answers[0].samples:
            dataset = blend.datasets[int(blend.dataset_index[s.sample])]
            text, _ = dataset._query_document_sample_shuffle_indices(int(blend.dataset_sample_index[s.sample]))
            rebuilt = [t for p in s.pieces for t in docs[p.sample_id][1][p.doc_start : p.doc_end]]
            assert rebuilt == text.tolist() and len(text) == 33
    with pytest.raises(errors.Invalid, match="beyond the job's 240 samples"):
        local.training_step(made.export_id, 40, **job)
