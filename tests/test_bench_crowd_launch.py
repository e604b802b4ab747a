"""The crowd launch bench's browser model (bench/bench_crowd_launch.py): which subresources a
page loads, how module imports resolve through the import map, and what the cache keeps. Plain
data; the bench itself runs in `make bench`."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

# The benches' shared module sets a few environment variables for the servers they start: kept
# out of this test session (the worker and soak tests hand os.environ to their processes).
_environ = dict(os.environ)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
try:
    bench = importlib.import_module("bench_crowd_launch")
finally:
    sys.path.pop(0)
    os.environ.clear()
    os.environ.update(_environ)
caching, module_imports, page_assets = bench.caching, bench.module_imports, bench.page_assets

PAGE = """<!doctype html><html><head>
<link rel="icon" href="/static/frontend/favicon.1.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/frontend/redline.2.css">
<script type="importmap">{"imports":{"/static/frontend/a.js":"/static/frontend/a.3.js",
"/static/frontend/b.js":"/static/frontend/b.4.js"}}</script>
<link rel="modulepreload" href="/static/frontend/a.3.js">
</head><body><script type="module" src="/static/frontend/workspace.5.js"></script>
<script id="workspace-data" type="application/json">{"id": 1}</script></body></html>"""


def test_a_page_lists_its_icon_style_preloads_scripts_and_import_map():
    found = page_assets(PAGE)
    assert found.urls == ["/static/frontend/favicon.1.svg", "/static/frontend/redline.2.css",
                          "/static/frontend/a.3.js", "/static/frontend/workspace.5.js"]
    assert found.modules == {"/static/frontend/a.3.js", "/static/frontend/workspace.5.js"}
    assert found.import_map["/static/frontend/b.js"] == "/static/frontend/b.4.js"


def test_module_imports_resolve_against_the_module_then_through_the_map():
    source = ('import { x } from "./a.js";\nimport "./b.js";\nexport { y } from "../other/c.js";\n'
              'import * as d from "bare-name";\nconst later = () => import("./lazy.js");\n')
    imports = {"/static/frontend/a.js": "/static/frontend/a.3.js", "/static/frontend/b.js": "/static/frontend/b.4.js"}
    assert module_imports(source, "/static/frontend/workspace.5.js", imports) == [
        "/static/frontend/a.3.js", "/static/frontend/b.4.js", "/static/other/c.js"]


@pytest.mark.parametrize(("headers", "fresh_for", "etag"), [
    ({"cache-control": "max-age=315360000, public, immutable"}, 315360000, ""),
    ({"cache-control": "max-age=60", "etag": '"v1"'}, 60, '"v1"'),
    ({"cache-control": "no-cache", "etag": '"v2"'}, 0, '"v2"'),  # kept, revalidated every time
    ({"last-modified": "Sun, 06 Dec 2026 10:00:00 GMT"}, 0, ""),
])
def test_the_cache_keeps_what_the_headers_allow(headers, fresh_for, etag):
    kept = caching(headers, now=100.0)
    assert kept is not None
    assert kept.fresh_until == 100.0 + fresh_for
    assert kept.etag == etag


@pytest.mark.parametrize("headers", [{"cache-control": "no-store", "etag": '"v"'}, {}, {"cache-control": "private"}])
def test_the_cache_keeps_nothing_it_could_neither_reuse_nor_revalidate(headers):
    assert caching(headers, now=0.0) is None


def test_the_consent_form_posts_its_token_ids_and_version_as_the_landing_page_renders_it(rf):
    """The landing page as the server renders it for a new participant of a study asking consent:
    the bench finds its form and posts what the browser would."""
    from django.contrib.auth.models import AnonymousUser
    from django.template.loader import render_to_string

    request = rf.get("/join/t/?PROLIFIC_PID=5f01")
    request.user = AnonymousUser()
    study = SimpleNamespace(name="A <study>", description="", slug="crowd")
    html = render_to_string("frontend/recruitment.html", {
        "study": study, "link": SimpleNamespace(quota=2), "known": None,
        "hidden": [("PROLIFIC_PID", "5f01"), ("STUDY_ID", "s&1")],
        "consent": {"version": 3, "html": "<p>Taking part</p>"}}, request=request)
    fields = bench.form_fields(html, "consent-form")
    assert fields is not None
    assert fields["PROLIFIC_PID"] == "5f01"
    assert fields["STUDY_ID"] == "s&1"
    assert fields["consent"] == "3"
    assert fields["csrfmiddlewaretoken"]
    assert bench.form_fields(html, "recruitment-form") is None


@pytest.mark.parametrize(("work", "quota"), [(10, 1), (90, 1), (150, 2), (600, 8)])
def test_the_default_quota_is_what_the_work_time_allows(work, quota):
    assert bench.default_quota(work) == quota
