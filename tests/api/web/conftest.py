"""The web view's tests: the small world served by uvicorn, and the session's headless Chromium with the
console checked after every test (``page``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver

from tests.support import web_world as world
from tests.support.browser import Page, browser, open_page
from tests.support.web_world import WebWorld

__all__ = ["browser"]  # the session's browser, a fixture of tests/support/browser.py


@pytest.fixture(scope="module")
def web_world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorld]:
    yield from world.web_world(request, tmp_path_factory)


@pytest.fixture
def page(browser: webdriver.Chrome, web_world: WebWorld, request: pytest.FixtureRequest) -> Iterator[Page]:
    yield from open_page(browser, web_world.url, request)
