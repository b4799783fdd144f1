"""The service's error names, kept for the modules and callers that import them from here.

The tree and its one table are :mod:`lineage.errors`: ``ServiceError`` is its root ``LineageError`` and
``BadRequest`` its ``Invalid``.
"""

from __future__ import annotations

from lineage.errors import Conflict, Forbidden, NotFound, Unauthorized
from lineage.errors import Invalid as BadRequest
from lineage.errors import LineageError as ServiceError

__all__ = ["BadRequest", "Conflict", "Forbidden", "NotFound", "ServiceError", "Unauthorized"]
