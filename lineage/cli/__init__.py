"""The ``lineage`` command line, one module per verb or verb group.

``main.py`` is the entry point (the console script and ``python -m lineage``): it imports the command
modules and puts each verb on the app; nothing else imports them, and nothing registers on import. The
command modules, named after their verbs: ``run`` (``ingest``, ``run``), ``release``, ``tier``,
``sample``, ``export``, ``dedupe`` (the work in ``dedupe_files``), ``gc``, ``datasets``, ``demo``,
``serve`` and ``tokens`` (``token``). What they share: ``app`` (consoles, settings, catalog, and
``guard``, which turns a refusal into one line and the exit code of its row in
:data:`lineage.errors.TABLE`), ``render`` (tables and lineage printing) and ``progress`` (progress bars).

Importing the command modules is what ``lineage --help`` costs, so they import SQLAlchemy, DuckDB,
deltalake, numba, FastAPI and uvicorn only inside the verbs that need them (each such import says so
with a ``# start-up:`` comment).
"""
