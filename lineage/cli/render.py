"""How the CLI prints what the service and the runs return: step counts, QC tables, a sample's lineage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from lineage.cli.app import console, fail, guard
from lineage.errors import NotFound
from storage.output_paths import output_file

if TYPE_CHECKING:
    from pathlib import Path

    from lineage.service.core import Service
    from lineage.service.schemas import ContaminationReport, GateRecord, Mixture, MixtureDiff, PipelinePlan, QcReport


def print_counts(counts: dict[str, Any]) -> None:
    table = Table(title="Samples per step")
    for col in ("step", "operator", "in", "kept", "dropped", "modified"):
        table.add_column(col, justify="right" if col != "operator" else "left", no_wrap=True)
    table.add_column("reasons", overflow="fold", min_width=24)
    for st in counts.get("steps", []):
        reasons = "\n".join(f"{k}={v:,}" for k, v in sorted(st["reasons"].items()))
        table.add_row(
            str(st["step"]),
            st["operator"],
            f"{st['in']:,}",
            f"{st['kept']:,}",
            f"{st['dropped']:,}",
            f"{st['modified']:,}",
            reasons,
        )
    console.print(table)
    quarantine = counts.get("quarantine") or {}
    total = sum(quarantine.values())
    detail = ", ".join(f"{k}={v:,}" for k, v in sorted(quarantine.items()))
    console.print(f"quarantined records: {total:,}" + (f" ({detail})" if detail else ""))
    if counts.get("blank_lines"):
        console.print(f"blank lines skipped: {counts['blank_lines']:,}")


def print_stages(stages: list[Any], title: str = "Stages") -> None:
    """Per stage of a pipeline run (or plan): run or skip, why, and the version it made or reuses."""
    table = Table(title=title)
    for col in ("stage", "action", "why", "output"):
        table.add_column(col, overflow="fold")
    for st in stages:
        st = st if isinstance(st, dict) else st.model_dump()
        colour = "green" if st["action"] == "skip" else "yellow"
        version = f" v{st['version']}" if st.get("version") is not None else ""
        table.add_row(st["stage"], f"[{colour}]{st['action']}[/]", escape(st["reason"]), f"{st['dataset']}{version}")
    console.print(table)


def print_plan(plan: PipelinePlan) -> None:
    print_stages(list(plan.stages), title=f"Plan of pipeline {plan.pipeline}")
    runs = sum(st.action == "run" for st in plan.stages)
    console.print(f"{runs} of {len(plan.stages)} stage(s) would run; nothing was changed")


def print_mixture(mixture: Mixture | None) -> None:
    """The release's mixture: per source, the share asked for and the one achieved, and how it was served."""
    if mixture is None:
        console.print("mixture: none (each sample is served once)")
        return
    unit = mixture.unit
    total = "everything at these shares" if mixture.total is None else f"{mixture.total:,.0f}"
    table = Table(title=f"Mixture by {unit} (total {total}, seed {mixture.seed})")
    for col in ("source", "weight", "requested", "target", "available", "selected", "served", "achieved", "epochs"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for name, src in sorted(mixture.sources.items()):
        req, got = src.requested, src.achieved
        table.add_row(
            escape(name),
            f"{req.weight:g}",
            f"{100 * req.share:.2f}%",
            f"{req.target:,.0f}",
            f"{got.available[unit]:,.0f}",
            f"{got.selected[unit]:,.0f}",
            f"{got.served[unit]:,.0f}",
            f"{100 * got.share[unit]:.2f}%",
            f"{got.epochs:.3f}",
        )
    console.print(table)


def print_mixture_diff(diff: MixtureDiff | None) -> None:
    """How the mixture changed between two versions (``lineage diff``)."""
    if diff is None:
        return
    console.print(
        f"mixture: by {diff.base_unit or 'none'} (seed {diff.base_seed}) → by {diff.target_unit or 'none'} "
        f"(seed {diff.target_seed})"
    )
    table = Table(title="Mixture per source (achieved share, served, epochs)")
    for col in ("source", "weight", "share", "served", "epochs"):
        table.add_column(col, justify="left" if col == "source" else "right")

    def pair(a: float | None, b: float | None, fmt: str) -> str:
        return f"{'-' if a is None else fmt.format(a)} → {'-' if b is None else fmt.format(b)}"

    for s in diff.sources:
        table.add_row(
            escape(s.source),
            pair(s.base_weight, s.target_weight, "{:g}"),
            pair(
                None if s.base_share is None else 100 * s.base_share,
                None if s.target_share is None else 100 * s.target_share,
                "{:.2f}%",
            ),
            pair(s.base_served, s.target_served, "{:,.0f}"),
            pair(s.base_epochs, s.target_epochs, "{:.3f}"),
        )
    console.print(table)


def print_qc(qc: QcReport | None, gate: GateRecord | None) -> None:
    """A release's QC report and its publish gate (the manifest's and the release's models)."""
    if qc is None:
        console.print("QC report: none (the release was published before QC reports)")
    else:
        rules = Table(title="Quality rules")
        for col in ("operator", "rule", "dropped", "modified", "failed"):
            rules.add_column(col, justify="left" if col in ("operator", "rule") else "right")
        for r in qc.rules:
            rules.add_row(r.operator, r.rule, f"{r.dropped:,}", f"{r.modified:,}", f"{r.failed:,}")
        console.print(rules)
        sources = Table(title="Drop rate per source")
        for col in ("source", "kept", "dropped", "drop rate"):
            sources.add_column(col, justify="left" if col == "source" else "right")
        for src in qc.sources:
            sources.add_row(src.source, f"{src.kept:,}", f"{src.dropped:,}", f"{100 * src.drop_rate:.2f}%")
        console.print(sources)
        lengths = ", ".join(
            f"{b.from_}{'+' if b.to is None else '-' + str(b.to)}: {b.count:,}" for b in qc.length_histogram if b.count
        )
        console.print(f"length (chars): {lengths}")
        console.print("scripts: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in qc.scripts.items()))
        console.print(
            f"exact-duplicate rate: {100 * qc.exact_duplicate_rate:.3f}%; "
            f"rule sets: {', '.join(qc.rule_sets) or 'none'}"
        )
    if gate is not None:
        for g in gate.results:
            mark = "[green]pass[/]" if g.passed else "[red]FAIL[/]"
            console.print(f"gate {escape(g.condition)}: {g.measured} (limit {g.limit}) {mark}")
        if gate.override is not None:
            o = gate.override
            console.print(f"gate overridden by {escape(o.by)} at {o.at.isoformat()}: {escape(o.reason)}")


def print_sample_lineage(found: Any) -> None:
    """Render a ``SampleLineage`` (the service's model, the same one the HTTP API returns)."""
    src = found.source
    console.print(f"[bold]sample {found.sample_id}[/]")
    if src is not None:
        console.print(
            escape(
                f"  source: {src.uri} (dataset {src.dataset}, path {src.path}, row {src.row}, byte offset {src.offset})"
            )
        )
    for v in found.versions:
        state = "[green]in output[/]" if v.in_output else "[red]not in output[/]"
        releases = f"; this version is released as {', '.join(v.releases)}" if v.releases else ""
        console.print(f"  {v.dataset} v{v.version} (run {v.run_id[:8]}): {state}{escape(releases)}")
        for rec in v.records:
            line = f"    step {rec.step} {rec.operator}@{rec.operator_version}: {rec.verdict}"
            if rec.reason:
                line += f" ({rec.reason})"
            dup = (rec.detail or {}).get("duplicate")
            if dup and rec.verdict == "dropped":
                line += (
                    f" duplicate of {dup['kept_id']} [{dup['method']}, cluster {(dup['cluster_id'] or '')[:12]}, "
                    f"size {dup['cluster_size']}, jaccard {dup['jaccard']:.3f}]"
                )
            if rec.operator == "mixture":
                line += " " + mixture_decision((rec.detail or {}).get("rules") or [])
            console.print(escape(line))
            for rule in (rec.detail or {}).get("rules") or []:
                if rule["rule_set"] == "mixture":
                    continue
                if not rule["passed"]:
                    console.print(
                        escape(
                            f"      rule {rule['rule_set']}:{rule['rule']} value {rule['value']:.4g} "
                            f"{rule['comparison']} {rule['threshold']:.4g} failed"
                        )
                    )


def mixture_decision(rules: list[dict[str, Any]]) -> str:
    """A mixture record's decision in words: the source weight, selected or not, and the copies served."""
    by = {r["rule"]: r for r in rules}
    weight = by.get("weight", {}).get("value")
    copies = int(by.get("repeats", {}).get("value") or 0)
    served = f"served {copies}× (repeat index 0–{copies - 1})" if copies > 1 else "served once (repeat index 0)"
    return f"[weight {weight:g}, {'selected, ' + served if copies else 'not selected'}]"


def write_report(service: Service, ref: str, out: Path) -> None:
    """The release's QC report (with its contamination report) as HTML at ``out`` (also the demo's)."""
    from lineage.releases.qc import report_html  # start-up: the QC module loads deltalake and DuckDB

    guard(lambda: output_file(out))  # before the report is made
    release = guard(lambda: service.get_release(ref))
    manifest = guard(lambda: service.get_manifest(ref))
    if manifest.qc is None:
        fail(NotFound(f"release {ref} has no QC report (it was published before QC reports)"))
    gate = release.gate.model_dump(mode="json") if release.gate is not None else None
    contamination = manifest.contamination.model_dump(mode="json") if manifest.contamination is not None else None
    qc = manifest.qc.model_dump(mode="json", by_alias=True)
    summary = {
        "content_digest": release.content_digest,
        "dataset": manifest.dataset,
        "dataset_version": manifest.dataset_version,
        "table": manifest.data.table,
        "delta_version": manifest.data.delta_version,
    }
    run = guard(lambda: service.get_run(manifest.run_id)) if manifest.run_id else None
    earlier = [
        r
        for r in guard(lambda: service.list_releases(name=release.name, limit=1000)).items
        if r.ref != release.ref and r.state != "draft" and r.published_at < release.published_at
    ]
    previous = None
    if earlier:
        before = max(earlier, key=lambda r: r.published_at)
        diff = guard(lambda: service.diff(before.ref, release.ref))
        previous = {"ref": before.ref, "diff": diff.model_dump(mode="json")}
    html = report_html(
        release.ref,
        qc,
        gate,
        contamination,
        steps=manifest.quality.steps,
        quarantine=manifest.quality.quarantine,
        manifest=summary,
        operators=[{"name": op["name"], "params": op.get("params", {})} for op in run.operators] if run else [],
        previous=previous,
    )
    out.write_text(html, encoding="utf-8")


def show_release(service: Service, ref: str) -> None:
    """What ``release show`` prints (also the demo's)."""
    release = guard(lambda: service.get_release(ref))
    manifest = guard(lambda: service.get_manifest(ref))
    replicas = guard(lambda: service.list_replicas(ref))
    reads = guard(lambda: service.list_reads(ref, limit=1))
    console.print(f"[bold]{release.ref}[/] ({release.state}) digest {release.content_digest}")
    console.print(
        f"dataset {manifest.dataset} v{manifest.dataset_version} on tier {manifest.tier}: "
        f"{manifest.row_count:,} samples, {manifest.bytes:,} bytes in {len(manifest.files)} files"
    )
    for kind, pinned in release.tables.items():
        console.print(f"{kind} table {pinned.table} at Delta version {pinned.delta_version}")
    files = Table(title="Files")
    for col in ("path", "rows", "bytes", "xxh3-128"):
        files.add_column(col)
    for f in manifest.files:
        files.add_row(f.path, f"{f.rows:,}", f"{f.size:,}", f.xxh3_128)
    console.print(files)
    for r in replicas:
        when = r.verified_at.strftime("%Y-%m-%d %H:%M") if r.verified_at else "-"
        console.print(
            f"replica on {r.tier}: {r.state}{' (primary)' if r.primary else ''}, {r.table_path}, verified {when}"
        )
    used = reads.items[0].opened_at if reads.items else None  # reads come newest first
    console.print(f"last used: {used:%Y-%m-%d %H:%M}" if used else "last used: never")
    print_counts(manifest.quality.model_dump())
    print_mixture(manifest.mixture)
    print_qc(manifest.qc, release.gate)
    print_contamination(manifest.contamination, release.contamination_checks)


def print_contamination(at_publish: ContaminationReport | None, checked: dict[str, Any]) -> None:
    """The contamination report of the publish, and the checks recorded since (``lineage evalset check``)."""
    rows = [(ref, r.model_dump(), "at publish") for ref, r in (at_publish.evalsets if at_publish else {}).items()]
    rows += [(ref, r, f"checked {str(r.get('checked_at', ''))[:16]}") for ref, r in sorted(checked.items())]
    if not rows:
        console.print("contamination: not checked (no eval sets registered when it was published)")
        return
    table = Table(title="Contamination (eval items whose n-grams the release holds)")
    for col in ("eval set", "contaminated items", "share", "samples", "when"):
        table.add_column(col)
    for ref, r, when in rows:
        colour = "red" if r["contaminated_items"] else "green"
        table.add_row(
            escape(ref), f"[{colour}]{r['contaminated_items']:,}[/] of {r['items']:,}",
            f"{100 * r['share']:.2f}%", f"{r['samples']:,}", when,
        )  # fmt: skip
    console.print(table)
