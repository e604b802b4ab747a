"""One JSON reader with one set of limits, for every body and file Redline reads.

Python's json module accepts documents that every later step chokes on: nesting deep enough to
exhaust the interpreter's stack, integers of thousands of digits (which ``float()`` cannot hold
and ``int()`` refuses past 4,300 digits), NaN and Infinity, and strings with NUL characters
(PostgreSQL refuses them in text and jsonb) or unpaired surrogates (UTF-8 cannot encode them).
:func:`json_loads_strict` refuses all of them while parsing, naming the place in the document
(``changes.ui_state.note``, ``value``) and the reason. The API's request bodies
(:mod:`annotation.api.parsers`), the score files (:mod:`annotation.interchange.formats.scores`), page cursors
and ``score_pairs``' lines read JSON through it; the caption and reference formats read it through
:func:`json_loads_limited`, which keeps the same limits on shape and leaves each value to the
format's own field checks (a NaN window time is named as a time, and may be kept invalid).

Pure code: no Django.
"""

from __future__ import annotations

import json
import math
from typing import Any

from annotation.interchange.formats.common import _object_pairs, unstorable_character

# Deeper than any body or line Redline reads (the draft's timeline is five levels deep).
MAX_DEPTH = 32
# A version, an index, a count or a score never needs more; a longer integer is an attack or an
# accident (1 followed by 400 zeros cannot be a float; 5,000 digits cannot even be an int).
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


class JSONRefused(ValueError):
    """JSON refused by :func:`json_loads_strict` or :func:`json_loads_limited`: ``place`` is the
    field's path (``changes.ui_state.note``, ``[0].start``; empty for the document as a whole)
    and ``reason`` says why, in words. The message is ``place: reason``, the place of the whole
    being ``the body``, except for nesting too deep to read at all (the reason alone)."""

    def __init__(self, place: str, reason: str, *, whole: bool = False):
        self.place, self.reason = place, reason
        super().__init__(reason if whole else f"{place or 'the body'}: {reason}")


def _field(path: list[str]) -> str:
    return ".".join(path).replace(".[", "[")


def _refusal(value: Any, path: list[str], values: bool) -> JSONRefused | None:
    if len(path) > MAX_DEPTH:
        return JSONRefused(_field(path), f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, _Unreadable):
        shown = value.text if len(value.text) <= 20 else value.text[:20] + "..."
        return JSONRefused(_field(path), f"{shown} {value.reason}")
    if isinstance(value, str):
        reason = unstorable_character(value) if values else None
        return JSONRefused(_field(path), f"text {reason}") if reason else None
    if isinstance(value, dict):
        for key, item in value.items():
            reason = unstorable_character(key) if values else None
            if reason:
                return JSONRefused(_field(path), f"a key {reason}")
            refused = _refusal(item, [*path, key], values)
            if refused:
                return refused
    if isinstance(value, list):
        for number, item in enumerate(value):
            refused = _refusal(item, [*path, f"[{number}]"], values)
            if refused:
                return refused
    return None


def json_problem(value: Any, path: list[str] | None = None, *, values: bool = True) -> str | None:
    """Why `value` (as parsed by :func:`json_loads_strict`'s hooks) cannot be stored, with the
    place it occurs (``the body`` for the whole), or None. Looks at most :data:`MAX_DEPTH`
    levels down. Without `values`, only the shape is looked at: the depth and integers too long
    to read."""
    refused = _refusal(value, path or [], values)
    return None if refused is None else str(refused)


def _loads(text: str, *, values: bool) -> Any:
    hooks: dict[str, Any] = {"parse_int": _integer, "object_pairs_hook": _object_pairs}
    if values:
        hooks |= {"parse_float": _real, "parse_constant": _constant}
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        raise JSONRefused("", f"nested more than {MAX_DEPTH} levels deep", whole=True) from None
    refused = _refusal(value, [], values)
    if refused:
        raise refused
    return value


def json_loads_strict(text: str) -> Any:
    """Parse `text`; raise ValueError naming the place and the reason when it is not JSON the
    database can store (see the module docstring). Objects keep their repeated keys visible
    (:func:`annotation.interchange.formats.common._duplicate_keys`)."""
    return _loads(text, values=True)


def json_loads_limited(text: str) -> Any:
    """Parse `text` within the same limits on shape as :func:`json_loads_strict` (depth, digits);
    NaN, Infinity, NUL and surrogates come through for the caller's own field checks. Raises
    ValueError (a :class:`json.JSONDecodeError` for text that is not JSON)."""
    return _loads(text, values=False)
