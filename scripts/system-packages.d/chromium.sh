#!/usr/bin/env bash
# The web view's tests drive a real headless browser: Debian's chromium through chromium-driver (Selenium
# talks to the driver; nothing is downloaded at test time). Print the Debian packages if missing.
command -v chromium >/dev/null 2>&1 || echo chromium
command -v chromedriver >/dev/null 2>&1 || echo chromium-driver
