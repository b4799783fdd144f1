"""Quality operators: heuristic rule sets over Arrow batches, one lineage record per sample.

Each rule set is a :class:`~operators.quality.base.QualityOperator` (a ``MapOperator``) in its own
module, known by one name, its operator name (``quality``, ``quality_c4``, ...; see
:mod:`operators.quality.names`): ``OPERATORS`` maps it to the class, and :func:`quality_operator`
builds one from a pipeline's dict of parameters.

The names below are loaded on first use (PEP 562), not when the package is imported: several rule sets
compile numba kernels, and code that needs only the report helpers (a takedown's successor report, the
service) must not pay numba's import (about 0.4 s) for them.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from operators.quality.names import LEGACY_NAMES, operator_name
from storage.errors import Invalid

if TYPE_CHECKING:
    from operators.quality.base import QualityOperator

# Each exported name -> the module that defines it.
_HOMES = {
    "QualityOperator": "base",
    "C4Params": "c4",
    "C4Quality": "c4",
    "DefaultParams": "default",
    "DefaultQuality": "default",
    "FineWebParams": "fineweb",
    "FineWebQuality": "fineweb",
    "GopherQuality": "gopher_quality",
    "GopherQualityParams": "gopher_quality",
    "GopherRepetition": "gopher_repetition",
    "GopherRepetitionParams": "gopher_repetition",
    "rule_counts": "report",
    "script_counts": "scripts",
    "script_distribution": "scripts",
    "ChineseQuality": "zh",
    "ZhParams": "zh",
}
_RULE_SETS = ("DefaultQuality", "GopherQuality", "GopherRepetition", "C4Quality", "FineWebQuality", "ChineseQuality")


def _operators() -> dict[str, type[QualityOperator]]:
    """Each class by its one name ("quality", "quality_c4", ...), for the operator registry."""
    found = globals().get("OPERATORS")
    if found is None:
        found = {cls.name: cls for cls in (__getattr__(name) for name in _RULE_SETS)}
        globals()["OPERATORS"] = found
    return found


def quality_operator(name: str = "quality", params: dict[str, Any] | None = None) -> QualityOperator:
    """Build a quality operator by name from plain parameters (unknown names are refused; an old
    rule-set name such as ``"c4"`` still works, with a ``DeprecationWarning``)."""
    operators = _operators()
    try:
        cls = operators[operator_name(name)]
    except KeyError:
        raise Invalid(f"unknown quality operator {name!r}; known: {sorted(operators)}") from None
    return cls(params)


def __getattr__(attr: str) -> Any:
    if attr in _HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{_HOMES[attr]}"), attr)
        globals()[attr] = value
        return value
    if attr == "OPERATORS":
        return _operators()
    if attr == "RULE_SETS":  # the classes by their old rule-set names, before each had one name
        warnings.warn("RULE_SETS is deprecated: use OPERATORS (keyed by operator name)", DeprecationWarning, 2)
        return {old: _operators()[new] for old, new in LEGACY_NAMES.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = [  # noqa: F822  (each is loaded on first use, by __getattr__)
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
