"""Invariants of the demo study content (annotation.demo_content); no database."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from annotation.demo_content import (
    DEMO_CAPTIONS,
    DEMO_CLIPS,
    DEMO_MODELS,
    DEMO_REFERENCES,
    PROPERTY_VALUES,
    TAXONOMY_MODES,
    DemoCaption,
)
from annotation.media import video as media
from tests.conftest import REPO

CLIPS = {clip["name"]: clip for clip in DEMO_CLIPS}
MODELS = {model["identifier"]: model for model in DEMO_MODELS}
CAPTION_IDS = [f"{c['clip']}|{c['model']}" for c in DEMO_CAPTIONS]


def caption_id(caption: DemoCaption) -> str:
    return f"{caption['clip']}|{caption['model']}"


def test_demo_content_imports_without_django() -> None:
    code = (
        "import sys, annotation.demo_content, annotation.media.video; "
        "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) else 0)"
    )

    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, check=False).returncode == 0


def test_clip_names_model_identifiers_and_model_names_are_unique() -> None:
    assert len(CLIPS) == len(DEMO_CLIPS) >= 6
    assert len(MODELS) == len(DEMO_MODELS) == 3
    assert len({model["name"] for model in DEMO_MODELS}) == 3


def test_every_model_has_a_route_and_providers() -> None:
    for model in DEMO_MODELS:
        assert model["route"] and model["providers"]
        assert all(isinstance(p, str) and p for p in model["providers"])


def test_there_is_exactly_one_caption_per_clip_and_model() -> None:
    assert len(set(CAPTION_IDS)) == len(CAPTION_IDS)
    assert set(CAPTION_IDS) == {f"{clip}|{model}" for clip in CLIPS for model in MODELS}


def test_clip_kinds_exist_and_durations_are_a_few_seconds() -> None:
    for clip in DEMO_CLIPS:
        assert clip["kind"] in media.SYNTHETIC_KINDS
        assert 6.0 <= clip["duration"] <= 12.0
    assert {clip["kind"] for clip in DEMO_CLIPS} == set(media.SYNTHETIC_KINDS)


def test_clip_properties_use_the_protocol_vocabulary() -> None:
    for clip in DEMO_CLIPS:
        assert set(clip["properties"]) == set(PROPERTY_VALUES)
        for key, value in clip["properties"].items():
            assert value in PROPERTY_VALUES[key], (clip["name"], key, value)


def test_some_clip_has_an_unclear_property_and_some_clip_is_a_manipulated_control() -> None:
    assert any("unclear" in clip["properties"].values() for clip in DEMO_CLIPS)
    assert any(clip["manipulated"] for clip in DEMO_CLIPS)
    assert not all(clip["manipulated"] for clip in DEMO_CLIPS)


@pytest.mark.parametrize("caption", DEMO_CAPTIONS, ids=CAPTION_IDS)
def test_windows_are_ordered_non_overlapping_and_inside_the_clip(caption: DemoCaption) -> None:
    duration = CLIPS[caption["clip"]]["duration"]
    windows = caption["windows"]

    assert windows, "a caption has at least one window"
    for window in windows:
        assert 0 <= window["start"] < window["end"] <= duration
        assert window["scene"].strip() and window["shot"].strip()
    for earlier, later in zip(windows, windows[1:], strict=False):
        assert earlier["end"] <= later["start"]


@pytest.mark.parametrize("caption", DEMO_CAPTIONS, ids=CAPTION_IDS)
def test_caption_has_an_overview_and_generation_metadata(caption: DemoCaption) -> None:
    assert caption["overview"].strip()
    meta = caption["meta"]
    assert set(meta) == {"input_tokens_per_second", "retried", "re_encoded"}
    assert meta["input_tokens_per_second"] > 0
    assert isinstance(meta["retried"], bool) and isinstance(meta["re_encoded"], bool)


@pytest.mark.parametrize("caption", DEMO_CAPTIONS, ids=CAPTION_IDS)
def test_planted_errors_name_a_mode_at_a_level_where_it_can_be_judged(
    caption: DemoCaption,
) -> None:
    for plant in caption["planted"]:
        assert plant["mode"] in TAXONOMY_MODES
        assert plant["note"].strip()
        if plant["mode"] == "segmentation":
            # Segmentation is judged once per caption, never per window or in the overview.
            assert plant["unit"] == "caption" and "index" not in plant
        else:
            assert plant["unit"] in {"overview", "window"}
        if plant["unit"] == "window":
            assert 0 <= plant["index"] < len(caption["windows"])
        else:
            assert "index" not in plant
    units = [(p["unit"], p.get("index"), p["mode"]) for p in caption["planted"]]
    assert len(units) == len(set(units)), "each mode is planted at most once per unit"


def test_every_mode_is_planted_somewhere() -> None:
    planted = {plant["mode"] for caption in DEMO_CAPTIONS for plant in caption["planted"]}

    assert planted == set(TAXONOMY_MODES)


@pytest.mark.parametrize("mode", [m for m in TAXONOMY_MODES if m != "segmentation"])
def test_every_mode_but_segmentation_is_planted_in_an_overview_and_in_a_window(mode: str) -> None:
    levels = {p["unit"] for c in DEMO_CAPTIONS for p in c["planted"] if p["mode"] == mode}

    assert levels == {"overview", "window"}


def test_several_captions_are_fully_correct() -> None:
    correct = [caption_id(c) for c in DEMO_CAPTIONS if not c["planted"]]

    assert len(correct) >= 3
    assert len({c.split("|")[1] for c in correct}) == 3, "every model gets something right"


def test_some_overview_is_correct_while_a_window_of_the_same_caption_is_not() -> None:
    # The case the two-pass protocol exists to measure (an overview accepted whole that hides a
    # rejected window).
    assert any(
        c["planted"] and all(p["unit"] == "window" for p in c["planted"]) for c in DEMO_CAPTIONS
    )


def test_hard_cut_captions_put_a_window_boundary_at_the_cut_unless_segmentation_is_planted() -> (
    None
):
    for clip in DEMO_CLIPS:
        if clip["kind"] != "hard_cut":
            continue
        cut = clip["params"]["cut_at"]
        for caption in (c for c in DEMO_CAPTIONS if c["clip"] == clip["name"]):
            boundaries = {w["start"] for w in caption["windows"]}
            segmentation = any(p["mode"] == "segmentation" for p in caption["planted"])
            assert (cut in boundaries) is not segmentation, caption_id(caption)


def test_one_caption_carries_an_html_payload_and_it_is_planted_as_an_error() -> None:
    carriers = []
    for caption in DEMO_CAPTIONS:
        for index, window in enumerate(caption["windows"]):
            text = window["scene"] + window["shot"]
            if "<script>" in text or "onerror=" in text:
                carriers.append((caption, index))
    assert len(carriers) == 1
    caption, index = carriers[0]
    assert {"unit": "window", "index": index} in [
        {"unit": p["unit"], "index": p.get("index")} for p in caption["planted"]
    ]


def test_there_is_one_english_expert_reference_per_clip() -> None:
    assert Counter(r["clip"] for r in DEMO_REFERENCES) == Counter(list(CLIPS))
    for reference in DEMO_REFERENCES:
        assert reference["source"] == "demo-expert"
        assert reference["language"] == "en"
        assert reference["text"].strip()


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")
@pytest.mark.parametrize("clip", DEMO_CLIPS, ids=[c["name"] for c in DEMO_CLIPS])
def test_each_demo_clip_synthesises_to_its_stated_duration(clip: dict, tmp_path: Path) -> None:
    target = tmp_path / f"{clip['name']}.mp4"

    # Small and at a low frame rate to keep the test quick; the timing is what is checked.
    media.synthesize_clip(
        clip["kind"], target, duration=clip["duration"], size=(96, 54), fps=10, **clip["params"]
    )

    assert media.probe(target).duration == pytest.approx(clip["duration"], abs=0.05)
