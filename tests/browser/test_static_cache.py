"""A returning page view fetches no script or style again: the workspace in Chromium, served
with production's static files (hashed names, import map, immutable caching; see
tests/test_static_files.py) by WhiteNoise itself rather than the live server's file handler."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client
from django.test.testcases import LiveServerThread

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Recorded:
    """The WSGI application, noting the path of every request that reaches the server."""

    def __init__(self, app):
        self.app, self.paths = app, []

    def __call__(self, environ, start_response):
        self.paths.append(environ["PATH_INFO"])
        return self.app(environ, start_response)


@pytest.fixture
def production_server(production_static):
    """A live server whose static files WhiteNoise serves from the collected folder."""
    recorded = []
    shared = {conn.alias: conn for conn in connections.all()
              if conn.vendor == "sqlite" and conn.is_in_memory_db()}

    def record(app):
        recorded.append(Recorded(app))
        return recorded[-1]

    for conn in shared.values():
        conn.inc_thread_sharing()
    thread = LiveServerThread("127.0.0.1", record, connections_override=shared)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield f"http://127.0.0.1:{thread.port}", recorded[0].paths
    thread.terminate()
    for conn in shared.values():
        conn.dec_thread_sharing()


def test_the_workspace_loads_its_hashed_modules_once_and_a_second_view_fetches_none(
        browser, production_server, annotation, personas):
    base, paths = production_server
    client = Client()
    client.force_login(personas["annotator"])
    context = browser.new_context()
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": base}])
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("response", lambda response: problems.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)

    page.goto(f"{base}/annotate/{annotation.pk}/")
    page.wait_for_selector("#workspace[data-ready=true]")
    page.wait_for_load_state("networkidle")
    static = [path for path in paths if path.startswith("/static/")]
    assert any(path.startswith("/static/frontend/workspace-dom.") for path in static), static
    assert all(path.count(".") >= 2 for path in static), f"a plain name was fetched: {static}"
    assert problems == []

    paths.clear()
    page.goto(f"{base}/annotate/{annotation.pk}/")
    page.wait_for_selector("#workspace[data-ready=true]")
    page.wait_for_load_state("networkidle")
    assert f"/annotate/{annotation.pk}/" in paths
    assert [path for path in paths if path.startswith("/static/")] == []
    assert problems == []
    context.close()
