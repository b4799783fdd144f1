"""The QC report of a dataset version (stored in its release's manifest) and the publish gate (发布门禁).

The report is computed from the columnar tables, streaming: per-rule counts from the lineage
table (``operators.quality.report.rule_counts`` per batch, then summed, in the one pass over the
lineage that also collects the dropped ids and each sample's source), length and script
distributions of the released texts, the drop rate per source, and the exact-duplicate rate left
in the output. The gate compares it with a release config's conditions.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator
from sqlalchemy.orm import Session

from lineage.catalog import DatasetVersion, Run
from lineage.catalog.queries import dataset_version
from lineage.errors import GateFailed, Invalid, validation_problems
from lineage.settings import Settings
from operators import registry
from operators.mixture import NAME as MIXTURE
from operators.threads import ordered_map
from storage import names
from storage.delta import version_dataset
from storage.tier import get_tier

LENGTH_BINS = [0, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 50_000, 100_000]


EvalSetVersionRef = Annotated[str, StringConstraints(pattern=rf"^{names.NAME_PATTERN[1:-1]}:v[0-9]{{1,9}}$")]


class GateConfig(BaseModel):
    """Conditions a release must meet to be published (unset = not checked)."""

    model_config = ConfigDict(extra="forbid")

    max_drop_rate_per_source: float | None = None
    min_samples: int | None = None
    max_exact_duplicate_rate: float | None = None
    # quality operators the release's pipeline chain must have applied, by name ("quality", "quality_c4")
    required_rule_sets: list[str] = Field(default_factory=list)
    # eval set versions the publish checks the release against (NAME:vN, NAME, collections); None: every
    # active eval set. Their contamination report is stored in the manifest whether or not a limit is set.
    check_evalsets: (
        list[Annotated[str, StringConstraints(pattern=names.VERSION_REF_PATTERN, max_length=300)]] | None
    ) = None
    # the engine the publish-time contamination check runs on (the report is the same on each)
    check_engine: Literal["local", "spark", "ray"] = "local"
    # at most this many contaminated items of an eval set version: {"mmlu-zh:v1" = 0}
    max_contaminated_items: dict[EvalSetVersionRef, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, json_schema_extra={"additionalProperties": False}
    )

    @field_validator("required_rule_sets")
    @classmethod
    def _one_name(cls, names: list[str]) -> list[str]:
        from operators.quality.names import operator_name  # start-up: operators.quality loads numba kernels

        return [operator_name(name) for name in names]  # an old rule-set name: warned, and mapped

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> GateConfig:  # type: ignore[override]
        """A gate config is always user input (a release config file, a publish request): one it
        refuses is :class:`~lineage.errors.Invalid`, not a pydantic error a caller must know."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise Invalid(f"gate config: {validation_problems(exc)}") from None


GateError = GateFailed
"""The gate's refusal is the errors tree's :class:`~lineage.errors.GateFailed` (one class; this name stays
importable): ``GateFailed.of(failures)`` names each failed condition with its measured value and limit."""


@dataclass
class _LineagePass:
    """What the report needs from a lineage table, from one read of it: its ``detail`` column (rule
    results, sources) is most of the table's bytes, so it is decoded once, not by each question."""

    rules: list[dict[str, Any]]  # per (operator, rule): dropped, modified, failed
    dropped: pa.Table  # sample_id of every sample a quality or dedupe step dropped (not the mixture)
    sources: pa.Table  # sample_id, source: each converted sample's raw source (the step-0 records)


def _read_lineage(lineage: Any) -> _LineagePass:
    # start-up: numba kernels; imported on this thread, before the batches' threads call it
    from operators.quality.report import rule_counts

    def one(batch: pa.RecordBatch) -> tuple[pa.Table, pa.Array, pa.RecordBatch] | None:
        """A batch's rule counts, dropped ids and converted samples' sources (None: nothing of them)."""
        # the mixture's decisions are not quality rules or drops: the report's "mixture" section shows them
        batch = batch.filter(pc.not_equal(batch.column("operator"), MIXTURE))
        if not batch.num_rows:
            return None
        ids = batch.column("sample_id").cast(pa.string())  # another writer's table may hold large strings
        first = pc.equal(batch.column("step"), 0)
        source = pc.struct_field(pc.struct_field(batch.column("detail"), "source"), "dataset").cast(pa.string())
        return (
            rule_counts(batch),
            ids.filter(pc.equal(batch.column("verdict"), "dropped")),
            pa.record_batch([ids.filter(first), source.filter(first)], ["sample_id", "source"]),
        )

    columns = ["sample_id", "step", "operator", "verdict", "reason", "detail"]
    # the batches in order, each on a thread of its own (Arrow's compute releases the GIL)
    done = [d for d in ordered_map(one, lineage.to_batches(columns=columns)) if d is not None]
    parts = [counts for counts, _, _ in done if counts.num_rows]
    rules: list[dict[str, Any]] = []
    if parts:
        total = (
            pa.concat_tables(parts)
            .group_by(["operator", "rule"])
            .aggregate([("dropped", "sum"), ("modified", "sum"), ("failed", "sum")])
        )
        rows = total.rename_columns(["operator", "rule", "dropped", "modified", "failed"]).to_pylist()
        rules = sorted(rows, key=lambda r: (r["operator"], r["rule"]))
    source_schema = pa.schema([("sample_id", pa.string()), ("source", pa.string())])
    return _LineagePass(
        rules,
        pa.table({"sample_id": pa.chunked_array([d for _, d, _ in done], pa.string())}),
        pa.Table.from_batches([s for _, _, s in done], source_schema) if done else source_schema.empty_table(),
    )


def _chain_operators(session: Session, run: Run | None, seen: set[str] | None = None) -> list[str]:
    """Operator names of this run and of every run that produced its input dataset versions."""
    if run is None:
        return []
    seen = seen if seen is not None else set()
    if run.id in seen:
        return []
    seen.add(run.id)
    names = [op["name"] for op in run.operators]
    for inp in run.inputs:
        if inp.get("kind") != "dataset":
            continue
        parent = dataset_version(session, inp["dataset"], inp["version"])
        names += _chain_operators(session, session.get(Run, parent.run_id), seen)
    return list(dict.fromkeys(names))


def rule_sets_of(operator_names: list[str]) -> list[str]:
    """The quality operators among ``operator_names``, by their one name: the report's ``rule_sets``,
    which a gate's ``required_rule_sets`` checks."""
    from operators.quality.base import QualityOperator  # start-up: numba kernels

    found = []
    for name in operator_names:
        try:
            cls = registry.operator_class(name)
        except Invalid:  # an operator this build no longer has
            continue
        if issubclass(cls, QualityOperator):
            found.append(cls.name)
    return found


def _length_histogram(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    lengths = pc.utf8_length(texts).to_numpy(zero_copy_only=False)
    return np.bincount(np.searchsorted(LENGTH_BINS, lengths, side="right") - 1, minlength=len(LENGTH_BINS))


def _script_totals(texts: pa.Array | pa.ChunkedArray) -> dict[str, int]:
    from operators.quality.scripts import script_counts  # start-up: numba kernels

    counts = script_counts(texts)
    return {name: int(pc.sum(counts[name]).as_py() or 0) for name in counts.column_names}


def _text_pass(data: Any) -> tuple[np.ndarray, dict[str, int]]:
    """The length histogram and the script letter counts of every text of ``data``, in one read."""
    hist = np.zeros(len(LENGTH_BINS), dtype=np.int64)
    scripts = {"han": 0, "latin": 0, "other": 0}
    for batch in data.to_batches(columns=["text"]):
        hist += _length_histogram(batch.column("text"))
        for name, count in _script_totals(batch.column("text")).items():
            scripts[name] += count
    return hist, scripts


def build_report(session: Session, dv: DatasetVersion, settings: Settings) -> dict[str, Any]:
    import duckdb  # start-up: only when a report is built

    # start-up: numba kernels. Imported here, on one thread, before the two passes below start: two threads
    # importing one package's modules at once can each be handed the other's half-initialised module.
    import operators.quality.report
    import operators.quality.scripts  # noqa: F401

    tier = get_tier(dv.tier, settings)
    data = version_dataset(tier, dv.data_path, dv.data_delta_version)
    lineage = version_dataset(tier, dv.lineage_path, dv.lineage_delta_version)
    run = session.get(Run, dv.run_id)

    # The texts' pass (kernels, mostly) runs on a second thread during the lineage's (Parquet decoding and
    # Arrow compute, mostly, its batches on threads too): both release the GIL. A release of 25,853 samples
    # curated from 254,724 (976,523 lineage records): the report took 1.47-1.51 s with the passes one after
    # the other on one thread, 1.11-1.22 s so; `lineage release publish` 2.15-2.20 s against 1.83-1.95 s.
    with ThreadPoolExecutor(1, thread_name_prefix="qc-texts") as pool:
        texts = pool.submit(_text_pass, data)
        read = _read_lineage(lineage)
        hist, scripts = texts.result()
    letters = sum(scripts.values())

    with duckdb.connect() as con:
        con.register("data", data)
        con.register("dropped_ids", read.dropped)
        con.register("converted", read.sources)
        rows, distinct = con.sql("SELECT count(*), count(DISTINCT content_hash) FROM data").fetchall()[0]
        kept = dict(con.sql("SELECT source_dataset, count(*) FROM data GROUP BY 1").fetchall())
        sources = ["SELECT sample_id, source FROM converted"]
        for k, inp in enumerate(i for i in (run.inputs if run else []) if i.get("kind") == "dataset"):
            parent = dataset_version(session, inp["dataset"], inp["version"])
            if parent.purged_by is not None:
                continue  # a takedown purged it: its samples' sources are not known any more
            con.register(
                f"input_{k}",
                version_dataset(get_tier(parent.tier, settings), parent.data_path, parent.data_delta_version),
            )
            sources.append(f"SELECT sample_id, source_dataset AS source FROM input_{k}")
        dropped = dict(
            con.sql(
                "WITH dropped AS (SELECT DISTINCT sample_id FROM dropped_ids), "
                f"src AS ({' UNION ALL '.join(sources)}) "
                "SELECT source, count(DISTINCT sample_id) FROM dropped JOIN src USING (sample_id) GROUP BY 1"
            ).fetchall()
        )
    per_source = []
    for source in sorted(set(kept) | set(dropped)):
        k, d = kept.get(source, 0), dropped.get(source, 0)
        per_source.append({"source": source, "kept": k, "dropped": d, "drop_rate": d / (k + d) if k + d else 0.0})
    operators = _chain_operators(session, run)
    return {
        "samples": rows,
        "rules": read.rules,
        "length_histogram": [
            {"from": lo, "to": (LENGTH_BINS[i + 1] if i + 1 < len(LENGTH_BINS) else None), "count": int(c)}
            for i, (lo, c) in enumerate(zip(LENGTH_BINS, hist, strict=True))
        ],
        "scripts": {name: (count / letters if letters else 0.0) for name, count in scripts.items()},
        "script_letters": scripts,
        "sources": per_source,
        "exact_duplicate_rate": (rows - distinct) / rows if rows else 0.0,
        "operators": operators,
        "rule_sets": rule_sets_of(operators),
        "mixture": mixture_report(run.counts["mixture"]) if run and (run.counts or {}).get("mixture") else None,
    }


def mixture_report(mixture: dict[str, Any]) -> dict[str, Any]:
    """The requested and achieved mixture per source, in the mixture's unit and in every other one."""
    unit = mixture["unit"]
    rows = []
    for name, src in sorted(mixture["sources"].items()):
        req, got = src["requested"], src["achieved"]
        rows.append(
            {
                "source": name,
                "weight": req["weight"],
                "requested_share": req["share"],
                "target": req["target"],
                "available": got["available"][unit],
                "selected": got["selected"][unit],
                "served": got["served"][unit],
                "achieved_share": got["share"][unit],
                "epochs": got["epochs"],
                "shares": got["share"],
            }
        )
    return {"unit": unit, "total": mixture["total"], "seed": mixture["seed"], "sources": rows}


def successor_report(
    session: Session,
    dv: DatasetVersion,
    settings: Settings,
    base: dict[str, Any],
    removed: pa.Table,
    records: pa.Table,
) -> dict[str, Any] | None:
    """The report of ``dv``, a takedown's successor, from its predecessor's report ``base``: the same
    numbers without the ``removed`` rows (``text``, ``content_hash``, ``source_dataset``) and with the
    takedown's lineage ``records``. It reads only the removed rows and the successor's ``content_hash``
    column, where :func:`build_report` reads every text and the whole lineage: a takedown of a thousand
    samples must not cost a pass over a large release. ``base`` must carry ``script_letters`` (reports
    since issue #22); an older one gives None, and the caller builds the report in full."""
    from operators.quality.report import rule_counts  # start-up: the quality package

    if "script_letters" not in base:
        return None
    texts = removed.column("text")
    hist = np.array([b["count"] for b in base["length_histogram"]], dtype=np.int64) - _length_histogram(texts)
    gone = _script_totals(texts)
    scripts = {name: base["script_letters"][name] - gone.get(name, 0) for name in base["script_letters"]}
    letters = sum(scripts.values())
    rows = base["samples"] - removed.num_rows
    distinct_before = round(base["samples"] * (1 - base["exact_duplicate_rate"]))
    hashes = pc.unique(removed.column("content_hash"))
    if base["exact_duplicate_rate"] == 0:  # every text was unique, so none of the removed ones is left
        distinct = distinct_before - len(hashes)
    else:  # which removed texts still have a copy: one pass over the successor's hashes
        data = version_dataset(get_tier(dv.tier, settings), dv.data_path, dv.data_delta_version)
        still = data.to_table(columns=["content_hash"], filter=pc.field("content_hash").isin(hashes))
        distinct = distinct_before - (len(hashes) - len(pc.unique(still.column("content_hash"))))
    per_removed = {c["values"]: c["counts"] for c in pc.value_counts(removed.column("source_dataset")).to_pylist()}
    per_source = []
    for src in base["sources"]:
        n = per_removed.pop(src["source"], 0)
        k, d = src["kept"] - n, src["dropped"] + n
        per_source.append(
            {"source": src["source"], "kept": k, "dropped": d, "drop_rate": d / (k + d) if k + d else 0.0}
        )
    rules = {(r["operator"], r["rule"]): dict(r) for r in base["rules"]}
    for r in rule_counts(records).to_pylist():
        found = rules.setdefault((r["operator"], r["rule"]), {**r, "dropped": 0, "modified": 0, "failed": 0})
        for key in ("dropped", "modified", "failed"):
            found[key] += r[key]
    operators = _chain_operators(session, session.get(Run, dv.run_id))
    return {
        **base,
        "samples": rows,
        "rules": sorted(rules.values(), key=lambda r: (r["operator"], r["rule"])),
        "length_histogram": [{**b, "count": int(c)} for b, c in zip(base["length_histogram"], hist, strict=True)],
        "scripts": {name: (count / letters if letters else 0.0) for name, count in scripts.items()},
        "script_letters": scripts,
        "sources": per_source,
        "exact_duplicate_rate": (rows - distinct) / rows if rows else 0.0,
        "operators": operators,
        # the takedown step adds no rule set, and resolving the chain's names would load every rule set
        "rule_sets": base["rule_sets"] if "rule_sets" in base else rule_sets_of(operators),
    }


def evaluate_gate(report: dict[str, Any], gate: GateConfig) -> list[dict[str, Any]]:
    """Every configured condition with its measured value and whether it passed."""
    results = []

    def check(condition: str, measured: Any, limit: Any, passed: bool) -> None:
        results.append({"condition": condition, "measured": measured, "limit": limit, "passed": passed})

    if gate.min_samples is not None:
        check("min_samples", report["samples"], gate.min_samples, report["samples"] >= gate.min_samples)
    if gate.max_exact_duplicate_rate is not None:
        rate = round(report["exact_duplicate_rate"], 6)
        check("max_exact_duplicate_rate", rate, gate.max_exact_duplicate_rate, rate <= gate.max_exact_duplicate_rate)
    if gate.max_drop_rate_per_source is not None:
        for src in report["sources"]:
            rate = round(src["drop_rate"], 6)
            check(
                f"max_drop_rate_per_source[{src['source']}]",
                rate,
                gate.max_drop_rate_per_source,
                rate <= gate.max_drop_rate_per_source,
            )
    contamination = (report.get("contamination") or {}).get("evalsets", {})
    for ref, limit in sorted(gate.max_contaminated_items.items()):
        found = contamination.get(ref)
        measured = found["contaminated_items"] if found is not None else "not checked"
        check(f"max_contaminated_items[{ref}]", measured, limit, found is not None and measured <= limit)
    for rule_set in gate.required_rule_sets:
        check(
            f"required_rule_set[{rule_set}]",
            "applied" if rule_set in report["rule_sets"] else "not applied",
            "applied",
            rule_set in report["rule_sets"],
        )
    return results


CHARTS_JS = Path(__file__).with_name("qc_report.js")
"""The QC report's one rendering (charts and tables), our own ES module: :func:`report_html` inlines it, and
the web view's release page imports it (``api.web`` serves this file), so both draw the same report."""

REPORT_CSS = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
    "padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
    ".qc-charts{display:flex;flex-wrap:wrap;gap:1em}.qc-title{font-weight:bold;font-size:14px}"
    ".qc-label,.qc-value{font-size:12px}.qc-bar{fill:#4a7fb5}"
)


def report_html(
    ref: str,
    report: dict[str, Any],
    gate: dict[str, Any] | None,
    contamination: dict[str, Any] | None = None,
    *,
    steps: list[dict[str, Any]] | None = None,
    quarantine: dict[str, Any] | None = None,
    manifest: dict[str, Any] | None = None,
    operators: list[dict[str, Any]] | None = None,
    previous: dict[str, Any] | None = None,
) -> str:
    """A self-contained HTML page (no network): the report as data, drawn by :data:`CHARTS_JS` inlined.
    ``steps``/``quarantine``: the manifest's per-step counts (the funnel); ``manifest``: digest, dataset
    version, Delta table and version for the summary; ``operators``: the run's (name, params: each rule's
    threshold); ``previous``: ``{ref, diff}``, the comparison with the previous release of the same name."""
    data = {
        "ref": ref,
        "report": report,
        "gate": gate,
        "contamination": contamination,
        "steps": steps or [],
        "quarantine": quarantine or {},
        "manifest": manifest,
        "operators": operators or [],
        "previous": previous,
    }
    payload = json.dumps(data, ensure_ascii=True).replace("<", "\\u003c")  # no "</script>" inside the script
    script = CHARTS_JS.read_text(encoding="utf-8")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>QC report {escape(ref)}</title>"
        f"<style>{REPORT_CSS}</style></head><body><h1>QC report: {escape(ref)}</h1>"
        "<div id='qc'><noscript>This report draws its charts and tables with JavaScript.</noscript></div>"
        f"<script type='module'>{script}\nrenderQc(document.getElementById('qc'), {payload});\n"
        "performance.mark('ready');</script></body></html>"
    )


__all__ = ["GateConfig", "GateError", "build_report", "evaluate_gate", "report_html", "successor_report"]
