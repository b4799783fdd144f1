"""The pages at ``/``: one HTML shell per page kind, filled in the browser by our own ES modules.

A shell holds no catalog data, so it is served to anyone; its module reads the JSON API with the token
the login form stored (``Authorization: Bearer``), and a refusal (401, 403) shows the login form with
the API's message. Single-user mode on loopback needs no token, exactly as for the API.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from lineage.releases.qc import CHARTS_JS

STATIC = Path(__file__).parent / "static"
ASSETS = "/assets/web"
SHELL = (STATIC / "shell.html").read_text(encoding="utf-8")

# page kind -> the title shown before its module has rendered
PAGES = {
    "search": "Search",
    "graph": "Lineage graph",
    "release": "Release",
    "sample": "Sample",
    "dataset": "Dataset",
    "run": "Run",
}


def shell(page: str) -> HTMLResponse:
    html = SHELL.replace("{{title}}", escape(PAGES[page])).replace("{{page}}", page).replace("{{assets}}", ASSETS)
    return HTMLResponse(html, headers={"Cache-Control": "no-cache"})


def install(app: FastAPI) -> None:
    @app.get(f"{ASSETS}/qc_report.js", include_in_schema=False)
    def asset_qc_report() -> FileResponse:
        """The QC report's rendering, the very file the standalone HTML report inlines."""
        return FileResponse(CHARTS_JS, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    app.mount(ASSETS, StaticFiles(directory=STATIC), name="web-assets")

    @app.get("/", include_in_schema=False)
    def page_search() -> HTMLResponse:
        return shell("search")

    @app.get("/graph", include_in_schema=False)
    def page_graph() -> HTMLResponse:
        return shell("graph")

    @app.get("/releases/{name}/{tag}", include_in_schema=False)
    def page_release(name: str, tag: str) -> HTMLResponse:
        return shell("release")

    @app.get("/samples/{sample_id}", include_in_schema=False)
    def page_sample(sample_id: str) -> HTMLResponse:
        return shell("sample")

    @app.get("/datasets/{name}", include_in_schema=False)
    def page_dataset(name: str) -> HTMLResponse:
        return shell("dataset")

    @app.get("/runs/{run_id}", include_in_schema=False)
    def page_run(run_id: str) -> HTMLResponse:
        return shell("run")
