"""How static files are stored and linked: as a production site serves them.

``collectstatic`` writes each file under a name carrying a hash of its content
(``workspace.3f2a9c01be77.js``) beside gzip and Brotli copies, and a manifest mapping the names;
``{% static %}`` then links the hashed names, and WhiteNoise serves those with far-future
immutable caching, so a returning page view fetches no script or style again. With DEBUG on
(``make demo``) the plain names are linked and served from the apps' folders, as before.

The ES modules import each other by their plain names (``from "./workspace-dom.js"``), and the
files are not rewritten: Django's rewriting of module imports misreads comments that mention an
export, and a rewritten import changes the importer's hash, so one edit renames every module above
it. Every page instead carries an import map from each module's plain URL to its hashed one; the
browser resolves ``./workspace-dom.js`` against the importing module's URL, then follows the map.
A changed module gets a new name, and the map in the (never cached) page points to it. The map is
an inline script, allowed by its hash in the Content-Security-Policy (config/middleware.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cached_property
from urllib.parse import urljoin

from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage
from whitenoise.storage import CompressedManifestStaticFilesStorage

# The folders whose scripts are ES modules importing each other (the admin's and the API docs'
# scripts are classic scripts and need no map).
MODULE_FOLDERS = ("frontend/",)


class StaticFiles(CompressedManifestStaticFilesStorage):
    """WhiteNoise's compressed manifest storage, with the import map of the hashed modules."""

    def stored_name(self, name: str) -> str:
        # Nothing collected at all (a scratch server with DEBUG off, as some benches run): pages
        # link the plain names, as before hashed names, instead of failing. Once collected, a
        # file missing from the manifest still fails the page, naming the file.
        if not self.hashed_files:
            return name
        return super().stored_name(name)

    @cached_property
    def import_map(self) -> str:
        """The import map (JSON) of every collected module, plain URL to hashed URL; "" when
        nothing was collected."""
        imports = {
            urljoin(self.base_url, name): urljoin(self.base_url, hashed)
            for name, hashed in sorted(self.hashed_files.items())
            if name.endswith(".js") and name.startswith(MODULE_FOLDERS)
        }
        if not imports:
            return ""
        # "<" never occurs in these names; escaped anyway, as the map sits in a <script> element.
        return json.dumps({"imports": imports}, separators=(",", ":")).replace("<", "\\u003c")

    @cached_property
    def import_map_source(self) -> str:
        """The Content-Security-Policy source that allows the map: its SHA-256 hash."""
        digest = hashlib.sha256(self.import_map.encode()).digest()
        return f"'sha256-{base64.b64encode(digest).decode()}'"


def page_import_map() -> tuple[str, str]:
    """The import map every page carries and the CSP source allowing it; ("", "") when pages
    link the plain names (DEBUG, or a storage without a manifest)."""
    if settings.DEBUG:
        return "", ""
    import_map = getattr(staticfiles_storage, "import_map", "")
    return (import_map, staticfiles_storage.import_map_source) if import_map else ("", "")
