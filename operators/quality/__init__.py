"""Quality operators: heuristic rule sets over Arrow batches, one lineage record per sample.

Each rule set is a :class:`~operators.quality.base.QualityOperator` (a ``MapOperator``) in its own
module, known by one name, its operator name (``quality``, ``quality_c4``, ...; see
:mod:`operators.quality.names`): ``OPERATORS`` maps it to the class, and :func:`quality_operator`
builds one from a pipeline's dict of parameters.
"""

from __future__ import annotations

import warnings
from typing import Any

from operators.quality.base import QualityOperator
from operators.quality.c4 import C4Params, C4Quality
from operators.quality.default import DefaultParams, DefaultQuality
from operators.quality.fineweb import FineWebParams, FineWebQuality
from operators.quality.gopher_quality import GopherQuality, GopherQualityParams
from operators.quality.gopher_repetition import GopherRepetition, GopherRepetitionParams
from operators.quality.names import LEGACY_NAMES, operator_name
from operators.quality.report import rule_counts
from operators.quality.scripts import script_counts, script_distribution
from operators.quality.zh import ChineseQuality, ZhParams
from storage.errors import Invalid

# Each class by its one name ("quality", "quality_c4", ...), for the operator registry.
OPERATORS: dict[str, type[QualityOperator]] = {
    cls.name: cls
    for cls in (DefaultQuality, GopherQuality, GopherRepetition, C4Quality, FineWebQuality, ChineseQuality)
}


def quality_operator(name: str = "quality", params: dict[str, Any] | None = None) -> QualityOperator:
    """Build a quality operator by name from plain parameters (unknown names are refused; an old
    rule-set name such as ``"c4"`` still works, with a ``DeprecationWarning``)."""
    try:
        cls = OPERATORS[operator_name(name)]
    except KeyError:
        raise Invalid(f"unknown quality operator {name!r}; known: {sorted(OPERATORS)}") from None
    return cls(params)


def __getattr__(attr: str) -> Any:
    if attr == "RULE_SETS":  # the classes by their old rule-set names, before each had one name
        warnings.warn("RULE_SETS is deprecated: use OPERATORS (keyed by operator name)", DeprecationWarning, 2)
        return {old: OPERATORS[new] for old, new in LEGACY_NAMES.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = [
    "OPERATORS",
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
