"""The default failure taxonomy (PROTOCOL.md section 2) and its content hash.

Pure data and functions: the migration that creates the default taxonomy and
the services that freeze and compare versions both use them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_TAXONOMY_NAME = "redline"
DEFAULT_TAXONOMY_VERSION = 1

DEFAULT_MODES: tuple[dict[str, str], ...] = (
    {
        "key": "factual",
        "name": "Factual error",
        "definition": (
            "An observable fact is stated wrongly: wrong person, object, action, attribute, "
            "count, location or spatial relation."
        ),
        "decision_test": 'Can one point at a frame and say "not that"?',
        "level": "unit",
    },
    {
        "key": "omission",
        "name": "Important omission",
        "definition": (
            "A central event or piece of information needed for an adequate description is "
            "missing; optional background detail is not marked."
        ),
        "decision_test": "Would a reader with only the caption be misled?",
        "level": "unit",
    },
    {
        "key": "camera",
        "name": "Camera / shot",
        "definition": (
            "Camera motion, zoom, cuts, framing, occlusion or reflection is taken for something "
            "happening in the scene."
        ),
        "decision_test": "Did the pixels move because the camera moved, or the world?",
        "level": "unit",
    },
    {
        "key": "segmentation",
        "name": "Segmentation",
        "definition": (
            "Windows merge distinct events, miss a shot change, sit on a fixed grid rather than "
            "on content, or are timestamped materially away from the event."
        ),
        "decision_test": "Are the timestamps where the events are?",
        "level": "caption",
    },
    {
        "key": "inference",
        "name": "Unsupported inference",
        "definition": (
            "Intent, emotion, identity, cause or relationship asserted without support in the "
            "video, including identification from outside knowledge."
        ),
        "decision_test": "Could any viewer verify this from the footage alone?",
        "level": "unit",
    },
    {
        "key": "temporal",
        "name": "Temporal / order",
        "definition": (
            "Order, timing, duration, repetition or simultaneity of events is materially "
            "misrepresented."
        ),
        "decision_test": "Is what happened right but when wrong?",
        "level": "unit",
    },
)

DEFAULT_PRECEDENCE_RULES: tuple[dict[str, str], ...] = (
    {
        "prefer": "camera",
        "over": "factual",
        "rule": (
            "When a misreading is caused by camera motion, tag the unit camera, not factual."
        ),
    },
)

MODE_FIELDS = ("key", "name", "definition", "decision_test", "level")


def taxonomy_hash(
    modes: Iterable[Mapping[str, Any]], precedence_rules: Iterable[Mapping[str, Any]]
) -> str:
    """sha256 of the modes (in order) and rules, stable across key order and versions of Python."""
    payload = {
        "modes": [{field: mode[field] for field in MODE_FIELDS} for mode in modes],
        "precedence_rules": [dict(rule) for rule in precedence_rules],
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def precedence_conflicts(mode_keys: Iterable[str], rules: Iterable[Mapping[str, Any]]) -> list[str]:
    """Warnings for a unit tagged with both sides of a precedence rule (e.g. camera and factual)."""
    tagged = set(mode_keys)
    return [
        f"Tagged both {rule['prefer']} and {rule['over']}: {rule['rule']}"
        for rule in rules
        if rule["prefer"] in tagged and rule["over"] in tagged
    ]
