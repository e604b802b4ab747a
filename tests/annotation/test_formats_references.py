"""Tests of the reference formats of annotation.interchange.formats, without a database:
reference JSONL, the CLIP-CC-Bench ground truth and FM-V2T description files."""

from __future__ import annotations

import json

import pytest

from annotation.interchange.formats import (
    MAX_REFERENCE_CHARS,
    ReferenceRecord,
    parse_clip_cc_references,
    parse_fmv2t_descriptions_csv,
    parse_references_jsonl,
)
from tests.annotation.formatfiles import (
    CLIPS,
    DATASETS,
    FIXTURES,
    NINETY_SECOND_CLIPS,
    needs_datasets,
    strings,
)

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
# The full public data sets, when this machine has them


@needs_datasets
def test_all_200_clip_cc_references_parse() -> None:
    data = (DATASETS / "clip-cc-bench/data/ground_truth/clip_cc_dataset.json").read_bytes()
    records, errors = parse_clip_cc_references(data, known_clips=NINETY_SECOND_CLIPS)
    assert errors == []
    assert len(records) == 200
    assert not any(record.text[0].isspace() for record in records)


@needs_datasets
@pytest.mark.parametrize(("suffix", "language"), [("eng", "en"), ("de", "de")])
def test_all_258_fmv2t_descriptions_parse(suffix: str, language: str) -> None:
    path = DATASETS / f"fm-v2t/annotations/clips-wvr-annotations-{suffix}.csv"
    records, errors = parse_fmv2t_descriptions_csv(path.read_bytes(), language=language)
    assert errors == []
    assert len(records) == 258
    assert len({record.clip for record in records}) == 258
