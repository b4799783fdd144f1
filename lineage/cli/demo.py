"""``lineage demo``: the whole path on the bundled Debian corpus, with the embedded defaults.

Issue #19's step: the demo registers a small eval set (``examples/evalsets/debian-quiz.jsonl``), plants
three of its items into a COPY of the corpus (under the settings' home; ``examples/data`` is never
changed), runs the pipeline on the copy and publishes: the publish-time contamination check catches
exactly the planted items, shown as ``release show`` and the HTML QC report show them.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lineage.cli.app import console, guard, load_settings
from lineage.cli.progress import run_progress
from lineage.cli.render import print_counts, print_sample_lineage, print_stages, show_release, write_report
from lineage.errors import Conflict
from lineage.settings import Settings

if TYPE_CHECKING:
    from lineage.service.core import Service
    from pipelines.dag import DagSpec
    from pipelines.spec import InputSpec

log = logging.getLogger(__name__)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RELEASE = "debian-clean@demo"
EVALSET = "debian-quiz"
EVALSET_FILE = EXAMPLES / "evalsets" / "debian-quiz.jsonl"
# (item, corpus file, how): planted verbatim, inside a longer English page, and in Chinese text
PLANTED = (
    ("pkg-1", "debian_en.jsonl.gz", "verbatim"),
    ("pkg-3", "debian_en.jsonl.gz", "embedded"),
    ("zh-1", "debian_zh.jsonl.gz", "chinese"),
)


def demo(
    data_dir: Annotated[Path | None, typer.Option(help="Folder with debian_en/zh.jsonl.gz.")] = None,
) -> None:
    """Run the whole path on the bundled Debian corpus and show lineage of two samples."""
    guard(lambda: run_demo(load_settings(), data_dir))


def run_demo(settings: Settings, data_dir: Path | None = None) -> None:
    """The whole path through the service (what ``lineage.Client()`` calls in-process): run, publish, ask."""
    # start-up: the service and the run load SQLAlchemy, deltalake, DuckDB and numba
    from lineage.service.core import Service
    from pipelines.dag import DagSpec, load_pipeline

    spec = load_pipeline(EXAMPLES / "demo.toml")
    assert isinstance(spec, DagSpec)
    if data_dir is not None:
        for inp in raw_inputs(spec):
            inp.path = str(Path(data_dir).resolve() / Path(inp.path or "").name)
    copy = settings.home / "demo-corpus"
    planted = plant_copy(spec, copy)
    for inp in raw_inputs(spec):
        inp.path = str(copy / Path(inp.path or "").name)
    service = Service(settings)
    try:
        _demo(service, settings, spec, planted)
    finally:
        service.close()


def _items() -> dict[str, dict]:
    with EVALSET_FILE.open(encoding="utf-8") as fh:
        return {item["id"]: item for item in map(json.loads, fh)}


def raw_inputs(spec: DagSpec) -> list[InputSpec]:
    """The raw-file inputs of every stage."""
    return [inp for stage in spec.stages for inp in stage.inputs if inp.is_raw]


def plant_copy(spec: DagSpec, copy: Path) -> dict[str, str]:
    """Copy the pipeline's input files into ``copy`` and append one record a planted item to the copies
    (the same bytes every time, so the demo's release digest is stable); returns {item id: record id}."""
    copy.mkdir(parents=True, exist_ok=True)
    items, planted = _items(), {}
    extra: dict[str, list[dict]] = {}
    for item_id, file, how in PLANTED:
        item = items[item_id]
        quiz = "\n".join([item["question"], *item["choices"]])
        if how == "verbatim":
            text = f"Debian packaging quiz, question one\n{quiz}"
        elif how == "embedded":
            text = (
                "Study notes for the packaging team. Before uploading, read the policy manual and check the"
                f" lintian output of every build. A question from last year's exam:\n{quiz}\nThe answer is A;"
                " the same file also names the maintainer and the standards version the package follows."
            )
        else:
            text = f"德班打包小测验。以下题目来自去年的考试，请仔细阅读后作答：\n{quiz}\n答案是A，详见维护者手册。"
        record_id = f"planted-{item_id}"
        extra.setdefault(file, []).append({"id": record_id, "text": text, "source": "demo-planted", "meta": {}})
        planted[item_id] = record_id
    for inp in raw_inputs(spec):
        src = Path(inp.path or "")
        src = src if src.is_absolute() else (spec.base_dir or EXAMPLES) / src
        dst = copy / src.name
        with gzip.open(src, "rb") as fin, gzip.GzipFile(dst, "wb", mtime=0) as fout:
            shutil.copyfileobj(fin, fout)
            for record in extra.get(src.name, []):
                fout.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    return planted


def _demo(service: Service, settings: Settings, spec: DagSpec, planted: dict[str, str]) -> None:
    console.rule(
        f"[bold]0. register the eval set {EVALSET} and plant {len(planted)} of its items in a copy of the corpus"
    )
    registered = service.register_evalset(
        EVALSET, str(EVALSET_FILE), text_fields=["question", "choices"], id_field="id", task="mcq"
    )
    v = registered.evalset
    console.print(
        f"{v.ref}: {v.item_count} items ({'registered' if registered.changed else 'already registered, no-op'});"
        f" planted {', '.join(f'{i} ({how})' for i, _, how in PLANTED)}"
        f" into {Path(raw_inputs(spec)[0].path or '').parent}"
    )

    console.rule(
        "[bold]1. run the pipeline's stages: clean-en and clean-zh (convert → exact dedupe → MinHash near-dedupe"
        " → quality), then merge (exact dedupe across them, mixed 0.7/0.3 by words)"
    )
    console.print(f"catalog: {settings.catalog_url}\ndata tier 'local': {settings.tier_config('local').root}")
    with run_progress(console) as progress:
        run = service.run_pipeline(spec, progress=progress)
    if run.pipeline_run is not None:
        print_stages(run.pipeline_run.stages)
    print_counts(run.run.counts)
    console.print(f"committed {run.dataset} v{run.version}: {run.row_count:,} samples")

    console.rule(f"[bold]2. publish {RELEASE}")
    name, tag = RELEASE.split("@")
    try:
        result = service.create_release({"name": name, "tag": tag, "version": run.version})
        state = "published" if result.changed else "already published with identical content (no-op)"
    except Conflict as exc:  # an older demo published different content under this tag
        console.print(f"[yellow]{exc}[/]")
        result = service.create_release({"name": name, "tag": f"{tag}-v{run.version}", "version": run.version})
        state = "published"
    release = result.release
    m = service.get_manifest(release.ref)
    console.print(
        f"{release.ref}: {state}; {m.row_count:,} samples in {len(m.files)} files, "
        f"{m.bytes:,} bytes, content digest {release.content_digest}"
    )

    console.rule(f"[bold]3. the planted items, caught by the publish-time contamination check ({v.ref})")
    from operators.schema import sample_id  # start-up: pyarrow, only once the demo gets here

    show_release(service, release.ref)
    for item_id, record_id in planted.items():
        item = sample_id(EVALSET, f"id:{item_id}")  # an item's id, as convert gives it
        found = service.evalset_item_samples(EVALSET, v.version, item, release=release.ref)
        ids = [h.sample_id for h in found.items]
        mark = "[green]caught[/]" if found.total else "[red]missed[/]"
        console.print(f"{item_id}: {mark} in {found.total} sample(s) {', '.join(ids)} (planted as {record_id})")
    report = settings.home / "demo-qc.html"
    write_report(service, release.ref, report)
    console.print(f"HTML QC report with its contamination section: {report}")
    url = f"http://{settings.api_host}:{settings.api_port}/releases/{release.ref.replace('@', '/')}"
    console.print(f"web view of the release: run `lineage serve`, then open {url}")

    console.rule("[bold]4. lineage of an exact duplicate, a near-duplicate, a sample the mixture left out, a kept one")
    stages = run.pipeline_run.stages if run.pipeline_run is not None else []
    outputs = [(st["dataset"], st["version"]) for st in reversed(stages)] or [(run.dataset, run.version)]
    steps = (("exact_dedupe", "dropped"), ("minhash_dedupe", "dropped"), ("mixture", "dropped"), ("quality", "kept"))
    for operator, verdict in steps:
        for dataset, version in outputs:  # the merge's output first, then the stages that cleaned each source
            first = service.list_samples(dataset, version, limit=1, operator=operator, verdict=verdict)
            if first.items:
                print_sample_lineage(service.sample_lineage(first.items[0].sample_id))  # every stage's version
                break
    console.print(
        "\nTry: lineage release show "
        + release.ref
        + " | lineage sample <id> | lineage export "
        + release.ref
        + " --out export/"
    )
