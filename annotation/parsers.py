"""The API's JSON parser: JSON that the database can store, or a 400 saying where it is not.

Python's json module accepts documents that every later step chokes on: nesting deep enough to
exhaust the interpreter's stack, integers of thousands of digits, NaN and Infinity, and strings
with NUL characters (PostgreSQL refuses them in text and jsonb). This parser refuses all of them
while parsing, naming the place in the document (``changes.ui_state.note``) and the reason.
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotation.formats.common import unstorable_character

# Deeper than any body the API takes (the draft's timeline is five levels deep).
MAX_DEPTH = 32
# A version, an index or a count never needs more; a longer integer is an attack or an accident.
MAX_INTEGER_DIGITS = 30



class _Unreadable:
    """A number the document spells but no field can hold; reported with its place by the walk."""

    def __init__(self, text: str, reason: str):
        self.text, self.reason = text, reason


def _integer(text: str) -> int | _Unreadable:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        return _Unreadable(text, f"is a number with more than {MAX_INTEGER_DIGITS} digits")
    return int(text)


def _real(text: str) -> float | _Unreadable:
    value = float(text)
    if not math.isfinite(value):
        return _Unreadable(text, "is a number too large to store")
    return value


def _constant(text: str) -> _Unreadable:
    return _Unreadable(text, f"is {text}, which is not a number JSON allows")


def _place(path: list[str]) -> str:
    return ".".join(path) if path else "the body"


def json_problem(value: Any, path: list[str] | None = None) -> str | None:
    """Why `value` (as parsed by :func:`json_loads_strict`'s hooks) cannot be stored, with the
    place it occurs, or None. Looks at most :data:`MAX_DEPTH` levels down."""
    path = path or []
    if len(path) > MAX_DEPTH:
        return f"{_place(path)}: nested more than {MAX_DEPTH} levels deep"
    if isinstance(value, _Unreadable):
        shown = value.text if len(value.text) <= 20 else value.text[:20] + "..."
        return f"{_place(path)}: {shown} {value.reason}"
    if isinstance(value, str):
        reason = unstorable_character(value)
        return f"{_place(path)}: text {reason}" if reason else None
    if isinstance(value, dict):
        for key, item in value.items():
            reason = unstorable_character(key)
            if reason:
                return f"{_place(path)}: a key {reason}"
            problem = json_problem(item, [*path, key])
            if problem:
                return problem
    if isinstance(value, list):
        for number, item in enumerate(value):
            problem = json_problem(item, [*path, f"[{number}]"])
            if problem:
                return problem
    return None


def json_loads_strict(text: str) -> Any:
    """Parse `text`; raise ValueError naming the place and the reason when it is not JSON the
    database can store (see the module docstring)."""
    try:
        value = json.loads(text, parse_int=_integer, parse_float=_real, parse_constant=_constant)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    problem = json_problem(value)
    if problem:
        raise ValueError(problem.replace(".[", "["))
    return value


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
