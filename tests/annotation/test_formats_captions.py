"""Tests of the caption formats of annotation.interchange.formats, without a database: caption
JSONL (every error kind, keep_invalid, the fixtures) and CLIP-CC-Bench model files, and the
errors they report."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from annotation.interchange.formats import (
    MAX_OVERVIEW_CHARS,
    MAX_WINDOW_TEXT_CHARS,
    WINDOW_END_TOLERANCE_S,
    CaptionRecord,
    ParseResult,
    RecordError,
    WindowRecord,
    parse_captions_jsonl,
    parse_clip_cc_model_file,
)
from tests.annotation.formatfiles import (
    CLIPS,
    DATASETS,
    FIXTURES,
    NINETY_SECOND_CLIPS,
    needs_datasets,
    strings,
)

EXISTING = {("002", "already-imported")}


def parse(data: bytes, *, keep_invalid: bool = False) -> ParseResult:
    return parse_captions_jsonl(
        data, clip_durations=CLIPS, existing_pairs=EXISTING, keep_invalid=keep_invalid
    )


def caption(**fields: object) -> bytes:
    """One caption line: a valid caption of clip 001 unless fields say otherwise."""
    line: dict[str, object] = {"clip": "001", "model": "m", "overview": "A man opens a door."}
    line.update(fields)
    return json.dumps(line).encode()


def window(**fields: object) -> dict[str, object]:
    item: dict[str, object] = {"start": 0, "end": 4, "scene": "He walks in.", "shot": "Static."}
    item.update(fields)
    return item


# --------------------------------------------------------------------------------------------
# Captions: one row per error kind. Each line parses alone as a one-line file (line 1); the same
# lines, in this order, make up fixtures/formats/captions_bad.jsonl.

LONG_OVERVIEW = "x" * (MAX_OVERVIEW_CHARS + 1)
LONG_SCENE = "y" * (MAX_WINDOW_TEXT_CHARS + 1)

BAD_CAPTIONS = [
    pytest.param(
        b'{"clip": "001", "model": "m-utf8", "overview": "caf\xe9 scene"}',
        [
            (
                "line 1: not valid UTF-8: byte 0xe9 at offset 51 of the file, byte 51 of this line "
                "(invalid continuation byte)",
                False,
            )
        ],
        id="invalid_utf8",
    ),
    pytest.param(
        b'{"clip": "001", "model": "m-json" "overview": "A door."}',
        [("line 1: not valid JSON: Expecting ',' delimiter at column 35", False)],
        id="not_json",
    ),
    pytest.param(
        b'["001", "m-list", "A door."]',
        [("line 1: expected a JSON object, got a list", False)],
        id="not_an_object",
    ),
    pytest.param(
        b'{"clip": "001", "model": "m-dupkey", "overview": "A door.", "overview": "A gate."}',
        [
            (
                "line 1, overview: appears more than once in the same object; "
                "which value is meant is unclear",
                False,
            )
        ],
        id="repeated_key",
    ),
    pytest.param(
        b'{"model": "m-noclip", "overview": "A door."}',
        [('line 1, clip: required key "clip" is missing', False)],
        id="clip_missing",
    ),
    pytest.param(
        b'{"clip": 1, "model": "m-clipnumber", "overview": "A door."}',
        [("line 1, clip: must be a string, got the number 1", False)],
        id="clip_not_a_string",
    ),
    pytest.param(
        b'{"clip": "  ", "model": "m-clipempty", "overview": "A door."}',
        [("line 1, clip: must not be empty", False)],
        id="clip_empty",
    ),
    pytest.param(
        b'{"clip": "999", "model": "m-unknownclip", "overview": "A door."}',
        [('line 1, clip: unknown clip "999" (not among the 3 clips imported)', False)],
        id="clip_unknown",
    ),
    pytest.param(
        b'{"clip": "001", "overview": "A door."}',
        [('line 1, model: required key "model" is missing', False)],
        id="model_missing",
    ),
    pytest.param(
        caption(model="m" * 201),
        [("line 1, model: is 201 characters long; the limit is 200", False)],
        id="model_name_too_long",
    ),
    pytest.param(
        b'{"clip": "001", "model": "m-nooverview"}',
        [('line 1, overview: required key "overview" is missing', True)],
        id="overview_missing",
    ),
    pytest.param(
        caption(model="m-emptyoverview", overview="   "),
        [("line 1, overview: must not be empty", True)],
        id="overview_empty",
    ),
    pytest.param(
        caption(model="m-nulloverview", overview=None),
        [("line 1, overview: must be a string, got null", True)],
        id="overview_not_a_string",
    ),
    pytest.param(
        caption(model="m-longoverview", overview=LONG_OVERVIEW),
        [("line 1, overview: is 50,001 characters long; the limit is 50,000", False)],
        id="overview_too_long",
    ),
    pytest.param(
        caption(model="m-nul", overview="A door.\u0000"),
        [("line 1, overview: contains a NUL character (\\u0000), which cannot be stored", False)],
        id="overview_with_a_nul_character",
    ),
    pytest.param(
        b'{"clip": "001", "model": "m-surrogate", "overview": "A door.", '
        b'"windows": [{"start": 0, "end": 4, "scene": "In \\ud83d.", "shot": "Static."}]}',
        [
            (
                "line 1, windows[0].scene: contains an unpaired surrogate (\\ud83d), "
                "which UTF-8 cannot encode",
                False,
            )
        ],
        id="scene_with_an_unpaired_surrogate",
    ),
    pytest.param(
        caption(model="m-windowsobject", windows=window()),
        [("line 1, windows: must be a list of windows, got an object", True)],
        id="windows_not_a_list",
    ),
    pytest.param(
        caption(model="m-windowlist", windows=[[0, 4, "He walks in.", "Static."]]),
        [
            (
                "line 1, windows[0]: must be an object with start, end, scene and shot, got a list",
                False,
            )
        ],
        id="window_not_an_object",
    ),
    pytest.param(
        caption(model="m-nostart", windows=[{"end": 4, "scene": "In.", "shot": "Static."}]),
        [('line 1, windows[0].start: required number of seconds "start" is missing', False)],
        id="start_missing",
    ),
    pytest.param(
        caption(model="m-startstring", windows=[window(start="1.5")]),
        [('line 1, windows[0].start: must be a number of seconds, got the string "1.5"', False)],
        id="start_a_string",
    ),
    pytest.param(
        caption(model="m-endbool", windows=[window(end=True)]),
        [("line 1, windows[0].end: must be a number of seconds, got the boolean true", False)],
        id="end_a_boolean",
    ),
    pytest.param(
        b'{"clip": "001", "model": "m-startnan", "overview": "A door.", '
        b'"windows": [{"start": NaN, "end": 4, "scene": "In.", "shot": "Static."}]}',
        [("line 1, windows[0].start: must be a finite number of seconds, got NaN", False)],
        id="start_not_a_number",
    ),
    pytest.param(
        b'{"clip": "001", "model": "m-endhuge", "overview": "A door.", '
        b'"windows": [{"start": 0, "end": 1e999, "scene": "In.", "shot": "Static."}]}',
        [("line 1, windows[0].end: must be a finite number of seconds, got Infinity", False)],
        id="end_infinite",
    ),
    pytest.param(
        caption(model="m-negative", windows=[window(start=-1)]),
        [("line 1, windows[0].start: -1.0 is negative; windows start at 0.0 s or later", False)],
        id="start_negative",
    ),
    pytest.param(
        caption(model="m-empty-window", windows=[window(start=5, end=5)]),
        [("line 1, windows[0]: start 5.0 is not before end 5.0", False)],
        id="start_not_before_end",
    ),
    pytest.param(
        caption(model="m-pastend", windows=[window(start=10, end=14.2)]),
        [
            (
                "line 1, windows[0].end: 14.2 is past the clip end "
                "(12.0 s; windows may end at most 0.5 s after it)",
                False,
            )
        ],
        id="end_past_clip_end",
    ),
    pytest.param(
        caption(model="m-unsorted", windows=[window(start=4, end=8), window(start=0, end=4)]),
        [
            (
                "line 1, windows[1].start: 0.0 is before the previous window's start (4.0); "
                "windows must be in time order",
                False,
            )
        ],
        id="windows_unsorted",
    ),
    pytest.param(
        caption(model="m-overlap", windows=[window(start=0, end=5), window(start=4, end=8)]),
        [
            (
                "line 1, windows[1].start: 4.0 is before the previous window's end (5.0); "
                "windows must not overlap",
                False,
            )
        ],
        id="windows_overlapping",
    ),
    pytest.param(
        caption(model="m-noscene", windows=[{"start": 0, "end": 4, "shot": "Static."}]),
        [('line 1, windows[0].scene: required text "scene" is missing', True)],
        id="scene_missing",
    ),
    pytest.param(
        caption(model="m-shotnumber", windows=[window(shot=3)]),
        [("line 1, windows[0].shot: must be a string, got the number 3", True)],
        id="shot_not_a_string",
    ),
    pytest.param(
        caption(model="m-longscene", windows=[window(scene=LONG_SCENE)]),
        [("line 1, windows[0].scene: is 5,001 characters long; the limit is 5,000", False)],
        id="scene_too_long",
    ),
    pytest.param(
        caption(model="m-tags", tags=["night"]),
        [
            (
                "line 1, tags: unknown key; allowed keys are clip, meta, model, overview, windows",
                True,
            )
        ],
        id="unknown_key",
    ),
    pytest.param(
        caption(model="m-speaker", windows=[window(speaker="him")]),
        [
            (
                "line 1, windows[0].speaker: unknown key; allowed keys are end, scene, shot, start",
                True,
            )
        ],
        id="unknown_window_key",
    ),
    pytest.param(
        caption(model="m-temperature", meta={"temperature": 0.2}),
        [
            (
                "line 1, meta.temperature: unknown key; allowed keys are input_tokens_per_second, "
                "provider, re_encoded, retried, route, validation_errors",
                True,
            )
        ],
        id="unknown_meta_key",
    ),
    pytest.param(
        caption(model="m-metastring", meta="fast"),
        [('line 1, meta: must be an object, got the string "fast"', True)],
        id="meta_not_an_object",
    ),
    pytest.param(
        caption(model="m-retriedyes", meta={"retried": "yes"}),
        [('line 1, meta.retried: must be true or false, got the string "yes"', True)],
        id="meta_flag_not_a_boolean",
    ),
    pytest.param(
        caption(model="m-negativetokens", meta={"input_tokens_per_second": -3}),
        [
            (
                "line 1, meta.input_tokens_per_second: must be a finite number of 0 or more, "
                "got the number -3",
                True,
            )
        ],
        id="meta_tokens_negative",
    ),
    pytest.param(
        caption(model="m-errorsstring", meta={"validation_errors": "bad"}),
        [('line 1, meta.validation_errors: must be a list of strings, got the string "bad"', True)],
        id="meta_validation_errors_not_a_list",
    ),
    pytest.param(
        b'{"clip": "002", "model": "already-imported", "overview": "A door."}',
        [
            (
                'line 1, clip x model: clip "002" with model "already-imported" '
                "is already imported",
                False,
            )
        ],
        id="pair_already_imported",
    ),
]

# The last line of captions_bad.jsonl repeats the clip x model of its line 11 (overview_missing).
BAD_FIXTURE_DUPLICATE = b'{"clip": "001", "model": "m-nooverview", "overview": "A door."}'


@pytest.mark.parametrize(("line", "expected"), BAD_CAPTIONS)
def test_each_caption_error_is_reported_with_line_field_and_reason(
    line: bytes, expected: list[tuple[str, bool]]
) -> None:
    result = parse(line)
    assert strings(result.errors) == [text for text, _ in expected]
    assert [error.storable for error in result.errors] == [storable for _, storable in expected]
    assert result.records == ()
    assert not result.ok


@pytest.mark.parametrize(("line", "expected"), BAD_CAPTIONS)
def test_keep_invalid_keeps_a_line_only_when_every_error_is_storable(
    line: bytes, expected: list[tuple[str, bool]]
) -> None:
    result = parse(line, keep_invalid=True)
    storable = all(flag for _, flag in expected)
    assert len(result.records) == (1 if storable else 0)
    assert strings(result.errors) == [text for text, _ in expected]
    if storable:
        assert result.records[0].schema_errors == tuple(text for text, _ in expected)


def bad_line(param: Any) -> bytes:
    """The caption line of a BAD_CAPTIONS row."""
    line = param.values[0]
    assert isinstance(line, bytes)
    return line


def bad_expected(param: Any) -> list[tuple[str, bool]]:
    """The expected (error text, storable) pairs of a BAD_CAPTIONS row."""
    return cast(list[tuple[str, bool]], param.values[1])


def bad_fixture_lines() -> list[bytes]:
    """The lines of fixtures/formats/captions_bad.jsonl: the BAD_CAPTIONS rows in order, then a
    duplicate of line 11."""
    return [bad_line(param) for param in BAD_CAPTIONS] + [BAD_FIXTURE_DUPLICATE]


def test_bad_fixture_holds_one_line_per_error_kind() -> None:
    data = (FIXTURES / "captions_bad.jsonl").read_bytes()
    assert data.split(b"\n") == [*bad_fixture_lines(), b""]


def test_bad_fixture_reports_every_line_as_it_does_alone() -> None:
    result = parse((FIXTURES / "captions_bad.jsonl").read_bytes())
    by_line: dict[int, list[tuple[str, bool]]] = {}
    for error in result.errors:
        by_line.setdefault(error.line, []).append((error.field, error.storable))
    for number, param in enumerate(BAD_CAPTIONS, start=1):
        alone = parse(bad_line(param)).errors
        assert by_line.pop(number) == [(error.field, error.storable) for error in alone]
    last = len(BAD_CAPTIONS) + 1
    assert strings([e for e in result.errors if e.line == last]) == [
        f'line {last}, clip x model: clip "001" with model "m-nooverview" also appears on line 11'
    ]
    assert result.records == ()


def test_bad_fixture_with_keep_invalid_keeps_exactly_the_storable_kinds() -> None:
    result = parse((FIXTURES / "captions_bad.jsonl").read_bytes(), keep_invalid=True)
    storable = [
        number
        for number, param in enumerate(BAD_CAPTIONS, start=1)
        if all(flag for _, flag in bad_expected(param))
    ]
    assert [record.line for record in result.records] == storable


def test_valid_fixture_parses_without_errors() -> None:
    result = parse((FIXTURES / "captions_valid.jsonl").read_bytes())
    assert result.ok
    assert [(r.line, r.clip, r.model) for r in result.records] == [
        (1, "001", "model-a"),
        (2, "002", "model-a"),
        (3, "001", "model-b"),
        (4, "003", "model-b"),
    ]
    first = result.records[0]
    assert first.windows == (
        WindowRecord(0.0, 4.5, "A man in a grey coat opens a wooden door.", "Static wide shot."),
        WindowRecord(4.5, 9.0, "He steps inside and hangs up his coat.", "Cut to a medium shot."),
        WindowRecord(9.0, 12.0, "He turns off the light.", "The camera pans left."),
    )
    assert dict(first.meta) == {
        "input_tokens_per_second": 258.0,
        "provider": "example-provider",
        "re_encoded": False,
        "retried": True,
        "route": "example-route",
        "validation_errors": (),
    }
    assert all(record.schema_errors == () for record in result.records)


def test_windows_may_be_absent_or_empty() -> None:
    result = parse(caption() + b"\n" + caption(model="n", windows=[]))
    assert result.ok
    assert [record.windows for record in result.records] == [(), ()]


def test_a_window_may_end_within_the_tolerance_past_the_clip_end() -> None:
    at_limit = 12.0 + WINDOW_END_TOLERANCE_S
    assert parse(caption(windows=[window(start=10, end=at_limit)])).ok
    assert not parse(caption(windows=[window(start=10, end=at_limit + 0.001)])).ok


def test_windows_may_touch_and_leave_gaps() -> None:
    windows = [window(start=0, end=4), window(start=4, end=6), window(start=8, end=12)]
    result = parse(caption(windows=windows))
    assert result.ok
    assert [(w.start, w.end) for w in result.records[0].windows] == [(0, 4), (4, 6), (8, 12)]


def test_integer_seconds_become_floats() -> None:
    (record,) = parse(caption(windows=[window(start=1, end=2)])).records
    assert isinstance(record.windows[0].start, float)
    assert isinstance(record.windows[0].end, float)


def test_surrounding_whitespace_is_stripped_from_names_and_text() -> None:
    line = caption(
        clip=" 001 ", model=" m ", overview="  A door.\n", windows=[window(scene=" In ")]
    )
    (record,) = parse(line).records
    assert (record.clip, record.model, record.overview) == ("001", "m", "A door.")
    assert record.windows[0].scene == "In"


def test_a_clip_may_be_named_by_its_video_file() -> None:
    (record,) = parse(caption(clip="videos/001.mp4")).records
    assert record.clip == "001"


def test_null_meta_values_mean_unknown() -> None:
    meta = {"route": None, "retried": None, "input_tokens_per_second": 12}
    (record,) = parse(caption(meta=meta)).records
    assert dict(record.meta) == {"input_tokens_per_second": 12.0}


def test_records_are_immutable() -> None:
    (record,) = parse(caption(meta={"retried": True})).records
    with pytest.raises(AttributeError):
        record.overview = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        record.meta["retried"] = False  # type: ignore[index]


def test_blank_lines_windows_line_endings_and_a_byte_order_mark_are_accepted() -> None:
    data = b"\xef\xbb\xbf" + caption() + b"\r\n\r\n   \n" + caption(model="n") + b"\r\n"
    result = parse(data)
    assert result.ok
    assert [record.line for record in result.records] == [1, 4]


def test_invalid_utf8_names_line_and_offset_and_the_rest_is_still_checked() -> None:
    data = caption() + b"\n" + b'{"clip": "\xff"}' + b"\n" + caption(clip="999", model="n")
    result = parse(data)
    first_line_length = len(caption()) + 1
    assert strings(result.errors) == [
        f"line 2: not valid UTF-8: byte 0xff at offset {first_line_length + 10} of the file, "
        "byte 10 of this line (invalid start byte)",
        'line 3, clip: unknown clip "999" (not among the 3 clips imported)',
    ]
    assert [record.line for record in result.records] == [1]


def test_default_mode_returns_only_error_free_lines_and_every_error() -> None:
    data = b"\n".join([caption(), caption(model="n", overview=""), caption(clip="999")])
    result = parse(data)
    assert [record.line for record in result.records] == [1]
    assert [error.line for error in result.errors] == [2, 3]


def test_keep_invalid_drops_unknown_keys_and_empties_bad_parts() -> None:
    line = caption(
        overview="",
        tags=["x"],
        windows=[{"start": 0, "end": 4, "shot": 3, "speaker": "him"}],
        meta={"retried": "yes", "re_encoded": True, "temperature": 1},
    )
    result = parse(line, keep_invalid=True)
    (record,) = result.records
    assert record.overview == ""
    assert record.windows == (WindowRecord(0.0, 4.0, "", ""),)
    assert dict(record.meta) == {"re_encoded": True}
    assert record.schema_errors == tuple(strings(result.errors))
    assert [error.field for error in result.errors] == [
        "tags",
        "overview",
        "windows[0].speaker",
        "windows[0].scene",
        "windows[0].shot",
        "meta.temperature",
        "meta.retried",
    ]


def test_keep_invalid_drops_a_meta_that_is_not_an_object() -> None:
    (record,) = parse(caption(meta=["fast"]), keep_invalid=True).records
    assert dict(record.meta) == {}


def test_keep_invalid_refuses_a_line_with_any_unstorable_error() -> None:
    line = caption(overview="", windows=[window(start=-1)])
    result = parse(line, keep_invalid=True)
    assert result.records == ()
    assert [error.storable for error in result.errors] == [True, False]


def test_keep_invalid_reports_the_same_errors_as_the_default_mode() -> None:
    data = (FIXTURES / "captions_bad.jsonl").read_bytes()
    assert parse(data, keep_invalid=True).errors == parse(data).errors


def test_a_duplicate_clip_and_model_names_both_lines() -> None:
    data = b"\n".join([caption(), caption(model="other"), caption(), caption()])
    result = parse(data)
    assert strings(result.errors) == [
        'line 3, clip x model: clip "001" with model "m" also appears on line 1',
        'line 4, clip x model: clip "001" with model "m" also appears on line 1',
    ]
    assert [record.line for record in result.records] == [1, 2]


def test_a_duplicate_is_refused_even_with_keep_invalid() -> None:
    result = parse(caption() + b"\n" + caption(), keep_invalid=True)
    assert [record.line for record in result.records] == [1]
    assert [error.storable for error in result.errors] == [False]


def test_the_same_model_may_caption_other_clips_and_the_same_clip_other_models() -> None:
    data = b"\n".join([caption(), caption(clip="002"), caption(model="other")])
    assert parse(data).ok


def test_windows_of_an_unknown_clip_are_not_checked_against_a_duration() -> None:
    result = parse(caption(clip="999", windows=[window(start=0, end=500)]))
    assert [error.field for error in result.errors] == ["clip"]


def test_an_empty_file_has_no_records_and_no_errors() -> None:
    result = parse(b"\n\n")
    assert result == ParseResult((), ())
    assert result.ok


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            RecordError(3, "windows[1].end", "14.2 is past the clip end (12.0 s)"),
            "line 3, windows[1].end: 14.2 is past the clip end (12.0 s)",
        ),
        (RecordError(2, "", "not valid JSON"), "line 2: not valid JSON"),
        (RecordError(0, "", "expected a list"), "file: expected a list"),
        (RecordError(0, "header", "is empty"), "file, header: is empty"),
    ],
)
def test_an_error_reads_as_line_field_and_reason(error: RecordError, text: str) -> None:
    assert str(error) == text


def test_storable_defaults_to_false() -> None:
    assert RecordError(1, "clip", "unknown").storable is False


def test_caption_record_defaults_to_no_schema_errors() -> None:
    record = CaptionRecord(1, "001", "m", "A door.", (), {})
    assert record.schema_errors == ()


def test_error_texts_can_always_be_stored_even_when_the_input_cannot() -> None:
    line = b'{"clip": "001", "model": "m", "overview": "A door.", "\\ud83d\\u0000": 1}'
    (error,) = parse(line).errors
    assert str(error) == (
        'line 1, "\\ud83d\\u0000": unknown key; allowed keys are clip, meta, model, overview, '
        "windows"
    )
    for text in [
        str(error),
        *strings(parse((FIXTURES / "captions_bad.jsonl").read_bytes()).errors),
    ]:
        text.encode("utf-8")
        assert "\x00" not in text


# --------------------------------------------------------------------------------------------
# Clip-CC-Bench model outputs


def parse_model_file(data: bytes, *, keep_invalid: bool = False) -> ParseResult:
    return parse_clip_cc_model_file(
        data,
        model="sample-model",
        clip_durations=CLIPS,
        existing_pairs={("003", "sample-model")},
        keep_invalid=keep_invalid,
    )


def test_a_model_file_becomes_overview_only_captions() -> None:
    result = parse_model_file((FIXTURES / "clip_cc_model_sample.json").read_bytes())
    assert result.ok
    assert [(r.line, r.clip, r.model, r.windows) for r in result.records] == [
        (1, "001", "sample-model", ()),
        (2, "002", "sample-model", ()),
    ]
    assert result.records[0].overview.startswith("The video opens on a man")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            b'{"001": "A door.", "999": "A gate."}',
            ['line 2, clip: unknown clip "999" (not among the 3 clips imported)'],
            id="unknown_clip",
        ),
        pytest.param(
            b'{"001": "A door.", "002": "A gate.", "001": "A window."}',
            ['line 3, clip x model: clip "001" with model "sample-model" also appears on line 1'],
            id="clip_listed_twice",
        ),
        pytest.param(
            b'{"003": "A door."}',
            ['line 1, clip x model: clip "003" with model "sample-model" is already imported'],
            id="already_imported",
        ),
        pytest.param(
            b'{"001": "  "}',
            ["line 1, overview: must not be empty"],
            id="empty_overview",
        ),
        pytest.param(
            b'{"001": ["A door."]}',
            ["line 1, overview: must be a string, got a list"],
            id="overview_not_a_string",
        ),
        pytest.param(
            b'["A door."]',
            ["file: expected a JSON object of clip id to overview text, got a list"],
            id="not_an_object",
        ),
        pytest.param(
            b'{"001": "A door.",\n "002" "A gate."}',
            ["file: not valid JSON: Expecting ':' delimiter at line 2 column 8"],
            id="not_json",
        ),
        pytest.param(
            b'{"001": "A door.",\n "002": "A \xff gate."}',
            [
                "file: not valid UTF-8: byte 0xff at offset 30 of the file, byte 11 of this line "
                "(invalid start byte), on text line 2"
            ],
            id="invalid_utf8",
        ),
    ],
)
def test_model_file_errors_are_reported(data: bytes, expected: list[str]) -> None:
    assert strings(parse_model_file(data).errors) == expected


def test_a_model_file_with_an_empty_overview_is_kept_only_with_keep_invalid() -> None:
    data = b'{"001": "", "002": "A gate."}'
    assert [r.clip for r in parse_model_file(data).records] == ["002"]
    kept = parse_model_file(data, keep_invalid=True).records
    assert [(r.clip, r.schema_errors) for r in kept] == [
        ("001", ("line 1, overview: must not be empty",)),
        ("002", ()),
    ]


def test_a_model_file_needs_a_model_name() -> None:
    with pytest.raises(ValueError, match="model must not be empty"):
        parse_clip_cc_model_file(b"{}", model=" ", clip_durations=CLIPS)


# --------------------------------------------------------------------------------------------
# The full public data sets, when this machine has them


@needs_datasets
def test_all_17_clip_cc_model_files_parse_into_199_captions_each() -> None:
    paths = sorted((DATASETS / "clip-cc-bench/data/models").glob("*.json"))
    assert len(paths) == 17
    for path in paths:
        result = parse_clip_cc_model_file(
            path.read_bytes(), model=path.stem, clip_durations=NINETY_SECOND_CLIPS
        )
        assert result.errors == (), path.name
        assert len(result.records) == 199, path.name
        assert "126" not in {record.clip for record in result.records}
