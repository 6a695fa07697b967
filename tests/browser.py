"""A real headless Chromium (the system's, never a downloaded one) driven over CDP by Playwright,
recording every request, console message and page error of the pages it opens."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-sync",
]


def chromium_path() -> str:
    """Debian's `chromium` (`.ci/run` installs it when missing)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "no chromium on PATH: install it (apt-get install -y --no-install-recommends chromium), as .ci/run does"
    return found


@dataclass
class Opened:
    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)

    @property
    def problems(self) -> list[tuple[str, str]]:
        """Console errors and warnings, and uncaught page errors."""
        return [(kind, text) for kind, text in self.console if kind in ("error", "warning", "pageerror")]


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched browser, closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def open_file(browser: Any, path: Path, width: int = 1280, height: int = 900) -> Opened:
    """`path` in a fresh page, every request and console message recorded from the start."""
    page = browser.new_page(viewport={"width": width, "height": height})
    opened = Opened(page)
    page.on("request", lambda request: opened.requests.append(request.url))
    page.on("console", lambda message: opened.console.append((message.type, message.text)))
    page.on("pageerror", lambda error: opened.console.append(("pageerror", str(error))))
    page.goto(path.resolve().as_uri())
    return opened
