"""``/docs`` (Swagger UI) and ``/redoc`` with their scripts served from an installed package.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so on a machine without internet they are
blank. The PyPI package ``fastapi-offline`` ships both bundles (``swagger-ui-bundle.js``,
``swagger-ui.css``, ``redoc.standalone.js``); we mount its ``static`` folder as it is installed and point
FastAPI's page builders at it, with no font or favicon from elsewhere.
"""

from __future__ import annotations

import functools
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/assets/docs"
# ReDoc's side menu always shows a logo it loads from its CDN (offline: a failed request in the console);
# the bundle is served with that one address pointed at an empty image instead.
REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"


def asset_folder() -> Path:
    """Where the installed ``fastapi-offline`` keeps the Swagger UI and ReDoc bundles."""
    return Path(fastapi_offline.__file__).parent / "static"


@functools.cache
def redoc_bundle() -> bytes:
    """The installed ``redoc.standalone.js`` with its CDN logo replaced (read once)."""
    return (asset_folder() / "redoc.standalone.js").read_bytes().replace(REDOC_LOGO, EMPTY_IMAGE)


def install(app: FastAPI) -> None:
    @app.get(f"{ASSETS}/redoc.standalone.js", include_in_schema=False)
    def asset_redoc() -> Response:
        return Response(redoc_bundle(), media_type="text/javascript")

    app.mount(ASSETS, StaticFiles(directory=asset_folder()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    def page_swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def page_redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=root + openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
