"""Clip properties: a CSV with a ``clip`` column and any of :data:`PROPERTY_FIELDS` plus
``manipulated``."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from annotation.interchange.formats.common import (
    MAX_NAME_CHARS,
    RecordError,
    _csv_error,
    _csv_rows,
    _decode_whole,
    _last_line_number,
    _quote,
    _too_long,
    clip_name_from_filename,
    normalise_choice,
    unstorable_character,
)

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


@dataclass(frozen=True)
class ClipPropertiesRecord:
    """Properties of one clip. ``properties`` holds only the fields the file gave a value for;
    ``manipulated`` is None when the file left it unsaid."""

    line: int
    clip: str
    properties: Mapping[str, str]
    manipulated: bool | None


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
    unstorable = _too_long(clip, MAX_NAME_CHARS) or unstorable_character(clip)
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
