"""Per-caption scores computed elsewhere (a Video-LLM judge, a human rating, another toolkit):
the JSON Lines format ``import_scores`` reads, parsed and checked without a database.

One line per score::

    {"clip": "001", "model": "my-model-7b", "value": 3,
     "metric": "vlm_defects", "direction": "lower", "version": "1", "source": "qwen2.5-vl-7b",
     "references": "none"}

``metric``, ``direction``, ``version``, ``source`` and ``references`` may be left out of the
lines and given once for the file (:class:`Defaults`). ``direction`` says which way is better:
``higher`` or ``lower``. ``references``: ``none`` (the score read only the caption and the
video: a control row of Table 1) or ``imported`` (it compared the caption with the clip's
imported references). Every problem is reported as ``line N, field: reason``.

Each line is read by :func:`annotation.interchange.formats.strict_json.json_loads_strict`, within the limits
every body and file Redline reads keeps to (depth, digits, NaN, NUL, surrogates); a value is a
finite number or refused. Pure code: no Django.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from annotation.interchange.formats.common import _duplicate_keys, _jsonl_lines, unstorable_character
from annotation.interchange.formats.strict_json import JSONRefused, json_loads_strict

DIRECTIONS = ("higher", "lower")
REFERENCES = ("none", "imported")
METRIC_NAME = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
KNOWN_KEYS = frozenset({"clip", "model", "value", "metric", "direction", "version", "source",
                        "references"})
MAX_TEXT = 200


@dataclass(frozen=True)
class Defaults:
    """File-wide values for the lines that leave a field out (None: every line must say it)."""

    metric: str | None = None
    direction: str | None = None
    version: str | None = None
    source: str | None = None
    references: str = "none"


NO_DEFAULTS = Defaults()


@dataclass(frozen=True)
class ExternalLine:
    line: int
    clip: str
    model: str
    value: float
    metric: str
    direction: str
    version: str
    source: str
    references: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What one score is of: a caption, a metric and a source (a caption has one score of a
        metric from a source; its version says which run gave it)."""
        return (self.clip, self.model, self.metric, self.source)


def _text_problem(value: object, field: str) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"{field}: must be a non-empty string"
    if len(value) > MAX_TEXT:
        return f"{field}: longer than {MAX_TEXT} characters"
    return None


def defaults_problems(defaults: Defaults) -> list[str]:
    """Text given for the whole file that the database cannot store (a line's own text was
    refused by the reader already), each said once."""
    given = {"metric": defaults.metric, "version": defaults.version, "source": defaults.source}
    return [f"{field}: text {reason} (given for the whole file)" for field, value in given.items()
            if isinstance(value, str) and (reason := unstorable_character(value))]


def _read_line(number: int, text: str) -> dict[str, Any] | str:
    """The line's object, or the problem with it (``line N[, field]: reason``)."""
    try:
        record = json_loads_strict(text)
    except json.JSONDecodeError as error:
        return f"line {number}: not valid JSON ({error.msg} at column {error.colno})"
    except JSONRefused as refused:
        place = f", {refused.place}" if refused.place else ""
        return f"line {number}{place}: {refused.reason}"
    if not isinstance(record, dict):
        return f"line {number}: expected a JSON object"
    return record


def parse_scores(data: bytes, defaults: Defaults = NO_DEFAULTS
                 ) -> tuple[list[ExternalLine], list[str]]:
    """Return (good lines, problems) of a JSON Lines file; blank lines are ignored.

    Problems name the line and field: bytes that are not UTF-8, JSON the strict reader refuses
    (too deep, too many digits, NaN, NUL, an unpaired surrogate), a key given twice, unknown
    keys, a value that is not a finite number, an unknown direction or references, a bad metric
    name, and a score repeated (same caption, metric and source) within the file.
    """
    good: list[ExternalLine] = []
    problems = defaults_problems(defaults)
    if problems:
        return [], problems
    seen: dict[tuple[str, str, str, str], int] = {}
    for number, text, undecodable in _jsonl_lines(data):
        if undecodable is not None or text is None:
            problems.append(str(undecodable))
            continue
        record = _read_line(number, text)
        if isinstance(record, str):
            problems.append(record)
            continue
        found = [f"{key}: given more than once in the line" for key in _duplicate_keys(record)]
        for key in sorted(set(record) - KNOWN_KEYS):
            found.append(f"{_shown_key(key)}: unknown field")
        merged = {"metric": defaults.metric, "direction": defaults.direction,
                  "version": defaults.version, "source": defaults.source,
                  "references": defaults.references, **record}
        for field in ("clip", "model", "metric", "version", "source"):
            problem = _text_problem(merged.get(field), field)
            if problem:
                found.append(problem if merged.get(field) is not None else f"{field}: missing")
        value = merged.get("value")
        # The reader refused integers too long for a float, so float() cannot overflow here.
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                float(value)):
            found.append(f"value: must be a finite number, not {_shown(value)}")
        if isinstance(merged.get("metric"), str) and not METRIC_NAME.match(merged["metric"]):
            found.append("metric: lower-case letters, digits and _, starting with a letter "
                         "(at most 60)")
        if merged.get("direction") not in DIRECTIONS:
            found.append(f"direction: must be higher or lower (which way is better), not "
                         f"{_shown(merged.get('direction'))}")
        if merged.get("references") not in REFERENCES:
            found.append(f"references: must be none or imported, not "
                         f"{_shown(merged.get('references'))}")
        if found:
            problems += [f"line {number}, {problem}" for problem in found]
            continue
        assert isinstance(value, int | float)
        item = ExternalLine(number, merged["clip"], merged["model"], float(value),
                            merged["metric"], merged["direction"], merged["version"],
                            merged["source"], merged["references"])
        if item.key in seen:
            problems.append(f"line {number}: repeats the score of line {seen[item.key]} (same "
                            "clip, model, metric and source)")
            continue
        seen[item.key] = number
        good.append(item)
    return good, problems


def _shown(value: object) -> str:
    """A value as a message quotes it: as JSON, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _shown_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", key) else _shown(key)
