"""A real Chromium (Debian's, launched by path; never Playwright's own download) driving the
admin of a live gateway, with a screenshot of each screen.

Playwright's sync API keeps an event loop running in the thread that drives it, where
Django's async-safety guard would refuse the ORM: the browser lives on a thread of its own
(`Chromium.run`), and tests use the ORM only on theirs. One browser per session; each test
opens its own contexts (cookies are per context).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.harness.live import LiveGateway, running_gateway

T = TypeVar("T")
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STEP_TIMEOUT = 60.0
DEFAULT_SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"


def chromium_path() -> str | None:
    found = os.environ.get("WORKBENCH_CHROMIUM") or next(
        (path for path in CHROMIUM_CANDIDATES if os.access(path, os.X_OK)), None
    )
    return found or shutil.which("chromium")


def screenshots_dir() -> Path:
    return Path(os.environ.get("WORKBENCH_SCREENSHOTS") or DEFAULT_SCREENSHOTS)


@dataclass
class Chromium:
    executor: ThreadPoolExecutor
    browser: Any
    screenshots: Path
    # What the browser said about the Content-Security-Policy (a refused script or style):
    # each test must end with none (`no_csp_violations`).
    csp_violations: list[str] = field(default_factory=list)

    def run(self, step: Callable[..., T], *args: Any) -> T:
        """Run one browser step on the browser's own thread and wait for it (bounded)."""
        return self.executor.submit(step, *args).result(timeout=STEP_TIMEOUT)

    def new_page(self, base_url: str, *, clipboard: bool = False) -> Any:
        """A page in a context of its own; `clipboard`: the page may read what it copied."""
        permissions = ["clipboard-read", "clipboard-write"] if clipboard else []

        def make() -> Any:
            context = self.browser.new_context(
                base_url=base_url, viewport={"width": 1280, "height": 900}, permissions=permissions
            )
            context.set_default_timeout(15_000)
            page = context.new_page()
            page.on("console", self._note_csp)
            return page

        return self.run(make)

    def _note_csp(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            self.csp_violations.append(message.text)

    def shot(self, page: Any, name: str) -> Path:
        path = self.screenshots / f"{re.sub(r'[^a-z0-9-]+', '-', name.lower())}.png"
        self.run(lambda: page.screenshot(path=str(path), full_page=True))
        return path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    path = chromium_path()
    if path is None:
        pytest.skip(
            "Chromium not found (/usr/bin/chromium): `apt-get install -y chromium` "
            "(make test does it when run as root), or set WORKBENCH_CHROMIUM"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install -e '.[test]')")
    screenshots = screenshots_dir()
    screenshots.mkdir(parents=True, exist_ok=True)
    executor = ThreadPoolExecutor(1, thread_name_prefix="chromium")
    playwright = executor.submit(lambda: sync_playwright().start()).result(STEP_TIMEOUT)
    browser = executor.submit(
        lambda: playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
    ).result(STEP_TIMEOUT)
    try:
        yield Chromium(executor, browser, screenshots)
    finally:
        executor.submit(browser.close).result(STEP_TIMEOUT)
        executor.submit(playwright.stop).result(STEP_TIMEOUT)
        executor.shutdown()


@pytest.fixture(autouse=True)
def no_csp_violations(request: pytest.FixtureRequest) -> Iterator[None]:
    """The admin works under its Content-Security-Policy: the browser refused nothing."""
    yield
    if "chromium" in request.fixturenames:
        chromium = request.getfixturevalue("chromium")
        found, chromium.csp_violations[:] = list(chromium.csp_violations), []
        assert not found, f"Content-Security-Policy violations: {found}"


@pytest.fixture
def plain_http_cookies(settings: Any) -> None:
    """The live server speaks plain HTTP on loopback: cookies without the Secure flag."""
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False


@pytest.fixture
def live_gateway(transactional_db: None) -> Iterator[LiveGateway]:
    """One uvicorn serving both the admin (for the browser) and /mcp (for the SDK)."""
    with running_gateway() as live:
        yield live
