"""``decontaminate``: drop (or flag) samples that contain eval items, with the evidence in their lineage.

Contract (a :class:`~operators.base.MapOperator`): one lineage record per sample, in input order. Every
sample checked gets ``detail.contamination``: the eval set versions checked, whether it is contaminated,
and one match per item it shares an n-gram with (eval set version, item id, the item's matched n-grams
over its n-grams, the sample's matched n-grams over its n-grams; see :mod:`operators.contamination.index`).

A sample is **contaminated** when some match's coverage is above ``threshold``: the item's coverage
(``coverage = "item"``, the default: how much of the item the sample holds) or the sample's
(``coverage = "sample"``: how much of the sample is the item). With the default threshold 0, one shared
n-gram is enough, as in GPT-3's check. ``action = "drop"`` drops it (reason ``contaminated``);
``"flag"`` keeps it, marked.

The eval items come from ``sources``, the Delta versions holding them, which the runner fills in from the
catalog for the eval sets the pipeline names (``evalsets``; none named: every registered one), so the run
records exactly which versions it checked. The index is built once per process, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa

from operators.base import MapOperator, OperatorOutput, Params
from operators.contamination.index import EvalIndex, Probe
from operators.contamination.params import CHAR_NGRAM, WORD_NGRAM, NgramParams
from operators.lineage_records import CONTAMINATION_DETAIL, Verdict, detail_struct, lineage_batch
from storage.config import TierConfig
from storage.delta import version_dataset
from storage.errors import Invalid
from storage.tier import Tier


@dataclass(frozen=True)
class DecontaminateParams(Params):
    evalsets: tuple[str, ...] = ()  # NAME:vN or NAME (its latest); empty: every registered eval set
    action: Literal["drop", "flag"] = "drop"
    threshold: float = 0.0
    coverage: Literal["item", "sample"] = "item"
    word_ngram: int = WORD_NGRAM
    char_ngram: int = CHAR_NGRAM
    script: Literal["auto", "latin", "cjk"] = "auto"
    cjk_ratio: float = 0.0
    # filled in by the runner: {"evalset": NAME:vN, "tier": TierConfig JSON, "path": ..., "version": N}
    sources: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.action not in ("drop", "flag") or self.coverage not in ("item", "sample"):
            raise Invalid(
                f"action must be drop or flag and coverage item or sample, got {self.action!r}, {self.coverage!r}"
            )
        if not 0.0 <= self.threshold < 1.0:
            raise Invalid(f"threshold must be in [0, 1), got {self.threshold}")
        self.ngrams()  # checks the n-gram settings
        object.__setattr__(self, "evalsets", tuple(self.evalsets))
        object.__setattr__(self, "sources", tuple(dict(s) for s in self.sources))

    def ngrams(self) -> NgramParams:
        return NgramParams(self.word_ngram, self.char_ngram, self.script, self.cjk_ratio)


def load_index(sources: tuple[dict[str, Any], ...], params: NgramParams) -> EvalIndex:
    """The items of each eval set version, read from its pinned Delta version."""
    index = EvalIndex(params)
    for src in sources:
        tier = Tier(TierConfig.model_validate_json(src["tier"]))
        items = version_dataset(tier, src["path"], src["version"]).to_table(columns=["sample_id", "text"])
        index.add(src["evalset"], items.column("sample_id").to_pylist(), items.column("text"))
    return index


def is_contaminated(probe: Probe, threshold: float, coverage: str) -> bool:
    for m in probe.matches:
        share = m.item_ngrams / m.item.ngrams if coverage == "item" else m.sample_windows / max(probe.sample_ngrams, 1)
        if share > threshold:
            return True
    return False


def contamination_details(probes: list[Probe], checked: list[str], flags: list[bool]) -> pa.StructArray:
    rows = [
        {
            "checked": checked,
            "contaminated": flag,
            "matches": [
                {
                    "evalset": m.item.evalset,
                    "item_id": m.item.item_id,
                    "matched_item_ngrams": m.item_ngrams,
                    "item_ngrams": m.item.ngrams,
                    "matched_sample_ngrams": m.sample_windows,
                    "sample_ngrams": p.sample_ngrams,
                }
                for m in p.matches
            ],
        }
        for p, flag in zip(probes, flags, strict=True)
    ]
    return pa.array(rows, type=CONTAMINATION_DETAIL)


class Decontaminate(MapOperator):
    name = "decontaminate"
    version = "1"
    Params = DecontaminateParams

    def __init__(self, params: DecontaminateParams | dict | None = None) -> None:
        super().__init__(params)
        self._index: EvalIndex | None = None

    def __getstate__(self) -> dict[str, Any]:  # shipped to Spark/Ray workers without the index
        return {**self.__dict__, "_index": None}

    @property
    def index(self) -> EvalIndex:
        if self._index is None:
            p: DecontaminateParams = self.params  # type: ignore[assignment]
            if p.evalsets and not p.sources:
                raise Invalid("decontaminate: its eval sets were not resolved (run it through a pipeline run)")
            self._index = load_index(p.sources, p.ngrams())
        return self._index

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        p: DecontaminateParams = self.params  # type: ignore[assignment]
        probes = self.index.probe(batch.column("text"))
        flags = [is_contaminated(probe, p.threshold, p.coverage) for probe in probes]
        checked = [s["evalset"] for s in p.sources]
        drop = p.action == "drop"
        verdicts = [Verdict.DROPPED.value if f and drop else Verdict.KEPT.value for f in flags]
        n = batch.num_rows
        lineage = lineage_batch(
            operator=self.name,
            operator_version=self.version,
            sample_ids=batch.column("sample_id"),
            verdicts=verdicts,
            reasons=["contaminated" if f else None for f in flags],
            detail=detail_struct(n, contamination=contamination_details(probes, checked, flags)),
        )
        keep = pa.array([not (f and drop) for f in flags])
        return OperatorOutput(batch.filter(keep), lineage)
