"""The one operator base of every quality rule set.

A rule set only measures (``evaluate``: text column in, :class:`Evaluation` out). This base turns
the measurements into the operator contract: the samples that continue (kept, or modified with a
new ``content_hash``) and exactly one lineage record per input sample, whose ``reason`` is the
first failing rule (``"<name>:<rule>"``, the operator's one name: :mod:`operators.quality.names`)
and whose ``detail.rules`` holds every evaluated rule's value, threshold and verdict.
"""

from __future__ import annotations

import logging
from abc import abstractmethod

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from operators.base import MapOperator, OperatorOutput
from operators.lineage_records import (
    MODIFICATION_DETAIL,
    RULE_RESULT,
    Verdict,
    detail_struct,
    lineage_batch,
)
from operators.quality.rules import Evaluation
from operators.quality.token_reuse import note_kept
from operators.schema import content_hash

log = logging.getLogger(__name__)


class QualityOperator(MapOperator):
    """Base of the quality rule sets: subclasses set ``name`` (their one name) and implement ``evaluate``."""

    # a rule set measures each batch on its own, in numba kernels and Arrow compute
    concurrent = True

    @abstractmethod
    def evaluate(self, texts: pa.Array) -> Evaluation:
        """Measure every enabled rule on ``texts`` (a string array, one per sample)."""

    def apply(self, batch: pa.RecordBatch) -> OperatorOutput:
        texts = batch.column("text")
        n = batch.num_rows
        evaluation = self.evaluate(texts)
        passed = evaluation.passed_matrix(n)
        dropped = ~passed.all(axis=1)

        modified = np.zeros(n, dtype=bool)
        if evaluation.new_texts is not None:
            modified = ~dropped & evaluation.new_texts.is_valid().to_numpy(zero_copy_only=False)

        verdicts = np.where(
            dropped, Verdict.DROPPED.value, np.where(modified, Verdict.MODIFIED.value, Verdict.KEPT.value)
        )
        reasons = self._reasons(evaluation, passed, dropped, modified)
        rules = self._rule_results(evaluation, passed, n)
        modification, samples = self._apply_modifications(batch, evaluation, modified)
        detail = detail_struct(n, rules=rules, modification=modification)
        lineage = lineage_batch(
            operator=self.name,
            operator_version=self.version,
            sample_ids=batch.column("sample_id"),
            verdicts=pa.array(verdicts, pa.string()),
            reasons=reasons,
            detail=detail,
        )
        log.debug("%s: %d in, %d dropped, %d modified", self.name, n, int(dropped.sum()), int(modified.sum()))
        kept = samples.filter(pa.array(~dropped))
        if not modified.any():  # the survivors' texts are a selection of these: a next rule set's tokens too
            note_kept(texts, kept.column("text"), np.flatnonzero(~dropped))
        return OperatorOutput(samples=kept, lineage=lineage)

    def _reasons(
        self, evaluation: Evaluation, passed: np.ndarray, dropped: np.ndarray, modified: np.ndarray
    ) -> pa.Array:
        """The first failing rule of a dropped sample; ``<name>:lines_removed`` when modified."""
        names = [f"{self.name}:{r.name}" for r in evaluation.rules] + [
            f"{self.name}:lines_removed",
            None,
        ]
        first_failing = np.argmax(~passed, axis=1) if passed.shape[1] else np.zeros(len(dropped), np.int64)
        k = len(evaluation.rules)
        index = np.where(dropped, first_failing, np.where(modified, k, k + 1))
        return pa.array(names, pa.string()).take(pa.array(index))

    def _rule_results(self, evaluation: Evaluation, passed: np.ndarray, n: int) -> pa.Array:
        """detail.rules: a list of RULE_RESULT per sample, in the rule set's order."""
        k = len(evaluation.rules)
        if k == 0:
            values = np.empty(0)
        else:
            values = np.stack([np.asarray(r.values, np.float64) for r in evaluation.rules], axis=1).ravel()
        per_rule = pa.array(np.tile(np.arange(k), n))  # sample-major: rule j of sample i at i * k + j
        results = pa.StructArray.from_arrays(
            [
                pa.repeat(pa.scalar(self.name), n * k),  # RULE_RESULT.rule_set: the operator's name
                pa.array([r.name for r in evaluation.rules], pa.string()).take(per_rule),
                pa.array(values, pa.float64(), from_pandas=True),  # NaN -> null: not applicable
                pa.array([r.threshold for r in evaluation.rules], pa.float64()).take(per_rule),
                pa.array([r.comparison for r in evaluation.rules], pa.string()).take(per_rule),
                pa.array(passed.ravel(), pa.bool_()),
            ],
            fields=list(RULE_RESULT),
        )
        offsets = pa.array(np.arange(n + 1, dtype=np.int32) * k, pa.int32())
        return pa.ListArray.from_arrays(offsets, results, type=pa.list_(RULE_RESULT))

    def _apply_modifications(
        self, batch: pa.RecordBatch, evaluation: Evaluation, modified: np.ndarray
    ) -> tuple[pa.Array, pa.RecordBatch]:
        """Rewrite modified samples' text and hash; build detail.modification."""
        n = batch.num_rows
        if not modified.any():
            return pa.nulls(n, MODIFICATION_DETAIL), batch
        assert evaluation.new_texts is not None and evaluation.removed is not None
        mask = pa.array(modified)
        old_text = batch.column("text")
        old_hash = batch.column("content_hash")
        new_text = pc.if_else(mask, evaluation.new_texts, old_text)
        changed = new_text.filter(mask).to_pylist()
        new_hash = pc.replace_with_mask(old_hash, mask, pa.array([content_hash(t) for t in changed], pa.string()))
        removed = evaluation.removed
        modification = pa.StructArray.from_arrays(
            [old_hash, new_hash, pc.list_value_length(removed).cast(pa.int64()), removed],
            fields=list(MODIFICATION_DETAIL),
            mask=pa.array(~modified),
        )
        schema = batch.schema
        columns = list(batch.columns)
        columns[schema.get_field_index("text")] = new_text
        columns[schema.get_field_index("content_hash")] = new_hash
        return modification, pa.RecordBatch.from_arrays(columns, schema=schema)
