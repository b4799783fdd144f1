"""Quality operators: heuristic rule sets over Arrow batches, one lineage record per sample.

Each rule set is a :class:`~operators.quality.base.QualityOperator` (a ``MapOperator``) in its own
module; ``RULE_SETS`` maps the rule-set name to its class, ``OPERATORS`` the operator name, and
:func:`quality_operator` builds one from a pipeline's dict of parameters.
"""

from __future__ import annotations

from typing import Any

from operators.quality.base import QualityOperator
from operators.quality.c4 import C4Params, C4Quality
from operators.quality.default import DefaultParams, DefaultQuality
from operators.quality.fineweb import FineWebParams, FineWebQuality
from operators.quality.gopher_quality import GopherQuality, GopherQualityParams
from operators.quality.gopher_repetition import GopherRepetition, GopherRepetitionParams
from operators.quality.report import rule_counts
from operators.quality.scripts import script_counts, script_distribution
from operators.quality.zh import ChineseQuality, ZhParams
from storage.errors import Invalid

RULE_SETS: dict[str, type[QualityOperator]] = {
    cls.rule_set: cls
    for cls in (DefaultQuality, GopherQuality, GopherRepetition, C4Quality, FineWebQuality, ChineseQuality)
}

# The same classes keyed by operator name ("quality", "quality_c4", ...), for a runner's registry.
OPERATORS: dict[str, type[QualityOperator]] = {cls.name: cls for cls in RULE_SETS.values()}


def quality_operator(rule_set: str = "default", params: dict[str, Any] | None = None) -> QualityOperator:
    """Build a rule set's operator from plain parameters (unknown names are refused)."""
    try:
        cls = RULE_SETS[rule_set]
    except KeyError:
        raise Invalid(f"unknown quality rule set {rule_set!r}; known: {sorted(RULE_SETS)}") from None
    return cls(params)


__all__ = [
    "OPERATORS",
    "RULE_SETS",
    "C4Params",
    "C4Quality",
    "ChineseQuality",
    "DefaultParams",
    "DefaultQuality",
    "FineWebParams",
    "FineWebQuality",
    "GopherQuality",
    "GopherQualityParams",
    "GopherRepetition",
    "GopherRepetitionParams",
    "QualityOperator",
    "quality_operator",
    "rule_counts",
    "script_counts",
    "script_distribution",
    "ZhParams",
]
