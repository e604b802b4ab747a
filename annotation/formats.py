"""Parsing and validation of the files Redline imports: captions, references, clip properties.

Pure code: no Django, no database. Every parser reads ``bytes`` (what an upload or a file gives)
and returns frozen records plus :class:`RecordError` values that say, for a person, which line,
which field and why. The import services decide what to store; the database constraints refuse
what cannot be stored whatever the services decide, and the ``storable`` flag on each caption error
says in advance which side of that line an error falls on.

Formats
-------
Captions (JSON Lines, one caption per line)::

    {"clip": "001", "model": "qwen2.5-vl-7b", "overview": "A man ...",
     "windows": [{"start": 0, "end": 4.5, "scene": "...", "shot": "..."}],
     "meta": {"route": "...", "provider": "...", "input_tokens_per_second": 120,
              "retried": false, "re_encoded": false, "validation_errors": []}}

``windows`` and ``meta`` may be left out. Clip-CC-Bench model outputs (``{"001": "text"}``)
become overview-only captions.

References: JSON Lines ``{"clip", "text", "source"?, "language"?}``; the Clip-CC-Bench ground
truth array; the FM-V2T description CSVs.

Clip properties: a CSV with a ``clip`` column and any of :data:`PROPERTY_FIELDS` plus
``manipulated``.

Line numbers
------------
``RecordError.line`` and ``*.line`` are 1-based. For JSON Lines and CSV files they are text lines
of the file (a CSV record that spans lines is numbered by its first line); for whole-JSON files
(Clip-CC-Bench) they are the 1-based position of the entry in the array or object. Line 0 means
the file as a whole.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

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
# The longest Clip-CC-Bench reference is 5,534 characters (1,011 words).
MAX_REFERENCE_CHARS = 50_000
# Clip and model names are stored in 200-character columns.
MAX_NAME_CHARS = 200
# Reference source and language columns are 100 and 20 characters.
MAX_SOURCE_CHARS = 100
MAX_LANGUAGE_CHARS = 20

CAPTION_KEYS = frozenset({"clip", "model", "overview", "windows", "meta"})
WINDOW_KEYS = frozenset({"start", "end", "scene", "shot"})
# Generation metadata the protocol names. `invalid_kept` is deliberately not here: whether a
# caption is kept although invalid is decided by the import (keep_invalid), not claimed by a file.
# `validation_errors` carries the schema errors the generating pipeline itself recorded.
META_KEYS = frozenset(
    {"input_tokens_per_second", "retried", "re_encoded", "route", "provider", "validation_errors"}
)
REFERENCE_KEYS = frozenset({"clip", "text", "source", "language"})
CLIP_CC_REFERENCE_KEYS = frozenset({"id", "file_link", "summary"})

DEFAULT_REFERENCE_SOURCE = "imported"
DEFAULT_REFERENCE_LANGUAGE = "en"
CLIP_CC_SOURCE = "clip-cc-bench"
FMV2T_SOURCE = "fm-v2t"
FMV2T_CLIP_COLUMN = "Video-Filename"

PROPERTY_FIELDS = (
    "content_type",
    "camera_platform",
    "scene_complexity",
    "shot_scale",
    "motion_intensity",
)
_LEVELS = ("low", "medium", "high", "unclear")
PROPERTY_VALUES: dict[str, tuple[str, ...]] = {
    "content_type": (
        "domestic_lifestyle",
        "urban_vehicle",
        "nature_outdoor",
        "product_object",
        "people_activity",
        "other",
        "unclear",
    ),
    "camera_platform": (
        "handheld",
        "tripod_static",
        "vehicle_mounted",
        "drone_aerial",
        "gimbal_smooth",
        "other",
        "unclear",
    ),
    "scene_complexity": _LEVELS,
    "shot_scale": ("extreme_wide", "wide", "medium", "close", "extreme_close", "unclear"),
    "motion_intensity": _LEVELS,
}
MANIPULATED_COLUMN = "manipulated"
_TRUE_WORDS = frozenset({"true", "yes", "1"})
_FALSE_WORDS = frozenset({"false", "no", "0"})

# Extensions removed by clip_name_from_filename. Only known video containers are removed so that a
# dotted name written without an extension ("take.2") names the same clip as its file
# ("take.2.mp4").
VIDEO_EXTENSIONS = frozenset(
    {
        "3g2", "3gp", "asf", "avi", "dv", "f4v", "flv", "m2t", "m2ts", "m4v", "mkv", "mov",
        "mp4", "mpeg", "mpg", "mts", "mxf", "ogg", "ogv", "qt", "ts", "vob", "webm", "wmv",
    }
)  # fmt: skip

# Tells a key that is absent from one whose value is null.
_MISSING: Any = object()

_LANGUAGE_RE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_UTF8_BOM = b"\xef\xbb\xbf"
_REPEATED_KEY = "appears more than once in the same object; which value is meant is unclear"


# --------------------------------------------------------------------------------------------
# Records and errors


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
class RecordError:
    """What is wrong with one line of an imported file.

    ``storable`` is True for a schema problem the protocol lets a caption be kept with (as
    ``invalid_kept``); False when the record cannot be stored at all. Reference and property
    errors are never storable: those imports have no keep-invalid mode.
    """

    line: int
    field: str
    reason: str
    storable: bool = False

    def __str__(self) -> str:
        where = "file" if self.line == 0 else f"line {self.line}"
        if self.field:
            where = f"{where}, {self.field}"
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class ParseResult:
    """Captions that may be stored, and every error found in the file."""

    records: tuple[CaptionRecord, ...]
    errors: tuple[RecordError, ...]

    @property
    def ok(self) -> bool:
        """True when the file had no error at all."""
        return not self.errors


@dataclass(frozen=True)
class ReferenceRecord:
    """An expert description of a clip, for reference metrics."""

    line: int
    clip: str
    text: str
    source: str
    language: str


@dataclass(frozen=True)
class ClipPropertiesRecord:
    """Properties of one clip. ``properties`` holds only the fields the file gave a value for;
    ``manipulated`` is None when the file left it unsaid."""

    line: int
    clip: str
    properties: Mapping[str, str]
    manipulated: bool | None


# --------------------------------------------------------------------------------------------
# Small helpers


def clip_name_from_filename(name: str) -> str:
    """The clip name for a video file name or path: its last path component without a known video
    extension (``"videos/001.mp4"`` -> ``"001"``). Names without such an extension are returned
    stripped but otherwise unchanged, so the function is idempotent."""
    base = re.split(r"[/\\]", name.strip())[-1]
    stem, dot, extension = base.rpartition(".")
    if dot and stem and extension.lower() in VIDEO_EXTENSIONS:
        return stem
    return base


def normalise_choice(value: str) -> str:
    """A human spelling of a choice as its key: lowercase, every run of characters other than
    letters and digits becomes one ``_``, none at the ends (``"Tripod / static"`` ->
    ``"tripod_static"``)."""
    return re.sub(r"[^a-z0-9]+", "_", value.strip().lower()).strip("_")


def _describe(value: object) -> str:
    """A short, human description of a JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, int | float):
        return f"the number {_shorten(repr(value))}"
    if isinstance(value, str):
        return f"the string {_shorten(_quote(value))}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _shorten(shown: str, limit: int = 40) -> str:
    """Long values cut short: an error message names the value, it need not repeat it."""
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _seconds(value: float) -> str:
    """A time as written in messages: Python's shortest float repr (12.0, 14.2)."""
    return repr(float(value))


def _quote(text: str) -> str:
    """Text in double quotes, readable but safe to store: control characters are escaped, and so
    is everything non-ASCII when the text holds an unpaired surrogate."""
    quoted = json.dumps(text, ensure_ascii=False)
    return json.dumps(text) if _SURROGATE_RE.search(quoted) else quoted


def _unstorable_character(text: str) -> str | None:
    """Why the database cannot store ``text``, or None. JSON admits both of these as ``\\u``
    escapes, but PostgreSQL text refuses NUL and UTF-8 cannot encode a lone surrogate."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    match = _SURROGATE_RE.search(text)
    if match:
        code = ord(match.group())
        return f"contains an unpaired surrogate (\\u{code:04x}), which UTF-8 cannot encode"
    return None


def _key_field(prefix: str, key: str) -> str:
    """The field path of a key, quoting keys that are not plain words."""
    shown = key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) else _quote(key)
    return f"{prefix}.{shown}" if prefix else shown


def _too_long(text: str, limit: int) -> str | None:
    if len(text) > limit:
        return f"is {len(text):,} characters long; the limit is {limit:,}"
    return None


class _JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers every key/value pair, duplicates included, because
    ``json`` silently keeps only the last value of a repeated key."""

    pairs: list[tuple[str, Any]]


def _object_pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject(pairs)
    obj.pairs = pairs
    return obj


def _duplicate_keys(obj: Mapping[str, Any]) -> list[str]:
    seen: set[str] = set()
    repeated: list[str] = []
    for key, _ in getattr(obj, "pairs", ()):
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    return repeated


def _loads(text: str) -> Any:
    """``json.loads`` keeping duplicate keys visible; raises ValueError for anything unparsable."""
    try:
        return json.loads(text, object_pairs_hook=_object_pairs)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _json_error_reason(exc: ValueError, *, whole_file: bool) -> str:
    if isinstance(exc, json.JSONDecodeError):
        where = f"line {exc.lineno} column {exc.colno}" if whole_file else f"column {exc.colno}"
        return f"not valid JSON: {exc.msg} at {where}"
    return f"not valid JSON: {exc}"


def _utf8_reason(exc: UnicodeDecodeError, *, file_offset: int, line_offset: int | None) -> str:
    bad = exc.object[exc.start]
    within = f", byte {line_offset} of this line" if line_offset is not None else ""
    return (
        f"not valid UTF-8: byte 0x{bad:02x} at offset {file_offset} of the file{within} "
        f"({exc.reason})"
    )


def _decode_whole(data: bytes) -> tuple[str | None, RecordError | None]:
    """The file as text, or an error naming the text line and byte offset of the first bad byte.

    A leading UTF-8 byte-order mark (as some editors write) is dropped."""
    body = data[len(_UTF8_BOM) :] if data.startswith(_UTF8_BOM) else data
    skipped = len(data) - len(body)
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        offset = exc.start + skipped
        text_line = data.count(b"\n", 0, offset) + 1
        line_start = data.rfind(b"\n", 0, offset) + 1
        reason = _utf8_reason(exc, file_offset=offset, line_offset=offset - line_start)
        return None, RecordError(text_line, "", reason)


def _jsonl_lines(data: bytes) -> Iterator[tuple[int, str | None, RecordError | None]]:
    """Each non-blank line as (line number, text, None), or (line number, None, error) for a line
    that is not valid UTF-8; one bad line does not stop the others from being read."""
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line_offset = offset
        offset += len(raw) + 1
        skip = 0
        if number == 1 and raw.startswith(_UTF8_BOM):
            skip = len(_UTF8_BOM)
        chunk = raw[skip:].rstrip(b"\r")
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = _utf8_reason(
                exc, file_offset=line_offset + skip + exc.start, line_offset=skip + exc.start
            )
            yield number, None, RecordError(number, "", reason)
            continue
        if text.strip():
            yield number, text, None


# --------------------------------------------------------------------------------------------
# Captions


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
    unstorable = _too_long(name, MAX_NAME_CHARS) or _unstorable_character(name)
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
    unstorable = _too_long(text, limit) or _unstorable_character(text)
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
        return _unstorable_character(value)
    if key == "validation_errors":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return "must be a list of strings"
        problems = (_unstorable_character(item) for item in value)
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
        self.existing = set(existing_pairs)
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
                obj = _loads(text)
            except ValueError as exc:
                errors.add("", _json_error_reason(exc, whole_file=False), storable=False)
            else:
                record = _caption_from_object(
                    obj, errors, clip_durations=clip_durations, pairs=pairs
                )
        checked.append((record, errors))
    return _result(checked, keep_invalid=keep_invalid)


def parse_clip_cc_model_file(
    data: bytes,
    *,
    model: str,
    clip_durations: Mapping[str, float],
    existing_pairs: Collection[tuple[str, str]] = (),
    keep_invalid: bool = False,
) -> ParseResult:
    """Parse a Clip-CC-Bench model output file, ``{"001": "paragraph", ...}``, into overview-only
    captions of ``model``. A record's ``line`` is the entry's 1-based position in the object.
    Clip, overview and duplicate checks, and ``keep_invalid``, are as in
    :func:`parse_captions_jsonl`. Raises ValueError for an empty ``model``."""
    if not model.strip():
        raise ValueError("model must not be empty")
    text, decode_error = _decode_whole(data)
    if decode_error is not None:
        return ParseResult((), (_whole_file(decode_error),))
    assert text is not None
    try:
        obj = _loads(text)
    except ValueError as exc:
        return ParseResult((), (RecordError(0, "", _json_error_reason(exc, whole_file=True)),))
    if not isinstance(obj, dict):
        reason = f"expected a JSON object of clip id to overview text, got {_describe(obj)}"
        return ParseResult((), (RecordError(0, "", reason),))
    pairs = _PairRegistry(existing_pairs)
    checked: list[tuple[CaptionRecord | None, _LineErrors]] = []
    # Iterate the raw pairs: a clip listed twice must be reported, not silently overwritten.
    entries = obj.pairs if isinstance(obj, _JsonObject) else list(obj.items())
    for position, (clip_id, overview) in enumerate(entries, start=1):
        errors = _LineErrors(position)
        caption = {"clip": clip_id, "model": model, "overview": overview}
        record = _caption_from_object(caption, errors, clip_durations=clip_durations, pairs=pairs)
        checked.append((record, errors))
    return _result(checked, keep_invalid=keep_invalid)


def _whole_file(error: RecordError) -> RecordError:
    """A decoding error of a whole-JSON file, where line numbers mean entries: report it as a
    file error that still names the text line."""
    return RecordError(0, "", f"{error.reason}, on text line {error.line}")


# --------------------------------------------------------------------------------------------
# References


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
        unstorable = _too_long(name, MAX_NAME_CHARS) or _unstorable_character(name)
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
        unstorable = _too_long(text, MAX_REFERENCE_CHARS) or _unstorable_character(text)
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
        unstorable = _too_long(label, MAX_SOURCE_CHARS) or _unstorable_character(label)
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
            obj = _loads(text)
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


def parse_clip_cc_references(
    data: bytes, *, known_clips: Collection[str] | None = None
) -> tuple[list[ReferenceRecord], list[RecordError]]:
    """Parse Clip-CC-Bench's ``clip_cc_dataset.json`` (``[{"id", "file_link", "summary"}]``) into
    English references of source :data:`CLIP_CC_SOURCE`, the clip named by ``id`` and the summary
    stripped (some begin with a space). ``line`` is the 1-based position in the array. With
    ``known_clips`` given, other clips are errors. Returns the error-free references and every
    error."""
    text, decode_error = _decode_whole(data)
    if decode_error is not None:
        return [], [_whole_file(decode_error)]
    assert text is not None
    try:
        entries = _loads(text)
    except ValueError as exc:
        return [], [RecordError(0, "", _json_error_reason(exc, whole_file=True))]
    if not isinstance(entries, list):
        reason = (
            f"expected a JSON list of {{id, file_link, summary}} objects, got {_describe(entries)}"
        )
        return [], [RecordError(0, "", reason)]
    checker = _ReferenceChecker(known_clips)
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            checker.errors.append(
                RecordError(position, "", f"expected a JSON object, got {_describe(entry)}")
            )
            continue
        prior = _key_errors(entry, CLIP_CC_REFERENCE_KEYS, position)
        link = entry.get("file_link")
        if link is not None and not isinstance(link, str):
            prior.append(
                RecordError(position, "file_link", f"must be a string, got {_describe(link)}")
            )
        checker.add(
            position,
            clip=entry.get("id", _MISSING),
            text=entry.get("summary", _MISSING),
            source=CLIP_CC_SOURCE,
            language="en",
            clip_field="id",
            text_field="summary",
            prior=prior,
        )
    return checker.records, checker.errors


def _csv_rows(text: str) -> Iterator[tuple[int, list[str]]]:
    """CSV rows with the file line each starts on; rows of only empty cells are skipped."""
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        if any(cell.strip() for cell in row):
            yield start, row


def _csv_error(exc: csv.Error, line: int) -> RecordError:
    return RecordError(line, "", f"not valid CSV: {exc}")


def parse_fmv2t_descriptions_csv(
    data: bytes, *, language: str, known_clips: Collection[str] | None = None
) -> tuple[list[ReferenceRecord], list[RecordError]]:
    """Parse an FM-V2T description CSV (``clips-wvr-annotations-eng.csv`` or ``-de.csv``): a
    ``Video-Filename`` column and exactly one description column, whatever its header (the German
    file's header is mislabelled, so the column is found by position, not name). References get
    source :data:`FMV2T_SOURCE` and ``language``. Raises ValueError for a malformed ``language``.
    Returns the error-free references and every error."""
    problem = _language_problem(language)
    if problem:
        raise ValueError(f"language {problem}, got {language!r}")
    text, decode_error = _decode_whole(data)
    if decode_error is not None:
        return [], [decode_error]
    assert text is not None
    checker = _ReferenceChecker(known_clips)
    rows = _csv_rows(text)
    try:
        header_line, header = next(rows, (1, []))
        columns = [cell.strip() for cell in header]
        if len(columns) != 2 or columns[0] != FMV2T_CLIP_COLUMN:
            shown = ", ".join(columns) if columns else "nothing"
            return [], [
                RecordError(
                    header_line,
                    "header",
                    f"expected the columns {FMV2T_CLIP_COLUMN} and one description column, "
                    f"got {shown}",
                )
            ]
        for number, row in rows:
            if len(row) != 2:
                checker.errors.append(RecordError(number, "", f"expected 2 cells, got {len(row)}"))
                continue
            checker.add(
                number,
                clip=row[0],
                text=row[1],
                source=FMV2T_SOURCE,
                language=language,
                clip_field=FMV2T_CLIP_COLUMN,
                text_field=columns[1],
            )
    except csv.Error as exc:
        checker.errors.append(_csv_error(exc, _last_line_number(text)))
    return checker.records, checker.errors


def _last_line_number(text: str) -> int:
    """The number of the last line of ``text`` (where an unterminated quote runs to)."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)


# --------------------------------------------------------------------------------------------
# Clip properties


def _allowed_columns() -> tuple[str, ...]:
    return ("clip", *PROPERTY_FIELDS, MANIPULATED_COLUMN)


def _header_errors(header: list[str], line: int) -> tuple[list[str], list[RecordError]]:
    """The normalised column keys and any problem with the header: unknown, repeated or missing
    columns. Headers are normalised like values, so "Camera platform" is camera_platform."""
    allowed = _allowed_columns()
    keys = [normalise_choice(cell) for cell in header]
    errors: list[RecordError] = []
    for cell, key in zip(header, keys, strict=True):
        if key not in allowed:
            errors.append(
                RecordError(
                    line,
                    cell.strip() or "(empty header)",
                    f"unknown column; allowed columns are {', '.join(allowed)}",
                )
            )
    for key in allowed:
        if keys.count(key) > 1:
            errors.append(RecordError(line, key, "column appears more than once"))
    if "clip" not in keys:
        errors.append(RecordError(line, "clip", 'required column "clip" is missing'))
    return keys, errors


def _property_row(
    number: int, keys: list[str], row: list[str], first_line: dict[str, int]
) -> tuple[ClipPropertiesRecord | None, list[RecordError]]:
    """One row as a record, or its errors. ``first_line`` records where each clip was first
    listed, so a second listing names the first."""
    if len(row) != len(keys):
        return None, [RecordError(number, "", f"expected {len(keys)} cells, got {len(row)}")]
    cells = dict(zip(keys, row, strict=True))
    errors: list[RecordError] = []
    clip = clip_name_from_filename(cells["clip"])
    unstorable = _too_long(clip, MAX_NAME_CHARS) or _unstorable_character(clip)
    if not clip:
        errors.append(RecordError(number, "clip", "must not be empty"))
    elif unstorable:
        errors.append(RecordError(number, "clip", unstorable))
    elif clip in first_line:
        errors.append(
            RecordError(
                number, "clip", f"clip {_quote(clip)} also appears on line {first_line[clip]}"
            )
        )
    else:
        first_line[clip] = number
    properties: dict[str, str] = {}
    for name in PROPERTY_FIELDS:
        raw = cells.get(name, "").strip()
        if not raw:
            continue  # an empty cell says nothing about the clip
        value = normalise_choice(raw)
        if value in PROPERTY_VALUES[name]:
            properties[name] = value
        else:
            allowed = ", ".join(PROPERTY_VALUES[name])
            errors.append(RecordError(number, name, f"{_quote(raw)} is not one of {allowed}"))
    manipulated: bool | None = None
    raw_flag = cells.get(MANIPULATED_COLUMN, "").strip()
    if raw_flag.lower() in _TRUE_WORDS:
        manipulated = True
    elif raw_flag.lower() in _FALSE_WORDS:
        manipulated = False
    elif raw_flag:
        errors.append(
            RecordError(
                number,
                MANIPULATED_COLUMN,
                f"{_quote(raw_flag)} is not one of true, false, yes, no, 1, 0",
            )
        )
    if errors:
        return None, errors
    return ClipPropertiesRecord(number, clip, MappingProxyType(properties), manipulated), []


def parse_clip_properties_csv(data: bytes) -> tuple[list[ClipPropertiesRecord], list[RecordError]]:
    """Parse a clip properties CSV: a ``clip`` column (a clip name or its video file name) and any
    of :data:`PROPERTY_FIELDS` and ``manipulated``. Values are matched after
    :func:`normalise_choice`, so "Tripod / static" is tripod_static; an empty cell leaves that
    property unsaid. ``manipulated`` accepts true/false/yes/no/1/0 in any case. Unknown columns,
    bad values and a clip listed twice are errors. Returns the error-free rows and every error."""
    text, decode_error = _decode_whole(data)
    if decode_error is not None:
        return [], [decode_error]
    assert text is not None
    records: list[ClipPropertiesRecord] = []
    errors: list[RecordError] = []
    first_line: dict[str, int] = {}
    rows = _csv_rows(text)
    try:
        header_line, header = next(rows, (1, []))
        if not header:
            return [], [RecordError(1, "header", "the file is empty; expected a header row")]
        keys, header_problems = _header_errors(header, header_line)
        if header_problems:
            return [], header_problems
        for number, row in rows:
            record, row_errors = _property_row(number, keys, row, first_line)
            errors.extend(row_errors)
            if record is not None:
                records.append(record)
    except csv.Error as exc:
        errors.append(_csv_error(exc, _last_line_number(text)))
    return records, errors
