"""Corrected captions as JSON Lines and WebVTT: escaping, cue times, the corrected timeline."""

import json

import pytest

from scoring.metrics.exports import (
    CorrectedCaption,
    CorrectedWindow,
    Cue,
    jsonl,
    safe_file_name,
    vtt_escape,
    vtt_timestamp,
    webvtt,
    webvtt_files,
)


def caption(clip="c1", *, segmentation="accept", corrected=(), windows=None, model="Alpha"):
    windows = (
        windows
        if windows is not None
        else (
            CorrectedWindow(0, 0.0, 2.0, "Bars & a <counter>.", "Static --> frame.", "accept"),
            CorrectedWindow(
                1,
                2.0,
                4.5,
                "The counter runs.",
                "Static frame.",
                "reject",
                ("temporal",),
                "The counter keeps running.",
                "Static frame.",
            ),
        )
    )
    return CorrectedCaption(
        clip=clip,
        model=model,
        overview="A test card.",
        overview_verdict="reject",
        original_overview="A test card with a counter.",
        windows=tuple(windows),
        segmentation_verdict=segmentation,
        overview_modes=("factual",),
        corrected_windows=tuple(corrected),
        annotator="ann",
        reviewer="rev",
    )


def cues(text):
    """Parse the cues of a WebVTT file: [(identifier, timing, [text lines])]."""
    blocks = text.split("\n\n")
    assert blocks[0] == "WEBVTT"
    found = []
    for block in blocks[1:]:
        lines = [line for line in block.split("\n") if line]
        if not lines or lines[0].startswith("NOTE"):
            continue
        found.append((lines[0], lines[1], lines[2:]))
    return found


@pytest.mark.parametrize(
    ("seconds", "stamp"),
    [
        (0, "00:00:00.000"),
        (4.5, "00:00:04.500"),
        (61.2345, "00:01:01.234"),
        (3599.9996, "01:00:00.000"),
        (3723.05, "01:02:03.050"),
    ],
)
def test_cue_times_are_hours_minutes_seconds_and_milliseconds(seconds, stamp):
    assert vtt_timestamp(seconds) == stamp


def test_a_negative_cue_time_is_refused():
    with pytest.raises(ValueError):
        vtt_timestamp(-1)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("Bars & a <counter>.", "Bars &amp; a &lt;counter&gt;."),
        ("Static --> frame.", "Static --&gt; frame."),
        ("two\n\nlines", "two lines"),
        ("&amp;", "&amp;amp;"),
    ],
)
def test_cue_text_escapes_entities_and_stays_on_one_line(text, escaped):
    assert vtt_escape(text) == escaped


def test_webvtt_gives_one_cue_per_window_with_final_text_and_times():
    text = webvtt(caption())
    assert text.startswith("WEBVTT\n\n")
    assert cues(text) == [
        (
            "1",
            "00:00:00.000 --> 00:00:02.000",
            ["Bars &amp; a &lt;counter&gt;.", "Static --&gt; frame."],
        ),
        ("2", "00:00:02.000 --> 00:00:04.500", ["The counter runs.", "Static frame."]),
    ]
    assert text.count("-->") == 2  # only the timing lines


def test_a_rejected_segmentation_replaces_the_windows_with_its_corrected_timeline():
    merged = caption(
        segmentation="reject", corrected=[Cue(0.0, 4.5, "Bars, then the counter runs.", "")]
    )
    assert cues(webvtt(merged)) == [
        ("1", "00:00:00.000 --> 00:00:04.500", ["Bars, then the counter runs."])
    ]


def test_an_accepted_segmentation_keeps_the_windows_even_with_leftover_boundaries():
    kept = caption(segmentation="accept", corrected=[Cue(0.0, 4.5, "ignored", "")])
    assert len(cues(webvtt(kept))) == 2


def test_a_cue_shorter_than_a_millisecond_still_ends_after_it_starts():
    tiny = caption(windows=[CorrectedWindow(0, 1.0001, 1.0003, "Blink.", "", "accept")])
    assert cues(webvtt(tiny))[0][1] == "00:00:01.000 --> 00:00:01.001"


def test_the_note_never_holds_a_cue_arrow():
    text = webvtt(caption(clip="a-->b", model="M\n\nX"))
    note = text.split("\n\n")[1]
    assert "-->" not in note and note.startswith("NOTE\n")


def test_jsonl_has_one_record_per_caption_with_the_corrected_timeline():
    lines = jsonl(
        [caption(), caption("c2", segmentation="reject", corrected=[Cue(0, 6, "All.", "Wide.")])]
    )
    records = [json.loads(line) for line in lines.splitlines()]
    assert lines.endswith("\n") and len(records) == 2
    first, second = records
    assert first["overview"] == "A test card." and first["overview_modes"] == ["factual"]
    assert first["timeline"][0] == {
        "start": 0.0,
        "end": 2.0,
        "scene": "Bars & a <counter>.",
        "shot": "Static --> frame.",
    }
    assert first["windows"][1]["original_scene"] == "The counter keeps running."
    assert second["timeline"] == [{"start": 0, "end": 6, "scene": "All.", "shot": "Wide."}]
    assert len(second["windows"]) == 2  # the model's windows stay, with their verdicts


def test_vtt_file_names_are_safe_and_distinct():
    files = webvtt_files([caption("a/b"), caption("a b"), caption("../..")])
    assert list(files) == ["a_b.vtt", "a_b-2.vtt", "caption.vtt"]
    assert safe_file_name("Mirrorfield Caption Pro") == "Mirrorfield_Caption_Pro"
