"""``python -m lineage`` is the ``lineage`` command."""

from lineage.cli import main

main()
