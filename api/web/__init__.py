"""The web view: offline API docs and the pages at ``/``, served by the API's own app (no second server).

The pages are static HTML shells and our own ES modules; they read the same JSON API (``/api/v1``)
with the same tokens, so a page shows nothing an API caller could not see.
"""

from __future__ import annotations

from fastapi import FastAPI

from api.web import docs, pages


def install(app: FastAPI) -> None:
    """Put ``/docs``, ``/redoc`` and the pages on ``app`` (none of them in the OpenAPI document)."""
    docs.install(app)
    pages.install(app)
