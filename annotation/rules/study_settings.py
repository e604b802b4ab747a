"""A study's settings checked field by field, and the slug suggested from a name.

Pure: no Django. The services (annotation.services.studies) call these before they write, the
REST API answers their messages under each field's name, and the New study page's script
(frontend/static/frontend/study-form.js) makes the same checks in the browser.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

SLUG_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SLUG_MIN, SLUG_MAX = 2, 60
# Paths under /studies/ that are pages, not studies.
RESERVED_SLUGS = frozenset({"new"})
# Where the words that are routes of their own under /studies/ and /api/studies/ come from:
# annotation.apps sets it to annotation.routes.study_route_words (the URL configuration) when
# Django starts; this module stays free of Django.
route_words: Callable[[], Iterable[str]] = frozenset


def reserved_slugs() -> frozenset[str]:
    """Slugs no study may take: the words the URL configuration routes under `studies/`."""
    return RESERVED_SLUGS | frozenset(route_words())
NAME_MAX = 200
DESCRIPTION_MAX = 5000
THRESHOLDS_MAX_COUNT = 8
THRESHOLD_MAX_WORDS = 1000
LENGTH_BAND_MAX = 0.5
SPREAD_GAP_MAX = 1000
UNDO_SECONDS_MAX = 3600
PRACTICE_MIN_ITEMS_RANGE = (1, 200)
GOLD_RATE_MAX = 0.5
# The settings of gold and qualification, changed through annotation.services.gold (which checks
# the gold pool too), never through the general settings.
GOLD_FIELDS = (
    "requires_qualification", "practice_min_items", "practice_min_overview_agreement", "practice_min_mode_f1",
    "practice_min_window_agreement", "gold_rate", "gold_drift_threshold",
)

# What each setting means, for the pages and the API schema.
MEANINGS = {
    "word_thresholds": "A caption fails at threshold t when correcting its overview changed at least t words "
                       "(the protocol reports 1, 3, 6 and 16). Whole numbers, ascending.",
    "near_total_cut": "A repair is near-total when the corrected text's character similarity to the original "
                      "is below this (0.55 in the protocol). Between 0 and 1.",
    "length_band": "A repaired text counts as the same length when it changed by at most this share "
                   "(5 % in the protocol); longer is lengthened, shorter is shortened. "
                   "From 0 to 50 % (0 to 0.5 in the API).",
    "assignment_design": "How captions reach annotators; one model per clip keeps one model's caption from "
                         "anchoring the judgement of another's.",
    "spread_gap": "Spread design: at least this many other items between two captions of one clip.",
    "overlap_share": "The share of captions that also go to a second annotator, for agreement: 0 to 100 % "
                     "(0 to 1 in the API).",
    "undo_seconds": "How long locking, submitting and approving can be undone; empty: the site's UNDO_SECONDS.",
    "caption_language": "The language the captions are written in: it decides what a word is for edit size.",
    "description": "Shown to annotators on their start page.",
    "erase_on_withdrawal": "When an annotator withdraws, erase the content of their annotations at once, whatever "
                           "they ask (off by default: erased only when they ask). Withdrawn people's work never "
                           "counts, erased or not.",
    # Gold and qualification (annotation.rules.gold; set on the practice page and /api/studies/<slug>/practice/).
    "requires_qualification": "Only annotators who passed the practice set receive real work (off by default). "
                              "The practice set comes first in every new annotator's queue either way.",
    "practice_min_items": "The practice set's pass rule: at least this many practice items done (default 5: "
                          "fewer says little about a person).",
    "practice_min_overview_agreement": "The pass rule: the share of practice items whose overview verdict "
                                       "(accept or reject) matches the gold verdict, 0 to 1 (default 0.8: four "
                                       "in five).",
    "practice_min_mode_f1": "The pass rule: failure-mode F1 against the gold modes over the practice items "
                            "(micro-averaged over unit and mode), 0 to 1 (default 0.5: modes are harder to "
                            "agree on than verdicts).",
    "practice_min_window_agreement": "The pass rule: the share of the practice items' windows whose verdict "
                                     "matches the gold one, 0 to 1 (default 0.7).",
    "gold_rate": "The share of each annotator's items that are hidden gold checks, 0 to 0.5 (0.05: about one "
                 "in twenty; 0: none). Refused when the gold items outside the practice set cannot serve it.",
    "gold_drift_threshold": "Warn when an annotator's overview agreement on their last 10 gold checks falls "
                            "below this, 0 to 1 (default 0.7).",
}


def slug_suggest(name: str) -> str:
    """A slug for `name`: ASCII letters and digits in lowercase, words joined by hyphens."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[:SLUG_MAX].rstrip("-")


def slug_problem(slug: Any) -> str | None:
    """Why `slug` cannot name a study, or None."""
    if not isinstance(slug, str) or not slug:
        return "Give the study a slug: the short name in its web address."
    if not SLUG_MIN <= len(slug) <= SLUG_MAX:
        return f"A slug is {SLUG_MIN} to {SLUG_MAX} characters long; this one has {len(slug)}."
    if not SLUG_PATTERN.match(slug):
        return ("A slug holds lowercase letters, digits and single hyphens between them "
                f"(such as walk-study); {slug!r:.70} does not.")
    if slug in reserved_slugs():
        return f"{slug!r} is the name of a page; choose another slug."
    return None


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _text(value: Any, what: str, limit: int, *, required: bool) -> tuple[str | None, str | None]:
    if not isinstance(value, str):
        return None, f"The {what} must be text."
    text = value.strip()
    if required and not text:
        return None, f"Give the study a {what}."
    if len(text) > limit:
        return None, f"The {what} is {len(text):,} characters long; the limit is {limit:,}."
    if "\x00" in text:
        return None, f"The {what} contains a NUL character (\\u0000), which cannot be stored."
    return text, None


def _thresholds(value: Any) -> tuple[list[int] | None, str | None]:
    if not isinstance(value, list) or not value:
        return None, "Give at least one word threshold, e.g. 1, 3, 6, 16."
    if len(value) > THRESHOLDS_MAX_COUNT:
        return None, f"At most {THRESHOLDS_MAX_COUNT} word thresholds; there are {len(value)}."
    numbers = []
    for item in value:
        number = _whole(item)
        if number is None:
            return None, f"Word thresholds are whole numbers of words; {item!r:.20} is not."
        if not 1 <= number <= THRESHOLD_MAX_WORDS:
            return None, f"A word threshold is from 1 to {THRESHOLD_MAX_WORDS:,} words; {number} is not."
        numbers.append(number)
    for before, after in zip(numbers, numbers[1:], strict=False):
        if after <= before:
            return None, f"Word thresholds must ascend, each larger than the one before: {after} comes after {before}."
    return numbers, None


def _number(
    value: Any, what: str, low: float, high: float, *, low_open: bool, high_open: bool
) -> tuple[float | None, str | None]:
    if not _is_number(value):
        return None, f"The {what} must be a number."
    number = float(value)
    too_low = number <= low if low_open else number < low
    too_high = number >= high if high_open else number > high
    if too_low or too_high:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return None, f"The {what} must lie in {left}{low:g}, {high:g}{right}; {number:g} does not."
    return number, None


def _integer(value: Any, what: str, low: int, high: int) -> tuple[int | None, str | None]:
    number = _whole(value)
    if number is None:
        return None, f"The {what} must be a whole number."
    if not low <= number <= high:
        return None, f"The {what} must be from {low} to {high:,}; {number} is not."
    return number, None


def _choice(value: Any, what: str, choices: Iterable[str]) -> tuple[str | None, str | None]:
    allowed = list(choices)
    if value not in allowed:
        return None, f"The {what} must be one of {', '.join(allowed)}; {value!r:.40} is not."
    return value, None


def settings_check(
    values: Mapping[str, Any], *, designs: Iterable[str], languages: Iterable[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the values cleaned, {field: why refused}) for the fields present in `values`.

    `taxonomy` and the slug's uniqueness need the database: the service checks those."""
    cleaned: dict[str, Any] = {}
    errors: dict[str, str] = {}

    def keep(field: str, result: tuple[Any, str | None]) -> None:
        value, problem = result
        if problem:
            errors[field] = problem
        else:
            cleaned[field] = value

    for field, value in values.items():
        if field == "name":
            keep(field, _text(value, "name", NAME_MAX, required=True))
        elif field == "slug":
            problem = slug_problem(value)
            keep(field, (value, problem))
        elif field == "description":
            keep(field, _text(value, "description", DESCRIPTION_MAX, required=False))
        elif field == "word_thresholds":
            keep(field, _thresholds(value))
        elif field == "near_total_cut":
            keep(field, _number(value, "near-total cut", 0, 1, low_open=True, high_open=True))
        elif field == "length_band":
            keep(field, _number(value, "length band", 0, LENGTH_BAND_MAX, low_open=False, high_open=False))
        elif field == "overlap_share":
            keep(field, _number(value, "overlap", 0, 1, low_open=False, high_open=False))
        elif field == "spread_gap":
            keep(field, _integer(value, "spread gap", 0, SPREAD_GAP_MAX))
        elif field == "undo_seconds":
            keep(field, (None, None) if value is None else _integer(value, "undo time", 0, UNDO_SECONDS_MAX))
        elif field == "assignment_design":
            keep(field, _choice(value, "assignment design", designs))
        elif field == "caption_language":
            keep(field, _choice(value, "caption language", languages))
        elif field in ("requires_qualification", "erase_on_withdrawal"):
            keep(field, (value, None) if isinstance(value, bool) else (None, "Say true or false."))
        elif field == "practice_min_items":
            keep(field, _integer(value, "minimum of practice items", *PRACTICE_MIN_ITEMS_RANGE))
        elif field == "practice_min_overview_agreement":
            keep(field, _number(value, "minimum overview agreement", 0, 1, low_open=False, high_open=False))
        elif field == "practice_min_mode_f1":
            keep(field, _number(value, "minimum failure-mode F1", 0, 1, low_open=False, high_open=False))
        elif field == "practice_min_window_agreement":
            keep(field, _number(value, "minimum window agreement", 0, 1, low_open=False, high_open=False))
        elif field == "gold_rate":
            keep(field, _number(value, "gold rate", 0, GOLD_RATE_MAX, low_open=False, high_open=False))
        elif field == "gold_drift_threshold":
            keep(field, _number(value, "drift threshold", 0, 1, low_open=False, high_open=False))
        else:
            cleaned[field] = value
    return cleaned, errors
