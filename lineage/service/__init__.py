"""The service layer: one implementation of every API operation, over the catalog and DuckDB.

The HTTP routers (``api/``), the in-process SDK client (``lineage.Client()``) and the CLI all call
:class:`lineage.service.core.Service`; none of them holds logic of its own. The operations on a user's
files, which touch no catalog, are :class:`lineage.service.files.FileOperations`, which ``Service``
inherits; ``lineage dedupe`` builds that part alone, so it starts without the catalog stack.
"""
