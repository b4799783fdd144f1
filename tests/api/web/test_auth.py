"""The pages use the API's tokens: once a token exists, a browser without one is refused (the login form),
a wrong token is refused with the API's message, and a reader's token is enough to browse."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver

from api.app import create_app
from lineage.service.core import Service
from lineage.settings import Settings
from tests.support.api_world import NetNs, ServerProcess, ServerThread, make_settings, server_env
from tests.support.browser import Page, open_page, screenshot_root


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


@pytest.mark.timeout(180)
def test_single_user_mode_admits_the_browser_on_loopback_only(
    browser: webdriver.Chrome, netns: NetNs, tmp_path: Path
) -> None:
    """As for the API: with single-user mode on and no token, a page opened from another address than
    loopback (the server in a network namespace of the test's own) gets the login form, not the data."""
    env = server_env(Settings(home=tmp_path / "home"), LINEAGE_SINGLE_USER="true")
    argv = ["uvicorn", "--factory", "api.app:create_app", "--host", "0.0.0.0"]
    with ServerProcess(env, reach=netns.address, netns=netns, argv=argv) as srv:
        page = Page(browser, srv.url, screenshot_root() / "test_single_user_mode_admits_the_browser_on_loopback_only")
        browser.get_log("browser")
        page.open("/")
        assert "needs a token" in page.text("#refused")
        page.shot("not-loopback")
        assert page.errors() == []
        assert netns.request("GET", f"http://127.0.0.1:{srv.port}/api/v1/datasets")[0] == 200  # loopback: admitted
