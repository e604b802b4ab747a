"""Static files as production serves them (config/staticfiles.py): collected under hashed names
with compressed copies, linked by those names, cached for good, and the ES modules' imports
mapped to the hashed names, so a returning page view fetches no script or style again.

The rest of the suite links the plain names (tests/conftest.py); these tests collect once and
switch the storage back to production's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.test import Client

from tests.conftest import PRODUCTION_STATIC, REPO

HASHED = re.compile(r"\.[0-9a-f]{12}\.(js|css|svg)$")
MODULE_IMPORT = re.compile(r"""^import(?:[\s{][\s\S]*?)?\s*from\s*"(\.{1,2}/[^"]+)";""", re.MULTILINE)
SOURCES = REPO / "frontend" / "static"


def module_sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.js"))


def page(client: Client, url: str) -> tuple[str, str]:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode(), response["Content-Security-Policy"]


def import_map_of(html: str) -> dict[str, str]:
    found = re.search(r'<script type="importmap">(.*?)</script>', html, re.DOTALL)
    assert found, "the page carries no import map"
    return json.loads(found[1])["imports"]


def test_every_script_and_style_is_collected_under_a_hashed_name_with_a_gzip_copy(production_static, collected):
    for source in [*module_sources(), *SOURCES.rglob("*.css")]:
        name = source.relative_to(SOURCES).as_posix()
        hashed = production_static[name]
        assert HASHED.search(hashed), f"{name} was collected as {hashed}, without a content hash"
        assert (collected / hashed).read_bytes() == source.read_bytes(), f"{hashed} is not {name} as written"
        assert (collected / f"{hashed}.gz").exists(), f"{hashed} has no compressed copy"


def test_pages_link_the_hashed_files_and_map_every_module_import_to_its_hashed_file(
        production_static, collected, annotation, personas):
    client = Client()
    client.force_login(personas["annotator"])
    html, policy = page(client, f"/annotate/{annotation.pk}/")
    linked = re.findall(r'(?:src|href)="/static/([^"]+)"', html)
    assert "frontend/workspace.js" in production_static and production_static["frontend/workspace.js"] in linked
    assert all(HASHED.search(name) for name in linked), linked
    imports = import_map_of(html)
    # Every import of every module, resolved as the browser resolves it, is in the map and
    # leads to a collected file.
    for source in module_sources():
        for specifier in MODULE_IMPORT.findall(source.read_text()):
            plain = "/static/" + (source.parent / specifier).resolve().relative_to(SOURCES).as_posix()
            assert plain in imports, f"{source.name} imports {specifier}, which the import map lacks"
            assert (collected / imports[plain].removeprefix("/static/")).exists()


def test_the_content_security_policy_allows_the_import_map_by_its_hash_and_nothing_else_inline(
        production_static, annotation, personas):
    import base64
    import hashlib

    client = Client()
    client.force_login(personas["annotator"])
    html, policy = page(client, f"/annotate/{annotation.pk}/")
    content = re.search(r'<script type="importmap">(.*?)</script>', html, re.DOTALL)[1]
    digest = base64.b64encode(hashlib.sha256(content.encode()).digest()).decode()
    script_src = next(part.strip() for part in policy.split(";") if part.strip().startswith("script-src"))
    assert script_src == f"script-src 'self' 'sha256-{digest}'"


def test_hashed_files_are_cached_for_good_and_sent_compressed(production_static):
    client = Client()
    hashed = "/static/" + production_static["frontend/workspace.js"]
    response = client.get(hashed, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert "immutable" in response["Cache-Control"]
    assert int(re.search(r"max-age=(\d+)", response["Cache-Control"])[1]) >= 365 * 24 * 3600
    assert response["Content-Encoding"] == "gzip"
    # A plain name may change its content at the next release: it is not cached for good.
    plain = client.get("/static/frontend/workspace.js")
    assert "immutable" not in plain["Cache-Control"]


def test_with_debug_on_pages_link_the_plain_names_without_an_import_map(settings, annotation, personas):
    settings.STORAGES = {**settings.STORAGES, "staticfiles": PRODUCTION_STATIC}
    settings.DEBUG = True
    client = Client()
    client.force_login(personas["annotator"])
    html, policy = page(client, f"/annotate/{annotation.pk}/")
    assert 'src="/static/frontend/workspace.js"' in html
    assert "importmap" not in html and "sha256-" not in policy


def test_before_anything_is_collected_pages_link_the_plain_names(settings, tmp_path, annotation, personas):
    settings.STORAGES = {**settings.STORAGES, "staticfiles": PRODUCTION_STATIC}
    settings.STATIC_ROOT = tmp_path / "never-collected"
    client = Client()
    client.force_login(personas["annotator"])
    html, policy = page(client, f"/annotate/{annotation.pk}/")
    assert 'src="/static/frontend/workspace.js"' in html
    assert "importmap" not in html and "sha256-" not in policy
