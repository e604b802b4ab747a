"""MkDocs hooks: pages whose content comes from the code, so that the docs cannot drift from it.

- ``{{ environment_table }}`` (Configuration) is the table of ``config/environment.py``;
- ``{{ api_reference }}`` (API) is every operation of Redline's OpenAPI schema, as served at
  ``/api/schema/``, rendered as Markdown.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
METHODS = ("get", "post", "put", "patch", "delete")


def on_page_markdown(markdown, page, config, files):
    if "{{ environment_table }}" in markdown:
        markdown = markdown.replace("{{ environment_table }}", environment_table())
    if "{{ api_reference }}" in markdown:
        markdown = markdown.replace("{{ api_reference }}", api_reference(openapi_schema()))
    return markdown


def environment_table() -> str:
    sys.path.insert(0, str(REPO))
    from config.environment import markdown_table

    return markdown_table()


def openapi_schema() -> dict:
    """The schema drf-spectacular serves, built in process from the URL configuration."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def api_reference(schema: dict) -> str:
    """One section per group of paths (the segment after /api/), one entry per operation."""
    groups: dict[str, list[str]] = {}
    for path, operations in sorted(schema["paths"].items()):
        group = path.removeprefix("/api/").split("/")[0] or "api"
        for method in METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            groups.setdefault(group, []).append(_operation(method, path, operation))
    lines = [f"Redline's API has {sum(len(v) for v in groups.values())} operations "
             f"(OpenAPI {schema['openapi']}, version {schema['info']['version']})."]
    for group, entries in groups.items():
        lines += ["", f"## {group}", ""] + entries
    return "\n".join(lines) + "\n"


def _operation(method: str, path: str, operation: dict) -> str:
    text = [f"### `{method.upper()} {path}`", ""]
    summary = (operation.get("description") or operation.get("summary") or "").strip()
    if summary:
        text += [summary, ""]
    parameters = [p for p in operation.get("parameters", []) if p.get("in") == "query"]
    if parameters:
        text.append("Query: " + ", ".join(f"`{p['name']}`" for p in parameters) + ".")
        text.append("")
    responses = ", ".join(sorted(operation.get("responses", {})))
    if responses:
        text += [f"Answers: {responses}.", ""]
    return "\n".join(text)
