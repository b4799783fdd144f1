"""``lineage evalset …``: eval sets as versioned assets (register, list, show, diff, deprecate, collect),
each verb one call of the service (``--json``: its models, the HTTP API's bodies)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lineage.cli.app import AsJson, console, every, guard, open_service, print_json, print_list_json
from lineage.cli.progress import run_progress

if TYPE_CHECKING:
    from lineage.service.schemas import EvalSetRegistered

Ref = Annotated[str, typer.Argument(help="NAME:vN (a version) or NAME (its latest).")]


def _fields(value: str) -> list[str]:
    return [f.strip() for f in value.split(",") if f.strip()]


def _registered(found: EvalSetRegistered) -> None:
    v = found.evalset
    verb = "registered" if found.changed else "unchanged (already registered with this content):"
    console.print(f"[green]{verb}[/] {escape(v.ref)}: {v.item_count:,} items")
    _print_report(v)


def _print_report(v: object) -> None:
    r = v.report  # type: ignore[attr-defined]
    if v.kind == "collection":  # type: ignore[attr-defined]
        console.print(f"members: {escape(', '.join(v.members))}")  # type: ignore[attr-defined]
        return
    empty = ", ".join(f"{k} {n:,}" for k, n in r.empty_fields.items()) or "none"
    quarantined = ", ".join(f"{k} {n:,}" for k, n in r.quarantined.items()) or "none"
    console.print(
        f"checked fields: {escape(' + '.join(v.text_fields))} (joined by {v.join!r}); "  # type: ignore[attr-defined]
        f"empty fields: {escape(empty)}; duplicate items: {r.duplicate_items:,}; "
        f"shorter than n ({r.word_ngram} words / {r.char_ngram} CJK characters): {r.shorter_than_n:,}; "
        f"quarantined: {escape(quarantined)}"
    )


def evalset_register(
    name: Annotated[str, typer.Argument(help="The eval set's name.")],
    path: Annotated[str, typer.Argument(help="JSONL, Parquet or CSV file (or folder, or glob) of items.")],
    version: Annotated[int | None, typer.Option(help="The version number (default: the next).")] = None,
    task: Annotated[str | None, typer.Option(help="mcq, qa, code, function_call, agent_trajectory or other.")] = None,
    split: Annotated[str | None, typer.Option(help="The split, e.g. test.")] = None,
    language: Annotated[str | None, typer.Option(help="zh, en, ...")] = None,
    license: Annotated[str | None, typer.Option("--license", help="The items' licence.")] = None,  # noqa: A002
    text_fields: Annotated[
        str, typer.Option(help="Fields checked for overlap, comma-separated, joined in this order.")
    ] = "text",
    join: Annotated[str, typer.Option(help="What joins the fields (and a list field's elements).")] = "\n",
    id_field: Annotated[str | None, typer.Option(help="Field holding each item's stable id.")] = None,
    tier: Annotated[str | None, typer.Option(help="Read PATH on this tier instead of the local disk.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, jsonl, parquet or csv.")] = "auto",
    engine: Annotated[str, typer.Option(help="local, spark or ray.")] = "local",
    as_json: AsJson = False,
) -> None:
    """Register a version of an eval set: items through convert (stable ids, quarantine), an immutable
    Delta version, and a report of empty fields, duplicates and items shorter than n."""
    with open_service() as service, run_progress(console) as progress:
        found = guard(
            lambda: service.register_evalset(
                name,
                path,
                version=version,
                task=task,
                split=split,
                language=language,
                license=license,
                text_fields=_fields(text_fields),
                join=join,
                id_field=id_field,
                tier=tier,
                fmt=fmt,
                engine=engine,
                base_dir=Path.cwd(),
                progress=progress,
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(found)
        return
    _registered(found)


def evalset_collect(
    name: Annotated[str, typer.Argument(help="The collection's name.")],
    members: Annotated[list[str], typer.Argument(help="Member eval sets, NAME:vN (NAME: its latest, pinned now).")],
    version: Annotated[int | None, typer.Option(help="The version number (default: the next).")] = None,
    description: Annotated[str | None, typer.Option(help="What the collection is for.")] = None,
    as_json: AsJson = False,
) -> None:
    """Register a version of a collection (集合) of eval sets, each member pinned at its version."""
    body = {"members": members, "version": version, "description": description}
    with open_service() as service:
        found = guard(
            lambda: service.register_collection(name, {k: v for k, v in body.items() if v is not None}),
            as_json=as_json,
        )
    if as_json:
        print_json(found)
        return
    _registered(found)


def evalset_list(
    state: Annotated[str | None, typer.Option(help="Only eval sets in this state: active or deprecated.")] = None,
    as_json: AsJson = False,
) -> None:
    """List eval sets and collections."""
    with open_service() as service:
        found = guard(lambda: every(service.list_evalsets, state=state), as_json=as_json)
    if as_json:
        print_json(found)
        return
    table = Table(title="Eval sets")
    for col in ("name", "kind", "task", "split", "language", "licence", "versions", "state"):
        table.add_column(col)
    for es in found.items:
        table.add_row(
            escape(es.name),
            es.kind,
            es.task,
            escape(es.split),
            escape(es.language or "-"),
            escape(es.license or "-"),
            ", ".join(f"v{n}" for n in es.versions),
            es.state if es.state == "active" else f"[red]{es.state}[/]",
        )
    console.print(table)


def evalset_show(ref: Ref, as_json: AsJson = False) -> None:
    """An eval set with its versions (NAME), or one version (NAME:vN) with its report."""
    with open_service() as service:
        if ":" not in ref:
            guard(lambda: service.get_evalset(ref), as_json=as_json)
            versions = guard(lambda: service.list_evalset_versions(ref), as_json=as_json)
            if as_json:
                print_list_json(versions)
                return
        else:
            name, _, number = ref.partition(":")
            one = guard(lambda: service.get_evalset_version(name, _number(number)), as_json=as_json)
            if as_json:
                print_json(one)
                return
            versions = [one]
    for v in versions:
        origin = f"items {escape(v.items)}" if v.items else "collection"
        console.print(
            f"[bold]{escape(v.ref)}[/] ({v.state}): {v.item_count:,} items, {origin}, digest {v.content_digest[:12]}"
        )
        _print_report(v)


def _number(text: str) -> int:
    digits = text.removeprefix("v")
    if not digits.isdigit():
        raise typer.BadParameter(f"expected NAME:vN, got version {text!r}")
    return int(digits)


def evalset_diff(
    base: Ref,
    target: Annotated[str, typer.Argument(help="Another version of the same eval set: NAME:vN.")],
    as_json: AsJson = False,
) -> None:
    """Items added, removed and changed (same id, other text) from BASE to TARGET."""
    (name, _, b), (other, _, t) = base.partition(":"), target.partition(":")
    if other != name or not b or not t:
        raise typer.BadParameter("compare two versions of one eval set: NAME:vA NAME:vB")
    with open_service() as service:
        found = guard(lambda: service.diff_evalset(name, _number(b), _number(t)), as_json=as_json)
    if as_json:
        print_json(found)
        return
    console.print(
        f"{escape(found.base)} → {escape(found.target)}: {found.added:,} added, {found.removed:,} removed, "
        f"{found.changed:,} changed"
    )
    for kind in ("added", "removed", "changed"):
        for item in getattr(found, f"{kind}_items"):
            console.print(f"  {kind}: {escape(item)}")
    for member in found.added_members:
        console.print(f"  member added: {escape(member)}")
    for member in found.removed_members:
        console.print(f"  member removed: {escape(member)}")


def evalset_deprecate(
    name: Annotated[str, typer.Argument(help="The eval set.")],
    reason: Annotated[str, typer.Option(help="Why (kept with the eval set).")] = "",
    as_json: AsJson = False,
) -> None:
    """Deprecate an eval set (all its versions stay readable; it takes no new ones)."""
    with open_service() as service:
        found = guard(lambda: service.deprecate_evalset(name, reason), as_json=as_json)
    if as_json:
        print_json(found)
        return
    console.print(f"{escape(found.name)}: {found.state}")


def evalset_samples(
    ref: Ref,
    item_id: Annotated[str, typer.Argument(help="The item's id (as the contamination report lists it).")],
    release: Annotated[str | None, typer.Option(help="The release checked, NAME@TAG.")] = None,
    dataset: Annotated[str | None, typer.Option(help="Or the dataset version checked, NAME:vN or NAME.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most this many samples (default: all).")] = None,
    offset: Annotated[int, typer.Option(min=0, help="Samples to skip.")] = 0,
    as_json: AsJson = False,
) -> None:
    """Every sample of a release (or dataset version) that contains an eval item, as its last
    contamination check (at publish, or ``evalset check``) recorded them, in sample id order."""
    from lineage.service.core import MAX_LIMIT  # start-up: SQLAlchemy, DuckDB, deltalake

    name, _, number = ref.partition(":")
    ds_name, _, ds_number = (dataset or "").partition(":")
    with open_service() as service:
        version = (
            _number(number) if number else guard(lambda: service.get_evalset(name), as_json=as_json).latest_version
        )
        kw = {
            "release": release,
            "dataset": ds_name or None,
            "dataset_version": _number(ds_number) if ds_number else None,
        }
        page = guard(
            lambda: service.evalset_item_samples(name, version, item_id, limit=1, offset=offset, **kw),
            as_json=as_json,
        )
        items: list = []
        wanted = page.total - offset if limit is None else min(limit, page.total - offset)
        while len(items) < wanted:
            more = guard(
                partial(
                    service.evalset_item_samples,
                    name,
                    version,
                    item_id,
                    limit=min(MAX_LIMIT, wanted - len(items)),
                    offset=offset + len(items),
                    **kw,
                ),
                as_json=as_json,
            )
            if not more.items:
                break
            items += more.items
    found = page.model_copy(update={"items": items, "limit": len(items)})
    if as_json:
        print_json(found)
        return
    where = found.release or f"{found.dataset}:v{found.version}"
    console.print(
        f"[bold]{escape(found.item_id)}[/] of {escape(found.evalset)} in {escape(where)}: {found.total:,} samples "
        f"(checked {found.checked_at:%Y-%m-%d %H:%M} UTC, threshold {found.threshold:g} on {found.coverage} coverage)"
    )
    table = Table()
    for col in ("sample", "item n-grams", "sample n-grams"):
        table.add_column(col)
    for h in found.items:
        table.add_row(
            escape(h.sample_id), f"{h.matched_item_ngrams:,} of {h.item_ngrams:,}",
            f"{h.matched_sample_ngrams:,} of {h.sample_ngrams:,}",
        )  # fmt: skip
    console.print(table)


def evalset_check(
    ref: Ref,
    releases: Annotated[str, typer.Option(help="'all' (every published release) or NAME@TAG,NAME@TAG.")] = "all",
    engine: Annotated[str, typer.Option(help="Where the check runs: local, spark or ray (the same result).")] = "local",
    as_json: AsJson = False,
) -> None:
    """Check published releases against an eval set version (a collection: each member) and record the
    result on each release; the releases' files are not changed."""
    chosen = None if releases == "all" else [r.strip() for r in releases.split(",") if r.strip()]
    with open_service() as service:
        found = guard(lambda: service.check_evalset(ref, releases=chosen, engine=engine), as_json=as_json)
    if as_json:
        print_json(found)
        return
    table = Table(title=f"Releases checked against {escape(found.evalset)}")
    for col in ("release", "eval set", "contaminated items", "share", "samples"):
        table.add_column(col)
    for check in found.releases:
        for key, r in check.evalsets.items():
            colour = "red" if r.contaminated_items else "green"
            table.add_row(
                escape(check.release), escape(key), f"[{colour}]{r.contaminated_items:,}[/] of {r.items:,}",
                f"{100 * r.share:.2f}%", f"{r.samples:,}",
            )  # fmt: skip
    console.print(table)


def eval_record(
    model: Annotated[str, typer.Option(help="The model's name.")],
    checkpoint: Annotated[str, typer.Option(help="Its checkpoint or version.")],
    evalset: Annotated[str, typer.Option(help="The eval set version, NAME:vN.")],
    metric: Annotated[list[str] | None, typer.Option(help="NAME=VALUE (repeat).")] = None,
    job: Annotated[list[str] | None, typer.Option(help="A training job that produced the model (repeat).")] = None,
    as_json: AsJson = False,
) -> None:
    """Record an eval run: a model evaluated on an eval set version, and the training jobs behind it."""
    metrics = {}
    for item in metric or []:
        key, sep, value = item.partition("=")
        try:
            metrics[key] = float(value)
        except ValueError:
            raise typer.BadParameter(f"--metric takes NAME=NUMBER, got {item!r}") from None
        if not sep:
            raise typer.BadParameter(f"--metric takes NAME=NUMBER, got {item!r}")
    body = {
        "model": model,
        "checkpoint": checkpoint,
        "evalset": evalset,
        "metrics": metrics,
        "training_jobs": job or [],
    }
    with open_service() as service:
        found = guard(lambda: service.record_eval_run(body), as_json=as_json)
    if as_json:
        print_json(found)
        return
    console.print(f"eval run {found.id}: {escape(found.model)}@{escape(found.checkpoint)} on {escape(found.evalset)}")


def eval_show(run_id: Annotated[int, typer.Argument(help="The eval run's id.")], as_json: AsJson = False) -> None:
    """An eval run, the releases its model trained on, and whether they held items of the eval set."""
    with open_service() as service:
        found = guard(lambda: service.get_eval_run(run_id), as_json=as_json)
    if as_json:
        print_json(found)
        return
    r = found.eval_run
    console.print(f"eval run {r.id}: {escape(r.model)}@{escape(r.checkpoint)} on {escape(r.evalset)}: {r.metrics}")
    for t in found.releases:
        for c in t.contamination:
            state = "not checked" if not c.checked else f"{c.contaminated_items} contaminated items"
            console.print(
                f"  trained on {escape(t.release)} (jobs {escape(', '.join(t.jobs))}): {escape(c.evalset)} {state}"
            )
    console.print(f"contaminated: {found.contaminated}")


def release_evals(ref: Annotated[str, typer.Argument(help="NAME@TAG")], as_json: AsJson = False) -> None:
    """The models trained on a release (jobs that read it) and their eval results."""
    with open_service() as service:
        found = guard(lambda: service.release_evals(ref), as_json=as_json)
    if as_json:
        print_json(found)
        return
    for e in found.evals:
        r = e.eval_run
        console.print(f"{escape(e.job)}: {escape(r.model)}@{escape(r.checkpoint)} on {escape(r.evalset)}: {r.metrics}")
