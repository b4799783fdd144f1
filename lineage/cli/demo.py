"""``lineage demo``: the whole path on the bundled Debian corpus, with the embedded defaults."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lineage.cli.app import console, guard, load_settings
from lineage.cli.progress import run_progress
from lineage.cli.render import print_counts, print_sample_lineage
from lineage.errors import Conflict
from lineage.settings import Settings

if TYPE_CHECKING:
    from lineage.catalog import DatasetVersion

log = logging.getLogger(__name__)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RELEASE = "debian-clean@demo"


def demo(
    data_dir: Annotated[Path | None, typer.Option(help="Folder with debian_en/zh.jsonl.gz.")] = None,
) -> None:
    """Run the whole path on the bundled Debian corpus and show lineage of two samples."""
    guard(lambda: run_demo(load_settings(), data_dir))


def run_demo(settings: Settings, data_dir: Path | None = None) -> None:
    # start-up: the catalog, the run and the service load SQLAlchemy, deltalake, DuckDB and numba
    from lineage.catalog import Catalog
    from lineage.catalog.queries import dataset_version
    from lineage.runs import Runner
    from lineage.service.core import Service
    from pipelines.spec import PipelineSpec

    spec = PipelineSpec.load(EXAMPLES / "demo.toml")
    if data_dir is not None:
        for inp in spec.inputs:
            inp.path = str(Path(data_dir).resolve() / Path(inp.path or "").name)
    catalog = Catalog(settings.catalog_url or "")
    console.rule("[bold]1. run the pipeline (convert → exact dedupe → MinHash near-dedupe → quality)")
    console.print(f"catalog: {settings.catalog_url}\ndata tier 'local': {settings.tier_config('local').root}")
    with run_progress(console) as progress:
        outcome = Runner(settings, catalog).run(spec, progress=progress)
    print_counts(outcome.counts)
    console.print(f"committed {outcome.dataset} v{outcome.version}: {outcome.row_count:,} samples")

    service = Service(settings, catalog)
    console.rule(f"[bold]2. publish {RELEASE}")
    name, tag = RELEASE.split("@")
    try:
        result = service.create_release({"name": name, "tag": tag, "version": outcome.version})
        state = "published" if result.changed else "already published with identical content (no-op)"
    except Conflict as exc:  # an older demo published different content under this tag
        console.print(f"[yellow]{exc}[/]")
        result = service.create_release({"name": name, "tag": f"{tag}-v{outcome.version}", "version": outcome.version})
        state = "published"
    release = result.release
    m = service.get_manifest(release.ref)
    console.print(
        f"{release.ref}: {state}; {m.row_count:,} samples in {len(m.files)} files, "
        f"{m.bytes:,} bytes, content digest {release.content_digest}"
    )

    console.rule("[bold]3. lineage of an exact duplicate, a near-duplicate and a kept sample")
    with catalog.session() as s:
        dv = dataset_version(s, outcome.dataset, outcome.version)
        dropped = example_sample_ids(dv, settings, verdict="dropped", operator="exact_dedupe")
        near = example_sample_ids(dv, settings, verdict="dropped", operator="minhash_dedupe")
        kept = example_sample_ids(dv, settings, verdict="kept", operator="quality")
    for sample_id in dropped + near + kept:
        print_sample_lineage(service.sample_lineage(sample_id, dataset=outcome.dataset))
    service.close()
    console.print(
        "\nTry: lineage release show "
        + release.ref
        + " | lineage sample <id> | lineage export "
        + release.ref
        + " --out export/"
    )


def example_sample_ids(
    dv: DatasetVersion, settings: Settings, *, verdict: str, operator: str | None = None, limit: int = 1
) -> list[str]:
    """A few sample ids with a given verdict in a version's lineage (for the demo)."""
    # start-up: DuckDB, deltalake
    import duckdb

    from storage.delta import version_dataset
    from storage.tier import get_tier

    tier = get_tier(dv.tier, settings)
    where = "verdict = ?" + (" AND operator = ?" if operator else "")
    params: list[Any] = [verdict] + ([operator] if operator else [])
    with duckdb.connect() as con:
        con.register("ds", version_dataset(tier, dv.lineage_path, dv.lineage_delta_version))
        rows = con.sql(
            f"SELECT sample_id FROM ds WHERE {where} ORDER BY sample_id LIMIT {int(limit)}", params=params
        ).fetchall()
    return [r[0] for r in rows]
