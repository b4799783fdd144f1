"""A real headless browser for the web view's tests: Debian's ``chromium`` driven through
``chromium-driver`` by Selenium (``scripts/system-packages.d/chromium.sh`` installs both; nothing is
downloaded at test time). One browser per test session.

A missing browser or driver fails the test that needs it, with the fix; it never skips. Every test that
takes ``browser_page`` has the browser console checked at its end: an error logged there fails it.
Screenshots go to ``build/screenshots/<test name>/`` (``LINEAGE_SCREENSHOTS`` moves the root).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).parents[2]
# text nodes that are a value rendered by mistake: null, undefined, NaN, an object's default string
LEAKED_TEXT = """
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const found = [];
while (walker.nextNode()) {
  const t = walker.currentNode.textContent.trim();
  if (/^(null|undefined|NaN)$/.test(t) || t.includes("[object ")) found.push(t.slice(0, 80));
}
return found;
"""
CHROMIUM = ("chromium", "chromium-browser")
DRIVER = "chromedriver"


def find_browser() -> tuple[str, str]:
    """The browser and driver binaries, or a failure naming the fix."""
    browser = next((found for name in CHROMIUM if (found := shutil.which(name))), None)
    driver = shutil.which(DRIVER)
    if browser is None or driver is None:
        missing = [n for n, f in (("chromium", browser), ("chromium-driver", driver)) if f is None]
        pytest.fail(
            f"the web view's browser tests need Debian's {' and '.join(missing)}: run `scripts/setup.sh --tests` "
            "(scripts/system-packages.d/chromium.sh) or `apt-get install chromium chromium-driver`",
            pytrace=False,
        )
    return browser, driver


def start_browser() -> webdriver.Chrome:
    browser, driver = find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    # headless Chromium as root (CI) needs --no-sandbox; /dev/shm is small in containers
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=DriverService(executable_path=driver), options=options)


@pytest.fixture(scope="session")
def browser() -> Iterator[webdriver.Chrome]:
    driver = start_browser()
    yield driver
    driver.quit()


def screenshot_root() -> Path:
    return Path(os.environ.get("LINEAGE_SCREENSHOTS", ROOT / "build" / "screenshots"))


@dataclass
class Page:
    """The session's browser, for one test: navigation that waits for ``performance.mark('ready')``,
    screenshots in the test's own folder, and the console entries seen so far."""

    driver: webdriver.Chrome
    base: str
    shots: Path
    console: list[dict[str, Any]] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def open(self, path: str, mark: str = "ready", timeout: float = 30) -> None:
        self.driver.get(self.base + path)
        self.wait_mark(mark, timeout)

    def wait_mark(self, mark: str, timeout: float = 30) -> None:
        """Wait for the page's ``mark``; then no text it rendered may be a JavaScript value's leak."""
        WebDriverWait(self.driver, timeout).until(
            lambda d: d.execute_script("return performance.getEntriesByName(arguments[0], 'mark').length > 0", mark)
        )
        leaks = self.driver.execute_script(LEAKED_TEXT)
        assert not leaks, f"the page rendered JavaScript values as text: {leaks}"

    def navigate(self, action: Callable[[], object], mark: str = "ready", timeout: float = 30) -> None:
        """Do ``action`` (a click, an Enter), which loads another page, and wait for that page's ``mark``."""
        before = self.driver.execute_script("return performance.timeOrigin")
        action()
        WebDriverWait(self.driver, timeout).until(lambda d: d.execute_script("return performance.timeOrigin") != before)
        self.wait_mark(mark, timeout)

    def clear_marks(self, mark: str) -> None:
        self.driver.execute_script("performance.clearMarks(arguments[0])", mark)

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return self.find(css).text

    def shot(self, name: str) -> Path:
        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / f"{name}.png"
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1400, max(1000, min(int(height) + 40, 6000)))
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(1400, 1000)
        return path

    def allow(self, pattern: str) -> None:
        """A console error this test expects (a refused request the page answers with its login form)."""
        self.allowed.append(re.compile(pattern))

    def read_console(self) -> list[dict[str, Any]]:
        self.console += self.driver.get_log("browser")
        return self.console

    def errors(self) -> list[str]:
        return [
            e["message"]
            for e in self.read_console()
            if e["level"] == "SEVERE" and not any(p.search(e["message"]) for p in self.allowed)
        ]


def open_page(driver: webdriver.Chrome, base: str, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A :class:`Page` for the test; at its end, no unexpected error in the browser console."""
    driver.get("about:blank")
    driver.get_log("browser")  # what earlier tests left
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    page = Page(driver, base, screenshot_root() / name)
    yield page
    errors = page.errors()
    driver.execute_script("try { localStorage.clear() } catch (e) {}")
    assert not errors, f"errors in the browser console: {errors}"
