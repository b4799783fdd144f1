"""The ``lineage`` command line, one module per verb or verb group.

``main.py`` is the entry point (the console script and ``python -m lineage``): it imports the command
modules and puts each verb on the app; nothing else imports them, and nothing registers on import. The
command modules, named after their verbs: ``run`` (``ingest``, ``run``), ``release``, ``tier``,
``sample``, ``export``, ``dedupe``, ``gc``, ``datasets``, ``demo``,
``serve`` and ``tokens`` (``token``). What they share: ``app`` (consoles, settings, catalog, and
``guard``, which turns a refusal into one line and the exit code of its row in
:data:`lineage.errors.TABLE`), ``render`` (tables and lineage printing) and ``progress`` (progress bars).

Importing the command modules is what ``lineage --help`` costs, so they import SQLAlchemy, DuckDB,
deltalake, numba, FastAPI and uvicorn only inside the verbs that need them (each such import says so
with a ``# start-up:`` comment).
"""

import warnings


def main() -> None:
    """The entry point ``lineage.cli:main`` that console scripts installed before the CLI became a package
    still call, until ``pip install`` rewrites them to ``lineage.cli.main:main``. Importing the entry
    module rebinds this name to that module (as for any submodule), so this serves only such a script."""
    warnings.warn(
        "this `lineage` script calls lineage.cli:main; reinstall the package (pip install -e .) so it calls "
        "lineage.cli.main:main",
        DeprecationWarning,
        stacklevel=2,
    )
    # start-up: importing any lineage.cli module must not import every command module
    from lineage.cli.main import main as entry

    entry()
