"""Tests of annotation.interchange.formats: parsing and validating imported files, without a database."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from annotation.interchange import formats
from annotation.interchange.formats import (
    MAX_OVERVIEW_CHARS,
    MAX_REFERENCE_CHARS,
    MAX_WINDOW_TEXT_CHARS,
    PROPERTY_VALUES,
    WINDOW_END_TOLERANCE_S,
    CaptionRecord,
    ClipPropertiesRecord,
    ParseResult,
    RecordError,
    ReferenceRecord,
    WindowRecord,
    clip_name_from_filename,
    normalise_choice,
    parse_captions_jsonl,
    parse_clip_cc_model_file,
    parse_clip_cc_references,
    parse_clip_properties_csv,
    parse_fmv2t_descriptions_csv,
    parse_references_jsonl,
)
from tests.conftest import REPO, SHARED_DATASETS

FIXTURES = REPO / "fixtures" / "formats"
DATASETS = SHARED_DATASETS

# The clips the caption fixtures are written against (see fixtures/formats/README.md).
CLIPS = {"001": 12.0, "002": 30.0, "003": 90.0}
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


def strings(errors: tuple[RecordError, ...] | list[RecordError]) -> list[str]:
    return [str(error) for error in errors]


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


# --------------------------------------------------------------------------------------------
# Clip names and choices


@pytest.mark.parametrize(
    ("name", "clip"),
    [
        ("001.mp4", "001"),
        ("001", "001"),
        ("  001.MOV ", "001"),
        ("videos/001.webm", "001"),
        ("C:\\clips\\001.mkv", "001"),
        ("take.2", "take.2"),
        ("take.2.mp4", "take.2"),
        ("notes.txt", "notes.txt"),
        (".mp4", ".mp4"),
        ("0_17_19F3A652-3AA-0032A-00000B64-19F2B6C5", "0_17_19F3A652-3AA-0032A-00000B64-19F2B6C5"),
    ],
)
def test_a_clip_is_named_by_its_file_name_without_the_video_extension(name: str, clip: str) -> None:
    assert clip_name_from_filename(name) == clip
    assert clip_name_from_filename(clip) == clip


@pytest.mark.parametrize(
    ("spelling", "key"),
    [
        ("Tripod / static", "tripod_static"),
        ("tripod_static", "tripod_static"),
        ("Extreme wide", "extreme_wide"),
        ("extreme-close", "extreme_close"),
        ("  Drone (aerial) ", "drone_aerial"),
        ("HIGH", "high"),
    ],
)
def test_human_spellings_of_a_choice_normalise_to_its_key(spelling: str, key: str) -> None:
    assert normalise_choice(spelling) == key


def test_every_property_allows_unclear() -> None:
    assert set(PROPERTY_VALUES) == set(formats.PROPERTY_FIELDS)
    assert all(values[-1] == "unclear" for values in PROPERTY_VALUES.values())


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
# References


def test_reference_lines_default_their_source_and_language() -> None:
    records, errors = parse_references_jsonl(
        (FIXTURES / "references.jsonl").read_bytes(), known_clips=CLIPS
    )
    assert errors == []
    assert records == [
        ReferenceRecord(1, "001", "A man opens a wooden door and walks in.", "imported", "en"),
        ReferenceRecord(2, "001", "Ein Mann öffnet eine Holztür.", "expert-panel", "de"),
        ReferenceRecord(4, "002", "A red bus turns left at a junction.", "expert-panel", "en-GB"),
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            b'{"clip": "999", "text": "A door."}',
            ['line 1, clip: unknown clip "999" (not among the 3 clips imported)'],
            id="unknown_clip",
        ),
        pytest.param(
            b'{"text": "A door."}',
            ['line 1, clip: required key "clip" is missing'],
            id="clip_missing",
        ),
        pytest.param(
            b'{"clip": "001"}',
            ['line 1, text: required key "text" is missing'],
            id="text_missing",
        ),
        pytest.param(
            b'{"clip": "001", "text": " "}',
            ["line 1, text: must not be empty"],
            id="text_empty",
        ),
        pytest.param(
            json.dumps({"clip": "001", "text": "z" * (MAX_REFERENCE_CHARS + 1)}).encode(),
            ["line 1, text: is 50,001 characters long; the limit is 50,000"],
            id="text_too_long",
        ),
        pytest.param(
            b'{"clip": "001", "text": "A door.", "author": "me"}',
            ["line 1, author: unknown key; allowed keys are clip, language, source, text"],
            id="unknown_key",
        ),
        pytest.param(
            b'{"clip": "001", "text": "A door.", "language": "English"}',
            [
                "line 1, language: must be a language code such as en or de-AT, got the string "
                '"English"'
            ],
            id="language_not_a_code",
        ),
        pytest.param(
            json.dumps({"clip": "001", "text": "A door.", "source": "s" * 101}).encode(),
            ["line 1, source: is 101 characters long; the limit is 100"],
            id="source_too_long",
        ),
        pytest.param(
            b'{"clip": "001", "text": "A door.", "source": 7}',
            ["line 1, source: must be a non-empty string, got the number 7"],
            id="source_not_a_string",
        ),
        pytest.param(
            b'{"clip": "001", "text": "A door."',
            ["line 1: not valid JSON: Expecting ',' delimiter at column 34"],
            id="not_json",
        ),
        pytest.param(
            b'"A door."',
            ['line 1: expected a JSON object, got the string "A door."'],
            id="not_an_object",
        ),
        pytest.param(
            b'{"clip": "001", "text": "A d\xc3"}',
            [
                "line 1: not valid UTF-8: byte 0xc3 at offset 28 of the file, byte 28 of this "
                "line (invalid continuation byte)"
            ],
            id="invalid_utf8",
        ),
    ],
)
def test_reference_line_errors_are_reported(line: bytes, expected: list[str]) -> None:
    records, errors = parse_references_jsonl(line, known_clips=CLIPS)
    assert strings(errors) == expected
    assert records == []
    assert not any(error.storable for error in errors)


def test_the_same_reference_twice_names_both_lines() -> None:
    line = b'{"clip": "001", "text": "A door."}'
    records, errors = parse_references_jsonl(
        b"\n".join([line, b'{"clip": "001", "text": "A gate."}', line]), known_clips=CLIPS
    )
    assert [record.line for record in records] == [1, 2]
    assert strings(errors) == [
        'line 3, text: the same reference for clip "001" also appears on line 1'
    ]


def test_clip_cc_excerpt_parses_into_stripped_english_references() -> None:
    records, errors = parse_clip_cc_references(
        (FIXTURES / "clip_cc_references_excerpt.json").read_bytes()
    )
    assert errors == []
    assert [(r.line, r.clip, r.source, r.language) for r in records] == [
        (1, "001", "clip-cc-bench", "en"),
        (2, "002", "clip-cc-bench", "en"),
        (3, "003", "clip-cc-bench", "en"),
    ]
    assert records[0].text.startswith("The video begins with a bespectacled man")


def test_clip_cc_references_of_unknown_clips_are_errors_when_clips_are_given() -> None:
    records, errors = parse_clip_cc_references(
        (FIXTURES / "clip_cc_references_excerpt.json").read_bytes(), known_clips={"001", "002"}
    )
    assert [record.clip for record in records] == ["001", "002"]
    assert strings(errors) == ['line 3, id: unknown clip "003" (not among the 2 clips imported)']


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            b'{"id": "001", "summary": "A door."}',
            ["file: expected a JSON list of {id, file_link, summary} objects, got an object"],
            id="not_a_list",
        ),
        pytest.param(
            b'[{"id": 1, "summary": "A door."}]',
            ["line 1, id: must be a string, got the number 1"],
            id="id_not_a_string",
        ),
        pytest.param(
            b'[{"id": "001", "file_link": "https://example.org/1"}]',
            ['line 1, summary: required key "summary" is missing'],
            id="summary_missing",
        ),
        pytest.param(
            b'[{"id": "001", "summary": "A door.", "file_link": 3}]',
            ["line 1, file_link: must be a string, got the number 3"],
            id="file_link_not_a_string",
        ),
        pytest.param(
            b'[{"id": "001", "summary": "A door.", "words": 2}]',
            ["line 1, words: unknown key; allowed keys are file_link, id, summary"],
            id="unknown_key",
        ),
        pytest.param(
            b'[{"id": "001", "summary": "A door."}, "A gate."]',
            ['line 2: expected a JSON object, got the string "A gate."'],
            id="entry_not_an_object",
        ),
    ],
)
def test_clip_cc_reference_errors_are_reported(data: bytes, expected: list[str]) -> None:
    _, errors = parse_clip_cc_references(data)
    assert strings(errors) == expected


@pytest.mark.parametrize(
    ("name", "language", "first_words"),
    [
        ("fmv2t_eng_excerpt.csv", "en", "The video shows a scenic view"),
        ("fmv2t_de_excerpt.csv", "de", "Das Video zeigt eine malerische"),
    ],
)
def test_fmv2t_excerpts_parse_into_references(name: str, language: str, first_words: str) -> None:
    records, errors = parse_fmv2t_descriptions_csv(
        (FIXTURES / name).read_bytes(), language=language
    )
    assert errors == []
    assert [(r.line, r.source, r.language) for r in records] == [
        (2, "fm-v2t", language),
        (3, "fm-v2t", language),
        (4, "fm-v2t", language),
    ]
    assert records[0].clip == "0_17_19F3A652-3AA-0032A-00000B64-19F2B6C5"
    assert records[0].text.startswith(first_words)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            b"Clip,Description\r\na,A door.\r\n",
            [
                "line 1, header: expected the columns Video-Filename and one description column, "
                "got Clip, Description"
            ],
            id="wrong_header",
        ),
        pytest.param(
            b"Video-Filename,English,German\na,A door.,Eine T\xc3\xbcr.\n",
            [
                "line 1, header: expected the columns Video-Filename and one description column, "
                "got Video-Filename, English, German"
            ],
            id="two_description_columns",
        ),
        pytest.param(
            b"",
            [
                "line 1, header: expected the columns Video-Filename and one description column, "
                "got nothing"
            ],
            id="empty_file",
        ),
        pytest.param(
            b'Video-Filename,English\na,A door.\nb\nc,""\n',
            ["line 3: expected 2 cells, got 1", "line 4, English: must not be empty"],
            id="bad_rows",
        ),
        pytest.param(
            b'Video-Filename,English\na,"A door\nopens."\nzzz,A gate.\n',
            ['line 4, Video-Filename: unknown clip "zzz" (not among the 3 clips imported)'],
            id="unknown_clip_after_a_multiline_cell",
        ),
        pytest.param(
            b"Video-Filename,English\na,A d\xffoor.\n",
            [
                "line 2: not valid UTF-8: byte 0xff at offset 28 of the file, byte 5 of this line "
                "(invalid start byte)"
            ],
            id="invalid_utf8",
        ),
    ],
)
def test_fmv2t_errors_are_reported(data: bytes, expected: list[str]) -> None:
    _, errors = parse_fmv2t_descriptions_csv(data, language="en", known_clips={"a", "b", "c"})
    assert strings(errors) == expected


def test_fmv2t_needs_a_language_code() -> None:
    with pytest.raises(ValueError, match="language must be a language code"):
        parse_fmv2t_descriptions_csv(b"", language="German")


# --------------------------------------------------------------------------------------------
# Clip properties


def properties(data: bytes) -> tuple[list[ClipPropertiesRecord], list[str]]:
    records, errors = parse_clip_properties_csv(data)
    return records, strings(errors)


def test_the_example_properties_file_parses_human_spellings() -> None:
    records, errors = properties((FIXTURES / "clips.csv").read_bytes())
    assert errors == []
    assert [(r.line, r.clip, dict(r.properties), r.manipulated) for r in records] == [
        (
            2,
            "001",
            {
                "content_type": "domestic_lifestyle",
                "camera_platform": "tripod_static",
                "scene_complexity": "low",
                "shot_scale": "wide",
                "motion_intensity": "low",
            },
            False,
        ),
        (
            3,
            "002",
            {
                "content_type": "urban_vehicle",
                "camera_platform": "vehicle_mounted",
                "scene_complexity": "high",
                "shot_scale": "extreme_wide",
                "motion_intensity": "high",
            },
            False,
        ),
        (
            4,
            "003",
            {
                "content_type": "unclear",
                "camera_platform": "handheld",
                "scene_complexity": "medium",
                "motion_intensity": "medium",
            },
            True,
        ),
    ]


def test_a_properties_file_may_give_only_some_columns_with_human_headers() -> None:
    records, errors = properties(b"Clip,Camera platform\r\n001.mp4,Drone / aerial\r\n")
    assert errors == []
    assert [(r.clip, dict(r.properties), r.manipulated) for r in records] == [
        ("001", {"camera_platform": "drone_aerial"}, None)
    ]


@pytest.mark.parametrize(
    ("word", "manipulated"),
    [
        ("true", True),
        ("Yes", True),
        ("1", True),
        ("FALSE", False),
        ("no", False),
        ("0", False),
        ("", None),
    ],
)
def test_manipulated_accepts_common_yes_and_no_words(word: str, manipulated: bool | None) -> None:
    (record,), _ = properties(f"clip,manipulated\n001,{word}\n".encode())
    assert record.manipulated is manipulated


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            b"clip,camera,shot_scale\n001,handheld,wide\n",
            [
                "line 1, camera: unknown column; allowed columns are clip, content_type, "
                "camera_platform, scene_complexity, shot_scale, motion_intensity, manipulated"
            ],
            id="unknown_column",
        ),
        pytest.param(
            b"name,shot_scale\n001,wide\n",
            [
                "line 1, name: unknown column; allowed columns are clip, content_type, "
                "camera_platform, scene_complexity, shot_scale, motion_intensity, manipulated",
                'line 1, clip: required column "clip" is missing',
            ],
            id="clip_column_missing",
        ),
        pytest.param(
            b"clip,Shot scale,shot_scale\n001,wide,close\n",
            ["line 1, shot_scale: column appears more than once"],
            id="column_repeated",
        ),
        pytest.param(
            b"",
            ["line 1, header: the file is empty; expected a header row"],
            id="empty_file",
        ),
        pytest.param(
            b"clip,camera_platform\n001,Steadicam\n",
            [
                'line 2, camera_platform: "Steadicam" is not one of handheld, tripod_static, '
                "vehicle_mounted, drone_aerial, gimbal_smooth, other, unclear"
            ],
            id="value_not_allowed",
        ),
        pytest.param(
            b"clip,scene_complexity,motion_intensity\n001,very high,med\n",
            [
                'line 2, scene_complexity: "very high" is not one of low, medium, high, unclear',
                'line 2, motion_intensity: "med" is not one of low, medium, high, unclear',
            ],
            id="two_bad_values",
        ),
        pytest.param(
            b"clip,manipulated\n001,maybe\n",
            ['line 2, manipulated: "maybe" is not one of true, false, yes, no, 1, 0'],
            id="manipulated_not_a_yes_or_no",
        ),
        pytest.param(
            b"clip,shot_scale\n001,wide\n002,close\n001.mp4,medium\n",
            ['line 4, clip: clip "001" also appears on line 2'],
            id="clip_listed_twice",
        ),
        pytest.param(
            b"clip,shot_scale\n,wide\n001\n",
            ["line 2, clip: must not be empty", "line 3: expected 2 cells, got 1"],
            id="bad_rows",
        ),
        pytest.param(
            b"clip,shot_scale\n001,w\xe9de\n",
            [
                "line 2: not valid UTF-8: byte 0xe9 at offset 21 of the file, byte 5 of this line "
                "(invalid continuation byte)"
            ],
            id="invalid_utf8",
        ),
    ],
)
def test_property_file_errors_are_reported(data: bytes, expected: list[str]) -> None:
    records, errors = properties(data)
    assert errors == expected


def test_good_property_rows_are_returned_beside_the_errors_of_bad_ones() -> None:
    records, errors = properties(b"clip,shot_scale\n001,wide\n002,huge\n003,close\n")
    assert [record.clip for record in records] == ["001", "003"]
    assert len(errors) == 1


# --------------------------------------------------------------------------------------------
# The full public data sets, when this machine has them

needs_datasets = pytest.mark.skipif(
    not DATASETS.is_dir(), reason="the public data sets are not on this machine"
)
NINETY_SECOND_CLIPS = {f"{number:03d}": 90.0 for number in range(1, 201)}


@needs_datasets
def test_all_200_clip_cc_references_parse() -> None:
    data = (DATASETS / "clip-cc-bench/data/ground_truth/clip_cc_dataset.json").read_bytes()
    records, errors = parse_clip_cc_references(data, known_clips=NINETY_SECOND_CLIPS)
    assert errors == []
    assert len(records) == 200
    assert not any(record.text[0].isspace() for record in records)


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


@needs_datasets
@pytest.mark.parametrize(("suffix", "language"), [("eng", "en"), ("de", "de")])
def test_all_258_fmv2t_descriptions_parse(suffix: str, language: str) -> None:
    path = DATASETS / f"fm-v2t/annotations/clips-wvr-annotations-{suffix}.csv"
    records, errors = parse_fmv2t_descriptions_csv(path.read_bytes(), language=language)
    assert errors == []
    assert len(records) == 258
    assert len({record.clip for record in records}) == 258


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
