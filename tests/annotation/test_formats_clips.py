"""Tests of the clip formats of annotation.interchange.formats, without a database: clip names
from video file names, the choices of a clip property, and the clip properties CSV."""

from __future__ import annotations

import pytest

from annotation.interchange import formats
from annotation.interchange.formats import (
    PROPERTY_VALUES,
    ClipPropertiesRecord,
    clip_name_from_filename,
    normalise_choice,
    parse_clip_properties_csv,
)
from tests.annotation.formatfiles import FIXTURES, strings

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
