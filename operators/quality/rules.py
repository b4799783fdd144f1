"""Rule outcomes: one measured value per sample, a threshold and the comparison that passes.

A rule set evaluates every rule on a whole batch (numpy arrays, one value per sample) and
returns them in its documented order; the first failing rule names the drop reason. A value of
NaN means "not applicable to this sample" (e.g. mean word length of a Chinese document): the
rule passes and lineage records a null value.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from storage.errors import Invalid

_COMPARISONS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class RuleOutcome:
    """A rule measured on a batch. The sample passes when ``value <comparison> threshold``."""

    name: str
    values: np.ndarray
    threshold: float
    comparison: str

    def __post_init__(self) -> None:
        if self.comparison not in _COMPARISONS:
            raise Invalid(f"rule {self.name}: unknown comparison {self.comparison!r}")

    def passed(self) -> np.ndarray:
        values = np.asarray(self.values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            ok = _COMPARISONS[self.comparison](values, self.threshold)
        return ok | np.isnan(values)


def rule(name: str, values: np.ndarray, threshold: float | None, comparison: str) -> RuleOutcome | None:
    """A rule outcome, or None when the rule is disabled (threshold ``None``)."""
    if threshold is None:
        return None
    return RuleOutcome(name, np.asarray(values, dtype=np.float64), float(threshold), comparison)


def enabled(outcomes: Sequence[RuleOutcome | None]) -> list[RuleOutcome]:
    return [o for o in outcomes if o is not None]


def safe_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator with NaN where the denominator is 0 (rule not applicable)."""
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


@dataclass(frozen=True)
class Evaluation:
    """What a rule set measured on a batch.

    ``new_texts`` (C4 line removal) holds the rewritten text of each sample, null where the text
    is unchanged; ``removed`` holds, per sample, the lines that were removed.
    """

    rules: list[RuleOutcome]
    new_texts: pa.Array | None = None
    removed: pa.Array | None = None

    def passed_matrix(self, n: int) -> np.ndarray:
        """Boolean (samples x rules) matrix of rule passes."""
        if not self.rules:
            return np.ones((n, 0), dtype=bool)
        return np.stack([r.passed() for r in self.rules], axis=1)
