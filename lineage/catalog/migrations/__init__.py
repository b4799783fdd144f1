"""Alembic migrations of the catalog. ``HEAD`` lets ``Catalog`` skip Alembic when already current."""

HEAD = "0011_stages"
