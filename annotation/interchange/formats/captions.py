"""Captions as JSON Lines, one caption per line::

    {"clip": "001", "model": "qwen2.5-vl-7b", "overview": "A man ...",
     "windows": [{"start": 0, "end": 4.5, "scene": "...", "shot": "..."}],
     "meta": {"route": "...", "provider": "...", "input_tokens_per_second": 120,
              "retried": false, "re_encoded": false, "validation_errors": []}}

``windows`` and ``meta`` may be left out. The caption checks here also serve the CLIP-CC-Bench
model files (:mod:`annotation.interchange.formats.clip_cc_bench`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from types import MappingProxyType
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
    _seconds,
    _too_long,
    clip_name_from_filename,
    unstorable_character,
)
from annotation.interchange.formats.strict_json import json_loads_limited

# Container durations come from ffprobe, which reports the stream or container length rounded to
# the container's time base (and some muxers pad the last frame); a model that reads the duration
# from elsewhere can legitimately end its last window a fraction of a second later. Half a second
# admits that rounding without admitting a window that describes footage that does not exist.
# Migration 0002 freezes the same number in the database trigger.
WINDOW_END_TOLERANCE_S = 0.5
# Size limits keep one bad line from filling the database or the review page; each is well above
# anything real. The longest Clip-CC-Bench model output (a repetition loop, longva on one clip) is
# 28,099 characters, and such loops are exactly the captions the study wants corrected, so an
# overview may be as long as a reference.
MAX_OVERVIEW_CHARS = 50_000
# A window covers seconds of video; real windows are a sentence or two.
MAX_WINDOW_TEXT_CHARS = 5_000
# Real timelines have tens of windows. The same number bounds a draft's window changes
# (annotation/api/workflow_bodies.py): a caption imported with more could not be corrected.
MAX_WINDOWS = 10_000
CAPTION_KEYS = frozenset({"clip", "model", "overview", "windows", "meta"})
WINDOW_KEYS = frozenset({"start", "end", "scene", "shot"})
# Generation metadata the protocol names. `invalid_kept` is deliberately not here: whether a
# caption is kept although invalid is decided by the import (keep_invalid), not claimed by a file.
# `validation_errors` carries the schema errors the generating pipeline itself recorded.
META_KEYS = frozenset(
    {"input_tokens_per_second", "retried", "re_encoded", "route", "provider", "validation_errors"}
)


@dataclass(frozen=True)
class WindowRecord:
    """One timeline window: seconds from the clip start, and its scene and shot text."""

    start: float
    end: float
    scene: str
    shot: str


@dataclass(frozen=True)
class CaptionRecord:
    """One caption ready to store. ``schema_errors`` is non-empty only for a caption kept with
    ``keep_invalid`` although it failed the schema (its offending parts dropped or emptied)."""

    line: int
    clip: str
    model: str
    overview: str
    windows: tuple[WindowRecord, ...]
    meta: Mapping[str, Any]
    schema_errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParseResult:
    """Captions that may be stored, and every error found in the file."""

    records: tuple[CaptionRecord, ...]
    errors: tuple[RecordError, ...]

    @property
    def ok(self) -> bool:
        """True when the file had no error at all."""
        return not self.errors


class _LineErrors:
    """Collects the errors of one caption line."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.errors: list[RecordError] = []

    def add(self, field_: str, reason: str, *, storable: bool) -> None:
        self.errors.append(RecordError(self.line, field_, reason, storable))

    @property
    def storable(self) -> bool:
        return all(error.storable for error in self.errors)


def _check_name(value: object, key: str, errors: _LineErrors) -> str | None:
    """A required clip or model name, stripped; None (with an unstorable error) when unusable."""
    if value is _MISSING:
        errors.add(key, f"required key {_quote(key)} is missing", storable=False)
        return None
    if not isinstance(value, str):
        errors.add(key, f"must be a string, got {_describe(value)}", storable=False)
        return None
    name = clip_name_from_filename(value) if key == "clip" else value.strip()
    if not name:
        errors.add(key, "must not be empty", storable=False)
        return None
    unstorable = _too_long(name, MAX_NAME_CHARS) or unstorable_character(name)
    if unstorable:
        errors.add(key, unstorable, storable=False)
        return None
    return name


def _check_clip(
    value: object, clip_durations: Mapping[str, float], errors: _LineErrors
) -> tuple[str | None, float | None]:
    """The clip name and its duration; the duration is None for a missing or unknown clip."""
    clip = _check_name(value, "clip", errors)
    if clip is None:
        return None, None
    if clip not in clip_durations:
        errors.add(
            "clip",
            f"unknown clip {_quote(clip)} (not among the {len(clip_durations):,} clips imported)",
            storable=False,
        )
        return clip, None
    return clip, float(clip_durations[clip])


def _check_overview(obj: Mapping[str, Any], errors: _LineErrors) -> str:
    """The overview, stripped. Missing, empty or mistyped overviews are storable as empty text:
    an annotator rejects it and writes the overview."""
    if "overview" not in obj:
        errors.add("overview", 'required key "overview" is missing', storable=True)
        return ""
    return _check_text(obj["overview"], "overview", MAX_OVERVIEW_CHARS, errors, required=True)


def _check_text(
    value: object, field_: str, limit: int, errors: _LineErrors, *, required: bool
) -> str:
    """Text stripped of surrounding whitespace (which carries no content but would count as an
    edit when corrections are diffed). Wrong types are storable as empty text; text over the
    limit is not storable."""
    if not isinstance(value, str):
        errors.add(field_, f"must be a string, got {_describe(value)}", storable=True)
        return ""
    text = value.strip()
    unstorable = _too_long(text, limit) or unstorable_character(text)
    if unstorable:
        errors.add(field_, unstorable, storable=False)
    if required and not text:
        errors.add(field_, "must not be empty", storable=True)
    return text


def _check_seconds(
    window: Mapping[str, Any], key: str, path: str, errors: _LineErrors
) -> float | None:
    """A window time as a finite float, or None (with an unstorable error)."""
    field_ = f"{path}.{key}"
    if key not in window:
        errors.add(field_, f'required number of seconds "{key}" is missing', storable=False)
        return None
    value = window[key]
    # bool is an int in Python, but `true` is not a time in JSON.
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.add(field_, f"must be a number of seconds, got {_describe(value)}", storable=False)
        return None
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        shown = _describe(value) if isinstance(value, float) else "a number too large"
        errors.add(field_, f"must be a finite number of seconds, got {shown}", storable=False)
        return None
    return seconds


def _check_window(
    value: object, index: int, duration: float | None, errors: _LineErrors
) -> tuple[float | None, float | None, str, str]:
    """Start, end (None when unusable), scene and shot of one window."""
    path = f"windows[{index}]"
    if not isinstance(value, dict):
        errors.add(
            path,
            f"must be an object with start, end, scene and shot, got {_describe(value)}",
            storable=False,
        )
        return None, None, "", ""
    _check_keys(value, WINDOW_KEYS, path, errors)
    start = _check_seconds(value, "start", path, errors)
    end = _check_seconds(value, "end", path, errors)
    if start is not None and start < 0:
        errors.add(
            f"{path}.start",
            f"{_seconds(start)} is negative; windows start at 0.0 s or later",
            storable=False,
        )
    if start is not None and end is not None and start >= end:
        errors.add(
            path,
            f"start {_seconds(start)} is not before end {_seconds(end)}",
            storable=False,
        )
    if end is not None and duration is not None and end > duration + WINDOW_END_TOLERANCE_S:
        errors.add(
            f"{path}.end",
            f"{_seconds(end)} is past the clip end ({_seconds(duration)} s; windows may end at "
            f"most {WINDOW_END_TOLERANCE_S} s after it)",
            storable=False,
        )
    texts = []
    for key in ("scene", "shot"):
        if key not in value:
            errors.add(f"{path}.{key}", f'required text "{key}" is missing', storable=True)
            texts.append("")
        else:
            text = _check_text(
                value[key], f"{path}.{key}", MAX_WINDOW_TEXT_CHARS, errors, required=False
            )
            texts.append(text)
    return start, end, texts[0], texts[1]


def _check_windows(
    obj: Mapping[str, Any], duration: float | None, errors: _LineErrors
) -> tuple[WindowRecord, ...]:
    """The timeline. Absent means none; a non-list is storable as none; window errors on times,
    order and size are not storable (the database refuses such timelines)."""
    if "windows" not in obj:
        return ()
    value = obj["windows"]
    if not isinstance(value, list):
        errors.add("windows", f"must be a list of windows, got {_describe(value)}", storable=True)
        return ()
    if len(value) > MAX_WINDOWS:
        errors.add("windows", f"has {len(value):,} windows; a caption may have at most "
                   f"{MAX_WINDOWS:,}", storable=False)
        return ()
    windows: list[WindowRecord] = []
    previous: tuple[float, float] | None = None
    for index, item in enumerate(value):
        start, end, scene, shot = _check_window(item, index, duration, errors)
        if start is None or end is None:
            continue
        if previous is not None:
            previous_start, previous_end = previous
            if start < previous_start:
                errors.add(
                    f"windows[{index}].start",
                    f"{_seconds(start)} is before the previous window's start "
                    f"({_seconds(previous_start)}); windows must be in time order",
                    storable=False,
                )
            elif start < previous_end:
                errors.add(
                    f"windows[{index}].start",
                    f"{_seconds(start)} is before the previous window's end "
                    f"({_seconds(previous_end)}); windows must not overlap",
                    storable=False,
                )
        previous = (start, end)
        windows.append(WindowRecord(start, end, scene, shot))
    return tuple(windows)


def _check_meta(obj: Mapping[str, Any], errors: _LineErrors) -> Mapping[str, Any]:
    """Known generation metadata, typed. Every meta problem is storable: a bad value (or a meta
    that is not an object) is dropped. A null value means unknown, the same as leaving it out."""
    if "meta" not in obj:
        return MappingProxyType({})
    value = obj["meta"]
    if not isinstance(value, dict):
        errors.add("meta", f"must be an object, got {_describe(value)}", storable=True)
        return MappingProxyType({})
    _check_keys(value, META_KEYS, "meta", errors)
    meta: dict[str, Any] = {}
    for key in sorted(META_KEYS & value.keys()):
        item = value[key]
        if item is None:
            continue
        problem = _meta_problem(key, item)
        if problem:
            errors.add(f"meta.{key}", f"{problem}, got {_describe(item)}", storable=True)
        elif key == "input_tokens_per_second":
            meta[key] = float(item)
        elif key == "validation_errors":
            meta[key] = tuple(item)
        elif isinstance(item, str):
            meta[key] = item.strip()
        else:
            meta[key] = item
    return MappingProxyType(meta)


def _meta_problem(key: str, value: object) -> str | None:
    """What is wrong with a meta value, or None."""
    if key == "input_tokens_per_second":
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(float(value))
            and value >= 0
        )
        return None if ok else "must be a finite number of 0 or more"
    if key in ("retried", "re_encoded"):
        return None if isinstance(value, bool) else "must be true or false"
    if key in ("route", "provider"):
        if not isinstance(value, str):
            return "must be a string"
        if len(value.strip()) > MAX_NAME_CHARS:
            return f"must be at most {MAX_NAME_CHARS:,} characters"
        return unstorable_character(value)
    if key == "validation_errors":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return "must be a list of strings"
        problems = (unstorable_character(item) for item in value)
        return next((problem for problem in problems if problem), None)
    return None


def _check_keys(
    obj: Mapping[str, Any], allowed: frozenset[str], prefix: str, errors: _LineErrors
) -> None:
    """Report repeated keys (unstorable: which value was meant is unknown) and unknown keys
    (storable: they are dropped)."""
    for key in _duplicate_keys(obj):
        errors.add(
            _key_field(prefix, key),
            _REPEATED_KEY,
            storable=False,
        )
    for key in obj:
        if key not in allowed:
            errors.add(
                _key_field(prefix, key),
                f"unknown key; allowed keys are {', '.join(sorted(allowed))}",
                storable=True,
            )


class _PairRegistry:
    """Detects a clip x model pair seen earlier in the file or already imported."""

    def __init__(self, existing_pairs: Collection[tuple[str, str]]) -> None:
        # A set is asked as it is (it may be the caller's lazy view of a large study).
        self.existing = existing_pairs if isinstance(existing_pairs, AbstractSet) else set(existing_pairs)
        self.first_line: dict[tuple[str, str], int] = {}

    def check(self, clip: str, model: str, errors: _LineErrors) -> None:
        pair = (clip, model)
        shown = f"clip {_quote(clip)} with model {_quote(model)}"
        if pair in self.existing:
            errors.add("clip x model", f"{shown} is already imported", storable=False)
        elif pair in self.first_line:
            errors.add(
                "clip x model",
                f"{shown} also appears on line {self.first_line[pair]}",
                storable=False,
            )
        else:
            self.first_line[pair] = errors.line


def _caption_from_object(
    obj: Any,
    errors: _LineErrors,
    *,
    clip_durations: Mapping[str, float],
    pairs: _PairRegistry,
) -> CaptionRecord | None:
    """Validate one decoded caption line; a record (possibly with emptied parts) when the clip
    and model are usable, else None. Errors land in ``errors``."""
    if not isinstance(obj, dict):
        errors.add("", f"expected a JSON object, got {_describe(obj)}", storable=False)
        return None
    _check_keys(obj, CAPTION_KEYS, "", errors)
    clip, duration = _check_clip(obj.get("clip", _MISSING), clip_durations, errors)
    model = _check_name(obj.get("model", _MISSING), "model", errors)
    overview = _check_overview(obj, errors)
    windows = _check_windows(obj, duration, errors)
    meta = _check_meta(obj, errors)
    if clip is None or model is None:
        return None
    pairs.check(clip, model, errors)
    return CaptionRecord(errors.line, clip, model, overview, windows, meta)


def _result(
    checked: list[tuple[CaptionRecord | None, _LineErrors]], *, keep_invalid: bool
) -> ParseResult:
    """Keep error-free records; with keep_invalid also those whose every error is storable."""
    records: list[CaptionRecord] = []
    errors: list[RecordError] = []
    for record, line_errors in checked:
        errors.extend(line_errors.errors)
        if record is None:
            continue
        if not line_errors.errors:
            records.append(record)
        elif keep_invalid and line_errors.storable:
            schema_errors = tuple(str(error) for error in line_errors.errors)
            records.append(replace(record, schema_errors=schema_errors))
    return ParseResult(tuple(records), tuple(errors))


def parse_captions_jsonl(
    data: bytes,
    *,
    clip_durations: Mapping[str, float],
    existing_pairs: Collection[tuple[str, str]] = (),
    keep_invalid: bool = False,
) -> ParseResult:
    """Parse a JSON Lines file of captions, one object per line; blank lines are ignored.

    ``clip_durations`` maps every known clip name to its duration in seconds; ``existing_pairs``
    are (clip, model) pairs already imported. Every problem of every line is reported (a line that
    is not UTF-8 does not stop the rest). Without ``keep_invalid`` the records are the error-free
    lines; with it, also the lines whose errors are all ``storable``, with the offending parts
    emptied or dropped and ``schema_errors`` naming them. ``errors`` always lists every error.
    """
    pairs = _PairRegistry(existing_pairs)
    checked: list[tuple[CaptionRecord | None, _LineErrors]] = []
    for number, text, decode_error in _jsonl_lines(data):
        errors = _LineErrors(number)
        record = None
        if decode_error is not None:
            errors.errors.append(decode_error)
        else:
            assert text is not None
            try:
                obj = json_loads_limited(text)
            except ValueError as exc:
                errors.add("", _json_error_reason(exc, whole_file=False), storable=False)
            else:
                record = _caption_from_object(
                    obj, errors, clip_durations=clip_durations, pairs=pairs
                )
        checked.append((record, errors))
    return _result(checked, keep_invalid=keep_invalid)
