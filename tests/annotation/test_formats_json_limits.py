"""The caption, reference and CLIP-CC-Bench formats read JSON within the one reader's limits on
shape: a line nested too deep or holding an integer too long to read is refused naming the line
and the place, and the other lines are still read."""

from __future__ import annotations

import json

import pytest

from annotation.interchange.formats import parse_captions_jsonl, parse_clip_cc_model_file, parse_references_jsonl

GOOD = {"clip": "a", "model": "m", "overview": "A red car.",
        "windows": [{"start": 0, "end": 1, "scene": "s", "shot": "t"}]}


def with_start(number: str) -> str:
    return json.dumps(GOOD).replace('"start": 0', f'"start": {number}')


@pytest.mark.parametrize(("line", "said"), [
    ("[" * 100_000 + "]" * 100_000, "not valid JSON: nested more than 32 levels deep"),
    (with_start("1" + "0" * 400),
     "not valid JSON: windows[0].start: 10000000000000000000... is a number with more than 30 digits"),
    (with_start("7" * 5_000), "windows[0].start: 77777777777777777777... is a number with more"),
])
def test_a_caption_line_beyond_the_limits_is_refused_naming_the_place(line, said):
    data = (json.dumps({**GOOD, "clip": "b"}) + "\n" + line + "\n").encode()
    result = parse_captions_jsonl(data, clip_durations={"a": 10.0, "b": 10.0})
    assert [record.clip for record in result.records] == ["b"]
    [error] = result.errors
    assert error.line == 2 and said in error.reason


def test_a_nan_window_time_is_still_named_as_a_time_by_the_caption_format():
    line = json.dumps(GOOD).replace('"start": 0', '"start": NaN')
    [error] = parse_captions_jsonl(line.encode(), clip_durations={"a": 10.0}).errors
    assert str(error) == "line 1, windows[0].start: must be a finite number of seconds, got NaN"


def test_a_reference_line_with_a_long_number_is_refused_naming_it():
    line = '{"clip": "a", "text": "A red car.", "source": ' + "9" * 40 + "}"
    records, errors = parse_references_jsonl(line.encode(), known_clips={"a"})
    [error] = errors
    assert not records
    assert "source: 9999999999999999999" in error.reason and "more than 30 digits" in error.reason


def test_a_clip_cc_file_nested_too_deep_is_refused_as_a_whole():
    data = ('{"001": ' + "[" * 100_000 + "]" * 100_000 + "}").encode()
    result = parse_clip_cc_model_file(data, model="m", clip_durations={"001": 10.0})
    assert not result.records and "nested more than 32 levels deep" in result.errors[0].reason
