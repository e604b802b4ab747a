"""Headless Chromium driven by Playwright, against Django's live test server.

Playwright cannot download browsers here: it drives Debian's /usr/bin/chromium.
Screenshots go to artifacts/screenshots/ for people to look at.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

# Playwright's sync API runs an event loop in this thread; Django's ORM calls in
# the test body are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("REDLINE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = REPO / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class InFlight:
    """Counts the requests the live server is answering: from the application's call to the
    response's close, which the server makes after the last byte. A connection the browser keeps
    alive between requests is no request (counting the connections' threads instead made every
    test's teardown wait its 15 s once Chromium kept sockets open across pages)."""

    def __init__(self, server):
        self.count, self.lock, app = 0, threading.Lock(), server.get_app()

        def counted(environ, start_response):
            self._add(1)
            try:
                answer = app(environ, start_response)
            except BaseException:
                self._add(-1)
                raise
            return _Answered(answer, lambda: self._add(-1))

        server.set_app(counted)

    def _add(self, step: int) -> None:
        with self.lock:
            self.count += step


class _Answered:
    """A response's body, which tells `done` once when the server closes it."""

    def __init__(self, answer, done):
        self.answer, self.done, self.closed = answer, done, False

    def __iter__(self):
        return iter(self.answer)

    def close(self):
        try:
            if hasattr(self.answer, "close"):
                self.answer.close()
        finally:
            if not self.closed:
                self.closed = True
                self.done()


@pytest.fixture(autouse=True)
def answered_before_the_database_is_emptied(request):
    """A browser test ends with its pages closed, but a request they sent may still be in its
    transaction in the live server; emptying the tables under it deadlocks. Set up before the
    pages (so torn down after them) and after the database (so before it is emptied)."""
    if "live_server" not in request.fixturenames:
        yield
        return
    server = request.getfixturevalue("live_server").thread.httpd
    if not hasattr(server, "in_flight"):
        server.in_flight = InFlight(server)
    yield
    deadline = time.monotonic() + 15
    while server.in_flight.count and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def sign_in(live_server, page):
    def sign_in_as(username: str, password: str):
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/")
        return page

    return sign_in_as


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_until(page, expression: str, timeout: float = 10.0):
    """Poll ``expression`` (JavaScript, as for page.evaluate) until it is truthy.

    Why not page.wait_for_function: its in-page polling evaluates the expression with eval,
    which the pages' Content-Security-Policy refuses (no 'unsafe-eval'); page.evaluate goes
    through the DevTools protocol, which the policy does not govern."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = page.evaluate(expression)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {expression}")
