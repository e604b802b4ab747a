"""References as JSON Lines ``{"clip", "text", "source"?, "language"?}``, and the checks every
reference format shares (:mod:`annotation.interchange.formats.clip_cc_bench`,
:mod:`annotation.interchange.formats.fm_v2t`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from annotation.interchange.formats.common import (
    _MISSING,
    _REPEATED_KEY,
    MAX_NAME_CHARS,
    RecordError,
    _describe,
    _duplicate_keys,
    _json_error_reason,
    _jsonl_lines,
    _key_field,
    _quote,
    _too_long,
    clip_name_from_filename,
    unstorable_character,
)
from annotation.interchange.formats.strict_json import json_loads_limited

# The longest Clip-CC-Bench reference is 5,534 characters (1,011 words).
MAX_REFERENCE_CHARS = 50_000
# Reference source and language columns are 100 and 20 characters.
MAX_SOURCE_CHARS = 100
MAX_LANGUAGE_CHARS = 20
REFERENCE_KEYS = frozenset({"clip", "text", "source", "language"})
DEFAULT_REFERENCE_SOURCE = "imported"
DEFAULT_REFERENCE_LANGUAGE = "en"
_LANGUAGE_RE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")


@dataclass(frozen=True)
class ReferenceRecord:
    """An expert description of a clip, for reference metrics."""

    line: int
    clip: str
    text: str
    source: str
    language: str


class _ReferenceChecker:
    """Shared checks of reference records: clip known, text present and within limits, no exact
    duplicate (the database keeps one reference per clip, source, language and text)."""

    def __init__(self, known_clips: Collection[str] | None) -> None:
        self.known = None if known_clips is None else set(known_clips)
        self.first_line: dict[tuple[str, str, str, str], int] = {}
        self.records: list[ReferenceRecord] = []
        self.errors: list[RecordError] = []

    def add(
        self,
        line: int,
        *,
        clip: object,
        text: object,
        source: str,
        language: str,
        clip_field: str = "clip",
        text_field: str = "text",
        prior: list[RecordError] | None = None,
    ) -> None:
        """Check one reference; keep it only if it (and ``prior`` errors of its line) is clean."""
        errors = list(prior or [])
        name = self._clip(line, clip, clip_field, errors)
        body = self._text(line, text, text_field, errors)
        if name is not None and body is not None and not errors:
            key = (name, source, language, body)
            if key in self.first_line:
                errors.append(
                    RecordError(
                        line,
                        text_field,
                        f"the same reference for clip {_quote(name)} "
                        f"also appears on line {self.first_line[key]}",
                    )
                )
            else:
                self.first_line[key] = line
                self.records.append(ReferenceRecord(line, name, body, source, language))
        self.errors.extend(errors)

    def _clip(self, line: int, value: object, field_: str, errors: list[RecordError]) -> str | None:
        if value is _MISSING:
            errors.append(RecordError(line, field_, f"required key {_quote(field_)} is missing"))
            return None
        if not isinstance(value, str):
            errors.append(RecordError(line, field_, f"must be a string, got {_describe(value)}"))
            return None
        name = clip_name_from_filename(value)
        if not name:
            errors.append(RecordError(line, field_, "must not be empty"))
            return None
        unstorable = _too_long(name, MAX_NAME_CHARS) or unstorable_character(name)
        if unstorable:
            errors.append(RecordError(line, field_, unstorable))
            return None
        if self.known is not None and name not in self.known:
            errors.append(
                RecordError(
                    line,
                    field_,
                    f"unknown clip {_quote(name)} "
                    f"(not among the {len(self.known):,} clips imported)",
                )
            )
            return None
        return name

    def _text(self, line: int, value: object, field_: str, errors: list[RecordError]) -> str | None:
        if value is _MISSING:
            errors.append(RecordError(line, field_, f"required key {_quote(field_)} is missing"))
            return None
        if not isinstance(value, str):
            errors.append(RecordError(line, field_, f"must be a string, got {_describe(value)}"))
            return None
        text = value.strip()
        if not text:
            errors.append(RecordError(line, field_, "must not be empty"))
            return None
        unstorable = _too_long(text, MAX_REFERENCE_CHARS) or unstorable_character(text)
        if unstorable:
            errors.append(RecordError(line, field_, unstorable))
            return None
        return text


def _language_problem(value: str) -> str | None:
    if len(value) > MAX_LANGUAGE_CHARS or not _LANGUAGE_RE.match(value):
        return "must be a language code such as en or de-AT"
    return None


def _key_errors(obj: Mapping[str, Any], allowed: frozenset[str], line: int) -> list[RecordError]:
    """Repeated and unknown keys of a reference object."""
    errors = [RecordError(line, _key_field("", key), _REPEATED_KEY) for key in _duplicate_keys(obj)]
    errors += [
        RecordError(
            line,
            _key_field("", key),
            f"unknown key; allowed keys are {', '.join(sorted(allowed))}",
        )
        for key in obj
        if key not in allowed
    ]
    return errors


def _optional_label(
    obj: Mapping[str, Any], key: str, default: str, line: int, errors: list[RecordError]
) -> str:
    """An optional source or language value, validated; the default when absent or null."""
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        errors.append(RecordError(line, key, f"must be a non-empty string, got {_describe(value)}"))
        return default
    label = value.strip()
    if key == "language":
        problem = _language_problem(label)
        if problem:
            errors.append(RecordError(line, key, f"{problem}, got {_describe(value)}"))
    else:
        unstorable = _too_long(label, MAX_SOURCE_CHARS) or unstorable_character(label)
        if unstorable:
            errors.append(RecordError(line, key, unstorable))
    return label


def parse_references_jsonl(
    data: bytes, *, known_clips: Collection[str]
) -> tuple[list[ReferenceRecord], list[RecordError]]:
    """Parse references, one ``{"clip", "text", "source"?, "language"?}`` object per line
    (blank lines ignored). ``source`` defaults to :data:`DEFAULT_REFERENCE_SOURCE` and
    ``language`` to :data:`DEFAULT_REFERENCE_LANGUAGE`; text is stripped. Returns the error-free
    references and every error."""
    checker = _ReferenceChecker(known_clips)
    for number, text, decode_error in _jsonl_lines(data):
        if decode_error is not None:
            checker.errors.append(decode_error)
            continue
        assert text is not None
        try:
            obj = json_loads_limited(text)
        except ValueError as exc:
            checker.errors.append(
                RecordError(number, "", _json_error_reason(exc, whole_file=False))
            )
            continue
        if not isinstance(obj, dict):
            checker.errors.append(
                RecordError(number, "", f"expected a JSON object, got {_describe(obj)}")
            )
            continue
        prior = _key_errors(obj, REFERENCE_KEYS, number)
        source = _optional_label(obj, "source", DEFAULT_REFERENCE_SOURCE, number, prior)
        language = _optional_label(obj, "language", DEFAULT_REFERENCE_LANGUAGE, number, prior)
        checker.add(
            number,
            clip=obj.get("clip", _MISSING),
            text=obj.get("text", _MISSING),
            source=source,
            language=language,
            prior=prior,
        )
    return checker.records, checker.errors
