"""Deprecated: the lineage record schema moved to :mod:`operators.lineage_records`.

This path keeps working for one release and warns on import. Import from
``operators.lineage_records`` instead.
"""

from __future__ import annotations

import warnings

from operators.lineage_records import (
    DETAIL,
    DUPLICATE_DETAIL,
    LINEAGE_SCHEMA,
    MODIFICATION_DETAIL,
    RULE_RESULT,
    SOURCE_DETAIL,
    Verdict,
    detail_struct,
    lineage_batch,
    stamp,
)

__all__ = [
    "DETAIL",
    "DUPLICATE_DETAIL",
    "LINEAGE_SCHEMA",
    "MODIFICATION_DETAIL",
    "RULE_RESULT",
    "SOURCE_DETAIL",
    "Verdict",
    "detail_struct",
    "lineage_batch",
    "stamp",
]

warnings.warn(
    "lineage.records is deprecated and will be removed in the next release; import operators.lineage_records",
    DeprecationWarning,
    stacklevel=2,
)
