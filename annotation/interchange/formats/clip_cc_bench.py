"""CLIP-CC-Bench files: a model's outputs (``{"001": "text"}``, overview-only captions) and the
ground truth array ``clip_cc_dataset.json`` (references). Line numbers are entries' positions."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from annotation.interchange.formats.captions import (
    CaptionRecord,
    ParseResult,
    _caption_from_object,
    _LineErrors,
    _PairRegistry,
    _result,
)
from annotation.interchange.formats.common import (
    _MISSING,
    RecordError,
    _decode_whole,
    _describe,
    _json_error_reason,
    _JsonObject,
    _whole_file,
)
from annotation.interchange.formats.references import ReferenceRecord, _key_errors, _ReferenceChecker
from annotation.interchange.formats.strict_json import json_loads_limited

CLIP_CC_REFERENCE_KEYS = frozenset({"id", "file_link", "summary"})
CLIP_CC_SOURCE = "clip-cc-bench"


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
        obj = json_loads_limited(text)
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
        entries = json_loads_limited(text)
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
