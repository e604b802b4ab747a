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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

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
    def key(self) -> tuple[str, str, str, str, str]:
        """What one score is of: a caption, a metric, a version and a source."""
        return (self.clip, self.model, self.metric, self.version, self.source)


def _text_problem(value: object, field: str) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"{field}: must be a non-empty string"
    if len(value) > MAX_TEXT:
        return f"{field}: longer than {MAX_TEXT} characters"
    return None


def parse_scores(lines: Iterable[str], defaults: Defaults = NO_DEFAULTS
                 ) -> tuple[list[ExternalLine], list[str]]:
    """Return (good lines, problems) of a JSON Lines text; blank lines are ignored.

    Problems name the line and field: bad JSON, unknown keys, a value that is not a finite
    number, an unknown direction or references, a bad metric name, and a score repeated (same
    caption, metric, version and source) within the file.
    """
    good: list[ExternalLine] = []
    problems: list[str] = []
    seen: dict[tuple[str, str, str, str, str], int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not valid JSON ({error.msg})")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {number}: expected a JSON object")
            continue
        found = []
        for key in sorted(set(record) - KNOWN_KEYS):
            found.append(f"{key}: unknown field")
        merged = {"metric": defaults.metric, "direction": defaults.direction,
                  "version": defaults.version, "source": defaults.source,
                  "references": defaults.references, **record}
        for field in ("clip", "model", "metric", "version", "source"):
            problem = _text_problem(merged.get(field), field)
            if problem:
                found.append(problem if merged.get(field) is not None else f"{field}: missing")
        value = merged.get("value")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                float(value)):
            found.append(f"value: must be a finite number, not {json.dumps(value)}")
        if isinstance(merged.get("metric"), str) and not METRIC_NAME.match(merged["metric"]):
            found.append("metric: lower-case letters, digits and _, starting with a letter "
                         "(at most 60)")
        if merged.get("direction") not in DIRECTIONS:
            found.append(f"direction: must be higher or lower (which way is better), not "
                         f"{json.dumps(merged.get('direction'))}")
        if merged.get("references") not in REFERENCES:
            found.append(f"references: must be none or imported, not "
                         f"{json.dumps(merged.get('references'))}")
        if found:
            problems += [f"line {number}, {problem}" for problem in found]
            continue
        assert isinstance(value, int | float)
        item = ExternalLine(number, merged["clip"], merged["model"], float(value),
                            merged["metric"], merged["direction"], merged["version"],
                            merged["source"], merged["references"])
        if item.key in seen:
            problems.append(f"line {number}: repeats the score of line {seen[item.key]} (same "
                            "clip, model, metric, version and source)")
            continue
        seen[item.key] = number
        good.append(item)
    return good, problems
