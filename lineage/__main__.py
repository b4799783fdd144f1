"""``python -m lineage`` is the ``lineage`` command."""

from lineage.cli.main import main

if __name__ == "__main__":  # a spawned worker process (convert's parsers) imports this module too
    main()
