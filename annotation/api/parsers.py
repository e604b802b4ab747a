"""The API's JSON parser: JSON that the database can store, or a 400 saying where it is not.

The reading and its limits are :mod:`annotation.interchange.formats.strict_json`'s, shared with every file
Redline imports; this module is its DRF side.
"""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotation.interchange.formats.strict_json import MAX_DEPTH, MAX_INTEGER_DIGITS, json_loads_strict, json_problem

__all__ = ["MAX_DEPTH", "MAX_INTEGER_DIGITS", "StrictJSONParser", "json_loads_strict",
           "json_object_from_body", "json_problem"]


def json_object_from_body(body: bytes, encoding: str = "utf-8") -> dict[str, Any]:
    """A request body that must be a JSON object (empty means ``{}``), parsed as the API's
    parser does; ValueError with a sentence for the client otherwise (not text in `encoding`,
    not JSON, unstorable JSON as :func:`json_loads_strict` says, or not an object)."""
    try:
        text = body.decode(encoding) if body else "{}"
    except UnicodeDecodeError as exc:
        raise ValueError(f"The body is not valid {encoding} text: {exc.reason}.") from None
    except LookupError:
        raise ValueError(f"The body's charset {encoding!r} is unknown.") from None
    try:
        value = json_loads_strict(text)
    except ValueError as exc:
        raise ValueError(f"JSON parse error - {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("Send a JSON object.")
    return value


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with :func:`json_loads_strict`: 400 instead of 500 for unstorable JSON."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except UnicodeDecodeError as exc:
            raise ParseError(f"The body is not valid {encoding} text: {exc.reason}.") from None
        try:
            return json_loads_strict(text)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
