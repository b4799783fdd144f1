"""The pages use the API's tokens: once a token exists, a browser without one is refused (the login form),
a wrong token is refused with the API's message, and a reader's token is enough to browse."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from selenium import webdriver

from api.app import create_app
from lineage.service.core import Service
from tests.support.api_world import ServerThread, make_settings
from tests.support.browser import Page, open_page


@dataclass
class Guarded:
    url: str
    token: str


@pytest.fixture(scope="module")
def guarded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    settings = make_settings(tmp_path_factory.mktemp("web-auth"), "sqlite", request)
    service = Service(settings)
    token = service.create_token("browser", "reader").token
    with ServerThread(create_app(settings, service)) as server:
        yield Guarded(server.url, token)
    service.close()


@pytest.fixture
def page(browser: webdriver.Chrome, guarded: Guarded, request: pytest.FixtureRequest) -> Iterator[Page]:
    yield from open_page(browser, guarded.url, request)


def log_in(page: Page, token: str) -> None:
    box = page.find("#token")
    box.send_keys(token)
    page.navigate(page.find("#login button").click)


def test_without_a_token_the_pages_are_refused_and_a_token_logs_in(page: Page, guarded: Guarded) -> None:
    page.open("/releases/clean/v1")
    assert page.find_all("#login") and "needs a token" in page.text("#refused")
    assert not page.find_all("#summary")
    page.shot("refused")
    page.allow(r"/api/v1/.* - Failed to load resource: .* 401")  # the wrong token's refusals, shown as the form
    log_in(page, "not-a-token")
    assert "Refused (401)" in page.text("#refused")
    page.open("/")
    log_in(page, guarded.token)
    assert not page.find_all("#login")
    assert page.text("h1") == "Search" and page.find("#datasets")
    assert not page.find("#logout").get_attribute("hidden")
    page.shot("logged-in")
    page.navigate(page.find("#logout").click)
    assert page.find_all("#login")
