"""``python -m lineage`` is the ``lineage`` command."""

from lineage.cli.main import main

main()
