"""MinHash near-dedupe inside pipelines: lineage of dropped samples, and dedupe against releases."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from lineage.catalog import Catalog, DatasetVersion
from lineage.releases import get_release, publish
from lineage.runs import Runner
from lineage.settings import Settings
from operators.schema import sample_id
from pipelines.spec import PipelineSpec
from storage.delta import version_dataset
from storage.tier import get_tier
from tests.conftest import lineage_of, write_jsonl

BASE = (
    "The GNU Compiler Collection is a compiler system produced by the GNU Project supporting various "
    "programming languages hardware architectures and operating systems. The Free Software Foundation "
    "distributes GCC as free software under the GNU General Public License and it is a key component "
    "of the GNU toolchain and the standard compiler for most projects related to GNU and the Linux kernel. "
    "With roughly fifteen million lines of code in 2019 GCC is one of the biggest free programs in existence. "
    "It has played an important role in the growth of free software as both a tool and an example. When it "
    "was first released in 1987 by Richard Stallman GCC 1.0 was named the GNU C Compiler since it only "
    "handled the C programming language. It was extended to compile C++ in December of that year."
)
NEAR = BASE.replace("key component", "central component")  # one word changed: Jaccard well above 0.8
OTHER = (
    "curl is a command line tool and library for transferring data with URLs. It supports many protocols "
    "including HTTP HTTPS FTP and more and is used in cars television sets routers printers and phones."
)
CHINESE = (
    "这是一个用于测试近似重复检测的中文软件包描述，它包含足够多的汉字，以便按照字符五元组计算相似度。"
    "该软件包提供了一个命令行工具和一个共享库，用于压缩和解压缩数据，支持多种常见的归档格式。"
    "它被广泛用于操作系统的安装程序、备份工具以及网络传输，以减少存储空间和带宽的占用。"
)


def spec(path: Path, dataset: str, output: str, against: list[str] | None = None) -> PipelineSpec:
    params = {"against": against} if against else {}
    return PipelineSpec.model_validate(
        {
            "name": "mh",
            "inputs": [{"dataset": dataset, "path": str(path), "id_field": "id"}],
            "operators": [{"name": "exact_dedupe"}, {"name": "minhash_dedupe", "params": params}],
            "output": {"dataset": output},
        }
    )


def test_near_duplicates_dropped_with_cluster_kept_id_and_jaccard(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": "short", "text": BASE},
            {"id": "long", "text": NEAR + " Extra words make it longer."},
            {"id": "curl", "text": OTHER},
            {"id": "zh-1", "text": CHINESE},
            {"id": "zh-2", "text": CHINESE + "另外"},
        ],
    )
    outcome = Runner(settings, catalog).run(spec(tmp_path / "a.jsonl", "raw", "clean"))
    step = outcome.counts["steps"][2]
    assert step["operator"] == "minhash_dedupe" and step["dropped"] == 2
    assert outcome.row_count == 3

    dropped = lineage_of(settings, sample_id("raw", "id:short"))
    rec = dropped.versions[0].records[-1]
    assert rec.operator == "minhash_dedupe" and rec.verdict == "dropped"
    dup = rec.detail["duplicate"]
    assert dup["method"] == "minhash" and dup["kept_id"] == sample_id("raw", "id:long")  # longest survives
    assert 0.8 <= dup["jaccard"] < 1.0 and dup["cluster_size"] == 2
    assert rec.related_ids == [dup["kept_id"]]

    with catalog.session() as s:
        dv = s.scalars(select(DatasetVersion)).one()
        assert dv.signatures_path is not None
        sigs = version_dataset(get_tier(dv.tier, settings), dv.signatures_path, dv.signatures_delta_version)
        assert sorted(sigs.to_table().column("sample_id").to_pylist()) == sorted(
            version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version)
            .to_table()
            .column("sample_id")
            .to_pylist()
        ), "signatures are stored for exactly the released samples"


def test_dedupe_against_a_published_release_keeps_the_published_sample(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    write_jsonl(tmp_path / "old.jsonl", [{"id": "gcc", "text": BASE}, {"id": "curl", "text": OTHER}])
    runner = Runner(settings, catalog)
    runner.run(spec(tmp_path / "old.jsonl", "old", "old-clean"))
    publish(catalog, settings, "old-clean@v1")

    # the newcomer is *longer* than the published sample, but published samples always survive
    write_jsonl(
        tmp_path / "new.jsonl",
        [{"id": "gcc-copy", "text": NEAR + " And a longer tail."}, {"id": "fresh", "text": CHINESE}],
    )
    outcome = runner.run(spec(tmp_path / "new.jsonl", "new", "new-clean", against=["old-clean@v1"]))
    assert outcome.counts["steps"][2]["dropped"] == 1 and outcome.row_count == 1
    rec = lineage_of(settings, sample_id("new", "id:gcc-copy")).versions[-1].records[-1]
    assert rec.verdict == "dropped"
    assert rec.detail["duplicate"]["kept_id"] == sample_id("old", "id:gcc")
    with catalog.session() as s:
        assert get_release(s, "old-clean@v1").manifest["signatures"]["table"].endswith("/signatures")


def test_against_a_release_without_signatures_is_a_clear_error(
    tmp_path: Path, settings: Settings, catalog: Catalog
) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": OTHER}])
    runner = Runner(settings, catalog)
    runner.run(
        PipelineSpec.model_validate(
            {
                "name": "p",
                "inputs": [{"dataset": "d", "path": str(tmp_path / "d.jsonl")}],
                "output": {"dataset": "plain"},
            }
        )
    )
    publish(catalog, settings, "plain@v1")
    import pytest

    with pytest.raises(ValueError, match="no stored signatures"):
        runner.run(spec(tmp_path / "d.jsonl", "d2", "out", against=["plain@v1"]))
