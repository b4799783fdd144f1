"""``lineage demo``: the whole path on the bundled Debian corpus, with the embedded defaults."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lineage.cli.app import console, guard, load_settings
from lineage.cli.progress import run_progress
from lineage.cli.render import print_counts, print_sample_lineage
from lineage.errors import Conflict
from lineage.settings import Settings

if TYPE_CHECKING:
    from lineage.service.core import Service
    from pipelines.spec import PipelineSpec

log = logging.getLogger(__name__)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RELEASE = "debian-clean@demo"


def demo(
    data_dir: Annotated[Path | None, typer.Option(help="Folder with debian_en/zh.jsonl.gz.")] = None,
) -> None:
    """Run the whole path on the bundled Debian corpus and show lineage of two samples."""
    guard(lambda: run_demo(load_settings(), data_dir))


def run_demo(settings: Settings, data_dir: Path | None = None) -> None:
    """The whole path through the service (what ``lineage.Client()`` calls in-process): run, publish, ask."""
    # start-up: the service and the run load SQLAlchemy, deltalake, DuckDB and numba
    from lineage.service.core import Service
    from pipelines.spec import PipelineSpec

    spec = PipelineSpec.load(EXAMPLES / "demo.toml")
    if data_dir is not None:
        for inp in spec.inputs:
            inp.path = str(Path(data_dir).resolve() / Path(inp.path or "").name)
    service = Service(settings)
    try:
        _demo(service, settings, spec)
    finally:
        service.close()


def _demo(service: Service, settings: Settings, spec: PipelineSpec) -> None:
    console.rule("[bold]1. run the pipeline (convert → exact dedupe → MinHash near-dedupe → quality)")
    console.print(f"catalog: {settings.catalog_url}\ndata tier 'local': {settings.tier_config('local').root}")
    with run_progress(console) as progress:
        run = service.run_pipeline(spec, progress=progress)
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

    console.rule("[bold]3. lineage of an exact duplicate, a near-duplicate and a kept sample")
    for operator, verdict in (("exact_dedupe", "dropped"), ("minhash_dedupe", "dropped"), ("quality", "kept")):
        first = service.list_samples(run.dataset, run.version, limit=1, operator=operator, verdict=verdict)
        for record in first.items:
            print_sample_lineage(service.sample_lineage(record.sample_id, dataset=run.dataset))
    console.print(
        "\nTry: lineage release show "
        + release.ref
        + " | lineage sample <id> | lineage export "
        + release.ref
        + " --out export/"
    )
