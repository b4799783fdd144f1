"""The one name of each quality operator, and the rule-set names releases before it used.

A quality operator has one name: the one pipeline files use (``quality``, ``quality_c4``, ...). It
prefixes every ``reason`` it records (``quality_c4:min_num_sentences``), fills ``detail.rules``'
``rule_set`` field, keys the QC report and is what a gate requires. Older releases recorded a
separate rule-set name (``default:min_words``); :data:`LEGACY_NAMES` maps those so their lineage
still reads under today's names, and a user who still writes one gets a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings

# rule-set name before issue #16 -> the operator's name
LEGACY_NAMES: dict[str, str] = {
    "default": "quality",
    "gopher_quality": "quality_gopher",
    "gopher_repetition": "quality_gopher_repetition",
    "c4": "quality_c4",
    "fineweb": "quality_fineweb",
    "zh": "quality_zh",
}


def operator_name(name: str, *, stacklevel: int = 2) -> str:
    """``name`` as a user wrote it (a gate's required operators, ``quality_operator(...)``): an old
    rule-set name becomes the operator's name, with a ``DeprecationWarning``; others pass unchanged."""
    new = LEGACY_NAMES.get(name)
    if new is None:
        return name
    warnings.warn(
        f"the quality rule set {name!r} is now named after its operator: {new!r} (the old name will go)",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return new


def current_rule(rule: str) -> str:
    """A stored ``<name>:<rule>`` (a lineage ``reason``, a QC report row) under today's operator name:
    ``default:min_words`` -> ``quality:min_words``. Stored data is not the reader's doing: no warning."""
    prefix, sep, rest = rule.partition(":")
    return f"{LEGACY_NAMES[prefix]}{sep}{rest}" if sep and prefix in LEGACY_NAMES else rule
