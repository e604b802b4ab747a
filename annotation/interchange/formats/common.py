"""What every import format shares: the error record, name and text limits, and the helpers
that decode bytes, parse JSON (keeping repeated keys visible), read CSV rows and describe a bad
value for a person."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# Clip and model names are stored in 200-character columns.
MAX_NAME_CHARS = 200
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
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_UTF8_BOM = b"\xef\xbb\xbf"
_REPEATED_KEY = "appears more than once in the same object; which value is meant is unclear"


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


def unstorable_character(text: str) -> str | None:
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


def _whole_file(error: RecordError) -> RecordError:
    """A decoding error of a whole-JSON file, where line numbers mean entries: report it as a
    file error that still names the text line."""
    return RecordError(0, "", f"{error.reason}, on text line {error.line}")


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


def _last_line_number(text: str) -> int:
    """The number of the last line of ``text`` (where an unterminated quote runs to)."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)
