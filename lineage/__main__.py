"""``python -m lineage`` is the ``lineage`` command."""

from lineage.cli.app import main

main()
