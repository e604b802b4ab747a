"""Reading the input of ``score_pairs``: JSON Lines of ``{"id", "candidate", "reference"}``.

Pure Python, no Django. ``reference`` is one string or a non-empty list of strings; ``id`` is a
string or a number and must not repeat; an optional ``language`` (``en``, ``zh``, ``ja``,
``other``) says how the edit metrics count the pair's words. Blank lines are ignored. Every other line that does not
fit is reported with its (1-based) line number and why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scoring.metrics.segment import LANGUAGES


@dataclass(frozen=True)
class InputPair:
    """One good line: ``id`` as given (echoed in the output), ``line`` its line number."""

    line: int
    id: Any
    candidate: str
    references: tuple[str, ...]
    #: The pair's caption language, or None when the line names none (the run's applies).
    language: str | None = None


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def read_pairs(lines: Iterable[str], *, loads: Callable[[str], Any] = json.loads
               ) -> tuple[list[InputPair], list[BadLine]]:
    """The good pairs and the bad lines of a JSON Lines text, both in file order.

    ``loads`` reads one line (``score_pairs`` gives the project's strict reader, which refuses
    nesting, digits, NaN, NUL and surrogates beyond its limits with a ValueError naming the
    field); whatever it refuses, or nests too deep to read, is a bad line."""
    pairs: list[InputPair] = []
    bad: list[BadLine] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except json.JSONDecodeError as error:
            bad.append(BadLine(number, f"not valid JSON ({error.msg} at column {error.colno})"))
            continue
        except (ValueError, RecursionError) as error:
            bad.append(BadLine(number, f"not readable: {error or 'nested too deeply'}"))
            continue
        if not isinstance(record, dict):
            bad.append(BadLine(number, "expected a JSON object"))
            continue
        reason = _problem(record)
        if reason:
            bad.append(BadLine(number, reason))
            continue
        key = json.dumps(record["id"])
        if key in seen:
            bad.append(BadLine(number, f"id {record['id']!r} repeats line {seen[key]}"))
            continue
        seen[key] = number
        reference = record["reference"]
        references = (reference,) if isinstance(reference, str) else tuple(reference)
        pairs.append(InputPair(number, record["id"], record["candidate"], references,
                               record.get("language")))
    return pairs, bad


def _problem(record: dict[str, Any]) -> str | None:
    missing = [name for name in ("id", "candidate", "reference") if name not in record]
    if missing:
        return f"missing {', '.join(repr(name) for name in missing)}"
    if isinstance(record["id"], bool) or not isinstance(record["id"], str | int | float):
        return "'id' must be a string or a number"
    if not isinstance(record["candidate"], str):
        return "'candidate' must be a string"
    if "language" in record and record["language"] not in LANGUAGES:
        return f"'language' must be one of {', '.join(LANGUAGES)}, got {record['language']!r}"
    reference = record["reference"]
    if isinstance(reference, str):
        return None
    if (
        not isinstance(reference, list)
        or not reference
        or not all(isinstance(text, str) for text in reference)
    ):
        return "'reference' must be a string or a non-empty list of strings"
    return None
