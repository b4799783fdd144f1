"""The ``lineage`` command line (being split into one module per command group, issue #16)."""
